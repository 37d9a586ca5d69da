"""``fluid.layers`` activations: relu and its variants, sigmoid-like and shrink functions, softmax and
log_softmax, gelu, selu, mish, prelu, maxout, erf, log1p, acos / asin / atan. The one-input ops fluid
generated from their op types (sigmoid, exp, tanh, sqrt, abs, cos, log, ...) are in ``ops.py``, the
module fluid kept them in."""

from __future__ import annotations

import warnings

from fluidcompat.framework import Variable, layer
from fluidcompat.initializer import ConstantInitializer
from fluidcompat.layer_helper import LayerHelper, check_dtype, check_variable
from fluidcompat.layers._common import _one
from fluidcompat.param_attr import ParamAttr

__all__ = [
    "relu",
    "leaky_relu",
    "elu",
    "relu6",
    "swish",
    "hard_sigmoid",
    "hard_swish",
    "gelu",
    "softmax",
    "log_softmax",
    "acos",
    "asin",
    "atan",
    "tanh_shrink",
    "erf",
    "log1p",
    "hard_shrink",
    "softshrink",
    "thresholded_relu",
    "brelu",
    "soft_relu",
    "stanh",
    "selu",
    "mish",
    "prelu",
    "maxout",
]


# -- relu and its kin, softmax, gelu ----------------------------------------------------------------
def _activation(op_type, x, attrs=None, name=None, inputs=None):
    check_variable(x, "x", op_type)
    helper = LayerHelper(op_type, name=name)
    out = helper.create_variable_for_type_inference(dtype=x.dtype)
    ins = {"X": [x]}
    ins.update(inputs or {})
    helper.append_op(type=op_type, inputs=ins, outputs={"Out": [out]}, attrs=attrs or {})
    return out


@layer
def relu(x, name=None) -> Variable:
    return _activation("relu", x, name=name)


@layer
def leaky_relu(x, alpha=0.02, name=None) -> Variable:
    return _activation("leaky_relu", x, {"alpha": float(alpha)}, name)


@layer
def elu(x, alpha=1.0, name=None) -> Variable:
    return _activation("elu", x, {"alpha": float(alpha)}, name)


@layer
def relu6(x, threshold=6.0, name=None) -> Variable:
    return _activation("relu6", x, {"threshold": float(threshold)}, name)


@layer
def swish(x, beta=1.0, name=None) -> Variable:
    """``x * sigmoid(x)``.

    Compat: fluid 1.8 stored ``beta`` under the wrong attribute name, so its swish always used
    beta=1. fluidcompat does the same, so results match fluid, and warns when beta is not 1.
    """
    if beta != 1.0:
        warnings.warn(
            f"swish: fluid 1.8 ignores beta={beta} and computes x * sigmoid(x); fluidcompat does the same. "
            "Write x * sigmoid(beta * x) with layers to get another beta.",
            stacklevel=3,
        )
    return _activation("swish", x, {}, name)  # (fluid's layer passed "slope", which its op dropped)


@layer
def hard_sigmoid(x, slope=0.2, offset=0.5, name=None) -> Variable:
    return _activation("hard_sigmoid", x, {"slope": float(slope), "offset": float(offset)}, name)


@layer
def hard_swish(x, threshold=6.0, scale=6.0, offset=3.0, name=None) -> Variable:
    return _activation("hard_swish", x, {"threshold": threshold, "scale": scale, "offset": offset}, name)


@layer
def gelu(x, approximate=False) -> Variable:
    if not isinstance(x, Variable):
        raise ValueError("input of gelu must be variable")  # fluid 1.8's words (its generated layer)
    return _activation("gelu", x, {"approximate": approximate})


@layer
def softmax(input, use_cudnn=False, name=None, axis=-1) -> Variable:
    return _activation("softmax", input, {"axis": axis, "use_cudnn": use_cudnn}, name)


