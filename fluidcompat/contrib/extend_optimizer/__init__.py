"""``fluid.contrib.extend_optimizer``: decoupled weight decay for any optimizer class."""

from . import extend_optimizer_with_weight_decay  # noqa: F401  (fluid exposes the module)
from .extend_optimizer_with_weight_decay import extend_with_decoupled_weight_decay

__all__ = ["extend_with_decoupled_weight_decay"]
