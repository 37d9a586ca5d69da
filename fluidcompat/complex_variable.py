"""``fluid.ComplexVariable``: a complex tensor held as two real Variables, as fluid 1.8 had it."""

from __future__ import annotations

from fluidcompat.dtypes import VarType

__all__ = ["ComplexVariable"]


class ComplexVariable:
    """A complex value as its ``real`` and ``imag`` Variables (same shape and dtype)."""

    def __init__(self, real, imag):
        if real.shape != imag.shape:
            raise ValueError(f"The real and imag parts must have the same shape. Received: {real.shape}, {imag.shape}")
        if real.dtype != imag.dtype:
            raise ValueError(f"The real and imag parts must have the same dtype. Received: {real.dtype}, {imag.dtype}")
        self.real = real
        self.imag = imag
        self._dtype = "complex64" if real.dtype == VarType.FP32 else "complex128"
        self._shape = real.shape

    @property
    def dtype(self):
        return self._dtype

    @property
    def shape(self):
        return self._shape

    @property
    def name(self):
        return {"real": self.real.name, "imag": self.imag.name}

    def __str__(self) -> str:
        return f"ComplexVariable(real={self.real.name}, imag={self.imag.name}, dtype={self._dtype})"

    __repr__ = __str__
