"""``fluid.layers`` neural-network and math functions (fc, conv2d, pool2d, elementwise, reductions)."""

from __future__ import annotations

import warnings

from fluidcompat import framework
from fluidcompat.dtypes import VarType, np_name, to_vartype
from fluidcompat.framework import Variable, layer
from fluidcompat.initializer import ConstantInitializer, NormalInitializer
from fluidcompat.layer_helper import LayerHelper, check_dtype, check_variable, refuse_false
from fluidcompat.param_attr import ParamAttr

__all__ = [
    "clip_by_norm",
    "autoincreased_step_counter",
    "fc",
    "mul",
    "matmul",
    "scale",
    "mean",
    "reduce_sum",
    "reduce_mean",
    "reduce_max",
    "reduce_min",
    "reduce_prod",
    "elementwise_add",
    "elementwise_sub",
    "elementwise_mul",
    "elementwise_div",
    "elementwise_max",
    "elementwise_min",
    "elementwise_pow",
    "elementwise_mod",
    "elementwise_floordiv",
    "softmax",
    "log_softmax",
    "clip",
    "l2_normalize",
    "topk",
    "one_hot",
    "embedding",
    "conv2d",
    "conv2d_transpose",
    "pool2d",
    "batch_norm",
    "layer_norm",
    "dropout",
    "relu",
    "pow",
    "leaky_relu",
    "elu",
    "relu6",
    "swish",
    "hard_sigmoid",
    "hard_swish",
    "gelu",
]


@layer
def fc(input, size, num_flatten_dims=1, param_attr=None, bias_attr=None, act=None, name=None) -> Variable:
    """Fully connected layer as fluid builds it: ``mul`` (+ ``sum``) + ``elementwise_add`` + activation."""
    helper = LayerHelper("fc", **locals())
    inputs = [input] if isinstance(input, Variable) else list(input)
    for x in inputs:
        check_variable(x, "input", "fc")
        check_dtype(x.dtype, "input", ["float16", "float32", "float64"], "fc")
    attrs = param_attr if isinstance(param_attr, (list, tuple)) else [param_attr] * len(inputs)
    dtype = helper.input_dtype()
    mul_results = []
    for x, pattr in zip(inputs, attrs):
        if num_flatten_dims == -1:  # all but the last dim, as fluid 1.8.5 (taken from the first input on)
            num_flatten_dims = len(x.shape) - 1
        if num_flatten_dims >= len(x.shape) or num_flatten_dims < 1:
            raise ValueError(
                f"num_flatten_dims must be in [1, rank(input)). Received: num_flatten_dims={num_flatten_dims}, "
                f"input.shape={x.shape}"
            )
        in_features = 1
        for d in x.shape[num_flatten_dims:]:
            if d < 0:
                raise ValueError(f"fc needs known feature dims. Received: input.shape={x.shape}")
            in_features *= d
        w = helper.create_parameter(attr=pattr, shape=[in_features, size], dtype=dtype)
        tmp = helper.create_variable_for_type_inference(dtype)
        helper.append_op(
            type="mul",
            inputs={"X": [x], "Y": [w]},
            outputs={"Out": [tmp]},
            attrs={"x_num_col_dims": num_flatten_dims, "y_num_col_dims": 1},
        )
        mul_results.append(tmp)
    if len(mul_results) == 1:
        pre_bias = mul_results[0]
    else:
        pre_bias = helper.create_variable_for_type_inference(dtype)
        helper.append_op(
            type="sum", inputs={"X": mul_results}, outputs={"Out": [pre_bias]}, attrs={"use_mkldnn": False}
        )
    pre_act = helper.append_bias_op(pre_bias, dim_start=num_flatten_dims)
    return helper.append_activation(pre_act)


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


def _activation(op_type, x, attrs=None, name=None, inputs=None):
    check_variable(x, "x", op_type)
    helper = LayerHelper(op_type, name=name)
    out = helper.create_variable_for_type_inference(dtype=x.dtype)
    ins = {"X": [x]}
    ins.update(inputs or {})
    helper.append_op(type=op_type, inputs=ins, outputs={"Out": [out]}, attrs=attrs or {})
    return out


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
    from fluidcompat.layers.tensor import cast

    return cast(x, dtype)


