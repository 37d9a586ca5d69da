"""``fluid.layers`` one-input activations generated from their op types (fluid's layers/ops.py)."""

from __future__ import annotations

from fluidcompat.framework import layer
from fluidcompat.layers.activation import _activation

_OPS = [
    "sigmoid",
    "logsigmoid",
    "exp",
    "tanh",
    "sqrt",
    "rsqrt",
    "abs",
    "ceil",
    "floor",
    "cos",
    "sin",
    "round",
    "reciprocal",
    "square",
    "softplus",
    "softsign",
    "log",
]
__all__ = list(_OPS)


def _make(op_type):
    def fn(x, name=None):
        return _activation(op_type, x, name=name)

    fn.__name__ = op_type
    fn.__qualname__ = op_type
    fn.__doc__ = f"Elementwise ``{op_type}`` (op ``{op_type}``)."
    return layer(fn)


for _op in _OPS:
    globals()[_op] = _make(_op)


def _generated():
    """fluid's private layers made from op protos (``ops._scale(x=x, scale=10.0, out=out_var)``)."""
    from fluidcompat.layers.layer_function_generator import generate_layer_fn

    return {"_scale": generate_layer_fn("scale"), "_elementwise_div": generate_layer_fn("elementwise_div")}


globals().update(_generated())
