"""More of ``fluid.layers`` with fluid 1.8's signatures: activations and math, indexing, creation,
losses, normalization, 3-D conv/pool, resizing (ops in fluidcompat_ops/extra.py)."""

from __future__ import annotations

import warnings

import numpy as np

from fluidcompat import framework, unique_name
from fluidcompat.dtypes import VarType, to_vartype
from fluidcompat.framework import Variable, layer
from fluidcompat.initializer import ConstantInitializer, NormalInitializer, NumpyArrayInitializer
from fluidcompat.layer_helper import LayerHelper, check_dtype, check_variable, refuse_false
from fluidcompat.layers.nn import (
    _activation,
    _conv_padding,
    _pair,
    _reduce,
    channel_bias,
    conv_filter,
    elementwise_mul,
    reduce_mean,
    reduce_sum,
)
from fluidcompat.param_attr import ParamAttr

__all__ = []


def _export(fn):
    __all__.append(fn.__name__)
    return layer(fn)


def _one(op_type, inputs, attrs=None, dtype=None, out_slot="Out", name=None, helper_name=None, stop_gradient=False):
    """Append ``op_type`` with one output (dtype: the first input's unless given)."""
    helper = LayerHelper(helper_name or op_type, name=name)
    first_in = next(v[0] for v in inputs.values() if v)
    out = helper.create_variable_for_type_inference(dtype=dtype if dtype is not None else first_in.dtype)
    out.stop_gradient = stop_gradient
    helper.append_op(type=op_type, inputs=inputs, outputs={out_slot: [out]}, attrs=attrs or {})
    return out


# -- activations and elementwise math --------------------------------------------------------------
def _simple_activation(op_type):
    def fn(x, name=None):
        return _activation(op_type, x, name=name)

    fn.__name__ = op_type
    fn.__doc__ = f"Elementwise ``{op_type}`` (op ``{op_type}``)."
    return _export(fn)


acos = _simple_activation("acos")
asin = _simple_activation("asin")
atan = _simple_activation("atan")
tanh_shrink = _simple_activation("tanh_shrink")


@_export
def erf(x):
    return _activation("erf", x)


@_export
def log1p(x, out=None, name=None):
    return _activation("log1p", x, name=name)


@_export
def hard_shrink(x, threshold=None):
    return _activation("hard_shrink", x, {"threshold": 0.5 if threshold is None else threshold})


@_export
def softshrink(x, alpha=None):
    return _activation("softshrink", x, {"lambda": 0.5 if alpha is None else alpha})


@_export
def thresholded_relu(x, threshold=None):
    return _activation("thresholded_relu", x, {"threshold": 1.0 if threshold is None else threshold})


@_export
def brelu(x, t_min=0.0, t_max=24.0, name=None):
    return _activation("brelu", x, {"t_min": t_min, "t_max": t_max}, name)


@_export
def soft_relu(x, threshold=40.0, name=None):
    return _activation("soft_relu", x, {"threshold": threshold}, name)


@_export
def stanh(x, scale_a=0.67, scale_b=1.7159, name=None):
    return _activation("stanh", x, {"scale_a": scale_a, "scale_b": scale_b}, name)


@_export
def selu(x, scale=None, alpha=None, name=None):
    attrs = {}
    if scale is not None:
        attrs["scale"] = scale
    if alpha is not None:
        attrs["alpha"] = alpha
    return _activation("selu", x, attrs, name)


@_export
def mish(x, threshold=20, name=None):
    return _activation("mish", x, {"threshold": float(threshold)}, name)


@_export
def sign(x):
    """-1, 0 or 1 per element (op ``sign``); a numpy array is assigned first, as in fluid."""
    if not isinstance(x, Variable):
        from fluidcompat.layers.tensor import assign

        x = assign(np.asarray(x))
    check_dtype(x.dtype, "x", ["float16", "float32", "float64"], "sign")
    return _activation("sign", x)


@_export
def cumsum(x, axis=None, exclusive=None, reverse=None):
    # fluid 1.8's cumsum has no flatten: without an axis it runs along the last one.
    attrs = {"axis": -1 if axis is None else axis}
    if exclusive is not None:
        attrs["exclusive"] = exclusive
    if reverse is not None:
        attrs["reverse"] = reverse
    return _activation("cumsum", x, attrs)


@_export
def clamp(input, min=None, max=None, output=None, name=None):
    """``input`` clipped to [min, max] (op ``clip``); a bound not given is the dtype's extreme."""
    from fluidcompat.layers.nn import clip

    lo = float(np.finfo(np.float32).min) if min is None else min
    hi = float(np.finfo(np.float32).max) if max is None else max
    return clip(input, lo, hi, name=name)


@_export
def addcmul(input, tensor1, tensor2, value=1.0, out=None, name=None):
    from fluidcompat.layers.nn import elementwise_add, scale

    return elementwise_add(input, scale(elementwise_mul(tensor1, tensor2), value), name=name)


@_export
def addmm(input, x, y, alpha=1.0, beta=1.0, name=None):
    return _one(
        "addmm", {"Input": [input], "X": [x], "Y": [y]}, {"Alpha": float(alpha), "Beta": float(beta)}, name=name
    )


@_export
def bmm(x, y, name=None):
    check_variable(x, "x", "bmm")
    check_variable(y, "y", "bmm")
    return _one("bmm", {"X": [x], "Y": [y]}, name=name)


@_export
def dot(x, y, name=None):
    return _one("dot", {"X": [x], "Y": [y]}, name=name)


@_export
def cross(input, other, dim=None):
    return _one("cross", {"X": [input], "Y": [other]}, {"dim": -100 if dim is None else dim})


@_export
def dist(x, y, p=2):
    return _one("dist", {"X": [x], "Y": [y]}, {"p": float(p)})


@_export
def cos_sim(X, Y):
    helper = LayerHelper("cos_sim")
    out, xn, yn = (helper.create_variable_for_type_inference(dtype=X.dtype) for _ in range(3))
    helper.append_op(type="cos_sim", inputs={"X": [X], "Y": [Y]}, outputs={"Out": [out], "XNorm": [xn], "YNorm": [yn]})
    return out


@_export
def kron(x, y, out=None, name=None):
    return _one("kron", {"X": [x], "Y": [y]}, name=name)


@_export
def trace(input, offset=0, dim1=0, dim2=1, out=None, name=None):
    return _one("trace", {"Input": [input]}, {"offset": offset, "dim1": dim1, "dim2": dim2}, name=name)


@_export
def logsumexp(x, dim=None, keepdim=False, out=None, name=None):
    """``log(reduce_sum(exp(x), dim, keepdim))``, built from those three ops as fluid 1.8 built it
    (its op list and profiler rows; as in fluid, a large ``x`` overflows ``exp``)."""
    from fluidcompat import layers

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


def _bool_reduce(op_type, input, dim, keep_dim, name):
    check_variable(input, "input", op_type)
    check_dtype(input.dtype, "input", ["bool"], op_type)
    return _reduce(op_type, input, dim, keep_dim, name)


@_export
def reduce_all(input, dim=None, keep_dim=False, name=None):
    return _bool_reduce("reduce_all", input, dim, keep_dim, name)


@_export
def reduce_any(input, dim=None, keep_dim=False, name=None):
    return _bool_reduce("reduce_any", input, dim, keep_dim, name)


@_export
def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False, name=None):
    attrs = {"rtol": rtol, "atol": atol, "equal_nan": equal_nan}
    return _one("allclose", {"Input": [input], "Other": [other]}, attrs, VarType.BOOL, name=name)


@_export
def elementwise_equal(x, y, name=None):
    from fluidcompat.layers.control_flow import equal

    return equal(x, y)


# -- shapes, creation ------------------------------------------------------------------------------
@_export
def rank(input):
    """The number of dimensions of ``input``: a 0-D int32 constant (an assign op, as in fluid 1.8.5)."""
    from fluidcompat.layers.tensor import assign

    check_variable(input, "input", "rank")
    return assign(np.array(len(input.shape), "int32"))


@_export
def size(input):
    return _one("size", {"Input": [input]}, dtype=VarType.INT64)


@_export
def t(input, name=None):
    """The transpose of a tensor of at most 2 dimensions."""
    from fluidcompat.layers.tensor import transpose

    if len(input.shape) > 2:
        raise ValueError(
            f"Input(input) only support N-D (N<=2) tensor, but received length of Input(input) is {len(input.shape)}. "
            "Perhaps you can use paddle.tensor.transpose() instead."
        )
    if len(input.shape) < 2:
        return input
    return transpose(input, [1, 0], name=name)


@_export
def flip(input, dims, name=None):
    return _one("flip", {"X": [input]}, {"dims": list(dims)}, name=name)


@_export
def reverse(x, axis):
    """``x`` reversed along ``axis`` (an int or a list; op ``reverse``)."""
    return _one("reverse", {"X": [x]}, {"axis": [axis] if isinstance(axis, int) else list(axis)})


@_export
def roll(input, shifts, dims=None):
    """``input`` rolled by ``shifts`` along ``dims`` (the flattened tensor when None). As fluid 1.8
    built it: a reshape to [-1, 1] first when ``dims`` is None, and the roll's output reshaped in place
    to the input's shape (its op list and profiler rows)."""
    from fluidcompat.layers.tensor import reshape

    shifts = [shifts] if isinstance(shifts, int) else list(shifts)
    dims = None if dims is None else [dims] if isinstance(dims, int) else list(dims)
    if framework.in_dygraph_mode():
        return _one("roll", {"X": [input]}, {"shifts": shifts, "dims": dims or []})
    origin_shape = list(input.shape)
    if dims is None:
        input, dims = reshape(input, [-1, 1]), [0]
    out = _one("roll", {"X": [input]}, {"shifts": shifts, "dims": dims})
    return reshape(out, origin_shape, inplace=True)


@_export
def tril(input, diagonal=0, name=None):
    return _one("tril_triu", {"X": [input]}, {"diagonal": diagonal, "lower": True}, name=name, helper_name="tril")


@_export
def triu(input, diagonal=0, name=None):
    return _one("tril_triu", {"X": [input]}, {"diagonal": diagonal, "lower": False}, name=name, helper_name="triu")


@_export
def diag(diagonal):
    from fluidcompat.layers.tensor import assign

    if not isinstance(diagonal, Variable):
        diagonal = assign(np.asarray(diagonal))
    return _one("diag", {"Diagonal": [diagonal]}, stop_gradient=True)


@_export
def diag_embed(input, offset=0, dim1=-2, dim2=-1):
    """``input`` (a Variable, or a numpy array, as the docs' example gives it) on diagonals."""
    if isinstance(input, np.ndarray):
        from fluidcompat.layers.tensor import assign

        input = assign(input)
    return _one("diag_embed", {"Input": [input]}, {"offset": offset, "dim1": dim1, "dim2": dim2})


