"""``fluid.layers`` tensor arrays (LOD_TENSOR_ARRAY: a Python list of tensors at run time,
fluidcompat_ops/array.py) and the rank tables that order LoD sequences longest first for DynamicRNN
(fluidcompat_ops/rank.py). fluid 1.8 kept them in ``layers.control_flow``, which hands them out from
here."""

from __future__ import annotations

from fluidcompat import unique_name
from fluidcompat.dtypes import VarType
from fluidcompat.framework import Variable, layer
from fluidcompat.layer_helper import LayerHelper, check_dtype, check_variable

__all__ = [
    "create_array",
    "array_write",
    "array_read",
    "array_length",
    "tensor_array_to_tensor",
    "reorder_lod_tensor_by_rank",
]


def _check_array(array, api: str) -> None:
    if not isinstance(array, Variable) or array.type != VarType.LOD_TENSOR_ARRAY:
        where = f" in {api} Op" if api else ""
        raise TypeError(f"array should be tensor array vairable{where}")


@layer
def create_array(dtype) -> Variable:
    """An empty tensor array (``LOD_TENSOR_ARRAY`` variable ``array_N.out``)."""
    helper = LayerHelper("array", **locals())
    return helper.create_variable(name=f"{helper.name}.out", type=VarType.LOD_TENSOR_ARRAY, dtype=dtype)


@layer
def array_write(x, i, array=None) -> Variable:
    """``array[i] = x`` (op ``write_to_array``); with no ``array``, a new one holding ``x`` at ``i``."""
    check_variable(i, "i", "array_write")
    check_dtype(i.dtype, "i", ["int64"], "array_write")
    check_variable(x, "x", "array_write")
    helper = LayerHelper("array_write", **locals())
    if array is not None:
        _check_array(array, "array_write")
    else:
        array = helper.create_variable(name=f"{helper.name}.out", type=VarType.LOD_TENSOR_ARRAY, dtype=x.dtype)
    helper.append_op(type="write_to_array", inputs={"X": [x], "I": [i]}, outputs={"Out": [array]})
    return array


@layer
def array_read(array, i) -> Variable:
    """``array[i]`` (op ``read_from_array``)."""
    _check_array(array, "")
    check_variable(i, "i", "array_read")
    check_dtype(i.dtype, "i", ["int64"], "array_read")
    helper = LayerHelper("array_read", **locals())
    out = helper.create_variable_for_type_inference(dtype=array.dtype)
    helper.append_op(type="read_from_array", inputs={"X": [array], "I": [i]}, outputs={"Out": [out]})
    return out


@layer
def array_length(array) -> Variable:
    """The number of elements of ``array``, an int64 tensor of shape [1] (op ``lod_array_length``)."""
    _check_array(array, "array_length")
    helper = LayerHelper("array_length", **locals())
    out = helper.create_variable_for_type_inference(dtype="int64")
    out.stop_gradient = True
    helper.append_op(type="lod_array_length", inputs={"X": [array]}, outputs={"Out": [out]})
    return out


@layer
def tensor_array_to_tensor(input, axis=1, name=None, use_stack=False):
    """The array's elements concatenated (or, with ``use_stack``, stacked) along ``axis``, and an int32
    tensor of each element's size along ``axis``."""
    _check_array(input, "tensor_array_to_tensor")
    helper = LayerHelper("tensor_array_to_tensor", **locals())
    out = helper.create_variable_for_type_inference(dtype=helper.input_dtype())
    out_index = helper.create_variable_for_type_inference(dtype="int32")
    helper.append_op(
        type="tensor_array_to_tensor",
        inputs={"X": [input]},
        outputs={"Out": [out], "OutIndex": [out_index]},
        attrs={"axis": axis, "use_stack": use_stack},
    )
    return out, out_index


# -- rank tables: LoD sequences ordered longest first, and split into time steps --------------------
def lod_rank_table(x, level=0):
    """The sequences of LoD level ``level`` of ``x`` ranked longest first (ties in order): a
    ``LOD_RANK_TABLE`` variable for ``max_sequence_len`` and ``reorder_lod_tensor_by_rank``."""
    check_variable(x, "x", "lod_rank_table")
    helper = LayerHelper("lod_rank_table")
    table = helper.create_variable(type=VarType.LOD_RANK_TABLE, name=unique_name.generate("lod_rank_table"))
    helper.append_op(type="lod_rank_table", inputs={"X": [x]}, outputs={"Out": [table]}, attrs={"level": level})
    return table


def max_sequence_len(rank_table):
    """The longest sequence's length in ``rank_table`` ([1] int64)."""
    _check_rank_table(rank_table, "max_sequence_len")
    helper = LayerHelper("max_seqence_len")
    res = helper.create_variable_for_type_inference(dtype="int64")
    helper.append_op(type="max_sequence_len", inputs={"RankTable": [rank_table]}, outputs={"Out": [res]})
    return res


def _check_rank_table(rank_table, api):
    if not isinstance(rank_table, Variable) or rank_table.type != VarType.LOD_RANK_TABLE:
        raise TypeError(
            f"The type of 'rank_table' in {api} must be a LOD_RANK_TABLE Variable (from "
            f"fluid.layers.control_flow.lod_rank_table), but received {rank_table!r}. "
        )


@layer
def reorder_lod_tensor_by_rank(x, rank_table):
    """``x``'s top-level sequences (a plain tensor's rows) in ``rank_table``'s order, longest first;
    the LoD follows them."""
    check_variable(x, "x", "reorder_lod_tensor_by_rank")
    _check_rank_table(rank_table, "reorder_lod_tensor_by_rank")
    helper = LayerHelper("reorder_lod_tensor_by_rank")
    out = helper.create_variable_for_type_inference(dtype=x.dtype)
    helper.append_op(
        type="reorder_lod_tensor_by_rank", inputs={"X": [x], "RankTable": [rank_table]}, outputs={"Out": [out]}
    )
    return out


def lod_tensor_to_array(x, table):
    """``x``'s sequences split into time steps (a tensor array): step t holds the t-th row of each
    sequence still running, in ``table``'s order (longest first)."""
    check_variable(x, "x", "lod_tensor_to_array")
    _check_rank_table(table, "lod_tensor_to_array")
    helper = LayerHelper("lod_tensor_to_array")
    array = helper.create_variable(
        name=unique_name.generate("lod_tensor_to_array"), type=VarType.LOD_TENSOR_ARRAY, dtype=x.dtype
    )
    helper.append_op(type="lod_tensor_to_array", inputs={"X": [x], "RankTable": [table]}, outputs={"Out": [array]})
    return array


def array_to_lod_tensor(x, table):
    """The time steps of the tensor array ``x`` put back into ``table``'s sequences, in their order,
    as a LoD tensor."""
    _check_rank_table(table, "array_to_lod_tensor")
    helper = LayerHelper("array_to_lod_tensor")
    tmp = helper.create_variable_for_type_inference(dtype=x.dtype)
    helper.append_op(type="array_to_lod_tensor", inputs={"X": [x], "RankTable": [table]}, outputs={"Out": [tmp]})
    return tmp


def shrink_memory(x, i, table):
    """``x``'s first rows, one per sequence of ``table`` still running at step ``i``."""
    check_variable(x, "x", "shrink_memory")
    _check_rank_table(table, "shrink_memory")
    helper = LayerHelper("shrink_memory")
    out = helper.create_variable_for_type_inference(dtype=x.dtype)
    helper.append_op(
        type="shrink_rnn_memory", inputs={"X": [x], "I": [i], "RankTable": [table]}, outputs={"Out": [out]}
    )
    return out
