"""fluid 1.8's LoD sequence ops: sequence_pool, sequence_softmax, sequence_conv, sequence_reverse,
sequence_pad/unpad, sequence_reshape, sequence_concat, sequence_enumerate, sequence_slice,
sequence_expand/expand_as.

# NOTE: [LoD values]
# A value with a LoD is a torch tensor carrying its offsets (fluid's ``lod()``: a list of levels,
# each a list of row offsets) as the attribute ``_lod``. The executor sets it on fed LoDTensors; the
# kernels here read the last level and set their outputs' LoD; in a program that uses LoD the
# interpreter gives other ops' outputs their first input's LoD as fluid's ShareLoD does
# (interpreter._sharing_lod). Programs without LoD never look at the attribute.
"""

from __future__ import annotations

import numpy as np

from fluidcompat_ops.registry import GradDef, OpDef, register
from fluidcompat_ops.shapes import first, out

torch = None  # NOTE: [Lazy torch] in registry.py
F = None

LOD_ATTR = "_lod"


def lod_of(t) -> list:
    """The LoD a value carries ([] for none)."""
    return getattr(t, LOD_ATTR, None) or []


def with_lod(t, lod):
    """``t`` carrying ``lod`` (levels of offsets; shared, as no one changes a LoD in place); an empty
    LoD leaves it without one."""
    if lod:
        setattr(t, LOD_ATTR, lod)
    return t


def offsets_of(lengths) -> list:
    """One LoD level's offsets from its sequence lengths."""
    offsets = [0]
    for n in lengths:
        offsets.append(offsets[-1] + int(n))
    return offsets


def lengths_of(offsets) -> list:
    """The sequence lengths of one LoD level's offsets."""
    return [b - a for a, b in zip(offsets, offsets[1:])]


def _last_level(x, op_name: str, what: str = "Input(X)") -> list:
    lod = lod_of(x)
    if not lod:
        raise ValueError(
            f"{what} Tensor of {op_name} does not contain LoD information: feed it as a LoDTensor with sequence "
            "lengths (fluid.create_lod_tensor(data, [lengths], place)) or pass it through ops that keep its LoD"
        )
    return lod[-1]


def _lod_sequences(x, op_name, what):
    """The sequences of a LoD [rows, 1] tensor, as lists."""
    offsets = _last_level(x, op_name, what)
    flat = x.reshape(-1).tolist()
    return [flat[s:e] for s, e in zip(offsets, offsets[1:])]


def _image_of_rows(offsets) -> list:
    """The image of each row, from one LoD level's offsets (rows per image)."""
    return [b for b, n in enumerate(lengths_of(offsets)) for _ in range(n)]


def _segments(offsets, device):
    """(lengths, the sequence of each row) as int64 tensors."""
    lengths = torch.tensor(lengths_of(offsets), dtype=torch.int64, device=device)
    ids = torch.repeat_interleave(torch.arange(len(offsets) - 1, device=device), lengths, output_size=offsets[-1])
    return lengths, ids


def _steps_of(lengths, device):
    """For each row of sequences ``lengths`` long, its sequence and its step (int64 tensors): the
    row's place in a padded [sequences, time, ...] tensor."""
    lengths = np.asarray(lengths, dtype=np.int64).reshape(-1)
    ids = np.repeat(np.arange(len(lengths)), lengths)
    steps = np.arange(len(ids)) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    return torch.from_numpy(ids).to(device), torch.from_numpy(steps).to(device)


def _padded(flat, offsets, fill, maxlen=None, reverse=False):
    """[num_seqs, maxlen, width] from the rows of ``flat`` ([rows, width]), each sequence reversed
    with ``reverse``, ``fill`` past each end; also each row's position in the flattened padded tensor."""
    lengths = lengths_of(offsets)
    n = len(lengths)
    maxlen = max(lengths, default=0) if maxlen is None else maxlen
    ids, step = _steps_of(lengths, flat.device)
    if reverse:
        step = torch.tensor(lengths, dtype=torch.int64, device=flat.device)[ids] - 1 - step
    pos = ids * maxlen + step
    padded = torch.full((n * maxlen, flat.shape[1]), fill, dtype=flat.dtype, device=flat.device)
    padded.index_put_((pos,), flat[: len(pos)])
    return padded.reshape(n, maxlen, flat.shape[1]), pos


def _real_steps(padded, pos):
    """[num_seqs, maxlen, 1]: True where ``padded`` holds a row (``pos`` from ``_padded``)."""
    mask = torch.zeros(padded.shape[0] * padded.shape[1], dtype=torch.bool, device=padded.device)
    mask[pos] = True
    return mask.reshape(padded.shape[:2] + (1,))


