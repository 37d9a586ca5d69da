"""fluid's readable program printer (``program_to_code``, ``block_to_code``, ``op_to_code``,
``variable_to_code``) and the op lookups its transpilers shared.

The text is fluid 1.8's: a block as ``{ // block N``, its variables sorted by name, a blank line, its
ops in order, ``}``; an op as ``{Out=['y']} = type(inputs={X=['x']}, attr = value, ...)`` with slots
in name order and attributes sorted, each value as fluid's OpDesc held it (a float attribute as the
float32 it was stored as, a block attribute as ``block[i]`` / ``blocks[i, j]``).
"""

from __future__ import annotations

import enum
from typing import Any

import numpy as np

from fluidcompat.framework import Block, Parameter
from fluidcompat_ops.protos import ATTR_TYPES, get_op_proto, has_proto

__all__ = [
    "delete_ops",
    "find_op_by_input_arg",
    "find_op_by_output_arg",
    "get_indent_space",
    "variable_to_code",
    "op_to_code",
    "block_to_code",
    "program_to_code",
]

_TENSOR_TYPES = ("LOD_TENSOR", "SELECTED_ROWS")
_FLOAT, _FLOATS, _BOOL = ATTR_TYPES["FLOAT"], ATTR_TYPES["FLOATS"], ATTR_TYPES["BOOLEAN"]
_BLOCK, _BLOCKS = ATTR_TYPES["BLOCK"], ATTR_TYPES["BLOCKS"]


# -- the op lookups ------------------------------------------------------------------------------
def delete_ops(block, ops) -> None:
    """Remove each of ``ops`` from ``block``; one not in it is reported and skipped (as fluid did)."""
    for op in ops:
        idx = next((i for i, o in enumerate(block.ops) if o is op), None)
        if idx is None:
            print(f"delete_ops: the {op.type} op is not in block {block.idx}")
            continue
        block._remove_op(idx)


def find_op_by_input_arg(block, arg_name: str) -> int:
    """The index of the first op of ``block`` reading ``arg_name`` (-1 if none)."""
    return next((i for i, op in enumerate(block.ops) if arg_name in op.input_arg_names), -1)


def find_op_by_output_arg(block, arg_name: str, reverse: bool = False) -> int:
    """The index of the first (``reverse``: last) op of ``block`` writing ``arg_name`` (-1 if none)."""
    order = range(len(block.ops) - 1, -1, -1) if reverse else range(len(block.ops))
    return next((i for i in order if arg_name in block.ops[i].output_arg_names), -1)


def get_indent_space(indent: int, space_num: int = 4) -> str:
    return " " * (indent * space_num)


# -- the printer ---------------------------------------------------------------------------------
def variable_to_code(var) -> str:
    """``[persist ]var|parameter|trainable parameter NAME : fluid.VarType.T.shape(...).astype(DTYPE)``."""
    if var.type.name in _TENSOR_TYPES:
        text = f"{var.name} : fluid.{var.type}.shape{tuple(var.shape)}.astype({var.dtype})"
    else:  # fluid's text has the stray parenthesis
        text = f"{var.name} : fluid.{var.type})"
    if isinstance(var, Parameter):
        text = ("trainable parameter " if var.trainable else "parameter ") + text
    else:
        text = "var " + text
    return "persist " + text if var.persistable else text


def _declared_kind(op, name: str, value):
    """The AttrType code of attribute ``name``: fluid's proto's when it declares it, else the value's."""
    if has_proto(op.type):
        for attr in get_op_proto(op.type).attrs:
            if attr.name == name:
                return attr.type
    if isinstance(value, Block):
        return _BLOCK
    if isinstance(value, (list, tuple)) and value and all(isinstance(v, Block) for v in value):
        return _BLOCKS
    try:
        return int(op.attr_type(name))
    except TypeError:  # a value no ProgramDesc could hold: printed as it is
        return None


def _block_id(b) -> int:
    return b.idx if isinstance(b, Block) else int(b)


def _plain(value) -> Any:
    """A value as fluid's OpDesc gave it back: lists for sequences, Python scalars."""
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, enum.IntEnum):  # a VarType: the desc held its code
        return int(value)
    return value


def _attr_text(op, name: str) -> str:
    value = op.attr(name)
    kind = _declared_kind(op, name, value)
    if kind == _BLOCK:
        return f"{name} = block[{_block_id(value)}]"
    if kind == _BLOCKS:
        return f"{name} = blocks{[_block_id(b) for b in value]}"
    value = _plain(value)
    if kind == _FLOAT and isinstance(value, (int, float)):
        value = float(np.float32(value))
    elif kind == _FLOATS and isinstance(value, list):
        value = [float(np.float32(v)) for v in value]
    elif kind == _BOOL and isinstance(value, int):
        value = bool(value)
    return f"{name} = {value}"


def _slots_text(op, names, arguments) -> str:
    return "{" + ", ".join(f"{slot}={arguments(slot)}" for slot in names) + "}"


def op_to_code(op, skip_op_callstack: bool = True) -> str:
    """One op as ``{OUT_SLOT=[names], ...} = type(inputs={IN_SLOT=[names], ...}, attr = value, ...)``
    (no ``{...} =`` for an op without output slots)."""
    outputs = _slots_text(op, op.output_names, op.output)
    inputs = _slots_text(op, op.input_names, op.input)
    names = [n for n in sorted(op.attr_names) if not (skip_op_callstack and n == "op_callstack")]
    attrs = ", ".join(_attr_text(op, n) for n in names)
    call = f"{op.type}(inputs={inputs}, {attrs})"
    return call if outputs == "{}" else f"{outputs} = {call}"


def block_to_code(block, block_idx: int, fout=None, skip_op_callstack: bool = False) -> None:
    """Print ``block`` (numbered ``block_idx``) to ``fout`` (stdout when None)."""
    indent = get_indent_space(1)
    print(f"{{ // block {block_idx}", file=fout)
    names = sorted(block.vars)
    for name in names:
        print(indent + variable_to_code(block.vars[name]), file=fout)
    if names:
        print("", file=fout)
    for op in block.ops:
        print(indent + op_to_code(op, skip_op_callstack), file=fout)
    print("}", file=fout)


def program_to_code(prog, fout=None, skip_op_callstack: bool = True) -> None:
    """Print every block of ``prog`` in order to ``fout`` (stdout when None)."""
    for idx, block in enumerate(prog.blocks):
        block_to_code(block, idx, fout, skip_op_callstack)
