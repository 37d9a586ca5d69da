"""Complex ``reshape`` and ``transpose``: both parts alike."""

from __future__ import annotations

from fluidcompat import layers
from fluidcompat.compat.complex.helper import complex_variable_exists
from fluidcompat.complex_variable import ComplexVariable

__all__ = ["reshape", "transpose"]


def reshape(x, shape, inplace=False, name=None):
    """``x`` with the new ``shape`` (fluid.layers.reshape's rules: 0 keeps a dim, -1 is inferred).

    ``inplace``: ``x``'s own parts are replaced and ``x`` returned (its ``shape`` stays the one it was
    made with, as in fluid 1.8)."""
    complex_variable_exists([x], "reshape")
    real = layers.reshape(x.real, shape, inplace=inplace, name=name)
    imag = layers.reshape(x.imag, shape, inplace=inplace, name=name)
    if inplace:
        x.real, x.imag = real, imag
        return x
    return ComplexVariable(real, imag)


def transpose(x, perm, name=None):
    """``x`` with its dims permuted by ``perm``."""
    complex_variable_exists([x], "transpose")
    return ComplexVariable(layers.transpose(x.real, perm, name), layers.transpose(x.imag, perm, name))
