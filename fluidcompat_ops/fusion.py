"""fluid 1.8's fused CPU inference ops: fc, fusion_lstm, fusion_gru, fused_embedding_fc_lstm,
attention_lstm, fusion_seqexpand_concat_fc, fusion_seqconv_eltadd_relu, fusion_seqpool_concat,
fusion_seqpool_cvm_concat, fusion_repeated_fc_relu and fusion_squared_mat_sub.

fluid's inference passes put these in place of the ops they fuse (``mul`` + ``elementwise_add`` ->
``fc``, ``fc`` + ``lstm`` -> ``fusion_lstm``, ...), so saved inference programs hold them. Each kernel
here is the unfused ops' kernels run one after another (lstm, gru, sequence_pool, cvm and
sequence_conv's context are the recurrent, sequence and nn modules' own). fluid registered no gradient
for any of them (their grad makers were empty), and neither does fluidcompat.

# NOTE: [Fused intermediates]
# fluid's kernels computed either "seq" mode (use_seq, one sequence after another) or "batch" mode
# (sequences reordered into time-major batches), and wrote their intermediate outputs (XX,
# BatchedInput, ReorderedH0, ...) only in the mode that used them, each laid out for that mode. The
# values of the outputs that count (Hidden, Cell, Out) are the same in both modes; here every kernel
# computes as seq mode does and writes the intermediates seq mode writes (ColMat, FCOut, AttentionedX,
# the Squared* matrices, ReluOut, and XX: every row's gate input, where fluid's XX ended holding its
# in-place gate scratch). The others (Batched*, Reordered*, CheckedCell, and attention_lstm's per-step
# scratch AttentionFCOut, LSTMX, LSTMOUT) are slots of fluid's proto that nothing here shapes or
# writes: programs never read them.
#
# Outputs get their LoD here as fluid's ShareLoD gave it (the ops are in the interpreter's LOD_OPS;
# their build-time lod_level is in fluidcompat/lod_levels.py).
"""

from __future__ import annotations

from fluidcompat_ops.nn import _cvm
from fluidcompat_ops.recurrent import _act, _activation_name, _gru, _lstm
from fluidcompat_ops.registry import OpDef, register
from fluidcompat_ops.sequence import (
    _context,
    _last_level,
    _padded,
    _real_steps,
    _segments,
    _sequence_pool,
    lod_of,
    with_lod,
)
from fluidcompat_ops.shapes import first, prod, prod_or_unknown

torch = None  # NOTE: [Lazy torch] in registry.py
F = None


def _differ(a: int, b: int) -> bool:
    """Two dims known (>= 0) and different."""
    return a >= 0 and b >= 0 and a != b


def _need(ok: bool, msg: str) -> None:
    if not ok:
        raise ValueError(msg)


def _rank(v, n: int, what: str) -> None:
    _need(len(v.shape) == n, f"{what} should be a {n}-D tensor. Received: '{v.name}' of shape {list(v.shape)}")


def _fused(name, inputs, outputs, attrs, infer, kernel, doc=""):
    register(OpDef(name, inputs, outputs, attrs, infer, kernel, doc=doc))


# -- fc -------------------------------------------------------------------------------------------
def _fc_dims(w_shape, padding):
    """(K, N) of the weight fc uses: with padding_weights the top-left [K, N] of a [K + 4, N + 4] W."""
    k, n = w_shape
    return (k - 4, n - 4) if padding and k >= 0 and n >= 0 else (k, n)


def _fc_infer(ins, a):
    x, w, b = first(ins, "Input"), first(ins, "W"), first(ins, "Bias")
    cols = a["in_num_col_dims"]
    _need(cols >= 1, f"fc: in_num_col_dims must be at least 1. Received: {cols}")
    _rank(w, 2, "fc: the weight W")
    _need(
        len(x.shape) > cols,
        f"fc: the rank of Input ({len(x.shape)}) must be larger than in_num_col_dims ({cols}). Received: "
        f"'{x.name}' of shape {list(x.shape)}",
    )
    k, n = _fc_dims(w.shape, a["padding_weights"])
    width = prod_or_unknown(x.shape[cols:])
    _need(
        not _differ(width, k),
        f"fc: the input's second dimension (after flattening at in_num_col_dims={cols}) and the weight's first "
        f"dimension must be the same. Received: Input '{x.name}' {list(x.shape)}, W '{w.name}' {list(w.shape)}",
    )
    if b is not None:
        ok = (len(b.shape) == 2 and b.shape[0] in (1, -1) and not _differ(b.shape[1], n)) or (
            len(b.shape) == 1 and not _differ(b.shape[0], n)
        )
        _need(ok, f"fc: Bias must be [1, {n}] or [{n}] (the width of W). Received: '{b.name}' {list(b.shape)}")
    act = a["activation_type"]
    _need(act in ("", "relu"), f"fc: activation_type {act!r} is not supported in fc now (only 'relu' or '')")
    return {"Out": [(tuple(x.shape[:cols]) + (n,), x.dtype)]}


