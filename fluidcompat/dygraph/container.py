"""``Sequential``, ``LayerList`` and ``ParameterList``: layers and parameters held by index or name."""

from __future__ import annotations

from collections import OrderedDict

from fluidcompat.dygraph.layers import Layer
from fluidcompat.dygraph.varbase import ParamBase

__all__ = ["Sequential", "ParameterList", "LayerList"]


def _need_layer(value, api: str) -> None:
    if not isinstance(value, Layer):
        raise TypeError(f"{api} holds Layers; received {type(value).__name__}")


def _need_param(value, api: str) -> None:
    if not isinstance(value, ParamBase):
        raise TypeError(f"{api} holds Parameters; received {type(value).__name__}")


class Sequential(Layer):
    """Layers called one after another: ``Sequential(a, b)`` or ``Sequential(('a', a), ('b', b))``."""

    def __init__(self, *layers):
        super().__init__()
        if layers and isinstance(layers[0], tuple):
            for name, layer in layers:
                _need_layer(layer, "Sequential")
                self.add_sublayer(name, layer)
        else:
            for idx, layer in enumerate(layers):
                _need_layer(layer, "Sequential")
                self.add_sublayer(str(idx), layer)

    def __getitem__(self, name):
        return self._sub_layers[str(name)]

    def __setitem__(self, name, layer):
        _need_layer(layer, "Sequential")
        setattr(self, str(name), layer)

    def __delitem__(self, name):
        name = str(name)
        if name not in self._sub_layers:
            raise KeyError(f"Sequential has no sublayer '{name}'")
        del self._sub_layers[name]

    def __len__(self):
        return len(self._sub_layers)

    def forward(self, input):
        for layer in self._sub_layers.values():
            input = layer(input)
        return input


class ParameterList(Layer):
    """Parameters by index, each registered with the layer."""

    def __init__(self, parameters=None):
        super().__init__()
        for idx, param in enumerate(parameters or ()):
            _need_param(param, "ParameterList")
            self.add_parameter(str(idx), param)

    def __getitem__(self, idx):
        return self._parameters[str(idx)]

    def __setitem__(self, idx, param):
        _need_param(param, "ParameterList")
        setattr(self, str(idx), param)

    def __len__(self):
        return len(self._parameters)

    def __iter__(self):
        return iter(self._parameters.values())

    def append(self, parameter):
        _need_param(parameter, "ParameterList")
        self.add_parameter(str(len(self._parameters)), parameter)
        return self


class LayerList(Layer):
    """Sublayers by index, each registered with the layer."""

    def __init__(self, sublayers=None):
        super().__init__()
        for idx, layer in enumerate(sublayers or ()):
            self.add_sublayer(str(idx), layer)

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return self.__class__(list(self._sub_layers.values())[idx])
        if isinstance(idx, int) and idx < 0:
            idx += len(self)
        return self._sub_layers[str(idx)]

    def __setitem__(self, idx, sublayer):
        return setattr(self, str(idx), sublayer)

    def __delitem__(self, idx):
        if isinstance(idx, slice):
            for k in range(len(self._sub_layers))[idx]:
                delattr(self, str(k))
        else:
            delattr(self, str(idx))
        self._sub_layers = OrderedDict((str(i), layer) for i, layer in enumerate(self._sub_layers.values()))

    def __len__(self):
        return len(self._sub_layers)

    def __iter__(self):
        return iter(self._sub_layers.values())

    def append(self, sublayer):
        self.add_sublayer(str(len(self)), sublayer)
        return self

    def insert(self, index, sublayer):
        if not isinstance(index, int) or not 0 <= index < len(self._sub_layers):
            raise IndexError(f"index should be an integer in range [0, {len(self)}). Received: {index!r}")
        _need_layer(sublayer, "LayerList")
        for i in range(len(self._sub_layers), index, -1):
            self._sub_layers[str(i)] = self._sub_layers[str(i - 1)]
        self._sub_layers[str(index)] = sublayer

    def extend(self, sublayers):
        offset = len(self)
        for i, sublayer in enumerate(sublayers):
            self.add_sublayer(str(offset + i), sublayer)
        return self
