"""Indexing ops: slice, crop_tensor, crop, strided_slice, gather, scatter, gather_nd,
scatter_nd_add, index_select, index_sample, where, where_index, multiplex and shard_index; and the
search ops arg_max, arg_min, argsort, top_k, unique and unique_with_counts."""

from __future__ import annotations

from fluidcompat.dtypes import VarType
from fluidcompat_ops.registry import GradDef, OpDef, _op, register
from fluidcompat_ops.shapes import _x, first, norm_axis, out, same_as
from fluidcompat_ops.tensor import _bounds, _tdtype

torch = None  # NOTE: [Lazy torch] in registry.py
F = None


# -- slice -----------------------------------------------------------------------------------------
_SLICE_HOST = frozenset({"StartsTensor", "EndsTensor", "StartsTensorList", "EndsTensorList"})


def _clamp_range(dim: int, start: int, end: int):
    if start < 0:
        start += dim
    if end < 0:
        end += dim
    start = max(0, min(start, dim))
    end = max(0, min(end, dim))
    return start, max(start, end)


def _slice_infer(ins, attrs):
    x = first(ins, "Input")
    shape = list(x.shape)
    axes = attrs["axes"]
    tensor_bounds = any(ins.get(s) for s in _SLICE_HOST)
    if len(attrs["starts"]) != len(axes) and not tensor_bounds:
        raise ValueError(f"starts and axes must have the same length. Received: axes={axes}, starts={attrs['starts']}")
    for i, ax in enumerate(axes):
        a = norm_axis(ax, len(shape), "axes")
        if tensor_bounds or shape[a] < 0:
            shape[a] = -1
            continue
        s, e = _clamp_range(shape[a], attrs["starts"][i], attrs["ends"][i])
        shape[a] = e - s
    dec = [norm_axis(d, len(shape)) for d in attrs.get("decrease_axis", [])]
    if dec:
        shape = [d for i, d in enumerate(shape) if i not in dec] or [1]
    return out("Out", shape, x.dtype)


def _slice_specialize(attrs, slots):
    """Bounds known when the program is prepared: one indexing with Python slices, which clamp
    (and count negative bounds from the end) as fluid's slice does."""
    axes = list(attrs["axes"])
    if slots & _SLICE_HOST or attrs.get("decrease_axis") or any(a < 0 for a in axes) or len(set(axes)) != len(axes):
        return None
    index = [slice(None)] * (max(axes) + 1 if axes else 0)
    for ax, s, e in zip(axes, attrs["starts"], attrs["ends"]):
        index[ax] = slice(s, e)
    index = tuple(index)

    def slice_(ins, attrs):
        return {"Out": [ins["Input"][0][index]]}

    return slice_


def _slice_kernel(ins, attrs):
    x = ins["Input"][0]
    starts = _bounds(ins, "StartsTensor", "StartsTensorList", attrs["starts"])
    ends = _bounds(ins, "EndsTensor", "EndsTensorList", attrs["ends"])
    index = [slice(None)] * x.dim()
    for ax, s, e in zip(attrs["axes"], starts, ends):
        s, e = _clamp_range(x.shape[ax], s, e)
        index[ax] = slice(s, e)
    y = x[tuple(index)]
    dec = attrs.get("decrease_axis")
    if dec:
        keep = [d for i, d in enumerate(y.shape) if i not in {a % x.dim() for a in dec}]
        y = y.reshape(keep or [1])
    return {"Out": [y]}


def _slice_grad(ins, attrs):
    # Input's shape only (fluid: NoNeedBufferVars): its value may be gone by now
    x, g = ins["Input"][0], ins["Out@GRAD"][0]
    starts = _bounds(ins, "StartsTensor", "StartsTensorList", attrs["starts"])
    ends = _bounds(ins, "EndsTensor", "EndsTensorList", attrs["ends"])
    index = [slice(None)] * x.dim()
    kept = list(x.shape)
    for ax, s, e in zip(attrs["axes"], starts, ends):
        s, e = _clamp_range(x.shape[ax], s, e)
        index[ax] = slice(s, e)
        kept[ax] = e - s
    dx = torch.zeros(tuple(x.shape), dtype=g.dtype, device=g.device)
    dx[tuple(index)] = g.reshape(kept)  # a decreased axis is back as a dimension of 1
    return {"Input@GRAD": [dx]}