def _fc(ins, a):
    x, w, b = ins["Input"][0], ins["W"][0], first(ins, "Bias")
    cols = a["in_num_col_dims"]
    k, n = _fc_dims(tuple(w.shape), a["padding_weights"])
    lead = tuple(x.shape[:cols])
    y = x.reshape(prod(lead), k) @ w[:k, :n]
    if b is not None:
        y = y + b.reshape(-1)
    if a["activation_type"] == "relu":
        y = torch.relu(y)
    return {"Out": [with_lod(y.reshape(lead + (n,)), lod_of(x))]}


_fused(
    "fc",
    ("Input", "W", "Bias"),
    ("Out",),
    {
        "in_num_col_dims": 1,
        "activation_type": "",
        "use_mkldnn": False,
        "padding_weights": False,
        "@ALL_KERNELS_MUST_COMPUTE_RUNTIME_SHAPE@": True,
        "use_quantizer": False,
        "Scale_in": 1.0,
        "Scale_weights": [1.0],
        "Scale_out": 1.0,
        "force_fp32_output": False,
    },
    _fc_infer,
    _fc,
    doc="Out = activation(flatten(Input, in_num_col_dims) @ W + Bias): fluid's fused mul + elementwise_add.",
)


# -- fusion_lstm, fused_embedding_fc_lstm -----------------------------------------------------------
_LSTM_ATTRS = {
    "use_peepholes": True,
    "is_reverse": False,
    "use_seq": True,
    "gate_activation": "sigmoid",
    "cell_activation": "tanh",
    "candidate_activation": "tanh",
}


_LSTM_OUTS = ("Hidden", "Cell", "XX", "BatchedInput", "BatchedHidden", "BatchedCell", "ReorderedH0", "ReorderedC0")


def _lstm_checks(op, wh, b, h0, c0, a):
    """fluid's build-time checks of the recurrent part: WeightH [D, 4D], Bias [1, 4D] or [1, 7D] with
    peepholes, H0 only with C0, both [N, D]. Returns D."""
    _rank(wh, 2, f"{op}: Input(WeightH)")
    d = wh.shape[0]
    _need(
        not _differ(wh.shape[1], 4 * d) or d < 0,
        f"{op}: the second dimension of Input(WeightH) should equal 4 * frame_size. Received: WeightH "
        f"{list(wh.shape)}, frame size {d}",
    )
    _rank(b, 2, f"{op}: Input(Bias)")
    gates = 7 if a["use_peepholes"] else 4
    _need(
        b.shape[0] in (1, -1) and (d < 0 or not _differ(b.shape[1], gates * d)),
        f"{op}: Input(Bias) should be [1, {gates} * {d}] ({'with' if a['use_peepholes'] else 'without'} "
        f"peepholes). Received: '{b.name}' {list(b.shape)}",
    )
    _need(h0 is None or c0 is not None, f"{op}: Input(H0) needs Input(C0) too (no Input(C0) found)")
    for s in (v for v in (h0, c0) if v is not None):
        _need(
            len(s.shape) == 2 and not _differ(s.shape[1], d),
            f"{op}: H0 and C0 must be [number of sequences, {d}]. Received: '{s.name}' {list(s.shape)}",
        )
    return d


def _lstm_out_shapes(rows, d, dtype):
    return {"Hidden": [((rows, d), dtype)], "Cell": [((rows, d), dtype)], "XX": [((rows, 4 * d), dtype)]}


def _fusion_lstm_infer(ins, a):
    x, wx, wh = first(ins, "X"), first(ins, "WeightX"), first(ins, "WeightH")
    _rank(x, 2, "fusion_lstm: Input(X)")
    _rank(wx, 2, "fusion_lstm: Input(WeightX)")
    _need(
        not _differ(wx.shape[0], x.shape[1]),
        "fusion_lstm: the first dimension of Input(WeightX) should equal the second dimension of Input(X). "
        f"Received: WeightX {list(wx.shape)}, X {list(x.shape)}",
    )
    d = _lstm_checks("fusion_lstm", wh, first(ins, "Bias"), first(ins, "H0"), first(ins, "C0"), a)
    _need(
        not _differ(wx.shape[1], 4 * d),
        f"fusion_lstm: the second dimension of Input(WeightX) should be 4 * {d}. Received: {list(wx.shape)}",
    )
    return _lstm_out_shapes(x.shape[0], d, x.dtype)


