"""``fluid.layers`` normalization: batch_norm (and inplace_abn, batch_norm with its activation in one
op), layer_norm, group_norm, instance_norm, data_norm, lrn, l2_normalize, spectral_norm,
affine_channel; and batch_norm's parameter helpers, which dygraph's BatchNorm shares."""

from __future__ import annotations

import numpy as np

from fluidcompat.framework import Variable, layer
from fluidcompat.initializer import ConstantInitializer, NormalInitializer
from fluidcompat.layer_helper import LayerHelper, check_variable, refuse_false
from fluidcompat.param_attr import ParamAttr

__all__ = [
    "batch_norm",
    "inplace_abn",
    "layer_norm",
    "group_norm",
    "instance_norm",
    "data_norm",
    "lrn",
    "l2_normalize",
    "spectral_norm",
    "affine_channel",
]


# -- batch_norm and its parameters ------------------------------------------------------------------
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


# -- the other normalizations -----------------------------------------------------------------------
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


@layer
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


@layer
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


@layer
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


@layer
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
