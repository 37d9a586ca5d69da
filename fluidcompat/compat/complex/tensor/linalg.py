"""Complex ``matmul``."""

from __future__ import annotations

from fluidcompat import layers
from fluidcompat.compat.complex.helper import complex_variable_exists, parts
from fluidcompat.complex_variable import ComplexVariable

__all__ = ["matmul"]


def matmul(x, y, transpose_x=False, transpose_y=False, alpha=1.0, name=None):
    """``alpha * op(x) @ op(y)`` (fluid.layers.matmul's rules), at least one of them a ComplexVariable:
    ``(A + Bi)(C + Di) = (AC - BD) + (AD + BC)i``."""
    complex_variable_exists([x, y], "matmul")
    (a, b), (c, d) = parts(x), parts(y)

    def mm(p, q):
        return layers.matmul(p, q, transpose_x, transpose_y, alpha)

    if b is not None and d is not None:
        return ComplexVariable(layers.elementwise_sub(mm(a, c), mm(b, d)), layers.elementwise_add(mm(a, d), mm(b, c)))
    if b is not None:
        return ComplexVariable(mm(a, c), mm(b, c))
    return ComplexVariable(mm(a, c), mm(a, d))
