"""``paddle.nn``: ``Layer`` and the layers Paddle 2 courses build models from, over torch tensors.

Parameters are ``Parameter`` tensors (``stop_gradient=False``) named as Paddle names them
(``linear_0.w_0``); ``state_dict()`` keys are the attribute paths (``fc.weight``).
"""

from __future__ import annotations

import collections
import math
from typing import Iterator, List, Optional, Tuple

import numpy as np

from fluidcompat import unique_name
from fluidcompat.compat import functional as F
from fluidcompat.compat.device import Tensor, _current_place, _torch_device
from fluidcompat.compat.tensor import torch_dtype
from fluidcompat.param_attr import ParamAttr

__path__: list = []  # a package: `import paddle.nn.functional` goes through the alias finder

__all__ = [
    "AvgPool2D",
    "Conv2D",
    "CrossEntropyLoss",
    "Dropout",
    "Flatten",
    "Layer",
    "LayerList",
    "Linear",
    "MSELoss",
    "MaxPool2D",
    "Parameter",
    "ReLU",
    "Sequential",
    "Sigmoid",
    "Softmax",
    "Tanh",
    "functional",
    "initializer",
]

functional = F


# -- initializers (paddle.nn.initializer) ---------------------------------------------------------
def _fans(shape) -> Tuple[int, int]:
    if len(shape) < 2:
        return shape[0] if shape else 1, shape[0] if shape else 1
    if len(shape) == 2:  # Linear: [in, out]
        return shape[0], shape[1]
    receptive = int(np.prod(shape[2:]))  # conv: [out, in, kh, kw]
    return shape[1] * receptive, shape[0] * receptive


class Initializer:
    """Fills a new parameter's torch tensor in place."""

    def __call__(self, t) -> None:
        raise NotImplementedError(type(self).__name__)


class Constant(Initializer):
    def __init__(self, value=0.0) -> None:
        self.value = float(value)

    def __call__(self, t) -> None:
        t.fill_(self.value)


class Normal(Initializer):
    def __init__(self, mean=0.0, std=1.0, name=None) -> None:
        self.mean, self.std = float(mean), float(std)

    def __call__(self, t) -> None:
        t.normal_(self.mean, self.std)


class Uniform(Initializer):
    def __init__(self, low=-1.0, high=1.0, name=None) -> None:
        self.low, self.high = float(low), float(high)

    def __call__(self, t) -> None:
        t.uniform_(self.low, self.high)


class XavierUniform(Initializer):
    def __init__(self, fan_in=None, fan_out=None, name=None) -> None:
        self.fan_in, self.fan_out = fan_in, fan_out

    def __call__(self, t) -> None:
        fi, fo = _fans(list(t.shape))
        limit = math.sqrt(6.0 / ((self.fan_in or fi) + (self.fan_out or fo)))
        t.uniform_(-limit, limit)


class XavierNormal(XavierUniform):
    def __call__(self, t) -> None:
        fi, fo = _fans(list(t.shape))
        t.normal_(0.0, math.sqrt(2.0 / ((self.fan_in or fi) + (self.fan_out or fo))))


class KaimingNormal(Initializer):
    def __init__(self, fan_in=None, name=None) -> None:
        self.fan_in = fan_in

    def __call__(self, t) -> None:
        t.normal_(0.0, math.sqrt(2.0 / (self.fan_in or _fans(list(t.shape))[0])))


class KaimingUniform(KaimingNormal):
    def __call__(self, t) -> None:
        limit = math.sqrt(6.0 / (self.fan_in or _fans(list(t.shape))[0]))
        t.uniform_(-limit, limit)


class Assign(Initializer):
    def __init__(self, value, name=None) -> None:
        self.value = np.asarray(value.numpy() if isinstance(value, Tensor) else value)

    def __call__(self, t) -> None:
        import torch

        if list(self.value.shape) != list(t.shape):
            raise ValueError(
                f"Assign: the value's shape {list(self.value.shape)} differs from the parameter's {list(t.shape)}"
            )
        t.copy_(torch.from_numpy(np.ascontiguousarray(self.value)))


