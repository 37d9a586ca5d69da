"""``fluid.layers`` creation and random: fill_constant and its kin (zeros, ones, full, the ``*_like``
and ``*_batch_size_like`` forms), assign, tensors, parameters and global variables, range / arange /
linspace, diag, the step counter (eye: manipulation.py); uniform and gaussian random, randint, randn, randperm,
sampling_id."""

from __future__ import annotations

from typing import List, Optional

import numpy as np

from fluidcompat import unique_name
from fluidcompat.dtypes import INT_TYPES, VarType, to_vartype
from fluidcompat.framework import Variable, in_dygraph_mode, layer
from fluidcompat.initializer import ConstantInitializer, assign_value_attrs
from fluidcompat.layer_helper import DTYPE_NAMES, LayerHelper, check_dtype, check_variable, convert_dtype
from fluidcompat.layers._common import _one
from fluidcompat.param_attr import ParamAttr

__all__ = [
    "fill_constant",
    "fill_constant_batch_size_like",
    "zeros",
    "ones",
    "zeros_like",
    "ones_like",
    "full",
    "full_like",
    "assign",
    "diag",
    "create_tensor",
    "create_parameter",
    "create_global_var",
    "autoincreased_step_counter",
    "range",
    "arange",
    "linspace",
    "uniform_random",
    "gaussian_random",
    "uniform_random_batch_size_like",
    "gaussian_random_batch_size_like",
    "randint",
    "randn",
    "randperm",
    "sampling_id",
]


# -- shapes given as numbers, Variables, or lists holding Variables ---------------------------------
def _host_ints(values) -> List[Variable]:
    """Each of ``values`` as an int32 [1] tensor on the host: a Variable as it is, a number through
    fill_constant (fluid's ``*TensorList`` inputs)."""
    return [v if isinstance(v, Variable) else fill_constant([1], "int32", v, force_cpu=True) for v in values]


def _known_ints(values) -> List[int]:
    """The numbers of ``values``, -1 for each Variable (known only when the program runs)."""
    return [-1 if isinstance(v, Variable) else int(v) for v in values]


# the dtypes fluid's fill_constant (and ones, zeros, full_like) allowed
FILL_DTYPES = ["bool", "float16", "float32", "float64", "int32", "int64"]


def _shape_inputs(shape, api: str):
    """Split a shape given as list/tuple/Variable into (attr list, inputs dict) as fluid does."""
    if isinstance(shape, Variable):
        return [], {"ShapeTensor": [shape]}
    if not isinstance(shape, (list, tuple)):
        raise TypeError(f"The type of 'shape' in {api} must be list, tuple or Variable, but received {type(shape)}.")
    if any(isinstance(d, Variable) for d in shape):
        tensors = _host_ints(shape)
        return _known_ints(shape), {"ShapeTensorList": tensors}
    return [int(d) for d in shape], {}


# -- constants --------------------------------------------------------------------------------------
@layer
def fill_constant(shape, dtype, value, force_cpu: bool = False, out: Optional[Variable] = None) -> Variable:
    """A tensor of ``shape`` filled with ``value`` (op ``fill_constant``)."""
    check_dtype(dtype, "dtype", FILL_DTYPES, "fill_constant")
    vt = to_vartype(dtype)
    attrs_shape, inputs = _shape_inputs(shape, "fill_constant")
    if not inputs and any(d < 0 for d in attrs_shape):  # fluid's InferShape check, at build time
        from fluidcompat.executor.errors import EnforceNotMet

        k = next(i for i, d in enumerate(attrs_shape) if d < 0)
        raise EnforceNotMet(
            f"InvalidArgumentError: Each value of attribute 'shape' is expected to be no less than 0. But recieved: "
            f"shape[{k}] = {attrs_shape[k]}; shape = {attrs_shape}.\n  [operator < fill_constant > error]"
        )
    attrs = {"shape": attrs_shape, "dtype": int(vt), "force_cpu": force_cpu}
    if isinstance(value, Variable):
        inputs["ValueTensor"] = [value]
        attrs["value"], attrs["str_value"] = 0.0, ""
    else:
        try:
            attrs["value"] = float(value)
        except (TypeError, ValueError):
            raise ValueError(f"fill_constant: value must be a number or Variable. Received: value={value!r}") from None
        attrs["str_value"] = str(int(value)) if vt in (VarType.INT32, VarType.INT64) else str(float(value))
    helper = LayerHelper("fill_constant")
    if out is None:
        out = helper.create_variable_for_type_inference(dtype=vt)
    helper.append_op(type="fill_constant", inputs=inputs, outputs={"Out": [out]}, attrs=attrs)
    out.stop_gradient = True
    return out


