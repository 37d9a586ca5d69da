"""``fluid.dataloader``: where fluid 1.8 defined the map-style loader's ``Dataset`` and
``BatchSampler`` (``fluid.io`` re-exports them)."""

from fluidcompat.reader import BatchSampler, Dataset

__all__ = ["Dataset", "BatchSampler"]
