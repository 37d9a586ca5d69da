"""Dygraph mode: ops run as they are appended, on torch eager, with torch autograd for backward.

# NOTE: [Tracing]
# Inside ``fluid.dygraph.guard()`` the layer functions build nothing: ``Block.append_op`` hands the
# op to ``Tracer.trace_op``, which runs its kernel at once on the VarBases' tensors and writes the
# results into the output VarBases. Gradients come from torch autograd: an op whose gradient is
# the VJP of its forward kernel runs that kernel with autograd on; an op with its own grad kernel
# runs inside ``_OpFunction``, whose backward is that grad kernel, so both modes differentiate an op
# the same way. Variables created in the guard are not kept by the programs; a persistable one is
# found again by name (a parameter's or accumulator's startup twin is the same VarBase).
"""

from __future__ import annotations

import contextlib
import functools
import weakref
from typing import Optional

import numpy as np

from fluidcompat import framework, places, unique_name, variable
from fluidcompat.dtypes import VarType
from fluidcompat.dygraph import varbase
from fluidcompat.dygraph.varbase import ParamBase, VarBase
from fluidcompat_ops import registry

__all__ = [
    "no_grad",
    "grad",
    "guard",
    "enable_dygraph",
    "disable_dygraph",
    "enabled",
    "to_variable",
    "enable_imperative",
    "disable_imperative",
]

_tracer: Optional["Tracer"] = None


def current_tracer() -> Optional["Tracer"]:
    return _tracer


varbase.current_tracer = current_tracer  # what VarBase asks for the running tracer (it sits below)

_static_depth = 0  # > 0 while a declarative function builds a static program (jit._run_static)


def in_declarative_build() -> bool:
    return _static_depth > 0


variable.in_declarative_build = in_declarative_build  # Variable.__bool__ asks it (the IR imports no dygraph)


def _as_list(value):
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        return list(value)
    return [value]


class Tracer:
    """Runs the ops of dygraph mode (NOTE: [Tracing])."""

    def __init__(self, place) -> None:
        torch = varbase._torch()
        self.place = place
        self.device = torch.device(places.tensor_device(places.torch_device(place)))
        self._train_mode = True
        self._has_grad = True
        self.persistables: "weakref.WeakValueDictionary[str, VarBase]" = weakref.WeakValueDictionary()
        self._recorder = None  # a jit._ProgramRecorder while TracedLayer.trace runs

    def train_mode(self) -> None:
        self._train_mode = True

    def eval_mode(self) -> None:
        self._train_mode = False

    # -- variables -------------------------------------------------------------------------------
    def create_var(self, block, kwargs) -> VarBase:
        name = kwargs.get("name")
        if name is not None and kwargs.get("persistable"):
            found = self.persistables.get(name)
            if found is not None:
                return found
        kwargs = dict(kwargs)
        kwargs.setdefault("stop_gradient", False)
        var = VarBase(None, block=block, **kwargs)
        if var.persistable:
            self.persistables[var.name] = var
        return var

    def create_parameter(self, block, kwargs) -> ParamBase:
        kwargs = dict(kwargs)
        initializer = kwargs.pop("initializer", None)
        param = ParamBase(block=block, **kwargs)
        self.persistables[param.name] = param
        if initializer is not None:
            initializer(param, block)
        return param

    def find_var(self, name: str) -> Optional[VarBase]:
        return self.persistables.get(name)

    # -- ops ----------------------------------------------------------------------------------------
    def trace_op(self, type: str, inputs, outputs, attrs=None, stop_gradient: bool = False) -> None:
        torch = varbase.torch
        opdef = registry.lookup(type)
        if opdef.control or opdef.kernel is None:
            raise NotImplementedError(
                f"Op '{type}' cannot run in dygraph mode: it runs sub-blocks of a static program. "
                "In dygraph mode write the loop or branch in Python over the VarBases' values."
            )
        full = dict(opdef.attrs)
        for k, v in (attrs or {}).items():
            full[k] = int(v) if isinstance(v, VarType) else v
        full["_device"] = self.device
        full["_op"] = TracedOp(type, inputs, outputs)
        ins = {slot: [] for slot in opdef.inputs}
        given = {}  # slot -> the VarBases (for the op's shape checks when its kernel fails)
        record = False
        for slot, value in (inputs or {}).items():
            tensors = given[slot] = []
            for v in _as_list(value):
                if v is None:
                    continue
                if not isinstance(v, VarBase):
                    raise TypeError(
                        f"Op '{type}': input slot '{slot}' received {v!r} ({type_name(v)}); in dygraph mode "
                        "every input is a VarBase (fluid.dygraph.to_variable makes one from a numpy array)"
                    )
                if v._value is None:
                    if slot in opdef.optional_inputs:  # e.g. cudnn_lstm's Cache
                        continue
                    raise ValueError(f"Op '{type}': input variable '{v.name}' (slot {slot}) holds no value yet")
                tensors.append(v)
                record = record or v._value.requires_grad
            ins[slot] = [v._value for v in tensors]
        for slot in opdef.reads_outputs:
            ins[slot] = [v._value if isinstance(v, VarBase) else None for v in _as_list((outputs or {}).get(slot))]
        # eval mode records no gradients either (fluid 1.8's tracer)
        record = record and self._has_grad and self._train_mode and opdef.grad is not None and not stop_gradient
        try:
            if record and opdef.grad.kernel is not None and type not in AUTOGRAD_AS_FLUID:
                result = _run_with_grad_kernel(opdef, ins, full)
            elif record == torch.is_grad_enabled():
                result = opdef.kernel(ins, full)
            else:
                with torch.set_grad_enabled(record):
                    result = opdef.kernel(ins, full)
        except Exception as e:
            _raise_shape_error(opdef, given, full, e)
            raise
        for slot, value in (outputs or {}).items():
            produced = result.get(slot) or ()
            for v, t in zip(_as_list(value), produced):
                if v is None or t is None or not torch.is_tensor(t):
                    continue
                if not isinstance(v, VarBase):
                    raise TypeError(f"Op '{type}': output slot '{slot}' received {type_name(v)}, not a VarBase")
                v._assign(t, stop_gradient)
        if self._recorder is not None:
            self._recorder.record(type, inputs, outputs, attrs)


