"""Norms and distances: frobenius_norm, p_norm (fluid 1.8's ``paddle.norm``) and squared_l2_distance.

Their gradients are per-op VJPs of the forward kernels (fluid registered a ``<type>_grad`` for each).
"""

from __future__ import annotations

from fluidcompat_ops.registry import GradDef, OpDef, register
from fluidcompat_ops.shapes import first, norm_axis, prod_or_unknown, reduce_shape

torch = None  # NOTE: [Lazy torch] in registry.py
F = None


def _frobenius_infer(ins, attrs):
    x = first(ins, "X")
    shape = reduce_shape(x.shape, attrs["dim"], attrs["keep_dim"], attrs["reduce_all"])
    return {"Out": [(shape, x.dtype)]}


def _frobenius_norm(ins, attrs):
    """sqrt(sum X^2) over ``dim`` (every dim with reduce_all), a reduce op's shape rules."""
    x = ins["X"][0]
    rank = x.dim()
    dims = list(range(rank)) if attrs["reduce_all"] else sorted({d % rank for d in attrs["dim"]})
    y = torch.sqrt(torch.sum(x * x, dim=dims, keepdim=attrs["keep_dim"]))
    if y.dim() == 0:
        y = y.reshape([1] * rank if attrs["keep_dim"] else [1])
    return {"Out": [y]}


register(
    OpDef(
        "frobenius_norm",
        ("X",),
        ("Out",),
        {"dim": [0], "keep_dim": False, "reduce_all": False, "in_dtype": -1, "out_dtype": -1},
        _frobenius_infer,
        _frobenius_norm,
        grad=GradDef(("X", "Out")),
    )
)


def _p_norm_infer(ins, attrs):
    x = first(ins, "X")
    axis = norm_axis(attrs["axis"], len(x.shape))
    if attrs["keepdim"]:
        shape = tuple(1 if i == axis else d for i, d in enumerate(x.shape))
    else:
        shape = tuple(d for i, d in enumerate(x.shape) if i != axis) or (1,)
    return {"Out": [(shape, x.dtype)]}


def _p_norm(ins, attrs):
    """(sum |X|^porder)^(1 / porder) along ``axis``."""
    x = ins["X"][0]
    y = torch.linalg.vector_norm(x, ord=attrs["porder"], dim=attrs["axis"], keepdim=attrs["keepdim"])
    return {"Out": [y.reshape(1) if y.dim() == 0 else y]}


register(
    OpDef(
        "p_norm",
        ("X",),
        ("Out",),
        {"porder": 2.0, "axis": -1, "epsilon": 1e-12, "keepdim": False},
        _p_norm_infer,
        _p_norm,
        grad=GradDef(("X", "Out")),
    )
)


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
