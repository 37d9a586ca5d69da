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
from fluidcompat_ops.sequence import lengths_of, lod_of, offsets_of, with_lod
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
        lengths = lengths_of(offsets)
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


def _register_by_rank(name, inputs, kernel, grad_kernel, **kw):
    """An op of X and a rank table (host data) giving Out shaped as X, with its grad kernel."""
    register(
        OpDef(
            name,
            inputs,
            ("Out",),
            {},
            lambda ins, a: out("Out", first(ins, "X").shape, first(ins, "X").dtype),
            kernel,
            host_inputs=frozenset(inputs[1:]),
            grad=GradDef(inputs, out_grads=("Out",), in_grads=("X",), kernel=grad_kernel),
            **kw,
        )
    )


_register_by_rank("reorder_lod_tensor_by_rank", ("X", "RankTable"), _reorder, _reorder_grad)


# -- lod_tensor_to_array / array_to_lod_tensor / shrink_rnn_memory -------------------------------
def _step_rows(table: RankTable, offsets) -> list:
    """Per time step, the rows of the sequences still running there, longest sequence first."""
    steps = table.items[0][1] if table.items else 0
    return [[offsets[i] + t for i, length in table.items if length > t] for t in range(steps)]


def _sequence_offsets(x, table: RankTable, op: str) -> list:
    lod = lod_of(x)
    if not lod:
        return list(range(x.shape[0] + 1))  # a plain tensor: each row a sequence of one
    if table.level != len(lod) - 1:
        raise ValueError(
            f"{op}: the rank table ranks LoD level {table.level} but Input(X) has {len(lod)} level(s); fluidcompat "
            "splits the last level (the rows) into steps"
        )
    return absolute_lod(lod)[-1]


def _to_array(ins, a):
    x = ins["X"][0]
    table = _table(ins, "lod_tensor_to_array")
    rows = _step_rows(table, _sequence_offsets(x, table, "lod_tensor_to_array"))
    return {"Out": [[x[torch.tensor(r, dtype=torch.int64, device=x.device)] for r in rows]]}


def _from_array(arr, table: RankTable, like=None):
    """The rows of the steps in ``arr`` put back into their sequences, in index order, with the LoD."""
    lengths = {i: length for i, length in table.items}
    offsets = offsets_of(lengths[i] for i in range(len(lengths)))
    steps = _step_rows(table, offsets)
    if len(arr) < len(steps):
        raise ValueError(f"array_to_lod_tensor: the array holds {len(arr)} steps; the rank table needs {len(steps)}")
    parts, index = [], []
    for t, rows in enumerate(steps):
        value = arr[t]
        if value is None:  # a gradient array without this step: zeros
            value = torch.zeros((len(rows),) + tuple(like.shape[1:]), dtype=like.dtype, device=like.device)
        parts.append(value[: len(rows)])
        index += rows
    if not parts:
        return torch.zeros((0,) + tuple(like.shape[1:]) if like is not None else (0,)), offsets
    flat = torch.cat([p.to(parts[0].device) for p in parts])
    out_t = torch.empty_like(flat).index_copy(0, torch.tensor(index, dtype=torch.int64, device=flat.device), flat)
    return out_t, offsets


def _array_to_tensor(ins, a):
    arr, table = ins["X"][0], _table(ins, "array_to_lod_tensor")
    if not isinstance(arr, list):
        raise ValueError("array_to_lod_tensor: Input(X) must be a tensor array")
    out_t, offsets = _from_array(arr, table, like=next((v for v in arr if v is not None), None))
    return {"Out": [with_lod(out_t.to(a["_device"]), [offsets])]}


def _to_array_grad(ins, a):
    x, table = ins["X"][0], _table(ins, "lod_tensor_to_array_grad")
    grads = ins["Out@GRAD"][0] or []
    rows = _step_rows(table, _sequence_offsets(x, table, "lod_tensor_to_array_grad"))
    grads = list(grads) + [None] * (len(rows) - len(grads))
    out_t = torch.zeros_like(x)
    for t, r in enumerate(rows):
        if grads[t] is not None:
            out_t = out_t.index_copy(0, torch.tensor(r, dtype=torch.int64, device=x.device), grads[t].to(x.dtype))
    return {"X@GRAD": [with_lod(out_t, lod_of(x))]}


def _array_to_tensor_grad(ins, a):
    g, table = ins["Out@GRAD"][0], _table(ins, "array_to_lod_tensor_grad")
    lengths = {i: length for i, length in table.items}
    rows = _step_rows(table, offsets_of(lengths[i] for i in range(len(lengths))))
    return {"X@GRAD": [[g[torch.tensor(r, dtype=torch.int64, device=g.device)] for r in rows]]}


_register_by_rank("lod_tensor_to_array", ("X", "RankTable"), _to_array, _to_array_grad)
_register_by_rank(
    "array_to_lod_tensor",
    ("X", "RankTable"),
    _array_to_tensor,
    _array_to_tensor_grad,
    no_buffer_inputs=frozenset({"X"}),
)


def _running(ins, op):
    table = _table(ins, op)
    step = int(ins["I"][0].reshape(-1)[0])
    return sum(1 for _, length in table.items if length > step)


def _shrink(ins, a):
    """The memory's first rows: one per sequence still running at step I (longest first)."""
    return {"Out": [ins["X"][0][: _running(ins, "shrink_rnn_memory")]]}


def _shrink_grad(ins, a):
    x, g = ins["X"][0], ins["Out@GRAD"][0]
    return {"X@GRAD": [torch.cat([g.to(x.dtype), torch.zeros_like(x[g.shape[0] :])])]}


_register_by_rank("shrink_rnn_memory", ("X", "I", "RankTable"), _shrink, _shrink_grad)
