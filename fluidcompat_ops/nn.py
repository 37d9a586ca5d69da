"""Neural-network ops: embeddings (lookup_table, lookup_table_v2), dropout and add_position_encoding;
and the CTR-model ops cvm, hash (XXH64 feature hashing) and filter_by_instag."""

from __future__ import annotations

from fluidcompat.dtypes import VarType
from fluidcompat_ops.grad import SelectedRows
from fluidcompat_ops.registry import GradDef, OpDef, _op, register
from fluidcompat_ops.sequence import _last_level, lengths_of, lod_of, offsets_of, with_lod
from fluidcompat_ops.shapes import _x, first, out, same_as

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


# -- add_position_encoding -------------------------------------------------------------------------
def _add_position_encoding(ins, a):
    """[batch, length, width] without a LoD, else [rows, width] with one LoD level: each sequence's
    positions counted from its first row."""
    x = _x(ins)
    lod = lod_of(x)
    if len(lod) > 1:
        raise ValueError(
            f"The input(X)'s lod level of AddPositionEncodingOp should be equal to 1, but received {len(lod)}. "
        )
    rank = 2 if lod else 3
    if x.dim() != rank:
        raise ValueError(
            f"The input(X)'s dimension of AddPositionEncodingOp should be equal to {rank}, but received {x.dim()}. "
        )
    p = x.shape[-1]
    half = p // 2
    if lod:
        offsets = lod[0]
        starts = torch.tensor(offsets[:-1], dtype=torch.float64, device=x.device)
        lengths = torch.tensor(lengths_of(offsets), dtype=torch.int64, device=x.device)
        rows = torch.arange(x.shape[0], dtype=torch.float64, device=x.device)
        j = (rows - torch.repeat_interleave(starts, lengths, output_size=x.shape[0]))[:, None]
    else:
        j = torch.arange(x.shape[1], dtype=torch.float64, device=x.device)[:, None]
    k = torch.arange(half, dtype=torch.float64, device=x.device)[None, :]
    val = j / (10000.0 ** (k / (half - 1))) if half > 1 else j / 10000.0
    enc = torch.cat([torch.sin(val), torch.cos(val)], 1).to(x.dtype)
    return {"Out": [x * a["alpha"] + (enc if lod else enc[None]) * a["beta"]]}


_op("add_position_encoding", ("X",), ("Out",), {"alpha": 1.0, "beta": 1.0}, same_as(), _add_position_encoding)


# -- cvm -------------------------------------------------------------------------------------------
def _cvm(ins, a):
    x = _x(ins)
    if not a["use_cvm"]:
        return {"Y": [x[:, 2:]]}
    show = torch.log(x[:, :1] + 1)
    click = torch.log(x[:, 1:2] + 1) - show
    return {"Y": [torch.cat([show, click, x[:, 2:]], 1)]}


def _cvm_grad(ins, a):
    """fluid 1.8's cvm_grad: the first two columns get the CVM input itself, the others dY."""
    dy, cvm = ins["Y@GRAD"][0], ins["CVM"][0]
    rest = dy[:, 2:] if a["use_cvm"] else dy
    return {"X@GRAD": [torch.cat([cvm[:, :2].to(dy.dtype), rest], 1)]}


def _cvm_infer(ins, a):
    x = first(ins, "X")
    return out("Y", x.shape if a["use_cvm"] else (x.shape[0], x.shape[1] - 2), x.dtype)


register(
    OpDef(
        "cvm",
        ("X", "CVM"),
        ("Y",),
        {"use_cvm": True},
        _cvm_infer,
        _cvm,
        grad=GradDef(("X", "CVM"), out_grads=("Y",), in_grads=("X",), kernel=_cvm_grad),
    )
)


# -- hash: XXH64 of each row's bytes, seeds 0 .. num_hash - 1, modulo mod_by --------------------------
_P1, _P2, _P3 = 11400714785074694791, 14029467366897019727, 1609587929392839161
_P4, _P5, _M64 = 9650029242287828579, 2870177450012600261, 2**64 - 1


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (64 - r))) & _M64


def _xxh_round(acc: int, lane: int) -> int:
    return (_rotl((acc + lane * _P2) & _M64, 31) * _P1) & _M64


