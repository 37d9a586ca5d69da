"""LayerHelper: what every layer function does to create variables, parameters and ops."""

from __future__ import annotations

import copy
from typing import Any, Optional

from fluidcompat import framework, unique_name
from fluidcompat.arg_checks import (  # noqa: F401  (fluid's layer_helper names; the layers import them here)
    DTYPE_NAMES,
    check_dtype,
    check_variable,
    convert_dtype,
    refuse_false,
)
from fluidcompat.dtypes import FLOAT_TYPES, VarType, to_vartype
from fluidcompat.initializer import ConstantInitializer, XavierInitializer
from fluidcompat.param_attr import ParamAttr, WeightNormParamAttr
from fluidcompat_ops import registry

# fluid.layers (the package, its layers checking their arguments as fluid's did), which it sets here
# on its import, for what builds with its layers when called but may not import it: the program
# transforms and weight normalization below it, layers built from layers inside it, dygraph-to-static's
# runtime (docs/architecture.md, the hooks)
layers: Any = None


class _FluidLayers:
    """``fluid.layers`` for a module that builds with its layers but sits below the package (the
    optimizers, clipping, averaging, mixed precision, quantization and weight decay, as fluid 1.8's
    did): each name is looked up in the package when it is used."""

    def __getattr__(self, name: str):
        if layers is None:
            raise RuntimeError(f"fluid.layers.{name}: fluid.layers is not imported yet (import fluidcompat.layers)")
        return getattr(layers, name)


fluid_layers = _FluidLayers()


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
        if default_initializer is None and attr.initializer is None and to_vartype(dtype) not in FLOAT_TYPES:
            raise TypeError(
                "Can not create parameter with default initializer when dtype is not float type. Set "
                "default_initializer to fit the parameter dtype!"
            )
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
        if isinstance(attr, WeightNormParamAttr) and not framework.in_dygraph_mode():
            param = self._weight_normalized(attr, shape, dtype)
            WeightNormParamAttr.params_with_weight_norm.append(param)
            return param
        if framework.in_dygraph_mode():  # created and initialized at once
            if unique_name.dygraph_parameter_name_checker(attr.name):
                raise ValueError(
                    f"parameter name [{attr.name}] have be been used. In dygraph mode, the name of parameter "
                    "can't be same.Please check the parameter attr value passed to self.create_parameter or "
                    "constructor of dygraph Layers"
                )
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

    def _weight_normalized(self, attr: WeightNormParamAttr, shape, dtype) -> framework.Variable:
        """fluid 1.8's weight normalisation: parameters ``<name>_g`` (size 1 on every dim but
        ``attr.dim``) and ``<name>_v`` (``shape``, the attribute's initializer); the startup program sets
        g to v's L2 norm over every dim but ``dim``, so that w starts as that initializer made it; the
        main program computes w = v * g / norm(v), with fluid's ops and variable names."""
        dim = attr.dim
        g_shape = [1] * len(shape)
        if dim is not None:
            g_shape[dim] = shape[dim]
        g_attr, v_attr = copy.deepcopy(attr), copy.deepcopy(attr)
        g_attr.name, v_attr.name = attr.name + "_g", attr.name + "_v"
        startup = self.startup_program.global_block()
        g0 = startup.create_var(name=g_attr.name, shape=g_shape, dtype=dtype, persistable=True)
        v0 = startup.create_var(name=v_attr.name, shape=list(shape), dtype=dtype, persistable=True)
        v_attr.initializer(v0, startup)
        self._norm_except_dim(startup, v0, dim, dtype, out=g0)
        self._wn_op(startup, "reshape", g0, {"shape": g_shape}, dtype, out=g0)
        main = self.main_program.global_block()
        g = main.create_parameter(shape=g_shape, dtype=dtype, **g_attr._to_kwargs())
        v = main.create_parameter(shape=list(shape), dtype=dtype, **v_attr._to_kwargs())
        block = self.main_program.current_block()
        norm = self._norm_except_dim(block, v, dim, dtype)
        scale = fluid_layers.elementwise_div(x=g, y=norm)
        if dim is not None:
            scale = fluid_layers.reshape(x=scale, shape=[shape[dim]])
        return fluid_layers.elementwise_mul(x=v, y=scale, axis=-1 if dim is None else dim)

    def _wn_var(self, block, tag: str, dtype):
        name = unique_name.generate_with_ignorable_key(f"{self.name}.weight_norm_{tag}")
        return block.create_var(name=name, dtype=dtype, persistable=False)

    def _wn_op(self, block, op_type: str, x, attrs, dtype, out=None, tag: str = ""):
        """One op of the weight-norm computation, into ``out`` or a new ``<layer>.weight_norm_<tag>``."""
        out = out if out is not None else self._wn_var(block, tag or op_type, dtype)
        block.append_op(type=op_type, inputs={"X": [x]}, outputs={"Out": [out]}, attrs=attrs)
        return out

    def _norm_except_dim(self, block, x, dim, dtype, out=None):
        """The L2 norm of ``x`` over every dim but ``dim`` (all of them for None), keeping ``dim``:
        fluid's abs, pow, reduce_sum, pow, around a reshape (and a transpose for an inner dim)."""
        rank = len(x.shape)

        def norm(t, dims, into=None):
            t = self._wn_op(block, "abs", t, {}, dtype)
            t = self._wn_op(block, "pow", t, {"factor": 2.0}, dtype)
            t = self._wn_op(block, "reduce_sum", t, {"dim": dims or [0], "keep_dim": False, "reduce_all": not dims},
                            dtype, tag="sum")  # fmt: skip
            into = into if into is not None else self._wn_var(block, "norm", dtype)
            return self._wn_op(block, "pow", t, {"factor": 0.5}, dtype, out=into)

        if dim is None:
            return norm(x, None, out)
        out = out if out is not None else self._wn_var(block, "norm", dtype)
        if dim == rank - 1:
            flat = self._wn_op(block, "reshape", x, {"shape": [-1, x.shape[-1]]}, dtype)
            n = norm(flat, [0])
            return self._wn_op(block, "reshape", n, {"shape": [1] * (rank - 1) + [x.shape[-1]]}, dtype, out=out)
        perm = list(range(rank))
        perm[0], perm[dim] = dim, 0
        t = x if dim == 0 else self._wn_op(block, "transpose", x, {"axis": perm}, dtype)
        lead = t.shape[0]
        flat = self._wn_op(block, "reshape", t, {"shape": [lead, -1]}, dtype)
        n = norm(flat, [1])
        kept = [lead] + [1] * (rank - 1)
        if dim == 0:
            return self._wn_op(block, "reshape", n, {"shape": kept}, dtype, out=out)
        n = self._wn_op(block, "reshape", n, {"shape": kept}, dtype)
        return self._wn_op(block, "transpose", n, {"axis": perm}, dtype, out=out)

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
