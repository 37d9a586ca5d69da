"""``fluid.layers`` indexing and gather / scatter: slice, strided_slice, gather, gather_nd, scatter,
scatter_nd, scatter_nd_add, index_select, index_sample, multiplex, shard_index; and search: where,
nonzero, unique, argmax, argmin, argsort, topk."""

from __future__ import annotations

from typing import List

from fluidcompat.dtypes import VarType, to_vartype
from fluidcompat.framework import Variable, layer
from fluidcompat.layer_helper import LayerHelper, check_dtype, check_variable
from fluidcompat.layers._common import _one
from fluidcompat.layers.creation import _host_ints, _known_ints

__all__ = [
    "slice",
    "strided_slice",
    "gather",
    "gather_nd",
    "scatter",
    "scatter_nd_add",
    "scatter_nd",
    "index_select",
    "index_sample",
    "multiplex",
    "shard_index",
    "where",
    "nonzero",
    "argmax",
    "argmin",
    "argsort",
    "topk",
    "unique",
    "unique_with_counts",
]


# -- slicing ----------------------------------------------------------------------------------------
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
def strided_slice(input, axes, starts, ends, strides):
    """starts / ends / strides: lists of ints, lists with Variables, or Variables (as ``slice``)."""

    inputs, attrs = {"Input": [input]}, {"axes": list(axes)}
    flags = [1] * len(axes)
    for values, name in ((starts, "starts"), (ends, "ends"), (strides, "strides")):
        _bound_inputs(values, name, inputs, attrs, flags)
    attrs["infer_flags"] = flags
    return _one("strided_slice", inputs, attrs)


# -- gather and scatter -----------------------------------------------------------------------------
@layer
def gather(input, index, overwrite=True) -> Variable:
    helper = LayerHelper("gather", **locals())
    out = helper.create_variable_for_type_inference(input.dtype)
    helper.append_op(
        type="gather", inputs={"X": [input], "Index": [index]}, outputs={"Out": [out]}, attrs={"overwrite": overwrite}
    )
    return out


@layer
def gather_nd(input, index, name=None):
    return _one("gather_nd", {"X": [input], "Index": [index]}, name=name)


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


@layer
def scatter_nd_add(ref, index, updates, name=None):
    return _one("scatter_nd_add", {"X": [ref], "Index": [index], "Updates": [updates]}, name=name)


@layer
def scatter_nd(index, updates, shape, name=None):
    from fluidcompat.layers.creation import zeros

    return scatter_nd_add(zeros(shape, updates.dtype), index, updates, name=name)


@layer
def index_select(input, index, dim=0):
    return _one("index_select", {"X": [input], "Index": [index]}, {"dim": dim})


@layer
def index_sample(x, index):
    return _one("index_sample", {"X": [x], "Index": [index]})


@layer
def multiplex(inputs, index):
    return _one("multiplex", {"X": list(inputs), "Ids": [index]})


@layer
def shard_index(input, index_num, nshards, shard_id, ignore_value=-1):
    attrs = {"index_num": index_num, "nshards": nshards, "shard_id": shard_id, "ignore_value": ignore_value}
    return _one("shard_index", {"X": [input]}, attrs)


# -- search -----------------------------------------------------------------------------------------
@layer
def where(condition) -> Variable:
    """Indices of the true elements of ``condition`` (op ``where_index``), shape [N, rank]."""
    helper = LayerHelper("where_index", **locals())
    out = helper.create_variable_for_type_inference(dtype=VarType.INT64)
    helper.append_op(type="where_index", inputs={"Condition": [condition]}, outputs={"Out": [out]})
    return out


@layer
def nonzero(input, as_tuple=False):
    """The indices of the non-zero elements, an int64 [N, rank] tensor (op ``where_index``)."""
    from fluidcompat.layers.indexing import slice as slice_

    out = _one("where_index", {"Condition": [input]}, dtype=VarType.INT64, stop_gradient=True)
    if not as_tuple:
        return out
    return [slice_(out, axes=[1], starts=[k], ends=[k + 1]) for k in range(len(input.shape))]


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
def topk(input, k, name=None):
    helper = LayerHelper("top_k", name=name)
    values = helper.create_variable_for_type_inference(dtype=input.dtype)
    indices = helper.create_variable_for_type_inference(dtype=VarType.INT64)
    inputs = {"X": [input]}
    attrs = {}
    if isinstance(k, Variable):
        inputs["K"] = [k]
    else:
        attrs["k"] = k
    helper.append_op(type="top_k", inputs=inputs, outputs={"Out": [values], "Indices": [indices]}, attrs=attrs)
    values.stop_gradient = True
    indices.stop_gradient = True
    return values, indices


def _unique(op_type, x, dtype, counts):
    check_dtype(dtype, "dtype", ["int32", "int64"], op_type)
    helper = LayerHelper(op_type)
    out = helper.create_variable_for_type_inference(dtype=x.dtype)
    index = helper.create_variable_for_type_inference(dtype=dtype)
    outs = {"Out": [out], "Index": [index]}
    if counts:
        outs["Count"] = [helper.create_variable_for_type_inference(dtype=dtype)]
    helper.append_op(type=op_type, inputs={"X": [x]}, outputs=outs, attrs={"dtype": int(to_vartype(dtype))})
    return (out, index, outs["Count"][0]) if counts else (out, index)


@layer
def unique(x, dtype="int32"):
    return _unique("unique", x, dtype, False)


@layer
def unique_with_counts(x, dtype="int32"):
    return _unique("unique_with_counts", x, dtype, True)
