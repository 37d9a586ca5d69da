"""Ops of fluid 1.8's ``fluid.contrib.layers``: fused_elemwise_activation, partial_concat,
partial_sum, fused_embedding_seq_pool, shuffle_batch, tree_conv, match_matrix_tensor,
sequence_topk_avg_pooling, var_conv_2d and tdm_child; and ``seed`` (recomputation's dropout seeds)."""

from __future__ import annotations

import numpy as np

from fluidcompat.dtypes import VarType
from fluidcompat_ops.math import _align
from fluidcompat_ops.registry import TORCH_DTYPES, GradDef, OpDef, register
from fluidcompat_ops.sequence import _last_level, lengths_of, lod_of, offsets_of, with_lod
from fluidcompat_ops.shapes import first, out

torch = None  # bound by registry.bind_torch on first use


# -- fused_elemwise_activation ----------------------------------------------------------------------
BINARY = ("elementwise_add", "elementwise_mul")
UNARY = ("relu", "scale", "tanh", "sigmoid")


def _functors(functor_list):
    """(binary, unary, binary first?) of a functor pair, or ValueError naming what is wrong."""
    fs = list(functor_list)
    if len(fs) != 2:
        raise ValueError(f"functor_list should be a list of str, and the length should be 2. Received: {fs}")
    for f in fs:
        if f not in BINARY + UNARY:
            raise ValueError(f"{f} is not included in fused_list: binary {list(BINARY)}, unary {list(UNARY)}")
    if (fs[0] in BINARY) == (fs[1] in BINARY):
        raise ValueError(f"functor_list must pair one binary and one unary functor. Received: {fs}")
    return (fs[0], fs[1], True) if fs[0] in BINARY else (fs[1], fs[0], False)


def _unary(name, v, scale):
    if name == "relu":
        return torch.relu(v)
    if name == "tanh":
        return torch.tanh(v)
    if name == "sigmoid":
        return torch.sigmoid(v)
    return v * scale


def _fused_elemwise_activation(ins, a):
    binary, unary, binary_first = _functors(a["functor_list"])
    x, y = _align(ins["X"][0], ins["Y"][0], a["axis"])
    op = torch.add if binary == "elementwise_add" else torch.mul
    if binary_first:  # Binary(X, Unary(Y))
        mid = _unary(unary, y, a["scale"])
        result = op(x, mid)
    else:  # Unary(Binary(X, Y))
        mid = op(x, y)
        result = _unary(unary, mid, a["scale"])
    return {"Out": [result], "IntermediateOut": [mid]}


def _fused_elemwise_activation_infer(ins, a):
    binary, unary, binary_first = _functors(a["functor_list"])
    x, y = first(ins, "X"), first(ins, "Y")
    return {"Out": [(x.shape, x.dtype)], "IntermediateOut": [((y.shape if binary_first else x.shape), x.dtype)]}


register(
    OpDef(
        "fused_elemwise_activation",
        ("X", "Y"),
        ("Out", "IntermediateOut"),
        {"axis": -1, "scale": 0.0, "save_intermediate_out": False, "functor_list": []},
        _fused_elemwise_activation_infer,
        _fused_elemwise_activation,
        grad=GradDef(out_grads=("Out",)),
    )
)


# -- partial_concat, partial_sum ------------------------------------------------------------------
def _columns(x, a):
    start, length = a["start_index"], a["length"]
    n = x.shape[1]
    start = start + n if start < 0 else start
    if not 0 <= start < n:
        raise ValueError(f"start_index {a['start_index']} is out of the inputs' {n} columns")
    end = n if length < 0 else start + length
    if end > n:
        raise ValueError(f"start_index {start} + length {length} is past the inputs' {n} columns")
    return x[:, start:end]


def _partial_infer(concat):
    def infer(ins, a):
        xs = ins["X"]
        if not xs:
            raise ValueError("partial_concat / partial_sum need at least one input")
        for v in xs:
            if len(v.shape) != 2 or v.shape[1] != xs[0].shape[1]:
                raise ValueError(
                    f"every input must be 2-D with the same columns. Received: {[list(v.shape) for v in xs]}"
                )
        n = xs[0].shape[1]
        start = a["start_index"] + n if a["start_index"] < 0 else a["start_index"]
        width = -1 if n < 0 else (n - start if a["length"] < 0 else a["length"])
        cols = width * len(xs) if concat and width >= 0 else width
        return out("Out", (xs[0].shape[0], cols), xs[0].dtype)

    return infer


