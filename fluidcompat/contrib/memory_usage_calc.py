"""``fluid.contrib.memory_usage``: fluid 1.8.5's estimate of a program's memory for a batch size."""

from __future__ import annotations

from fluidcompat.dtypes import VarType
from fluidcompat.framework import Program

__all__ = ["memory_usage"]

_BYTES = {
    VarType.FP16: 2,
    VarType.FP32: 4,
    VarType.FP64: 8,
    VarType.INT16: 2,
    VarType.INT32: 4,
    VarType.INT64: 8,
    VarType.BOOL: 1,
    VarType.UINT8: 1,
}


def memory_usage(program, batch_size):
    """(low, high, unit): the bytes of every LoD tensor the global block's ops write once (a -1
    dimension counts ``batch_size``), in B, KB or MB, plus 5% and 10% for what else a run holds."""
    if not isinstance(program, Program):
        raise TypeError(f"Calculating Memory Usage requires Program as its Parameter.But you passed in {type(program)}")
    if batch_size <= 0:
        raise ValueError("The batch size need to be positive.")
    block = program.global_block()
    total = 0.0
    seen = {"@EMPTY@"}
    for op in block.ops:
        for name in op.output_arg_names:
            if name in seen:
                continue
            seen.add(name)
            var = block.vars[name]
            if var.type != VarType.LOD_TENSOR:
                continue
            count, unknown = 1, 0
            for d in var.shape:
                if d < 0:
                    unknown += 1
                    if unknown > 1:
                        raise ValueError(f"Var {name} has more than one negative dim.")
                    count *= batch_size * (-d)
                else:
                    count *= d
            if var.dtype not in _BYTES:
                raise ValueError(f"Var {name}: memory_usage does not know the size of {var.dtype.name}")
            total += count * _BYTES[var.dtype]
    unit = "B"
    if total > 1024:
        total, unit = total / 1024, "KB"
        if total > 1024:
            total, unit = total / 1024, "MB"
    return total * 1.05, total * 1.1, unit