def _lstm_over(op, xx, lod, ins, a):
    """The LSTM of gate inputs ``xx`` ([T, 4D], every bias but the peepholes already added) by the lstm
    op's kernel; the fused op's Hidden, Cell and XX."""
    wh, b = ins["WeightH"][0], ins["Bias"][0].reshape(-1)
    d = wh.shape[0]
    if xx.shape[1] != 4 * d:
        raise ValueError(f"{op}: the gate input must be [rows, 4 * {d}]. Received: {list(xx.shape)}")
    peepholes = torch.cat([b.new_zeros(4 * d), b[4 * d :]]).reshape(1, -1)
    lstm_ins = {"Input": [with_lod(xx, lod)], "Weight": [wh], "Bias": [peepholes]}
    for s in ("H0", "C0"):
        if ins.get(s):
            lstm_ins[s] = ins[s]
    r = _lstm(lstm_ins, a)
    return {"Hidden": [with_lod(r["Hidden"][0], lod)], "Cell": [with_lod(r["Cell"][0], lod)], "XX": [xx]}


def _fusion_lstm(ins, a):
    x, wx, b = ins["X"][0], ins["WeightX"][0], ins["Bias"][0].reshape(-1)
    _last_level(x, "FusionLSTMOp")
    xx = x @ wx + b[: wx.shape[1]]
    return _lstm_over("fusion_lstm", xx, lod_of(x), ins, a)


_fused(
    "fusion_lstm",
    ("X", "WeightX", "WeightH", "Bias", "H0", "C0"),
    _LSTM_OUTS + ("CheckedCell",),
    _LSTM_ATTRS,
    _fusion_lstm_infer,
    _fusion_lstm,
    doc="lstm(X @ WeightX + Bias): gates in lstm's order (candidate, input, forget, output).",
)


def _fused_embedding_infer(ins, a):
    ids, emb, wh = first(ins, "Ids"), first(ins, "Embeddings"), first(ins, "WeightH")
    _need(
        len(ids.shape) >= 1 and ids.shape[-1] in (1, -1),
        f"fused_embedding_fc_lstm: the last dimension of the 'Ids' tensor must be 1. Received: {list(ids.shape)}",
    )
    _rank(emb, 2, "fused_embedding_fc_lstm: Input(Embeddings)")
    d = _lstm_checks("fused_embedding_fc_lstm", wh, first(ins, "Bias"), first(ins, "H0"), first(ins, "C0"), a)
    rows = prod_or_unknown(ids.shape[:-1]) if len(ids.shape) > 1 else ids.shape[0]
    return _lstm_out_shapes(rows, d, emb.dtype)


def _fused_embedding_fc_lstm(ins, a):
    """Embeddings holds each word's gate input already (embedding @ WeightX + the gates' bias), so a row
    of XX is a row of Embeddings; Bias adds only its peepholes."""
    ids, emb = ins["Ids"][0], ins["Embeddings"][0]
    _last_level(ids, "FusedEmbeddingFCLSTMOp", "Input(Ids)")
    flat = ids.reshape(-1).to(torch.int64)
    if flat.numel() and (int(flat.min()) < 0 or int(flat.max()) >= emb.shape[0]):
        raise ValueError(
            f"fused_embedding_fc_lstm: every id must be in [0, {emb.shape[0]}) (the rows of Embeddings). "
            f"Received: {int(flat.min())} ... {int(flat.max())}"
        )
    return _lstm_over("fused_embedding_fc_lstm", emb[flat], lod_of(ids), ins, a)


_fused(
    "fused_embedding_fc_lstm",
    ("Ids", "Embeddings", "WeightH", "Bias", "H0", "C0"),
    _LSTM_OUTS,
    _LSTM_ATTRS,
    _fused_embedding_infer,
    _fused_embedding_fc_lstm,
    doc="lstm(Embeddings[Ids]): the embedding table already multiplied by the fc weight, its bias added.",
)


