"""Data layers: ``fluid.data`` and ``fluid.layers.data``."""

from __future__ import annotations

from fluidcompat.dtypes import VarType
from fluidcompat.framework import Variable, default_main_program

__all__ = ["data"]


def _check_name_shape(name, shape, api):
    if not isinstance(name, (bytes, str)):
        raise TypeError(
            f"The type of 'name' in {api} must be (<class 'bytes'>, <class 'str'>), but received {type(name)}. "
        )
    if not isinstance(shape, (list, tuple)):
        raise TypeError(
            f"The type of 'shape' in {api} must be (<class 'list'>, <class 'tuple'>), but received {type(shape)}. "
        )


def data(
    name, shape, append_batch_size=True, dtype="float32", lod_level=0, type=VarType.LOD_TENSOR, stop_gradient=True
) -> Variable:
    """``fluid.layers.data``: prepends a -1 batch dim unless a dim is None or negative.

    Its feeds are not checked against the declared shape (as in fluid 1.8).
    """
    _check_name_shape(name, shape, "data")
    shape = list(shape)
    for i, d in enumerate(shape):
        if d is None:
            shape[i] = -1
            append_batch_size = False
        elif d < 0:
            append_batch_size = False
    if append_batch_size:
        shape = [-1] + shape
    return (
        default_main_program()
        .global_block()
        .create_var(
            name=name,
            shape=shape,
            dtype=dtype,
            type=type,
            stop_gradient=stop_gradient,
            lod_level=lod_level,
            is_data=True,
            need_check_feed=False,
        )
    )


def fluid_data(name, shape, dtype="float32", lod_level=0) -> Variable:
    """``fluid.data``: the shape as given (None means -1); feeds are checked against it."""
    _check_name_shape(name, shape, "data")
    shape = [-1 if d is None else d for d in shape]
    return (
        default_main_program()
        .global_block()
        .create_var(
            name=name,
            shape=shape,
            dtype=dtype,
            type=VarType.LOD_TENSOR,
            stop_gradient=True,
            lod_level=lod_level,
            is_data=True,
            need_check_feed=True,
        )
    )