@_export
def eye(num_rows, num_columns=None, batch_shape=None, dtype="float32"):
    from fluidcompat.layers.tensor import expand, reshape

    helper = LayerHelper("eye")
    out = helper.create_variable_for_type_inference(dtype=dtype)
    out.stop_gradient = True
    cols = num_rows if num_columns is None else num_columns
    helper.append_op(
        type="eye",
        outputs={"Out": [out]},
        attrs={"num_rows": num_rows, "num_columns": cols, "dtype": int(to_vartype(dtype))},
    )
    if batch_shape:
        batch = list(batch_shape)
        out = reshape(out, [1] * len(batch) + [num_rows, cols])
        out = expand(out, batch + [1, 1])
        out.stop_gradient = True
    return out


@_export
def full(shape, fill_value, out=None, dtype=None, device=None, stop_gradient=True, name=None):
    from fluidcompat.layers.tensor import fill_constant

    result = fill_constant(shape, dtype or "float32", fill_value, out=out)
    result.stop_gradient = stop_gradient
    return result


@_export
def full_like(input, fill_value, out=None, dtype=None, device=None, stop_gradient=True, name=None):
    if dtype is not None:
        from fluidcompat.layers.tensor import FILL_DTYPES

        check_dtype(dtype, "dtype", FILL_DTYPES, "full_like")
    dtype = input.dtype if dtype is None else to_vartype(dtype)
    result = _one("fill_any_like", {"X": [input]}, {"value": float(fill_value), "dtype": int(dtype)}, dtype, name=name)
    result.stop_gradient = stop_gradient
    return result


@_export
def arange(start, end, step=1, dtype=None, name=None):
    from fluidcompat.layers.tensor import range as range_

    return range_(start, end, step, dtype or "int64")


@_export
def isfinite(x):
    return _one("isfinite", {"X": [x]}, dtype=VarType.BOOL)


@_export
def has_inf(x):
    check_variable(x, "x", "has_inf")
    return _one("isinf", {"X": [x]}, dtype=VarType.BOOL)


@_export
def has_nan(x):
    check_variable(x, "x", "has_nan")
    return _one("isnan", {"X": [x]}, dtype=VarType.BOOL)


@_export
def expand_as(x, target_tensor, name=None):
    return _one("expand_as", {"X": [x], "target_tensor": [target_tensor]}, name=name)


@_export
def pad_constant_like(x, y, pad_value=0.0, name=None):
    return _one("pad_constant_like", {"X": [x], "Y": [y]}, {"pad_value": float(pad_value)}, y.dtype, name=name)


@_export
def strided_slice(input, axes, starts, ends, strides):
    """starts / ends / strides: lists of ints, lists with Variables, or Variables (as ``slice``)."""
    from fluidcompat.layers.tensor import _bound_inputs

    inputs, attrs = {"Input": [input]}, {"axes": list(axes)}
    flags = [1] * len(axes)
    for values, name in ((starts, "starts"), (ends, "ends"), (strides, "strides")):
        _bound_inputs(values, name, inputs, attrs, flags)
    attrs["infer_flags"] = flags
    return _one("strided_slice", inputs, attrs)


@_export
def unstack(x, axis=0, num=None):
    helper = LayerHelper("unstack")
    n = x.shape[axis] if num is None else num
    if n is None or n < 0:
        raise ValueError(f"unstack: the size of axis {axis} of x is unknown; pass num. Received: shape={x.shape}")
    outs = [helper.create_variable_for_type_inference(dtype=x.dtype) for _ in range(n)]
    helper.append_op(type="unstack", inputs={"X": [x]}, outputs={"Y": outs}, attrs={"axis": axis, "num": n})
    return outs


def _unique(op_type, x, dtype, counts):
    check_dtype(dtype, "dtype", ["int32", "int64"], op_type)
    helper = LayerHelper(op_type)
    out = helper.create_variable_for_type_inference(dtype=x.dtype)
    index = helper.create_variable_for_type_inference(dtype=dtype)
    outs = {"Out": [out], "Index": [index]}
    if counts:
        outs["Count"] = [helper.create_variable_for_type_inference(dtype=dtype)]
    helper.append_op(type=op_type, inputs={"X": [x]}, outputs=outs, attrs={"dtype": int(to_vartype(dtype))})
    return (out, index, outs["Count"][0]) if counts else (out, index)


@_export
def unique(x, dtype="int32"):
    return _unique("unique", x, dtype, False)


@_export
def unique_with_counts(x, dtype="int32"):
    return _unique("unique_with_counts", x, dtype, True)


@_export
def meshgrid(input, name=None):
    helper = LayerHelper("meshgrid", name=name)
    outs = [helper.create_variable_for_type_inference(dtype=v.dtype) for v in input]
    helper.append_op(type="meshgrid", inputs={"X": list(input)}, outputs={"Out": outs})
    return outs


@_export
def nonzero(input, as_tuple=False):
    """The indices of the non-zero elements, an int64 [N, rank] tensor (op ``where_index``)."""
    from fluidcompat.layers.tensor import slice as slice_

    out = _one("where_index", {"Condition": [input]}, dtype=VarType.INT64, stop_gradient=True)
    if not as_tuple:
        return out
    return [slice_(out, axes=[1], starts=[k], ends=[k + 1]) for k in range(len(input.shape))]


@_export
def index_select(input, index, dim=0):
    return _one("index_select", {"X": [input], "Index": [index]}, {"dim": dim})


@_export
def index_sample(x, index):
    return _one("index_sample", {"X": [x], "Index": [index]})


@_export
def gather_nd(input, index, name=None):
    return _one("gather_nd", {"X": [input], "Index": [index]}, name=name)


@_export
def scatter_nd_add(ref, index, updates, name=None):
    return _one("scatter_nd_add", {"X": [ref], "Index": [index], "Updates": [updates]}, name=name)


@_export
def scatter_nd(index, updates, shape, name=None):
    from fluidcompat.layers.tensor import zeros

    return scatter_nd_add(zeros(shape, updates.dtype), index, updates, name=name)


@_export
def multiplex(inputs, index):
    return _one("multiplex", {"X": list(inputs), "Ids": [index]})


@_export
def shard_index(input, index_num, nshards, shard_id, ignore_value=-1):
    attrs = {"index_num": index_num, "nshards": nshards, "shard_id": shard_id, "ignore_value": ignore_value}
    return _one("shard_index", {"X": [input]}, attrs)


@_export
def pixel_shuffle(x, upscale_factor):
    return _one("pixel_shuffle", {"X": [x]}, {"upscale_factor": upscale_factor})


@_export
def shuffle_channel(x, group, name=None):
    return _one("shuffle_channel", {"X": [x]}, {"group": group}, name=name)


@_export
def space_to_depth(x, blocksize, name=None):
    return _one("space_to_depth", {"X": [x]}, {"blocksize": blocksize}, name=name)


@_export
def maxout(x, groups, name=None, axis=1):
    return _one("maxout", {"X": [x]}, {"groups": groups, "axis": axis}, name=name)


@_export
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


# -- random ----------------------------------------------------------------------------------------
@_export
def randint(low, high=None, shape=None, out=None, dtype=None, device=None, stop_gradient=False, seed=0, name=None):
    if high is None:
        low, high = 0, low
    if low >= high:
        raise ValueError(f"randint's low must be less than high, but received low = {low}, high = {high}")
    helper = LayerHelper("randint", name=name)
    dtype = dtype or "int64"
    check_dtype(dtype, "dtype", ["int32", "int64"], "randint")
    from fluidcompat.layers.tensor import _shape_inputs

    result = helper.create_variable_for_type_inference(dtype=dtype)
    # a shape of numbers, or holding Variables, or a Variable itself, as fluid's layer took it
    attrs_shape, inputs = _shape_inputs([1] if shape is None else shape, "randint")
    attrs = {"shape": attrs_shape, "low": low, "high": high, "seed": seed, "dtype": int(to_vartype(dtype))}
    helper.append_op(type="randint", inputs=inputs, outputs={"Out": [result]}, attrs=attrs)
    result.stop_gradient = True
    return result


@_export
def randn(shape, out=None, dtype=None, device=None, stop_gradient=True, name=None):
    from fluidcompat.layers.tensor import gaussian_random

    check_dtype(dtype or "float32", "create data type", ["float32", "float64"], "randn")
    result = gaussian_random(list(shape), 0.0, 1.0, 0, dtype or "float32")
    result.stop_gradient = stop_gradient
    return result


@_export
def randperm(n, out=None, dtype="int64", device=None, stop_gradient=True, seed=0):
    if n < 1:
        raise ValueError(f"The input n should be greater than 0 in randperm op. Received: n={n}")
    check_dtype(dtype, "dtype", ["int64", "int32"], "randperm")
    helper = LayerHelper("randperm")
    result = helper.create_variable_for_type_inference(dtype=dtype)
    helper.append_op(
        type="randperm", outputs={"Out": [result]}, attrs={"n": n, "seed": seed, "dtype": int(to_vartype(dtype))}
    )
    result.stop_gradient = stop_gradient
    return result


def _batch_size_like(op_type, input, shape, dtype, input_dim_idx, output_dim_idx, seed, extra):
    helper = LayerHelper(op_type)
    out = helper.create_variable_for_type_inference(dtype=dtype)
    attrs = {"shape": list(shape), "input_dim_idx": input_dim_idx, "output_dim_idx": output_dim_idx, "seed": seed}
    attrs["dtype"] = int(to_vartype(dtype))
    attrs.update(extra)
    helper.append_op(type=op_type, inputs={"Input": [input]}, outputs={"Out": [out]}, attrs=attrs)
    return out


@_export
def uniform_random_batch_size_like(
    input, shape, dtype="float32", input_dim_idx=0, output_dim_idx=0, min=-1.0, max=1.0, seed=0
):
    check_dtype(dtype, "dtype", ("float32", "float64"), "uniform_random_batch_size_like")
    extra = {"min": float(min), "max": float(max)}
    return _batch_size_like(
        "uniform_random_batch_size_like", input, shape, dtype, input_dim_idx, output_dim_idx, seed, extra
    )


@_export
def gaussian_random_batch_size_like(
    input, shape, input_dim_idx=0, output_dim_idx=0, mean=0.0, std=1.0, seed=0, dtype="float32"
):
    # fluid's list: 'int' is no numpy name, so no integer type passes (nor float64)
    check_dtype(dtype, "dtype", ["float16", "float32", "int"], "fluid.layers.gaussian_random_batch_size_like")
    extra = {"mean": float(mean), "std": float(std)}
    return _batch_size_like(
        "gaussian_random_batch_size_like", input, shape, dtype, input_dim_idx, output_dim_idx, seed, extra
    )


# -- losses ----------------------------------------------------------------------------------------
@_export
def sequence_mask(x, maxlen=None, dtype="int64", name=None):
    """``Y[..., j] = j < x[...]`` for ``j < maxlen`` (an int, a Variable, or None: x's largest value)."""
    inputs, attrs = {"X": [x]}, {"out_dtype": int(to_vartype(dtype))}
    if isinstance(maxlen, Variable):
        inputs["MaxLenTensor"] = [maxlen]
    else:
        attrs["maxlen"] = -1 if maxlen is None else int(maxlen)
    return _one("sequence_mask", inputs, attrs, dtype=dtype, out_slot="Y", name=name, stop_gradient=True)


