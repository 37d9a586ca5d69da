"""More of fluid 1.8's ops, with fluid's op types and attributes: activations (acos ... mish),
cumsum, flip, roll, tril_triu, diag, eye, kron, trace, isfinite/isinf/isnan, index_select,
index_sample, gather_nd, scatter_nd_add, bmm, dot, cross, dist, addmm, cos_sim, logsumexp,
reduce_all/any, size, unstack, unique, meshgrid, pixel_shuffle, shuffle_channel, space_to_depth,
maxout, prelu, label_smooth, log_loss, smooth_l1, kldiv_loss, huber_loss, margin_rank_loss,
rank_loss, bpr_loss, teacher_student_sigmoid_loss, strided_slice, expand_as, pad_constant_like,
allclose, multiplex, shard_index, diag_embed, randint, randperm, the batch-size-like random ops,
group_norm, instance_norm, lrn, affine_channel, conv3d, pool3d, interpolation, unfold,
temporal_shift, grid_sampler, affine_grid.
"""

from __future__ import annotations

from fluidcompat_ops.registry import GradDef, OpDef, _op, register
from fluidcompat_ops.sequence import _last_level, lengths_of, lod_of, offsets_of, with_lod
from fluidcompat_ops.shapes import _x, first, out, same_as
from fluidcompat_ops.tensor import _tdtype

torch = None  # NOTE: [Lazy torch] in registry.py
F = None
TORCH_DTYPES = None


# -- more nn ops ----------------------------------------------------------------------------------
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


def _gather_tree(ins, a):
    ids, parents = ins["Ids"][0], ins["Parents"][0]
    t_max = ids.shape[0]
    result = torch.empty_like(ids)
    beam = torch.arange(ids.shape[2], device=ids.device).expand(ids.shape[1], -1)
    batch = torch.arange(ids.shape[1], device=ids.device)[:, None].expand_as(beam)
    for t in range(t_max - 1, -1, -1):
        result[t] = ids[t, batch, beam]
        beam = parents[t, batch, beam].long()
    return {"Out": [result]}


_op("gather_tree", ("Ids", "Parents"), ("Out",), {}, same_as("Ids"), _gather_tree, grad=False)


def _selected_rows_values(ins, a):
    from fluidcompat_ops.grad import SelectedRows

    x = _x(ins)
    return {"Out": [x.values if isinstance(x, SelectedRows) else x]}


def _merge_selected_rows(ins, a):
    from fluidcompat_ops.grad import SelectedRows

    x = _x(ins)
    return {"Out": [x.merged() if isinstance(x, SelectedRows) else x]}


_op(
    "get_tensor_from_selected_rows",
    ("X",),
    ("Out",),
    {},
    lambda ins, a: out("Out", (-1,) + tuple(first(ins, "X").shape[1:]), first(ins, "X").dtype),
    _selected_rows_values,
    grad=False,
)
_op("merge_selected_rows", ("X",), ("Out",), {}, same_as(), _merge_selected_rows, grad=False)


_op(
    "is_empty",
    ("X",),
    ("Out",),
    {},
    lambda ins, a: out("Out", (1,), "bool"),
    lambda ins, a: {"Out": [torch.tensor([_x(ins).numel() == 0])]},
    grad=False,
    no_buffer_inputs=frozenset({"X"}),
    host_outputs=frozenset({"Out"}),
)


def _sequence_mask(ins, a):
    """Y[..., j] = j < X[...], for j below maxlen (MaxLenTensor, the attribute, or X's largest value)."""
    x = _x(ins)
    limit = first(ins, "MaxLenTensor")
    maxlen = int(limit.reshape(-1)[0]) if limit is not None else a["maxlen"]
    if maxlen < 0:
        maxlen = int(x.max()) if x.numel() else 0
    steps = torch.arange(maxlen, device=x.device, dtype=x.dtype)
    return {"Y": [(steps < x.unsqueeze(-1)).to(_tdtype(a["out_dtype"]))]}


def _sequence_mask_infer(ins, a):
    x = first(ins, "X")
    maxlen = -1 if first(ins, "MaxLenTensor") is not None else a["maxlen"]
    return {"Y": [(tuple(x.shape) + (maxlen,), a["out_dtype"])]}


_op(
    "sequence_mask",
    ("X", "MaxLenTensor"),
    ("Y",),
    {"maxlen": -1, "out_dtype": 3},
    _sequence_mask_infer,
    _sequence_mask,
    grad=False,
    host_inputs=frozenset({"MaxLenTensor"}),
)


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
