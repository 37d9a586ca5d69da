"""Neural-network ops: embeddings, convolutions, pooling, normalisation, dropout."""

from __future__ import annotations

from fluidcompat.dtypes import VarType
from fluidcompat_ops.grad import SelectedRows
from fluidcompat_ops.registry import GradDef, OpDef, register
from fluidcompat_ops.shapes import first, out

torch = None  # NOTE: [Lazy torch] in registry.py
F = None


# -- embeddings ----------------------------------------------------------------------------------
def _lookup_infer(v2):
    def infer(ins, attrs):
        ids, w = first(ins, "Ids"), first(ins, "W")
        if ids.dtype != VarType.INT64 and ids.dtype != VarType.INT32:
            raise TypeError(f"Ids must be int64 or int32. Received: Ids.dtype={ids.dtype}")
        if len(w.shape) != 2:
            raise ValueError(f"W must be 2-D. Received: W.shape={w.shape}")
        if v2:
            shape = tuple(ids.shape) + (w.shape[1],)
        else:
            if ids.shape[-1] != 1:
                raise ValueError(  # fluid's text
                    f"ShapeError: The last dimensions of the 'Ids' tensor must be 1. But received Ids's last "
                    f"dimensions = {ids.shape[-1]}, Ids's shape = {list(ids.shape)}."
                )
            shape = tuple(ids.shape[:-1]) + (w.shape[1],)
        return out("Out", shape, w.dtype)

    return infer


def check_lookup_ids(ids, n: int) -> None:
    """Every id of an embedding lookup is a row of its ``n``-row table (fluid 1.8's message)."""
    if ids.numel():
        lo, hi = torch.stack(torch.aminmax(ids)).tolist()  # one read (on a GPU, one wait) for both
        if lo < 0 or hi >= n:
            raise ValueError(
                f"Variable value (input) of OP(fluid.layers.embedding) expected >= 0 and < {n}, "
                f"but got {lo if lo < 0 else hi}. Please check input value."
            )


def _lookup_kernel(v2):
    def kernel(ins, attrs):
        ids, w = ins["Ids"][0], ins["W"][0]
        if not v2:
            ids = ids.squeeze(-1)
        check_lookup_ids(ids, w.shape[0])
        r = F.embedding(ids, w)
        p = attrs["padding_idx"]
        if p != -1:
            r = r.masked_fill((ids == p).unsqueeze(-1), 0)
        return {"Out": [r]}

    return kernel


_LOOKUP_ATTRS = {
    "is_sparse": False,
    "is_distributed": False,
    "padding_idx": -1,
    "remote_prefetch": False,
    "height_sections": [],
    "epmap": [],
    "table_names": [],
    "trainer_id": 0,
}
register(
    OpDef(
        "lookup_table",
        ("W", "Ids"),
        ("Out",),
        dict(_LOOKUP_ATTRS, grad_inplace=False),
        _lookup_infer(False),
        _lookup_kernel(False),
        grad=GradDef(("Ids", "W"), in_grads=("W",), kernel=lambda ins, a: _lookup_grad(ins, a, False)),
    )
)
register(
    OpDef(
        "lookup_table_v2",
        ("W", "Ids"),
        ("Out",),
        _LOOKUP_ATTRS,
        _lookup_infer(True),
        _lookup_kernel(True),
        grad=GradDef(("Ids", "W"), in_grads=("W",), kernel=lambda ins, a: _lookup_grad(ins, a, True)),
    )
)


def _lookup_grad(ins, attrs, v2):
    """W's gradient: SelectedRows (touched rows only) when is_sparse, else a dense table."""
    ids, w, g = ins["Ids"][0], ins["W"][0], ins["Out@GRAD"][0]
    rows = ids.reshape(-1).long()
    values = g.reshape(rows.shape[0], w.shape[1])
    p = attrs["padding_idx"]
    if p != -1:
        values = values.masked_fill((rows == p).unsqueeze(-1), 0)
    if attrs["is_sparse"]:
        return {"W@GRAD": [SelectedRows(rows, values, w.shape[0])]}
    return {"W@GRAD": [torch.zeros_like(w).index_add_(0, rows, values)]}


# -- dropout ------------------------------------------------------------------------------------------------
def _dropout_infer(ins, attrs):
    x = first(ins, "X")
    p = attrs["dropout_prob"]
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout_prob must be in [0, 1]. Received: dropout_prob={p}")
    return {"Out": [(x.shape, x.dtype)], "Mask": [(x.shape, VarType.UINT8)]}


def _dropout_kernel(ins, attrs):
    x = ins["X"][0]
    p = attrs["dropout_prob"]
    upscale = attrs["dropout_implementation"] == "upscale_in_train"
    if attrs["is_test"]:
        return {"Out": [x.clone() if upscale else x * (1.0 - p)]}
    seed_t = first(ins, "Seed")
    if seed_t is not None or attrs["fix_seed"]:  # the same mask as fluid's (NOTE: [Seeded draws])
        from fluidcompat_ops.fluid_random import dropout_keep

        seed = int(seed_t.reshape(-1)[0]) if seed_t is not None else attrs["seed"]
        keep = dropout_keep(seed, x.shape, p, x.device)
    else:
        keep = torch.empty(x.shape, device=x.device).uniform_(0.0, 1.0) >= p
    mask = keep.to(torch.uint8)
    y = x * keep.to(x.dtype)
    if upscale:
        y = y / (1.0 - p) if p < 1.0 else torch.zeros_like(x)
    return {"Out": [y], "Mask": [mask]}


register(
    OpDef(
        "dropout",
        ("X", "Seed"),
        ("Out", "Mask"),
        {
            "dropout_prob": 0.5,
            "is_test": False,
            "fix_seed": False,
            "seed": 0,
            "dropout_implementation": "downgrade_in_infer",
        },
        _dropout_infer,
        _dropout_kernel,
        host_inputs=frozenset({"Seed"}),
        # the grad op's Mask: an is_test dropout makes none (its gradient is the scaling alone; fluid
        # 1.8.5 refused it, "GradOp is only callable when is_test is false")
        optional_inputs=frozenset({"Mask"}),
        grad=GradDef(("Mask",), in_grads=("X",), kernel=lambda ins, a: _dropout_grad(ins, a)),
    )
)


def _dropout_grad(ins, attrs):
    g = ins["Out@GRAD"][0]
    p = attrs["dropout_prob"]
    upscale = attrs["dropout_implementation"] == "upscale_in_train"
    if attrs["is_test"]:
        return {"X@GRAD": [g if upscale else g * (1.0 - p)]}
    dx = g * ins["Mask"][0].to(g.dtype)
    if upscale:
        dx = dx / (1.0 - p) if p < 1.0 else torch.zeros_like(g)
    return {"X@GRAD": [dx]}
