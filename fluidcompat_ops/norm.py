"""Norms and distances: frobenius_norm, p_norm (fluid 1.8's ``paddle.norm``) and squared_l2_distance.

Their gradients are per-op VJPs of the forward kernels (fluid registered a ``<type>_grad`` for each).
"""

from __future__ import annotations

from fluidcompat_ops.registry import GradDef, OpDef, register
from fluidcompat_ops.shapes import first, prod_or_unknown

torch = None  # NOTE: [Lazy torch] in registry.py
F = None


def _sq_l2_infer(ins, attrs):
    x, y = first(ins, "X"), first(ins, "Y")
    if len(x.shape) != len(y.shape):
        raise ValueError(
            f"Input(X) and Input(Y) must have the same rank. Received: X.shape={x.shape}, Y.shape={y.shape}"
        )
    if y.shape[0] not in (1, -1) and x.shape[0] >= 0 and y.shape[0] != x.shape[0]:
        raise ValueError(
            f"Y's first dimension must be 1 or X's first dimension. Received: X.shape={x.shape}, Y.shape={y.shape}"
        )
    width = prod_or_unknown(x.shape[1:])
    return {"sub_result": [((x.shape[0], width), x.dtype)], "Out": [((x.shape[0], 1), x.dtype)]}


def _squared_l2_distance(ins, attrs):
    """sub_result = X - Y as [N, the rest] (Y of one row is every row's), Out = its rows' sums of squares."""
    x, y = ins["X"][0], ins["Y"][0]
    sub = x.reshape(x.shape[0], -1) - y.reshape(y.shape[0], -1)
    return {"sub_result": [sub], "Out": [torch.sum(sub * sub, dim=1, keepdim=True)]}


register(
    OpDef(
        "squared_l2_distance",
        ("X", "Y"),
        ("sub_result", "Out"),
        {},
        _sq_l2_infer,
        _squared_l2_distance,
        grad=GradDef(("X", "Y", "sub_result")),
    )
)