class TracedOp:
    """The op a dygraph kernel runs for, as kernels that name their variables see it (``attrs["_op"]``):
    its type and, per slot, the names of its input and output VarBases (the same VarBase in and out:
    the same name, as an optimizer's ParamOut)."""

    __slots__ = ("type", "_inputs", "_outputs")

    def __init__(self, type: str, inputs, outputs) -> None:
        self.type = type
        self._inputs = inputs
        self._outputs = outputs

    @staticmethod
    def _names(slots) -> dict:
        return {s: [v.name for v in _as_list(value) if isinstance(v, VarBase)] for s, value in (slots or {}).items()}

    @property
    def inputs(self) -> dict:
        return self._names(self._inputs)

    @property
    def outputs(self) -> dict:
        return self._names(self._outputs)


def _raise_shape_error(opdef, given, attrs, error: Exception) -> None:
    """Where an op's kernel failed, raise what the op's shape checks say of its inputs (the checks
    that building it in a static program runs, and fluid's dygraph ran before each kernel) instead
    of the kernel's own error (torch's, which names no variable), if they find something."""
    if opdef.infer_shape is None:
        return
    try:
        opdef.infer_shape(given, attrs)
    except (ValueError, TypeError, IndexError) as e:
        raise type(e)(f"Op '{opdef.type}' cannot run: {e}") from error
    except Exception:  # (a check that cannot read a VarBase: the kernel's error stands)
        return


# Ops with a grad kernel of their own (for the static executor's speed) whose forward kernel, run
# under torch autograd, gives the same gradients as fluid 1.8 (tests/golden/dygraph_*): dygraph mode
# differentiates them with autograd directly, which costs less than an autograd Function per op.
AUTOGRAD_AS_FLUID = frozenset(
    {
        "elementwise_add",
        "elementwise_sub",
        "relu",
        "softmax",
        "mean",
        "cross_entropy2",
        "reshape2",
        "transpose2",
        "concat",
        "slice",
        "conv2d",
        "depthwise_conv2d",
        "pool2d",
    }
)