@_export
def label_smooth(label, prior_dist=None, epsilon=0.1, dtype="float32", name=None):
    if epsilon > 1.0 or epsilon < 0.0:
        raise ValueError("The value of epsilon must be between 0 and 1.")
    label.stop_gradient = True  # as fluid 1.8.5: the label (this variable, everywhere) gets no gradient
    ins = {"X": [label]}
    if prior_dist is not None:
        ins["PriorDist"] = [prior_dist]
    return _one("label_smooth", ins, {"epsilon": float(epsilon)}, name=name)


@_export
def log_loss(input, label, epsilon=0.0001, name=None):
    return _one("log_loss", {"Predicted": [input], "Labels": [label]}, {"epsilon": epsilon}, out_slot="Loss", name=name)


@_export
def smooth_l1(x, y, inside_weight=None, outside_weight=None, sigma=None):
    helper = LayerHelper("smooth_l1_loss")
    diff = helper.create_variable_for_type_inference(dtype=x.dtype)
    loss = helper.create_variable_for_type_inference(dtype=x.dtype)
    ins = {"X": [x], "Y": [y]}
    if inside_weight is not None:
        ins["InsideWeight"] = [inside_weight]
    if outside_weight is not None:
        ins["OutsideWeight"] = [outside_weight]
    helper.append_op(
        type="smooth_l1_loss",
        inputs=ins,
        outputs={"Diff": [diff], "Out": [loss]},
        attrs={"sigma": sigma if sigma is not None else 1.0},
    )
    return loss


@_export
def mse_loss(input, label):
    """mean((input - label)^2), built as fluid 1.8 did: reduce_mean of square_error_cost."""
    from fluidcompat.layers.loss import square_error_cost

    return reduce_mean(square_error_cost(input, label))


@_export
def kldiv_loss(x, target, reduction="mean", name=None):
    if reduction not in ("none", "batchmean", "mean", "sum"):
        raise ValueError(f"reduction must be 'none', 'batchmean', 'mean' or 'sum'. Received: {reduction!r}")
    return _one("kldiv_loss", {"X": [x], "Target": [target]}, {"reduction": reduction}, out_slot="Loss", name=name)


@_export
def huber_loss(input, label, delta):
    helper = LayerHelper("huber_loss")
    residual = helper.create_variable_for_type_inference(dtype=input.dtype)
    out = helper.create_variable_for_type_inference(dtype=input.dtype)
    helper.append_op(
        type="huber_loss",
        inputs={"X": [input], "Y": [label]},
        outputs={"Out": [out], "Residual": [residual]},
        attrs={"delta": float(delta)},
    )
    return out


@_export
def margin_rank_loss(label, left, right, margin=0.1, name=None):
    helper = LayerHelper("margin_rank_loss", name=name)
    out = helper.create_variable_for_type_inference(dtype=left.dtype)
    act = helper.create_variable_for_type_inference(dtype=left.dtype)
    helper.append_op(
        type="margin_rank_loss",
        inputs={"Label": [label], "X1": [left], "X2": [right]},
        outputs={"Out": [out], "Activated": [act]},
        attrs={"margin": float(margin)},
    )
    return out


@_export
def rank_loss(label, left, right, name=None):
    return _one("rank_loss", {"Label": [label], "Left": [left], "Right": [right]}, dtype=left.dtype, name=name)


@_export
def bpr_loss(input, label, name=None):
    return _one("bpr_loss", {"X": [input], "Label": [label]}, out_slot="Y", name=name)


@_export
def teacher_student_sigmoid_loss(input, label, soft_max_up_bound=15.0, soft_max_lower_bound=-15.0):
    attrs = {"soft_max_up_bound": float(soft_max_up_bound), "soft_max_lower_bound": float(soft_max_lower_bound)}
    helper = LayerHelper("teacher_student_sigmoid_loss")
    out = helper.create_variable(dtype=input.dtype)  # unnamed, as fluid 1.8.5 made it
    helper.append_op(
        type="teacher_student_sigmoid_loss", inputs={"X": [input], "Label": [label]}, outputs={"Y": [out]}, attrs=attrs
    )
    return out


@_export
def dice_loss(input, label, epsilon=1e-05, name=None):
    """1 - 2|X.Y| / (|X| + |Y| + epsilon) against the one-hot label, averaged over the batch (fluid
    1.8's composition)."""
    from fluidcompat import layers  # the checked one_hot: fluid refused a float label there

    label = layers.one_hot(label, depth=input.shape[-1])
    dims = list(range(1, len(input.shape)))
    inse = reduce_sum(input * label, dim=dims)
    denominator = reduce_sum(input, dim=dims) + reduce_sum(label, dim=dims)
    return reduce_mean(1 - inse * 2 / (denominator + epsilon))


@_export
def npair_loss(anchor, positive, labels, l2_reg=0.002):
    """The N-pair loss of anchors and positives (fluid 1.8's composition): soft-label cross entropy of
    anchor . positive^T against same-label targets, plus 0.25 * l2_reg * the mean squared norms."""
    from fluidcompat.layers.control_flow import equal
    from fluidcompat.layers.loss import softmax_with_cross_entropy
    from fluidcompat.layers.nn import matmul
    from fluidcompat.layers.ops import square
    from fluidcompat.layers.tensor import expand, reshape, shape, slice, transpose

    # fluid 1.8 could not build this for a batch of unknown size (expand by -1); here it expands by
    # the batch size read when it runs
    batch = labels.shape[0]
    if batch < 0:
        batch = slice(shape(labels), axes=[0], starts=[0], ends=[1])
    labels = expand(reshape(labels, [-1, 1]), [1, batch])
    labels = equal(labels, transpose(labels, [1, 0])).astype("float32")
    labels = labels / reduce_sum(labels, dim=1, keep_dim=True)
    l2loss = reduce_mean(reduce_sum(square(anchor), 1)) + reduce_mean(reduce_sum(square(positive), 1))
    l2loss = l2loss * 0.25 * l2_reg
    similarity = matmul(anchor, positive, transpose_x=False, transpose_y=True)
    softmax_ce = softmax_with_cross_entropy(logits=similarity, label=labels, soft_label=True)
    celoss = reduce_mean(reduce_sum(labels * softmax_ce, 0))
    return l2loss + celoss


# -- normalization, 3-D conv and pooling, resizing ---------------------------------------------------
@_export
def group_norm(input, groups, epsilon=1e-05, param_attr=None, bias_attr=None, act=None, data_layout="NCHW", name=None):
    if data_layout not in ("NCHW", "NHWC"):
        raise ValueError(
            "Param(data_layout) of Op(fluid.layers.group_norm) got wrong value: received "
            f"{data_layout} but only NCHW or NHWC supported."
        )
    helper = LayerHelper("group_norm", act=act, name=name)
    c = input.shape[-1 if data_layout == "NHWC" else 1]
    ins = {"X": [input]}
    # as fluid 1.8.5: a scale and a bias only when their attributes are given (its layer tests them for
    # truth), so a program's parameters and its checkpoints are fluid's
    if param_attr:
        ins["Scale"] = [
            helper.create_parameter(
                attr=param_attr, shape=[c], dtype=input.dtype, default_initializer=ConstantInitializer(1.0)
            )
        ]
    if bias_attr:
        ins["Bias"] = [helper.create_parameter(attr=bias_attr, shape=[c], dtype=input.dtype, is_bias=True)]
    # fluid 1.8.5 made all three without a name: _generated_var_N
    mean, var, y = (helper.create_variable(dtype=input.dtype) for _ in range(3))
    mean.stop_gradient = var.stop_gradient = True
    helper.append_op(
        type="group_norm",
        inputs=ins,
        outputs={"Y": [y], "Mean": [mean], "Variance": [var]},
        attrs={"epsilon": epsilon, "groups": groups, "data_layout": data_layout},
    )
    return helper.append_activation(y)


@_export
def instance_norm(input, epsilon=1e-05, param_attr=None, bias_attr=None, name=None):
    refuse_false(bias_attr, "bias_attr", "in instance_norm")
    helper = LayerHelper("instance_norm", name=name)
    c = input.shape[1]
    scale = helper.create_parameter(
        attr=param_attr, shape=[c], dtype=input.dtype, default_initializer=ConstantInitializer(1.0)
    )
    bias = helper.create_parameter(attr=bias_attr, shape=[c], dtype=input.dtype, is_bias=True)
    mean, var, y = (helper.create_variable_for_type_inference(dtype=input.dtype) for _ in range(3))  # fluid's order
    mean.stop_gradient = var.stop_gradient = True
    helper.append_op(
        type="instance_norm",
        inputs={"X": [input], "Scale": [scale], "Bias": [bias]},
        outputs={"Y": [y], "SavedMean": [mean], "SavedVariance": [var]},
        attrs={"epsilon": epsilon},
    )
    return y


@_export
def lrn(input, n=5, k=1.0, alpha=0.0001, beta=0.75, name=None, data_format="NCHW"):
    if len(input.shape) != 4:
        raise ValueError(f"Input's dimension size of Op(lrn) must be 4, but received {len(input.shape)}.")
    if data_format not in ("NCHW", "NHWC"):
        raise ValueError(
            f"Attr(data_format) of Op(lrn) got wrong value: received {data_format} but only NCHW or NHWC supported."
        )
    helper = LayerHelper("lrn", name=name)
    mid = helper.create_variable_for_type_inference(dtype=input.dtype)
    out = helper.create_variable_for_type_inference(dtype=input.dtype)
    helper.append_op(
        type="lrn",
        inputs={"X": [input]},
        outputs={"Out": [out], "MidOut": [mid]},
        attrs={"n": n, "k": k, "alpha": alpha, "beta": beta, "data_format": data_format},
    )
    return out


@_export
def affine_channel(x, scale=None, bias=None, data_layout="NCHW", name=None, act=None):
    helper = LayerHelper("affine_channel", act=act, name=name)
    out = helper.create_variable_for_type_inference(dtype=x.dtype)
    helper.append_op(
        type="affine_channel",
        inputs={"X": [x], "Scale": [scale], "Bias": [bias]},
        outputs={"Out": [out]},
        attrs={"data_layout": data_layout},
    )
    return helper.append_activation(out)


def _triple(v, what):
    if isinstance(v, int):
        return [v, v, v]
    v = list(v)
    if len(v) != 3:
        raise ValueError(f"{what} must be an int or 3 ints. Received: {v}")
    return v


@_export
def conv3d(
    input,
    num_filters,
    filter_size,
    stride=1,
    padding=0,
    dilation=1,
    groups=None,
    param_attr=None,
    bias_attr=None,
    use_cudnn=True,
    act=None,
    name=None,
    data_format="NCDHW",
):
    if data_format not in ("NCDHW", "NDHWC"):
        raise ValueError(f"Attr(data_format) should be 'NCDHW' or 'NDHWC'. Received Attr(data_format): {data_format}.")
    refuse_false(param_attr, "param_attr", "here")
    helper = LayerHelper("conv3d", act=act, name=name, param_attr=param_attr, bias_attr=bias_attr)
    last = data_format == "NDHWC"
    c = input.shape[-1 if last else 1]
    groups = groups or 1
    w = conv_filter(helper, param_attr, num_filters, c, groups, _triple(filter_size, "filter_size"), input.dtype)
    pre = helper.create_variable_for_type_inference(dtype=input.dtype)
    paddings, algo = _conv_padding(padding, data_format, 3)
    helper.append_op(
        type="conv3d",
        inputs={"Input": [input], "Filter": [w]},
        outputs={"Output": [pre]},
        attrs={
            "strides": _triple(stride, "stride"),
            "paddings": paddings,
            "padding_algorithm": algo,
            "dilations": _triple(dilation, "dilation"),
            "groups": groups,
            "use_cudnn": use_cudnn,
            "data_format": data_format,
        },
    )
    return helper.append_activation(channel_bias(helper, pre, data_format))


