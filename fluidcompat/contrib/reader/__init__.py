"""``fluid.contrib.reader``: readers for multi-process training."""

from . import distributed_reader  # noqa: F401
from .distributed_reader import distributed_batch_reader

__all__ = ["distributed_batch_reader"]