register(
    OpDef(
        "slice",
        ("Input", "StartsTensor", "EndsTensor", "StartsTensorList", "EndsTensorList"),
        ("Out",),
        {"axes": [], "starts": [], "ends": [], "infer_flags": [], "decrease_axis": []},
        _slice_infer,
        _slice_kernel,
        host_inputs=_SLICE_HOST,
        specialize=_slice_specialize,
        grad=GradDef(kernel=_slice_grad, shape_only=("Input",)),
    )
)

# -- crop_tensor, crop -----------------------------------------------------------------------------
_CROP_HOST = frozenset({"Shape", "Offsets", "ShapeTensor", "OffsetsTensor"})


def _crop_infer(ins, attrs):
    x = first(ins, "X")
    rank = len(x.shape)
    shp = first(ins, "Shape")
    if shp is not None:
        return out("Out", [-1] * rank, x.dtype)
    if ins.get("ShapeTensor"):  # the dims given as numbers are known (-1: a Variable's)
        return out("Out", [int(d) for d in attrs["shape"]] or [-1] * len(ins["ShapeTensor"]), x.dtype)
    shape = list(attrs["shape"])
    if len(shape) != rank:
        raise ValueError(
            f"the number of elements in shape must equal the rank of X. Received: shape={shape}, X.shape={x.shape}"
        )
    offsets = list(attrs["offsets"]) or [0] * rank
    known_offsets = not ins.get("Offsets") and not ins.get("OffsetsTensor")
    res = []
    for i, d in enumerate(shape):
        if d == -1:
            res.append(x.shape[i] - offsets[i] if known_offsets and x.shape[i] >= 0 else -1)
        else:
            if known_offsets and x.shape[i] >= 0 and offsets[i] + d > x.shape[i]:
                raise ValueError(
                    f"offsets[{i}] + shape[{i}] must not exceed X.shape[{i}]. "
                    f"Received: offsets={offsets}, shape={shape}, X.shape={x.shape}"
                )
            res.append(d)
    return out("Out", res, x.dtype)


def _crop_specialize(attrs, slots):
    """Offsets from the attributes and the shape from ``Shape`` (or the attributes): one indexing."""
    if slots & {"Offsets", "OffsetsTensor", "ShapeTensor"}:
        return None
    general = _crop_kernel
    fixed_offsets = list(attrs["offsets"])

    def crop_tensor(ins, attrs):
        x = ins["X"][0]
        shp = ins.get("Shape")
        shape = shp[0].tolist() if shp else attrs["shape"]
        offsets = fixed_offsets or [0] * x.dim()
        if len(shape) != x.dim() or -1 in shape:
            return general(ins, attrs)
        xs = x.shape
        for i, d in enumerate(shape):
            if offsets[i] + d > xs[i] or d < 0:
                return general(ins, attrs)  # its error names the problem
        return {"Out": [x[tuple(slice(o, o + d) for o, d in zip(offsets, shape))]]}

    return crop_tensor


def _crop_kernel(ins, attrs):
    x = ins["X"][0]
    rank = x.dim()
    shape = _bounds(ins, "Shape", "ShapeTensor", list(attrs["shape"]))
    offsets = _bounds(ins, "Offsets", "OffsetsTensor", list(attrs["offsets"]) or [0] * rank)
    if len(shape) != rank:
        raise ValueError(f"crop_tensor: Shape has {len(shape)} values but X has rank {rank}. Received: {shape}")
    index = []
    for i in range(rank):
        d = shape[i] if shape[i] != -1 else x.shape[i] - offsets[i]
        if offsets[i] + d > x.shape[i] or d < 0:
            raise ValueError(
                f"crop_tensor: offsets + shape exceed X's shape at dim {i}. "
                f"Received: offsets={offsets}, shape={shape}, X.shape={list(x.shape)}"
            )
        index.append(slice(offsets[i], offsets[i] + d))
    return {"Out": [x[tuple(index)]]}