def _op(name, inputs, outputs, attrs, infer, kernel, grad_outs=None, in_grads=None, **kw):
    grad = GradDef(out_grads=grad_outs or (outputs[0],), in_grads=in_grads) if grad_outs is not False else None
    register(OpDef(name, inputs, outputs, attrs, infer, kernel, grad=grad, **kw))


# -- sequence_pool --------------------------------------------------------------------------------
POOL_TYPES = ("MAX", "FIRST", "LAST", "SQRT", "SUM", "AVERAGE")


def _sequence_pool(ins, a):
    x = ins["X"][0]
    pooltype = a["pooltype"].upper()
    if pooltype not in POOL_TYPES:
        raise ValueError(
            f"Value {pooltype} is not in enum container [{' ,'.join(POOL_TYPES)}] (sequence_pool pooltype)"
        )
    offsets = _last_level(x, "SequencePoolOp")
    flat = x.reshape(x.shape[0], -1)
    lengths, ids = _segments(offsets, x.device)
    n = len(offsets) - 1
    empty = (lengths == 0).unsqueeze(1)
    result = {}
    if pooltype in ("SUM", "AVERAGE", "SQRT"):
        pooled = torch.zeros((n, flat.shape[1]), dtype=flat.dtype, device=flat.device).index_add(0, ids, flat)
        scale = lengths.to(flat.dtype).clamp(min=1).unsqueeze(1)
        if pooltype == "AVERAGE":
            pooled = pooled / scale
        elif pooltype == "SQRT":
            pooled = pooled / scale.sqrt()
    elif pooltype == "MAX":
        padded, _ = _padded(flat, offsets, float("-inf"))
        if padded.shape[1] == 0:
            pooled, where = padded.new_zeros((n, flat.shape[1])), torch.zeros((n, flat.shape[1]), dtype=torch.int64)
        else:
            pooled, where = padded.max(dim=1)
        start = torch.tensor(offsets[:-1], dtype=torch.int64, device=flat.device).unsqueeze(1)
        result["MaxIndex"] = [torch.where(empty, torch.zeros_like(where), where + start).to(torch.int32)]
    else:  # FIRST, LAST
        rows = offsets[:-1] if pooltype == "FIRST" else [b - 1 for b in offsets[1:]]
        # (an empty sequence reads any row: its result is the pad value)
        index = torch.tensor(rows, dtype=torch.int64, device=flat.device).clamp(0, max(flat.shape[0] - 1, 0))
        pooled = flat[index] if flat.shape[0] else flat.new_zeros((n, flat.shape[1]))
    pooled = torch.where(empty, torch.full_like(pooled, a["pad_value"]), pooled)
    if "MaxIndex" not in result:  # (read by the grad op of MAX alone; zeros for the other kinds)
        result["MaxIndex"] = [torch.zeros(pooled.shape, dtype=torch.int32, device=pooled.device)]
    result["Out"] = [with_lod(pooled.reshape((n,) + tuple(x.shape[1:])), lod_of(x)[:-1])]
    return result


def _sequence_pool_infer(ins, a):
    x = first(ins, "X")
    shape = (-1,) + tuple(x.shape[1:])
    return {"Out": [(shape, x.dtype)], "MaxIndex": [(shape, 2)]}


def _sequence_pool_grad(ins, a):
    """Each row's share of its sequence's gradient: all of it to the max row (MaxIndex), the first or
    last row; the sum's, divided by the length (AVERAGE) or its square root (SQRT) to every row."""
    x, dout = ins["X"][0], ins["Out@GRAD"][0]
    pooltype = a["pooltype"].upper()
    offsets = _last_level(x, "SequencePoolGradOp")
    if x.shape[0] == 0:
        return {"X@GRAD": [torch.zeros_like(x)]}
    width = x[0].numel() if x.shape[0] else 1
    g = dout.reshape(-1, width).to(x.dtype)
    lengths, ids = _segments(offsets, x.device)
    if pooltype in ("SUM", "AVERAGE", "SQRT"):
        dx = g[ids]
        if pooltype != "SUM":
            scale = lengths.to(x.dtype).clamp(min=1)
            dx = dx / (scale if pooltype == "AVERAGE" else scale.sqrt())[ids].unsqueeze(1)
        return {"X@GRAD": [dx.reshape(x.shape)]}
    # an empty sequence's gradient goes nowhere: zeros, added to a row it points at (MaxIndex 0)
    g = g * (lengths > 0).to(g.dtype).unsqueeze(1)
    if pooltype == "MAX":
        where = ins["MaxIndex"][0].reshape(-1, width).to(torch.int64)
        flat = (where * width + torch.arange(width, device=x.device)).reshape(-1)
        dx = x.new_zeros(x.numel()).index_put((flat,), g.reshape(-1), accumulate=True)
        return {"X@GRAD": [dx.reshape(x.shape)]}
    rows = offsets[:-1] if pooltype == "FIRST" else [b - 1 for b in offsets[1:]]
    rows = torch.tensor(rows, dtype=torch.int64, device=x.device).clamp(0, max(x.shape[0] - 1, 0))
    dx = x.new_zeros((x.shape[0], width)).index_put((rows,), g, accumulate=True)
    return {"X@GRAD": [dx.reshape(x.shape)]}