_PARTIAL_ATTRS = {"start_index": 0, "length": -1}
register(
    OpDef(
        "partial_concat",
        ("X",),
        ("Out",),
        dict(_PARTIAL_ATTRS),
        _partial_infer(True),
        lambda ins, a: {"Out": [torch.cat([_columns(x, a) for x in ins["X"]], dim=1)]},
        grad=GradDef(),
    )
)
register(
    OpDef(
        "partial_sum",
        ("X",),
        ("Out",),
        dict(_PARTIAL_ATTRS),
        _partial_infer(False),
        lambda ins, a: {"Out": [sum(_columns(x, a) for x in ins["X"])]},
        grad=GradDef(),
    )
)


# -- fused_embedding_seq_pool -----------------------------------------------------------------------
def _fused_embedding_seq_pool(ins, a):
    ids, w = ins["Ids"][0], ins["W"][0]
    if a["combiner"] != "sum":
        raise ValueError(f"fused_embedding_seq_pool supports combiner 'sum' only. Received: {a['combiner']!r}")
    offsets = _last_level(ids, "fused_embedding_seq_pool", "Input(Ids)")
    flat = ids.reshape(-1).long()
    rows = w[flat]
    if a["padding_idx"] >= 0:
        rows = rows * (flat != a["padding_idx"]).unsqueeze(1).to(rows.dtype)
    lengths = torch.tensor(lengths_of(offsets), device=w.device)
    seg = torch.repeat_interleave(torch.arange(len(lengths), device=w.device), lengths, output_size=flat.shape[0])
    pooled = torch.zeros((len(offsets) - 1, w.shape[1]), dtype=w.dtype, device=w.device).index_add(0, seg, rows)
    return {"Out": [pooled]}


def _fused_embedding_seq_pool_infer(ins, a):
    ids, w = first(ins, "Ids"), first(ins, "W")
    if ids.shape and ids.shape[-1] not in (1, -1):
        raise ValueError(
            "The last dimension of the input tensor 'Ids' should be 1. But received Ids's size in the last "
            f"dimension = {ids.shape[-1]}."
        )
    return out("Out", (-1, w.shape[1]), w.dtype)


register(
    OpDef(
        "fused_embedding_seq_pool",
        ("Ids", "W"),
        ("Out",),
        {"is_sparse": False, "combiner": "sum", "padding_idx": -1, "grad_inplace": False},
        _fused_embedding_seq_pool_infer,
        _fused_embedding_seq_pool,
        grad=GradDef(in_grads=("W",)),
    )
)


# -- seed -----------------------------------------------------------------------------------------------
def _seed(ins, a):
    value = a["seed"] if a["seed"] else int(torch.randint(1, 2**31 - 1, (1,)))
    return {"Out": [torch.tensor([value], dtype=torch.int32)]}


register(
    OpDef(
        "seed",
        (),
        ("Out",),
        {"seed": 0},
        lambda ins, a: out("Out", (1,), VarType.INT32),
        _seed,
        host_outputs=frozenset({"Out"}),
    )
)


# -- shuffle_batch --------------------------------------------------------------------------------------
def _shuffle_batch(ins, a):
    x = ins["X"][0]
    seed_in = first(ins, "Seed")
    seed = int(seed_in.reshape(-1)[0]) if seed_in is not None and seed_in.numel() else int(a["startup_seed"])
    from fluidcompat_ops.fluid_random import shuffle_order

    rows = x.reshape(-1, x.shape[-1]) if x.dim() > 1 else x.reshape(-1, 1)
    order, next_seed = shuffle_order(seed, rows.shape[0])  # fluid's (NOTE: [Seeded draws])
    idx = torch.tensor(order, dtype=torch.int64)
    shuffled = torch.empty_like(rows)
    shuffled[idx.to(x.device)] = rows  # row j goes to place idx[j], as fluid 1.8.5 placed it
    seed_out = torch.tensor([next_seed], dtype=torch.int64)
    return {"Out": [shuffled.reshape(x.shape)], "ShuffleIdx": [idx], "SeedOut": [seed_out]}


