"""Ops of fluid's first generation (the Paddle v2 era) that fluid 1.8 still registered: ``minus``,
``conv_shift`` (circular convolution), ``fill`` (a tensor from an attribute's values) and ``merge_ids``
(the rows a distributed lookup table's shards sent back, in the ids' order)."""

from __future__ import annotations

from fluidcompat.dtypes import VarType
from fluidcompat_ops.registry import GradDef, OpDef, register
from fluidcompat_ops.shapes import dims_agree, first, prod, require_attrs

torch = None  # NOTE: [Lazy torch] in registry.py
F = None
TORCH_DTYPES = {}


# -- minus -----------------------------------------------------------------------------------------------
def _minus_infer(ins, attrs):
    x, y = first(ins, "X"), first(ins, "Y")
    if not dims_agree(x.shape, y.shape):
        raise ValueError(
            "Minus operator must take two tensor with same dim, but received input X dim is:"
            f"{list(x.shape)}, Y dim is:{list(y.shape)}"
        )
    return {"Out": [(tuple(x.shape), x.dtype)]}


def _minus_grad_maker(op, out_grads, in_grads):
    # fluid differentiates minus with two scale ops of dOut: 1 for X, -1 for Y
    made = []
    for slot, factor in (("X", 1.0), ("Y", -1.0)):
        for n in in_grads.get(slot, ()):
            if n:
                made.append(("scale", {"X": out_grads["Out"]}, {"Out": [n]}, {"scale": factor}))
    return made


register(
    OpDef(
        "minus",
        ("X", "Y"),
        ("Out",),
        {},
        _minus_infer,
        lambda ins, a: {"Out": [ins["X"][0] - ins["Y"][0]]},
        grad=GradDef(in_grads=("X", "Y"), maker=_minus_grad_maker),
    )
)


# -- conv_shift ------------------------------------------------------------------------------------------
def _conv_shift_infer(ins, attrs):
    x, y = first(ins, "X"), first(ins, "Y")
    if len(x.shape) != 2 or len(y.shape) != 2:
        raise ValueError(f"Input(X) and Input(Y) must be 2-D. Received: X.shape={x.shape}, Y.shape={y.shape}")
    if x.shape[0] >= 0 and y.shape[0] >= 0 and x.shape[0] != y.shape[0]:
        raise ValueError(f"X and Y must have the same batch size. Received: X.shape={x.shape}, Y.shape={y.shape}")
    if y.shape[1] >= 0 and y.shape[1] % 2 != 1:
        raise ValueError(
            "The second dimension of Input(Y) of ConvShiftOp should be odd.But received Y's shape = "
            f"{list(y.shape)} and the second dimension is {y.shape[1]}."
        )
    if x.shape[1] >= 0 and y.shape[1] > x.shape[1]:
        raise ValueError(
            f"The width of Input(Y) must be no larger than Input(X)'s. Received: X.shape={x.shape}, Y.shape={y.shape}"
        )
    return {"Out": [(tuple(x.shape), x.dtype)]}


def _conv_shift(ins, attrs):
    """Out[:, i] = sum_j X[:, (i + j - (N - 1) / 2) mod M] * Y[:, j] (X [B, M], Y [B, N], N odd)."""
    x, y = ins["X"][0], ins["Y"][0]
    m, n = x.shape[1], y.shape[1]
    i = torch.arange(m, device=x.device).unsqueeze(1)
    j = torch.arange(n, device=x.device).unsqueeze(0)
    taps = (i + j - (n - 1) // 2) % m  # [M, N]
    return {"Out": [(x[:, taps] * y.unsqueeze(1)).sum(dim=2)]}


register(
    OpDef(
        "conv_shift",
        ("X", "Y"),
        ("Out",),
        {},
        _conv_shift_infer,
        _conv_shift,
        grad=GradDef(("X", "Y")),
    )
)


# -- fill ------------------------------------------------------------------------------------------------
def _fill_infer(ins, attrs):
    require_attrs(attrs, "value", "shape")
    return {"Out": [(tuple(attrs["shape"]), attrs["dtype"])]}


def _fill_kernel(ins, attrs):
    """The attribute's values (float32, as fluid's FLOATS attribute held them) in the given shape, cast
    to ``dtype``."""
    shape = [int(d) for d in attrs["shape"]]
    values = torch.as_tensor(attrs["value"], dtype=torch.float32).reshape(-1)
    if values.numel() != prod(shape):
        raise ValueError(f"fill: value holds {values.numel()} numbers, shape {shape} needs {prod(shape)}. ")
    dtype = TORCH_DTYPES[VarType(attrs["dtype"])]
    return {"Out": [values.to(device=attrs["_device"], dtype=dtype).reshape(shape)]}


register(
    OpDef(
        "fill",
        (),
        ("Out",),
        {"dtype": int(VarType.FP32), "force_cpu": False},  # value, shape: required
        _fill_infer,
        _fill_kernel,
        cpu_attr="force_cpu",
    )
)


# -- merge_ids -------------------------------------------------------------------------------------------
def _merge_ids_infer(ins, attrs):
    ids, xs = ins["Ids"], ins["X"]
    if len(ins["Rows"]) != len(xs):
        raise ValueError(f"Rows and X must hold as many tensors. Received: {len(ins['Rows'])} and {len(xs)}")
    for v in ids:
        if len(v.shape) != 2 or v.shape[1] not in (1, -1):
            raise ValueError(f"each Ids tensor must be [N, 1]. Received: {tuple(v.shape)}")
    width = xs[0].shape[1] if xs and len(xs[0].shape) > 1 else -1
    return {"Out": [((v.shape[0], width), xs[0].dtype) for v in ids]}


def _merge_ids(ins, attrs):
    """Out[k][i] is the row of X[s] that Rows[s] says holds Ids[k][i] (each id in one shard's Rows
    once)."""
    rows = torch.cat([r.reshape(-1).long() for r in ins["Rows"]])
    table = torch.cat([x.reshape(x.shape[0], -1) for x in ins["X"]])
    if rows.numel() != table.shape[0]:
        raise ValueError(f"Rows name {rows.numel()} ids, X holds {table.shape[0]} rows")
    if rows.numel() and torch.unique(rows).numel() != rows.numel():
        raise ValueError("the rows and tensor map size should be the same (an id is in Rows twice)")
    order = torch.arange(1, rows.numel() + 1, device=rows.device)
    outs = []
    for ids in ins["Ids"]:
        flat = ids.reshape(-1).long()
        # the position in Rows of each id, counted from 1 (0 when Rows lacks it)
        where = ((flat.unsqueeze(1) == rows.unsqueeze(0)) * order).amax(dim=1) if rows.numel() else flat * 0
        if flat.numel() and bool((where == 0).any()):
            missing = int(flat[where == 0][0])
            raise ValueError(f"merge_ids: id {missing} is in no tensor of Rows")
        outs.append(table[where - 1])
    return {"Out": outs}


register(
    OpDef(
        "merge_ids",
        ("Ids", "Rows", "X"),
        ("Out",),
        {},
        _merge_ids_infer,
        _merge_ids,
    )
)