@layer
def log_softmax(input, axis=None, dtype=None, name=None) -> Variable:
    """``log(softmax(input))`` built as fluid 1.8 did: a ``softmax`` op then a ``log`` op."""
    check_variable(input, "input", "log_softmax")
    check_dtype(input.dtype, "input", ["float16", "float32", "float64"], "log_softmax")
    helper = LayerHelper("log_softmax", name=name)
    x = input if dtype is None else cast_to(input, dtype)
    sm = helper.create_variable_for_type_inference(x.dtype)
    helper.append_op(
        type="softmax", inputs={"X": [x]}, outputs={"Out": [sm]}, attrs={"axis": -1 if axis is None else axis}
    )
    out = helper.create_variable_for_type_inference(x.dtype)
    helper.append_op(type="log", inputs={"X": [sm]}, outputs={"Out": [out]})
    return out


def cast_to(x, dtype):
    from fluidcompat.layers.manipulation import cast

    return cast(x, dtype)


# -- more one-input activations ---------------------------------------------------------------------
def _simple_activation(op_type):
    def fn(x, name=None):
        return _activation(op_type, x, name=name)

    fn.__name__ = op_type
    fn.__doc__ = f"Elementwise ``{op_type}`` (op ``{op_type}``)."
    return layer(fn)


acos = _simple_activation("acos")


asin = _simple_activation("asin")


atan = _simple_activation("atan")


tanh_shrink = _simple_activation("tanh_shrink")


@layer
def erf(x):
    return _activation("erf", x)


@layer
def log1p(x, out=None, name=None):
    return _activation("log1p", x, name=name)


@layer
def hard_shrink(x, threshold=None):
    return _activation("hard_shrink", x, {"threshold": 0.5 if threshold is None else threshold})


@layer
def softshrink(x, alpha=None):
    return _activation("softshrink", x, {"lambda": 0.5 if alpha is None else alpha})


@layer
def thresholded_relu(x, threshold=None):
    return _activation("thresholded_relu", x, {"threshold": 1.0 if threshold is None else threshold})


@layer
def brelu(x, t_min=0.0, t_max=24.0, name=None):
    return _activation("brelu", x, {"t_min": t_min, "t_max": t_max}, name)


@layer
def soft_relu(x, threshold=40.0, name=None):
    return _activation("soft_relu", x, {"threshold": threshold}, name)


@layer
def stanh(x, scale_a=0.67, scale_b=1.7159, name=None):
    return _activation("stanh", x, {"scale_a": scale_a, "scale_b": scale_b}, name)


@layer
def selu(x, scale=None, alpha=None, name=None):
    attrs = {}
    if scale is not None:
        attrs["scale"] = scale
    if alpha is not None:
        attrs["alpha"] = alpha
    return _activation("selu", x, attrs, name)


@layer
def mish(x, threshold=20, name=None):
    return _activation("mish", x, {"threshold": float(threshold)}, name)


# -- with a parameter or over channel groups --------------------------------------------------------
@layer
def prelu(x, mode, param_attr=None, name=None):
    if mode not in ("all", "channel", "element"):
        raise ValueError(f"mode should be one of all, channel, element. Received: {mode!r}")
    helper = LayerHelper("prelu", name=name)
    # fluid 1.8.5's shapes (its checkpoints load): [1], [1, C, 1, 1], [1, C, H, W]
    shape = [1] if mode == "all" else [1, x.shape[1], 1, 1] if mode == "channel" else [1] + list(x.shape[1:])
    alpha = helper.create_parameter(
        attr=ParamAttr._to_attr(param_attr), shape=shape, dtype=x.dtype, default_initializer=ConstantInitializer(0.25)
    )
    out = helper.create_variable_for_type_inference(dtype=x.dtype)
    helper.append_op(type="prelu", inputs={"X": [x], "Alpha": [alpha]}, outputs={"Out": [out]}, attrs={"mode": mode})
    return out


@layer
def maxout(x, groups, name=None, axis=1):
    return _one("maxout", {"X": [x]}, {"groups": groups, "axis": axis}, name=name)