register(
    OpDef(
        "sequence_pool",
        ("X",),
        ("Out", "MaxIndex"),
        {"pooltype": "AVERAGE", "is_test": False, "pad_value": 0.0},
        _sequence_pool_infer,
        _sequence_pool,
        grad=GradDef(("X", "MaxIndex"), kernel=_sequence_pool_grad, double=True),
    )
)


# -- sequence_softmax -----------------------------------------------------------------------------
def _sequence_softmax(ins, a):
    x = ins["X"][0]
    offsets = _last_level(x, "SequenceSoftmax operator")
    if x.shape[0] != x.numel():
        raise ValueError(
            "The width of each timestep in Input(X) of SequenceSoftmax operator should be 1. But the first "
            f"dimension of Input(X) is {x.shape[0]}, the number of elements is {x.numel()}."
        )
    padded, pos = _padded(x.reshape(-1, 1), offsets, float("-inf"))
    soft = torch.softmax(padded.squeeze(2), dim=1) if padded.shape[1] else padded.squeeze(2)
    return {"Out": [with_lod(soft.reshape(-1)[pos].reshape(x.shape), lod_of(x))]}


def _same_shape(ins, a):
    x = first(ins, "X")
    return out("Out", x.shape, x.dtype)


_op(
    "sequence_softmax",
    ("X",),
    ("Out",),
    {"use_cudnn": False, "data_format": "AnyLayout"},
    _same_shape,
    _sequence_softmax,
)


# -- sequence_conv --------------------------------------------------------------------------------
def _context_index(offsets, n: int, start: int, length: int, padded: bool, device):
    """[rows, length]: for row t, the rows t+start ... t+start+length-1 of its own sequence as indices
    into cat([rows, a zero row, padding rows]) (fluid's context projection). Outside its sequence a
    row reads the zero row or, with trainable padding (``padded``: up = -start rows for before a
    sequence, then the rows for after it), the padding row ``up + (r - edge)``."""
    lengths, ids = _segments(offsets, device)
    begin = torch.tensor(offsets[:-1], dtype=torch.int64, device=device)[ids].unsqueeze(1)
    end = begin + lengths[ids].unsqueeze(1)
    r = torch.arange(n, device=device).unsqueeze(1) + start + torch.arange(length, device=device)
    if padded:
        up = max(0, -start)
        outside = torch.where(r < begin, n + 1 + up + (r - begin), n + 1 + up + (r - end))
    else:
        outside = torch.full_like(r, n)
    return torch.where((r >= begin) & (r < end), r, outside)


def _context(flat, offsets, start: int, length: int, padding=None):
    """(the [rows, length * width] context of every row of ``flat``, its ``_context_index``, the rows
    it reads: ``flat``, a zero row, ``padding``)."""
    index = _context_index(offsets, flat.shape[0], start, length, padding is not None, flat.device)
    source = torch.cat([flat, flat.new_zeros((1, flat.shape[1]))] + ([padding] if padding is not None else []))
    return source[index.reshape(-1)].reshape(flat.shape[0], -1), index, source


def _conv_context(ins, a):
    x = ins["X"][0]
    offsets = _last_level(x, "SequenceConvOp")
    if a["contextStride"] != 1:
        raise ValueError(f"sequence_conv: only contextStride 1 is supported. Received: {a['contextStride']}")
    padding = first(ins, "PaddingData") if a["paddingTrainable"] else None
    return _context(x.reshape(x.shape[0], -1), offsets, a["contextStart"], a["contextLength"], padding)