register(
    OpDef(
        "crop_tensor",
        ("X", "Shape", "Offsets", "ShapeTensor", "OffsetsTensor"),
        ("Out",),
        {"offsets": [], "shape": []},
        _crop_infer,
        _crop_kernel,
        host_inputs=_CROP_HOST,
        grad=GradDef(),
        specialize=_crop_specialize,
    )
)


def _crop_v1_infer(ins, attrs):
    """fluid 1.8's deprecated crop: the output has Y's shape when Y is given, else attr shape."""
    x, y = first(ins, "X"), first(ins, "Y")
    shape = list(y.shape) if y is not None else list(attrs["shape"])
    if len(shape) != len(x.shape):
        raise ValueError(
            f"crop: the shape to crop to has {len(shape)} dims but X has {len(x.shape)}. "
            f"Received: shape={shape}, X.shape={list(x.shape)}"
        )
    return out("Out", shape, x.dtype)


def _crop_v1_kernel(ins, attrs):
    x, y = ins["X"][0], first(ins, "Y")
    shape = list(y.shape) if y is not None else list(attrs["shape"])
    offsets = _bounds(ins, "Offsets", "", list(attrs["offsets"]) or [0] * x.dim())
    if len(shape) != x.dim() or len(offsets) != x.dim():
        raise ValueError(
            f"crop: shape and offsets need one value per dim of X. Received: shape={shape}, "
            f"offsets={offsets}, X.shape={list(x.shape)}"
        )
    for i, (o, d) in enumerate(zip(offsets, shape)):
        if o < 0 or d < 0 or o + d > x.shape[i]:
            raise ValueError(
                f"crop: offsets + shape exceed X's shape at dim {i}. "
                f"Received: offsets={offsets}, shape={shape}, X.shape={list(x.shape)}"
            )
    return {"Out": [x[tuple(slice(o, o + d) for o, d in zip(offsets, shape))]]}


register(
    OpDef(
        "crop",
        ("X", "Y", "Offsets"),
        ("Out",),
        {"offsets": [], "shape": []},
        _crop_v1_infer,
        _crop_v1_kernel,
        host_inputs=frozenset({"Offsets"}),
        no_buffer_inputs=frozenset({"Y"}),  # read for its shape
        optional_inputs=frozenset({"Y", "Offsets"}),
        grad=GradDef(inputs=("X", "Y", "Offsets"), in_grads=("X",)),
    )
)


# -- strided_slice ---------------------------------------------------------------------------------
_STRIDED_HOST = frozenset(
    {"StartsTensor", "EndsTensor", "StridesTensor", "StartsTensorList", "EndsTensorList", "StridesTensorList"}
)


def _decreased(shape, a, rank):
    """``shape`` without the ``decrease_axis`` dimensions (an index, not a range): [1] if none is left."""
    dec = {d % rank for d in a.get("decrease_axis") or ()}
    if not dec:
        return list(shape)
    return [d for i, d in enumerate(shape) if i not in dec] or [1]


def _strided_slice_infer(ins, a):
    x = first(ins, "Input")
    shape = list(x.shape)
    if any(ins.get(s) for s in ("StartsTensor", "EndsTensor", "StridesTensor")):  # as fluid: nothing known
        return out("Out", [-1] * len(shape), x.dtype)
    tensor_bounds = any(ins.get(s) for s in _STRIDED_HOST)
    for axis, s, e, st in zip(a["axes"], a["starts"], a["ends"], a["strides"]):
        n = shape[axis]
        if n < 0:
            continue
        shape[axis] = -1 if tensor_bounds else len(range(*slice(s, e, st).indices(n)))
    return out("Out", _decreased(shape, a, len(shape)), x.dtype)


def _strided_slice(ins, a):
    x = ins["Input"][0]
    idx = [slice(None)] * x.dim()
    flips = []
    starts = _bounds(ins, "StartsTensor", "StartsTensorList", a["starts"])
    ends = _bounds(ins, "EndsTensor", "EndsTensorList", a["ends"])
    strides = _bounds(ins, "StridesTensor", "StridesTensorList", a["strides"])
    for axis, s, e, st in zip(a["axes"], starts, ends, strides):
        n = x.shape[axis]
        r = range(*slice(s, e, st).indices(n))
        if st > 0:
            idx[axis] = slice(r.start, r.stop, st)
        else:
            idx[axis] = torch.tensor(list(r), dtype=torch.long, device=x.device)
            flips.append(axis)
    y = x
    for axis, ix in enumerate(idx):
        if isinstance(ix, slice):
            y = y[(slice(None),) * axis + (ix,)]
        else:
            y = torch.index_select(y, axis, ix)
    return {"Out": [y.reshape(_decreased(y.shape, a, x.dim()))]}


