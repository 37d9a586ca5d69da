"""``fluid.layers.loss``: fluid 1.8's module of losses. The losses are defined in ``losses.py``
(``accuracy``, which this module held too, in ``metrics.py``) and handed out from here as in fluid."""

from __future__ import annotations

from fluidcompat.dtypes import VarType  # noqa: F401  (names the module always had)
from fluidcompat.framework import Variable, layer  # noqa: F401
from fluidcompat.layer_helper import LayerHelper, check_variable  # noqa: F401
from fluidcompat.layers.indexing import topk  # noqa: F401
from fluidcompat.layers.losses import (  # noqa: F401
    cross_entropy,
    sigmoid_cross_entropy_with_logits,
    softmax_with_cross_entropy,
    square_error_cost,
)
from fluidcompat.layers.metrics import accuracy  # noqa: F401

__all__ = [
    "square_error_cost",
    "cross_entropy",
    "softmax_with_cross_entropy",
    "sigmoid_cross_entropy_with_logits",
    "accuracy",
]
