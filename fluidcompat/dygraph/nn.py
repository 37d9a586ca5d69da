"""``fluid.dygraph`` layers (Linear, Conv2D, Pool2D, BatchNorm, ...): fluid 1.8's parameters, names and ops."""

from __future__ import annotations

import numbers
from typing import List

import numpy as np

from fluidcompat.dtypes import VarType
from fluidcompat.dygraph.layers import Layer
from fluidcompat.dygraph.varbase import VarBase
from fluidcompat.initializer import ConstantInitializer, NormalInitializer
from fluidcompat.layer_helper import check_dtype, check_variable, refuse_false
from fluidcompat.layers.losses import nce_custom_dist_tables, sparse_mode_notice
from fluidcompat.layers.norm import append_batch_norm, bn_statistics
from fluidcompat.param_attr import ParamAttr

__all__ = [
    "Conv2D",
    "Conv2DTranspose",
    "Pool2D",
    "Linear",
    "BatchNorm",
    "Dropout",
    "Embedding",
    "LayerNorm",
    "InstanceNorm",
    "GroupNorm",
    "PRelu",
    "MSELoss",
    "L1Loss",
    "BCELoss",
    "NLLLoss",
    "Conv3D",
    "Conv3DTranspose",
    "BilinearTensorProduct",
    "GRUUnit",
    "SpectralNorm",
    "NCE",
    "TreeConv",
]


def _ntuple(value, n: int, name: str) -> List[int]:
    if isinstance(value, numbers.Integral):
        return [int(value)] * n
    if isinstance(value, (list, tuple)) and len(value) == n and all(isinstance(v, numbers.Integral) for v in value):
        return [int(v) for v in value]
    raise ValueError(f"The {name}'s type must be list or tuple of {n} ints, or an int. Received: {name}={value!r}")


def _out(layer: Layer, dtype, stop_gradient: bool = False):
    return layer._helper.create_variable_for_type_inference(dtype, stop_gradient=stop_gradient)


def _op(layer: Layer, type: str, inputs, outputs, attrs=None) -> None:
    layer._helper.append_op(type=type, inputs=inputs, outputs=outputs, attrs=attrs or {})


def _bias(layer: Layer, x, bias, axis: int):
    if bias is None:
        return x
    out = _out(layer, x.dtype)
    _op(layer, "elementwise_add", {"X": [x], "Y": [bias]}, {"Out": [out]}, {"axis": axis})
    return out


def _activation(layer: Layer, x, act):
    if act is None:
        return x
    from fluidcompat.layer_helper import is_activation

    if not is_activation(act):
        raise ValueError(
            f"Unknown activation '{act}' in {type(layer).__name__}. Expected an activation op such as "
            f"'relu', 'sigmoid', 'tanh', 'softmax'."
        )
    out = _out(layer, x.dtype)
    _op(layer, act, {"X": [x]}, {"Out": [out]})
    return out


class Linear(Layer):
    """``act(input @ weight + bias)``; weight ``[input_dim, output_dim]`` (Xavier), bias zeros."""

    def __init__(self, input_dim, output_dim, param_attr=None, bias_attr=None, act=None, dtype="float32"):
        super().__init__()
        self._act = act
        self._dtype = dtype
        self.weight = self.create_parameter(shape=[input_dim, output_dim], attr=param_attr, dtype=dtype, is_bias=False)
        self.bias = self.create_parameter(shape=[output_dim], attr=bias_attr, dtype=dtype, is_bias=True)

    def forward(self, input):
        tmp = _out(self, self._dtype)
        _op(
            self,
            "matmul",
            {"X": [input], "Y": [self.weight]},
            {"Out": [tmp]},
            {"transpose_X": False, "transpose_Y": False, "alpha": 1.0},
        )
        return _activation(self, _bias(self, tmp, self.bias, len(input.shape) - 1), self._act)