# -- fusion_gru ---------------------------------------------------------------------------------------
def _fusion_gru_infer(ins, a):
    x, wx, wh, b, h0 = (first(ins, s) for s in ("X", "WeightX", "WeightH", "Bias", "H0"))
    _rank(x, 2, "fusion_gru: Input(X)")
    _rank(wx, 2, "fusion_gru: Input(WeightX)")
    _rank(wh, 2, "fusion_gru: Input(WeightH)")
    d = wh.shape[0]
    _need(
        not _differ(wx.shape[0], x.shape[1]),
        "fusion_gru: the first dimension of Input(WeightX) should equal the second dimension of Input(X). "
        f"Received: WeightX {list(wx.shape)}, X {list(x.shape)}",
    )
    _need(
        d < 0 or not _differ(wh.shape[1], 3 * d),
        f"fusion_gru: the second dimension of Input(WeightH) should equal 3 * frame_size. Received: WeightH "
        f"{list(wh.shape)}, frame size {d}",
    )
    _need(
        d < 0 or not _differ(wx.shape[1], 3 * d),
        f"fusion_gru: the second dimension of Input(WeightX) should be 3 * {d}. Received: {list(wx.shape)}",
    )
    if h0 is not None:
        _need(
            len(h0.shape) == 2 and not _differ(h0.shape[1], d),
            f"fusion_gru: Input(H0) must be [number of sequences, {d}]. Received: {list(h0.shape)}",
        )
    if b is not None:
        _need(
            len(b.shape) == 2 and b.shape[0] in (1, -1) and (d < 0 or not _differ(b.shape[1], 3 * d)),
            f"fusion_gru: Input(Bias) must be [1, 3 * {d}]. Received: '{b.name}' {list(b.shape)}",
        )
    rows = x.shape[0]
    return {"Hidden": [((rows, d), x.dtype)], "XX": [((rows, wx.shape[1]), x.dtype)]}


def _fusion_gru(ins, a):
    x, wx, b = ins["X"][0], ins["WeightX"][0], first(ins, "Bias")
    _last_level(x, "FusionGRUOp")
    xx = x @ wx
    if b is not None:
        xx = xx + b.reshape(-1)
    lod = lod_of(x)
    gru_ins = {"Input": [with_lod(xx, lod)], "Weight": ins["WeightH"]}
    if ins.get("H0"):
        gru_ins["H0"] = ins["H0"]
    # (fluid 1.8.5's fusion_gru kernel ignored origin_mode, computing origin_mode=False's values for
    # either: fluidcompat honours it, as the gru op does; README, differences)
    hidden = _gru(gru_ins, a)["Hidden"][0]
    return {"Hidden": [with_lod(hidden, lod)], "XX": [xx]}


_fused(
    "fusion_gru",
    ("X", "H0", "WeightX", "WeightH", "Bias"),
    ("ReorderedH0", "XX", "BatchedInput", "BatchedOut", "Hidden"),
    {"activation": "tanh", "gate_activation": "sigmoid", "is_reverse": False, "use_seq": True, "origin_mode": False},
    _fusion_gru_infer,
    _fusion_gru,
    doc="gru(X @ WeightX + Bias) with WeightH laid out as the gru op's Weight.",
)


# -- attention_lstm -----------------------------------------------------------------------------------
_ATTENTION_SLOTS = ("AttentionWeight", "AttentionBias", "AttentionScalar", "AttentionScalarBias")


def _attention_lstm_infer(ins, a):
    x, c0, h0 = first(ins, "X"), first(ins, "C0"), first(ins, "H0")
    aw, ab, scalar, scalar_b = (first(ins, s) for s in _ATTENTION_SLOTS)
    w, b = first(ins, "LSTMWeight"), first(ins, "LSTMBias")
    _rank(x, 2, "attention_lstm: Input(X)")
    _rank(w, 2, "attention_lstm: Input(LSTMWeight)")
    m = x.shape[1]
    d = w.shape[1] // 4 if w.shape[1] >= 0 else -1
    _need(
        m < 0 or d < 0 or not _differ(w.shape[0], d + m),
        f"attention_lstm: LSTMWeight must be ({d} + {m}) x {4 * d}. Received: {list(w.shape)}",
    )
    _rank(b, 2, "attention_lstm: Input(LSTMBias)")
    _need(
        b.shape[0] in (1, -1) and (d < 0 or not _differ(b.shape[1], 4 * d)),
        f"attention_lstm: LSTMBias must be 1 x {4 * d}. Received: {list(b.shape)}",
    )
    _rank(c0, 2, "attention_lstm: Input(C0)")
    _need(not _differ(c0.shape[1], d), f"attention_lstm: C0 must be [N, {d}]. Received: {list(c0.shape)}")
    _need(
        h0 is None or (len(h0.shape) == 2 and not _differ(h0.shape[1], d)),
        f"attention_lstm: H0 must be [N, {d}] as C0. Received: {list(h0.shape) if h0 is not None else []}",
    )
    _rank(aw, 2, "attention_lstm: Input(AttentionWeight)")
    _need(
        aw.shape[1] in (1, -1) and (m < 0 or d < 0 or not _differ(aw.shape[0], m + d)),
        f"attention_lstm: AttentionWeight must be ({m} + {d}) x 1. Received: {list(aw.shape)}",
    )
    _need(scalar_b is None or scalar is not None, "attention_lstm: AttentionScalarBias needs AttentionScalar")
    for v in (v for v in (ab, scalar, scalar_b) if v is not None):
        _need(
            all(s in (1, -1) for s in v.shape), f"attention_lstm: '{v.name}' must be 1 x 1. Received: {list(v.shape)}"
        )
    t = x.shape[0]
    return {
        "Hidden": [((t, d), x.dtype)],
        "Cell": [((t, d), x.dtype)],
        "AttentionedX": [((t, 1), x.dtype)],
    }


