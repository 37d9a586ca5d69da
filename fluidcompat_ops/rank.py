"""fluid 1.x's LoD rank table, with which hand-written dynamic RNNs ordered their sequences:
``lod_rank_table`` (the sequences of one LoD level, longest first), ``max_sequence_len`` and
``reorder_lod_tensor_by_rank`` (a LoD tensor's sequences, or a plain tensor's rows, in the table's
order).

# NOTE: [Rank table values]
# A rank table's value is a ``RankTable``: the (index, length) of each sequence, longest first and
# ties in their order, as fluid's LoDRankTable. It is host data, read by host kernels only.
"""

from __future__ import annotations

from typing import List, NamedTuple, Tuple

from fluidcompat_ops.beam import absolute_lod
from fluidcompat_ops.registry import GradDef, OpDef, register
from fluidcompat_ops.sequence import lod_of, offsets_of, with_lod
from fluidcompat_ops.shapes import first, out

torch = None  # NOTE: [Lazy torch] in registry.py
F = None


class RankTable(NamedTuple):
    """(index, length) of each sequence, longest first (NOTE: [Rank table values])."""

    items: Tuple[Tuple[int, int], ...]
    level: int


def _lod_rank_table(ins, a):
    x = ins["X"][0]
    lod = lod_of(x)
    level = a["level"]
    if not lod:
        lengths = [1] * x.shape[0]  # a plain tensor: each row a sequence of one
    else:
        if level >= len(lod):
            raise ValueError(f"lod_rank_table: level {level} is out of range: Input(X) has {len(lod)} LoD level(s)")
        offsets = lod[level]
        lengths = [e - s for s, e in zip(offsets, offsets[1:])]
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])  # stable: ties keep their order
    return {"Out": [RankTable(tuple((i, lengths[i]) for i in order), level)]}


register(
    OpDef(
        "lod_rank_table",
        ("X",),
        ("Out",),
        {"level": 0},
        lambda ins, a: out("Out", (), "int64"),
        _lod_rank_table,
        no_buffer_inputs=frozenset({"X"}),  # its LoD (or row count) alone is read
        host_outputs=frozenset({"Out"}),
    )
)


def _table(ins, op: str) -> RankTable:
    table = ins["RankTable"][0]
    if not isinstance(table, RankTable):
        raise ValueError(f"{op}: Input(RankTable) must be a rank table (fluid.layers.control_flow.lod_rank_table)")
    return table


def _max_sequence_len(ins, a):
    items = _table(ins, "max_sequence_len").items
    return {"Out": [torch.tensor([items[0][1] if items else 0], dtype=torch.int64, device=a["_device"])]}


register(
    OpDef(
        "max_sequence_len",
        ("RankTable",),
        ("Out",),
        {},
        lambda ins, a: out("Out", (1,), "int64"),
        _max_sequence_len,
        host_inputs=frozenset({"RankTable"}),
    )
)


def _sequence_rows(x, count: int, op: str) -> Tuple[List[Tuple[int, int]], list]:
    """The row range of each top-level sequence of ``x`` (a row each without a LoD) and the LoD
    levels below the top, as absolute offsets."""
    lod = lod_of(x)
    if not lod:
        if x.shape[0] != count:
            raise ValueError(f"{op}: Input(X) has {x.shape[0]} rows but the rank table {count} sequences")
        return [(r, r + 1) for r in range(count)], []
    top = absolute_lod(lod)[0]
    if len(top) - 1 != count:
        raise ValueError(f"{op}: Input(X) has {len(top) - 1} sequences but the rank table {count}")
    return list(zip(top, top[1:])), lod


def _reordered_lod(lod, order):
    """The LoD of ``lod``'s top-level sequences taken in ``order``: level by level, the entries the
    chosen sequences span, in their new order."""
    result, entries = [], list(order)  # the entries of the level being rebuilt, in the new order
    for level in lod:
        result.append(offsets_of(level[k + 1] - level[k] for k in entries))
        entries = [j for k in entries for j in range(level[k], level[k + 1])]
    return result


def _reorder_index(x, table, op):
    ranges, lod = _sequence_rows(x, len(table.items), op)
    order = [i for i, _ in table.items]
    rows = [r for i in order for r in range(*ranges[i])]
    return torch.tensor(rows, dtype=torch.int64, device=x.device), order, lod


def _reorder(ins, a):
    x = ins["X"][0]
    index, order, lod = _reorder_index(x, _table(ins, "reorder_lod_tensor_by_rank"), "reorder_lod_tensor_by_rank")
    result = x[index]
    return {"Out": [with_lod(result, _reordered_lod(lod, order)) if lod else result]}


def _reorder_grad(ins, a):
    """The output's gradient put back in the input's order (with the input's LoD)."""
    x, g = ins["X"][0], ins["Out@GRAD"][0]
    index, _, lod = _reorder_index(x, _table(ins, "reorder_lod_tensor_by_rank_grad"), "reorder_lod_tensor_by_rank_grad")
    restored = torch.zeros_like(x).index_copy(0, index, g.to(x.dtype))
    return {"X@GRAD": [with_lod(restored, lod) if lod else restored]}


register(
    OpDef(
        "reorder_lod_tensor_by_rank",
        ("X", "RankTable"),
        ("Out",),
        {},
        lambda ins, a: out("Out", first(ins, "X").shape, first(ins, "X").dtype),
        _reorder,
        host_inputs=frozenset({"RankTable"}),
        grad=GradDef(("X", "RankTable"), out_grads=("Out",), in_grads=("X",), kernel=_reorder_grad),
    )
)