class _InitializerModule:
    Constant, Normal, Uniform, Assign = Constant, Normal, Uniform, Assign
    XavierUniform, XavierNormal, KaimingNormal, KaimingUniform = (
        XavierUniform,
        XavierNormal,
        KaimingNormal,
        KaimingUniform,
    )
    Initializer = Initializer


initializer = _InitializerModule()


# -- Parameter and Layer --------------------------------------------------------------------------
class Parameter(Tensor):
    """A trainable tensor owned by a Layer: ``name``, ``trainable`` and Paddle's printing."""

    def __init__(self, value, place, name: str, trainable: bool = True) -> None:
        super().__init__(value, place, stop_gradient=not trainable)
        self.name = name
        self.trainable = trainable

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()

    __str__ = __repr__


class Layer:
    """Paddle 2's ``paddle.nn.Layer``: parameters and sublayers registered by attribute assignment,
    ``forward`` called by ``layer(...)``, ``train()`` / ``eval()``, ``state_dict()`` / ``set_state_dict()``."""

    def __init__(self, name_scope: Optional[str] = None, dtype="float32") -> None:
        scope = name_scope or _snake(type(self).__name__)
        object.__setattr__(self, "_full_name", unique_name.generate(scope))
        object.__setattr__(self, "_parameters", collections.OrderedDict())
        object.__setattr__(self, "_sub_layers", collections.OrderedDict())
        object.__setattr__(self, "_buffers", collections.OrderedDict())
        object.__setattr__(self, "_dtype", dtype)
        object.__setattr__(self, "training", True)

    # registration
    def _registry(self, what: str):
        try:
            return object.__getattribute__(self, what)
        except AttributeError:
            raise RuntimeError(
                f"{type(self).__name__}: super({type(self).__name__}, self).__init__() should be called first"
            ) from None

    def __setattr__(self, name: str, value) -> None:
        params, layers = self._registry("_parameters"), self._registry("_sub_layers")
        for table in (params, layers, self._buffers):
            table.pop(name, None)
        if isinstance(value, Parameter):
            params[name] = value
        elif isinstance(value, Layer):
            layers[name] = value
        else:
            object.__setattr__(self, name, value)

    def __getattr__(self, name: str):
        for table in ("_parameters", "_sub_layers", "_buffers"):
            d = self.__dict__.get(table)
            if d is not None and name in d:
                return d[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name: str) -> None:
        for table in (self._parameters, self._sub_layers, self._buffers):
            if name in table:
                del table[name]
                return
        object.__delattr__(self, name)

    def full_name(self) -> str:
        return self._full_name

    def create_parameter(
        self, shape, attr=None, dtype=None, is_bias=False, default_initializer=None
    ) -> Optional[Parameter]:
        """A new Parameter of ``shape``; ``attr=False`` gives None (no bias)."""
        import torch

        if attr is False:
            return None
        attr = ParamAttr._to_attr(attr)
        init = attr.initializer or default_initializer or (Constant(0.0) if is_bias else XavierUniform())
        if not isinstance(init, Initializer):
            raise TypeError(
                "create_parameter: the initializer must come from paddle.nn.initializer. "
                f"Received: {type(init).__name__}"
            )
        place = _current_place()
        t = torch.empty([int(s) for s in shape], dtype=torch_dtype(dtype or self._dtype), device=_torch_device(place))
        with torch.no_grad():
            init(t)
        suffix = "b" if is_bias else "w"
        name = attr.name or unique_name.generate(f"{self._full_name}.{suffix}")
        return Parameter(t, place, name, trainable=attr.trainable)

    def add_parameter(self, name: str, parameter: Optional[Parameter]):
        if parameter is not None and not isinstance(parameter, Parameter):
            raise TypeError(f"add_parameter: '{name}' must be a Parameter. Received: {type(parameter).__name__}")
        self._parameters[name] = parameter
        return parameter

    def add_sublayer(self, name: str, sublayer: "Layer") -> "Layer":
        if not isinstance(sublayer, Layer):
            raise TypeError(f"add_sublayer: '{name}' must be a Layer. Received: {type(sublayer).__name__}")
        self._sub_layers[str(name)] = sublayer
        return sublayer

    def register_buffer(self, name: str, tensor: Tensor, persistable: bool = True) -> None:
        self._buffers[name] = tensor

    # traversal
    def named_sublayers(self, prefix: str = "", include_self: bool = False) -> Iterator[Tuple[str, "Layer"]]:
        if include_self:
            yield prefix, self
        for name, layer in self._sub_layers.items():
            if layer is None:
                continue
            path = f"{prefix}.{name}" if prefix else name
            yield path, layer
            yield from layer.named_sublayers(path)

    def sublayers(self, include_self: bool = False) -> List["Layer"]:
        return [layer for _, layer in self.named_sublayers(include_self=include_self)]

    def children(self) -> Iterator["Layer"]:
        return iter(v for v in self._sub_layers.values() if v is not None)

    def named_children(self):
        return iter((k, v) for k, v in self._sub_layers.items() if v is not None)

    def named_parameters(self, prefix: str = "", include_sublayers: bool = True) -> Iterator[Tuple[str, Parameter]]:
        seen = set()
        layers = [(prefix, self)] + (list(self.named_sublayers(prefix)) if include_sublayers else [])
        for path, layer in layers:
            for name, p in layer._parameters.items():
                if p is not None and id(p) not in seen:
                    seen.add(id(p))
                    yield (f"{path}.{name}" if path else name), p

    def parameters(self, include_sublayers: bool = True) -> List[Parameter]:
        return [p for _, p in self.named_parameters(include_sublayers=include_sublayers)]

    def apply(self, fn) -> "Layer":
        for layer in self.children():
            layer.apply(fn)
        fn(self)
        return self

    # modes
    def train(self) -> "Layer":
        for layer in self.sublayers(include_self=True):
            object.__setattr__(layer, "training", True)
        return self

    def eval(self) -> "Layer":
        for layer in self.sublayers(include_self=True):
            object.__setattr__(layer, "training", False)
        return self

    def clear_gradients(self) -> None:
        for p in self.parameters():
            p.clear_grad()

    # calling
    def forward(self, *inputs, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} does not define forward()")

    def __call__(self, *inputs, **kwargs):
        return self.forward(*inputs, **kwargs)

    # state
    def state_dict(self, destination=None, include_sublayers: bool = True, structured_name_prefix: str = ""):
        """Structured name (``conv1.weight``) -> Parameter or buffer, in registration order."""
        out = collections.OrderedDict() if destination is None else destination
        layers = [("", self)] + (list(self.named_sublayers()) if include_sublayers else [])
        for path, layer in layers:
            for table in (layer._parameters, layer._buffers):
                for name, t in table.items():
                    if t is not None:
                        out[structured_name_prefix + (f"{path}.{name}" if path else name)] = t
        return out

    def set_state_dict(self, state_dict, use_structured_name: bool = True):
        """Copy matching entries of ``state_dict`` (name -> Tensor or array) into this layer's tensors.
        Shapes are checked before anything changes; returns (missing keys, unexpected keys)."""
        own = self.state_dict()
        if not use_structured_name:
            own = collections.OrderedDict((getattr(t, "name", k), t) for k, t in own.items())
        values = {}
        for key, target in own.items():
            if key not in state_dict:
                continue
            v = state_dict[key]
            arr = v.numpy() if isinstance(v, Tensor) else np.asarray(v[1] if isinstance(v, tuple) else v)
            if list(arr.shape) != target.shape:
                raise ValueError(
                    f"set_state_dict: '{key}' has shape {list(arr.shape)} in the state dict but {target.shape} in "
                    f"{type(self).__name__}; nothing was loaded"
                )
            values[key] = arr
        for key, arr in values.items():
            own[key].set_value(arr.astype(own[key].numpy().dtype, copy=False))
        missing = [k for k in own if k not in values]
        unexpected = [k for k in state_dict if k not in own and k != "StructuredToParameterName@@"]
        return missing, unexpected

    set_dict = set_state_dict
    load_dict = set_state_dict

    def extra_repr(self) -> str:
        return ""

    def __repr__(self) -> str:
        lines = [f"({name}): " + repr(layer).replace("\n", "\n  ") for name, layer in self.named_children()]
        head = f"{type(self).__name__}({self.extra_repr()}"
        if not lines:
            return head + ")"
        return head + "\n  " + "\n  ".join(lines) + "\n)"


