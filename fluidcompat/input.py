"""``fluid.input``: where fluid 1.8 also published ``one_hot`` and ``embedding`` (the versions of
``fluid.one_hot`` / ``fluid.embedding`` that keep the ids' last dimension)."""

from fluidcompat.layers.nn import embedding_v2 as embedding
from fluidcompat.layers.nn import one_hot_v2 as one_hot

__all__ = ["one_hot", "embedding"]