@layer
def relu(x, name=None) -> Variable:
    return _activation("relu", x, name=name)


@layer
def pow(x, factor=1.0, name=None) -> Variable:
    if isinstance(factor, Variable):
        return _activation("pow", x, {}, name, {"FactorTensor": [factor]})
    return _activation("pow", x, {"factor": float(factor)}, name)


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
def clip(x, min, max, name=None) -> Variable:
    check_variable(x, "x", "clip")
    check_dtype(x.dtype, "x", ["float16", "float32", "float64"], "clip")
    return _activation("clip", x, {"min": float(min), "max": float(max)}, name)


@layer
def clip_by_norm(x, max_norm, name=None) -> Variable:
    """Scale ``x`` so that its L2 norm is at most ``max_norm`` (op ``clip_by_norm``)."""
    return _activation("clip_by_norm", x, {"max_norm": float(max_norm)}, name)


@layer
def autoincreased_step_counter(counter_name=None, begin=1, step=1) -> Variable:
    """An int64 counter that an ``increment`` op at the start of the program advances once per run."""
    helper = LayerHelper("global_step_counter")
    name = counter_name or "@STEP_COUNTER@"
    block = helper.main_program.global_block()
    if block.has_var(name):
        return block.var(name)
    counter = helper.create_global_variable(name=name, dtype="int64", shape=[1], persistable=True)
    startup = helper.startup_program.global_block()
    svar = startup.create_var(name=name, dtype="int64", shape=[1], persistable=True)
    ConstantInitializer(value=begin - 1, force_cpu=True)(svar, startup)
    block._prepend_op(
        type="increment", inputs={"X": [counter]}, outputs={"Out": [counter]}, attrs={"step": float(step)}
    )
    counter.stop_gradient = True
    return counter


@layer
def l2_normalize(x, axis, epsilon=1e-12, name=None) -> Variable:
    """``x / sqrt(sum(x^2, axis) + epsilon)`` (op ``norm``)."""
    if len(x.shape) == 1:
        axis = 0
    helper = LayerHelper("l2_normalize", name=name)
    out = helper.create_variable_for_type_inference(dtype=x.dtype)
    norm = helper.create_variable_for_type_inference(dtype=x.dtype)
    helper.append_op(
        type="norm",
        inputs={"X": [x]},
        outputs={"Out": [out], "Norm": [norm]},
        attrs={"axis": 1 if axis is None else axis, "epsilon": epsilon},
    )
    return out


@layer
def topk(input, k, name=None):
    helper = LayerHelper("top_k", name=name)
    values = helper.create_variable_for_type_inference(dtype=input.dtype)
    indices = helper.create_variable_for_type_inference(dtype=VarType.INT64)
    inputs = {"X": [input]}
    attrs = {}
    if isinstance(k, Variable):
        inputs["K"] = [k]
    else:
        attrs["k"] = k
    helper.append_op(type="top_k", inputs=inputs, outputs={"Out": [values], "Indices": [indices]}, attrs=attrs)
    values.stop_gradient = True
    indices.stop_gradient = True
    return values, indices


def _one_hot(op_type, input, depth, allow_out_of_range):
    helper = LayerHelper(op_type)
    out = helper.create_variable_for_type_inference(dtype=VarType.FP32)
    inputs = {"X": [input]}
    attrs = {"allow_out_of_range": allow_out_of_range}
    if isinstance(depth, Variable):
        depth.stop_gradient = True
        inputs["depth_tensor"] = [depth]
    else:
        attrs["depth"] = depth
    helper.append_op(type=op_type, inputs=inputs, outputs={"Out": [out]}, attrs=attrs)
    out.stop_gradient = True
    return out


@layer
def one_hot(input, depth, allow_out_of_range=False) -> Variable:
    """One-hot of ids whose last dim is 1 (op ``one_hot``): output replaces that dim by ``depth``."""
    check_variable(input, "input", "one_hot")
    check_dtype(input.dtype, "input", ["int32", "int64"], "one_hot")
    if not isinstance(depth, (int, Variable)):  # fluid 1.8.5's check and text
        raise TypeError(
            "The type of 'depth' in one_hot must be ((<class 'int'>,), <class 'paddle.fluid.framework.Variable'>), "
            f"but received {type(depth)}. "
        )
    return _one_hot("one_hot", input, depth, allow_out_of_range)


