"""Fluid's data types (``core.VarDesc.VarType``) and conversions between their spellings.

Torch-free: the torch dtype table lives in ``fluidcompat_ops.registry``.
"""

from __future__ import annotations

import enum

import numpy as np


class FluidEnum(enum.IntEnum):
    """An enum of fluid's core, printed as pybind printed it: ``VarType.FP32``, ``AttrType.INT``."""

    def __str__(self) -> str:
        return f"{type(self).__name__}.{self.name}"

    __repr__ = __str__


class VarType(FluidEnum):
    """``fluid.core.VarDesc.VarType``: element types and variable kinds, with fluid's codes."""

    BOOL = 0
    INT16 = 1
    INT32 = 2
    INT64 = 3
    FP16 = 4
    FP32 = 5
    FP64 = 6
    LOD_TENSOR = 7
    SELECTED_ROWS = 8
    FEED_MINIBATCH = 9
    FETCH_LIST = 10
    STEP_SCOPES = 11
    LOD_RANK_TABLE = 12
    LOD_TENSOR_ARRAY = 13
    PLACE_LIST = 14
    READER = 15
    RAW = 17
    TUPLE = 18
    SIZE_T = 19
    UINT8 = 20
    INT8 = 21


_NP_NAMES = {
    VarType.BOOL: "bool",
    VarType.INT16: "int16",
    VarType.INT32: "int32",
    VarType.INT64: "int64",
    VarType.FP16: "float16",
    VarType.FP32: "float32",
    VarType.FP64: "float64",
    VarType.UINT8: "uint8",
    VarType.INT8: "int8",
}
_FROM_NAME = {v: k for k, v in _NP_NAMES.items()}

# Names used by fluid's C++ debug strings (``DebugStringEx``) for each element type.
CPP_NAMES = {
    VarType.BOOL: "bool",
    VarType.INT16: "int16_t",
    VarType.INT32: "int",
    VarType.INT64: "int64_t",
    VarType.FP16: "float16",
    VarType.FP32: "float",
    VarType.FP64: "double",
    VarType.UINT8: "uint8_t",
    VarType.INT8: "int8_t",
}

INT_TYPES = frozenset({VarType.INT8, VarType.UINT8, VarType.INT16, VarType.INT32, VarType.INT64})
FLOAT_TYPES = frozenset({VarType.FP16, VarType.FP32, VarType.FP64})


def to_vartype(dtype) -> VarType:
    """Map a dtype given any way fluid accepted it ('float32', np.float32, VarType) to VarType."""
    if isinstance(dtype, VarType):
        return dtype
    if isinstance(dtype, int) and not isinstance(dtype, bool):
        return VarType(dtype)
    if isinstance(dtype, str):
        found = _FROM_NAME.get(dtype)
        if found is None:
            # numpy's reading of the name, as fluid's (np.dtype): 'float' is float64, 'int' int64
            try:
                found = _FROM_NAME.get(np.dtype(dtype).name)
            except TypeError:
                found = None
        if found is None:
            raise TypeError(f"Unsupported data type: {dtype!r}. Expected one of {sorted(_NP_NAMES.values())}")
        return found
    try:
        name = np.dtype(dtype).name
    except TypeError:
        raise TypeError(f"Unsupported data type: {dtype!r}") from None
    if name not in _FROM_NAME:
        raise TypeError(f"Unsupported data type: {dtype!r}")
    return _FROM_NAME[name]


def as_long_long(a: np.ndarray) -> np.ndarray:
    """``a`` with int64 viewed as C ``long long``: the type fluid's tensors handed numpy, whose arrays
    print ``dtype=int64`` (numpy's default ``long`` prints none)."""
    if a.dtype.kind == "i" and a.dtype.itemsize == 8 and a.dtype.char != "q":
        return a.view(np.longlong)
    return a


def np_name(dtype) -> str:
    """The numpy name of a dtype ('float32'); fluid's ``convert_dtype``."""
    return _NP_NAMES[to_vartype(dtype)]


def np_dtype(dtype) -> np.dtype:
    return np.dtype(np_name(dtype))


def convert_np_dtype_to_dtype_(np_dtype) -> VarType:
    """fluid's ``framework.convert_np_dtype_to_dtype_``: the VarType of a numpy dtype (ValueError,
    fluid's text, for one fluid had none for)."""
    dtype = np.dtype(np_dtype)
    found = _FROM_NAME.get(dtype.name)
    if found is None:
        raise ValueError(f"Not supported numpy dtype {dtype}")
    return found


def dtype_is_floating(dtype) -> bool:
    """Whether a dtype (a VarType or a numpy dtype) is floating point."""
    if not isinstance(dtype, VarType):
        dtype = convert_np_dtype_to_dtype_(dtype)
    return dtype in (VarType.FP16, VarType.FP32, VarType.FP64)
