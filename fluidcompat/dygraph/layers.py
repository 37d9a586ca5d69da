"""``fluid.dygraph.Layer``: the base class of dygraph models (parameters, sublayers, state dicts)."""

from __future__ import annotations

import collections
import re
from typing import Dict, Iterator, List, Optional, Tuple

import numpy as np

from fluidcompat import framework, unique_name
from fluidcompat.dtypes import VarType
from fluidcompat.dygraph import base
from fluidcompat.dygraph.varbase import ParamBase, VarBase
from fluidcompat.layer_helper import LayerHelper

__all__ = ["Layer"]


def _camel_to_snake(name: str) -> str:
    s1 = re.sub("(.)([A-Z][a-z]+)", r"\1_\2", name)
    return re.sub("([a-z])([A-Z])", r"\1_\2", s1).lower()


class HookRemoveHelper:
    """Returned by ``register_forward_*_hook``: ``remove()`` takes the hook away."""

    _next_id = 0

    def __init__(self, hooks: Dict[int, object]) -> None:
        self._hooks = hooks
        self._id = HookRemoveHelper._next_id
        HookRemoveHelper._next_id += 1

    def remove(self) -> None:
        self._hooks.pop(self._id, None)


class Layer:
    """A model or a part of one: ``forward`` computes, ``__call__`` runs hooks around it."""

    def __init__(self, name_scope: Optional[str] = None, dtype=VarType.FP32) -> None:
        self.training = True
        if name_scope is None:
            name_scope = _camel_to_snake(self.__class__.__name__)
        self._full_name = unique_name.generate(name_scope)
        self._helper = LayerHelper(self._full_name, name=self._full_name)
        self._built = False
        self._dtype = dtype
        self._parameters: "collections.OrderedDict[str, Optional[ParamBase]]" = collections.OrderedDict()
        self._buffers: "collections.OrderedDict[str, Optional[VarBase]]" = collections.OrderedDict()
        self._non_persistable_buffer_names_set = set()
        self._sub_layers: "collections.OrderedDict[str, Optional[Layer]]" = collections.OrderedDict()
        self._loaddict_holder: Dict[str, object] = {}
        self._forward_pre_hooks: "collections.OrderedDict[int, object]" = collections.OrderedDict()
        self._forward_post_hooks: "collections.OrderedDict[int, object]" = collections.OrderedDict()

    # -- modes ----------------------------------------------------------------------------------------
    def train(self) -> None:
        """Training mode for this layer and its sublayers (dropout drops, batch norm updates its stats)."""
        tracer = base.current_tracer()
        if tracer is not None:
            tracer.train_mode()
        for layer in self.sublayers(include_sublayers=True) + [self]:
            layer.training = True

    def eval(self) -> None:
        """Evaluation mode for this layer and its sublayers."""
        tracer = base.current_tracer()
        if tracer is not None:
            tracer.eval_mode()
        for layer in self.sublayers(include_sublayers=True) + [self]:
            layer.training = False

    def full_name(self) -> str:
        return self._full_name

    # -- hooks ------------------------------------------------------------------------------------------
    def register_forward_post_hook(self, hook) -> HookRemoveHelper:
        helper = HookRemoveHelper(self._forward_post_hooks)
        self._forward_post_hooks[helper._id] = hook
        return helper

    def register_forward_pre_hook(self, hook) -> HookRemoveHelper:
        helper = HookRemoveHelper(self._forward_pre_hooks)
        self._forward_pre_hooks[helper._id] = hook
        return helper

    # -- parameters and variables ---------------------------------------------------------------------
    def create_parameter(self, shape, attr=None, dtype="float32", is_bias: bool = False, default_initializer=None):
        """A parameter named ``<full_name>.w_N`` (``.b_N`` for a bias), initialized at once in dygraph
        mode; built in a static program (a declarative function's layers), a Parameter of the main
        program whose initializer is in the startup program, as fluid 1.8 made it."""
        return self._helper.create_parameter(attr, shape, dtype, is_bias, default_initializer)

    def create_variable(self, name=None, persistable=None, dtype=None, type=VarType.LOD_TENSOR) -> VarBase:
        _need_dygraph("Layer.create_variable")
        if name is None:
            name = unique_name.generate(self._full_name + "._generated_var")
        return (
            framework.default_main_program()
            .current_block()
            .create_var(name=name, persistable=persistable, dtype=dtype, type=type)
        )

    def parameters(self, include_sublayers: bool = True) -> List[ParamBase]:
        """This layer's parameters, then its sublayers' (each once)."""
        return [p for _, p in self.named_parameters(include_sublayers=include_sublayers)]

    def named_parameters(self, prefix: str = "", include_sublayers: bool = True) -> Iterator[Tuple[str, ParamBase]]:
        seen = set()
        for layer_prefix, layer in self.named_sublayers(
            prefix=prefix, include_sublayers=include_sublayers, include_self=True
        ):
            for key, param in layer._parameters.items():
                if param is None or id(param) in seen:
                    continue
                seen.add(id(param))
                yield layer_prefix + ("." if layer_prefix else "") + key, param

    def sublayers(self, include_sublayers: bool = True) -> List["Layer"]:
        return [layer for _, layer in self.named_sublayers(include_sublayers=include_sublayers)]

    def named_sublayers(
        self, prefix: str = "", include_sublayers: bool = True, include_self: bool = False, layers_set=None
    ):
        if layers_set is None:
            layers_set = set()
        if include_self and id(self) not in layers_set:
            layers_set.add(id(self))
            yield prefix, self
        if include_sublayers:
            for key, layer in self._sub_layers.items():
                if layer is None:
                    continue
                layer_prefix = prefix + ("." if prefix else "") + key
                yield from layer.named_sublayers(
                    prefix=layer_prefix, include_sublayers=include_sublayers, include_self=True, layers_set=layers_set
                )

    def register_buffer(self, name: str, variable, persistable: bool = True) -> None:
        """Keep ``variable`` (a VarBase) as part of the layer; persistable buffers go into state_dict."""
        if "_buffers" not in self.__dict__:
            raise ValueError("super(YourLayer, self).__init__() should be called first")
        if not isinstance(name, str):
            raise TypeError(f"The name of buffer should be a string, but received {type(name).__name__}.")
        if "." in name:
            raise KeyError("The name of buffer can not contain '.'")
        if name == "":
            raise KeyError("The name of buffer can not be empty.")
        if hasattr(self, name) and name not in self._buffers:
            raise KeyError(f"attribute '{name}' already exists.")
        if variable is not None and not isinstance(variable, VarBase):
            raise TypeError(f"The registered buffer should be a core.VarBase, but received {type(variable).__name__}.")
        self._buffers[name] = variable
        if persistable:
            self._non_persistable_buffer_names_set.discard(name)
        else:
            self._non_persistable_buffer_names_set.add(name)

    def buffers(self, include_sublayers: bool = True) -> List[VarBase]:
        return [b for _, b in self.named_buffers(include_sublayers=include_sublayers)]

    def named_buffers(self, prefix: str = "", include_sublayers: bool = True):
        seen = set()
        for layer_prefix, layer in self.named_sublayers(
            prefix=prefix, include_sublayers=include_sublayers, include_self=True
        ):
            for key, buf in layer._buffers.items():
                if buf is None or id(buf) in seen:
                    continue
                seen.add(id(buf))
                yield layer_prefix + ("." if layer_prefix else "") + key, buf

    def clear_gradients(self) -> None:
        """Zero the gradients of every trainable parameter."""
        for p in self.parameters():
            if p.trainable:
                p.clear_gradient()

    # -- running --------------------------------------------------------------------------------------
    def _build_once(self, *args, **kwargs) -> None:
        pass

    def __call__(self, *inputs, **kwargs):
        for hook in list(self._forward_pre_hooks.values()):
            result = hook(self, inputs)
            if result is not None:
                inputs = result if isinstance(result, tuple) else (result,)
        if not self._built:
            self._build_once(*inputs, **kwargs)
            self._built = True
        outputs = self.forward(*inputs, **kwargs)
        for hook in list(self._forward_post_hooks.values()):
            result = hook(self, inputs, outputs)
            if result is not None:
                outputs = result
        return outputs

    def forward(self, *inputs, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} must define forward()")

    def backward(self, *inputs):
        raise ValueError("Layer shouldn't implement backward")

    def add_sublayer(self, name: str, sublayer: "Layer") -> "Layer":
        if not isinstance(sublayer, Layer):
            raise TypeError(f"add_sublayer takes a Layer; received {type(sublayer).__name__} for '{name}'")
        self._sub_layers[name] = sublayer
        return sublayer

    def add_parameter(self, name: str, parameter):
        if "_parameters" not in self.__dict__:
            raise RuntimeError("super(YourLayer, self).__init__() should be called firstly.")
        if not isinstance(name, str):
            raise TypeError(f"The name of parameter should be a string, but received {type(name).__name__}.")
        if "." in name:
            raise KeyError("The name of parameter can not contain '.'")
        if name == "":
            raise KeyError("The name of parameter can not be empty.")
        if hasattr(self, name) and name not in self._parameters:
            raise KeyError(f"The parameter '{name}' already exists.")
        if parameter is not None and not isinstance(parameter, framework.Parameter):
            raise TypeError(
                f"The parameter to be added should be a Parameter, but received {type(parameter).__name__}."
            )
        if parameter is not None and parameter.name in self._loaddict_holder:
            parameter.set_value(self._loaddict_holder[parameter.name])
        self._parameters[name] = parameter
        return parameter

    # -- attributes ---------------------------------------------------------------------------------------
    def __getattr__(self, name: str):
        d = self.__dict__
        for store in ("_parameters", "_sub_layers", "_buffers"):
            found = d.get(store)
            if found is not None and name in found:
                return found[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __setattr__(self, name: str, value) -> None:
        # a property's setter runs, and a Parameter or Layer given to it is registered under the
        # property's name too, as fluid 1.8 did (a layer's ``weight`` property set to another layer's
        # parameter: both names are in its state_dict)
        is_property = isinstance(getattr(type(self), name, None), property)
        if is_property:
            object.__setattr__(self, name, value)
        params = self.__dict__.get("_parameters")
        if isinstance(value, framework.Parameter):  # a ParamBase, or a static one (create_parameter)
            if params is None:
                raise ValueError("super(YourLayer, self).__init__() should be called first")
            if value.name in self._loaddict_holder:
                value.set_value(self._loaddict_holder[value.name])
            _remove(name, self.__dict__, self._buffers, self._sub_layers)
            params[name] = value
            return
        if params is not None and name in params:
            if value is not None:
                raise TypeError(
                    f"assignment to parameter '{name}' should be of type Parameter or None, "
                    f"but got '{type(value).__name__}'"
                )
            params[name] = None
            return
        layers = self.__dict__.get("_sub_layers")
        if isinstance(value, Layer):
            if layers is None:
                raise ValueError("super(YourLayer, self).__init__() should be called first")
            _remove(name, self.__dict__, self._parameters, self._buffers)
            layers[name] = value
            return
        if layers is not None and name in layers:
            if value is not None:
                raise TypeError(
                    f"assignment to sublayer '{name}' should be of type Layer or None, but got '{type(value).__name__}'"
                )
            layers[name] = None
            return
        buffers = self.__dict__.get("_buffers")
        if buffers is not None and name in buffers:
            if value is not None and not isinstance(value, VarBase):
                raise TypeError(
                    f"assignment to buffers '{name}' should be of type core.VarBase or None, "
                    f"but got '{type(value).__name__}'"
                )
            buffers[name] = value
            return
        if not is_property:
            object.__setattr__(self, name, value)

    def __delattr__(self, name: str) -> None:
        for store in ("_parameters", "_sub_layers", "_buffers"):
            found = self.__dict__.get(store)
            if found is not None and name in found:
                del found[name]
                return
        object.__delattr__(self, name)

    def __dir__(self):
        names = list(super().__dir__())
        return names + list(self._parameters) + list(self._sub_layers) + list(self._buffers)

    # -- state ----------------------------------------------------------------------------------------
    def state_dict(self, destination=None, include_sublayers: bool = True, structured_name_prefix: str = ""):
        """Parameters and persistable buffers by structured name (``fc1.weight``)."""
        if destination is None:
            destination = collections.OrderedDict()
        for name, p in self._parameters.items():
            if p is not None:
                destination[structured_name_prefix + name] = p
        for name, b in self._buffers.items():
            if b is not None and name not in self._non_persistable_buffer_names_set:
                destination[structured_name_prefix + name] = b
        if include_sublayers:
            for name, layer in self._sub_layers.items():
                if layer is not None:
                    layer.state_dict(destination, include_sublayers, structured_name_prefix + name + ".")
        return destination

    def set_dict(self, stat_dict, include_sublayers: bool = True, use_structured_name: bool = True) -> None:
        """Load values from ``stat_dict`` (names to numpy arrays or VarBases). Everything is checked before
        anything is written, so a missing key or a wrong shape leaves the layer as it was."""
        plan = []
        for name, var in self.state_dict(include_sublayers=include_sublayers).items():
            key = name if use_structured_name else var.name
            if key not in stat_dict:
                raise RuntimeError(
                    f"Parameter not found, Can't not find [ {key} ] in stat_dict"
                    f"use_structured_name is set to [{use_structured_name}]"
                )
            value = stat_dict[key]
            value = value.numpy() if isinstance(value, VarBase) else np.asarray(value)
            if tuple(value.shape) != tuple(var.shape):
                raise ValueError(
                    f"Variable Shape not match, Variable [ {var.name} ] need tensor with shape {tuple(var.shape)} "
                    f"but load set tensor with shape {tuple(value.shape)} (key '{key}')"
                )
            if value.dtype != var.numpy().dtype:
                raise ValueError(
                    f"Variable dtype not match, Variable [ {var.name} ] need tensor with dtype {var.numpy().dtype}  "
                    f"but load tensor with dtype {value.dtype} (key '{key}')"
                )
            plan.append((var, value))
        for var, value in plan:
            var.set_value(value)

    load_dict = set_dict


def _remove(name, *stores) -> None:
    for d in stores:
        if name in d:
            del d[name]


def _need_dygraph(api: str) -> None:
    if not framework.in_dygraph_mode():
        raise RuntimeError(f"{api} works only in dygraph mode (inside fluid.dygraph.guard())")