@layer
def one_hot_v2(input, depth, allow_out_of_range=False) -> Variable:
    """``fluid.one_hot`` (op ``one_hot_v2``): output appends a ``depth`` dim."""
    return _one_hot("one_hot_v2", input, depth, allow_out_of_range)


def _embedding(op_type, api, input, size, is_sparse, is_distributed, padding_idx, param_attr, dtype):
    check_variable(input, "input", api)
    if op_type == "lookup_table_v2":
        check_dtype(input.dtype, "input", ["int64"], api)
    check_dtype(dtype, "dtype", ["float16", "float32", "float64"], api)
    helper = LayerHelper("embedding", param_attr=param_attr)
    w = helper.create_parameter(attr=param_attr, shape=list(size), dtype=to_vartype(dtype), is_bias=False)
    out = helper.create_variable_for_type_inference(to_vartype(dtype))
    if padding_idx is None:
        padding_idx = -1
    elif padding_idx < 0:
        padding_idx = size[0] + padding_idx
    helper.append_op(
        type=op_type,
        inputs={"Ids": [input], "W": [w]},
        outputs={"Out": [out]},
        attrs={
            "is_sparse": is_sparse,
            "is_distributed": is_distributed,
            "padding_idx": padding_idx,
            # as fluid 1.8: a sparse table of a parameter-server job is looked up on the servers
            "remote_prefetch": bool(is_sparse and not is_distributed),
        },
    )
    return out


@layer
def embedding(
    input, size, is_sparse=False, is_distributed=False, padding_idx=None, param_attr=None, dtype="float32"
) -> Variable:
    """``fluid.layers.embedding`` (op ``lookup_table``): ids' last dim must be 1."""
    return _embedding(
        "lookup_table", "fluid.layers.embedding", input, size, is_sparse, is_distributed, padding_idx, param_attr, dtype
    )


@layer
def embedding_v2(
    input, size, is_sparse=False, is_distributed=False, padding_idx=None, param_attr=None, dtype="float32"
) -> Variable:
    """``fluid.embedding`` (op ``lookup_table_v2``): output shape is ids.shape + [size[1]]."""
    return _embedding(
        "lookup_table_v2", "fluid.embedding", input, size, is_sparse, is_distributed, padding_idx, param_attr, dtype
    )