def xxh64(data: bytes, seed: int) -> int:
    """XXH64 (the hash fluid's hash op uses) of ``data``."""
    import struct

    n, i = len(data), 0
    if n >= 32:
        v = [(seed + _P1 + _P2) & _M64, (seed + _P2) & _M64, seed & _M64, (seed - _P1) & _M64]
        while i + 32 <= n:
            v = [_xxh_round(v[k], struct.unpack_from("<Q", data, i + 8 * k)[0]) for k in range(4)]
            i += 32
        h = (_rotl(v[0], 1) + _rotl(v[1], 7) + _rotl(v[2], 12) + _rotl(v[3], 18)) & _M64
        for lane in v:
            h = ((h ^ _xxh_round(0, lane)) * _P1 + _P4) & _M64
    else:
        h = (seed + _P5) & _M64
    h = (h + n) & _M64
    while i + 8 <= n:
        h ^= _xxh_round(0, struct.unpack_from("<Q", data, i)[0])
        h = (_rotl(h, 27) * _P1 + _P4) & _M64
        i += 8
    if i + 4 <= n:
        h ^= (struct.unpack_from("<I", data, i)[0] * _P1) & _M64
        h = (_rotl(h, 23) * _P2 + _P3) & _M64
        i += 4
    while i < n:
        h ^= (data[i] * _P5) & _M64
        h = (_rotl(h, 11) * _P1) & _M64
        i += 1
    h ^= h >> 33
    h = (h * _P2) & _M64
    h ^= h >> 29
    h = (h * _P3) & _M64
    return h ^ (h >> 32)


def _hash(ins, a):
    x = _x(ins)
    rows = x.detach().cpu().numpy().reshape(x.shape[0], -1)
    values = [[xxh64(r.tobytes(), k) % a["mod_by"] for k in range(a["num_hash"])] for r in rows]
    return {"Out": [torch.tensor(values, dtype=x.dtype, device=x.device).reshape(x.shape[0], a["num_hash"], 1)]}


_op(
    "hash",
    ("X",),
    ("Out",),
    {"num_hash": 1, "mod_by": 100000},
    lambda ins, a: out("Out", (first(ins, "X").shape[0], a["num_hash"], 1), first(ins, "X").dtype),
    _hash,
    grad=False,
)


# -- filter_by_instag: the instances carrying one of the wanted tags ----------------------------------
def _filter_by_instag(ins, a):
    """The instances (LoD sequences of Ins with is_lod, else rows) one of whose tags (Ins_tag, LoD
    per instance) is in Filter_tag, in order, with their LoD; LossWeight 1 per kept instance. With
    none kept: one row of out_val_if_empty and LossWeight 0, as fluid 1.8."""
    x, tags, wanted = ins["Ins"][0], ins["Ins_tag"][0], set(ins["Filter_tag"][0].reshape(-1).tolist())
    tag_offsets = _last_level(tags, "filter_by_instag", "Input(Ins_tag)")
    if a["is_lod"]:
        offsets = _last_level(x, "filter_by_instag", "Input(Ins)")
    else:
        offsets = list(range(x.shape[0] + 1))
    if len(offsets) != len(tag_offsets):
        raise ValueError(
            f"filter_by_instag: Ins has {len(offsets) - 1} instances but Ins_tag tags {len(tag_offsets) - 1}"
        )
    values = tags.reshape(-1).tolist()
    kept = [i for i, (s, e) in enumerate(zip(tag_offsets, tag_offsets[1:])) if wanted.intersection(values[s:e])]
    dev = x.device
    if not kept:
        empty = torch.full((1,) + tuple(x.shape[1:]), float(a["out_val_if_empty"]), dtype=x.dtype, device=dev)
        if x.requires_grad:  # its gradient: zeros for every row of Ins, as fluid's grad kernel gave
            empty = empty + x[:1] * 0
        return {  # (fluid's IndexMap then: one row [0, 1, 1])
            "Out": [with_lod(empty, [[0, 1]])],
            "LossWeight": [with_lod(torch.zeros((1, 1), dtype=torch.float32, device=dev), [[0, 1]])],
            "IndexMap": [with_lod(torch.tensor([[0, 1, 1]], dtype=torch.int64, device=dev), [[0, 1]])],
        }
    rows, index_map, lengths = [], [], []
    for i in kept:
        s, e = offsets[i], offsets[i + 1]
        index_map.append([len(rows), s, e - s])
        rows += range(s, e)
        lengths.append(e - s)
    out_t = x[torch.tensor(rows, dtype=torch.int64, device=dev)]
    ones = [offsets_of([1] * len(kept))]  # one row per kept instance (fluid's LoD of both)
    return {
        "Out": [with_lod(out_t, [offsets_of(lengths)])],
        "LossWeight": [with_lod(torch.ones((len(kept), 1), dtype=torch.float32, device=dev), ones)],
        "IndexMap": [with_lod(torch.tensor(index_map, dtype=torch.int64, device=dev).reshape(-1, 3), ones)],
    }


register(
    OpDef(
        "filter_by_instag",
        ("Ins", "Ins_tag", "Filter_tag"),
        ("Out", "LossWeight", "IndexMap"),
        {"is_lod": True, "out_val_if_empty": 0},
        lambda ins, a: {
            "Out": [((-1,) + tuple(first(ins, "Ins").shape[1:]), first(ins, "Ins").dtype)],
            "LossWeight": [((-1, 1), "float32")],
            "IndexMap": [((-1, 3), "int64")],
        },
        _filter_by_instag,
        host_inputs=frozenset({"Ins_tag", "Filter_tag"}),
        grad=GradDef(("Ins", "Ins_tag", "Filter_tag"), out_grads=("Out",), in_grads=("Ins",)),
    )
)
