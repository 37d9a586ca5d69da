"""``fluid.layers`` shape manipulation: shape, rank, size, cast, reshape, transpose and t, flatten,
squeeze / unsqueeze, concat / split, stack / unstack, expand / expand_as, pad, pad2d, crop,
flip / reverse / roll, tril / triu, diag_embed, meshgrid; eye (an identity, reshaped and expanded
to ``batch_shape``)."""

from __future__ import annotations

from typing import List

import numpy as np

from fluidcompat import framework
from fluidcompat.dtypes import VarType, to_vartype
from fluidcompat.framework import Variable, layer
from fluidcompat.layer_helper import LayerHelper, check_dtype, check_variable
from fluidcompat.layers._common import _one
from fluidcompat.layers.creation import _host_ints, _known_ints, builtins_range

__all__ = [
    "eye",
    "shape",
    "rank",
    "size",
    "cast",
    "reshape",
    "flatten",
    "squeeze",
    "unsqueeze",
    "transpose",
    "t",
    "concat",
    "split",
    "stack",
    "unstack",
    "meshgrid",
    "expand",
    "expand_as",
    "pad",
    "pad2d",
    "pad_constant_like",
    "crop",
    "crop_tensor",
    "flip",
    "reverse",
    "roll",
    "tril",
    "triu",
    "diag_embed",
]


# -- shape and dtype --------------------------------------------------------------------------------
@layer
def shape(input) -> Variable:
    """The dims of ``input`` as an int32 tensor that lives on the CPU (op ``shape``)."""
    check_variable(input, "input", "shape")
    helper = LayerHelper("shape", **locals())
    out = helper.create_variable_for_type_inference(dtype=VarType.INT32)
    helper.append_op(type="shape", inputs={"Input": [input]}, outputs={"Out": [out]})
    return out


@layer
def rank(input):
    """The number of dimensions of ``input``: a 0-D int32 constant (an assign op, as in fluid 1.8.5)."""
    from fluidcompat.layers.creation import assign

    check_variable(input, "input", "rank")
    return assign(np.array(len(input.shape), "int32"))


@layer
def size(input):
    return _one("size", {"Input": [input]}, dtype=VarType.INT64)


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


# -- reshaping, transposing -------------------------------------------------------------------------
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
def t(input, name=None):
    """The transpose of a tensor of at most 2 dimensions."""

    if len(input.shape) > 2:
        raise ValueError(
            f"Input(input) only support N-D (N<=2) tensor, but received length of Input(input) is {len(input.shape)}. "
            "Perhaps you can use paddle.tensor.transpose() instead."
        )
    if len(input.shape) < 2:
        return input
    return transpose(input, [1, 0], name=name)


# -- joining and splitting --------------------------------------------------------------------------
@layer
def concat(input, axis=0, name=None) -> Variable:
    if isinstance(input, Variable):
        input = [input]
    elif isinstance(input, (list, tuple)):
        for i, each in enumerate(input):
            check_variable(each, f"input[{i}]", "concat")
    if len(input) == 1 and input[0].type == VarType.LOD_TENSOR_ARRAY:  # fluid 1.8: its elements joined
        from fluidcompat.layers.tensor_array import tensor_array_to_tensor

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
def stack(x, axis=0) -> Variable:
    helper = LayerHelper("stack", **locals())
    if isinstance(x, Variable):
        x = [x]
    if len(x) == 1 and x[0].type == VarType.LOD_TENSOR_ARRAY:  # fluid 1.8: its elements stacked
        from fluidcompat.layers.tensor_array import tensor_array_to_tensor

        return tensor_array_to_tensor(x[0], axis=axis, use_stack=True)[0]
    out = helper.create_variable_for_type_inference(x[0].dtype)
    helper.append_op(type="stack", inputs={"X": list(x)}, outputs={"Y": [out]}, attrs={"axis": axis})
    return out


@layer
def unstack(x, axis=0, num=None):
    helper = LayerHelper("unstack")
    n = x.shape[axis] if num is None else num
    if n is None or n < 0:
        raise ValueError(f"unstack: the size of axis {axis} of x is unknown; pass num. Received: shape={x.shape}")
    outs = [helper.create_variable_for_type_inference(dtype=x.dtype) for _ in range(n)]
    helper.append_op(type="unstack", inputs={"X": [x]}, outputs={"Y": outs}, attrs={"axis": axis, "num": n})
    return outs