def _activation(a, key):
    name = _activation_name(a, key)
    return lambda v: _act(name, v)


def _rows(per_step, pos):
    """Per-step [sequences, width] values back to the input's row order (``pos`` from ``_padded``)."""
    stacked = torch.stack(per_step, dim=1)
    return stacked.reshape(-1, stacked.shape[2])[pos]


def _attention_lstm(ins, a):
    """Each step of each sequence: attention scores relu(x_j . aw[:M] + AttentionBias + cell . aw[M:]),
    then (with AttentionScalar) relu(score * scalar + scalar bias), softmax over the sequence; the
    weighted sum of its rows and the previous hidden state feed one LSTM step whose gates are
    [forget, input, output, candidate] (hidden's weights first in LSTMWeight). All sequences step
    together, padded to the longest."""
    x, c = ins["X"][0], ins["C0"][0]
    aw, w, b = ins["AttentionWeight"][0], ins["LSTMWeight"][0], ins["LSTMBias"][0].reshape(-1)
    ab, scalar, scalar_b = (first(ins, s) for s in _ATTENTION_SLOTS[1:])
    lod = lod_of(x)
    _need(len(lod) == 1, f"attention_lstm: Input(X)'s LoD must have one level. Received: {len(lod)} levels")
    offsets = lod[0]
    m, d = x.shape[1], w.shape[1] // 4
    n = len(offsets) - 1
    gate, cell_act, cand_act = (
        _activation(a, k) for k in ("gate_activation", "cell_activation", "candidate_activation")
    )
    _need(tuple(c.shape) == (n, d), f"attention_lstm: C0 must be [{n}, {d}]. Received: {list(c.shape)}")
    h = first(ins, "H0")
    h = x.new_zeros((n, d)) if h is None else h
    aw = aw.reshape(-1)
    atted = x @ aw[:m].unsqueeze(1)
    if ab is not None:
        atted = atted + ab.reshape(())
    steps, pos = _padded(x, offsets, 0.0)  # [N, L, M]
    scores, _ = _padded(atted, offsets, 0.0)
    scores = scores.squeeze(2)  # [N, L]
    real = _real_steps(steps, pos).squeeze(2)
    lengths, _ = _segments(offsets, x.device)
    hs, cs = [], []
    for t in range(steps.shape[1]):
        fc = torch.relu(scores + (c @ aw[m:]).unsqueeze(1))
        if scalar is not None:
            fc = fc * scalar.reshape(())
            if scalar_b is not None:
                fc = fc + scalar_b.reshape(())
            fc = torch.relu(fc)
        weights = torch.softmax(fc.masked_fill(~real, float("-inf")), dim=1)
        lstm_x = torch.bmm(weights.unsqueeze(1), steps).squeeze(1)  # [N, M]
        g = h @ w[:d] + lstm_x @ w[d:] + b
        g_f, g_i, g_o, g_c = g.split(d, dim=1)
        c_new = gate(g_f) * c + gate(g_i) * cand_act(g_c)
        h_new = gate(g_o) * cell_act(c_new)
        live = (lengths > t).unsqueeze(1)
        c, h = torch.where(live, c_new, c), torch.where(live, h_new, h)
        hs.append(h_new)
        cs.append(c_new)
    if not hs:
        empty = x.new_zeros((0, d))
        return {"Hidden": [with_lod(empty, lod)], "Cell": [with_lod(empty, lod)], "AttentionedX": [atted]}
    return {
        "Hidden": [with_lod(_rows(hs, pos), lod)],
        "Cell": [with_lod(_rows(cs, pos), lod)],
        "AttentionedX": [atted],
    }