class _Conv(Layer):
    """Conv2D and Conv3D: weight ``[num_filters, num_channels // groups, *filter_size]`` (normal, std
    ``sqrt(2 / (prod(filter_size) * num_channels))``), bias ``[num_filters]``, then ``act``."""

    def __init__(self, nd, op_type, num_channels, num_filters, filter_size, stride, padding, dilation, groups,
                 param_attr, bias_attr, use_cudnn, act, dtype):  # fmt: skip
        super().__init__()
        if groups is None:
            per_group = num_channels
        else:
            if num_channels % groups != 0:
                raise ValueError("num_channels must be divisible by groups.")
            per_group = num_channels // groups
        size = _ntuple(filter_size, nd, "filter_size")
        self._op_type = op_type
        self._act = act
        self._dtype = dtype
        self._attrs = {
            "strides": _ntuple(stride, nd, "stride"),
            "paddings": _ntuple(padding, nd, "padding"),
            "dilations": _ntuple(dilation, nd, "dilation"),
            "groups": groups if groups else 1,
            "use_cudnn": use_cudnn,
            "use_mkldnn": False,
        }
        std = (2.0 / (int(np.prod(size)) * num_channels)) ** 0.5
        self.weight = self.create_parameter(
            attr=param_attr,
            shape=[num_filters, per_group] + size,
            dtype=dtype,
            default_initializer=NormalInitializer(0.0, std, 0),
        )
        self.bias = self.create_parameter(attr=bias_attr, shape=[num_filters], dtype=dtype, is_bias=True)

    def forward(self, input):
        out = _out(self, self._dtype)
        _op(self, self._op_type, {"Input": [input], "Filter": [self.weight]}, {"Output": [out]}, self._attrs)
        return _activation(self, _bias(self, out, self.bias, 1), self._act)


class Conv2D(_Conv):
    """2-D convolution (NCHW); ``depthwise_conv2d`` when each channel is its own group and cuDNN is off."""

    def __init__(
        self,
        num_channels,
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
        dtype="float32",
    ):
        if not isinstance(use_cudnn, bool):
            raise ValueError("use_cudnn should be True or False")
        depthwise = num_channels == groups and num_filters % num_channels == 0 and not use_cudnn
        super().__init__(2, "depthwise_conv2d" if depthwise else "conv2d", num_channels, num_filters, filter_size,
                         stride, padding, dilation, groups, param_attr, bias_attr, use_cudnn, act, dtype)  # fmt: skip


class Conv3D(_Conv):
    """3-D convolution (NCDHW)."""

    def __init__(
        self,
        num_channels,
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
        dtype="float32",
    ):
        refuse_false(param_attr, "param_attr", "here")
        super().__init__(3, "conv3d", num_channels, num_filters, filter_size, stride, padding, dilation, groups,
                         param_attr, bias_attr, use_cudnn, act, dtype)  # fmt: skip


