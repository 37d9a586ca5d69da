"""The numpy names of fluid's time that numpy 2 no longer has, for the scripts ``fluidcompat run`` runs.

fluid 1.8 ran on numpy 1.1x, and its scripts wrote ``dtype=np.float``, ``np.int``, ``np.NaN``,
``np.product(shape)`` and the like: under numpy 2 each is an AttributeError (``np.float`` was the
builtin ``float``; numpy 1.20 deprecated the builtin aliases, 1.24 and 2.0 removed them and the other
names here). ``restore()`` puts back those that are missing, each as what it was in numpy 1.19; names
numpy still has (``np.bool``, ``np.long``, ``np.row_stack``) are left as they are. ``np.fromstring``
gets its binary mode back (numpy 2 raises for it).

``float(a)``, ``int(a)`` and ``'%f' % a`` of an array of one element with ``ndim > 0`` (a fetched
value, a dataset row) gave its number then; numpy 1.25 to 2.3 still do, with a DeprecationWarning that
``restore()`` silences (fluid 1.8 on numpy 1.19 printed nothing), and numpy 2.4 raises TypeError for
it, which is why fluidcompat requires numpy < 2.4. ``np.array`` of ragged rows (``[[1], [2, 3]]``, or
numbers mixed with one-element arrays) makes an object array again, as before numpy 1.24.
"""

from __future__ import annotations

import warnings

import numpy as np

# numpy 1.25's DeprecationWarning for float() / int() of an array of one element with ndim > 0
_SCALAR_CONVERSION_WARNING = r"Conversion of an array with ndim > 0 to a scalar is deprecated"


def _in1d(ar1, ar2, assume_unique=False, invert=False, **kwargs):
    """``np.in1d``: ``np.isin`` over the flattened first array (a 1-D result)."""
    return np.isin(np.asarray(ar1).ravel(), ar2, assume_unique=assume_unique, invert=invert, **kwargs)


def _asfarray(a, dtype=np.float64):
    """``np.asfarray``: an array of a floating type (float64 unless ``dtype`` is one)."""
    dtype = np.dtype(dtype)
    if not np.issubdtype(dtype, np.inexact):
        dtype = np.dtype(np.float64)
    return np.asarray(a, dtype=dtype)


def _msort(a):
    """``np.msort``: sorted along the first axis."""
    return np.sort(a, axis=0)


def _fromstring_taking_bytes(fromstring):
    """``np.fromstring`` that reads bytes in its binary mode (``sep=''``) as numpy 1.19 did: a new,
    writable array of the bytes (numpy 2 refuses the binary mode; fluid-era readers decode images and
    records with it). Text mode (a ``sep``) is numpy's own."""

    def fromstring_(string, dtype=float, count=-1, *, sep="", **kwargs):
        if sep == "" and isinstance(string, (bytes, bytearray, memoryview)):
            return np.frombuffer(string, dtype=dtype, count=count).copy()
        return fromstring(string, dtype=dtype, count=count, sep=sep, **kwargs)

    fromstring_.__doc__ = fromstring.__doc__
    fromstring_.legacy = True
    return fromstring_


def _refuses_binary_fromstring() -> bool:
    if getattr(np.fromstring, "legacy", False):
        return False
    try:
        np.fromstring(b"\x00", dtype=np.uint8)
        return False
    except ValueError:
        return True


def _array_of_ragged_rows(array):
    """``np.array`` that makes an object array of ragged nested sequences (rows of different lengths,
    a mix of numbers and one-element arrays) as numpy before 1.24 did, where numpy now raises
    ValueError; what ``np.array`` accepts is its own. Only without an explicit ``dtype``."""

    def array_(obj, *args, **kwargs):
        try:
            return array(obj, *args, **kwargs)
        except ValueError as e:
            if args or "dtype" in kwargs or "inhomogeneous" not in str(e):
                raise
            return array(obj, dtype=object, **kwargs)

    array_.__doc__ = array.__doc__
    array_.legacy = True
    return array_


def _names() -> dict:
    return {
        # builtin aliases (numpy 1.20 deprecated, 1.24 removed)
        "float": float,
        "int": int,
        "object": object,
        "str": str,
        "complex": complex,
        "unicode": str,
        # scalar type aliases (numpy 2.0 removed)
        "float_": np.float64,
        "complex_": np.complex128,
        "cfloat": np.complex128,
        "singlecomplex": np.complex64,
        "longfloat": np.longdouble,
        "longcomplex": np.clongdouble,
        "clongfloat": np.clongdouble,
        "string_": np.bytes_,
        "unicode_": np.str_,
        "bool8": np.bool_,
        "int0": np.intp,
        "uint0": np.uintp,
        "object0": np.object_,
        "str0": np.str_,
        "bytes0": np.bytes_,
        "void0": np.void,
        # constants (numpy 2.0 removed)
        "NaN": np.nan,
        "NAN": np.nan,
        "Inf": np.inf,
        "Infinity": np.inf,
        "infty": np.inf,
        "PINF": np.inf,
        "NINF": -np.inf,
        "PZERO": 0.0,
        "NZERO": -0.0,
        # functions (numpy 2.0 removed, 2.4 for in1d and trapz)
        "alltrue": np.all,
        "sometrue": np.any,
        "product": np.prod,
        "cumproduct": np.cumprod,
        "round_": np.round,
        "asfarray": _asfarray,
        "msort": _msort,
        "mat": np.asmatrix,
        "asscalar": lambda a: a.item(),  # (numpy 1.23 removed)
        "in1d": _in1d,
        "trapz": getattr(np, "trapezoid", None),
    }


def restore() -> list:
    """Put the missing names back into numpy and silence its warning for ``float()`` of a one-element
    array; returns the names it added."""
    warnings.filterwarnings("ignore", message=_SCALAR_CONVERSION_WARNING, category=DeprecationWarning)
    added = []
    for name, value in _names().items():
        if value is not None and name not in np.__dict__:  # (not hasattr: numpy warns on some names)
            setattr(np, name, value)
            added.append(name)
    if _refuses_binary_fromstring():
        np.fromstring = _fromstring_taking_bytes(np.fromstring)
        added.append("fromstring (binary mode)")
    if not getattr(np.array, "legacy", False) and _refuses_ragged_rows():
        np.array = _array_of_ragged_rows(np.array)
        added.append("array (ragged rows)")
    return added


def _refuses_ragged_rows() -> bool:
    try:
        np.array([[1], [1, 2]])
        return False
    except ValueError:
        return True
