"""``fluid.layers`` tensor functions: creation, shape manipulation, indexing."""

from __future__ import annotations

from typing import List, Optional

import numpy as np

from fluidcompat import unique_name
from fluidcompat.dtypes import INT_TYPES, VarType, to_vartype
from fluidcompat.framework import Variable, in_dygraph_mode, layer
from fluidcompat.initializer import ConstantInitializer, assign_value_attrs
from fluidcompat.layer_helper import DTYPE_NAMES, LayerHelper, check_dtype, check_variable, convert_dtype
from fluidcompat.param_attr import ParamAttr

__all__ = [
    "fill_constant",
    "assign",
    "cast",
    "shape",
    "slice",
    "crop_tensor",
    "reshape",
    "transpose",
    "concat",
    "split",
    "squeeze",
    "unsqueeze",
    "stack",
    "expand",
    "gather",
    "scatter",
    "zeros",
    "ones",
    "zeros_like",
    "ones_like",
    "range",
    "linspace",
    "create_tensor",
    "create_parameter",
    "create_global_var",
    "fill_constant_batch_size_like",
    "argmax",
    "argmin",
    "argsort",
    "sums",
    "sum",
    "flatten",
    "pad",
    "pad2d",
    "where",
    "uniform_random",
    "gaussian_random",
]


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


@layer
def fill_constant(shape, dtype, value, force_cpu: bool = False, out: Optional[Variable] = None) -> Variable:
    """A tensor of ``shape`` filled with ``value`` (op ``fill_constant``)."""
    check_dtype(dtype, "dtype", FILL_DTYPES, "fill_constant")
    vt = to_vartype(dtype)
    attrs_shape, inputs = _shape_inputs(shape, "fill_constant")
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
def cast(x, dtype) -> Variable:
    check_variable(x, "x", "cast")
    check_dtype(dtype, "dtype", ["bool", "float16", "float32", "float64", "int8", "int32", "int64", "uint8"], "cast")
    helper = LayerHelper("cast", **locals())
    vt = to_vartype(dtype)
    out = helper.create_variable_for_type_inference(dtype=vt)
    helper.append_op(
        type="cast", inputs={"X": [x]}, outputs={"Out": [out]}, attrs={"in_dtype": int(x.dtype), "out_dtype": int(vt)}
    )
    return out


@layer
def shape(input) -> Variable:
    """The dims of ``input`` as an int32 tensor that lives on the CPU (op ``shape``)."""
    check_variable(input, "input", "shape")
    helper = LayerHelper("shape", **locals())
    out = helper.create_variable_for_type_inference(dtype=VarType.INT32)
    helper.append_op(type="shape", inputs={"Input": [input]}, outputs={"Out": [out]})
    return out


def _bound_inputs(values, name: str, inputs: dict, attrs: dict, flags: List[int]) -> None:
    slot = name.capitalize()
    if isinstance(values, Variable):
        values.stop_gradient = True
        inputs[slot + "Tensor"] = [values]
        attrs[name] = []
        flags[:] = [-1] * len(flags)
        return
    if any(isinstance(v, Variable) for v in values):
        inputs[slot + "TensorList"] = _host_ints(values)
        attrs[name] = _known_ints(values)
        flags[:] = [-1 if isinstance(v, Variable) else f for v, f in zip(values, flags)]
        return
    attrs[name] = [int(v) for v in values]


@layer
def slice(input, axes, starts, ends) -> Variable:
    """``input[starts:ends]`` along ``axes``; starts/ends may be lists, lists with Variables, or Variables."""
    check_variable(input, "input", "slice")
    if not isinstance(axes, (list, tuple)):
        raise TypeError(f"The type of 'axes' in slice must be list or tuple, but received {type(axes)}.")
    helper = LayerHelper("slice", **locals())
    inputs = {"Input": [input]}
    attrs = {"axes": list(axes)}
    flags = [1] * len(axes)
    _bound_inputs(starts, "starts", inputs, attrs, flags)
    _bound_inputs(ends, "ends", inputs, attrs, flags)
    attrs["infer_flags"] = flags
    out = helper.create_variable_for_type_inference(dtype=input.dtype)
    helper.append_op(type="slice", inputs=inputs, outputs={"Out": [out]}, attrs=attrs)
    return out