def _sequence_conv(ins, a):
    ctx, _, _ = _conv_context(ins, a)
    return {"Out": [with_lod(ctx @ ins["Filter"][0], lod_of(ins["X"][0]))]}


def _sequence_conv_grad(ins, a):
    x, w, dout = ins["X"][0], ins["Filter"][0], ins["Out@GRAD"][0].to(ins["X"][0].dtype)
    ctx, index, source = _conv_context(ins, a)
    dctx = (dout @ w.t()).reshape(-1, source.shape[1])
    dsource = torch.zeros_like(source).index_add(0, index.reshape(-1), dctx)
    n = x.shape[0]
    result = {"X@GRAD": [dsource[:n].reshape(x.shape)], "Filter@GRAD": [ctx.t() @ dout]}
    if a["paddingTrainable"] and first(ins, "PaddingData") is not None:
        result["PaddingData@GRAD"] = [dsource[n + 1 :]]
    return result


def _sequence_conv_infer(ins, a):
    x, w = first(ins, "X"), first(ins, "Filter")
    if len(x.shape) != 2 or len(w.shape) != 2:  # fluid 1.8.5's check, with the variables named
        raise ValueError(
            f"sequence_conv: Input(X, Filter) should be 2-D tensor. But received Input(X) '{x.name}': input rank "
            f"{len(x.shape)}, input shape {list(x.shape)}; received Input(Filter) '{w.name}': input rank "
            f"{len(w.shape)}, input shape {list(w.shape)}."
        )
    width = x.shape[1]
    if width >= 0 and w.shape[0] != a["contextLength"] * width:
        raise ValueError(
            f"sequence_conv: Filter's height must be contextLength * the width of X ({a['contextLength']} * "
            f"{width} = {a['contextLength'] * width}). Received: Filter '{w.name}' of shape {list(w.shape)}"
        )
    return out("Out", (x.shape[0], w.shape[1]), x.dtype)


register(
    OpDef(
        "sequence_conv",
        ("X", "Filter", "PaddingData"),
        ("Out",),
        {"contextLength": 3, "contextStart": 0, "contextStride": 1, "paddingTrainable": False},
        _sequence_conv_infer,
        _sequence_conv,
        optional_inputs=frozenset({"PaddingData"}),
        grad=GradDef(
            ("X", "Filter", "PaddingData"),
            in_grads=("X", "Filter", "PaddingData"),
            kernel=_sequence_conv_grad,
            double=True,
        ),
    )
)


# -- sequence_reverse -----------------------------------------------------------------------------
def _sequence_reverse(ins, a):
    x = ins["X"][0]
    lod = lod_of(x)
    if len(lod) != 1:
        raise ValueError(f"SequenceReverse Op only support one level lod. Input(X) lod is({len(lod)})")
    offsets = lod[0]
    index = [r for a_, b in zip(offsets, offsets[1:]) for r in range(b - 1, a_ - 1, -1)]
    return {"Y": [with_lod(x[torch.tensor(index, dtype=torch.int64, device=x.device)], lod)]}


def _sequence_reverse_infer(ins, a):
    x = first(ins, "X")
    return out("Y", x.shape, x.dtype)


# fluid differentiates sequence_reverse with a sequence_reverse
register(
    OpDef(
        "sequence_reverse",
        ("X",),
        ("Y",),
        {},
        _sequence_reverse_infer,
        _sequence_reverse,
        grad=GradDef(
            out_grads=("Y",),
            in_grads=("X",),
            maker=lambda op, og, ig: [("sequence_reverse", {"X": og["Y"]}, {"Y": ig["X"]}, {})],
        ),
    )
)


# -- sequence_erase (edit_distance's ignored_tokens) -------------------------------------------------
def _sequence_erase(ins, a):
    x = ins["X"][0]
    offsets = _last_level(x, "sequence_erase")
    keep = [v not in a["tokens"] for v in x.reshape(-1).tolist()]
    lengths = [sum(keep[s:e]) for s, e in zip(offsets, offsets[1:])]
    rows = torch.tensor([i for i, k in enumerate(keep) if k], dtype=torch.int64, device=x.device)
    return {"Out": [with_lod(x[rows], lod_of(x)[:-1] + [offsets_of(lengths)])]}


_op(
    "sequence_erase",
    ("X",),
    ("Out",),
    {"tokens": []},
    lambda ins, a: out("Out", (-1, 1), first(ins, "X").dtype),
    _sequence_erase,
    grad_outs=False,
)