def _shuffle_batch_grad(ins, a):
    g, idx = ins["Out@GRAD"][0], ins["ShuffleIdx"][0]
    rows = g.reshape(-1, g.shape[-1]) if g.dim() > 1 else g.reshape(-1, 1)
    return {"X@GRAD": [rows[idx.to(g.device)].reshape(g.shape)]}


def _shuffle_batch_infer(ins, a):
    x = first(ins, "X")
    n = 1
    for d in x.shape[:-1]:
        n = -1 if d < 0 or n < 0 else n * d
    return {"Out": [(x.shape, x.dtype)], "ShuffleIdx": [((n,), VarType.INT64)], "SeedOut": [((1,), VarType.INT64)]}


register(
    OpDef(
        "shuffle_batch",
        ("X", "Seed"),
        ("Out", "ShuffleIdx", "SeedOut"),
        {"startup_seed": 0},
        _shuffle_batch_infer,
        _shuffle_batch,
        host_inputs=frozenset({"Seed"}),
        host_outputs=frozenset({"ShuffleIdx", "SeedOut"}),
        optional_inputs=frozenset({"Seed"}),
        grad=GradDef(inputs=("ShuffleIdx",), in_grads=("X",), kernel=_shuffle_batch_grad),
    )
)


# -- squared_l2_norm, l1_norm (ctr_metric_bundle's errors) ------------------------------------------------
def _norm_infer(ins, a):
    return out("Out", (1,), first(ins, "X").dtype)


register(
    OpDef(
        "squared_l2_norm",
        ("X",),
        ("Out",),
        {},
        _norm_infer,
        lambda ins, a: {"Out": [(ins["X"][0] * ins["X"][0]).sum().reshape(1)]},
        grad=GradDef(),
    )
)
register(
    OpDef(
        "l1_norm",
        ("X",),
        ("Out",),
        {},
        _norm_infer,
        lambda ins, a: {"Out": [ins["X"][0].abs().sum().reshape(1)]},
        grad=GradDef(),
    )
)


# -- tree_conv: tree-based convolution (TBCNN) over continuous binary trees ---------------------------
def _tree_patch_weights(edges, rows: int, max_depth: int):
    """[rows, rows, 3] (eta_l, eta_r, eta_t) weights: row i is the patch rooted at node i + 1, each
    node of its subtree less than ``max_depth`` deep weighted by its depth and its place among its
    siblings. ``edges`` [E, 2] (parent, child), node ids from 1; a 0 ends the list."""
    children = {}
    count = 1
    for u, v in edges:
        if u == 0 or v == 0:
            break
        children.setdefault(u, []).append(v)
        count += 1
    weights = np.zeros((rows, rows, 3))
    for root in range(1, min(count, rows) + 1):
        stack, seen = [(root, 1, 1, 0)], {root}
        while stack:
            node, index, siblings, depth = stack.pop()
            if node > rows:
                raise ValueError(
                    f"tree_conv: EdgeSet names node {node}, but NodesVector has features for {rows} nodes only"
                )
            eta_t = (max_depth - depth) / max_depth
            eta_l = (1.0 - eta_t) * (0.5 if siblings == 1 else (index - 1.0) / (siblings - 1.0))
            weights[root - 1, node - 1] += (eta_l, (1.0 - eta_t) * (1.0 - eta_l), eta_t)
            if depth + 1 < max_depth:
                kids = children.get(node, ())
                for i, kid in enumerate(kids):
                    if kid not in seen:
                        seen.add(kid)
                        stack.append((kid, i + 1, len(kids), depth + 1))
    return weights