def type_name(v) -> str:
    return type(v).__name__


def _flatten(groups):
    layout, flat = [], []
    for slot, ts in groups.items():
        ts = list(ts or ())
        layout.append((slot, len(ts)))
        flat.extend(ts)
    return layout, flat


def _unflatten(layout, flat):
    out, i = {}, 0
    for slot, n in layout:
        out[slot] = list(flat[i : i + n])
        i += n
    return out


def _run_with_grad_kernel(opdef, ins, attrs):
    layout, flat = _flatten(ins)
    box = {}
    outs = _op_function().apply(opdef, attrs, layout, box, *flat)
    result = {}
    i = 0
    for slot, values in box["result"].items():
        if not isinstance(values, (list, tuple)):
            result[slot] = values
            continue
        got = []
        for t in values:
            if t is not None and varbase.torch.is_tensor(t):
                got.append(outs[i])
                i += 1
            else:
                got.append(t)
        result[slot] = got
    return result


_OP_FUNCTION = None


def _op_function():
    """The autograd Function of ops that bring their own grad kernel (NOTE: [Tracing])."""
    global _OP_FUNCTION
    if _OP_FUNCTION is not None:
        return _OP_FUNCTION
    torch = varbase._torch()

    class _OpFunction(torch.autograd.Function):
        @staticmethod
        def forward(ctx, opdef, attrs, layout, box, *flat):
            ins = _unflatten(layout, flat)
            result = opdef.kernel(ins, attrs)
            box["result"] = result
            out_layout, outs = [], []
            for slot, values in result.items():
                if not isinstance(values, (list, tuple)):
                    continue
                n = 0
                for t in values:
                    if t is not None and torch.is_tensor(t):
                        outs.append(t)
                        n += 1
                out_layout.append((slot, n))
            ctx.opdef, ctx.attrs, ctx.layout, ctx.out_layout = opdef, attrs, layout, out_layout
            ctx.n_in = len(flat)
            ctx.leaves = [t if t.is_leaf and t.requires_grad else None for t in flat]
            # what a kernel left on its outputs for its grad kernel (cudnn_lstm's dropout seed)
            ctx.states = [getattr(t, "_fluidcompat_state", None) for t in outs]
            ctx.save_for_backward(*flat, *outs)
            ctx.mark_non_differentiable(*[t for t in outs if not t.is_floating_point()])
            return tuple(outs)

        @staticmethod
        def backward(ctx, *gouts):
            saved = ctx.saved_tensors
            for t, state in zip(saved[ctx.n_in :], ctx.states):
                if state is not None:
                    t._fluidcompat_state = state
            fwd_ins = _unflatten(ctx.layout, saved[: ctx.n_in])
            fwd_outs = _unflatten(ctx.out_layout, saved[ctx.n_in :])
            grads_of = _unflatten(ctx.out_layout, gouts)
            opdef = ctx.opdef
            reads, out_grads, in_grads = registry.grad_slots(opdef)
            gdef = registry.lookup(opdef.grad.type or opdef.type + "_grad")
            gins = {}
            for slot in reads:
                gins[slot] = fwd_ins[slot] if slot in fwd_ins else fwd_outs.get(slot, [])
            for slot in out_grads:
                gins[slot + "@GRAD"] = grads_of.get(slot, [])
            attrs = dict(ctx.attrs)
            need = ctx.needs_input_grad  # a new tuple at each access: read it once
            wanted, k = set(), 4
            for slot, n in ctx.layout:
                if any(need[k : k + n]):
                    wanted.add(slot)
                k += n
            attrs["_wanted"] = frozenset(s for s in in_grads if s in wanted)
            result = gdef.kernel(gins, attrs)
            grads = []
            for slot, n in ctx.layout:
                got = list(result.get(slot + "@GRAD") or ()) if slot in attrs["_wanted"] else []
                grads.extend(got[j] if j < len(got) else None for j in range(n))
            # NOTE: [Sparse gradients in dygraph]: a sparse gradient (an is_sparse embedding's table's)
            # reaches a leaf (a parameter) as a torch sparse COO tensor, so that its .grad holds the
            # rows alone (torch adds a dense gradient to it as dense); the SelectedRows stay on the
            # leaf too, in fluid's order, for an optimizer that updates by rows, as fluid's did
            # (VarBase._grad_ivar(sparse=True)). Elsewhere (a table computed from others, or
            # create_graph differentiating the gradients again) it goes on dense.
            for i, g in enumerate(grads):
                if g is not None and not torch.is_tensor(g):
                    leaf = ctx.leaves[i]
                    if leaf is not None and not torch.is_grad_enabled():
                        leaf._fluidcompat_sparse = (getattr(leaf, "_fluidcompat_sparse", None) or []) + [g]
                        grads[i] = g.to_torch()
                    else:
                        grads[i] = g.to_dense()
            return (None, None, None, None) + tuple(grads)

    _OP_FUNCTION = _OpFunction
    return _OP_FUNCTION


