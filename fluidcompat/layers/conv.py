"""``fluid.layers`` convolution and pooling, 2-D and 3-D: conv2d / conv3d and their transposes,
deformable_conv, row_conv (lookahead convolution over sequences), pool2d / pool3d, adaptive_pool2d /
adaptive_pool3d; and the filter, padding and bias helpers they share."""

from __future__ import annotations

from fluidcompat.framework import Variable, layer
from fluidcompat.initializer import NormalInitializer
from fluidcompat.layer_helper import LayerHelper, check_dtype, check_variable, refuse_false
from fluidcompat.layers._common import _one

__all__ = [
    "conv2d",
    "conv2d_transpose",
    "conv3d",
    "conv3d_transpose",
    "deformable_conv",
    "row_conv",
    "pool2d",
    "pool3d",
    "adaptive_pool2d",
    "adaptive_pool3d",
]


# -- filters, padding, bias -------------------------------------------------------------------------
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


def _triple(v, what):
    if isinstance(v, int):
        return [v, v, v]
    v = list(v)
    if len(v) != 3:
        raise ValueError(f"{what} must be an int or 3 ints. Received: {v}")
    return v


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


# -- convolution ------------------------------------------------------------------------------------
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


@layer
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


@layer
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


@layer
def row_conv(input, future_context_size, param_attr=None, act=None):
    """Lookahead convolution over LoD sequences [rows, dim] or padded [batch, time, dim]: each step
    sees itself and the next ``future_context_size`` steps of its sequence."""
    helper = LayerHelper("row_conv", act=act)
    w = helper.create_parameter(attr=param_attr, shape=[future_context_size + 1, input.shape[-1]], dtype=input.dtype)
    out = helper.create_variable_for_type_inference(dtype=input.dtype)
    helper.append_op(type="row_conv", inputs={"X": [input], "Filter": [w]}, outputs={"Out": [out]})
    return helper.append_activation(out)


# -- pooling ----------------------------------------------------------------------------------------
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


@layer
def adaptive_pool2d(input, pool_size, pool_type="max", require_index=False, name=None):
    return _adaptive("pool2d", input, pool_size, pool_type, require_index, 2)


@layer
def adaptive_pool3d(input, pool_size, pool_type="max", require_index=False, name=None):
    return _adaptive("pool3d", input, pool_size, pool_type, require_index, 3)
