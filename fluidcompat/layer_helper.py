"""LayerHelper: what every layer function does to create variables, parameters and ops."""

from __future__ import annotations

import copy
from typing import Any, Optional

from fluidcompat import framework, unique_name
from fluidcompat.dtypes import VarType
from fluidcompat.initializer import ConstantInitializer, XavierInitializer
from fluidcompat.param_attr import ParamAttr
from fluidcompat_ops import registry


def check_variable(value, arg: str, api: str) -> None:
    if not isinstance(value, framework.Variable):
        raise TypeError(f"The type of '{arg}' in {api} must be {framework.Variable!r}, but received {type(value)!r}. ")


def refuse_false(attr, arg: str, where: str) -> None:
    """fluid 1.8's check for a layer whose op needs the parameter ``arg`` (param_attr / bias_attr)
    names: ``False`` would make none. Its message; a ValueError where fluid asserted."""
    if attr is False:
        raise ValueError(f"{arg} should not be False {where}.")


def check_dtype(value, arg: str, allowed, api: str) -> None:
    from fluidcompat.dtypes import np_name

    name = np_name(value)
    if name not in allowed:
        raise TypeError(f"The data type of '{arg}' in {api} must be {list(allowed)}, but received {name}. ")


def is_activation(op_type: str) -> bool:
    if not registry.has(op_type):
        return False
    d = registry.lookup(op_type)
    return d.inputs[:1] == ("X",) and d.outputs == ("Out",) and "Y" not in d.inputs


class LayerHelper:
    """Creates a layer's outputs (``<name>.tmp_N``), parameters (``<name>.w_N``) and ops."""

    def __init__(self, layer_type: str, **kwargs: Any) -> None:
        self.kwargs = kwargs
        self.layer_type = layer_type
        name = kwargs.get("name")
        self.name = unique_name.generate(layer_type) if name is None else name

    @property
    def main_program(self) -> framework.Program:
        return framework.default_main_program()

    @property
    def startup_program(self) -> framework.Program:
        return framework.default_startup_program()

    def create_variable_for_type_inference(self, dtype, stop_gradient: bool = False) -> framework.Variable:
        return self.main_program.current_block().create_var(
            name=unique_name.generate_with_ignorable_key(self.name + ".tmp"),
            dtype=dtype,
            type=VarType.LOD_TENSOR,
            persistable=False,
            stop_gradient=stop_gradient,
        )

    create_tmp_variable = create_variable_for_type_inference

    def create_variable(self, **kwargs: Any) -> framework.Variable:
        return self.main_program.current_block().create_var(**kwargs)

    def create_global_variable(self, persistable: bool = False, **kwargs: Any) -> framework.Variable:
        return self.main_program.global_block().create_var(persistable=persistable, **kwargs)

    def append_op(self, *args: Any, **kwargs: Any) -> framework.Operator:
        return self.main_program.current_block().append_op(*args, **kwargs)

    def input_dtype(self, input_param_name: str = "input"):
        inputs = self.kwargs.get(input_param_name)
        if isinstance(inputs, framework.Variable):
            inputs = [inputs]
        dtype = None
        for each in inputs or []:
            if dtype is None:
                dtype = each.dtype
            elif dtype != each.dtype:
                raise ValueError(f"Data Type mismatch: {dtype} to {each.dtype}")
        return dtype

    def create_parameter(
        self, attr, shape, dtype, is_bias: bool = False, default_initializer=None, stop_gradient: bool = False
    ) -> Optional[framework.Parameter]:
        if attr is False:
            return None
        attr = copy.deepcopy(ParamAttr._to_attr(attr)) if attr is not None else ParamAttr()
        if default_initializer is None:
            default_initializer = ConstantInitializer(0.0) if is_bias else XavierInitializer()
        attr._set_default_initializer(default_initializer)
        if attr.name is None:
            attr.name = unique_name.generate(f"{self.name}.{'b' if is_bias else 'w'}")
        shape = [int(d) for d in shape]
        for d in shape:
            if d <= 0:
                raise ValueError(
                    f"Each dimension of parameter {attr.name} must be greater than 0. Received: shape={shape}"
                )
        if framework.in_dygraph_mode():  # created and initialized at once
            param = self.main_program.global_block().create_parameter(
                shape=shape, dtype=dtype, stop_gradient=stop_gradient, **attr._to_kwargs(with_initializer=True)
            )
            return param
        startup_var = self.startup_program.global_block().create_var(
            name=attr.name, shape=shape, dtype=dtype, persistable=True
        )
        attr.initializer(startup_var, self.startup_program.global_block())
        param = self.main_program.global_block().create_parameter(shape=shape, dtype=dtype, **attr._to_kwargs())
        if stop_gradient:
            param.stop_gradient = True
        return param

    def append_bias_op(self, input_var: framework.Variable, dim_start: int = 1, dim_end=None):
        size = list(input_var.shape[dim_start:dim_end])
        bias_attr = self.kwargs.get("bias_attr")
        if bias_attr is False:
            return input_var
        b = self.create_parameter(attr=bias_attr, shape=size, dtype=input_var.dtype, is_bias=True)
        tmp = self.create_variable_for_type_inference(dtype=input_var.dtype)
        self.append_op(
            type="elementwise_add",
            inputs={"X": [input_var], "Y": [b]},
            outputs={"Out": [tmp]},
            attrs={"axis": dim_start},
        )
        return tmp

    def append_activation(self, input_var: framework.Variable):
        act = self.kwargs.get("act")
        if act is None:
            return input_var
        if isinstance(act, str):
            act = {"type": act}
        elif not isinstance(act, dict):
            raise TypeError(f"act should be a str or dict. Received: act={act!r}")
        act = dict(act)
        act_type = act.pop("type")
        if not is_activation(act_type):
            raise ValueError(
                f"Unknown activation '{act_type}' in layer '{self.layer_type}'. Expected an activation op such as "
                f"'relu', 'sigmoid', 'tanh', 'softmax'. Received: act={act_type!r}"
            )
        tmp = self.create_variable_for_type_inference(dtype=input_var.dtype)
        self.append_op(type=act_type, inputs={"X": [input_var]}, outputs={"Out": [tmp]}, attrs=act)
        return tmp