_fused(
    "attention_lstm",
    ("X", "C0", "H0") + _ATTENTION_SLOTS + ("LSTMWeight", "LSTMBias"),
    ("Hidden", "Cell", "AttentionedX", "AttentionFCOut", "LSTMX", "LSTMOUT"),
    {"gate_activation": "sigmoid", "cell_activation": "tanh", "candidate_activation": "tanh"},
    _attention_lstm_infer,
    _attention_lstm,
    doc="An LSTM whose input at each step is an attention-weighted sum of its whole sequence.",
)


# -- fusion_seqexpand_concat_fc ---------------------------------------------------------------------
_FC_ACTS = ("identity", "relu", "sigmoid", "tanh")


def _seqexpand_infer(ins, a):
    xs, w, b = ins["X"], first(ins, "FCWeight"), first(ins, "FCBias")
    _need(len(xs) > 1, f"fusion_seqexpand_concat_fc: Inputs(X) must be more than 1. Received: {len(xs)}")
    for x in xs:
        _rank(x, 2, "fusion_seqexpand_concat_fc: each of Inputs(X)")
    _rank(w, 2, "fusion_seqexpand_concat_fc: Input(FCWeight)")
    width = -1 if any(x.shape[1] < 0 for x in xs) else sum(x.shape[1] for x in xs)
    _need(
        not _differ(width, w.shape[0]),
        f"fusion_seqexpand_concat_fc: FCWeight's height must be the sum of all inputs' widths ({width}). "
        f"Received: FCWeight {list(w.shape)}",
    )
    d = w.shape[1]
    if b is not None:
        ok = (len(b.shape) == 2 and b.shape[0] in (1, -1) and not _differ(b.shape[1], d)) or (
            len(b.shape) == 1 and not _differ(b.shape[0], d)
        )
        _need(ok, f"fusion_seqexpand_concat_fc: FCBias must be 1 x {d}. Received: {list(b.shape)}")
    act = a["fc_activation"]
    _need(act in _FC_ACTS, f"fusion_seqexpand_concat_fc: fc_activation {act!r} is not in {list(_FC_ACTS)}")
    x0 = xs[0]
    return {"Out": [((x0.shape[0], d), x0.dtype)], "FCOut": [((xs[1].shape[0], d), x0.dtype)]}


def _seqexpand_concat_fc(ins, a):
    """act(concat(X[0], X[1..] each row repeated over its sequence of X[0]) @ FCWeight + FCBias):
    X[0]'s rows times its part of FCWeight, plus FCOut (the other inputs times theirs, once per
    sequence) expanded to the sequence's rows."""
    xs, w, b = ins["X"], ins["FCWeight"][0], first(ins, "FCBias")
    x0 = xs[0]
    offsets = _last_level(x0, "FusionSeqExpandConcatFCOp", "Input(X)[0]")
    n = len(offsets) - 1
    for i, x in enumerate(xs[1:], 1):  # fluid fed them as one-row sequences; a plain tensor is taken too
        rows = lod_of(x)[-1] if lod_of(x) else list(range(x.shape[0] + 1))
        _need(
            x.shape[0] == n and rows == list(range(n + 1)),
            f"fusion_seqexpand_concat_fc: Input(X)[{i}] must hold one row per sequence of X[0] ({n} rows, each a "
            f"sequence of length 1). Received: shape {list(x.shape)}, LoD {lod_of(x)}",
        )
    m0 = x0.shape[1]
    fc_out = torch.cat(list(xs[1:]), dim=1) @ w[m0:]
    y = x0 @ w[:m0]
    if b is not None:
        y = y + b.reshape(-1)
    _, ids = _segments(offsets, x0.device)
    y = _activation(a, "fc_activation")(y + fc_out[ids])
    return {"Out": [with_lod(y, lod_of(x0))], "FCOut": [fc_out]}


_fused(
    "fusion_seqexpand_concat_fc",
    ("X", "FCWeight", "FCBias"),
    ("Out", "FCOut"),
    {"fc_activation": "identity"},
    _seqexpand_infer,
    _seqexpand_concat_fc,
)


# -- fusion_seqconv_eltadd_relu ---------------------------------------------------------------------
def _seqconv_infer(ins, a):
    x, w = first(ins, "X"), first(ins, "Filter")
    length, start = a["contextLength"], a["contextStart"]
    _need(
        length + start > 0,
        f"fusion_seqconv_eltadd_relu: contextStart must be larger than -contextLength. Received: contextLength "
        f"{length}, contextStart {start}",
    )
    _need(
        a["contextStride"] == 1,
        f"fusion_seqconv_eltadd_relu: only contextStride=1 is supported. Received: {a['contextStride']}",
    )
    _rank(x, 2, "fusion_seqconv_eltadd_relu: Input(X)")
    _rank(w, 2, "fusion_seqconv_eltadd_relu: Input(Filter)")
    _need(
        x.shape[1] < 0 or not _differ(w.shape[0], length * x.shape[1]),
        f"fusion_seqconv_eltadd_relu: Filter's height must be contextLength * the width of X ({length} * "
        f"{x.shape[1]}). Received: {list(w.shape)}",
    )
    return {"Out": [((x.shape[0], w.shape[1]), x.dtype)], "ColMat": [((x.shape[0], w.shape[0]), x.dtype)]}


