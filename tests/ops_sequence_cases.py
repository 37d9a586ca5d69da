"""Op-table cases for the LoD sequence ops (fluidcompat_ops/sequence.py) against numpy: a LoDTensor
input of four sequences (2, 0, 4 and 1 rows)."""

from __future__ import annotations

import numpy as np

import fluidcompat as fluid
from tests.op_harness import Case

L = fluid.layers
rng = np.random.RandomState(21)
LENS = [2, 0, 4, 1]
OFF = np.cumsum([0] + LENS)
SEQ = rng.uniform(-1, 1, (7, 3)).astype("float32")
LOD = {"x": [LENS]}


def spans():
    return list(zip(OFF[:-1], OFF[1:]))


def pool(x, kind, pad=0.0):
    rows = []
    for a, b in spans():
        s = x[a:b]
        if b == a:
            rows.append(np.full(x.shape[1], pad, "float32"))
            continue
        rows.append(
            {
                "sum": s.sum(0),
                "average": s.mean(0),
                "sqrt": s.sum(0) / np.sqrt(b - a),
                "max": s.max(0),
                "last": s[-1],
                "first": s[0],
            }[kind]
        )
    return np.array(rows, "float32")


def seq_softmax(x):
    out = np.empty_like(x)
    for a, b in spans():
        e = np.exp(x[a:b] - x[a:b].max()) if b > a else x[a:b]
        out[a:b] = e / e.sum() if b > a else e
    return out


def context(x, start, length):
    cols = []
    for k in range(length):
        col = np.zeros_like(x)
        for a, b in spans():
            for t in range(a, b):
                r = t + start + k
                if a <= r < b:
                    col[t] = x[r]
        cols.append(col)
    return np.concatenate(cols, 1)


def reverse(x):
    return np.concatenate([x[a:b][::-1] for a, b in spans()])


def padded(x, maxlen, value):
    out = np.full((len(LENS), maxlen, x.shape[1]), value, "float32")
    for i, (a, b) in enumerate(spans()):
        out[i, : b - a] = x[a:b]
    return out


def enumerate_ids(ids, win, pad):
    out = np.full((ids.shape[0], win), pad, ids.dtype)
    for a, b in spans():
        for t in range(a, b):
            for k in range(win):
                if t + k < b:
                    out[t, k] = ids[t + k, 0]
    return out


def sig(v):
    return 1 / (1 + np.exp(-v))


def lstm(x, w, b, reverse_=False, proj=None):
    """fluid's lstm op with peepholes: gate blocks candidate, input, forget, output; with ``proj``
    the lstmp op (the recurrent state is tanh(h @ proj))."""
    d = w.shape[1] // 4
    width = proj.shape[1] if proj is not None else d
    out_h, out_c = np.zeros((x.shape[0], width), "float32"), np.zeros((x.shape[0], d), "float32")
    for a, b_ in spans():
        h, c = np.zeros(w.shape[0]), np.zeros(d)
        order = range(b_ - 1, a - 1, -1) if reverse_ else range(a, b_)
        for t in order:
            g = x[t] + h @ w + b[0, : 4 * d]
            gc, gi, gf, go = np.split(g, 4)
            i = sig(gi + c * b[0, 4 * d : 5 * d])
            f = sig(gf + c * b[0, 5 * d : 6 * d])
            c = f * c + i * np.tanh(gc)
            o = sig(go + c * b[0, 6 * d :])
            h = o * np.tanh(c)
            if proj is not None:
                h = np.tanh(h @ proj)
            out_h[t], out_c[t] = h, c
    return out_h, out_c


def gru(x, w, b, origin_mode=False):
    """fluid's gru op: the weight's memory holds the [d, 2d] update/reset weights, then [d, d]."""
    d = w.shape[0]
    flat = w.reshape(-1)
    wg, wc = flat[: 2 * d * d].reshape(d, 2 * d), flat[2 * d * d :].reshape(d, d)
    out = np.zeros((x.shape[0], d), "float32")
    for a, b_ in spans():
        h = np.zeros(d)
        for t in range(a, b_):
            xu, xr, xc = np.split(x[t] + b[0], 3)
            gu, gr = np.split(h @ wg, 2)
            u, r = sig(xu + gu), sig(xr + gr)
            cand = np.tanh(xc + (r * h) @ wc)
            h = u * h + (1 - u) * cand if origin_mode else (1 - u) * h + u * cand
            out[t] = h
    return out


