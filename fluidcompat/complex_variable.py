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

    @name.setter
    def name(self, name):
        if isinstance(name, str):
            self.real.name, self.imag.name = name + ".real", name + ".imag"
        elif isinstance(name, (tuple, list)) and len(name) == 2:
            self.real.name, self.imag.name = name[0], name[1]
        else:
            raise ValueError(
                "An invalid name assigned to the ComplexVariable, which must be a string, or a tuple or a list "
                "with length 2!"
            )

    def numpy(self):
        """Dygraph: the complex value as one numpy array."""
        return self.real.numpy() + 1j * self.imag.numpy()

    def __str__(self) -> str:
        return "REAL: " + str(self.real) + "IMAG: " + str(self.imag)

    __repr__ = __str__