@layer
def fill_constant_batch_size_like(input, shape, dtype, value, input_dim_idx=0, output_dim_idx=0, force_cpu=False):
    convert_dtype(dtype)  # fluid refused the names numpy reads ('float', 'int') here, and nothing else
    helper = LayerHelper("fill_constant_batch_size_like")
    out = helper.create_variable_for_type_inference(dtype=dtype)
    vt = to_vartype(dtype)
    helper.append_op(
        type="fill_constant_batch_size_like",
        inputs={"Input": [input]},
        outputs={"Out": [out]},
        attrs={
            "shape": list(shape),
            "dtype": int(vt),
            "value": float(value),
            "input_dim_idx": input_dim_idx,
            "output_dim_idx": output_dim_idx,
            "force_cpu": force_cpu,
            "str_value": str(int(value)) if vt in INT_TYPES else str(float(value)),
        },
    )
    out.stop_gradient = True
    return out


def zeros(shape, dtype, force_cpu: bool = False) -> Variable:
    check_dtype(dtype, "create data type", FILL_DTYPES, "zeros")
    return fill_constant(shape=shape, dtype=dtype, value=0.0, force_cpu=force_cpu)


def ones(shape, dtype, force_cpu: bool = False) -> Variable:
    check_dtype(dtype, "create data type", FILL_DTYPES, "ones")
    return fill_constant(shape=shape, dtype=dtype, value=1.0, force_cpu=force_cpu)


@layer
def zeros_like(x, out=None) -> Variable:
    check_variable(x, "x", "zeros_like")
    helper = LayerHelper("zeros_like", **locals())
    out = out or helper.create_variable_for_type_inference(dtype=x.dtype)
    helper.append_op(type="fill_zeros_like", inputs={"X": [x]}, outputs={"Out": [out]})
    out.stop_gradient = True
    return out


@layer
def ones_like(x, out=None) -> Variable:
    check_variable(x, "x", "ones_like")
    helper = LayerHelper("ones_like", **locals())
    out = out or helper.create_variable_for_type_inference(dtype=x.dtype)
    helper.append_op(type="fill_any_like", inputs={"X": [x]}, outputs={"Out": [out]}, attrs={"value": 1.0, "dtype": -1})
    return out


@layer
def full(shape, fill_value, out=None, dtype=None, device=None, stop_gradient=True, name=None):

    result = fill_constant(shape, dtype or "float32", fill_value, out=out)
    result.stop_gradient = stop_gradient
    return result


@layer
def full_like(input, fill_value, out=None, dtype=None, device=None, stop_gradient=True, name=None):
    if dtype is not None:
        check_dtype(dtype, "dtype", FILL_DTYPES, "full_like")
    dtype = input.dtype if dtype is None else to_vartype(dtype)
    result = _one("fill_any_like", {"X": [input]}, {"value": float(fill_value), "dtype": int(dtype)}, dtype, name=name)
    result.stop_gradient = stop_gradient
    return result


@layer
def assign(input, output=None) -> Variable:
    """Copy a Variable (op ``assign``) or a numpy array (op ``assign_value``) into ``output``; fluid
    1.8.5's checks and texts for the dtypes it refused."""
    helper = LayerHelper("assign", **locals())
    if isinstance(input, Variable):
        check_dtype(
            input.dtype,
            "input",
            ["float16", "float32", "float64", "int32", "int64", "bool"],
            "assign",
            "(When the type of input in assign is Variable.)",
        )
        if output is None:  # not ``output or``: a dygraph VarBase of several values has no truth value
            output = helper.create_variable_for_type_inference(dtype=input.dtype)
        helper.append_op(type="assign", inputs={"X": [input]}, outputs={"Out": [output]})
    elif isinstance(input, (np.ndarray, list, tuple, float, int, bool)):
        # (fluidcompat also takes lists, numbers and float64 arrays, as float32: fluid 1.8.5 refused them)
        arr = np.asarray(input)
        if arr.dtype == np.float64:
            arr = arr.astype("float32")
        if arr.dtype.name not in ("bool", "float32", "int32", "int64"):
            raise TypeError(
                "When the type of 'input' in assign is numpy.ndarray, the data type of 'input' must be bool, "
                f"float32, int32 or int64, but received {arr.dtype.name}."
            )
        vt = to_vartype(arr.dtype)
        output = output or helper.create_variable_for_type_inference(dtype=vt)
        helper.append_op(type="assign_value", outputs={"Out": [output]}, attrs=assign_value_attrs(arr, vt))
    else:
        raise TypeError(
            f"The type of 'input' in assign must be (<class 'paddle.fluid.framework.Variable'>, <class "
            f"'numpy.ndarray'>), but received {type(input)}. "
        )
    return output