def _tree_conv(ins, a):
    x, edge_set, w = ins["NodesVector"][0], ins["EdgeSet"][0], ins["Filter"][0]
    if a["max_depth"] <= 1:
        raise ValueError(f"tree_conv: max_depth must be larger than 1. Received: {a['max_depth']}")
    edges = edge_set.detach().cpu().numpy().astype("int64")
    rows = x.shape[1]
    weights = np.stack([_tree_patch_weights(e, rows, a["max_depth"]) for e in edges])
    weights = torch.from_numpy(weights).to(device=x.device, dtype=x.dtype)
    # out[b, n, o, f] = sum over patch nodes m, features k, eta j of weight * x[b, m, k] * filter[k, j, o, f]
    return {"Out": [torch.einsum("bnmj,bmk,kjof->bnof", weights, x, w)]}


def _tree_conv_infer(ins, a):
    x, w = first(ins, "NodesVector"), first(ins, "Filter")
    if len(x.shape) != 3:
        raise ValueError(
            f"tree_conv: NodesVector must be 3-D [batch, max_node_size, feature_size]. Received: {list(x.shape)}"
        )
    if len(w.shape) != 4 or w.shape[1] != 3:
        raise ValueError(
            f"tree_conv: Filter must be [feature_size, 3, output_size, num_filters]. Received: {list(w.shape)}"
        )
    if x.shape[2] >= 0 and x.shape[2] != w.shape[0]:
        raise ValueError(
            f"tree_conv: NodesVector has feature size {x.shape[2]} but Filter expects {w.shape[0]} "
            f"(Filter shape {list(w.shape)})"
        )
    return out("Out", (x.shape[0], x.shape[1], w.shape[2], w.shape[3]), x.dtype)


register(
    OpDef(
        "tree_conv",
        ("NodesVector", "EdgeSet", "Filter"),
        ("Out",),
        {"max_depth": 2},
        _tree_conv_infer,
        _tree_conv,
        host_inputs=frozenset({"EdgeSet"}),
        grad=GradDef(in_grads=("NodesVector", "Filter")),
    )
)


# -- match_matrix_tensor and sequence_topk_avg_pooling: text matching of fluid's search models -------
def _one_level(t, op: str, slot: str):
    lod = lod_of(t)
    if not lod or len(lod) != 1:
        raise ValueError(f"{op}: {slot} must be a LoDTensor with one LoD level. Received LoD: {lod or []}")
    return lod[0]


def _sequence_images(ins, op: str, channels: int, what: str):
    """Each sequence of X as an image [channels, rows, columns], rows and columns from the LoDs of
    ROW and COLUMN: (rows, columns, image) per sequence, the counts checked."""
    x = ins["X"][0]
    x_lod = _one_level(x, op, "X")
    row_lod = _one_level(ins["ROW"][0], op, "ROW")
    col_lod = _one_level(ins["COLUMN"][0], op, "COLUMN")
    if not len(x_lod) == len(row_lod) == len(col_lod):
        raise ValueError(
            f"{op}: X, ROW and COLUMN must hold as many sequences; they hold {len(x_lod) - 1}, "
            f"{len(row_lod) - 1} and {len(col_lod) - 1}"
        )
    flat = x.reshape(-1)
    for i in range(len(x_lod) - 1):
        rows, cols = row_lod[i + 1] - row_lod[i], col_lod[i + 1] - col_lod[i]
        if x_lod[i + 1] - x_lod[i] != channels * rows * cols:
            raise ValueError(
                f"{op}: sequence {i} of X has {x_lod[i + 1] - x_lod[i]} values; {what} * rows * columns = "
                f"{channels} * {rows} * {cols}"
            )
        yield rows, cols, flat[x_lod[i] : x_lod[i + 1]].reshape(channels, rows, cols)