_op(
    "strided_slice",
    ("Input",) + tuple(sorted(_STRIDED_HOST)),
    ("Out",),
    {"axes": [], "starts": [], "ends": [], "strides": [], "infer_flags": [], "decrease_axis": []},
    _strided_slice_infer,
    _strided_slice,
    host_inputs=_STRIDED_HOST,
)


# -- gather, scatter ---------------------------------------------------------------------------------
def _check_gather_index(shape) -> None:
    if len(shape) == 2 and shape[1] != 1 or len(shape) > 2:
        raise ValueError(f"Index must be 1-D or [N, 1]. Received: Index.shape={shape}")


def _gather_infer(ins, attrs):
    x, idx = first(ins, "X"), first(ins, "Index")
    _check_gather_index(idx.shape)
    return out("Out", (idx.shape[0],) + tuple(x.shape[1:]), x.dtype)


register(
    OpDef(
        "gather",
        ("X", "Index"),
        ("Out",),
        {"overwrite": True},
        _gather_infer,
        lambda ins, attrs: _gather_kernel(ins["X"][0], ins["Index"][0]),
        grad=GradDef(kernel=lambda ins, a: _gather_grad(ins, a), shape_only=("X",)),
    )
)


def _gather_kernel(x, idx):
    if idx.dim() != 1:  # (what a built program's check refuses)
        _check_gather_index(tuple(idx.shape))
    return {"Out": [x.index_select(0, idx.reshape(-1).long())]}


def _gather_grad(ins, attrs):
    # X's shape only (fluid: NoNeedBufferVars); repeated indices add up
    x, idx, g = ins["X"][0], ins["Index"][0], ins["Out@GRAD"][0]
    dx = torch.zeros(tuple(x.shape), dtype=g.dtype, device=g.device)
    return {"X@GRAD": [dx.index_add(0, idx.reshape(-1).long().to(g.device), g)]}


def _scatter_kernel(ins, attrs):
    x, ids, upd = ins["X"][0], ins["Ids"][0].reshape(-1).long(), ins["Updates"][0]
    res = x.clone()
    if attrs["overwrite"]:
        res[ids] = upd
    else:
        res[ids] = 0
        res.index_add_(0, ids, upd)
    return {"Out": [res]}


def _scatter_infer(ins, attrs):
    """fluid 1.8.5's checks when built (Ids 1-D, Updates of X's rank and of Ids' length), and the rows'
    shape, which it checked when run."""
    x, ids, upd = first(ins, "X"), first(ins, "Ids"), first(ins, "Updates")
    if len(ids.shape) != 1:
        raise ValueError(f"Update Ids should be 1-D. Received: Ids '{ids.name}' of shape {list(ids.shape)}")
    if len(upd.shape) != len(x.shape):
        raise ValueError(
            f"X and Updates should have the same rank. Received: X '{x.name}' of shape {list(x.shape)}, Updates "
            f"'{upd.name}' of shape {list(upd.shape)}"
        )
    if upd.shape[0] >= 0 and ids.shape[0] >= 0 and upd.shape[0] != ids.shape[0]:
        raise ValueError(
            f"Updates and Ids should have same batch-size. Received: Updates '{upd.name}' of shape "
            f"{list(upd.shape)}, Ids '{ids.name}' of shape {list(ids.shape)}"
        )
    if any(u >= 0 and d >= 0 and u != d for u, d in zip(upd.shape[1:], x.shape[1:])):
        raise ValueError(
            f"Each row of Updates must have X's row shape {list(x.shape[1:])}. Received: Updates '{upd.name}' of "
            f"shape {list(upd.shape)}"
        )
    return same_as()(ins, attrs)