def conv_filter(helper, param_attr, num_filters, channels, groups, kernel, dtype):
    """A convolution's filter [num_filters, channels / groups, *kernel], by default normal with fluid's
    std sqrt(2 / (kernel size * channels))."""
    fan_in = channels
    for k in kernel:
        fan_in *= k
    return helper.create_parameter(
        attr=param_attr,
        shape=[num_filters, channels // groups] + list(kernel),
        dtype=dtype,
        default_initializer=NormalInitializer(0.0, (2.0 / fan_in) ** 0.5, 0),
    )


def _pair(v, name):
    if isinstance(v, int):
        return [v, v]
    if isinstance(v, (list, tuple)) and len(v) in (2,):
        return list(v)
    raise ValueError(f"{name} must be an int or a list of 2 ints. Received: {name}={v!r}")


def _conv_padding(padding, data_format, nd=2, what="padding"):
    """Fluid accepts an int, ``nd`` or ``2 * nd`` values (before/after per dim), per-dim pairs of
    every dim in ``data_format``'s order, or 'SAME'/'VALID'. Returns (paddings, padding_algorithm)."""
    if isinstance(padding, str):
        algo = padding.upper()
        if algo not in ("SAME", "VALID"):
            raise ValueError(f"{what} must be 'SAME' or 'VALID' when a string. Received: {what}={padding!r}")
        return [0] * nd, algo
    if isinstance(padding, int):
        return [padding] * nd, "EXPLICIT"
    padding = list(padding)
    if len(padding) == nd + 2 and all(isinstance(p, (list, tuple)) for p in padding):
        spatial = padding[2:] if data_format[1] == "C" else padding[1:-1]
        others = padding[:2] if data_format[1] == "C" else [padding[0], padding[-1]]
        if any(list(p) != [0, 0] for p in others):  # fluid 1.8's words
            raise ValueError(f"Non-zero {what}({padding}) in the batch or channel dimensions is not supported.")
        padding = [v for pair in spatial for v in pair]
    if len(padding) not in (nd, 2 * nd):
        raise ValueError(f"{what} must have {nd} or {2 * nd} values. Received: {what}={padding}")
    if len(padding) == 2 * nd and padding[0::2] == padding[1::2]:
        padding = padding[0::2]
    return padding, "EXPLICIT"


def channel_bias(helper, pre_bias, data_format):
    """``pre_bias`` plus the layer's bias (when it has one) along the channels: axis 1, or the last axis
    for channels-last data (NHWC, NDHWC)."""
    dim = len(pre_bias.shape) - 1 if data_format in ("NHWC", "NDHWC") else 1
    return helper.append_bias_op(pre_bias, dim_start=dim, dim_end=dim + 1)


def _check_format(data_format):
    if data_format not in ("NCHW", "NHWC"):
        raise ValueError(f"Attr(data_format) should be 'NCHW' or 'NHWC'. Received Attr(data_format): {data_format}.")


@layer
def conv2d(
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
    data_format="NCHW",
) -> Variable:
    """2-D convolution (op ``conv2d`` or ``depthwise_conv2d``) + bias + activation."""
    check_variable(input, "input", "conv2d")
    refuse_false(param_attr, "param_attr", "here")
    _check_format(data_format)
    if len(input.shape) != 4:
        raise ValueError(f"Input of conv2d must be 4-D. Received: input.shape={input.shape}")
    channels = input.shape[1] if data_format == "NCHW" else input.shape[3]
    if channels < 0:
        raise ValueError(f"The channel dimension of the input of conv2d must be known. Received: {input.shape}")
    groups = 1 if groups is None else groups
    if channels % groups:
        raise ValueError(
            f"the channel of input must be divisible by groups. Received: channels={channels}, groups={groups}"
        )
    op_type = "conv2d"
    if channels == groups and num_filters % channels == 0 and not use_cudnn:
        op_type = "depthwise_conv2d"
    helper = LayerHelper(op_type, **locals())
    k = _pair(filter_size, "filter_size")
    w = conv_filter(helper, param_attr, num_filters, channels, groups, k, input.dtype)
    paddings, algo = _conv_padding(padding, data_format)
    pre_bias = helper.create_variable_for_type_inference(input.dtype)
    helper.append_op(
        type=op_type,
        inputs={"Input": [input], "Filter": [w]},
        outputs={"Output": [pre_bias]},
        attrs={
            "strides": _pair(stride, "stride"),
            "paddings": paddings,
            "dilations": _pair(dilation, "dilation"),
            "groups": groups,
            "use_cudnn": use_cudnn,
            "padding_algorithm": algo,
            "data_format": data_format,
        },
    )
    return helper.append_activation(channel_bias(helper, pre_bias, data_format))


@layer
def conv2d_transpose(
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
    data_format="NCHW",
) -> Variable:
    if not isinstance(input, Variable):
        raise TypeError("Input of conv2d_transpose must be Variable")  # fluid 1.8's words
    refuse_false(param_attr, "param_attr", "in conv2d_transpose")
    _check_format(data_format)
    channels = input.shape[1] if data_format == "NCHW" else input.shape[3]
    groups = 1 if groups is None else groups
    stride, dilation = _pair(stride, "stride"), _pair(dilation, "dilation")
    paddings, algo = _conv_padding(padding, data_format)
    if filter_size is None:
        if output_size is None:
            raise ValueError("output_size must be set when filter_size is None")
        out_hw = _pair(output_size, "output_size")
        in_hw = input.shape[2:4] if data_format == "NCHW" else input.shape[1:3]
        pads = paddings if len(paddings) == 4 else [paddings[0], paddings[0], paddings[1], paddings[1]]
        filter_size = [
            (out_hw[i] - (in_hw[i] - 1) * stride[i] + pads[2 * i] + pads[2 * i + 1] - 1) // dilation[i] + 1
            for i in (0, 1)
        ]
    helper = LayerHelper("conv2d_transpose", **locals())
    k = _pair(filter_size, "filter_size")
    w = helper.create_parameter(attr=param_attr, shape=[channels, num_filters // groups] + k, dtype=input.dtype)
    pre_bias = helper.create_variable_for_type_inference(input.dtype)
    helper.append_op(
        type="conv2d_transpose",
        inputs={"Input": [input], "Filter": [w]},
        outputs={"Output": [pre_bias]},
        attrs={
            "output_size": [] if output_size is None else _pair(output_size, "output_size"),
            "strides": stride,
            "paddings": paddings,
            "padding_algorithm": algo,
            "dilations": dilation,
            "groups": groups,
            "use_cudnn": use_cudnn,
            "data_format": data_format,
        },
    )
    return helper.append_activation(channel_bias(helper, pre_bias, data_format))


@layer
def pool2d(
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
    data_format="NCHW",
) -> Variable:
    check_variable(input, "input", "pool2d")
    if pool_type not in ("max", "avg"):
        raise ValueError(f"Unknown Attr(pool_type): '{pool_type}'. It can only be 'max' or 'avg'.")
    if global_pooling is False and pool_size == -1:
        raise ValueError(
            "When Attr(global_pooling) is False, Attr(pool_size) must be passed and be a valid value. "
            f"Received pool_size: {pool_size}."
        )
    _check_format(data_format)
    paddings, algo = _conv_padding(pool_padding, data_format, what="pool_padding")
    helper = LayerHelper("pool2d", **locals())
    out = helper.create_variable_for_type_inference(input.dtype)
    ksize = [1, 1] if pool_size == -1 else _pair(pool_size, "pool_size")
    helper.append_op(
        type="pool2d",
        inputs={"X": [input]},
        outputs={"Out": [out]},
        attrs={
            "pooling_type": pool_type,
            "ksize": ksize,
            "global_pooling": global_pooling,
            "strides": _pair(pool_stride, "pool_stride"),
            "paddings": paddings,
            "padding_algorithm": algo,
            "use_cudnn": use_cudnn,
            "ceil_mode": ceil_mode,
            "exclusive": exclusive,
            "data_format": data_format,
        },
    )
    return out


@layer
def batch_norm(
    input,
    act=None,
    is_test=False,
    momentum=0.9,
    epsilon=1e-05,
    param_attr=None,
    bias_attr=None,
    data_layout="NCHW",
    in_place=False,
    name=None,
    moving_mean_name=None,
    moving_variance_name=None,
    do_model_average_for_mean_and_var=True,
    use_global_stats=False,
) -> Variable:
    check_variable(input, "input", "batch_norm")
    refuse_false(bias_attr, "bias_attr", "in batch_norm")
    helper = LayerHelper("batch_norm", **locals())
    out = normalized_by_batch(
        helper, input if in_place else None, input, momentum, epsilon, is_test, data_layout, moving_mean_name,
        moving_variance_name, do_model_average_for_mean_and_var, use_global_stats, param_attr, bias_attr,
    )  # fmt: skip
    return helper.append_activation(out)


def normalized_by_batch(
    helper, out, input, momentum, epsilon, is_test, data_layout, moving_mean_name, moving_variance_name,
    do_model_average_for_mean_and_var, use_global_stats, param_attr=None, bias_attr=None, op_type="batch_norm",
    **more_attrs,
):  # fmt: skip
    """batch_norm's (or inplace_abn's) parameters, named after ``helper``'s layer, its running
    statistics and its op; ``more_attrs``: inplace_abn's activation."""
    attrs = {
        "momentum": momentum,
        "epsilon": epsilon,
        "is_test": is_test,
        "data_layout": data_layout,
        "use_global_stats": use_global_stats,
        **more_attrs,
    }
    dtype = input.dtype
    c = input.shape[1] if data_layout == "NCHW" else input.shape[-1]
    scale = helper.create_parameter(
        attr=ParamAttr._to_attr(param_attr), shape=[c], dtype=dtype, default_initializer=ConstantInitializer(1.0)
    )
    bias = helper.create_parameter(attr=ParamAttr._to_attr(bias_attr), shape=[c], dtype=dtype, is_bias=True)
    mean, variance = bn_statistics(
        helper, [c], dtype, moving_mean_name, moving_variance_name, do_model_average_for_mean_and_var
    )
    return append_batch_norm(helper, input, scale, bias, mean, variance, attrs, dtype, out, op_type)


def bn_statistics(helper, shape, dtype, mean_name, variance_name, model_average):
    """batch_norm's running mean (zeros) and variance (ones): parameters that take no gradient."""
    stats = []
    for name, value in ((mean_name, 0.0), (variance_name, 1.0)):
        attr = ParamAttr(
            name=name, initializer=ConstantInitializer(value), trainable=False, do_model_average=model_average
        )
        stat = helper.create_parameter(attr=attr, shape=shape, dtype=dtype)
        stat.stop_gradient = True
        stats.append(stat)
    return stats


def append_batch_norm(helper, input, scale, bias, mean, variance, attrs, dtype, out=None, op_type="batch_norm"):
    """The batch_norm (or inplace_abn) op updating ``mean`` / ``variance`` in place; returns its output
    (``out``, else a new variable named after the saved statistics', as fluid named them)."""
    saved_mean = helper.create_variable_for_type_inference(dtype=dtype, stop_gradient=True)
    saved_variance = helper.create_variable_for_type_inference(dtype=dtype, stop_gradient=True)
    if out is None:
        out = helper.create_variable_for_type_inference(dtype)
    helper.append_op(
        type=op_type,
        inputs={"X": [input], "Scale": [scale], "Bias": [bias], "Mean": [mean], "Variance": [variance]},
        outputs={
            "Y": [out],
            "MeanOut": [mean],
            "VarianceOut": [variance],
            "SavedMean": [saved_mean],
            "SavedVariance": [saved_variance],
        },
        attrs=attrs,
    )
    return out


@layer
def layer_norm(
    input,
    scale=True,
    shift=True,
    begin_norm_axis=1,
    epsilon=1e-05,
    param_attr=None,
    bias_attr=None,
    act=None,
    name=None,
) -> Variable:
    check_variable(input, "input", "layer_norm")
    if scale:
        refuse_false(param_attr, "param_attr", "when using scale")
    if shift:
        refuse_false(bias_attr, "bias_attr", "when using shift")
    helper = LayerHelper("layer_norm", **locals())
    dtype = input.dtype
    n = 1
    for d in input.shape[begin_norm_axis:]:
        n *= d
    inputs = {"X": [input]}
    if scale:
        inputs["Scale"] = [
            helper.create_parameter(
                attr=param_attr, shape=[n], dtype=dtype, default_initializer=ConstantInitializer(1.0)
            )
        ]
    if shift:
        inputs["Bias"] = [helper.create_parameter(attr=bias_attr, shape=[n], dtype=dtype, is_bias=True)]
    mean_out = helper.create_variable_for_type_inference(dtype=dtype, stop_gradient=True)
    var_out = helper.create_variable_for_type_inference(dtype=dtype, stop_gradient=True)
    out = helper.create_variable_for_type_inference(dtype)
    helper.append_op(
        type="layer_norm",
        inputs=inputs,
        outputs={"Y": [out], "Mean": [mean_out], "Variance": [var_out]},
        attrs={"epsilon": epsilon, "begin_norm_axis": begin_norm_axis},
    )
    return helper.append_activation(out)


@layer
def dropout(x, dropout_prob, is_test=False, seed=None, name=None, dropout_implementation="downgrade_in_infer"):
    check_variable(x, "x", "dropout")
    if dropout_implementation not in ("downgrade_in_infer", "upscale_in_train"):
        raise ValueError(
            "dropout_implementation must be 'downgrade_in_infer' or 'upscale_in_train'. "
            f"Received: dropout_implementation={dropout_implementation!r}"
        )
    helper = LayerHelper("dropout", **locals())
    tracer = framework._dygraph_tracer()
    if tracer is not None and not tracer._train_mode:  # dygraph eval mode (fluid 1.8 read only this)
        is_test = True
    if not seed and helper.main_program.random_seed:
        seed = helper.main_program.random_seed
    out = helper.create_variable_for_type_inference(dtype=x.dtype)
    mask = helper.create_variable_for_type_inference(dtype=VarType.UINT8, stop_gradient=True)
    helper.append_op(
        type="dropout",
        inputs={"X": [x]},
        outputs={"Out": [out], "Mask": [mask]},
        attrs={
            "dropout_prob": float(dropout_prob),
            "is_test": is_test,
            "fix_seed": seed is not None,
            "seed": seed if seed is not None else 0,
            "dropout_implementation": dropout_implementation,
        },
    )
    return out