def _match_matrix_tensor(ins, a):
    """Per sequence pair i: X_i [n_i, h] W [h, dim_t, h] Y_i^T [h, m_i] = [dim_t, n_i, m_i], flattened
    (channel, row, column) into one column; Tmp is X W, [rows * dim_t * h, 1]."""
    x, y, w = ins["X"][0], ins["Y"][0], ins["W"][0]
    x_lod = _one_level(x, "match_matrix_tensor", "X")
    y_lod = _one_level(y, "match_matrix_tensor", "Y")
    if len(x_lod) != len(y_lod):
        raise ValueError(
            f"match_matrix_tensor: X has {len(x_lod) - 1} sequences but Y has {len(y_lod) - 1} (LoDs {x_lod}, {y_lod})"
        )
    h, dim_t = w.shape[0], a["dim_t"]
    tmp = (x @ w.reshape(h, -1)).reshape(x.shape[0], dim_t, h)
    parts, sizes = [], []
    for i in range(len(x_lod) - 1):
        xi = tmp[x_lod[i] : x_lod[i + 1]]
        yi = y[y_lod[i] : y_lod[i + 1]]
        parts.append(torch.einsum("ntk,mk->tnm", xi, yi).reshape(-1))
        sizes.append(parts[-1].shape[0])
    out = torch.cat(parts).reshape(-1, 1) if parts else tmp.new_zeros((0, 1))
    return {"Out": [with_lod(out, [offsets_of(sizes)])], "Tmp": [tmp.detach().reshape(-1, 1)]}


def _match_matrix_infer(ins, a):
    x, y, w = first(ins, "X"), first(ins, "Y"), first(ins, "W")
    if len(x.shape) != 2 or len(y.shape) != 2 or len(w.shape) != 3:
        raise ValueError(
            f"match_matrix_tensor: X and Y must be 2-D and W 3-D. Received: X {list(x.shape)}, Y {list(y.shape)}, "
            f"W {list(w.shape)}"
        )
    if w.shape[1] != a["dim_t"] or (x.shape[1] >= 0 and x.shape[1] != w.shape[0]):
        raise ValueError(
            f"match_matrix_tensor: W must be [{x.shape[1]}, {a['dim_t']}, {y.shape[1]}] for X {list(x.shape)}, "
            f"Y {list(y.shape)} and dim_t={a['dim_t']}. Received: {list(w.shape)}"
        )
    return {"Out": [((-1, 1), x.dtype)], "Tmp": [((-1, 1), x.dtype)]}


register(
    OpDef(
        "match_matrix_tensor",
        ("X", "Y", "W"),
        ("Out", "Tmp"),
        {"dim_t": 1},
        _match_matrix_infer,
        _match_matrix_tensor,
        grad=GradDef(("X", "Y", "W"), out_grads=("Out",), in_grads=("X", "Y", "W")),
    )
)


def _sequence_topk_avg_pooling(ins, a):
    """Per sequence i, per channel and row: the row's (ROW's and COLUMN's i-th lengths give the rows
    and columns) mean of its k largest values for each k of topks, missing values counting as 0.
    Out [rows, channel_num * len(topks)] (channel-major), with ROW's LoD; pos the top columns per row,
    channel and rank (-1 past a short row)."""
    x, topks, channels = ins["X"][0], list(a["topks"]), a["channel_num"]
    if not topks or any(k <= 0 for k in topks):
        raise ValueError(f"sequence_topk_avg_pooling: topks must be positive. Received: {topks}")
    max_k = max(topks)
    outs, positions = [], []
    for rows, cols, grid in _sequence_images(ins, "sequence_topk_avg_pooling", channels, "channel_num"):
        values, index = torch.sort(grid, dim=2, descending=True, stable=True)
        pad = max(0, max_k - cols)
        values = torch.nn.functional.pad(values, (0, pad))[..., :max_k]
        index = torch.nn.functional.pad(index, (0, pad), value=-1)[..., :max_k]
        sums = torch.cumsum(values, dim=2)
        pooled = torch.stack([sums[..., k - 1] / k for k in topks], dim=2)  # [channels, rows, len(topks)]
        outs.append(pooled.permute(1, 0, 2).reshape(rows, channels * len(topks)))
        positions.append(index.permute(1, 0, 2).reshape(-1))  # [rows, channels, max_k], as fluid
    out = torch.cat(outs) if outs else x.new_zeros((0, channels * len(topks)))
    pos = torch.cat(positions).to(torch.int32) if positions else torch.zeros((0,), dtype=torch.int32)
    row_lod = lod_of(ins["ROW"][0])[0]
    return {"Out": [with_lod(out, [list(row_lod)])], "pos": [pos]}


