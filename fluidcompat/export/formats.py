"""Writing an exported module: ``torch.export`` (``.pt2``), ONNX (torch's exporter) and ``state_dict``.

Every format is written to a temporary file beside the target and renamed onto it once complete: a
program that fails to export writes nothing.
"""

from __future__ import annotations

import contextlib
import logging
import os
import tempfile
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

import torch
from torch.overrides import TorchFunctionMode

from fluidcompat.export.graph import ExportError, TensorSpec
from fluidcompat_ops import registry

FORMATS = ("pt2", "onnx", "state_dict")
# sizes the example inputs give a dimension the program left free (-1): not 0 or 1, which torch.export
# specializes, and the batch apart from the others
_EXAMPLE_BATCH = 2
_EXAMPLE_OTHER = 5


def dim_name(spec: TensorSpec, i: int) -> str:
    """The name of a free (-1) dimension of an input: ``batch`` for the first, else ``<input>_dim<i>``."""
    return "batch" if i == 0 else f"{spec.name}_dim{i}"


def example_inputs(module, batch: int = _EXAMPLE_BATCH, seed: int = 0) -> Tuple[torch.Tensor, ...]:
    """Inputs shaped as the module's feeds (``batch`` for a free first dimension), random floats and
    zero integers (valid ids for an embedding)."""
    gen = torch.Generator().manual_seed(seed)
    out = []
    for spec in module.inputs:
        shape = [d if d >= 0 else batch if i == 0 else _EXAMPLE_OTHER for i, d in enumerate(spec.shape)]
        if spec.dtype.is_floating_point:
            out.append(torch.rand(shape, generator=gen).to(spec.dtype))
        else:
            out.append(torch.zeros(shape, dtype=spec.dtype))
    return tuple(out)


def _dynamic_shapes(module) -> Tuple[Optional[Dict[int, object]], ...]:
    from torch.export import Dim

    dims: Dict[str, object] = {}
    shapes = []
    for spec in module.inputs:
        names = {i: dim_name(spec, i) for i, d in enumerate(spec.shape) if d < 0}
        free = {i: dims.setdefault(n, Dim(n)) for i, n in names.items()}
        shapes.append(free or None)
    return tuple(shapes)