class _ConvTranspose(Layer):
    """Conv2DTranspose and Conv3DTranspose: weight ``[num_channels, num_filters // groups, *filter_size]``
    (Xavier), bias ``[num_filters]``, then ``act``."""

    def __init__(self, nd, num_channels, num_filters, filter_size, output_size, padding, stride, dilation, groups,
                 param_attr, bias_attr, use_cudnn, act, dtype):  # fmt: skip
        if not isinstance(use_cudnn, bool):
            raise ValueError("use_cudnn should be True or False")
        refuse_false(param_attr, "param_attr", f"in conv{nd}d_transpose")
        super().__init__()
        groups = 1 if groups is None else groups
        self._op_type = f"conv{nd}d_transpose"
        self._act = act
        self._dtype = dtype
        if output_size is None:
            output_size = []
        elif isinstance(output_size, (list, int)):
            output_size = _ntuple(output_size, nd, "output_size")
        else:
            raise ValueError("output_size should be list or int")
        self._attrs = {
            "output_size": output_size,
            "strides": _ntuple(stride, nd, "stride"),
            "paddings": _ntuple(padding, nd, "padding"),
            "dilations": _ntuple(dilation, nd, "dilation"),
            "groups": groups,
            "use_cudnn": use_cudnn,
        }
        size = _ntuple(filter_size, nd, f"conv{nd}d_transpose.filter_size")
        self.weight = self.create_parameter(
            dtype=dtype, shape=[num_channels, num_filters // groups] + size, attr=param_attr
        )
        self.bias = self.create_parameter(attr=bias_attr, shape=[num_filters], dtype=dtype, is_bias=True)

    def forward(self, input):
        out = _out(self, self._dtype)
        _op(self, self._op_type, {"Input": [input], "Filter": [self.weight]}, {"Output": [out]}, self._attrs)
        return _activation(self, _bias(self, out, self.bias, 1), self._act)


class Conv2DTranspose(_ConvTranspose):
    """2-D transposed convolution (fluid's depthwise_conv2d_transpose computes the same with groups)."""

    def __init__(
        self,
        num_channels,
        num_filters,
        filter_size,
        output_size=None,
        padding=0,
        stride=1,
        dilation=1,
        groups=None,
        param_attr=None,
        bias_attr=None,
        use_cudnn=True,
        act=None,
        dtype="float32",
    ):
        super().__init__(2, num_channels, num_filters, filter_size, output_size, padding, stride, dilation, groups,
                         param_attr, bias_attr, use_cudnn, act, dtype)  # fmt: skip


class Conv3DTranspose(_ConvTranspose):
    """3-D transposed convolution.

    Compat: the bias is added whenever the layer has one; fluid 1.8 created it by default but added it
    only when ``bias_attr`` was given."""

    def __init__(
        self,
        num_channels,
        num_filters,
        filter_size,
        padding=0,
        stride=1,
        dilation=1,
        groups=None,
        param_attr=None,
        bias_attr=None,
        use_cudnn=True,
        act=None,
        dtype="float32",
    ):
        super().__init__(3, num_channels, num_filters, filter_size, None, padding, stride, dilation, groups,
                         param_attr, bias_attr, use_cudnn, act, dtype)  # fmt: skip


class Pool2D(Layer):
    """Max or average 2-D pooling (op ``pool2d``)."""

    def __init__(
        self,
        pool_size=-1,
        pool_type="max",
        pool_stride=1,
        pool_padding=0,
        global_pooling=False,
        use_cudnn=True,
        ceil_mode=False,
        exclusive=True,
    ):
        if pool_type not in ("max", "avg"):
            raise ValueError(f"Unknown pool_type: '{pool_type}'. It can only be 'max' or 'avg'.")
        if global_pooling is False and pool_size == -1:
            raise ValueError(
                "When the global_pooling is False, pool_size must be passed and be a valid value. "
                f"Received pool_size: {pool_size}"
            )
        if not isinstance(use_cudnn, bool):
            raise ValueError("use_cudnn should be True or False")
        super().__init__()
        self._attrs = {
            "pooling_type": pool_type,
            "ksize": _ntuple(pool_size, 2, "pool_size"),
            "global_pooling": global_pooling,
            "strides": _ntuple(pool_stride, 2, "pool_stride"),
            "paddings": _ntuple(pool_padding, 2, "pool_padding"),
            "use_cudnn": use_cudnn,
            "ceil_mode": ceil_mode,
            "use_mkldnn": False,
            "exclusive": exclusive,
        }

    def forward(self, input):
        out = _out(self, input.dtype)
        _op(self, "pool2d", {"X": [input]}, {"Out": [out]}, self._attrs)
        return out


class BatchNorm(Layer):
    """Batch normalization; ``_mean`` and ``_variance`` are its running statistics (parameters that
    take no gradient), updated in training mode (``layer.train()``), used in eval mode."""

    def __init__(
        self,
        num_channels,
        act=None,
        is_test=False,
        momentum=0.9,
        epsilon=1e-05,
        param_attr=None,
        bias_attr=None,
        dtype="float32",
        data_layout="NCHW",
        in_place=False,
        moving_mean_name=None,
        moving_variance_name=None,
        do_model_average_for_mean_and_var=True,
        use_global_stats=False,
        trainable_statistics=False,
    ):
        refuse_false(bias_attr, "bias_attr", "in batch_norm")
        super().__init__()
        self._act = act
        self._dtype = "float32" if dtype == "float16" else dtype
        shape = [num_channels]
        self.weight = self.create_parameter(
            attr=param_attr, shape=shape, dtype=self._dtype, default_initializer=ConstantInitializer(1.0)
        )
        frozen = use_global_stats and ParamAttr._to_attr(param_attr).learning_rate == 0.0
        self.weight.stop_gradient = frozen
        self.bias = self.create_parameter(attr=bias_attr, shape=shape, dtype=self._dtype, is_bias=True)
        self.bias.stop_gradient = frozen
        self._mean, self._variance = bn_statistics(
            self._helper, shape, self._dtype, moving_mean_name, moving_variance_name, do_model_average_for_mean_and_var
        )
        self._attrs = {
            "momentum": momentum,
            "epsilon": epsilon,
            "data_layout": data_layout,
            "use_mkldnn": False,
            "fuse_with_relu": False,
            "use_global_stats": use_global_stats,
            "trainable_statistics": trainable_statistics,
        }

    def forward(self, input):
        check_variable(input, "input", "BatchNorm")  # (fluid 1.8.5's checks, when building a static program)
        check_dtype(input.dtype, "input", ["float16", "float32", "float64"], "BatchNorm")
        attrs = dict(self._attrs, is_test=not self.training)
        out = append_batch_norm(
            self._helper, input, self.weight, self.bias, self._mean, self._variance, attrs, self._dtype
        )
        return _activation(self, out, self._act)


class Dropout(Layer):
    """Dropout in training mode (``layer.train()``); in eval mode it scales (downgrade_in_infer) or passes."""

    def __init__(self, p=0.5, seed=None, dropout_implementation="downgrade_in_infer", is_test=False):
        if not isinstance(p, (float, int)) or isinstance(p, bool):
            raise TypeError(f"p argument should be a number. Received: p={p!r}")
        if not 0 <= p <= 1:
            raise ValueError(f"p argument should between 0 and 1. Received: p={p!r}")
        if seed is not None and not isinstance(seed, int):
            raise TypeError(f"seed argument should be None or a integer. Received: seed={seed!r}")
        if dropout_implementation not in ("downgrade_in_infer", "upscale_in_train"):
            raise ValueError(
                "dropout_implementation argument should be 'downgrade_in_infer' or 'upscale_in_train'. "
                f"Received: {dropout_implementation!r}"
            )
        super().__init__()
        self._dropout_prob = p
        self._seed = seed
        self._dropout_implementation = dropout_implementation
        self._is_test = is_test

    def forward(self, input):
        from fluidcompat.framework import default_main_program

        seed = self._seed
        if not seed and default_main_program().random_seed != 0:
            seed = default_main_program().random_seed
        out = _out(self, input.dtype)
        mask = _out(self, VarType.UINT8, stop_gradient=True)
        _op(
            self,
            "dropout",
            {"X": [input]},
            {"Out": [out], "Mask": [mask]},
            {
                "dropout_prob": float(self._dropout_prob),
                "is_test": not self.training,
                "fix_seed": seed is not None,
                "seed": seed if seed is not None else 0,
                "dropout_implementation": self._dropout_implementation,
            },
        )
        return out


class Embedding(Layer):
    """Rows of ``weight`` (``size``, Xavier) looked up by int64 ids (op ``lookup_table_v2``).

    With ``is_sparse=True`` the table's gradient is also kept as the rows looked up, and ``gradient()``
    gives ``(values, rows)`` and optimizers update by rows, as fluid's (NOTE: [Sparse gradients in
    dygraph] in fluidcompat/dygraph/base.py)."""

    def __init__(self, size, is_sparse=False, is_distributed=False, padding_idx=None, param_attr=None, dtype="float32"):
        super().__init__()
        self._size = list(size)
        self._is_sparse = is_sparse
        self._is_distributed = is_distributed
        if padding_idx is None:
            self._padding_idx = -1
        else:
            self._padding_idx = padding_idx if padding_idx >= 0 else size[0] + padding_idx
        self._remote_prefetch = is_sparse and not is_distributed
        self._dtype = dtype
        self.weight = self.create_parameter(attr=param_attr, shape=self._size, dtype=dtype, is_bias=False)

    def forward(self, input):
        out = _out(self, self._dtype)
        _op(
            self,
            "lookup_table_v2",
            {"Ids": [input], "W": [self.weight]},
            {"Out": [out]},
            {
                "is_sparse": self._is_sparse,
                "is_distributed": self._is_distributed,
                "remote_prefetch": self._remote_prefetch,
                "padding_idx": self._padding_idx,
            },
        )
        return out


class LayerNorm(Layer):
    """Layer normalization over the trailing ``normalized_shape`` dimensions."""

    def __init__(
        self,
        normalized_shape,
        scale=True,
        shift=True,
        epsilon=1e-05,
        param_attr=None,
        bias_attr=None,
        act=None,
        dtype="float32",
    ):
        super().__init__()
        if isinstance(normalized_shape, numbers.Integral):
            normalized_shape = [normalized_shape]
        self._normalized_shape = [int(d) for d in normalized_shape]
        self._epsilon = epsilon
        self._act = act
        self._dtype = dtype
        shape = [int(np.prod(self._normalized_shape))]
        self.weight = (
            self.create_parameter(
                attr=param_attr, shape=shape, dtype=dtype, default_initializer=ConstantInitializer(1.0)
            )
            if scale
            else None
        )
        if shift and bias_attr is False:
            raise ValueError("bias_attr should not be False when shift is True in LayerNorm")
        self.bias = self.create_parameter(attr=bias_attr, shape=shape, dtype=dtype, is_bias=True) if shift else None

    def forward(self, input):
        shape = list(input.shape)
        begin = len(shape) - len(self._normalized_shape)
        if begin < 0 or shape[begin:] != self._normalized_shape:
            text = str(self._normalized_shape)
            raise ValueError(
                f"Given normalized_shape is {text}, expected input with shape [*, {text[1:]}, "
                f"but got input shape {shape}"
            )
        inputs = {"X": [input]}
        if self.weight is not None:
            inputs["Scale"] = [self.weight]
        if self.bias is not None:
            inputs["Bias"] = [self.bias]
        out = _out(self, self._dtype)
        mean = _out(self, self._dtype, stop_gradient=True)
        var = _out(self, self._dtype, stop_gradient=True)
        _op(
            self,
            "layer_norm",
            inputs,
            {"Y": [out], "Mean": [mean], "Variance": [var]},
            {"epsilon": self._epsilon, "begin_norm_axis": begin},
        )
        return _activation(self, out, self._act)


class InstanceNorm(Layer):
    """Instance normalization (per sample and channel)."""

    def __init__(self, num_channels, epsilon=1e-5, param_attr=None, bias_attr=None, dtype="float32"):
        refuse_false(bias_attr, "bias_attr", "in InstanceNorm")
        super().__init__()
        self._epsilon = epsilon
        self._dtype = dtype
        self.scale = self.create_parameter(
            attr=param_attr, shape=[num_channels], dtype=dtype, default_initializer=ConstantInitializer(1.0)
        )
        self.bias = self.create_parameter(
            attr=bias_attr,
            shape=[num_channels],
            dtype=dtype,
            default_initializer=ConstantInitializer(0.0),
            is_bias=True,
        )

    def forward(self, input):
        out = _out(self, self._dtype)
        mean = _out(self, self._dtype, stop_gradient=True)
        var = _out(self, self._dtype, stop_gradient=True)
        _op(
            self,
            "instance_norm",
            {"X": [input], "Scale": [self.scale], "Bias": [self.bias]},
            {"Y": [out], "SavedMean": [mean], "SavedVariance": [var]},
            {"epsilon": self._epsilon},
        )
        return out


class GroupNorm(Layer):
    """Group normalization (NCHW). As in fluid 1.8 (and ``layers.group_norm``), the scale (ones) and
    the bias (zeros) are parameters only when ``param_attr`` / ``bias_attr`` are given, so fluid's
    checkpoints load as they are."""

    def __init__(
        self,
        channels,
        groups,
        epsilon=1e-05,
        param_attr=None,
        bias_attr=None,
        act=None,
        data_layout="NCHW",
        dtype="float32",
    ):
        if data_layout != "NCHW":
            raise ValueError("unsupported data layout:" + data_layout)
        super().__init__()
        self._epsilon = epsilon
        self._groups = groups
        self._act = act
        self._dtype = dtype
        self.weight = self.bias = None
        if param_attr:
            self.weight = self.create_parameter(
                attr=param_attr, shape=[channels], dtype=dtype, default_initializer=ConstantInitializer(1.0)
            )
        if bias_attr:
            self.bias = self.create_parameter(attr=bias_attr, shape=[channels], dtype=dtype, is_bias=True)

    def forward(self, input):
        inputs = {"X": [input]}
        if self.bias is not None:
            inputs["Bias"] = [self.bias]
        if self.weight is not None:
            inputs["Scale"] = [self.weight]
        out = _out(self, self._dtype)
        mean = _out(self, self._dtype, stop_gradient=True)
        var = _out(self, self._dtype, stop_gradient=True)
        _op(
            self,
            "group_norm",
            inputs,
            {"Y": [out], "Mean": [mean], "Variance": [var]},
            {"epsilon": self._epsilon, "groups": self._groups},
        )
        return _activation(self, out, self._act)


class PRelu(Layer):
    """``max(0, x) + alpha * min(0, x)`` with ``alpha`` per tensor ('all'), channel or element."""

    def __init__(self, mode, channel=None, input_shape=None, param_attr=None, dtype="float32"):
        if mode == "all":
            shape = [1]
        elif mode == "channel":
            if not isinstance(channel, int):
                raise ValueError("channel argument is required when mode is 'channel'.")
            shape = [1, channel, 1, 1]
        elif mode == "element":
            if not isinstance(input_shape, (list, tuple)):
                raise ValueError("input_shape argument is required when mode is 'element'.")
            shape = [1] + list(input_shape)[1:]
        else:
            raise ValueError(f"mode should be one of all, channel, element. Received: mode={mode!r}")
        super().__init__(name_scope="prelu")
        self._mode = mode
        self._dtype = dtype
        self.weight = self.create_parameter(
            attr=param_attr, shape=shape, dtype="float32", is_bias=False, default_initializer=ConstantInitializer(1.0)
        )

    def forward(self, input):
        out = _out(self, self._dtype)
        _op(self, "prelu", {"X": [input], "Alpha": [self.weight]}, {"Out": [out]}, {"mode": self._mode})
        return out


def _reduce(layer: Layer, x, reduction: str):
    from fluidcompat import layers

    if reduction == "sum":
        return layers.reduce_sum(x)
    if reduction == "mean":
        return layers.reduce_mean(x)
    return x


def _check_reduction(reduction: str, api: str) -> None:
    if reduction not in ("sum", "mean", "none"):
        raise ValueError(
            f"The value of 'reduction' in {api} should be 'sum', 'mean' or 'none', but received {reduction}."
        )


class MSELoss(Layer):
    """Squared error of ``input`` and ``label``, reduced by ``reduction`` ('mean', 'sum', 'none')."""

    def __init__(self, reduction="mean"):
        _check_reduction(reduction, "MSELoss")
        super().__init__()
        self.reduction = reduction

    def forward(self, input, label):
        from fluidcompat import layers

        return _reduce(self, layers.square(layers.elementwise_sub(input, label)), self.reduction)


class L1Loss(Layer):
    """Absolute error of ``input`` and ``label``, reduced by ``reduction``."""

    def __init__(self, reduction="mean"):
        _check_reduction(reduction, "L1Loss")
        super().__init__()
        self.reduction = reduction

    def forward(self, input, label):
        from fluidcompat import layers

        return _reduce(self, layers.abs(layers.elementwise_sub(input, label)), self.reduction)


class BCELoss(Layer):
    """Binary cross entropy of probabilities ``input`` and ``label`` (each log clamped at -100),
    optionally weighted, reduced by ``reduction``."""

    def __init__(self, weight=None, reduction="mean"):
        if reduction not in ("sum", "mean", "none"):
            raise ValueError(
                "The value of 'reduction' in bce_loss should be 'sum', 'mean' or 'none', but "
                f"received {reduction}, which is not allowed."
            )
        super().__init__()
        self.weight = weight
        self.reduction = reduction

    def forward(self, input, label):
        from fluidcompat import layers

        if self.weight is not None and not isinstance(self.weight, VarBase):
            raise ValueError("The weight is not a Variable, please convert to Variable.")
        label = label.detach()  # fluid 1.8's bce_loss differentiated its input only
        log_p = layers.clip(layers.log(input), -100.0, float("inf"))
        log_q = layers.clip(layers.log(1.0 - input), -100.0, float("inf"))
        out = -(label * log_p + (1.0 - label) * log_q)
        if self.weight is not None:
            out = layers.elementwise_mul(out, self.weight, axis=-1)
        return _reduce(self, out, self.reduction)


class NLLLoss(Layer):
    """Negative log likelihood: ``-input[n, label[n], ...]`` weighted by ``weight[label]``; ``mean``
    divides by the summed weights; ``ignore_index`` labels count nothing. ``input`` is ``[N, C]`` or
    ``[N, C, d1, ...]``, ``label`` int64 ``[N]`` or ``[N, d1, ...]``."""

    def __init__(self, weight=None, reduction="mean", ignore_index=-100):
        super().__init__()
        self.weight = weight
        self.reduction = reduction
        self.ignore_index = ignore_index

    def forward(self, input, label):
        from fluidcompat import layers

        if self.reduction not in ("sum", "mean", "none"):
            raise ValueError(
                "The value of 'reduction' in nll_loss should be 'sum', 'mean' or 'none', but "
                f"received {self.reduction}, which is not allowed."
            )
        shape = list(input.shape)
        if len(shape) < 2:
            raise ValueError(f"Expected 2 or more dimensions (got {len(shape)})")
        classes = shape[1]
        if list(label.shape) != [shape[0]] + shape[2:]:
            raise ValueError(
                f"NLLLoss: label's shape must be input's without its class dimension: input {shape}, "
                f"expected label {[shape[0]] + shape[2:]}, received {list(label.shape)}"
            )
        x = input if len(shape) == 2 else layers.transpose(input, [0] + list(range(2, len(shape))) + [1])
        keep = layers.cast(label != self.ignore_index, input.dtype)
        safe = label * layers.cast(keep, label.dtype)
        picked = layers.reduce_sum(x * layers.one_hot(layers.unsqueeze(safe, [-1]), classes), dim=-1)
        picked = layers.reshape(picked, list(label.shape))
        if self.weight is not None:
            w = layers.reshape(layers.gather(self.weight, layers.reshape(safe, [-1])), list(label.shape)) * keep
        else:
            w = keep
        out = -(picked * w)
        if self.reduction == "none":
            return out
        total = layers.reduce_sum(out)
        if self.reduction == "sum":
            return total
        return total / layers.reduce_sum(w)


class BilinearTensorProduct(Layer):
    """``out[:, k] = x W_k y^T + b_k``; weight ``[output_dim, input1_dim, input2_dim]``, bias ``[1, output_dim]``."""

    def __init__(
        self, input1_dim, input2_dim, output_dim, name=None, act=None, param_attr=None, bias_attr=None, dtype="float32"
    ):
        super().__init__()
        self._act = act
        self._dtype = dtype
        self.weight = self.create_parameter(
            attr=param_attr, shape=[output_dim, input1_dim, input2_dim], dtype=dtype, is_bias=False
        )
        self.bias = self.create_parameter(attr=bias_attr, shape=[1, output_dim], dtype=dtype, is_bias=True)

    def forward(self, x, y):
        inputs = {"X": [x], "Y": [y], "Weight": [self.weight]}
        if self.bias is not None:
            inputs["Bias"] = [self.bias]
        out = _out(self, self._dtype)
        _op(self, "bilinear_tensor_product", inputs, {"Out": [out]})
        return _activation(self, out, self._act)


_GRU_ACTIVATIONS = {"identity": 0, "sigmoid": 1, "tanh": 2, "relu": 3}


class GRUUnit(Layer):
    """One GRU step (op ``gru_unit``): ``forward(input, hidden)`` gives ``(hidden, reset_hidden_prev,
    gate)``; ``size`` is three times the hidden size.

    Compat: ``origin_mode`` is passed on; fluid 1.8's layer ignored it."""

    def __init__(
        self,
        size,
        param_attr=None,
        bias_attr=None,
        activation="tanh",
        gate_activation="sigmoid",
        origin_mode=False,
        dtype="float32",
    ):
        for what, value in (("activation", activation), ("gate_activation", gate_activation)):
            if value not in _GRU_ACTIVATIONS:
                raise ValueError(f"GRUUnit: {what} must be one of {sorted(_GRU_ACTIVATIONS)}. Received: {value!r}")
        super().__init__()
        self._attrs = {
            "activation": _GRU_ACTIVATIONS[activation],
            "gate_activation": _GRU_ACTIVATIONS[gate_activation],
            "origin_mode": origin_mode,
        }
        self._dtype = dtype
        hidden = size // 3
        self.weight = self.create_parameter(attr=param_attr, shape=[hidden, 3 * hidden], dtype=dtype)
        self.bias = self.create_parameter(attr=bias_attr, shape=[1, 3 * hidden], dtype=dtype, is_bias=True)

    def forward(self, input, hidden):
        inputs = {"Input": [input], "HiddenPrev": [hidden], "Weight": [self.weight]}
        if self.bias is not None:
            inputs["Bias"] = [self.bias]
        gate, reset, updated = (_out(self, self._dtype) for _ in range(3))
        _op(self, "gru_unit", inputs, {"Gate": [gate], "ResetHiddenPrev": [reset], "Hidden": [updated]}, self._attrs)
        return updated, reset, gate


class SpectralNorm(Layer):
    """``weight`` divided by its largest singular value, estimated by ``power_iters`` power iterations
    from the vectors ``weight_u`` / ``weight_v`` (parameters that take no gradient)."""

    def __init__(self, weight_shape, dim=0, power_iters=1, eps=1e-12, dtype="float32"):
        super().__init__()
        self._attrs = {"dim": dim, "power_iters": power_iters, "eps": eps}
        self._dtype = dtype
        shape = list(weight_shape)
        h = shape[dim]
        w = int(np.prod(shape)) // h
        self.weight_u = self.create_parameter(
            attr=ParamAttr(), shape=[h], dtype=dtype, default_initializer=NormalInitializer(0.0, 1.0)
        )
        self.weight_u.stop_gradient = True
        self.weight_v = self.create_parameter(
            attr=ParamAttr(), shape=[w], dtype=dtype, default_initializer=NormalInitializer(0.0, 1.0)
        )
        self.weight_v.stop_gradient = True

    def forward(self, weight):
        out = _out(self, self._dtype)
        _op(
            self,
            "spectral_norm",
            {"Weight": [weight], "U": [self.weight_u], "V": [self.weight_v]},
            {"Out": [out]},
            self._attrs,
        )
        return out


_NCE_SAMPLERS = {"uniform": 0, "log_uniform": 1, "custom_dist": 2}


class NCE(Layer):
    """Noise-contrastive estimation (op ``nce``): ``forward(input, label, sample_weight=None)`` gives
    each row's cost over its true labels and ``num_neg_samples`` negatives drawn by ``sampler``,
    divided by ``num_neg_samples + 1``. Weight ``[num_total_classes, dim]``; a bias
    ``[num_total_classes, 1]`` only when ``bias_attr`` is given (fluid 1.8's layer).

    With a ``seed`` the negatives are fluid's (NOTE: [Seeded draws]); for ``custom_dist`` the alias
    tables are made as fluid made them (three untrained parameters, before the weight)."""

    def __init__(
        self,
        num_total_classes,
        dim,
        sample_weight=None,
        param_attr=None,
        bias_attr=None,
        num_neg_samples=None,
        sampler="uniform",
        custom_dist=None,
        seed=0,
        is_sparse=False,
        dtype="float32",
    ):
        if sampler not in _NCE_SAMPLERS:
            raise ValueError(
                f"Unsupported sampler type. Received: {sampler!r}; use uniform, log_uniform or custom_dist"
            )
        if sampler == "custom_dist" and (custom_dist is None or len(custom_dist) != num_total_classes):
            raise ValueError("NCE: sampler='custom_dist' needs custom_dist, one probability per class")
        sparse_mode_notice()
        super().__init__()
        from fluidcompat.initializer import NumpyArrayInitializer

        self._dtype = dtype
        self._num_neg_samples = 10 if num_neg_samples is None else int(num_neg_samples)
        self._extra = {}  # not parameters of the layer (fluid kept them out of its state dict)
        if sample_weight is not None:
            self._extra["SampleWeight"] = [sample_weight]
        if sampler == "custom_dist":
            for slot, value in nce_custom_dist_tables(custom_dist):
                table = self._helper.create_parameter(
                    ParamAttr(), list(value.shape), value.dtype, False, NumpyArrayInitializer(value)
                )
                table.stop_gradient = True
                self._extra[slot] = [table]
        self._attrs = {
            "num_total_classes": int(num_total_classes),
            "num_neg_samples": self._num_neg_samples,
            "seed": seed,
            "sampler": _NCE_SAMPLERS[sampler],
            "is_sparse": is_sparse,
            "remote_prefetch": is_sparse,
        }
        self.weight = self.create_parameter(attr=param_attr, shape=[num_total_classes, dim], dtype=dtype)
        self.bias = None
        if bias_attr:
            self.bias = self.create_parameter(attr=bias_attr, shape=[num_total_classes, 1], dtype=dtype, is_bias=True)

    def forward(self, input, label, sample_weight=None):
        for what, v, allowed in (("input", input, ("FP32", "FP64")), ("label", label, ("INT64",))):
            if not isinstance(v, VarBase):
                raise TypeError(f"The type of '{what}' in NCE must be Variable, but received {type(v).__name__}")
            if v.dtype.name not in allowed:
                names = " or ".join({"FP32": "float32", "FP64": "float64", "INT64": "int64"}[a] for a in allowed)
                got = v.dtype.name.lower()
                raise TypeError(f"The data type of '{what}' in NCE must be {names}, but received {got}")
        inputs = dict(self._extra, Input=[input], Label=[label], Weight=[self.weight])
        if self.bias is not None:
            inputs["Bias"] = [self.bias]
        if sample_weight is not None:
            inputs["SampleWeight"] = [sample_weight]
        cost, logits = _out(self, input.dtype), _out(self, input.dtype)
        labels = _out(self, label.dtype)
        _op(
            self,
            "nce",
            inputs,
            {"Cost": [cost], "SampleLogits": [logits], "SampleLabels": [labels]},
            self._attrs,
        )
        return cost / float(self._num_neg_samples + 1)


class TreeConv(Layer):
    """Tree-based convolution (op ``tree_conv``, see ``fluid.contrib.layers.tree_conv``):
    ``forward(nodes_vector, edge_set)``; weight ``[feature_size, 3, output_size, num_filters]``, a
    bias ``[num_filters]`` only when ``bias_attr`` is given (fluid 1.8's layer), then ``act``."""

    def __init__(
        self,
        feature_size,
        output_size,
        num_filters=1,
        max_depth=2,
        act="tanh",
        param_attr=None,
        bias_attr=None,
        name=None,
        dtype="float32",
    ):
        super().__init__()
        self._act = act
        self._max_depth = max_depth
        self._dtype = dtype
        self.bias = None
        if bias_attr:
            self.bias = self.create_parameter(attr=bias_attr, shape=[num_filters], dtype=dtype, is_bias=True)
        self.weight = self.create_parameter(
            attr=param_attr, shape=[feature_size, 3, output_size, num_filters], dtype=dtype
        )

    def forward(self, nodes_vector, edge_set):
        for what, v in (("nodes_vector", nodes_vector), ("edge_set", edge_set)):
            if not isinstance(v, VarBase):
                raise TypeError(f"The type of '{what}' in TreeConv must be Variable, but received {type(v).__name__}")
        out = _out(self, self._dtype)
        _op(
            self,
            "tree_conv",
            {"NodesVector": [nodes_vector], "EdgeSet": [edge_set], "Filter": [self.weight]},
            {"Out": [out]},
            {"max_depth": self._max_depth},
        )
        # the bias goes on the last axis (fluid 1.8.5 added it at axis 1, which fails unless
        # num_filters equals max_node_size)
        return _activation(self, _bias(self, out, self.bias, -1), self._act)