def _seqconv_eltadd_relu(ins, a):
    x, w, b = ins["X"][0], ins["Filter"][0], ins["Bias"][0]
    offsets = _last_level(x, "FusionSeqConvEltAddReluOp")
    start, length = a["contextStart"], a["contextLength"]
    _need(  # fluid's kernel pads only above (contextStart <= 0 <= contextStart + contextLength - 1)
        start <= 0,
        f"fusion_seqconv_eltadd_relu: context length must be bigger or equal than up_pad + down_pad + 1, but "
        f"received context length is: {length}, up_pad is: {max(0, -start)}, down_pad is: {max(0, start + length - 1)}",
    )
    col, _, _ = _context(x, offsets, a["contextStart"], a["contextLength"])
    return {"Out": [with_lod(torch.relu(col @ w + b.reshape(-1)), lod_of(x))], "ColMat": [col]}


_fused(
    "fusion_seqconv_eltadd_relu",
    ("X", "Filter", "Bias"),
    ("Out", "ColMat"),
    {"contextLength": 0, "contextStart": 0, "contextStride": 1},  # contextLength: fluid requires it
    _seqconv_infer,
    _seqconv_eltadd_relu,
    doc="relu(sequence_conv(X, Filter) + Bias); ColMat: each row's context (its rows side by side).",
)


# -- fusion_seqpool_concat, fusion_seqpool_cvm_concat -----------------------------------------------
_SEQPOOL_TYPES = ("SUM", "AVERAGE", "SQRT")


def _seqpool_infer(op, with_cvm):
    def infer(ins, a):
        xs = ins["X"]
        _need(len(xs) >= 1, f"{op}: Inputs(X) must not be empty")
        _need(a["axis"] == 1, f"{op}: only concat axis=1 is supported. Received: axis={a['axis']}")
        _need(a["pooltype"] in _SEQPOOL_TYPES, f"{op}: pooltype {a['pooltype']!r} is not in {list(_SEQPOOL_TYPES)}")
        if with_cvm:
            _need(a["use_cvm"], f"{op}: only use_cvm=True is supported")
        _rank(xs[0], 2, f"{op}: the first of Inputs(X)")
        w = xs[0].shape[1]
        return {"Out": [((-1, w * len(xs) if w >= 0 else -1), xs[0].dtype)]}

    return infer


def _pooled(op, ins, a):
    """Each input sequence-pooled (the sequence_pool kernel); all of one batch size and width."""
    pooled = []
    for i, x in enumerate(ins["X"]):
        _last_level(x, op, f"Input(X)[{i}]")
        p = _sequence_pool({"X": [x]}, {"pooltype": a["pooltype"], "pad_value": 0.0})["Out"][0]
        pooled.append(p.reshape(p.shape[0], -1))
    n, w = pooled[0].shape
    for i, p in enumerate(pooled):
        _need(
            tuple(p.shape) == (n, w),
            f"{op}: all inputs must hold as many sequences ({n}) of rows as wide ({w}) as the first. Received: "
            f"input {i}: {p.shape[0]} sequences of width {p.shape[1]}",
        )
    return pooled


def _seqpool_concat(ins, a):
    pooled = _pooled("FusionSeqPoolConcatOp", ins, a)
    return {"Out": [with_lod(torch.cat(pooled, dim=1), [list(range(pooled[0].shape[0] + 1))])]}  # a row a sequence


def _seqpool_cvm_concat(ins, a):
    """Each input pooled, then cvm (its first two columns: log(show + 1), log(click + 1) - log(show + 1))."""
    _need(a["use_cvm"], "fusion_seqpool_cvm_concat: only use_cvm=True is supported")
    cvm = ins["CVM"]
    pooled = [_cvm({"X": [p], "CVM": cvm}, a)["Y"][0] for p in _pooled("FusionSeqPoolCVMConcatOp", ins, a)]
    # one row per sequence, with the LoD saying so (fluid's kernel set it, although it built lod_level 0)
    return {"Out": [with_lod(torch.cat(pooled, dim=1), [list(range(pooled[0].shape[0] + 1))])]}