@layer
def crop_tensor(x, shape=None, offsets=None, name=None) -> Variable:
    """Crop ``x`` to ``shape`` at ``offsets``; ``shape`` may be a Variable read on the host."""
    check_variable(x, "x", "crop_tensor")
    helper = LayerHelper("crop_tensor", **locals())
    rank = len(x.shape)
    inputs = {"X": [x]}
    attrs = {}
    if shape is None:
        shape = list(x.shape)
    if isinstance(shape, Variable):
        shape.stop_gradient = True
        inputs["Shape"] = [shape]
        attrs["shape"] = [-1] * rank
    elif isinstance(shape, (list, tuple)):
        if any(isinstance(d, Variable) for d in shape):
            inputs["ShapeTensor"] = _host_ints(shape)
            attrs["shape"] = _known_ints(shape)
        else:
            attrs["shape"] = [int(d) for d in shape]
    else:
        raise TypeError(
            f"The type of 'shape' in crop_tensor must be list, tuple or Variable, but received {type(shape)}."
        )
    if offsets is None:
        attrs["offsets"] = [0] * rank
    elif isinstance(offsets, Variable):
        offsets.stop_gradient = True
        inputs["Offsets"] = [offsets]
        attrs["offsets"] = [-1] * rank
    elif any(isinstance(d, Variable) for d in offsets):
        inputs["OffsetsTensor"] = _host_ints(offsets)
        attrs["offsets"] = _known_ints(offsets)
    else:
        attrs["offsets"] = [int(d) for d in offsets]
    out = helper.create_variable_for_type_inference(dtype=x.dtype)
    helper.append_op(type="crop_tensor", inputs=inputs, outputs={"Out": [out]}, attrs=attrs)
    return out


@layer
def reshape(x, shape, actual_shape=None, act=None, inplace=False, name=None) -> Variable:
    """Op ``reshape2``: 0 copies the input dim, -1 is inferred."""
    check_variable(x, "x", "reshape")
    helper = LayerHelper("reshape2", **locals())
    inputs = {"X": [x]}
    attrs = {}
    if isinstance(shape, Variable):
        shape.stop_gradient = True
        inputs["Shape"] = [shape]
    elif isinstance(shape, (list, tuple)):
        if any(isinstance(d, Variable) for d in shape):
            inputs["ShapeTensor"] = _host_ints(shape)
            attrs["shape"] = _known_ints(shape)
        else:
            attrs["shape"] = [int(d) for d in shape]
    else:
        raise TypeError(f"The type of 'shape' in reshape must be list, tuple or Variable, but received {type(shape)}.")
    if actual_shape is not None:
        inputs["Shape"] = [actual_shape]
    out = x if inplace else helper.create_variable_for_type_inference(dtype=x.dtype)
    x_shape = helper.create_variable_for_type_inference(dtype=x.dtype)
    helper.append_op(type="reshape2", inputs=inputs, outputs={"Out": [out], "XShape": [x_shape]}, attrs=attrs)
    return helper.append_activation(out)


@layer
def transpose(x, perm, name=None) -> Variable:
    check_variable(x, "x", "transpose")
    if len(perm) != len(x.shape):
        raise ValueError(
            "Input(perm) is the permutation of dimensions of Input(x), its length should be equal to dimensions of "
            f"Input(x), but received dimension of Input(x) is {len(x.shape)}, the length of Input(perm) is {len(perm)}."
        )
    helper = LayerHelper("transpose", **locals())
    out = helper.create_variable_for_type_inference(x.dtype)
    x_shape = helper.create_variable_for_type_inference(x.dtype)
    helper.append_op(
        type="transpose2", inputs={"X": [x]}, outputs={"Out": [out], "XShape": [x_shape]}, attrs={"axis": list(perm)}
    )
    return out