class _Traceable(TorchFunctionMode):
    """Eager-only idioms of the kernels as traceable ones while exporting: ``t.data`` (an in-place
    change autograd must not see) is ``t.detach()``, the same memory seen by the trace."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if func is torch.Tensor.data.__get__:
            return args[0].detach()
        return func(*args, **(kwargs or {}))


def trace(module) -> "torch.export.ExportedProgram":
    """``torch.export.export`` of an exported module, with a dynamic dimension wherever the program
    declared -1. Raises ``ExportError`` (one line naming the op) when an op does not trace.

    # NOTE: [Checks on values]
    # Some kernels check their inputs' values on the host as fluid did (lookup_table's ids within the
    # table): a data-dependent branch that torch.export refuses. Such a program is traced again with
    # ``torch.export.draft_export``, which takes the branch the example inputs take and asserts its
    # condition at run time. The result is kept only when each such branch is a check (the test of an
    # ``if`` whose body only raises, or an ``assert``: ``_in_a_check``), every value read on the host
    # feeds nothing but those assertions, and none is pinned to one value. A value read to compute a
    # shape or an index, or to choose between computations, refuses the op.
    """
    args = example_inputs(module)
    shapes = _dynamic_shapes(module)
    try:
        with torch.no_grad(), _Traceable(), _quiet():
            return torch.export.export(module, args, dynamic_shapes=shapes, strict=False)
    except Exception as e:
        failed = e
    exported = _draft(module, args, shapes) if _data_dependent(failed) else None
    if exported is None:
        raise _export_error(failed) from failed
    return exported


@contextlib.contextmanager
def _quiet():
    """torch's exporters' warnings (draft_export's report, the ONNX registry's missing torchvision) off:
    what failed is said in one ExportError line."""
    loggers = [logging.getLogger(n) for n in ("torch.export", "torch.fx.experimental.symbolic_shapes", "torch.onnx")]
    levels = [log.level for log in loggers]
    for log in loggers:
        log.setLevel(logging.ERROR)
    try:
        yield
    finally:
        for log, level in zip(loggers, levels):
            log.setLevel(level)


def _export_error(e: Exception) -> ExportError:
    """The one-line ExportError for a failed torch.export (the op's own when an op failed)."""
    cause = e
    while cause is not None and not isinstance(cause, ExportError):
        cause = cause.__cause__ or cause.__context__
    if cause is not None:  # (fx's generated forward appends the node it ran to the message)
        return ExportError(str(cause).strip().splitlines()[0])
    first = (str(e).strip().splitlines() or [type(e).__name__])[0]
    if "Constraints violated" in str(e) or "specializ" in str(e):
        return ExportError(f"a dimension the program declared -1 cannot stay free in torch.export ({first})")
    return ExportError(f"torch.export failed: {type(e).__name__}: {first}")


def _data_dependent(e: Exception) -> bool:
    while e is not None:
        if "DataDependent" in type(e).__name__:
            return True
        e = e.__cause__ or e.__context__
    return False


def _draft(module, args, shapes):
    """A draft_export of ``module`` whose host reads only feed run-time checks, or None."""
    try:
        with torch.no_grad(), _Traceable(), _quiet():
            exported = torch.export.draft_export(module, args, dynamic_shapes=shapes, strict=False)
    except Exception:
        return None
    failures = list(getattr(getattr(exported, "_report", None), "failures", ()))
    if not all("DATA_DEPENDENT" in str(f.failure_type) and _in_a_check(f.data) for f in failures):
        return None
    if _host_values_used(exported) or _pinned(exported):
        return None
    return exported if _same_on_other_inputs(module, exported) else None


def _same_on_other_inputs(module, exported) -> bool:
    """Whether the draft gives the module's results on inputs of another batch size: an assumption the
    draft took from the example inputs (a size read on the host) shows as a failed assertion there."""
    args = example_inputs(module, batch=_EXAMPLE_BATCH + 1, seed=1)
    with torch.no_grad():
        try:
            want = module(*args)
        except Exception:
            return True  # (inputs the program itself refuses say nothing about the draft)
        try:
            got = exported.module()(*args)
        except Exception:
            return False
    return all(
        g.shape == w.shape and torch.allclose(g.double(), w.double(), rtol=1e-4, atol=1e-6, equal_nan=True)
        for g, w in zip(got, want)
    )


_KERNELS = os.path.dirname(os.path.abspath(registry.__file__)) + os.sep


def _in_a_check(data) -> bool:
    """Whether a data-dependent branch draft_export took is a check: the test of an ``if`` whose body only
    raises, or an ``assert`` (its other outcome is an error, not another computation)."""
    import ast
    import linecache

    from torch._logging.structured import INTERN_TABLE

    stack = data.get("stack") if isinstance(data, dict) else None
    if not stack:
        return False
    frame = stack[-1]
    names = {v: k for k, v in INTERN_TABLE.items()}
    filename = str(names.get(frame.get("filename"), frame.get("filename")))
    line = frame.get("line")
    if not os.path.abspath(filename).startswith(_KERNELS):
        return False  # (a guard inside torch's own functions is not the kernel's check)
    try:
        tree = ast.parse("".join(linecache.getlines(filename)))
    except SyntaxError:
        return False
    for node in ast.walk(tree):
        if isinstance(node, ast.Assert) and node.lineno <= line <= node.end_lineno:
            return True
        if isinstance(node, ast.If) and node.test.lineno <= line <= node.test.end_lineno:
            return not node.orelse and all(isinstance(b, ast.Raise) for b in node.body)
    return False


def _pinned(exported) -> bool:
    """Whether a checked host value may take one value only: draft_export took it for a constant (a
    slice's end read from a tensor), which is a shape read, not a check."""
    for sym, vr in exported.range_constraints.items():
        if str(sym).startswith("u") and vr.lower == vr.upper:
            return True
    return False


_SCALAR_READS = ("aten.item.default", "aten._local_scalar_dense.default")
_CHECKS = (
    "aten._assert_scalar.default",
    "aten.sym_constrain_range_for_size.default",
    "aten.sym_constrain_range.default",
)


def _host_values_used(exported) -> bool:
    """Whether a value read on the host (``item``) reaches anything but run-time checks."""
    for node in exported.graph.nodes:
        if node.op == "call_function" and str(node.target) in _SCALAR_READS and not _only_checked(node):
            return True
    return False


def _only_checked(node) -> bool:
    for user in node.users:
        if str(user.target) in _CHECKS:
            continue
        # symbolic arithmetic and comparisons (operator.lt, sym_not, ...) leading to checks
        if user.op == "call_function" and not str(user.target).startswith("aten.") and _only_checked(user):
            continue
        return False
    return True


def strip_checks(exported) -> None:
    """Remove the run-time checks of host values (NOTE: [Checks on values]) from ``exported``: ONNX has no
    assertions, and the reads they need (aminmax) are not all translated."""
    graph = exported.graph_module.graph
    for node in list(graph.nodes):
        if node.op == "call_function" and str(node.target) in _CHECKS:
            graph.erase_node(node)
    graph.eliminate_dead_code()
    exported.graph_module.recompile()


def _write(path: str, write) -> None:
    """``write(tmp_path)``, then the file renamed onto ``path``; nothing left behind on failure."""
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    # a folder of its own, the file under its final name: torch's zip writers name the archive's root
    # after the file
    tmp_dir = tempfile.mkdtemp(prefix=".fluidcompat-export-", dir=folder)
    tmp = os.path.join(tmp_dir, os.path.basename(path))
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
        os.rmdir(tmp_dir)


def _onnx_model(module, exported):
    import warnings

    try:
        import onnx  # noqa: F401
        import onnxscript  # noqa: F401
    except ImportError as e:
        raise ExportError(
            f"ONNX export needs the packages onnx and onnxscript ({e}): pip install 'fluidcompat[export]'"
        ) from e
    names_in = [s.name for s in module.inputs]
    names_out = [s.name for s in module.outputs]
    with warnings.catch_warnings(), _quiet():
        warnings.simplefilter("ignore")
        try:
            program = torch.onnx.export(
                exported,
                input_names=names_in,
                output_names=names_out,
                dynamo=True,
                external_data=False,
                verbose=False,
            )
        except Exception as e:
            first = (str(e).strip().splitlines() or [type(e).__name__])[0]
            raise ExportError(f"the ONNX exporter failed: {type(e).__name__}: {first}") from e
    model = program.model_proto
    _name_dims(model, module)
    return model


def _name_dims(model, module) -> None:
    """Give the free dimensions the names torch.export's symbols replaced (``batch``, ...)."""
    renamed: Dict[str, str] = {}
    graph = model.graph
    for spec, value in zip(module.inputs, graph.input):
        for i, d in enumerate(value.type.tensor_type.shape.dim):
            if spec.shape[i] < 0 and d.dim_param:
                renamed.setdefault(d.dim_param, dim_name(spec, i))
    for value in list(graph.input) + list(graph.output) + list(graph.value_info):
        for d in value.type.tensor_type.shape.dim:
            if d.dim_param in renamed:
                d.dim_param = renamed[d.dim_param]


@dataclass(frozen=True)
class Written:
    """What ``save`` wrote: the file, its format, the module's inputs and outputs, the fluid names of
    the parameters it holds."""

    path: str
    format: str
    inputs: Tuple[TensorSpec, ...]
    outputs: Tuple[TensorSpec, ...]
    params: List[str]


def save(module, path: str, format: str) -> Written:
    """Write ``module`` (from ``to_module``) to ``path`` as ``pt2``, ``onnx`` or ``state_dict``."""
    if format not in FORMATS:
        raise ValueError(f"format must be one of {', '.join(FORMATS)}. Received: format={format!r}")
    if format == "state_dict":
        state = {k: v.detach().clone() for k, v in module.state_dict().items()}
        _write(path, lambda tmp: torch.save(state, tmp))
    else:
        exported = trace(module)
        if format == "pt2":
            _write(path, lambda tmp: torch.export.save(exported, tmp))
        else:
            import onnx

            strip_checks(exported)
            model = _onnx_model(module, exported)
            _write(path, lambda tmp: onnx.save_model(model, tmp))
    return Written(path, format, tuple(module.inputs), tuple(module.outputs), sorted(module.fluid_names.values()))