_fused(
    "fusion_seqpool_concat",
    ("X",),
    ("Out",),
    {"pooltype": "SUM", "axis": 1},
    _seqpool_infer("fusion_seqpool_concat", False),
    _seqpool_concat,
    doc="concat(sequence_pool(X[i]) for each i, axis=1).",
)
_fused(
    "fusion_seqpool_cvm_concat",
    ("X", "CVM"),
    ("Out",),
    {"pooltype": "SUM", "use_cvm": True, "axis": 1},
    _seqpool_infer("fusion_seqpool_cvm_concat", True),
    _seqpool_cvm_concat,
    doc="concat(cvm(sequence_pool(X[i])) for each i, axis=1).",
)


# -- fusion_repeated_fc_relu --------------------------------------------------------------------------
def _repeated_fc_relu_infer(ins, a):
    x, ws, bs = first(ins, "X"), ins["W"], ins.get("Bias") or []
    _need(len(ws) > 1, f"fusion_repeated_fc_relu: Inputs(W) must be more than 1. Received: {len(ws)}")
    _need(
        len(bs) == len(ws),
        f"fusion_repeated_fc_relu: Inputs(Bias) must be as many as Inputs(W) ({len(ws)}). Received: {len(bs)}",
    )
    _rank(x, 2, "fusion_repeated_fc_relu: Input(X)")
    for i, (w, b) in enumerate(zip(ws, bs)):
        _rank(w, 2, f"fusion_repeated_fc_relu: W[{i}]")
        _need(
            not _differ(prod_or_unknown(b.shape), w.shape[1]),
            f"fusion_repeated_fc_relu: Bias[{i}] must hold W[{i}]'s width ({w.shape[1]}). Received: {list(b.shape)}",
        )
    _need(
        not _differ(ws[0].shape[0], x.shape[1]),
        f"fusion_repeated_fc_relu: W[0]'s height must be the width of X. Received: W[0] {list(ws[0].shape)}, "
        f"X {list(x.shape)}",
    )
    rows = x.shape[0]
    return {
        "ReluOut": [((rows, w.shape[1]), x.dtype) for w in ws[:-1]],
        "Out": [((rows, ws[-1].shape[1]), x.dtype)],
    }


def _repeated_fc_relu(ins, a):
    y, outs = ins["X"][0], []
    for w, b in zip(ins["W"], ins["Bias"]):
        y = torch.relu(y @ w + b.reshape(-1))
        outs.append(y)
    return {"ReluOut": outs[:-1], "Out": [with_lod(outs[-1], lod_of(ins["X"][0]))]}


_fused(
    "fusion_repeated_fc_relu",
    ("X", "W", "Bias"),
    ("ReluOut", "Out"),
    {},
    _repeated_fc_relu_infer,
    _repeated_fc_relu,
    doc="relu(... relu(relu(X @ W[0] + Bias[0]) @ W[1] + Bias[1]) ...); ReluOut: every layer but the last.",
)


# -- fusion_squared_mat_sub -----------------------------------------------------------------------------
def _squared_mat_sub_infer(ins, a):
    x, y = first(ins, "X"), first(ins, "Y")
    _need(
        len(x.shape) == len(y.shape),
        f"fusion_squared_mat_sub: X's rank must equal Y's. Received: X {list(x.shape)}, Y {list(y.shape)}",
    )
    _rank(x, 2, "fusion_squared_mat_sub: Input(X)")
    _need(
        not _differ(x.shape[1], y.shape[0]),
        f"fusion_squared_mat_sub: X's width must equal Y's height. Received: X {list(x.shape)}, Y {list(y.shape)}",
    )
    xy = (x.shape[0], y.shape[1])
    return {
        "SquaredX": [(x.shape, x.dtype)],
        "SquaredY": [(y.shape, x.dtype)],
        "SquaredXY": [(xy, x.dtype)],
        "Out": [(xy, x.dtype)],
    }


def _squared_mat_sub(ins, a):
    x, y = ins["X"][0], ins["Y"][0]
    sx, sy, sxy = x * x, y * y, (x @ y) ** 2
    return {"SquaredX": [sx], "SquaredY": [sy], "SquaredXY": [sxy], "Out": [(sxy - sx @ sy) * a["scalar"]]}


_fused(
    "fusion_squared_mat_sub",
    ("X", "Y"),
    ("SquaredX", "SquaredY", "SquaredXY", "Out"),
    {"scalar": 1.0},
    _squared_mat_sub_infer,
    _squared_mat_sub,
    doc="Out = scalar * ((X @ Y)^2 - X^2 @ Y^2): the second-order term of a factorization machine.",
)