@_export
def pool3d(
    input,
    pool_size=-1,
    pool_type="max",
    pool_stride=1,
    pool_padding=0,
    global_pooling=False,
    use_cudnn=True,
    ceil_mode=False,
    name=None,
    exclusive=True,
    data_format="NCDHW",
):
    if pool_type not in ("max", "avg"):
        raise ValueError(f"Unknown Attr(pool_type): '{pool_type}'. It can only be 'max' or 'avg'.")
    paddings, algo = _conv_padding(pool_padding, data_format, 3, "pool_padding")
    attrs = {
        "pooling_type": pool_type,
        "ksize": [1, 1, 1] if pool_size == -1 else _triple(pool_size, "pool_size"),
        "global_pooling": global_pooling,
        "strides": _triple(pool_stride, "pool_stride"),
        "paddings": paddings,
        "padding_algorithm": algo,
        "ceil_mode": ceil_mode,
        "exclusive": exclusive,
        "data_format": data_format,
        "use_cudnn": use_cudnn,
    }
    return _one("pool3d", {"X": [input]}, attrs, name=name)


def _adaptive(op_type, input, pool_size, pool_type, require_index, nd):
    if pool_type not in ("max", "avg"):
        raise ValueError(f"Unknown Attr(pool_type): '{pool_type}'. It can only be 'max' or 'avg'.")
    size = [pool_size] * nd if isinstance(pool_size, int) else list(pool_size)
    if require_index and pool_type != "max":
        raise ValueError("require_index is only supported with pool_type='max'")
    if pool_type == "max":  # fluid 1.8.5: max_poolNd_with_index, which also gives each maximum's index
        helper = LayerHelper(f"max_pool{nd}d_with_index")
        out = helper.create_variable_for_type_inference(dtype=input.dtype)
        mask = helper.create_variable_for_type_inference(dtype="int32")
        helper.append_op(
            type=f"max_pool{nd}d_with_index",
            inputs={"X": [input]},
            outputs={"Out": [out], "Mask": [mask]},
            attrs={"pooling_type": "max", "ksize": size, "adaptive": True},
        )
        mask.stop_gradient = True
        return (out, mask) if require_index else out
    attrs = {"pooling_type": pool_type, "ksize": size, "adaptive": True}
    if nd == 2:
        attrs.update(strides=[1, 1], paddings=[0, 0])
    return _one(op_type, {"X": [input]}, attrs)


@_export
def adaptive_pool2d(input, pool_size, pool_type="max", require_index=False, name=None):
    return _adaptive("pool2d", input, pool_size, pool_type, require_index, 2)


@_export
def adaptive_pool3d(input, pool_size, pool_type="max", require_index=False, name=None):
    return _adaptive("pool3d", input, pool_size, pool_type, require_index, 3)


_RESAMPLE = {"BILINEAR": ("bilinear_interp", 2), "NEAREST": ("nearest_interp", 2), "TRILINEAR": ("trilinear_interp", 3)}


@_export
def image_resize(
    input,
    out_shape=None,
    scale=None,
    name=None,
    resample="BILINEAR",
    actual_shape=None,
    align_corners=True,
    align_mode=1,
    data_format="NCHW",
):
    if resample not in _RESAMPLE:
        raise ValueError("The 'resample' of image_resize can only be 'BILINEAR', 'TRILINEAR' or 'NEAREST' currently.")
    op_type, nd = _RESAMPLE[resample]
    if resample in ("BILINEAR", "NEAREST") and len(input.shape) != 4:
        raise ValueError("'BILINEAR' and 'NEAREST' only support 4-D tensor.")
    if resample == "TRILINEAR" and len(input.shape) != 5:
        raise ValueError("'TRILINEAR'only support 5-D tensor.")
    if out_shape is None and scale is None:
        raise ValueError("One of out_shape and scale must not be None.")
    formats = ("NCHW", "NHWC") if len(input.shape) == 4 else ("NCDHW", "NDHWC")
    if len(input.shape) in (4, 5) and data_format not in formats:
        raise ValueError(
            f"Got wrong value for param `data_format`: {data_format} received but only `{formats[0]}` or "
            f"`{formats[1]}` supported for {len(input.shape)}-D input."
        )
    attrs = {"align_corners": align_corners, "align_mode": align_mode, "interp_method": op_type.split("_")[0]}
    attrs["data_layout"] = "NHWC" if data_format in ("NHWC", "NDHWC") else "NCHW"  # fluid's two values
    ins = {"X": [input]}
    if actual_shape is not None:
        ins["OutSize"] = [actual_shape]
    if isinstance(out_shape, Variable):
        ins["OutSize"] = [out_shape]
    elif out_shape is not None:
        if not isinstance(out_shape, (list, tuple)):
            raise TypeError("out_shape should be a list or tuple or Variable.")
        if len(out_shape) != nd:
            raise ValueError(f"out_shape of {op_type} must have {nd} values. Received: {list(out_shape)}")
        if any(not isinstance(d, Variable) and int(d) <= 0 for d in out_shape):
            raise ValueError(f"Each dimension size given in out_shape must be greater than 0. Received: {out_shape}")
        from fluidcompat.layers.tensor import _host_ints, _known_ints

        if any(isinstance(d, Variable) for d in out_shape):
            # SizeTensor: one int32 [1] tensor per output dimension, a constant one where the size is known
            for d in out_shape:
                if isinstance(d, Variable):
                    d.stop_gradient = True
            ins["SizeTensor"] = _host_ints(out_shape)
        dims = _known_ints(out_shape)
        attrs.update(dict(zip(["out_d", "out_h", "out_w"][3 - nd :], dims)))
    elif isinstance(scale, Variable):
        ins["Scale"] = [scale]
    else:
        if not isinstance(scale, (int, float)):  # fluid 1.8.5's check and text
            raise TypeError("Attr(scale)'s type should be float, int or Variable.")
        if float(scale) <= 0:
            raise ValueError("Attr(scale) should be greater than zero.")
        attrs["scale"] = float(scale)
    if isinstance(actual_shape, Variable):  # (fluid 1.8's notice; the size is still taken from it)
        warnings.warn(
            "actual_shape will be deprecated, it is recommended to use out_shape instead of actual_shape to "
            "specify output shape dynamically.",
            stacklevel=3,
        )
        actual_shape.stop_gradient = True
    return _one(op_type, ins, attrs, name=name, helper_name=op_type)


@_export
def interpolate(
    input,
    out_shape=None,
    scale=None,
    name=None,
    resample="BILINEAR",
    actual_shape=None,
    align_corners=True,
    align_mode=1,
    data_format="NCHW",
):
    return image_resize(input, out_shape, scale, name, resample, actual_shape, align_corners, align_mode, data_format)


@_export
def resize_bilinear(
    input,
    out_shape=None,
    scale=None,
    name=None,
    actual_shape=None,
    align_corners=True,
    align_mode=1,
    data_format="NCHW",
):
    return image_resize(input, out_shape, scale, name, "BILINEAR", actual_shape, align_corners, align_mode, data_format)


@_export
def resize_nearest(
    input, out_shape=None, scale=None, name=None, actual_shape=None, align_corners=True, data_format="NCHW"
):
    return image_resize(input, out_shape, scale, name, "NEAREST", actual_shape, align_corners, 1, data_format)


@_export
def resize_trilinear(
    input,
    out_shape=None,
    scale=None,
    name=None,
    actual_shape=None,
    align_corners=True,
    align_mode=1,
    data_format="NCDHW",
):
    return image_resize(
        input, out_shape, scale, name, "TRILINEAR", actual_shape, align_corners, align_mode, data_format
    )


@_export
def image_resize_short(input, out_short_len, resample="BILINEAR"):
    h, w = input.shape[2], input.shape[3]
    if h < 0 or w < 0:
        raise ValueError(f"image_resize_short needs a known height and width. Received: {input.shape}")
    short, long_ = (h, w) if h < w else (w, h)
    long_out = int(long_ * out_short_len / short + 0.5)
    out_shape = [out_short_len, long_out] if h < w else [long_out, out_short_len]
    return image_resize(input, out_shape, resample=resample)


@_export
def unfold(x, kernel_sizes, strides=1, paddings=0, dilations=1, name=None):
    paddings = [paddings] * 4 if isinstance(paddings, int) else list(paddings)
    if len(paddings) == 2:
        paddings = paddings * 2
    attrs = {
        "kernel_sizes": _pair(kernel_sizes, "kernel_sizes"),
        "strides": _pair(strides, "strides"),
        "paddings": paddings,
        "dilations": _pair(dilations, "dilations"),
    }
    return _one("unfold", {"X": [x]}, attrs, out_slot="Y", name=name)


@_export
def temporal_shift(x, seg_num, shift_ratio=0.25, name=None):
    return _one("temporal_shift", {"X": [x]}, {"seg_num": seg_num, "shift_ratio": shift_ratio}, name=name)


@_export
def grid_sampler(x, grid, name=None):
    return _one("grid_sampler", {"X": [x], "Grid": [grid]}, out_slot="Output", name=name)


@_export
def affine_grid(theta, out_shape, name=None):
    ins = {"Theta": [theta]}
    attrs = {}
    if isinstance(out_shape, Variable):
        ins["OutputShape"] = [out_shape]
    else:
        attrs["output_shape"] = [int(d) for d in out_shape]
    return _one("affine_grid", ins, attrs, out_slot="Output", name=name)


@_export
def crop(x, shape=None, offsets=None, name=None):
    """fluid 1.8's deprecated crop (op ``crop``): ``shape`` a list, or a Variable whose shape (not
    its values) is the output's; ``offsets`` a list or an int Variable."""
    if not isinstance(shape, (list, tuple, Variable)):
        raise TypeError(
            f"The type of 'shape' in crop must be (<class 'list'>, <class 'tuple'>, {Variable!r}), "
            f"but received {type(shape)!r}. "
        )
    ins, attrs = {"X": [x]}, {}
    if isinstance(shape, Variable):
        ins["Y"] = [shape]
    else:
        attrs["shape"] = list(shape)
    if offsets is None:
        offsets = [0] * len(x.shape)
    if isinstance(offsets, Variable):
        ins["Offsets"] = [offsets]
    else:
        attrs["offsets"] = list(offsets)
    return _one("crop", ins, attrs, name=name)


# -- more nn layers --------------------------------------------------------------------------------
@_export
def add_position_encoding(input, alpha, beta, name=None):
    return _one("add_position_encoding", {"X": [input]}, {"alpha": float(alpha), "beta": float(beta)}, name=name)