@layer
def concat(input, axis=0, name=None) -> Variable:
    if isinstance(input, Variable):
        input = [input]
    elif isinstance(input, (list, tuple)):
        for i, each in enumerate(input):
            check_variable(each, f"input[{i}]", "concat")
    if len(input) == 1 and input[0].type == VarType.LOD_TENSOR_ARRAY:  # fluid 1.8: its elements joined
        from fluidcompat.layers.control_flow import tensor_array_to_tensor

        return tensor_array_to_tensor(input[0], axis=axis)[0]
    helper = LayerHelper("concat", **locals())
    inputs = {"X": list(input)}
    attrs = {}
    if isinstance(axis, Variable):
        inputs["AxisTensor"] = [axis]
        attrs["axis"] = 0
    else:
        attrs["axis"] = axis
    out = helper.create_variable_for_type_inference(dtype=helper.input_dtype())
    helper.append_op(type="concat", inputs=inputs, outputs={"Out": [out]}, attrs=attrs)
    return out


@layer
def split(input, num_or_sections, dim=-1, name=None) -> List[Variable]:
    check_variable(input, "input", "split")
    helper = LayerHelper("split", **locals())
    inputs = {"X": [input]}
    attrs = {}
    if isinstance(dim, Variable):  # read when the program runs
        dim.stop_gradient = True
        inputs["AxisTensor"] = [dim]
        size = -1
    else:
        dim = dim + len(input.shape) if dim < 0 else dim  # fluid stores the axis counted from 0
        attrs["axis"] = dim
        size = input.shape[dim]
    if isinstance(num_or_sections, int):
        if num_or_sections <= 1:
            raise ValueError(f"num_or_sections must be more than 1. Received: {num_or_sections}")
        if size > 0 and size % num_or_sections:
            raise AssertionError(  # fluid's assertion
                "The input's size along the split dimension must be evenly divisible by Attr(num_or_sections). "
                f"But {num_or_sections} is not evenly divisible by {size}. "
            )
        attrs.update(num=num_or_sections, sections=[])
        n_out = num_or_sections
    elif isinstance(num_or_sections, (list, tuple)):
        sections = list(num_or_sections)
        if size > 0 and len(sections) > size:
            raise ValueError("len(num_or_sections) must not be more than input.shape[dim].")
        if [s for s in sections if not isinstance(s, Variable)].count(-1) > 1:
            raise ValueError(f"Only one value of 'num_or_section' in split can be -1. Received: {sections}")
        attrs.update(num=0, sections=_known_ints(sections))
        if any(isinstance(s, Variable) for s in sections):
            inputs["SectionsTensorList"] = _host_ints(sections)
            for s in inputs["SectionsTensorList"]:
                s.stop_gradient = True
        n_out = len(sections)
    else:
        raise TypeError(
            f"The type of 'num_or_sections' in split must be int or list, but received {type(num_or_sections)}."
        )
    outs = [helper.create_variable_for_type_inference(dtype=input.dtype) for _ in builtins_range(n_out)]
    helper.append_op(type="split", inputs=inputs, outputs={"Out": outs}, attrs=attrs)
    return outs


@layer
def squeeze(input, axes, name=None) -> Variable:
    helper = LayerHelper("squeeze", **locals())
    out = helper.create_variable_for_type_inference(dtype=input.dtype)
    x_shape = helper.create_variable_for_type_inference(dtype=input.dtype)
    helper.append_op(
        type="squeeze2", inputs={"X": [input]}, outputs={"Out": [out], "XShape": [x_shape]}, attrs={"axes": list(axes)}
    )
    return out


