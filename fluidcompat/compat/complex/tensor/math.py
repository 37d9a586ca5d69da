"""Complex elementwise arithmetic, ``kron``, ``trace`` and ``sum``.

``x`` and ``y`` broadcast as fluid's elementwise layers do (``y``'s shape a run of ``x``'s dims from
``axis``); a real operand has no imaginary part, so its terms are left out rather than computed as
zeros (but the result's imaginary part has ``x``'s shape, as its real part does).
"""

from __future__ import annotations

from fluidcompat import layers
from fluidcompat.compat.complex.helper import complex_variable_exists, parts
from fluidcompat.complex_variable import ComplexVariable

__all__ = ["elementwise_add", "elementwise_sub", "elementwise_mul", "elementwise_div", "kron", "trace", "sum"]


def _add_or_sub(op, layer_name, x, y, axis, name):
    complex_variable_exists([x, y], layer_name)
    (a, b), (c, d) = parts(x), parts(y)
    real = op(a, c, axis=axis, name=name)
    if b is not None and d is not None:
        imag = op(b, d, axis=axis, name=name)
    elif b is not None:  # y is real: x's imaginary part, unchanged
        imag = layers.assign(b)
    else:  # x is real: 0 (broadcast to x) +/- y's imaginary part
        imag = op(layers.zeros_like(a), d, axis=axis, name=name)
    return ComplexVariable(real, imag)


def elementwise_add(x, y, axis=-1, name=None):
    """``x + y``, at least one of them a ComplexVariable."""
    return _add_or_sub(layers.elementwise_add, "elementwise_add", x, y, axis, name)


def elementwise_sub(x, y, axis=-1, name=None):
    """``x - y``, at least one of them a ComplexVariable."""
    return _add_or_sub(layers.elementwise_sub, "elementwise_sub", x, y, axis, name)


def elementwise_mul(x, y, axis=-1, name=None):
    """``x * y``: ``(a + bi)(c + di) = (ac - bd) + (ad + bc)i``."""
    complex_variable_exists([x, y], "elementwise_mul")
    (a, b), (c, d) = parts(x), parts(y)
    mul = layers.elementwise_mul
    if b is not None and d is not None:
        real = layers.elementwise_sub(mul(a, c, axis=axis), mul(b, d, axis=axis), name=name)
        imag = layers.elementwise_add(mul(a, d, axis=axis), mul(b, c, axis=axis), name=name)
    elif b is not None:
        real, imag = mul(a, c, axis=axis, name=name), mul(b, c, axis=axis, name=name)
    else:
        real, imag = mul(a, c, axis=axis, name=name), mul(a, d, axis=axis, name=name)
    return ComplexVariable(real, imag)


def elementwise_div(x, y, axis=-1, name=None):
    """``x / y``: ``x * conj(y) / |y|^2``."""
    complex_variable_exists([x, y], "elementwise_div")
    (a, b), (c, d) = parts(x), parts(y)
    mul, div = layers.elementwise_mul, layers.elementwise_div
    if d is None:  # a real divisor divides both parts
        return ComplexVariable(div(a, c, axis=axis, name=name), div(b, c, axis=axis, name=name))
    norm = layers.elementwise_add(mul(c, c), mul(d, d))  # |y|^2, y's shape
    if b is None:  # a / (c + di) = (ac - adi) / |y|^2
        real_num, imag_num = mul(a, c, axis=axis), layers.scale(mul(a, d, axis=axis), scale=-1.0)
    else:  # (a + bi)(c - di) = (ac + bd) + (bc - ad)i
        real_num = layers.elementwise_add(mul(a, c, axis=axis), mul(b, d, axis=axis))
        imag_num = layers.elementwise_sub(mul(b, c, axis=axis), mul(a, d, axis=axis))
    return ComplexVariable(
        div(real_num, norm, axis=axis, name=name),
        div(imag_num, norm, axis=axis, name=name),
    )


def kron(x, y, name=None):
    """The Kronecker product of ``x`` and ``y``, at least one of them a ComplexVariable."""
    complex_variable_exists([x, y], "kron")
    (a, b), (c, d) = parts(x), parts(y)
    k = layers.kron
    if b is not None and d is not None:
        real = layers.elementwise_sub(k(a, c), k(b, d), name=name)
        imag = layers.elementwise_add(k(a, d), k(b, c), name=name)
    elif b is not None:
        real, imag = k(a, c, name=name), k(b, c, name=name)
    else:
        real, imag = k(a, c, name=name), k(a, d, name=name)
    return ComplexVariable(real, imag)


def trace(input, offset=0, dim1=0, dim2=1, name=None):
    """The sum of the diagonal (``offset`` from the main one) of the planes ``dim1`` x ``dim2``."""
    complex_variable_exists([input], "trace")
    return ComplexVariable(
        layers.trace(input.real, offset, dim1, dim2, name=name),
        layers.trace(input.imag, offset, dim1, dim2, name=name),
    )


def sum(input, dim=None, keep_dim=False, name=None):
    """The sum of the elements over ``dim`` (all of them when None)."""
    complex_variable_exists([input], "sum")
    return ComplexVariable(
        layers.reduce_sum(input.real, dim=dim, keep_dim=keep_dim, name=name),
        layers.reduce_sum(input.imag, dim=dim, keep_dim=keep_dim, name=name),
    )