@_export
def bilinear_tensor_product(x, y, size, act=None, name=None, param_attr=None, bias_attr=None):
    helper = LayerHelper("bilinear_tensor_product", act=act, name=name)
    w = helper.create_parameter(attr=param_attr, shape=[size, x.shape[1], y.shape[1]], dtype=x.dtype)
    ins = {"X": [x], "Y": [y], "Weight": [w]}
    bias = helper.create_parameter(attr=bias_attr, shape=[1, size], dtype=x.dtype, is_bias=True)
    if bias is not None:
        ins["Bias"] = [bias]
    out = helper.create_variable_for_type_inference(dtype=x.dtype)
    helper.append_op(type="bilinear_tensor_product", inputs=ins, outputs={"Out": [out]})
    return helper.append_activation(out)


@_export
def conv3d_transpose(
    input,
    num_filters,
    output_size=None,
    filter_size=None,
    padding=0,
    stride=1,
    dilation=1,
    groups=None,
    param_attr=None,
    bias_attr=None,
    use_cudnn=True,
    act=None,
    name=None,
    data_format="NCDHW",
):
    if data_format not in ("NCDHW", "NDHWC"):
        raise ValueError(
            "Param(data_format) of Op(fluid.layers.conv3d_transpose) got wrong value: received "
            f"{data_format} but only NCDHW or NDHWC supported."
        )
    refuse_false(param_attr, "param_attr", "in conv3d_transpose")
    last = data_format == "NDHWC"
    spatial = input.shape[1:4] if last else input.shape[2:5]
    paddings, algo = _conv_padding(padding, data_format, 3)
    strides, dilations = _triple(stride, "stride"), _triple(dilation, "dilation")
    if filter_size is None:
        if output_size is None:
            raise ValueError("output_size must be set when filter_size is None")
        out3 = _triple(output_size, "output_size")
        pads = paddings if len(paddings) == 6 else [v for v in paddings for _ in (0, 1)]
        filter_size = [
            (out3[i] - (spatial[i] - 1) * strides[i] + pads[2 * i] + pads[2 * i + 1] - 1) // dilations[i] + 1
            for i in range(3)
        ]
    helper = LayerHelper("conv3d_transpose", act=act, name=name, param_attr=param_attr, bias_attr=bias_attr)
    groups = groups or 1
    w = helper.create_parameter(
        attr=param_attr,
        shape=[input.shape[-1 if last else 1], num_filters // groups] + _triple(filter_size, "filter_size"),
        dtype=input.dtype,
    )
    pre = helper.create_variable_for_type_inference(dtype=input.dtype)
    helper.append_op(
        type="conv3d_transpose",
        inputs={"Input": [input], "Filter": [w]},
        outputs={"Output": [pre]},
        attrs={
            "output_size": _triple(output_size, "output_size") if output_size is not None else [],
            "strides": strides,
            "paddings": paddings,
            "padding_algorithm": algo,
            "dilations": dilations,
            "groups": groups,
            "use_cudnn": use_cudnn,
            "data_format": "NHWC" if last else "NCHW",  # (fluid 1.8.5's attribute for 3-D data too)
        },
    )
    return helper.append_activation(channel_bias(helper, pre, data_format))


@_export
def fsp_matrix(x, y):
    return _one("fsp", {"X": [x], "Y": [y]}, helper_name="fsp_matrix")


@_export
def gather_tree(ids, parents):
    return _one("gather_tree", {"Ids": [ids], "Parents": [parents]}, stop_gradient=True)


@_export
def get_tensor_from_selected_rows(x, name=None):
    return _one("get_tensor_from_selected_rows", {"X": [x]}, name=name)


@_export
def merge_selected_rows(x, name=None):
    helper = LayerHelper("merge_selected_rows", name=name)
    out = helper.create_variable(
        dtype=x.dtype, type=VarType.SELECTED_ROWS, name=unique_name.generate("merge_selected_rows.tmp")
    )
    helper.append_op(type="merge_selected_rows", inputs={"X": [x]}, outputs={"Out": [out]})
    return out


@_export
def mean_iou(input, label, num_classes):
    helper = LayerHelper("mean_iou")
    miou = helper.create_variable_for_type_inference(dtype="float32")
    wrong = helper.create_variable_for_type_inference(dtype="int32")
    correct = helper.create_variable_for_type_inference(dtype="int32")
    helper.append_op(
        type="mean_iou",
        inputs={"Predictions": [input], "Labels": [label]},
        outputs={"OutMeanIou": [miou], "OutWrong": [wrong], "OutCorrect": [correct]},
        attrs={"num_classes": num_classes},
    )
    return miou, wrong, correct


@_export
def random_crop(x, shape, seed=None):
    """Crop ``x``'s last ``len(shape)`` dims to ``shape`` at random offsets, fresh each run: as in fluid
    1.8.5 the seed is carried from run to run in ``seed`` (a Variable) or, for an int or None, in a
    persistable ``random_crop_seed_N`` that starts from it."""
    helper = LayerHelper("random_crop")
    out = helper.create_variable_for_type_inference(dtype=x.dtype)
    attrs = {"shape": list(shape), "startup_seed": 0}
    if seed is None:
        seed = int(np.random.randint(-65536, 65536))  # numpy's global generator, as fluid 1.8's layer
    if isinstance(seed, (int, np.integer)) and not isinstance(seed, bool):
        attrs["startup_seed"] = int(seed)
        seed = helper.create_variable(name=unique_name.generate("random_crop_seed"), dtype="int64", persistable=True)
    elif not isinstance(seed, Variable):
        raise ValueError(f"'seed' must be a Variable or an int. Received: {type(seed).__name__}")
    helper.append_op(
        type="random_crop", inputs={"X": [x], "Seed": [seed]}, outputs={"Out": [out], "SeedOut": [seed]}, attrs=attrs
    )
    return out


@_export
def sampling_id(x, min=0.0, max=1.0, seed=0, dtype="float32"):
    return _one(
        "sampling_id",
        {"X": [x]},
        {"min": float(min), "max": float(max), "seed": seed},
        dtype,  # fluid 1.8 declared the output with ``dtype``; its kernel writes int64 ids all the same
    )


@_export
def spectral_norm(weight, dim=0, power_iters=1, eps=1e-12, name=None):
    helper = LayerHelper("spectral_norm", name=name)
    h = weight.shape[dim]
    w = int(np.prod([s for i, s in enumerate(weight.shape) if i != dim]))
    u = helper.create_parameter(
        attr=ParamAttr(), shape=[h], dtype=weight.dtype, default_initializer=NormalInitializer(0.0, 1.0)
    )
    v = helper.create_parameter(
        attr=ParamAttr(), shape=[w], dtype=weight.dtype, default_initializer=NormalInitializer(0.0, 1.0)
    )
    u.stop_gradient = v.stop_gradient = True
    out = helper.create_variable(dtype=weight.dtype)  # unnamed, as fluid 1.8.5 made it
    helper.append_op(
        type="spectral_norm",
        inputs={"Weight": [weight], "U": [u], "V": [v]},
        outputs={"Out": [out]},
        attrs={"dim": dim, "power_iters": power_iters, "eps": eps},
    )
    return out


@_export
def row_conv(input, future_context_size, param_attr=None, act=None):
    """Lookahead convolution over LoD sequences [rows, dim] or padded [batch, time, dim]: each step
    sees itself and the next ``future_context_size`` steps of its sequence."""
    helper = LayerHelper("row_conv", act=act)
    w = helper.create_parameter(attr=param_attr, shape=[future_context_size + 1, input.shape[-1]], dtype=input.dtype)
    out = helper.create_variable_for_type_inference(dtype=input.dtype)
    helper.append_op(type="row_conv", inputs={"X": [input], "Filter": [w]}, outputs={"Out": [out]})
    return helper.append_activation(out)


@_export
def is_empty(x, cond=None):
    check_variable(x, "x", "is_empty")
    helper = LayerHelper("is_empty")
    if cond is None:
        cond = helper.create_variable_for_type_inference(dtype="bool")
        cond.stop_gradient = True
    helper.append_op(type="is_empty", inputs={"X": [x]}, outputs={"Out": [cond]})
    return cond


@_export
def edit_distance(input, label, normalized=True, ignored_tokens=None, input_length=None, label_length=None):
    """Levenshtein distance per sequence: LoD [rows, 1] int64 sequences, or padded [batch, length]
    tensors with their lengths. ``ignored_tokens`` are erased from LoD sequences first (op
    ``sequence_erase``). Returns (distances [sequences, 1], the number of sequences)."""
    if (input_length is None) != (label_length is None):
        raise ValueError("edit_distance: give both input_length and label_length, or neither")
    helper = LayerHelper("edit_distance")
    if ignored_tokens:
        if input_length is not None:
            raise ValueError(
                "edit_distance: ignored_tokens erases tokens from LoD sequences; with input_length and "
                "label_length (padded input) leave them out of the input instead"
            )
        erased = []
        for x in (input, label):
            e = helper.create_variable_for_type_inference(dtype="int64")
            helper.append_op(
                type="sequence_erase", inputs={"X": [x]}, outputs={"Out": [e]}, attrs={"tokens": list(ignored_tokens)}
            )
            erased.append(e)
        input, label = erased
    ins = {"Hyps": [input], "Refs": [label]}
    if input_length is not None:
        ins.update(HypsLength=[input_length], RefsLength=[label_length])
    # fluid 1.8 declared the distances int64; its kernel writes float32 all the same
    out = helper.create_variable_for_type_inference(dtype="int64")
    seq_num = helper.create_variable_for_type_inference(dtype="int64")
    helper.append_op(
        type="edit_distance",
        inputs=ins,
        outputs={"Out": [out], "SequenceNum": [seq_num]},
        attrs={"normalized": normalized},
    )
    return out, seq_num


@_export
def warpctc(input, label, blank=0, norm_by_times=False, input_length=None, label_length=None):
    """CTC loss [batch, 1] of LoD logits [rows, classes] and LoD labels [rows, 1] (int32), or of padded
    logits [max_time, batch, classes] and labels [batch, max_label] with their lengths."""
    if (input_length is None) != (label_length is None):
        raise ValueError("warpctc: give both input_length and label_length (padded input), or neither (LoD input)")
    helper = LayerHelper("warpctc")
    loss = helper.create_variable_for_type_inference(dtype=input.dtype)
    grad = helper.create_variable_for_type_inference(dtype=input.dtype)
    inputs = {"Logits": [input], "Label": [label]}
    if input_length is not None:
        inputs.update(LogitsLength=[input_length], LabelLength=[label_length])
    helper.append_op(
        type="warpctc",
        inputs=inputs,
        outputs={"WarpCTCGrad": [grad], "Loss": [loss]},
        attrs={"blank": blank, "norm_by_times": norm_by_times},
    )
    return loss


@_export
def inplace_abn(
    input,
    act=None,
    is_test=False,
    momentum=0.9,
    epsilon=1e-05,
    param_attr=None,
    bias_attr=None,
    data_layout="NCHW",
    name=None,
    moving_mean_name=None,
    moving_variance_name=None,
    do_model_average_for_mean_and_var=True,
    use_global_stats=False,
    act_alpha=1.0,
):
    """batch_norm with its activation (identity, leaky_relu or elu) in one op (``inplace_abn``); the
    memory saving of fluid's in-place version is not reproduced."""
    from fluidcompat.layers.nn import normalized_by_batch

    if act not in (None, "identity", "leaky_relu", "elu"):
        raise ValueError(
            f"inplace_abn only supports activation type in ['identity', 'leaky_relu', 'elu']. Received: {act!r}"
        )
    refuse_false(bias_attr, "bias_attr", "in inplace_abn")
    helper = LayerHelper("inplace_abn", name=name)
    return normalized_by_batch(
        helper, None, input, momentum, epsilon, is_test, data_layout, moving_mean_name, moving_variance_name,
        do_model_average_for_mean_and_var, use_global_stats, param_attr, bias_attr, op_type="inplace_abn",
        activation=act or "identity", alpha=float(act_alpha),
    )  # fmt: skip


@_export
def im2sequence(input, filter_size=1, stride=1, padding=0, input_image_size=None, out_stride=1, name=None):
    """Each image's patches as one LoD sequence of rows [patches, C * kh * kw]; with
    ``input_image_size`` ([N, 2]: each image's real height and width) and ``out_stride``, an image
    has the patches its real size gives."""
    padding = [padding] * 4 if isinstance(padding, int) else list(padding)
    if len(padding) == 2:
        padding = padding * 2
    attrs = {"kernels": _pair(filter_size, "filter_size"), "strides": _pair(stride, "stride"), "paddings": padding}
    attrs["out_stride"] = _pair(out_stride, "out_stride")
    inputs = {"X": [input]} if input_image_size is None else {"X": [input], "Y": [input_image_size]}
    out = _one("im2sequence", inputs, attrs, name=name)
    out._lod_level = 1
    return out


@_export
def ctc_greedy_decoder(input, blank, input_length=None, padding_value=0, name=None):
    """Best path: argmax per step, repeats merged, blanks removed. Of LoD probabilities [rows, classes]
    it returns the decoded LoD sequences [rows, 1] (one row -1 when all come out empty); of padded
    [batch, time, classes] with ``input_length``, (decoded [batch, time] padded, lengths [batch, 1])."""
    from fluidcompat.layers.nn import topk
    from fluidcompat.layers.tensor import squeeze

    _, ids = topk(input, k=1)
    helper = LayerHelper("ctc_greedy_decoder", name=name)
    if input_length is None:
        decoded = helper.create_variable_for_type_inference(dtype="int64")
        helper.append_op(
            type="ctc_align",
            inputs={"Input": [ids]},
            outputs={"Output": [decoded]},
            attrs={"merge_repeated": True, "blank": blank},
        )
        return decoded
    ids = squeeze(ids, [2])
    out = helper.create_variable_for_type_inference(dtype="int64")
    out_len = helper.create_variable_for_type_inference(dtype="int64")
    helper.append_op(
        type="ctc_align",
        inputs={"Input": [ids], "InputLength": [input_length]},
        outputs={"Output": [out], "OutputLength": [out_len]},
        attrs={"merge_repeated": True, "blank": blank, "padding_value": padding_value},
    )
    return out, out_len


@_export
def auc(input, label, curve="ROC", num_thresholds=2**12 - 1, topk=1, slide_steps=1):
    """Global and sliding-window AUC, accumulated in persistable counters (two ``auc`` ops)."""
    helper = LayerHelper("auc")
    auc_out = helper.create_variable_for_type_inference(dtype="float64")
    batch_auc_out = helper.create_variable_for_type_inference(dtype="float64")
    stats = []
    # fluid's counters: the sliding window's batch slots, their sum and a batch count, flat
    window = [(slide_steps + 1) * (num_thresholds + 1) + (1 if slide_steps else 0)]
    for shape in (window,) * 2 + ([1, num_thresholds + 1],) * 2:
        var = helper.create_global_variable(
            persistable=True, dtype="int64", shape=shape, name=unique_name.generate("_generated_var")
        )
        startup = helper.startup_program.global_block()
        startup.create_var(name=var.name, shape=shape, dtype="int64", persistable=True)
        ConstantInitializer(0.0)(startup.var(var.name), startup)
        stats.append(var)
    batch_pos, batch_neg, stat_pos, stat_neg = stats
    for out, pos, neg, steps in ((batch_auc_out, batch_pos, batch_neg, slide_steps), (auc_out, stat_pos, stat_neg, 0)):
        helper.append_op(
            type="auc",
            inputs={"Predict": [input], "Label": [label], "StatPos": [pos], "StatNeg": [neg]},
            attrs={"curve": curve, "num_thresholds": num_thresholds, "slide_steps": steps},
            outputs={"AUC": [out], "StatPosOut": [pos], "StatNegOut": [neg]},
        )
    return auc_out, batch_auc_out, stats


@_export
def similarity_focus(input, axis, indexes, name=None):
    if axis not in (1, 2, 3):
        raise ValueError(f"axis must be 1, 2 or 3. Received: {axis}")
    if not indexes:
        raise ValueError("indexes can not be empty.")
    attrs = {"axis": axis, "indexes": list(indexes)}
    return _one("similarity_focus", {"X": [input]}, attrs, name=name)


@_export
def continuous_value_model(input, cvm, use_cvm=True):
    """CVM features (op ``cvm``): log(show + 1), log(click + 1) - log(show + 1), then the rest, or
    only the rest without ``use_cvm``; the gradient of the first two columns is ``cvm`` (fluid 1.8)."""
    return _one("cvm", {"X": [input], "CVM": [cvm]}, {"use_cvm": use_cvm}, out_slot="Y")


@_export
def center_loss(input, label, num_classes, alpha, param_attr, update_center=True):
    """0.5 * |x - center(label)|^2 per sample; with ``update_center`` each run moves the centers
    toward their samples by ``alpha`` (op ``center_loss``, centers updated in place)."""
    helper = LayerHelper("center_loss")
    centers = helper.create_parameter(attr=param_attr, shape=[num_classes, input.shape[1]], dtype=input.dtype)
    centers.stop_gradient = True
    if isinstance(alpha, Variable):
        rate = alpha
    else:
        from fluidcompat.layers.tensor import create_global_var

        rate = create_global_var(
            shape=[1],
            value=float(alpha),
            dtype="float32",
            persistable=True,
            name=unique_name.generate("centerloss_alpha"),
        )
        rate.stop_gradient = True
    diff = helper.create_variable_for_type_inference(dtype=input.dtype)
    loss = helper.create_variable_for_type_inference(dtype=input.dtype)
    helper.append_op(
        type="center_loss",
        inputs={"X": [input], "Label": [label], "Centers": [centers], "CenterUpdateRate": [rate]},
        outputs={"SampleCenterDiff": [diff], "Loss": [loss], "CentersOut": [centers]},
        attrs={"cluster_num": num_classes, "need_update": update_center},
    )
    return loss


@_export
def chunk_eval(input, label, chunk_scheme, num_chunk_types, excluded_chunk_types=None, seq_length=None):
    """Chunk precision, recall and F1 (and the three counts) of IOB / IOE / IOBES / plain tag
    sequences: padded [batch, length] with ``seq_length``, or one sequence per call without it."""
    if chunk_scheme not in ("IOB", "IOE", "IOBES", "plain"):
        raise ValueError(f"chunk_scheme must be IOB, IOE, IOBES or plain. Received: {chunk_scheme!r}")
    helper = LayerHelper("chunk_eval")
    outs = [helper.create_variable_for_type_inference(dtype="float32") for _ in range(3)]
    outs += [helper.create_variable_for_type_inference(dtype="int64") for _ in range(3)]
    names = ("Precision", "Recall", "F1-Score", "NumInferChunks", "NumLabelChunks", "NumCorrectChunks")
    ins = {"Inference": [input], "Label": [label]}
    if seq_length is not None:
        ins["SeqLength"] = [seq_length]
    helper.append_op(
        type="chunk_eval",
        inputs=ins,
        outputs={n: [v] for n, v in zip(names, outs)},
        attrs={
            "num_chunk_types": num_chunk_types,
            "chunk_scheme": chunk_scheme,
            "excluded_chunk_types": list(excluded_chunk_types or []),
        },
    )
    return tuple(outs)


def _roi(op_type, input, rois, attrs, rois_lod, argmax):
    helper = LayerHelper(op_type)
    out = helper.create_variable_for_type_inference(dtype=input.dtype)
    outs = {"Out": [out]}
    if argmax:
        outs["Argmax"] = [helper.create_variable_for_type_inference(dtype="int64")]
    ins = {"X": [input], "ROIs": [rois]}
    if rois_lod is not None:
        ins["RoisLod"] = [rois_lod]
    helper.append_op(type=op_type, inputs=ins, outputs=outs, attrs=attrs)
    return out


@_export
def roi_pool(input, rois, pooled_height=1, pooled_width=1, spatial_scale=1.0, rois_lod=None):
    """Max pooling over each [x1, y1, x2, y2] region; ``rois_lod`` (offsets per image) says which
    image each region is in (all in image 0 without it)."""
    attrs = {"pooled_height": pooled_height, "pooled_width": pooled_width, "spatial_scale": spatial_scale}
    return _roi("roi_pool", input, rois, attrs, rois_lod, True)


@_export
def roi_align(
    input, rois, pooled_height=1, pooled_width=1, spatial_scale=1.0, sampling_ratio=-1, name=None, rois_lod=None
):
    """Bilinear RoI Align over each [x1, y1, x2, y2] region (fluid 1.8's, without half-pixel offset)."""
    attrs = {
        "pooled_height": pooled_height,
        "pooled_width": pooled_width,
        "spatial_scale": spatial_scale,
        "sampling_ratio": sampling_ratio,
    }
    return _roi("roi_align", input, rois, attrs, rois_lod, False)


@_export
def hsigmoid(
    input,
    label,
    num_classes,
    param_attr=None,
    bias_attr=None,
    name=None,
    path_table=None,
    path_code=None,
    is_custom=False,
    is_sparse=False,
):
    """Hierarchical sigmoid loss (op ``hierarchical_sigmoid``): over fluid's default complete binary
    tree of ``num_classes`` classes (weights [num_classes - 1, dim]), or with ``is_custom`` over each
    sample's ``path_table`` node ids (-1 past the path) and ``path_code`` bits (weights
    [num_classes, dim], num_classes being the number of non-leaf nodes)."""
    if is_custom and (path_table is None or path_code is None):
        raise ValueError("path_table and path_code should not be None with custom tree")
    if not is_custom and (path_table is not None or path_code is not None):
        raise ValueError("only num_classes should be passed without custom tree")
    if num_classes < 2:
        raise ValueError(f"num_classes must not be less than 2 with default tree. Received: {num_classes}")
    sparse_mode_notice()
    helper = LayerHelper("hierarchical_sigmoid", name=name)
    dim = input.shape[1]
    rows = num_classes if is_custom else num_classes - 1
    weights = helper.create_parameter(attr=param_attr, shape=[rows, dim], dtype=input.dtype)
    ins = {"X": [input], "W": [weights], "Label": [label]}
    if is_custom:
        ins.update(PathTable=[path_table], PathCode=[path_code])
    bias = helper.create_parameter(attr=bias_attr, shape=[rows, 1], dtype=input.dtype, is_bias=True)
    if bias is not None:
        ins["Bias"] = [bias]
    out = helper.create_variable_for_type_inference(dtype=input.dtype)
    pre_out = helper.create_variable_for_type_inference(dtype=input.dtype)
    w_out = weights
    helper.append_op(
        type="hierarchical_sigmoid",
        inputs=ins,
        outputs={"Out": [out], "PreOut": [pre_out], "W_Out": [w_out]},
        attrs={"num_classes": num_classes, "is_sparse": is_sparse},
    )
    return out


@_export
def hash(input, hash_size, num_hash=1, name=None):
    """``num_hash`` XXH64 hashes (seeds 0, 1, ...) of each row of an int tensor, modulo ``hash_size``:
    [rows, num_hash, 1] (op ``hash``; fluid 1.8.5's layer rejected every call, its op is reproduced)."""
    check_variable(input, "input", "hash")
    check_dtype(input.dtype, "input", ["int32", "int64"], "hash")
    if not isinstance(hash_size, int) or not isinstance(num_hash, int):
        raise TypeError(f"hash_size and num_hash must be ints. Received: {hash_size!r}, {num_hash!r}")
    out = _one("hash", {"X": [input]}, {"num_hash": num_hash, "mod_by": hash_size}, name=name)
    out.stop_gradient = True
    return out


@_export
def data_norm(
    input,
    act=None,
    epsilon=1e-05,
    param_attr=None,
    data_layout="NCHW",
    in_place=False,
    name=None,
    moving_mean_name=None,
    moving_variance_name=None,
    do_model_average_for_mean_and_var=True,
    slot_dim=-1,
    sync_stats=False,
    summary_decay_rate=0.9999999,
    enable_scale_and_shift=False,
):
    """``(input - batch_sum / batch_size) * sqrt(batch_size / batch_square_sum)`` per column, the three
    statistics being parameters the optimizer accumulates (fluid 1.8's data_norm and its gradient);
    ``enable_scale_and_shift`` adds a learned scale and bias, and ``slot_dim`` zeroes the slots of
    ``slot_dim`` columns whose first column (the show) is 0. ``param_attr`` may be a dict of initial
    values (batch_size, batch_sum, batch_square, scale_w, bias)."""
    helper = LayerHelper("data_norm", act=act, name=name)
    c = input.shape[-1]
    init = {"batch_size": 1e4, "batch_sum": 0.0, "batch_square": 1e4, "scale_w": 1.0, "bias": 0.0}
    if isinstance(param_attr, dict):
        init.update(param_attr)
    prefix = name or "dn"

    def param(key, suffix):
        attr = ParamAttr(name=f"{prefix}.{suffix}", initializer=ConstantInitializer(init[key]), trainable=True)
        return helper.create_parameter(attr=attr, shape=[c], dtype=input.dtype)

    ins = {}
    if enable_scale_and_shift:
        ins["scale_w"] = [param("scale_w", "scale_w")]
        ins["bias"] = [param("bias", "bias")]
    size, total, square = (
        param("batch_size", "batch_size"),
        param("batch_sum", "batch_sum"),
        param("batch_square", "batch_square_sum"),
    )
    ins.update(X=[input], BatchSize=[size], BatchSum=[total], BatchSquareSum=[square])
    # as fluid 1.8.5: unnamed (_generated_var_N), and the input itself when in_place
    means, scales = (helper.create_variable(dtype=input.dtype, stop_gradient=True) for _ in range(2))
    y = input if in_place else helper.create_variable(dtype=input.dtype)
    helper.append_op(
        type="data_norm",
        inputs=ins,
        outputs={"Y": [y], "Means": [means], "Scales": [scales]},
        attrs={"epsilon": epsilon, "slot_dim": slot_dim, "enable_scale_and_shift": enable_scale_and_shift},
    )
    return helper.append_activation(y)


@_export
def sampled_softmax_with_cross_entropy(
    logits,
    label,
    num_samples,
    num_true=1,
    remove_accidental_hits=True,
    use_customized_samples=False,
    customized_samples=None,
    customized_probabilities=None,
    seed=0,
):
    """Softmax cross entropy over the true class and ``num_samples`` sampled classes (log-uniform, or
    ``customized_samples`` with their probabilities), each logit corrected by -log(probability):
    ops ``sample_logits`` and ``softmax_with_cross_entropy``."""
    from fluidcompat.layers.loss import softmax_with_cross_entropy

    helper = LayerHelper("sample_logits")
    # the variables in fluid's order (their names are sample_logits_N.tmp_0 ... tmp_8)
    outs = {
        "Samples": helper.create_variable_for_type_inference(dtype="int64"),
        "Probabilities": helper.create_variable_for_type_inference(dtype=logits.dtype),
        "SampledLogits": helper.create_variable_for_type_inference(dtype=logits.dtype),
        "SampledLabels": helper.create_variable_for_type_inference(dtype="int64"),
    }
    soft = helper.create_variable_for_type_inference(dtype=logits.dtype)
    outs["LogitsDim"] = helper.create_variable_for_type_inference(dtype=logits.dtype)
    outs["LabelsDim"] = helper.create_variable_for_type_inference(dtype=logits.dtype)
    ins = {"Logits": [logits], "Labels": [label]}
    if use_customized_samples:
        if customized_samples is None or customized_probabilities is None:
            raise ValueError("use_customized_samples needs customized_samples and customized_probabilities")
        ins.update(CustomizedSamples=[customized_samples], CustomizedProbabilities=[customized_probabilities])
    helper.append_op(
        type="sample_logits",
        inputs=ins,
        outputs={k: [v] for k, v in outs.items()},
        attrs={
            "use_customized_samples": use_customized_samples,
            "uniq": True,
            "remove_accidental_hits": remove_accidental_hits,
            "num_samples": num_samples,
            "seed": seed,
        },
    )
    outs["SampledLabels"].stop_gradient = True
    if num_true == 1:  # fluid's ops: a one_hot of the sampled labels, a soft-label loss, / num_true
        loss = helper.create_variable_for_type_inference(dtype=logits.dtype)
        softmax = helper.create_variable_for_type_inference(dtype=logits.dtype)
        helper.append_op(
            type="one_hot",
            inputs={"X": [outs["SampledLabels"]]},
            outputs={"Out": [soft]},
            attrs={"depth": num_samples + 1},
        )
        helper.append_op(
            type="softmax_with_cross_entropy",
            inputs={"Logits": [outs["SampledLogits"]], "Label": [soft]},
            outputs={"Softmax": [softmax], "Loss": [loss]},
            attrs={"soft_label": True, "ignore_index": False, "numeric_stable_mode": False},
        )
        return loss / num_true
    # several true classes: a soft target of 1 / num_true on each (fluid 1.8.5 failed here with a
    # shape error)
    from fluidcompat.layers.nn import one_hot_v2, scale

    targets = scale(reduce_sum(one_hot_v2(outs["SampledLabels"], num_true + num_samples), dim=1), 1.0 / num_true)
    targets.stop_gradient = True
    return softmax_with_cross_entropy(outs["SampledLogits"], targets, soft_label=True)


@_export
def linear_chain_crf(input, label, param_attr=None, length=None):
    """Negative log likelihood of tag sequences under a linear-chain CRF whose transition parameter
    [tags + 2, tags] holds start weights, end weights and tag-to-tag weights; padded input
    [batch, time, tags] with ``length``, or LoD sequences of [rows, tags] without it."""
    helper = LayerHelper("linear_chain_crf")
    tags = input.shape[-1]
    transition = helper.create_parameter(attr=param_attr, shape=[tags + 2, tags], dtype=input.dtype)
    outs = {
        k: helper.create_variable_for_type_inference(dtype=input.dtype)
        for k in ("Alpha", "EmissionExps", "TransitionExps", "LogLikelihood")
    }
    helper.append_op(
        type="linear_chain_crf",
        inputs={"Emission": [input], "Transition": [transition], "Label": [label], "Length": _listed(length)},
        outputs={k: [v] for k, v in outs.items()},
    )
    return outs["LogLikelihood"]


def _listed(v):
    return [v] if v is not None else []


@_export
def crf_decoding(input, param_attr, label=None, length=None):
    """The Viterbi tag path under the transition parameter named by ``param_attr`` (or, with
    ``label``, 1 where the path agrees with it); padded input with ``length``, or LoD sequences
    without it (the path is then [rows, 1] with the input's LoD)."""
    helper = LayerHelper("crf_decoding")
    name = param_attr.name if isinstance(param_attr, ParamAttr) else param_attr
    transition = helper.main_program.global_block().var(name)
    path = helper.create_variable_for_type_inference(dtype="int64")
    ins = {"Emission": [input], "Transition": [transition], "Length": _listed(length)}
    if label is not None:
        ins["Label"] = [label]
    helper.append_op(type="crf_decoding", inputs=ins, outputs={"ViterbiPath": [path]})
    return path


@_export
def prroi_pool(input, rois, spatial_scale=1.0, pooled_height=1, pooled_width=1, batch_roi_nums=None, name=None):
    """Precise RoI pooling: each bin's exact average of the bilinear-interpolated feature map
    (op ``prroi_pool``); ``batch_roi_nums`` says how many regions each image has."""
    attrs = {"spatial_scale": spatial_scale, "pooled_height": pooled_height, "pooled_width": pooled_width}
    helper = LayerHelper("prroi_pool", name=name)
    out = helper.create_variable_for_type_inference(dtype=input.dtype)
    ins = {"X": [input], "ROIs": [rois]}
    if batch_roi_nums is not None:
        ins["BatchRoINums"] = [batch_roi_nums]
    helper.append_op(type="prroi_pool", inputs=ins, outputs={"Out": [out]}, attrs=attrs)
    return out


def sparse_mode_notice() -> None:
    """The line fluid 1.8.5 printed whenever it built an nce or hsigmoid layer (sparse or not)."""
    print("With sparse mode, if your models has only small parameter prefetch may cause speed down")


def nce_alias_table(probs):
    """Walker's alias table of ``probs`` (fluid 1.8's construction: over- and under-full classes
    paired first come, first served): ``(alias, alias_probs)``; -1 marks a class that keeps its slot."""
    n = len(probs)
    alias, keep = [0] * n, [0.0] * n
    over, under = [], []

    def file(i, scaled):  # over-full, under-full, or exactly full (keeps its slot)
        if scaled > 1.0:
            over.append((i, scaled))
        elif scaled < 1.0:
            under.append((i, scaled))
        else:
            keep[i], alias[i] = scaled, -1

    for i, p in enumerate(probs):
        file(i, p * n)
    while over and under:
        (big, big_p), (little, little_p) = over.pop(0), under.pop(0)
        keep[little], alias[little] = little_p, big
        file(big, big_p + little_p - 1.0)
    for rest in (over, under):
        if rest:
            keep[rest[0][0]], alias[rest[0][0]] = 1.0, -1
    return alias, keep


def nce_custom_dist_tables(custom_dist):
    """nce's custom-distribution inputs as fluid 1.8 made them: (slot, numpy array) for the
    probabilities, the alias table and the alias probabilities."""
    alias, alias_probs = nce_alias_table([float(p) for p in custom_dist])
    return [
        ("CustomDistProbs", np.array(custom_dist, "float32")),
        ("CustomDistAlias", np.array(alias, "int32")),
        ("CustomDistAliasProbs", np.array(alias_probs, "float32")),
    ]


@_export
def nce(
    input,
    label,
    num_total_classes,
    sample_weight=None,
    param_attr=None,
    bias_attr=None,
    num_neg_samples=None,
    name=None,
    sampler="uniform",
    custom_dist=None,
    seed=0,
    is_sparse=False,
):
    """Noise-contrastive estimation cost per sample (op ``nce``): each true label and
    ``num_neg_samples`` negatives drawn from ``sampler`` ('uniform', 'log_uniform' or 'custom_dist'
    with ``custom_dist``) score sigmoid(x . w + b) against num_neg_samples * q(class)."""
    samplers = {"uniform": 0, "log_uniform": 1, "custom_dist": 2}
    if sampler not in samplers:
        raise ValueError(f"Unsupported sampler type: {sampler!r}; use uniform, log_uniform or custom_dist")
    if sampler == "custom_dist" and (custom_dist is None or len(custom_dist) != num_total_classes):
        raise ValueError("custom_dist must be given, with one probability per class, for sampler='custom_dist'")
    sparse_mode_notice()
    helper = LayerHelper("nce", name=name)
    dim = input.shape[1]
    weight = helper.create_parameter(attr=param_attr, shape=[num_total_classes, dim], dtype=input.dtype)
    ins = {"Input": [input], "Label": [label], "Weight": [weight]}
    bias = helper.create_parameter(attr=bias_attr, shape=[num_total_classes, 1], dtype=input.dtype, is_bias=True)
    if bias is not None:
        ins["Bias"] = [bias]
    if sample_weight is not None:
        ins["SampleWeight"] = [sample_weight]
    if sampler == "custom_dist":  # three parameters the startup program fills, as fluid 1.8 kept them
        for slot, values in nce_custom_dist_tables(custom_dist):
            table = helper.create_parameter(
                attr=ParamAttr(),
                shape=values.shape,
                dtype=values.dtype,
                default_initializer=NumpyArrayInitializer(values),
            )
            table.stop_gradient = True
            ins[slot] = [table]
    cost = helper.create_variable_for_type_inference(dtype=input.dtype)
    logits = helper.create_variable_for_type_inference(dtype=input.dtype)
    labels = helper.create_variable_for_type_inference(dtype="int64")
    helper.append_op(
        type="nce",
        inputs=ins,
        outputs={"Cost": [cost], "SampleLogits": [logits], "SampleLabels": [labels]},
        attrs={
            "num_total_classes": int(num_total_classes),
            "num_neg_samples": 10 if num_neg_samples is None else int(num_neg_samples),
            "seed": seed,
            "sampler": samplers[sampler],
            "is_sparse": is_sparse,
            "remote_prefetch": is_sparse,
        },
    )
    negatives = 10 if num_neg_samples is None else int(num_neg_samples)
    return cost / float(negatives + 1)  # fluid 1.8 averages over the true label and the negatives (a scale op)


@_export
def deformable_conv(
    input,
    offset,
    mask,
    num_filters,
    filter_size,
    stride=1,
    padding=0,
    dilation=1,
    groups=None,
    deformable_groups=None,
    im2col_step=None,
    param_attr=None,
    bias_attr=None,
    modulated=True,
    name=None,
):
    """Deformable convolution (DCN): each kernel tap sampled at its position moved by ``offset``
    [N, 2 * deformable_groups * kh * kw, oh, ow] and, with ``modulated`` (op ``deformable_conv``),
    scaled by ``mask`` [N, deformable_groups * kh * kw, oh, ow]; without (op ``deformable_conv_v1``)
    offsets only. ``im2col_step`` only split fluid's work into batches; here any value gives the
    same result. Then the bias."""
    check_variable(input, "input", "deformable_conv")
    check_dtype(input.dtype, "input", ["float32", "float64"], "deformable_conv")
    check_variable(offset, "offset", "deformable_conv")
    check_dtype(offset.dtype, "offset", ["float32", "float64"], "deformable_conv")
    if mask is not None and not isinstance(mask, Variable):
        raise TypeError(
            f"The type of 'mask' in deformable_conv must be (Variable, NoneType), but received {type(mask)!r}. "
        )
    refuse_false(param_attr, "param_attr", "here")
    if modulated and mask is None:
        raise ValueError("deformable_conv: modulated=True needs a mask; pass modulated=False for offsets alone")
    channels = input.shape[1]
    if groups is not None and channels % groups:
        raise ValueError("num_channels must be divisible by groups.")
    helper = LayerHelper("deformable_conv", name=name, bias_attr=bias_attr)
    k = _pair(filter_size, "filter_size")
    w = conv_filter(helper, param_attr, num_filters, channels, groups or 1, k, input.dtype)
    pre_bias = helper.create_variable_for_type_inference(input.dtype)
    inputs = {"Input": [input], "Filter": [w], "Offset": [offset]}
    if modulated:
        inputs["Mask"] = [mask]
    helper.append_op(
        type="deformable_conv" if modulated else "deformable_conv_v1",
        inputs=inputs,
        outputs={"Output": [pre_bias]},
        attrs={
            "strides": _pair(stride, "stride"),
            "paddings": _pair(padding, "padding"),
            "dilations": _pair(dilation, "dilation"),
            "groups": 1 if groups is None else groups,
            "deformable_groups": 1 if deformable_groups is None else deformable_groups,
            "im2col_step": 64 if im2col_step is None else im2col_step,
        },
    )
    return helper.append_bias_op(pre_bias, dim_start=1, dim_end=2)


@_export
def psroi_pool(input, rois, output_channels, spatial_scale, pooled_height, pooled_width, name=None):
    """Position-sensitive roi pooling (R-FCN, op ``psroi_pool``): ``input`` [N, output_channels *
    pooled_height * pooled_width, H, W], ``rois`` [R, 4] (x1, y1, x2, y2) as a LoDTensor with the rois
    of each image. Bin (i, j) of output channel c averages input channel (c * pooled_height + i) *
    pooled_width + j over the bin. Returns [R, output_channels, pooled_height, pooled_width]."""
    for value, what, kind in (
        (output_channels, "output_channels", int),
        (spatial_scale, "spatial_scale", float),
        (pooled_height, "pooled_height", int),
        (pooled_width, "pooled_width", int),
    ):
        if not isinstance(value, kind):
            raise TypeError(f"{what} must be {kind.__name__} type")
    check_variable(input, "input", "psroi_pool")
    check_variable(rois, "rois", "psroi_pool")
    return _one(
        "psroi_pool",
        {"X": [input], "ROIs": [rois]},
        {
            "output_channels": output_channels,
            "spatial_scale": spatial_scale,
            "pooled_height": pooled_height,
            "pooled_width": pooled_width,
        },
        name=name,
    )


@_export
def deformable_roi_pooling(
    input,
    rois,
    trans,
    no_trans=False,
    spatial_scale=1.0,
    group_size=[1, 1],  # noqa: B006  (fluid's signature)
    pooled_height=1,
    pooled_width=1,
    part_size=None,
    sample_per_part=1,
    trans_std=0.1,
    position_sensitive=False,
    name=None,
):
    """Deformable roi pooling (op ``deformable_psroi_pooling``): each bin of each roi moved by its
    part's offset in ``trans`` [R, 2 * classes, part_h, part_w] (times ``trans_std`` and the roi's
    size; none with ``no_trans``), averaging ``sample_per_part``^2 bilinear samples. With
    ``position_sensitive`` the output has input channels / (pooled_height * pooled_width) channels
    and ``group_size`` picks each bin's input channel (fluid 1.8.5 failed there: it passed that
    channel count as a float); without, as many channels as the input."""
    for value, what in ((input, "input"), (rois, "rois"), (trans, "trans")):
        check_variable(value, what, "deformable_roi_pooling")
        check_dtype(value.dtype, what, ["float32", "float64"], "deformable_roi_pooling")
    for value, what in ((group_size, "group_size"), (part_size, "part_size")):
        if value is not None and not isinstance(value, (list, tuple)):
            raise TypeError(
                f"The type of '{what}' in deformable_roi_pooling must be (list, tuple), but received {type(value)!r}. "
            )
    channels = input.shape[1]
    if position_sensitive:
        if channels % (pooled_height * pooled_width):
            raise ValueError(
                "deformable_roi_pooling: with position_sensitive the input channels must divide by pooled_height * "
                f"pooled_width. Received: {channels} channels, pooled {pooled_height}x{pooled_width}"
            )
        output_channels = channels // (pooled_height * pooled_width)
    else:
        output_channels = channels
    part = _pair(list(part_size) if part_size is not None else [pooled_height, pooled_width], "part_size")
    helper = LayerHelper("deformable_psroi_pooling", name=name)
    output = helper.create_variable_for_type_inference(input.dtype)
    top_count = helper.create_variable_for_type_inference("int32")
    helper.append_op(
        type="deformable_psroi_pooling",
        inputs={"Input": [input], "ROIs": [rois], "Trans": [trans]},
        outputs={"Output": [output], "TopCount": [top_count]},
        attrs={
            "no_trans": no_trans,
            "spatial_scale": spatial_scale,
            "output_dim": output_channels,
            "group_size": _pair(list(group_size), "group_size"),
            "pooled_height": pooled_height,
            "pooled_width": pooled_width,
            "part_size": part,
            "sample_per_part": sample_per_part,
            "trans_std": trans_std,
        },
    )
    return output


@_export
def filter_by_instag(ins, ins_tag, filter_tag, is_lod, out_val_if_empty=0):
    """The instances of ``ins`` (its LoD sequences with ``is_lod``, else its rows) whose tags
    (``ins_tag``, int64 LoD per instance) include one of ``filter_tag``: returns (them, with their LoD;
    a loss weight [kept, 1] of ones). With none: one row of ``out_val_if_empty`` and weight 0."""
    for value, what in ((ins, "ins"), (ins_tag, "ins_tag"), (filter_tag, "filter_tag")):
        check_variable(value, what, "filter_by_instag")
    helper = LayerHelper("filter_by_instag")
    out = helper.create_variable_for_type_inference(dtype=ins.dtype)
    loss_weight = helper.create_variable_for_type_inference(dtype="float32")
    mmap = helper.create_variable_for_type_inference(dtype="int64")
    helper.append_op(
        type="filter_by_instag",
        inputs={"Ins": [ins], "Ins_tag": [ins_tag], "Filter_tag": [filter_tag]},
        outputs={"Out": [out], "LossWeight": [loss_weight], "IndexMap": [mmap]},
        attrs={"is_lod": is_lod, "out_val_if_empty": out_val_if_empty},
    )
    return out, loss_weight