# -- sequence_pad / sequence_unpad ----------------------------------------------------------------
def _sequence_pad(ins, a):
    x, pad = ins["X"][0], ins["PadValue"][0]
    offsets = _last_level(x, "SequencePadOp")
    lengths = lengths_of(offsets)
    maxlen = a["padded_length"]
    longest = max(lengths, default=0)
    if maxlen == -1:
        maxlen = longest
    elif maxlen < longest:
        raise ValueError(
            f"The padded_length of sequence_pad ({maxlen}) must not be less than the longest sequence "
            f"({longest}) in Input(X)"
        )
    flat = x.reshape(x.shape[0], -1)
    padded, pos = _padded(flat, offsets, 0.0, maxlen)
    step = tuple(x.shape[1:])
    fill = pad.reshape(-1).to(x.dtype).expand(flat.shape[1]) if pad.numel() == 1 else pad.reshape(-1).to(x.dtype)
    full = torch.where(_real_steps(padded, pos), padded, fill.reshape(1, 1, -1))
    length = torch.tensor(lengths, dtype=torch.int64, device=x.device)
    return {"Out": [full.reshape((len(lengths), maxlen) + step)], "Length": [length]}


def _sequence_pad_infer(ins, a):
    x = first(ins, "X")
    return {"Out": [((-1, a["padded_length"]) + tuple(x.shape[1:]), x.dtype)], "Length": [((-1,), 3)]}


def _sequence_pad_grad(ins, a):
    """Each row's gradient: its place's in Out@GRAD (the padding's goes nowhere)."""
    x, dout = ins["X"][0], ins["Out@GRAD"][0]
    ids, steps = _steps_of(lengths_of(_last_level(x, "SequencePadGradOp")), x.device)
    return {"X@GRAD": [dout[ids, steps].reshape(x.shape).to(x.dtype)]}


register(
    OpDef(
        "sequence_pad",
        ("X", "PadValue"),
        ("Out", "Length"),
        {"padded_length": -1},
        _sequence_pad_infer,
        _sequence_pad,
        grad=GradDef(("X", "PadValue"), out_grads=("Out",), in_grads=("X",), kernel=_sequence_pad_grad, double=True),
    )
)


def _sequence_unpad(ins, a):
    x, length = ins["X"][0], ins["Length"][0]
    lengths = [int(v) for v in length.reshape(-1).tolist()]
    if len(lengths) != x.shape[0] or any(n < 0 or n > x.shape[1] for n in lengths):
        raise ValueError(
            f"sequence_unpad: Length must hold one length in [0, {x.shape[1]}] per sequence of X "
            f"({x.shape[0]} sequences). Received: {lengths}"
        )
    # the rows picked where they are (X is often a transposed view: no copy of all of it first)
    return {"Out": [with_lod(x[_steps_of(lengths, x.device)], [offsets_of(lengths)])]}


def _sequence_unpad_grad(ins, a):
    """Out@GRAD's rows at their places in X's shape, zeros past each sequence's end. The zeros take
    X's strides (X is often a transposed view, as DynamicRNN's outputs give it: its gradient goes back
    through the transpose to rows that are then contiguous)."""
    x, dout = ins["X"][0], ins["Out@GRAD"][0]
    where = _steps_of(ins["Length"][0].reshape(-1).tolist(), x.device)
    return {"X@GRAD": [torch.zeros_like(x).index_put_(where, dout.to(x.dtype))]}


def _sequence_unpad_infer(ins, a):
    x, length = first(ins, "X"), first(ins, "Length")
    if len(x.shape) < 2:
        raise ValueError(f"sequence_unpad: X must have at least 2 dimensions. Received: shape {list(x.shape)}")
    if x.shape[0] >= 0 and length.shape and length.shape[0] >= 0 and length.shape[0] != x.shape[0]:
        raise ValueError(
            "Input(X) and Input(Length) should have the same first dimension. But the first dimension of "
            f"Input(X) and Input(Length) is ({length.shape[0]}) != ({x.shape[0]})"
        )
    return out("Out", (-1,) + tuple(x.shape[2:]), x.dtype)


register(
    OpDef(
        "sequence_unpad",
        ("X", "Length"),
        ("Out",),
        {},
        _sequence_unpad_infer,
        _sequence_unpad,
        host_inputs=frozenset({"Length"}),
        grad=GradDef(("X", "Length"), in_grads=("X",), kernel=_sequence_unpad_grad, double=True),
    )
)


