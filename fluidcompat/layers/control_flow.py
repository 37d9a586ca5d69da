"""``fluid.layers`` comparisons, logical ops and ``increment``."""

from __future__ import annotations

from fluidcompat.dtypes import VarType
from fluidcompat.framework import Variable, layer
from fluidcompat.layer_helper import LayerHelper, check_variable

__all__ = [
    "less_than",
    "less_equal",
    "greater_than",
    "greater_equal",
    "equal",
    "not_equal",
    "logical_and",
    "logical_or",
    "logical_not",
    "logical_xor",
    "increment",
]


def _compare(op_type, x, y, cond, force_cpu=None):
    check_variable(x, "x", op_type)
    check_variable(y, "y", op_type)
    helper = LayerHelper(op_type)
    if cond is None:
        cond = helper.create_variable_for_type_inference(dtype=VarType.BOOL)
        cond.stop_gradient = True
    attrs = {} if force_cpu is None else {"force_cpu": force_cpu}
    helper.append_op(type=op_type, inputs={"X": [x], "Y": [y]}, outputs={"Out": [cond]}, attrs=attrs)
    return cond


@layer
def less_than(x, y, force_cpu=None, cond=None) -> Variable:
    return _compare("less_than", x, y, cond, force_cpu)


@layer
def less_equal(x, y, cond=None) -> Variable:
    return _compare("less_equal", x, y, cond)


@layer
def greater_than(x, y, cond=None) -> Variable:
    return _compare("greater_than", x, y, cond)


@layer
def greater_equal(x, y, cond=None) -> Variable:
    return _compare("greater_equal", x, y, cond)


@layer
def equal(x, y, cond=None) -> Variable:
    return _compare("equal", x, y, cond)


@layer
def not_equal(x, y, cond=None) -> Variable:
    return _compare("not_equal", x, y, cond)


def _logical(op_type, x, y, out, name):
    check_variable(x, "x", op_type)
    helper = LayerHelper(op_type, name=name)
    if out is None:
        out = helper.create_variable_for_type_inference(dtype=VarType.BOOL)
    inputs = {"X": [x]} if y is None else {"X": [x], "Y": [y]}
    helper.append_op(type=op_type, inputs=inputs, outputs={"Out": [out]})
    return out


@layer
def logical_and(x, y, out=None, name=None) -> Variable:
    return _logical("logical_and", x, y, out, name)


@layer
def logical_or(x, y, out=None, name=None) -> Variable:
    return _logical("logical_or", x, y, out, name)


@layer
def logical_xor(x, y, out=None, name=None) -> Variable:
    return _logical("logical_xor", x, y, out, name)


@layer
def logical_not(x, out=None, name=None) -> Variable:
    return _logical("logical_not", x, None, out, name)


@layer
def increment(x, value=1.0, in_place=True) -> Variable:
    """``x + value`` (op ``increment``), written back to ``x`` when ``in_place``."""
    helper = LayerHelper("increment", **locals())
    out = x if in_place else helper.create_variable_for_type_inference(dtype=x.dtype)
    helper.append_op(type="increment", inputs={"X": [x]}, outputs={"Out": [out]}, attrs={"step": float(value)})
    return out