@layer
def diag(diagonal):

    if not isinstance(diagonal, Variable):
        diagonal = assign(np.asarray(diagonal))
    return _one("diag", {"Diagonal": [diagonal]}, stop_gradient=True)


# -- variables and parameters -----------------------------------------------------------------------
def create_tensor(dtype, name=None, persistable=False) -> Variable:
    allowed = ["bool", "float16", "float32", "float64", "int8", "int32", "int32", "int64"]  # fluid's, int32 twice
    check_dtype(dtype, "dtype", allowed, "create_tensor")
    helper = LayerHelper("create_tensor", **locals())
    return helper.create_variable(name=helper.name, dtype=dtype, persistable=persistable)


@layer
def create_parameter(shape, dtype, name=None, attr=None, is_bias=False, default_initializer=None):
    check_dtype(dtype, "dtype", list(DTYPE_NAMES), "create_parameter")
    helper = LayerHelper("create_parameter", **locals())
    if attr is None:
        attr = ParamAttr(name=name)
    return helper.create_parameter(attr, shape, to_vartype(dtype), is_bias, default_initializer)


@layer
def create_global_var(shape, value, dtype, persistable=False, force_cpu=False, name=None) -> Variable:
    check_dtype(dtype, "dtype", list(DTYPE_NAMES), "create_global_var")
    helper = LayerHelper("global_var", **locals())
    var = helper.create_global_variable(
        dtype=dtype,
        shape=shape,
        persistable=persistable,
        name=name if name is not None else unique_name.generate("_generated_var"),
        stop_gradient=True,
    )
    startup = helper.startup_program.global_block()
    if in_dygraph_mode():  # filled at once
        svar = var
    else:
        svar = startup.create_var(name=var.name, shape=shape, dtype=dtype, persistable=persistable)
    ConstantInitializer(value=float(value), force_cpu=force_cpu)(svar, startup)
    return var


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


# -- ranges -----------------------------------------------------------------------------------------
def _scalar_var(v, dtype):
    return v if isinstance(v, Variable) else fill_constant([1], dtype, v)


@layer
def range(start, end, step, dtype) -> Variable:
    check_dtype(dtype, "create data type", ["float32", "float64", "int32", "int64"], "range")
    helper = LayerHelper("range", **locals())
    start, end, step = (_scalar_var(v, dtype) for v in (start, end, step))
    out = helper.create_variable_for_type_inference(dtype=start.dtype)
    helper.append_op(type="range", inputs={"Start": [start], "End": [end], "Step": [step]}, outputs={"Out": [out]})
    out.stop_gradient = True
    return out


@layer
def arange(start, end, step=1, dtype=None, name=None):
    from fluidcompat.layers.creation import range as range_

    return range_(start, end, step, dtype or "int64")


@layer
def linspace(start, stop, num, dtype) -> Variable:
    helper = LayerHelper("linspace", **locals())
    start, stop = _scalar_var(start, dtype), _scalar_var(stop, dtype)
    num = _scalar_var(num, "int32")
    out = helper.create_variable_for_type_inference(dtype=start.dtype)
    helper.append_op(type="linspace", inputs={"Start": [start], "Stop": [stop], "Num": [num]}, outputs={"Out": [out]})
    return out


# -- random -----------------------------------------------------------------------------------------
@layer
def uniform_random(shape, dtype="float32", min=-1.0, max=1.0, seed=0) -> Variable:
    check_dtype(to_vartype(dtype), "dtype", ("float32", "float64"), "uniform_random")
    helper = LayerHelper("uniform_random", **locals())
    attrs_shape, inputs = _shape_inputs(shape, "uniform_random")
    vt = to_vartype(dtype)
    out = helper.create_variable_for_type_inference(vt)
    helper.append_op(
        type="uniform_random",
        inputs=inputs,
        outputs={"Out": [out]},
        attrs={
            "shape": attrs_shape,
            "dtype": int(vt),
            "min": float(min),
            "max": float(max),
            "seed": seed,  # (fluid 1.8's layer left Program.random_seed to the initializers)
        },
    )
    return out