# -- sequence_reshape -----------------------------------------------------------------------------
def _sequence_reshape(ins, a):
    x = ins["X"][0]
    offsets = _last_level(x, "SequenceReshapeOp")
    width, new_dim = x.shape[1], a["new_dim"]
    for i, (start, end) in enumerate(zip(offsets, offsets[1:])):
        if (end - start) * width % new_dim:
            raise ValueError(
                "Please make sure (sequence_length * dimension) can be divided by new_dim with no remainder for "
                f"each sequence. The {i + 1}th sequence is invalid (length {end - start}, dimension {width}, "
                f"new_dim {new_dim})."
            )
    lod = lod_of(x)[:-1] + [[o * width // new_dim for o in offsets]]
    return {"Out": [with_lod(x.reshape(-1, new_dim), lod)]}


def _sequence_reshape_infer(ins, a):
    x = first(ins, "X")
    if len(x.shape) != 2:  # as fluid 1.8.5 refused it when built
        raise ValueError(
            f"sequence_reshape: Rank of Input(X) should be 2. But received ({len(x.shape)}): '{x.name}' of shape "
            f"{list(x.shape)}"
        )
    return out("Out", (-1, a["new_dim"]), x.dtype)


_op("sequence_reshape", ("X",), ("Out",), {"new_dim": 0}, _sequence_reshape_infer, _sequence_reshape)


# -- sequence_concat ------------------------------------------------------------------------------
def _sequence_concat(ins, a):
    xs = ins["X"]
    op = a.get("_op")  # None in dygraph: the inputs are named by position
    names = op.inputs["X"] if op is not None else [f"X[{i}]" for i in range(len(xs))]
    levels = [_last_level(x, "SequenceConcatOp", f"Input(X) '{names[i]}'") for i, x in enumerate(xs)]
    counts = [len(level) - 1 for level in levels]
    if len(set(counts)) != 1:
        raise ValueError(
            "sequence_concat: every input must hold the same number of sequences. Received: "
            + ", ".join(f"'{n}' with {c}" for n, c in zip(names, counts))
        )
    index, lengths = [], []
    bases = offsets_of(x.shape[0] for x in xs)
    for i in range(counts[0]):
        total = 0
        for base, level in zip(bases, levels):
            index.extend(range(base + level[i], base + level[i + 1]))
            total += level[i + 1] - level[i]
        lengths.append(total)
    rows = torch.cat(list(xs))[torch.tensor(index, dtype=torch.int64, device=xs[0].device)]
    return {"Out": [with_lod(rows, [offsets_of(lengths)])]}


def _sequence_concat_infer(ins, a):
    xs = ins["X"]
    return out("Out", (-1,) + tuple(xs[0].shape[1:]), xs[0].dtype)


_op("sequence_concat", ("X",), ("Out",), {}, _sequence_concat_infer, _sequence_concat)


# -- sequence_enumerate ---------------------------------------------------------------------------
def _sequence_enumerate(ins, a):
    x = ins["X"][0]
    offsets = _last_level(x, "SequenceEnumerateOp")
    win = a["win_size"]
    flat = x.reshape(-1)
    lengths, ids = _segments(offsets, x.device)
    end = torch.tensor(offsets[1:], dtype=torch.int64, device=x.device)[ids]
    rows = torch.arange(flat.shape[0], device=x.device)
    cols = []
    for k in range(win):
        r = rows + k
        cols.append(
            torch.where(r < end, flat[r.clamp(max=max(flat.shape[0] - 1, 0))], torch.full_like(flat, a["pad_value"]))
        )
    result = torch.stack(cols, dim=1) if cols else flat.new_zeros((flat.shape[0], 0))
    return {"Out": [with_lod(result, lod_of(x))]}


def _sequence_enumerate_infer(ins, a):
    x = first(ins, "X")
    if a["win_size"] < 2:
        raise ValueError(f"The window size of sequence_enumerate should be at least 2. Received: {a['win_size']}")
    return out("Out", (x.shape[0], a["win_size"]), x.dtype)


_op(
    "sequence_enumerate",
    ("X",),
    ("Out",),
    {"win_size": 2, "pad_value": 0},
    _sequence_enumerate_infer,
    _sequence_enumerate,
    grad_outs=False,
)


# -- sequence_slice -------------------------------------------------------------------------------
def _sequence_slice(ins, a):
    x = ins["X"][0]
    offsets = _last_level(x, "SequenceSliceOp")
    starts = [int(v) for v in ins["Offset"][0].reshape(-1).tolist()]
    sizes = [int(v) for v in ins["Length"][0].reshape(-1).tolist()]
    n = len(offsets) - 1
    for what, got in (("length", sizes), ("offset", starts)):  # fluid's order and texts
        if len(got) != n:
            raise ValueError(
                f"Input {what} shape error. The length of input LoD sequence and input {what}-array\u2018s first "
                f"dimension should be equal, but the LoD sequence length is {n}, the {what}-array\u2018s first "
                f"dimension is {len(got)}."
            )
    index = []
    for i, (s, k) in enumerate(zip(starts, sizes)):
        length = offsets[i + 1] - offsets[i]
        if s >= 0 and k >= 0 and s + k > length:
            raise ValueError(
                "The slice end index of target tensor is out of range. expect it less than or equal to "
                f"{length}, but the actual slice end index is {s + k}."
            )
        if s < 0 or k < 0:
            raise ValueError(
                f"sequence_slice: the slice [{s}, {s + k}) of sequence {i} is out of its {length} rows "
                "(Offset and Length must be non-negative and Offset + Length at most the sequence's length)"
            )
        index.extend(range(offsets[i] + s, offsets[i] + s + k))
    rows = x[torch.tensor(index, dtype=torch.int64, device=x.device)]
    return {"Out": [with_lod(rows, lod_of(x)[:-1] + [offsets_of(sizes)])]}


def _sequence_slice_infer(ins, a):
    x = first(ins, "X")
    return out("Out", (-1,) + tuple(x.shape[1:]), x.dtype)


_op(
    "sequence_slice",
    ("X", "Offset", "Length"),
    ("Out",),
    {},
    _sequence_slice_infer,
    _sequence_slice,
    host_inputs=frozenset({"Offset", "Length"}),
)


# -- sequence_expand / sequence_expand_as ---------------------------------------------------------
def _repeat_rows(x, counts, x_offsets=None):
    """Rows of ``x`` (or, with ``x_offsets``, its sequences) each repeated ``counts[i]`` times; with
    ``x_offsets`` also the offsets of the repeated sequences."""
    index, out_offsets = [], [0]
    for i, c in enumerate(counts):
        span = range(x_offsets[i], x_offsets[i + 1]) if x_offsets is not None else range(i, i + 1)
        for _ in range(c):
            index.extend(span)
            out_offsets.append(out_offsets[-1] + len(span))
    return x[torch.tensor(index, dtype=torch.int64, device=x.device)], out_offsets


def _sequence_expand(ins, a):
    x, y = ins["X"][0], ins["Y"][0]
    y_lod = lod_of(y)
    if not y_lod:
        raise ValueError("Input(Y) Tensor of SequenceExpandOp does not contain LoD information")
    level = a["ref_level"] if a["ref_level"] != -1 else len(y_lod) - 1
    if not 0 <= level < len(y_lod):
        raise ValueError(f"sequence_expand: ref_level must be -1 or in [0, {len(y_lod)}). Received: {a['ref_level']}")
    ref = y_lod[level]
    counts = lengths_of(ref)
    x_lod = lod_of(x)
    if x_lod and len(x_lod[0]) != len(ref):  # fluid's texts
        raise ValueError(
            "Level number of Input(X)'s lod could be 0. Otherwise size of Input(X)'s first level lod should be "
            "equal to size of Input(Y)'s referred level lod. But received: Input(X).lod[0].size() = "
            f"{len(x_lod[0])}, Input(Y).lod[{level}].size() = {len(ref)}"
        )
    if not x_lod and x.shape[0] != len(counts):
        raise ValueError(
            "When Input(X)'s lod is null, the dims[0] of Input(X) should match the size of Input(Y)'s referred "
            f"level lod. But received Input(X): input rank {x.dim()}, input shape {list(x.shape)}; received "
            f"Input(Y).lod[{level}].size() - 1 = {len(counts)}."
        )
    if x_lod:
        rows, offsets = _repeat_rows(x, counts, x_lod[0])
        return {"Out": [with_lod(rows, [offsets])]}
    return {"Out": [_repeat_rows(x, counts)[0]]}


def _sequence_expand_as(ins, a):
    x, y = ins["X"][0], ins["Y"][0]
    ref = _last_level(y, "SequenceExpandAsOp", "Input(Y)")
    counts = lengths_of(ref)
    if x.shape[0] != len(counts):
        raise ValueError(
            "The first dimension of Input(X) should be one less than the size of Input(Y)'s 0 level lod. But "
            f"received X's shape[0] = {x.shape[0]}, Y's lod[0].size = {len(ref)}."
        )
    return {"Out": [with_lod(_repeat_rows(x, counts)[0], lod_of(y))]}


def _expand_infer(ins, a):
    x = first(ins, "X")
    return out("Out", (-1,) + tuple(x.shape[1:]), x.dtype)


_op(
    "sequence_expand",
    ("X", "Y"),
    ("Out",),
    {"ref_level": -1},
    _expand_infer,
    _sequence_expand,
    in_grads=("X",),
    no_buffer_inputs=frozenset({"Y"}),
)
_op(
    "sequence_expand_as",
    ("X", "Y"),
    ("Out",),
    {},
    _expand_infer,
    _sequence_expand_as,
    in_grads=("X",),
    no_buffer_inputs=frozenset({"Y"}),
)


# -- sequence_scatter -----------------------------------------------------------------------------
def _sequence_scatter(ins, a):
    x, ids, updates = ins["X"][0], ins["Ids"][0], ins["Updates"][0]
    offsets = _last_level(ids, "SequenceScatterOp", "Input(Ids)")
    if len(offsets) - 1 > x.shape[0]:  # sequence k scatters into row k (fewer sequences than rows: fluid's too)
        raise ValueError(
            f"sequence_scatter: Ids must hold at most one sequence per row of X ({x.shape[0]} rows). Received: "
            f"{len(offsets) - 1} sequences"
        )
    if updates.shape[0] != ids.shape[0]:
        raise ValueError(
            f"sequence_scatter: Updates must have a row per id ({ids.shape[0]}). Received: {updates.shape[0]} rows"
        )
    cols = ids.reshape(-1).to(torch.int64)
    if cols.numel() and (int(cols.min()) < 0 or int(cols.max()) >= x.shape[1]):
        raise ValueError(
            f"sequence_scatter: every id must be in [0, {x.shape[1]}) (the width of X). Received: "
            f"{cols.min().item()} ... {cols.max().item()}"
        )
    _, rows = _segments(offsets, x.device)
    flat = (rows * x.shape[1] + cols).reshape(-1)
    scattered = x.reshape(-1).index_add(0, flat, updates.reshape(-1).to(x.dtype))
    return {"Out": [scattered.reshape(x.shape)]}


def _sequence_scatter_infer(ins, a):
    x = first(ins, "X")
    return out("Out", x.shape, x.dtype)


_op(
    "sequence_scatter",
    ("X", "Ids", "Updates"),
    ("Out",),
    {},
    _sequence_scatter_infer,
    _sequence_scatter,
    in_grads=("X", "Updates"),
)


# -- lod_reset (lod_reset, lod_append) ------------------------------------------------------------
def _checked_target(level) -> list:
    level = [int(v) for v in level]
    if not level or level[0] != 0:
        start = level[0] if level else "nothing"
        raise ValueError(f"Target LoD should be a vector starting from 0. But target LoD starts from {start}.")
    if any(b < a for a, b in zip(level, level[1:])):
        raise ValueError(f"Target LoD should be an ascending vector. Received: {level}")
    return level


def _lod_reset(ins, a):
    x = ins["X"][0]
    y = first(ins, "Y")
    if y is not None:
        y_lod = lod_of(y)
        target = y_lod if y_lod and not a["append"] else [y_lod[-1] if y_lod else y.reshape(-1).tolist()]
    else:
        target = [a["target_lod"]]
    target = [_checked_target(level) for level in target]
    if a["append"]:
        lod = lod_of(x) + target
        above = lod[-2][-1] if len(lod) > 1 else None
        if above is not None and above != len(lod[-1]) - 1:
            raise ValueError(
                f"lod_append: the appended level {lod[-1]} must have one offset more than the sequences its "
                f"upper level ends at ({above}), i.e. {above + 1} offsets. Received: {len(lod[-1])}"
            )
    else:
        lod = target
    if lod[-1][-1] != x.shape[0]:
        raise ValueError(
            "The last value of 'Target LoD''s last level LoD should be equal to the first dimension of Input(X). "
            f"But received the 'Target LoD' is {', '.join(map(str, lod[-1]))}, Input(X)'s shape is is "
            f"{', '.join(map(str, x.shape))}."
        )
    return {"Out": [with_lod(x.view(x.shape), lod)]}  # the same data under a new LoD


_op(
    "lod_reset",
    ("X", "Y"),
    ("Out",),
    {"target_lod": [], "append": False},
    _same_shape,
    _lod_reset,
    in_grads=("X",),
    no_buffer_inputs=frozenset({"Y"}),
)