def _snake(name: str) -> str:
    out = []
    for i, c in enumerate(name):
        if c.isupper() and i and (not name[i - 1].isupper() or (i + 1 < len(name) and name[i + 1].islower())):
            out.append("_")
        out.append(c.lower())
    return "".join(out)


# -- layers ---------------------------------------------------------------------------------------
class Linear(Layer):
    """y = x @ weight + bias, weight of shape [in_features, out_features] (Xavier-uniform), bias zeros."""

    def __init__(self, in_features: int, out_features: int, weight_attr=None, bias_attr=None, name=None) -> None:
        super().__init__("linear")
        self.weight = self.create_parameter([in_features, out_features], weight_attr)
        self.bias = self.create_parameter([out_features], bias_attr, is_bias=True)
        self._shape = (in_features, out_features)

    def forward(self, x):
        if x.shape[-1] != self._shape[0]:
            raise ValueError(
                f"Linear({self._shape[0]}, {self._shape[1]}): the input's last dimension is {x.shape[-1]} "
                f"(shape {x.shape}), expected {self._shape[0]}"
            )
        return F.linear(x, self.weight, self.bias)

    def extra_repr(self) -> str:
        return f"in_features={self._shape[0]}, out_features={self._shape[1]}, dtype={self._dtype}"


class Conv2D(Layer):
    """2-D convolution over NCHW; weight [out, in/groups, kh, kw] ~ Normal(0, sqrt(2 / (kh*kw*in))) as in
    Paddle, bias zeros."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                 padding_mode="zeros", weight_attr=None, bias_attr=None, data_format="NCHW") -> None:  # fmt: skip
        super().__init__("conv2d")
        if padding_mode != "zeros":
            raise ValueError(f"Conv2D: padding_mode {padding_mode!r} is not supported: fluidcompat takes 'zeros'")
        if in_channels % groups:
            raise ValueError(f"Conv2D: in_channels ({in_channels}) must be divisible by groups ({groups})")
        k = F._pair(kernel_size)
        self._conf = dict(stride=stride, padding=padding, dilation=dilation, groups=groups, data_format=data_format)
        self._shape = (in_channels, out_channels, k)
        std = math.sqrt(2.0 / (k[0] * k[1] * in_channels))
        self.weight = self.create_parameter([out_channels, in_channels // groups, *k], weight_attr,
                                            default_initializer=Normal(0.0, std))  # fmt: skip
        self.bias = self.create_parameter([out_channels], bias_attr, is_bias=True)

    def forward(self, x):
        return F.conv2d(x, self.weight, self.bias, **self._conf)

    def extra_repr(self) -> str:
        i, o, k = self._shape
        return f"{i}, {o}, kernel_size={list(k)}, data_format={self._conf['data_format']}"


class MaxPool2D(Layer):
    def __init__(self, kernel_size, stride=None, padding=0, return_mask=False, ceil_mode=False, data_format="NCHW",
                 name=None) -> None:  # fmt: skip
        super().__init__("max_pool2d")
        self._conf = dict(kernel_size=kernel_size, stride=stride, padding=padding, return_mask=return_mask,
                          ceil_mode=ceil_mode, data_format=data_format)  # fmt: skip

    def forward(self, x):
        return F.max_pool2d(x, **self._conf)

    def extra_repr(self) -> str:
        c = self._conf
        return f"kernel_size={c['kernel_size']}, stride={c['stride']}, padding={c['padding']}"


class AvgPool2D(Layer):
    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False, exclusive=True, divisor_override=None,
                 data_format="NCHW", name=None) -> None:  # fmt: skip
        super().__init__("avg_pool2d")
        self._conf = dict(kernel_size=kernel_size, stride=stride, padding=padding, ceil_mode=ceil_mode,
                          exclusive=exclusive, divisor_override=divisor_override, data_format=data_format)  # fmt: skip

    def forward(self, x):
        return F.avg_pool2d(x, **self._conf)


class _Activation(Layer):
    _fn = None

    def __init__(self, name=None) -> None:
        super().__init__(_snake(type(self).__name__))

    def forward(self, x):
        return type(self)._fn(x)


class ReLU(_Activation):
    _fn = staticmethod(F.relu)


class Sigmoid(_Activation):
    _fn = staticmethod(F.sigmoid)


class Tanh(_Activation):
    _fn = staticmethod(F.tanh)


class Softmax(Layer):
    def __init__(self, axis=-1, name=None) -> None:
        super().__init__("softmax")
        self._axis = axis

    def forward(self, x):
        return F.softmax(x, self._axis)


class Flatten(Layer):
    def __init__(self, start_axis=1, stop_axis=-1) -> None:
        super().__init__("flatten")
        self._axes = (start_axis, stop_axis)

    def forward(self, x):
        return F.flatten(x, *self._axes)


class Dropout(Layer):
    def __init__(self, p=0.5, axis=None, mode="upscale_in_train", name=None) -> None:
        super().__init__("dropout")
        self._p, self._mode = p, mode

    def forward(self, x):
        return F.dropout(x, self._p, training=self.training, mode=self._mode)


class CrossEntropyLoss(Layer):
    def __init__(self, weight=None, ignore_index=-100, reduction="mean", soft_label=False, axis=-1,
                 use_softmax=True, name=None) -> None:  # fmt: skip
        super().__init__("cross_entropy_loss")
        self._conf = dict(weight=weight, ignore_index=ignore_index, reduction=reduction, soft_label=soft_label,
                          axis=axis, use_softmax=use_softmax)  # fmt: skip

    def forward(self, input, label):
        return F.cross_entropy(input, label, **self._conf)


class MSELoss(Layer):
    def __init__(self, reduction="mean") -> None:
        super().__init__("mse_loss")
        self._reduction = reduction

    def forward(self, input, label):
        return F.mse_loss(input, label, self._reduction)


class Sequential(Layer):
    """Layers called in order; ``Sequential(l1, l2)`` or ``Sequential(('name', l1), ...)``."""

    def __init__(self, *layers) -> None:
        super().__init__("sequential")
        for i, item in enumerate(layers):
            name, layer = item if isinstance(item, (list, tuple)) else (str(i), item)
            self.add_sublayer(name, layer)

    def __getitem__(self, i):
        return list(self._sub_layers.values())[i]

    def __len__(self) -> int:
        return len(self._sub_layers)

    def forward(self, x):
        for layer in self._sub_layers.values():
            x = layer(x)
        return x


class LayerList(Layer):
    def __init__(self, sublayers=None) -> None:
        super().__init__("layer_list")
        for layer in sublayers or []:
            self.append(layer)

    def append(self, layer: Layer) -> "LayerList":
        self.add_sublayer(str(len(self._sub_layers)), layer)
        return self

    def __getitem__(self, i):
        return list(self._sub_layers.values())[i]

    def __len__(self) -> int:
        return len(self._sub_layers)

    def __iter__(self):
        return iter(self._sub_layers.values())


def __getattr__(name):  # Paddle 2.x names fluidcompat lacks: what to use instead
    from fluidcompat.compat.names import module_getattr

    return module_getattr("paddle.nn")(name)
