"""``fluid.layers`` elementwise math: the ``elementwise_*`` ops with fluid's ``axis`` broadcasting, mul,
matmul, bmm, dot, cross, kron, trace, scale, pow, clip, sign, cumsum, comparisons and logical ops,
isfinite / has_inf / has_nan / is_empty, allclose, the sum of a list of tensors, and
add_position_encoding (x scaled plus a scaled sinusoidal position table)."""

from __future__ import annotations

import numpy as np

from fluidcompat.dtypes import VarType, np_name
from fluidcompat.framework import Variable, layer
from fluidcompat.layer_helper import LayerHelper, check_dtype, check_variable
from fluidcompat.layers._common import _one
from fluidcompat.layers.activation import _activation

__all__ = [
    "elementwise_add",
    "elementwise_sub",
    "elementwise_mul",
    "elementwise_div",
    "elementwise_max",
    "elementwise_min",
    "elementwise_pow",
    "elementwise_mod",
    "elementwise_floordiv",
    "mul",
    "matmul",
    "bmm",
    "dot",
    "cross",
    "kron",
    "addmm",
    "addcmul",
    "cos_sim",
    "dist",
    "trace",
    "scale",
    "pow",
    "clip",
    "clamp",
    "clip_by_norm",
    "sign",
    "cumsum",
    "add_position_encoding",
    "sums",
    "sum",
    "less_than",
    "less_equal",
    "greater_than",
    "greater_equal",
    "equal",
    "not_equal",
    "elementwise_equal",
    "allclose",
    "logical_and",
    "logical_or",
    "logical_xor",
    "logical_not",
    "isfinite",
    "has_inf",
    "has_nan",
    "is_empty",
]


# -- elementwise binary ops, with fluid's axis broadcasting -----------------------------------------
def _elementwise(op_type, x, y, axis, act, name):
    check_variable(x, "x", op_type)
    check_variable(y, "y", op_type)
    if x.dtype != y.dtype:  # fluid 1.8.5's kernel failed at run time: "Tensor holds the wrong type"
        raise TypeError(
            f"The data types of 'x' and 'y' of {op_type} must be the same, but received x ({x.name}): "
            f"{np_name(x.dtype)}, y ({y.name}): {np_name(y.dtype)}. Cast one of them with fluid.layers.cast."
        )
    helper = LayerHelper(op_type, act=act, name=name)
    out = helper.create_variable_for_type_inference(dtype=x.dtype)
    helper.append_op(type=op_type, inputs={"X": [x], "Y": [y]}, outputs={"Out": [out]}, attrs={"axis": axis})
    return helper.append_activation(out)


@layer
def elementwise_add(x, y, axis=-1, act=None, name=None) -> Variable:
    return _elementwise("elementwise_add", x, y, axis, act, name)


@layer
def elementwise_sub(x, y, axis=-1, act=None, name=None) -> Variable:
    return _elementwise("elementwise_sub", x, y, axis, act, name)


@layer
def elementwise_mul(x, y, axis=-1, act=None, name=None) -> Variable:
    return _elementwise("elementwise_mul", x, y, axis, act, name)


@layer
def elementwise_div(x, y, axis=-1, act=None, name=None) -> Variable:
    return _elementwise("elementwise_div", x, y, axis, act, name)


@layer
def elementwise_max(x, y, axis=-1, act=None, name=None) -> Variable:
    return _elementwise("elementwise_max", x, y, axis, act, name)


@layer
def elementwise_min(x, y, axis=-1, act=None, name=None) -> Variable:
    return _elementwise("elementwise_min", x, y, axis, act, name)


@layer
def elementwise_pow(x, y, axis=-1, act=None, name=None) -> Variable:
    return _elementwise("elementwise_pow", x, y, axis, act, name)


@layer
def elementwise_mod(x, y, axis=-1, act=None, name=None) -> Variable:
    return _elementwise("elementwise_mod", x, y, axis, act, name)


