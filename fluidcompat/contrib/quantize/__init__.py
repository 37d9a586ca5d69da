"""``fluid.contrib.quantize``: quantization-aware training by program rewriting."""

from . import quantize_transpiler  # noqa: F401
from .quantize_transpiler import QuantizeTranspiler

__all__ = ["QuantizeTranspiler"]