W_LSTM = rng.uniform(-0.5, 0.5, (2, 8)).astype("float32")
B_LSTM = rng.uniform(-0.5, 0.5, (1, 14)).astype("float32")
W_GRU = rng.uniform(-0.5, 0.5, (2, 6)).astype("float32")
B_GRU = rng.uniform(-0.5, 0.5, (1, 6)).astype("float32")
W_CONV = rng.uniform(-0.5, 0.5, (9, 2)).astype("float32")
NI = fluid.initializer.NumpyArrayInitializer
x = {"x": SEQ}


def _erase(x, tokens):
    from fluidcompat.layer_helper import LayerHelper

    helper = LayerHelper("sequence_erase")
    out = helper.create_variable_for_type_inference(dtype=x.dtype)
    helper.append_op(type="sequence_erase", inputs={"X": [x]}, outputs={"Out": [out]}, attrs={"tokens": tokens})
    return out


def seq(name, build, ref, inputs=None, **kw):
    return Case(
        name, build, inputs or x, ref, lods=LOD, shapes={"x": [None] + list((inputs or x)["x"].shape[1:])}, **kw
    )


BEAM_IN = {
    "pre_ids": np.arange(6, dtype="int64").reshape(6, 1),
    "pre_scores": np.zeros((6, 1), "float32"),
    "ids": rng.randint(0, 50, (6, 4)).astype("int64"),
    "scores": -rng.permutation(24).reshape(6, 4).astype("float32") / 10,  # distinct
}