# -- the mode -------------------------------------------------------------------------------------------
def enabled() -> bool:
    """Whether dygraph mode is on."""
    return _tracer is not None


def _default_place():
    return places.CUDAPlace(0) if places.is_compiled_with_cuda() else places.CPUPlace()


@contextlib.contextmanager
def _tracer_guard(tracer):
    global _tracer
    old = _tracer
    _tracer = tracer
    framework._dygraph_tracer_ = tracer
    try:
        yield
    finally:
        _tracer = old
        framework._dygraph_tracer_ = old


@contextlib.contextmanager
def guard(place=None):
    """Dygraph mode inside the block, on ``place`` (the first GPU when there is one, else the CPU)."""
    if place is None:
        place = _default_place()
    elif not isinstance(place, (places.CPUPlace, places.CUDAPlace, places.CUDAPinnedPlace)):
        raise TypeError(f"fluid.dygraph.guard: place must be a CPUPlace or CUDAPlace. Received: {place!r}")
    tracer = Tracer(place)
    main, startup = framework.Program(), framework.Program()
    with framework.program_guard(main, startup), unique_name.guard(), _tracer_guard(tracer):
        yield


_functional_context = None


def enable_dygraph(place=None) -> None:
    """Turn dygraph mode on until ``disable_dygraph()``."""
    global _functional_context
    if _functional_context is None:
        _functional_context = guard(place)
        _functional_context.__enter__()


def disable_dygraph() -> None:
    """Back to static-graph mode."""
    global _functional_context
    if _functional_context is not None:
        ctx, _functional_context = _functional_context, None
        ctx.__exit__(None, None, None)


enable_imperative = enable_dygraph
disable_imperative = disable_dygraph


@contextlib.contextmanager
def _no_grad_guard():
    tracer = _tracer
    torch = varbase._torch()
    if tracer is None:
        with torch.no_grad():
            yield
        return
    old = tracer._has_grad
    tracer._has_grad = False
    try:
        with torch.no_grad():
            yield
    finally:
        tracer._has_grad = old


def no_grad(func=None):
    """No gradients for what runs inside: ``with no_grad():``, ``@no_grad`` or ``@no_grad()``."""
    if func is None:
        return _no_grad_guard()

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        with _no_grad_guard():
            return func(*args, **kwargs)

    return wrapper


def to_variable(value, name=None, zero_copy=None) -> VarBase:
    """A VarBase holding ``value`` (a numpy array; a VarBase is returned as it is), stop_gradient=True."""
    if isinstance(value, VarBase):
        return value
    if _tracer is None and isinstance(value, (np.ndarray, framework.Variable)):
        if in_declarative_build():  # fluid's translation made it an assign op
            from fluidcompat.layers.tensor import assign

            return assign(value)
    if not isinstance(value, np.ndarray):
        raise TypeError(
            "The type of input value is invalid, expected type is 'ndarray', 'Variable' or 'ComplexVariable', "
            f"but received {type(value)}."
        )
    tracer = _tracer
    if tracer is None:
        raise RuntimeError("fluid.dygraph.to_variable works only in dygraph mode (inside fluid.dygraph.guard())")
    if np.iscomplexobj(value):  # two real values, as fluid 1.8 held it
        from fluidcompat.complex_variable import ComplexVariable

        name = name or unique_name.generate("_generated_var")
        return ComplexVariable(to_variable(value.real, name + ".real"), to_variable(value.imag, name + ".imag"))
    torch = varbase._torch()
    from fluidcompat.dtypes import to_vartype
    from fluidcompat_ops.registry import TORCH_DTYPES

    dtype = TORCH_DTYPES[to_vartype(value.dtype)]
    t = torch.tensor(value, dtype=dtype, device=tracer.device)  # a copy: the array stays the user's
    return VarBase(t, name=name, stop_gradient=True)