register(
    OpDef(
        "scatter",
        ("X", "Ids", "Updates"),
        ("Out",),
        {"overwrite": True},
        _scatter_infer,
        _scatter_kernel,
        grad=GradDef(),
    )
)


# -- index_select, index_sample, gather_nd, scatter_nd_add -----------------------------------------
def _index_select_infer(ins, a):
    x, idx = first(ins, "X"), first(ins, "Index")
    shape = list(x.shape)
    shape[norm_axis(a["dim"], len(shape))] = idx.shape[0]
    return out("Out", shape, x.dtype)


_op(
    "index_select",
    ("X", "Index"),
    ("Out",),
    {"dim": 0},
    _index_select_infer,
    lambda ins, a: {"Out": [torch.index_select(_x(ins), a["dim"], ins["Index"][0].reshape(-1).long())]},
)
_op(
    "index_sample",
    ("X", "Index"),
    ("Out",),
    {},
    lambda ins, a: out("Out", first(ins, "Index").shape, first(ins, "X").dtype),
    lambda ins, a: {"Out": [torch.gather(_x(ins), 1, ins["Index"][0].long())]},
)


def _gather_nd_infer(ins, a):
    x, idx = first(ins, "X"), first(ins, "Index")
    k = idx.shape[-1]
    if k > len(x.shape):
        raise ValueError(
            f"Input(Index).shape[-1] should be no greater than Input(X).rank. Received: Index '{idx.name}' of "
            f"shape {list(idx.shape)}, X '{x.name}' of rank {len(x.shape)}"
        )
    return out("Out", list(idx.shape[:-1]) + list(x.shape[k:]), x.dtype)


def _gather_nd(ins, a):
    x, idx = _x(ins), ins["Index"][0].long()
    k = idx.shape[-1]
    flat = idx.reshape(-1, k)
    got = x[tuple(flat[:, j] for j in range(k))] if k else x.expand(flat.shape[0], *x.shape)
    return {"Out": [got.reshape(tuple(idx.shape[:-1]) + tuple(x.shape[k:]))]}


_op("gather_nd", ("X", "Index"), ("Out",), {}, _gather_nd_infer, _gather_nd)


def _scatter_nd_add(ins, a):
    x, idx, upd = _x(ins), ins["Index"][0].long(), ins["Updates"][0]
    k = idx.shape[-1]
    flat = idx.reshape(-1, k)
    result = x.clone()
    result.index_put_(tuple(flat[:, j] for j in range(k)), upd.reshape((flat.shape[0],) + tuple(x.shape[k:])), True)
    return {"Out": [result]}


_op("scatter_nd_add", ("X", "Index", "Updates"), ("Out",), {}, same_as(), _scatter_nd_add)


# -- where -------------------------------------------------------------------------------------------------
register(
    OpDef(
        "where_index",
        ("Condition",),
        ("Out",),
        {},
        lambda ins, attrs: out("Out", (-1, len(ins["Condition"][0].shape)), VarType.INT64),
        lambda ins, attrs: {"Out": [torch.nonzero(ins["Condition"][0])]},
    )
)


def _where_infer(ins, attrs):
    x, y = first(ins, "X"), first(ins, "Y")
    if tuple(x.shape) != tuple(y.shape):
        raise ValueError(f"X and Y must have the same shape. Received: X.shape={x.shape}, Y.shape={y.shape}")
    return out("Out", x.shape, x.dtype)


register(
    OpDef(
        "where",
        ("Condition", "X", "Y"),
        ("Out",),
        {},
        _where_infer,
        lambda ins, attrs: {"Out": [torch.where(ins["Condition"][0], ins["X"][0], ins["Y"][0])]},
        grad=GradDef(in_grads=("X", "Y")),
    )
)


# -- multiplex, shard_index ------------------------------------------------------------------------
def _multiplex(ins, a):
    xs, ids = ins["X"], ins["Ids"][0].reshape(-1).long()
    stacked = torch.stack(xs, 0)
    return {"Out": [stacked[ids, torch.arange(ids.numel(), device=ids.device)]]}


_op(
    "multiplex", ("X", "Ids"), ("Out",), {}, lambda ins, a: out("Out", ins["X"][0].shape, ins["X"][0].dtype), _multiplex
)