@layer
def unsqueeze(input, axes, name=None) -> Variable:
    check_variable(input, "input", "unsqueeze")
    helper = LayerHelper("unsqueeze2", **locals())
    if isinstance(axes, int):
        axes = [axes]
    inputs, attrs = {"X": [input]}, {}
    if isinstance(axes, Variable):  # axes read when the program runs
        axes.stop_gradient = True
        inputs["AxesTensor"] = [axes]
    elif any(isinstance(a, Variable) for a in axes):
        inputs["AxesTensorList"] = _host_ints(axes)
    else:
        attrs["axes"] = list(axes)
    out = helper.create_variable_for_type_inference(dtype=input.dtype)
    x_shape = helper.create_variable_for_type_inference(dtype=input.dtype)
    helper.append_op(type="unsqueeze2", inputs=inputs, outputs={"Out": [out], "XShape": [x_shape]}, attrs=attrs)
    return out


@layer
def stack(x, axis=0) -> Variable:
    helper = LayerHelper("stack", **locals())
    if isinstance(x, Variable):
        x = [x]
    if len(x) == 1 and x[0].type == VarType.LOD_TENSOR_ARRAY:  # fluid 1.8: its elements stacked
        from fluidcompat.layers.control_flow import tensor_array_to_tensor

        return tensor_array_to_tensor(x[0], axis=axis, use_stack=True)[0]
    out = helper.create_variable_for_type_inference(x[0].dtype)
    helper.append_op(type="stack", inputs={"X": list(x)}, outputs={"Y": [out]}, attrs={"axis": axis})
    return out


@layer
def expand(x, expand_times, name=None) -> Variable:
    check_variable(x, "x", "expand")
    if not isinstance(expand_times, Variable) and any(
        not isinstance(t, Variable) and int(t) <= 0 for t in expand_times
    ):
        raise ValueError(
            f"expand: each element of expand_times must be a positive int (or a Variable), received "
            f"{list(expand_times)} for variable '{x.name}'"
        )
    helper = LayerHelper("expand", **locals())
    inputs = {"X": [x]}
    attrs = {}
    if isinstance(expand_times, Variable):
        inputs["ExpandTimes"] = [expand_times]
    elif any(isinstance(t, Variable) for t in expand_times):
        inputs["expand_times_tensor"] = _host_ints(expand_times)
        attrs["expand_times"] = _known_ints(expand_times)
    else:
        attrs["expand_times"] = [int(t) for t in expand_times]
    out = helper.create_variable_for_type_inference(x.dtype)
    helper.append_op(type="expand", inputs=inputs, outputs={"Out": [out]}, attrs=attrs)
    return out


@layer
def gather(input, index, overwrite=True) -> Variable:
    helper = LayerHelper("gather", **locals())
    out = helper.create_variable_for_type_inference(input.dtype)
    helper.append_op(
        type="gather", inputs={"X": [input], "Index": [index]}, outputs={"Out": [out]}, attrs={"overwrite": overwrite}
    )
    return out


@layer
def scatter(input, index, updates, name=None, overwrite=True) -> Variable:
    helper = LayerHelper("scatter", **locals())
    out = helper.create_variable_for_type_inference(input.dtype)
    helper.append_op(
        type="scatter",
        inputs={"X": [input], "Ids": [index], "Updates": [updates]},
        outputs={"Out": [out]},
        attrs={"overwrite": overwrite},
    )
    return out


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
def linspace(start, stop, num, dtype) -> Variable:
    helper = LayerHelper("linspace", **locals())
    start, stop = _scalar_var(start, dtype), _scalar_var(stop, dtype)
    num = _scalar_var(num, "int32")
    out = helper.create_variable_for_type_inference(dtype=start.dtype)
    helper.append_op(type="linspace", inputs={"Start": [start], "Stop": [stop], "Num": [num]}, outputs={"Out": [out]})
    return out


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


def _arg_layer(op_type, x, axis):
    helper = LayerHelper(op_type)
    out = helper.create_variable_for_type_inference(VarType.INT64)
    helper.append_op(type=op_type, inputs={"X": [x]}, outputs={"Out": [out]}, attrs={"axis": axis})
    out.stop_gradient = True
    return out


