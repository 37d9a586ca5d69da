"""What a failing op raises (fluid's EnforceNotMet and its kinds), with the op, its place and the
script line that built it; and FLAGS_check_nan_inf's check of each op's outputs."""

from __future__ import annotations

import math
import sys

import numpy as np
import torch

from fluidcompat.framework import EMPTY_VAR_NAME

# The functions below take a step of the interpreter (interpreter.Step: ``plan`` (the op, its index,
# device) and kernel), which imports this module.


class EnforceNotMet(RuntimeError):
    """An op failed while running (fluid's ``core.EnforceNotMet``). The message names the op,
    its index and device, and the script line that built it."""


class ResourceExhaustedError(EnforceNotMet, MemoryError):
    """The device ran out of memory inside an op; the message names the op and what it allocated."""


class UninitializedVariableError(EnforceNotMet):
    """An op reads a variable that was neither fed, produced earlier, nor found in the scope."""


# NOTE: [Checking for NaN and Inf]
# With FLAGS_check_nan_inf on (the environment when fluidcompat is imported, or fluid.set_flags), every
# op's float outputs are checked after it runs, in fluid's order (output slots by name). The first one
# holding a NaN or an Inf stops the run as in fluid 1.8.5: on stdout, the first three NaNs, Infs and
# ordinary values by index ("numel:80 index:3 value:-nan") and the counts ("In cpu, there has 1,1,78
# nan,inf,num"); then EnforceNotMet naming the op and the variable ("PreconditionNotMetError: ===ERROR:
# in [op=log] [tensor=log_0.tmp_0] find nan or inf==="), with the op's script line. Control ops are not
# checked (fluid checked kernels only); the ops of their sub-blocks are. A NaN prints with its sign bit:
# fluid's CPU kernels made negative NaNs ("-nan"), torch's often positive ones ("nan"). For a tensor on
# a GPU the same lines are printed from a host copy, the counts line saying "In gpu" (fluid's CUDA
# checker printed its own lines, not compared: the oracle is a CPU build).


class PreconditionNotMetError(Exception):
    """fluid's error type for a failed check (the message's prefix)."""


def _check_nan_inf(s, env) -> None:
    op = s.plan.op
    for slot in sorted(op.outputs):
        for name in op.outputs[slot]:
            t = env.get(name) if name != EMPTY_VAR_NAME else None
            if t is not None and not torch.is_tensor(t):
                t = getattr(t, "values", None)  # a sparse gradient (SelectedRows): its rows' values
            elif t is not None and t.is_sparse:
                t = t._values()
            if not torch.is_tensor(t) or not t.is_floating_point() or t.device.type == "meta" or not t.numel():
                continue
            if bool(torch.isfinite(t).all()):
                continue
            _print_nan_inf(t)
            raise PreconditionNotMetError(
                f"===ERROR: in [op={op.type}] [tensor={name}] find nan or inf===\n"
                "  [Hint: Expected has_nan_inf == false, but received has_nan_inf:1 != false:0.]"
            )


def _print_nan_inf(t: torch.Tensor) -> None:
    """fluid's report of a tensor with NaN or Inf: up to three of each kind by index, then the counts."""
    a = t.detach().cpu().reshape(-1)
    a = (a.float() if a.dtype == torch.bfloat16 else a).numpy()  # (numpy has no bfloat16)
    nan, inf = np.isnan(a), np.isinf(a)
    kinds = (np.flatnonzero(nan), np.flatnonzero(inf), np.flatnonzero(~(nan | inf)))
    shown = sorted(int(i) for idx in kinds for i in idx[:3])
    lines = [f"numel:{a.size} index:{i} value:{_c_float(float(a[i]))}\n" for i in shown]
    where = "cpu" if t.device.type == "cpu" else "gpu"
    lines.append(f"In {where}, there has {kinds[0].size},{kinds[1].size},{kinds[2].size} nan,inf,num\n")
    sys.stdout.write("".join(lines))
    sys.stdout.flush()


def _c_float(v: float) -> str:
    """``v`` as C's printf("%f") writes it (glibc: "-nan" for a NaN with its sign bit set)."""
    if math.isnan(v):
        return "-nan" if math.copysign(1.0, v) < 0 else "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return "%f" % v


def _op_error(step, e: Exception, env) -> EnforceNotMet:
    p = step.plan
    op = p.op
    where = f"op {p.index} ({op.type}) of block {op.block.idx} on {p.device}"
    if isinstance(e, KeyError) and e.args and isinstance(e.args[0], str):
        name = e.args[0]
        slot = next((s for s, names, _ in step.ins if name in names), "?")
        return UninitializedVariableError(
            f"The variable '{name}' read by {where} (input slot {slot}) is not initialized: it was not fed, no "
            f"earlier op produced it, and the scope does not hold it.\n  built at {op.callsite_text()}"
        )
    if _is_oom(e):
        return _oom_error(step, e, where)
    return EnforceNotMet(
        f"{type(e).__name__}: {e}\n  [operator < {op.type} > error] {where}\n  built at {op.callsite_text()}"
    )


def _is_oom(e: Exception) -> bool:
    return isinstance(e, torch.cuda.OutOfMemoryError) or (
        isinstance(e, RuntimeError) and "out of memory" in str(e).lower()
    )


def _oom_error(step, e: Exception, where: str) -> "ResourceExhaustedError":
    from fluidcompat.dtypes import VarType, np_dtype

    op = step.plan.op
    parts = []
    for name in op.output_arg_names:
        var = op.block._find_var_recursive(name)
        if var is None or var.type != VarType.LOD_TENSOR:
            continue
        count = 1
        for d in var.shape:
            count *= d
        size = f"{count * np_dtype(var.dtype).itemsize / 2**20:.1f} MiB" if count > 0 else "size known at run time"
        parts.append(f"'{name}' shape {list(var.shape)} ({size})")
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
    first = str(e).splitlines()[0] if str(e) else ""
    return ResourceExhaustedError(
        f"Out of memory in {where} while allocating {', '.join(parts) or 'its outputs'}.\n"
        "  Hint: put the layer that builds this op on the CPU with `with fluid.device_guard('cpu'):` (as the docs "
        "do for a large embedding table); its parameters, gradients and optimizer state then stay in host memory. "
        "The scope is unchanged and the program can run again.\n"
        f"  built at {op.callsite_text()}\n  ({type(e).__name__}: {first})"
    )