@layer
def elementwise_floordiv(x, y, axis=-1, act=None, name=None) -> Variable:
    return _elementwise("elementwise_floordiv", x, y, axis, act, name)


# -- products ---------------------------------------------------------------------------------------
@layer
def mul(x, y, x_num_col_dims=1, y_num_col_dims=1, name=None) -> Variable:
    helper = LayerHelper("mul", **locals())
    out = helper.create_variable_for_type_inference(dtype=x.dtype)
    helper.append_op(
        type="mul",
        inputs={"X": [x], "Y": [y]},
        outputs={"Out": [out]},
        attrs={"x_num_col_dims": x_num_col_dims, "y_num_col_dims": y_num_col_dims},
    )
    return out


@layer
def matmul(x, y, transpose_x=False, transpose_y=False, alpha=1.0, name=None) -> Variable:
    check_variable(x, "x", "matmul")
    check_variable(y, "y", "matmul")
    helper = LayerHelper("matmul", **locals())
    out = helper.create_variable_for_type_inference(dtype=x.dtype)
    helper.append_op(
        type="matmul",
        inputs={"X": [x], "Y": [y]},
        outputs={"Out": [out]},
        attrs={"transpose_X": transpose_x, "transpose_Y": transpose_y, "alpha": float(alpha)},
    )
    return out


@layer
def bmm(x, y, name=None):
    check_variable(x, "x", "bmm")
    check_variable(y, "y", "bmm")
    return _one("bmm", {"X": [x], "Y": [y]}, name=name)


@layer
def dot(x, y, name=None):
    return _one("dot", {"X": [x], "Y": [y]}, name=name)


@layer
def cross(input, other, dim=None):
    return _one("cross", {"X": [input], "Y": [other]}, {"dim": -100 if dim is None else dim})


@layer
def kron(x, y, out=None, name=None):
    return _one("kron", {"X": [x], "Y": [y]}, name=name)


@layer
def addmm(input, x, y, alpha=1.0, beta=1.0, name=None):
    return _one(
        "addmm", {"Input": [input], "X": [x], "Y": [y]}, {"Alpha": float(alpha), "Beta": float(beta)}, name=name
    )


@layer
def addcmul(input, tensor1, tensor2, value=1.0, out=None, name=None):

    return elementwise_add(input, scale(elementwise_mul(tensor1, tensor2), value), name=name)


@layer
def cos_sim(X, Y):
    helper = LayerHelper("cos_sim")
    out, xn, yn = (helper.create_variable_for_type_inference(dtype=X.dtype) for _ in range(3))
    helper.append_op(type="cos_sim", inputs={"X": [X], "Y": [Y]}, outputs={"Out": [out], "XNorm": [xn], "YNorm": [yn]})
    return out


@layer
def dist(x, y, p=2):
    return _one("dist", {"X": [x], "Y": [y]}, {"p": float(p)})


@layer
def trace(input, offset=0, dim1=0, dim2=1, out=None, name=None):
    return _one("trace", {"Input": [input]}, {"offset": offset, "dim1": dim1, "dim2": dim2}, name=name)


# -- one tensor in ----------------------------------------------------------------------------------
@layer
def scale(x, scale=1.0, bias=0.0, bias_after_scale=True, act=None, name=None) -> Variable:
    check_variable(x, "x", "scale")
    helper = LayerHelper("scale", **locals())
    inputs = {"X": [x]}
    attrs = {"bias": float(bias), "bias_after_scale": bias_after_scale}
    if isinstance(scale, Variable):
        inputs["ScaleTensor"] = [scale]
        attrs["scale"] = 1.0
    else:
        attrs["scale"] = float(scale)
    out = helper.create_variable_for_type_inference(dtype=x.dtype)
    helper.append_op(type="scale", inputs=inputs, outputs={"Out": [out]}, attrs=attrs)
    return helper.append_activation(out)


@layer
def pow(x, factor=1.0, name=None) -> Variable:
    if isinstance(factor, Variable):
        return _activation("pow", x, {}, name, {"FactorTensor": [factor]})
    return _activation("pow", x, {"factor": float(factor)}, name)