@layer
def gaussian_random(shape, mean=0.0, std=1.0, seed=0, dtype="float32") -> Variable:
    helper = LayerHelper("gaussian_random", **locals())
    attrs_shape, inputs = _shape_inputs(shape, "gaussian_random")
    vt = to_vartype(dtype)
    out = helper.create_variable_for_type_inference(vt)
    helper.append_op(
        type="gaussian_random",
        inputs=inputs,
        outputs={"Out": [out]},
        attrs={
            "shape": attrs_shape,
            "dtype": int(vt),
            "mean": float(mean),
            "std": float(std),
            "seed": seed,  # (fluid 1.8's layer left Program.random_seed to the initializers)
        },
    )
    return out


def _batch_size_like(op_type, input, shape, dtype, input_dim_idx, output_dim_idx, seed, extra):
    helper = LayerHelper(op_type)
    out = helper.create_variable_for_type_inference(dtype=dtype)
    attrs = {"shape": list(shape), "input_dim_idx": input_dim_idx, "output_dim_idx": output_dim_idx, "seed": seed}
    attrs["dtype"] = int(to_vartype(dtype))
    attrs.update(extra)
    helper.append_op(type=op_type, inputs={"Input": [input]}, outputs={"Out": [out]}, attrs=attrs)
    return out


@layer
def uniform_random_batch_size_like(
    input, shape, dtype="float32", input_dim_idx=0, output_dim_idx=0, min=-1.0, max=1.0, seed=0
):
    check_dtype(dtype, "dtype", ("float32", "float64"), "uniform_random_batch_size_like")
    extra = {"min": float(min), "max": float(max)}
    return _batch_size_like(
        "uniform_random_batch_size_like", input, shape, dtype, input_dim_idx, output_dim_idx, seed, extra
    )


@layer
def gaussian_random_batch_size_like(
    input, shape, input_dim_idx=0, output_dim_idx=0, mean=0.0, std=1.0, seed=0, dtype="float32"
):
    # fluid's list: 'int' is no numpy name, so no integer type passes (nor float64)
    check_dtype(dtype, "dtype", ["float16", "float32", "int"], "fluid.layers.gaussian_random_batch_size_like")
    extra = {"mean": float(mean), "std": float(std)}
    return _batch_size_like(
        "gaussian_random_batch_size_like", input, shape, dtype, input_dim_idx, output_dim_idx, seed, extra
    )


@layer
def randint(low, high=None, shape=None, out=None, dtype=None, device=None, stop_gradient=False, seed=0, name=None):
    if high is None:
        low, high = 0, low
    if low >= high:
        raise ValueError(f"randint's low must be less than high, but received low = {low}, high = {high}")
    helper = LayerHelper("randint", name=name)
    dtype = dtype or "int64"
    check_dtype(dtype, "dtype", ["int32", "int64"], "randint")

    result = helper.create_variable_for_type_inference(dtype=dtype)
    # a shape of numbers, or holding Variables, or a Variable itself, as fluid's layer took it
    attrs_shape, inputs = _shape_inputs([1] if shape is None else shape, "randint")
    attrs = {"shape": attrs_shape, "low": low, "high": high, "seed": seed, "dtype": int(to_vartype(dtype))}
    helper.append_op(type="randint", inputs=inputs, outputs={"Out": [result]}, attrs=attrs)
    result.stop_gradient = True
    return result


@layer
def randn(shape, out=None, dtype=None, device=None, stop_gradient=True, name=None):

    check_dtype(dtype or "float32", "create data type", ["float32", "float64"], "randn")
    result = gaussian_random(list(shape), 0.0, 1.0, 0, dtype or "float32")
    result.stop_gradient = stop_gradient
    return result


@layer
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


@layer
def sampling_id(x, min=0.0, max=1.0, seed=0, dtype="float32"):
    return _one(
        "sampling_id",
        {"X": [x]},
        {"min": float(min), "max": float(max), "seed": seed},
        dtype,  # fluid 1.8 declared the output with ``dtype``; its kernel writes int64 ids all the same
    )


import builtins as _builtins  # noqa: E402  (``range`` is shadowed by the layer above)

builtins_range = _builtins.range
