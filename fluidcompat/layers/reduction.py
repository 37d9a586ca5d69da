"""``fluid.layers`` reductions: reduce_sum / mean / max / min / prod / all / any, mean, logsumexp."""

from __future__ import annotations

from fluidcompat.framework import Variable, layer
from fluidcompat.layer_helper import LayerHelper, check_dtype, check_variable

__all__ = [
    "mean",
    "reduce_sum",
    "reduce_mean",
    "reduce_max",
    "reduce_min",
    "reduce_prod",
    "reduce_all",
    "reduce_any",
    "logsumexp",
]


@layer
def mean(x, name=None) -> Variable:
    """Mean of all elements, shape [1] (op ``mean``)."""
    check_variable(x, "x", "mean")
    check_dtype(x.dtype, "x", ["float16", "float32", "float64"], "mean")
    helper = LayerHelper("mean", **locals())
    out = helper.create_variable_for_type_inference(dtype=x.dtype)
    helper.append_op(type="mean", inputs={"X": [x]}, outputs={"Out": [out]})
    return out


def _reduce(op_type, input, dim, keep_dim, name):
    check_variable(input, "input", op_type)
    helper = LayerHelper(op_type, name=name)
    if dim is not None and not isinstance(dim, (list, tuple)):
        dim = [dim]
    out = helper.create_variable_for_type_inference(dtype=input.dtype)
    reduce_all = dim is None or dim == [] or len(dim) == len(input.shape)
    helper.append_op(
        type=op_type,
        inputs={"X": [input]},
        outputs={"Out": [out]},
        attrs={"dim": list(dim) if dim else [0], "keep_dim": keep_dim, "reduce_all": reduce_all},
    )
    return out


@layer
def reduce_sum(input, dim=None, keep_dim=False, name=None) -> Variable:
    return _reduce("reduce_sum", input, dim, keep_dim, name)


@layer
def reduce_mean(input, dim=None, keep_dim=False, name=None) -> Variable:
    return _reduce("reduce_mean", input, dim, keep_dim, name)


@layer
def reduce_max(input, dim=None, keep_dim=False, name=None) -> Variable:
    return _reduce("reduce_max", input, dim, keep_dim, name)


@layer
def reduce_min(input, dim=None, keep_dim=False, name=None) -> Variable:
    return _reduce("reduce_min", input, dim, keep_dim, name)


@layer
def reduce_prod(input, dim=None, keep_dim=False, name=None) -> Variable:
    return _reduce("reduce_prod", input, dim, keep_dim, name)


def _bool_reduce(op_type, input, dim, keep_dim, name):
    check_variable(input, "input", op_type)
    check_dtype(input.dtype, "input", ["bool"], op_type)
    return _reduce(op_type, input, dim, keep_dim, name)


@layer
def reduce_all(input, dim=None, keep_dim=False, name=None):
    return _bool_reduce("reduce_all", input, dim, keep_dim, name)


@layer
def reduce_any(input, dim=None, keep_dim=False, name=None):
    return _bool_reduce("reduce_any", input, dim, keep_dim, name)


@layer
def logsumexp(x, dim=None, keepdim=False, out=None, name=None):
    """``log(reduce_sum(exp(x), dim, keepdim))``, built from those three ops as fluid 1.8 built it
    (its op list and profiler rows; as in fluid, a large ``x`` overflows ``exp``)."""
    from fluidcompat.layer_helper import layers

    check_variable(x, "x", "logsumexp")
    check_dtype(x.dtype, "x", ["float32", "float64"], "logsumexp")
    summed = layers.reduce_sum(layers.exp(x), dim, keepdim)
    if out is None:
        return layers.log(summed, name)
    check_variable(out, "out", "logsumexp")
    if out.dtype != x.dtype:
        raise TypeError(f"The data type of 'out' in logsumexp must be x's, {x.dtype}, but received {out.dtype}.")
    LayerHelper("logsumexp").append_op(type="log", inputs={"X": [summed]}, outputs={"Out": [out]})
    return out
