"""``fluid.contrib.mixed_precision``: automatic mixed precision training (float16 compute, float32
master weights, loss scaling), as fluid 1.8.5 had it."""

from . import decorator, fp16_lists, fp16_utils  # noqa: F401  (fluid exposes the modules)
from .decorator import decorate
from .fp16_lists import AutoMixedPrecisionLists

__all__ = ["decorate", "AutoMixedPrecisionLists"]