@layer
def argmax(x, axis=0) -> Variable:
    return _arg_layer("arg_max", x, axis)


@layer
def argmin(x, axis=0) -> Variable:
    return _arg_layer("arg_min", x, axis)


@layer
def argsort(input, axis=-1, descending=False, name=None):
    helper = LayerHelper("argsort", **locals())
    out = helper.create_variable_for_type_inference(dtype=input.dtype, stop_gradient=True)
    ids = helper.create_variable_for_type_inference(VarType.INT64, stop_gradient=True)
    helper.append_op(
        type="argsort",
        inputs={"X": [input]},
        outputs={"Out": [out], "Indices": [ids]},
        attrs={"axis": axis, "descending": descending},
    )
    return out, ids


@layer
def sums(input, out=None) -> Variable:
    helper = LayerHelper("sum", **locals())
    if isinstance(input, Variable):
        input = [input]
    for each in input if isinstance(input, (list, tuple)) else [input]:
        check_variable(each, "input", "sums")
    if out is None:
        out = helper.create_variable_for_type_inference(dtype=helper.input_dtype())
    helper.append_op(type="sum", inputs={"X": list(input)}, outputs={"Out": [out]}, attrs={"use_mkldnn": False})
    return out


def sum(x) -> Variable:
    for each in x if isinstance(x, (list, tuple)) else [x]:
        check_variable(each, "x", "sum")
    return sums(x)


@layer
def flatten(x, axis=1, name=None) -> Variable:
    check_variable(x, "x", "flatten")
    if not isinstance(axis, int) or axis > len(x.shape) or axis < 0:
        raise ValueError("The axis should be a int, and in range [0, rank(x)]")
    helper = LayerHelper("flatten", **locals())
    out = helper.create_variable_for_type_inference(x.dtype)
    x_shape = helper.create_variable_for_type_inference(x.dtype)
    helper.append_op(
        type="flatten2", inputs={"X": [x]}, outputs={"Out": [out], "XShape": [x_shape]}, attrs={"axis": axis}
    )
    return out


@layer
def pad(x, paddings, pad_value=0.0, name=None) -> Variable:
    helper = LayerHelper("pad", **locals())
    out = helper.create_variable_for_type_inference(x.dtype)
    helper.append_op(
        type="pad",
        inputs={"X": [x]},
        outputs={"Out": [out]},
        attrs={"paddings": list(paddings), "pad_value": float(pad_value)},
    )
    return out


@layer
def pad2d(input, paddings=(0, 0, 0, 0), mode="constant", pad_value=0.0, data_format="NCHW", name=None) -> Variable:
    if mode not in ("constant", "reflect", "edge"):
        raise ValueError(f"mode should be one of 'constant', 'reflect', 'edge'. Received: mode={mode!r}")
    helper = LayerHelper("pad2d", **locals())
    inputs = {"X": [input]}
    attrs = {"mode": mode, "pad_value": float(pad_value), "data_format": data_format}
    if isinstance(paddings, Variable):
        inputs["Paddings"] = [paddings]
        attrs["paddings"] = []
    else:
        attrs["paddings"] = list(paddings)
    out = helper.create_variable_for_type_inference(input.dtype)
    helper.append_op(type="pad2d", inputs=inputs, outputs={"Out": [out]}, attrs=attrs)
    return out


@layer
def where(condition) -> Variable:
    """Indices of the true elements of ``condition`` (op ``where_index``), shape [N, rank]."""
    helper = LayerHelper("where_index", **locals())
    out = helper.create_variable_for_type_inference(dtype=VarType.INT64)
    helper.append_op(type="where_index", inputs={"Condition": [condition]}, outputs={"Out": [out]})
    return out


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


import builtins as _builtins  # noqa: E402  (``range`` is shadowed by the layer above)

builtins_range = _builtins.range