@layer
def clip(x, min, max, name=None) -> Variable:
    check_variable(x, "x", "clip")
    check_dtype(x.dtype, "x", ["float16", "float32", "float64"], "clip")
    return _activation("clip", x, {"min": float(min), "max": float(max)}, name)


@layer
def clamp(input, min=None, max=None, output=None, name=None):
    """``input`` clipped to [min, max] (op ``clip``); a bound not given is the dtype's extreme."""

    lo = float(np.finfo(np.float32).min) if min is None else min
    hi = float(np.finfo(np.float32).max) if max is None else max
    return clip(input, lo, hi, name=name)


@layer
def clip_by_norm(x, max_norm, name=None) -> Variable:
    """Scale ``x`` so that its L2 norm is at most ``max_norm`` (op ``clip_by_norm``)."""
    return _activation("clip_by_norm", x, {"max_norm": float(max_norm)}, name)


@layer
def sign(x):
    """-1, 0 or 1 per element (op ``sign``); a numpy array is assigned first, as in fluid."""
    if not isinstance(x, Variable):
        from fluidcompat.layers.creation import assign

        x = assign(np.asarray(x))
    check_dtype(x.dtype, "x", ["float16", "float32", "float64"], "sign")
    return _activation("sign", x)


@layer
def cumsum(x, axis=None, exclusive=None, reverse=None):
    # fluid 1.8's cumsum has no flatten: without an axis it runs along the last one.
    attrs = {"axis": -1 if axis is None else axis}
    if exclusive is not None:
        attrs["exclusive"] = exclusive
    if reverse is not None:
        attrs["reverse"] = reverse
    return _activation("cumsum", x, attrs)


@layer
def add_position_encoding(input, alpha, beta, name=None):
    return _one("add_position_encoding", {"X": [input]}, {"alpha": float(alpha), "beta": float(beta)}, name=name)


# -- the sum of a list of tensors -------------------------------------------------------------------
@layer
def sums(input, out=None) -> Variable:
    helper = LayerHelper("sum", **locals())
    if isinstance(input, Variable):
        input = [input]
    for each in input if isinstance(input, (list, tuple)) else [input]:
        check_variable(each, "input", "sums")
    if out is None:
        out = helper.create_variable_for_type_inference(dtype=helper.input_dtype())
    helper.append_op(type="sum", inputs={"X": list(input)}, outputs={"Out": [out]}, attrs={"use_mkldnn": False})
    return out


def sum(x) -> Variable:
    for each in x if isinstance(x, (list, tuple)) else [x]:
        check_variable(each, "x", "sum")
    return sums(x)


# -- comparisons and logical ops --------------------------------------------------------------------
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


@layer
def elementwise_equal(x, y, name=None):

    return equal(x, y)


@layer
def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False, name=None):
    attrs = {"rtol": rtol, "atol": atol, "equal_nan": equal_nan}
    return _one("allclose", {"Input": [input], "Other": [other]}, attrs, VarType.BOOL, name=name)


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


# -- checks -----------------------------------------------------------------------------------------
@layer
def isfinite(x):
    return _one("isfinite", {"X": [x]}, dtype=VarType.BOOL)


@layer
def has_inf(x):
    check_variable(x, "x", "has_inf")
    return _one("isinf", {"X": [x]}, dtype=VarType.BOOL)


@layer
def has_nan(x):
    check_variable(x, "x", "has_nan")
    return _one("isnan", {"X": [x]}, dtype=VarType.BOOL)


@layer
def is_empty(x, cond=None):
    check_variable(x, "x", "is_empty")
    helper = LayerHelper("is_empty")
    if cond is None:
        cond = helper.create_variable_for_type_inference(dtype="bool")
        cond.stop_gradient = True
    helper.append_op(type="is_empty", inputs={"X": [x]}, outputs={"Out": [cond]})
    return cond