register(
    OpDef(
        "sequence_topk_avg_pooling",
        ("X", "ROW", "COLUMN"),
        ("Out", "pos"),
        {"topks": [], "channel_num": 1},
        lambda ins, a: {
            "Out": [((-1, a["channel_num"] * len(a["topks"])), first(ins, "X").dtype)],
            "pos": [((-1,), "int32")],
        },
        _sequence_topk_avg_pooling,
        grad=GradDef(("X", "ROW", "COLUMN"), out_grads=("Out",), in_grads=("X",)),
    )
)


def _var_conv_2d(ins, a):
    """Per sequence i: X's values as an image [InputChannel, rows_i, cols_i] (rows and columns from
    the LoDs of ROW and COLUMN), convolved with W [OutputChannel, InputChannel * KernelH * KernelW]:
    the kernel's top-left tap KernelH // 2 rows above and KernelW // 2 columns left of each output
    position (zeros outside), (rows - 1) // StrideH + 1 output rows and likewise columns. Out holds
    each sequence's [OutputChannel, out_rows, out_cols] in one column; Col its im2col matrix."""
    x, w = ins["X"][0], ins["W"][0]
    cin, kh, kw, sh, sw = (a[k] for k in ("InputChannel", "KernelH", "KernelW", "StrideH", "StrideW"))
    if w.shape[1] != cin * kh * kw:
        raise ValueError(
            f"var_conv_2d: W must be [OutputChannel, InputChannel * KernelH * KernelW] = "
            f"[{a['OutputChannel']}, {cin * kh * kw}]. Received: {list(w.shape)}"
        )
    outs, cols_out, out_sizes, col_sizes = [], [], [], []
    for rows, cols, image in _sequence_images(ins, "var_conv_2d", cin, "InputChannel"):
        out_rows, out_cols = (rows - 1) // sh + 1 if rows else 0, (cols - 1) // sw + 1 if cols else 0
        padded = torch.nn.functional.pad(image, (kw // 2, kw, kh // 2, kh))
        r_idx = (torch.arange(out_rows) * sh)[:, None] + torch.arange(kh)[None, :]  # [out_rows, kh]
        c_idx = (torch.arange(out_cols) * sw)[:, None] + torch.arange(kw)[None, :]  # [out_cols, kw]
        patches = padded[:, r_idx[:, :, None, None].to(x.device), c_idx[None, None, :, :].to(x.device)]
        col = patches.permute(0, 2, 4, 1, 3).reshape(cin * kh * kw, out_rows * out_cols)
        outs.append((w @ col).reshape(-1))
        cols_out.append(col.detach().reshape(-1))
        out_sizes.append(outs[-1].shape[0])
        col_sizes.append(cols_out[-1].shape[0])
    out = torch.cat(outs).reshape(-1, 1) if outs else x.new_zeros((0, 1))
    col = torch.cat(cols_out).reshape(-1, 1) if cols_out else x.new_zeros((0, 1))
    return {"Out": [with_lod(out, [offsets_of(out_sizes)])], "Col": [with_lod(col, [offsets_of(col_sizes)])]}


register(
    OpDef(
        "var_conv_2d",
        ("X", "ROW", "COLUMN", "W"),
        ("Out", "Col"),
        {"InputChannel": 1, "OutputChannel": 1, "StrideH": 1, "StrideW": 1, "KernelH": 1, "KernelW": 1},
        lambda ins, a: {"Out": [((-1, 1), first(ins, "X").dtype)], "Col": [((-1, 1), first(ins, "X").dtype)]},
        _var_conv_2d,
        grad=GradDef(("X", "ROW", "COLUMN", "W"), out_grads=("Out",), in_grads=("X", "W")),
    )
)


# -- tdm_child: the children of tree nodes (tree-based deep models) -----------------------------------
def _tdm_child(ins, a):
    """Per node id of X: its child_nums children from TreeInfo [nodes, 3 + child_nums] (item id, layer,
    parent, children), and whether each child is an item (a leaf: its item id is not 0). Node 0 is
    padding: no children. Shapes X's + [child_nums], of type ``dtype``."""
    x, info = ins["X"][0], ins["TreeInfo"][0]
    ids = x.long()
    nodes, k = info.shape[0], a["child_nums"]
    if info.shape[1] != 3 + k:
        raise ValueError(
            f"tdm_child: TreeInfo must be [node_nums, 3 + child_nums] = [{nodes}, {3 + k}]. "
            f"Received: {list(info.shape)}"
        )
    if ids.numel() and (int(ids.min()) < 0 or int(ids.max()) >= nodes):
        raise ValueError(
            f"tdm_child: X holds node ids {int(ids.min())}..{int(ids.max())}, but the tree has nodes 0..{nodes - 1}"
        )
    children = info[ids, 3 : 3 + k].long() * (ids != 0).unsqueeze(-1)
    leaf = (info[children, 0] != 0) & (children != 0)
    dtype = TORCH_DTYPES[VarType(a["dtype"])]
    device = a["_device"]  # read on the host, given to the op's device
    return {"Child": [children.to(device, dtype)], "LeafMask": [leaf.to(device, dtype)]}


register(
    OpDef(
        "tdm_child",
        ("X", "TreeInfo"),
        ("Child", "LeafMask"),
        {"child_nums": 1, "dtype": int(VarType.INT32)},
        lambda ins, a: {
            s: [(tuple(first(ins, "X").shape) + (a["child_nums"],), VarType(a["dtype"]))] for s in ("Child", "LeafMask")
        },
        _tdm_child,
        host_inputs=frozenset({"X", "TreeInfo"}),
    )
)


# -- tdm_sampler: positives and negatives along the tree (tree-based deep models) -------------------------
def _tdm_sampler_rows(ids, travel, nodes, negs, lod, with_positive, seed):
    """Per leaf id: per layer the node on its travel path (label 1) unless ``with_positive`` is off,
    then ``negs[l]`` distinct other nodes of the layer (label 0), drawn uniformly by one
    std::mt19937_64 per layer seeded with ``seed`` (fluid's sampler, so its draws); a layer where the
    path is padding (node 0) gives zeros with mask 0."""
    from fluidcompat_ops.mt19937_64 import MT19937_64

    engines = [MT19937_64(seed) for _ in negs]
    out, labels, mask = [], [], []
    for leaf in ids:
        path = travel[leaf]
        o, lab, m = [], [], []
        for layer, (count, engine) in enumerate(zip(negs, engines)):
            width = count + (1 if with_positive else 0)
            positive = path[layer]
            if positive == 0:
                o += [0] * width
                lab += [0] * width
                m += [0] * width
                continue
            if with_positive:
                o.append(positive)
                lab.append(1)
                m.append(1)
            start, size = lod[layer], lod[layer + 1] - lod[layer]
            drawn = []
            while len(drawn) < count:
                node = nodes[start + engine.uniform_int(0, size - 1)]
                if node != positive and node not in drawn:
                    drawn.append(node)
            o += drawn
            lab += [0] * count
            m += [1] * count
        out.append(o)
        labels.append(lab)
        mask.append(m)
    return out, labels, mask


def _tdm_sampler(ins, a):
    x, travel, layer = ins["X"][0], ins["Travel"][0], ins["Layer"][0]
    negs, lod = list(a["neg_samples_num_list"]), list(a["layer_offset_lod"])
    if len(lod) != len(negs) + 1 or lod[-1] > layer.numel():
        raise ValueError(
            f"tdm_sampler: layer_offset_lod {lod} must hold one offset per layer of neg_samples_num_list {negs} "
            f"plus the end, within Layer's {layer.numel()} nodes"
        )
    if travel.dim() != 2 or travel.shape[1] < len(negs):
        raise ValueError(f"tdm_sampler: Travel must be [leaf_node_num, {len(negs)}]. Received {list(travel.shape)}")
    for k, count in enumerate(negs):
        if count >= lod[k + 1] - lod[k]:
            raise ValueError(
                f"tdm_sampler: layer {k} has {lod[k + 1] - lod[k]} nodes, too few for {count} negative samples"
            )
    ids = x.reshape(-1).long().tolist()
    bad = [i for i in ids if not 0 <= i < travel.shape[0]]
    if bad:
        raise ValueError(f"tdm_sampler: X holds ids {bad[:5]} outside the {travel.shape[0]} leaves of Travel")
    seed = a["seed"] or int(torch.randint(1, 2**31 - 1, ()))  # fluid: 0 takes a random seed
    rows = _tdm_sampler_rows(
        ids, travel.long().tolist(), layer.reshape(-1).long().tolist(), negs, lod, a["output_positive"], seed
    )
    width = sum(negs) + (len(negs) if a["output_positive"] else 0)
    dtype = TORCH_DTYPES[VarType(a["dtype"])]
    return {
        slot: [torch.tensor(r, dtype=dtype).reshape(len(ids), width).to(a["_device"])]
        for slot, r in zip(("Out", "Labels", "Mask"), rows)
    }


def _tdm_sampler_infer(ins, a):
    negs = a["neg_samples_num_list"]
    width = sum(negs) + (len(negs) if a["output_positive"] else 0)
    x = first(ins, "X")
    rows = -1 if any(d < 0 for d in x.shape) else int(np.prod(x.shape))
    return {s: [((rows, width), VarType(a["dtype"]))] for s in ("Out", "Labels", "Mask")}


register(
    OpDef(
        "tdm_sampler",
        ("X", "Travel", "Layer"),
        ("Out", "Labels", "Mask"),
        {
            "neg_samples_num_list": [],
            "layer_offset_lod": [],
            "output_positive": True,
            "seed": 0,
            "dtype": int(VarType.INT32),
        },
        _tdm_sampler_infer,
        _tdm_sampler,
        host_inputs=frozenset({"X", "Travel", "Layer"}),
    )
)


# -- rank_attention: per-rank attention over an instance's neighbours (fluid 1.8: CUDA only) ---------------
def _rank_attention_parts(x, offsets, param, max_rank):
    """Per instance i and neighbour slot k: X's row RankOffset[i, 2k + 2] and the [D, C] block
    (own rank - 1) * MaxRank + (neighbour rank - 1) of RankParam, both zero where either rank is
    below 1. RankOffset[i] = [own rank, rank_1, index_1, ..., rank_MaxRank, index_MaxRank]."""
    n, d = x.shape
    if offsets.dim() != 2 or offsets.shape[1] != 2 * max_rank + 1:
        raise ValueError(
            f"rank_attention: RankOffset must be [N, 2 * MaxRank + 1] = [N, {2 * max_rank + 1}]. "
            f"Received {list(offsets.shape)}"
        )
    if param.dim() != 2 or param.shape[0] != max_rank * max_rank * d:
        raise ValueError(
            f"rank_attention: RankParam must have MaxRank * MaxRank * D = {max_rank * max_rank * d} rows. "
            f"Received {list(param.shape)}"
        )
    offsets = offsets.to(x.device).long()
    own = offsets[:, 0] - 1
    ranks = offsets[:, 1::2] - 1
    rows = offsets[:, 2::2]
    valid = (own >= 0).unsqueeze(1) & (ranks >= 0)
    if bool(((rows < 0) | (rows >= n))[valid].any()):
        raise ValueError(f"rank_attention: RankOffset holds row indices outside X's {n} rows")
    gathered = x[rows.clamp(0, max(n - 1, 0))] * valid.unsqueeze(-1).to(x.dtype)
    blocks = own.clamp(min=0).unsqueeze(1) * max_rank + ranks.clamp(min=0)
    weights = param.reshape(max_rank * max_rank, d, -1)[blocks] * valid.to(x.dtype)[..., None, None]
    return gathered, weights


def _rank_attention(ins, a):
    gathered, weights = _rank_attention_parts(ins["X"][0], ins["RankOffset"][0], ins["RankParam"][0], a["MaxRank"])
    return {"Out": [torch.einsum("nkd,nkdc->nc", gathered, weights)]}


register(
    OpDef(
        "rank_attention",
        ("X", "RankOffset", "RankParam"),
        ("Out",),
        {"MaxRank": 3},
        lambda ins, a: {"Out": [((first(ins, "X").shape[0], first(ins, "RankParam").shape[1]), first(ins, "X").dtype)]},
        _rank_attention,
        # fluid 1.8's grad op gives RankParam's gradient only
        grad=GradDef(("X", "RankOffset", "RankParam"), in_grads=("RankParam",)),
    )
)