def grad(
    outputs,
    inputs,
    grad_outputs=None,
    retain_graph=None,
    create_graph=False,
    only_inputs=True,
    allow_unused=False,
    no_grad_vars=None,
    backward_strategy=None,
):
    """Gradients of ``outputs`` with respect to ``inputs`` (lists of VarBases), as new VarBases. No
    gradient flows through ``no_grad_vars`` (their values still count: with ``create_graph`` the
    result stays a function of them). Bad arguments raise fluid 1.8.5's AssertionErrors."""
    torch = varbase._torch()

    def check_in_out(vs, name):
        assert vs is not None, f"{name} should not be None"
        if isinstance(vs, (list, tuple)):
            assert len(vs) > 0, f"{name} cannot be empty"
            for v in vs:
                assert isinstance(v, VarBase), f"Elements of {name} must be Variable"
            return list(vs)
        assert isinstance(vs, VarBase), f"{name} must be Variable or list of Variable"
        return [vs]

    outs = check_in_out(outputs, "outputs")
    ins = check_in_out(inputs, "inputs")
    gouts = [None] * len(outs)
    if grad_outputs is not None:
        given = list(grad_outputs) if isinstance(grad_outputs, (list, tuple)) else [grad_outputs]
        for g in given:
            assert g is None or isinstance(g, VarBase), (
                "grad_outputs must be None, a Variable or a list containing None or Variables"
            )
        if given:
            assert len(given) == len(outs), "The length of grad_outputs must be equal to outputs"
            gouts = given
    if no_grad_vars is None:
        no_grad_vars = []
    elif isinstance(no_grad_vars, VarBase):
        no_grad_vars = [no_grad_vars]
    elif isinstance(no_grad_vars, (list, tuple, set)):
        no_grad_vars = list(no_grad_vars)
        for v in no_grad_vars:
            assert isinstance(v, VarBase), "no_grad_vars can only contains Variable"
    else:
        raise AssertionError("no_grad_vars must be None, Variable or list/tuple/set of Variables")
    assert isinstance(create_graph, bool), "create_graph must be True or False"
    assert retain_graph is None or isinstance(retain_graph, bool), "retain_graph must be None, True or False"
    assert isinstance(allow_unused, bool), "allow_unused must be True or False"
    assert isinstance(only_inputs, bool), "only_inputs must be True or False"
    assert only_inputs, "only_inputs=False is not supported yet"
    gts = [torch.ones_like(o._tensor()) if g is None else g._tensor() for o, g in zip(outs, gouts)]
    kept = {}  # (the leaves' sparse parts are backward()'s: NOTE: [Sparse gradients in dygraph])
    for o in outs:
        kept.update(varbase.leaf_sparse_parts(o._tensor()))
    # no gradient passes a no_grad_var: zeros go on from it
    hooks = [t.register_hook(torch.zeros_like) for t in (v._tensor() for v in no_grad_vars) if t.requires_grad]
    try:
        got = torch.autograd.grad(
            [o._tensor() for o in outs],
            [i._tensor() for i in ins],
            grad_outputs=gts,
            retain_graph=create_graph if retain_graph is None else retain_graph,
            create_graph=create_graph,
            allow_unused=allow_unused,
        )
    finally:
        for h in hooks:
            h.remove()
        varbase.restore_sparse_parts(kept)
    result = []
    for i, g in zip(ins, got):
        if g is None:
            result.append(None)
        else:
            result.append(VarBase(varbase.dense_grad(g), name=i.name + "@GRAD", stop_gradient=not create_graph))
    return result
