"""fluidcompat's op library: one ``OpDef`` per fluid op type, grouped by family.

Importing this package registers every op; it does not import torch (see registry.py).
"""

import fluidcompat_ops.grad  # noqa: F401  (first: the generic grads, NOTE: [Generic grads] in registry.py)
from fluidcompat_ops import (  # noqa: F401  (registration)
    activation,
    array,
    beam,
    collective,
    contrib,
    control,
    conv,
    creation,
    ctc_crf,
    detection_anchors,
    detection_boxes,
    detection_losses,
    detection_nms,
    fusion,
    indexing,
    legacy,
    loss,
    math,
    metrics,
    nn,
    norm,
    optim,
    pooling,
    pslib,
    python,
    quant,
    rank,
    recurrent,
    reduction,
    reshape,
    rpc,
    sequence,
    tensor,
    vision,
)
from fluidcompat_ops.registry import OpDef, all_defs, bind_torch, has, lookup

__all__ = ["OpDef", "all_defs", "bind_torch", "has", "lookup"]