def _shard_index(ins, a):
    x = _x(ins)
    size = (a["index_num"] + a["nshards"] - 1) // a["nshards"]
    mine = (x // size) == a["shard_id"]
    return {"Out": [torch.where(mine, x % size, torch.full_like(x, a["ignore_value"]))]}


_op(
    "shard_index",
    ("X",),
    ("Out",),
    {"index_num": 0, "nshards": 0, "shard_id": 0, "ignore_value": -1},
    same_as(),
    _shard_index,
    grad=False,
)


# -- arg_max, arg_min, argsort, top_k --------------------------------------------------------------
def _arg_infer(ins, attrs):
    x = first(ins, "X")
    if attrs.get("flatten"):
        shape = [1]
    else:
        axis = norm_axis(attrs["axis"], len(x.shape))
        shape = list(x.shape)
        if attrs["keepdims"]:
            shape[axis] = 1
        else:
            shape.pop(axis)
        shape = shape or [1]
    return out("Out", shape, VarType.INT32 if attrs.get("dtype") == int(VarType.INT32) else VarType.INT64)


def _arg_kernel(fn):
    def kernel(ins, attrs):
        x = ins["X"][0]
        if attrs.get("flatten"):
            r = fn(x.reshape(-1), 0, False).reshape(1)
        else:
            r = fn(x, attrs["axis"], attrs["keepdims"])
            if r.dim() == 0:
                r = r.reshape(1)
        if attrs.get("dtype") == int(VarType.INT32):
            r = r.to(torch.int32)
        return {"Out": [r]}

    return kernel


_ARG_ATTRS = {"axis": 0, "keepdims": False, "dtype": -1}  # (a later Paddle's "flatten" is read when set)
register(
    OpDef(
        "arg_max",
        ("X",),
        ("Out",),
        _ARG_ATTRS,
        _arg_infer,
        _arg_kernel(lambda x, d, k: torch.argmax(x, dim=d, keepdim=k)),
    )
)
register(
    OpDef(
        "arg_min",
        ("X",),
        ("Out",),
        _ARG_ATTRS,
        _arg_infer,
        _arg_kernel(lambda x, d, k: torch.argmin(x, dim=d, keepdim=k)),
    )
)


def _argsort_infer(ins, attrs):
    x = first(ins, "X")
    norm_axis(attrs["axis"], len(x.shape))
    return {"Out": [(x.shape, x.dtype)], "Indices": [(x.shape, VarType.INT64)]}


def _argsort_kernel(ins, attrs):
    v, i = torch.sort(ins["X"][0], dim=attrs["axis"], descending=attrs["descending"], stable=True)
    return {"Out": [v], "Indices": [i]}


def _argsort_grad(ins, attrs):
    """Each sorted element's gradient back to where it came from (fluid's argsort_grad)."""
    x, idx, dout = ins["X"][0], ins["Indices"][0], ins["Out@GRAD"][0]
    return {"X@GRAD": [torch.zeros_like(x).scatter_(attrs["axis"] % max(x.dim(), 1), idx, dout)]}


register(
    OpDef(
        "argsort",
        ("X",),
        ("Out", "Indices"),
        {"axis": -1, "descending": False},
        _argsort_infer,
        _argsort_kernel,
        grad=GradDef(("Indices", "X"), kernel=_argsort_grad),
    )
)


def _topk_infer(ins, attrs):
    x = first(ins, "X")
    k = -1 if ins.get("K") else attrs["k"]
    if k > 0 and x.shape[-1] >= 0 and k > x.shape[-1]:
        raise ValueError(f"k must not exceed the last dim of X. Received: k={k}, X.shape={x.shape}")
    shape = tuple(x.shape[:-1]) + (k,)
    return {"Out": [(shape, x.dtype)], "Indices": [(shape, VarType.INT64)]}


def _partial_sort_order(values, k):
    """The first k indices of ``values`` in the order fluid 1.8.5's CPU top_k gives them: libstdc++'s
    std::partial_sort (a heap of the first k, then sorted) with comp(a, b) = a > b. It differs from a
    sorted order only among equal values: which of them are kept and in what order."""
    vec = list(range(len(values)))

    def comp(a, b):
        return values[a] > values[b]

    def push(hole, top, value):
        parent = (hole - 1) // 2
        while hole > top and comp(vec[parent], value):
            vec[hole] = vec[parent]
            hole = parent
            parent = (hole - 1) // 2
        vec[hole] = value

    def adjust(hole, length, value):
        top = second = hole
        while second < (length - 1) // 2:
            second = 2 * (second + 1)
            if comp(vec[second], vec[second - 1]):
                second -= 1
            vec[hole] = vec[second]
            hole = second
        if length % 2 == 0 and second == (length - 2) // 2:
            second = 2 * (second + 1)
            vec[hole] = vec[second - 1]
            hole = second - 1
        push(hole, top, value)

    def pop(last, result):  # __pop_heap(first, last, result)
        value = vec[result]
        vec[result] = vec[0]
        adjust(0, last, value)

    if k >= 2:  # make_heap(first, first + k)
        parent = (k - 2) // 2
        while True:
            adjust(parent, k, vec[parent])
            if parent == 0:
                break
            parent -= 1
    for i in range(k, len(values)):
        if comp(vec[i], vec[0]):
            pop(k, i)
    last = k
    while last > 1:  # sort_heap
        last -= 1
        pop(last, last)
    return vec[:k]


def _topk_kernel(ins, attrs):
    kt = first(ins, "K")
    k = int(kt.reshape(-1)[0]) if kt is not None else attrs["k"]
    x = ins["X"][0]
    n = x.shape[-1] if x.dim() else 1
    v, i = torch.topk(x, min(k + 1, n), dim=-1, largest=True, sorted=True)
    if x.device.type == "cpu" and k and v.numel():
        # rows with equal values among the k + 1 largest: the kept indices and their order are fluid's
        tied = (v[..., 1:] == v[..., :-1]).any(-1).reshape(-1)
        if bool(tied.any()):
            i = i[..., :k].clone()
            rows, flat_x = i.reshape(-1, k), x.reshape(-1, n)
            for r in tied.nonzero().reshape(-1).tolist():
                rows[r] = torch.tensor(_partial_sort_order(flat_x[r].tolist(), k), dtype=i.dtype)
    v, i = v[..., :k], i[..., :k]
    return {"Out": [v], "Indices": [i]}


register(
    OpDef(
        "top_k",
        ("X", "K"),
        ("Out", "Indices"),
        {"k": 1},
        _topk_infer,
        _topk_kernel,
        host_inputs=frozenset({"K"}),
        grad=GradDef(("X", "Indices"), in_grads=("X",), kernel=lambda ins, a: _topk_grad(ins, a)),
    )
)


def _topk_grad(ins, attrs):
    x, idx, g = ins["X"][0], ins["Indices"][0], ins["Out@GRAD"][0]
    return {"X@GRAD": [torch.zeros_like(x).scatter(-1, idx, g)]}


# -- unique, unique_with_counts --------------------------------------------------------------------
def _unique_infer(ins, a):
    x = first(ins, "X")
    result = {"Out": [((-1,), x.dtype)], "Index": [(x.shape, a["dtype"])]}
    result["Count"] = [((-1,), a["dtype"])]
    return result


def _unique(ins, a):
    x = _x(ins).reshape(-1)
    # fluid 1.8's unique keeps the order of first appearance
    uniq, inverse, counts = torch.unique(x, sorted=True, return_inverse=True, return_counts=True)
    first_at = torch.full((uniq.numel(),), x.numel(), dtype=torch.int64, device=x.device)
    first_at.scatter_reduce_(0, inverse, torch.arange(x.numel(), device=x.device), "amin")
    order = torch.argsort(first_at)
    rank = torch.empty_like(order)
    rank[order] = torch.arange(order.numel(), device=x.device)
    dt = _tdtype(a["dtype"])
    return {"Out": [uniq[order]], "Index": [rank[inverse].to(dt)], "Count": [counts[order].to(dt)]}


_op("unique", ("X",), ("Out", "Index"), {"dtype": 2}, _unique_infer, _unique, grad=False)
_op("unique_with_counts", ("X",), ("Out", "Index", "Count"), {"dtype": 2}, _unique_infer, _unique, grad=False)