def _beam_ref(ids, scores, prefixes, beam_size):
    """Each source's beam_size best candidates, listed by prefix row, best first within a row."""
    starts, picked = np.cumsum([0] + prefixes), []
    for a, b in zip(starts[:-1], starts[1:]):
        best = np.argsort(-scores[a:b], axis=None, kind="stable")[:beam_size]
        rows = [(a + i // scores.shape[1], i % scores.shape[1]) for i in best]
        picked += sorted(rows, key=lambda rc: (rc[0], -scores[rc]))
    return [np.array([[ids[rc]] for rc in picked]), np.array([[scores[rc]] for rc in picked])]


DECODE_IN = {
    "i0": np.array([[0], [0]], "int64"),
    "s0": np.zeros((2, 1), "float32"),
    "i1": np.array([[3], [4], [5], [6]], "int64"),
    "s1": np.array([[-1.5], [-0.5], [-0.7], [-0.9]], "float32"),
}


def _decode_two_steps(i0, s0, i1, s1):
    ids, scores = L.create_array("int64"), L.create_array("float32")
    for t, (step_ids, step_scores) in enumerate(((i0, s0), (i1, s1))):
        i = L.fill_constant([1], "int64", t)
        L.array_write(step_ids, i, array=ids)
        L.array_write(step_scores, i, array=scores)
    return L.beam_search_decode(ids, scores, 2, end_id=1)


def _decode_ref(i0, s0, i1, s1):
    """Per source its two sentences [start, candidate], best final score first."""
    out_ids, out_scores = [], []
    for src in range(2):
        for c in sorted((2 * src, 2 * src + 1), key=lambda c: -s1[c, 0]):
            out_ids += [i0[src, 0], i1[c, 0]]
            out_scores += [s0[src, 0], s1[c, 0]]
    return [np.array(out_ids), np.array(out_scores, "float32")]


SEQUENCE_CASES = [
    *[
        seq(
            f"sequence_pool_{k}",
            (lambda k: lambda x: L.sequence_pool(x, k, pad_value=0.5))(k),
            (lambda k: lambda x: pool(x, k, 0.5))(k),
        )
        for k in ("sum", "average", "sqrt", "max", "last", "first")
    ],
    seq("sequence_softmax", lambda x: L.sequence_softmax(L.slice(x, [1], [0], [1])), lambda x: seq_softmax(x[:, :1])),
    seq(
        "sequence_conv",
        lambda x: L.sequence_conv(x, 2, 3, param_attr=NI(W_CONV), bias_attr=False),
        lambda x: context(x, -1, 3) @ W_CONV,
    ),
    seq("sequence_reverse", lambda x: L.sequence_reverse(x), reverse),
    seq(
        "sequence_pad",
        lambda x: L.sequence_pad(x, L.assign(np.array([7.0], "float32")), maxlen=5),
        lambda x: [padded(x, 5, 7.0), np.array(LENS, "int64")],
    ),
    Case(
        "sequence_unpad",
        lambda p: L.sequence_unpad(p, L.assign(np.array([1, 3], "int64"))),
        {"p": SEQ[:6].reshape(2, 3, 3)},
        lambda p: np.concatenate([p[0, :1], p[1, :3]]),
    ),
    seq("sequence_reshape", lambda x: L.sequence_reshape(x, 1), lambda x: x.reshape(-1, 1)),
    seq(
        "sequence_erase",  # edit_distance's ignored_tokens
        lambda x: _erase(x, [2, 5]),
        lambda x: x[(x != 2) & (x != 5)].reshape(-1, 1),
        inputs={"x": np.array([2, 2, 3, 5, 4, 2, 6], "int64").reshape(7, 1)},
    ),
    seq(
        "sequence_concat",
        lambda x: L.sequence_concat([x, L.scale(x, 2.0)]),
        lambda x: np.concatenate([np.concatenate([x[a:b], 2 * x[a:b]]) for a, b in spans()]),
    ),
    seq(
        "sequence_enumerate",
        lambda x: L.sequence_enumerate(x, 3, pad_value=-1),
        lambda x: enumerate_ids(x, 3, -1),
        inputs={"x": np.arange(7, dtype="int64").reshape(7, 1)},
    ),
    seq(
        "sequence_slice",
        lambda x: L.sequence_slice(
            x, L.assign(np.array([[1], [0], [1], [0]], "int64")), L.assign(np.array([[1], [0], [3], [1]], "int64"))
        ),
        lambda x: np.concatenate([x[1:2], x[3:6], x[6:7]]),
    ),
    seq(
        "sequence_expand_as",
        lambda x: L.sequence_expand_as(L.sequence_pool(x, "sum"), x),
        lambda x: np.repeat(pool(x, "sum"), LENS, axis=0),
    ),
    seq(
        "sequence_expand",
        lambda x: L.sequence_expand(L.sequence_pool(x, "max"), x),
        lambda x: np.repeat(pool(x, "max"), LENS, axis=0),
    ),
    Case(
        "sequence_scatter",
        lambda b, u: L.sequence_scatter(b, L.lod_reset(L.assign(np.array([[0], [2], [2], [1]], "int64")), u), u),
        {"b": SEQ[:2], "u": np.array([[1.0], [2.0], [3.0], [4.0]], "float32")},
        lambda b, u: b + np.array([[1, 0, 0], [0, 4, 5]], "float32"),
        lods={"u": [[1, 3]]},
    ),
    seq(
        "lod_reset",
        lambda x: L.sequence_pool(L.lod_reset(x, target_lod=[0, 3, 7]), "sum"),
        lambda x: np.array([x[:3].sum(0), x[3:].sum(0)]),
    ),
    seq(
        "lstm",
        lambda x: L.dynamic_lstm(x, 8, param_attr=NI(W_LSTM), bias_attr=NI(B_LSTM), is_reverse=True),
        lambda x: lstm(x, W_LSTM, B_LSTM, reverse_=True),
        inputs={"x": rng.uniform(-1, 1, (7, 8)).astype("float32")},
    ),
    seq(
        "lstmp",
        lambda x: L.dynamic_lstmp(
            x, 8, 3, param_attr=fluid.initializer.Constant(0.2), bias_attr=fluid.initializer.Constant(-0.1)
        ),
        lambda x: lstm(x, np.full((3, 8), 0.2), np.full((1, 14), -0.1), proj=np.full((2, 3), 0.2)),
        inputs={"x": rng.uniform(-1, 1, (7, 8)).astype("float32")},
    ),
    seq(
        "gru",
        lambda x: L.dynamic_gru(x, 2, param_attr=NI(W_GRU), bias_attr=NI(B_GRU), origin_mode=True),
        lambda x: gru(x, W_GRU, B_GRU, origin_mode=True),
        inputs={"x": rng.uniform(-1, 1, (7, 6)).astype("float32")},
    ),
    Case(
        "beam_search",
        lambda pre_ids, pre_scores, ids, scores: L.beam_search(pre_ids, pre_scores, ids, scores, 3, end_id=99),
        BEAM_IN,
        lambda pre_ids, pre_scores, ids, scores: _beam_ref(ids, scores, [2, 1, 3], 3),
        lods={k: [[2, 1, 3], [1] * 6] for k in BEAM_IN},
        shapes={k: [None] + list(v.shape[1:]) for k, v in BEAM_IN.items()},
    ),
    Case(
        "beam_search_decode",
        _decode_two_steps,
        DECODE_IN,
        _decode_ref,
        lods={"i0": [[1, 1], [1, 1]], "s0": [[1, 1], [1, 1]], "i1": [[1, 1], [2, 2]], "s1": [[1, 1], [2, 2]]},
        shapes={k: [None, 1] for k in DECODE_IN},
    ),
]


def _by_length(x):
    """x's sequences (LENS, one empty) longest first, ties in order, and the longest length."""
    order = sorted(range(len(LENS)), key=lambda i: -LENS[i])
    return [np.concatenate([x[OFF[i] : OFF[i + 1]] for i in order]), np.array([max(LENS)], "int64")]


def _rank_reorder(x):
    from fluidcompat.layers import control_flow as cf

    table = cf.lod_rank_table(x)
    return [L.reorder_lod_tensor_by_rank(x, table), cf.max_sequence_len(table)]


SEQUENCE_CASES += [seq("reorder_lod_tensor_by_rank", _rank_reorder, _by_length)]


def _steps_np(x):
    """Step 1 of x's sequences (LENS) longest first, the round trip back, and a memory of 4 rows cut
    to the sequences still running at step 1."""
    order = sorted(range(len(LENS)), key=lambda i: -LENS[i])
    step1 = np.stack([x[OFF[i] + 1] for i in order if LENS[i] > 1])
    return [step1, x, x[: sum(1 for n in LENS if n > 1)]]


def _steps(x):
    from fluidcompat.layers import control_flow as cf

    table = cf.lod_rank_table(x)
    arr = cf.lod_tensor_to_array(x, table)
    one = L.fill_constant([1], "int64", 1)
    return [
        L.array_read(arr, one),
        cf.array_to_lod_tensor(arr, table),
        cf.shrink_memory(L.slice(x, [0], [0], [4]), one, table),
    ]


SEQUENCE_CASES += [seq("lod_tensor_to_array", _steps, _steps_np)]


def _instag_np(x):
    """The sequences (LENS) tagged 2 or 5 when the tags are [1, 2], [3], [], [5]: the first and last."""
    return [np.concatenate([x[OFF[0] : OFF[1]], x[OFF[3] : OFF[4]]]), np.ones((2, 1), "float32")]


SEQUENCE_CASES += [
    seq(
        "filter_by_instag",
        lambda x: list(
            L.filter_by_instag(
                x,
                L.lod_reset(L.assign(np.array([[1], [2], [3], [5]], "int64")), target_lod=[0, 2, 3, 3, 4]),
                L.assign(np.array([2, 5], "int64")),
                True,
            )
        ),  # fmt: skip
        _instag_np,
    )
]
