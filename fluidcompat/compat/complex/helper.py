"""``paddle.complex.helper``: what a complex layer checks of its operands."""

from __future__ import annotations

from typing import Optional, Sequence, Tuple

from fluidcompat.complex_variable import ComplexVariable
from fluidcompat.framework import Variable

__all__ = ["is_complex", "is_real", "complex_variable_exists", "parts"]


def is_complex(x) -> bool:
    """Whether ``x`` is a ComplexVariable."""
    return isinstance(x, ComplexVariable)


def is_real(x) -> bool:
    """Whether ``x`` is a (real) Variable, static or dygraph."""
    return isinstance(x, Variable)


def complex_variable_exists(inputs: Sequence, layer_name: str) -> None:
    """Raise ValueError (fluid 1.8's text) unless one of ``inputs`` is a ComplexVariable."""
    if any(is_complex(x) for x in inputs):
        return
    opening = "At least one inputs of layer complex." if len(inputs) > 1 else "The input of layer complex."
    raise ValueError(f"{opening}{layer_name}() must be ComplexVariable, please use the layer for real numher instead.")


def parts(x) -> Tuple[object, Optional[object]]:
    """``(real, imag)`` of a ComplexVariable; ``(x, None)`` of a real operand."""
    return (x.real, x.imag) if is_complex(x) else (x, None)