@layer
def meshgrid(input, name=None):
    helper = LayerHelper("meshgrid", name=name)
    outs = [helper.create_variable_for_type_inference(dtype=v.dtype) for v in input]
    helper.append_op(type="meshgrid", inputs={"X": list(input)}, outputs={"Out": outs})
    return outs


# -- expanding, padding, cropping -------------------------------------------------------------------
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
def expand_as(x, target_tensor, name=None):
    return _one("expand_as", {"X": [x], "target_tensor": [target_tensor]}, name=name)


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
def pad_constant_like(x, y, pad_value=0.0, name=None):
    return _one("pad_constant_like", {"X": [x], "Y": [y]}, {"pad_value": float(pad_value)}, y.dtype, name=name)


@layer
def crop(x, shape=None, offsets=None, name=None):
    """fluid 1.8's deprecated crop (op ``crop``): ``shape`` a list, or a Variable whose shape (not
    its values) is the output's; ``offsets`` a list or an int Variable."""
    if not isinstance(shape, (list, tuple, Variable)):
        raise TypeError(
            f"The type of 'shape' in crop must be (<class 'list'>, <class 'tuple'>, {Variable!r}), "
            f"but received {type(shape)!r}. "
        )
    ins, attrs = {"X": [x]}, {}
    if isinstance(shape, Variable):
        ins["Y"] = [shape]
    else:
        attrs["shape"] = list(shape)
    if offsets is None:
        offsets = [0] * len(x.shape)
    if isinstance(offsets, Variable):
        ins["Offsets"] = [offsets]
    else:
        attrs["offsets"] = list(offsets)
    return _one("crop", ins, attrs, name=name)


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


# -- reordering -------------------------------------------------------------------------------------
@layer
def flip(input, dims, name=None):
    return _one("flip", {"X": [input]}, {"dims": list(dims)}, name=name)


@layer
def reverse(x, axis):
    """``x`` reversed along ``axis`` (an int or a list; op ``reverse``)."""
    return _one("reverse", {"X": [x]}, {"axis": [axis] if isinstance(axis, int) else list(axis)})


@layer
def roll(input, shifts, dims=None):
    """``input`` rolled by ``shifts`` along ``dims`` (the flattened tensor when None). As fluid 1.8
    built it: a reshape to [-1, 1] first when ``dims`` is None, and the roll's output reshaped in place
    to the input's shape (its op list and profiler rows)."""

    shifts = [shifts] if isinstance(shifts, int) else list(shifts)
    dims = None if dims is None else [dims] if isinstance(dims, int) else list(dims)
    if framework.in_dygraph_mode():
        return _one("roll", {"X": [input]}, {"shifts": shifts, "dims": dims or []})
    origin_shape = list(input.shape)
    if dims is None:
        input, dims = reshape(input, [-1, 1]), [0]
    out = _one("roll", {"X": [input]}, {"shifts": shifts, "dims": dims})
    return reshape(out, origin_shape, inplace=True)


@layer
def tril(input, diagonal=0, name=None):
    return _one("tril_triu", {"X": [input]}, {"diagonal": diagonal, "lower": True}, name=name, helper_name="tril")


@layer
def triu(input, diagonal=0, name=None):
    return _one("tril_triu", {"X": [input]}, {"diagonal": diagonal, "lower": False}, name=name, helper_name="triu")


@layer
def diag_embed(input, offset=0, dim1=-2, dim2=-1):
    """``input`` (a Variable, or a numpy array, as the docs' example gives it) on diagonals."""
    if isinstance(input, np.ndarray):
        from fluidcompat.layers.creation import assign

        input = assign(input)
    return _one("diag_embed", {"Input": [input]}, {"offset": offset, "dim1": dim1, "dim2": dim2})


@layer
def eye(num_rows, num_columns=None, batch_shape=None, dtype="float32"):
    helper = LayerHelper("eye")
    out = helper.create_variable_for_type_inference(dtype=dtype)
    out.stop_gradient = True
    cols = num_rows if num_columns is None else num_columns
    helper.append_op(
        type="eye",
        outputs={"Out": [out]},
        attrs={"num_rows": num_rows, "num_columns": cols, "dtype": int(to_vartype(dtype))},
    )
    if batch_shape:
        batch = list(batch_shape)
        out = reshape(out, [1] * len(batch) + [num_rows, cols])
        out = expand(out, batch + [1, 1])
        out.stop_gradient = True
    return out
