"""Op-table cases for fluid 1.8's fused inference ops (fluidcompat_ops/fusion.py) against numpy, and
the numpy references they and tests/test_fusion_ops.py share. The ops have no layer: each case
appends its op to the program as fluid's inference passes did."""

from __future__ import annotations

import numpy as np

import fluidcompat as fluid
from tests.op_harness import Case

rng = np.random.RandomState(31)
LENS = [2, 3, 1]
T, N = sum(LENS), len(LENS)


def rand(*shape):
    return rng.uniform(-1, 1, shape).astype("float32")


def spans(lengths=LENS):
    offsets = np.cumsum([0] + list(lengths))
    return list(zip(offsets[:-1], offsets[1:]))


def sigmoid(v):
    return 1 / (1 + np.exp(-v))


def lstm_ref(gates_in, wh, peep=(0, 0, 0), h0=None, c0=None, reverse=False, lengths=LENS):
    """lstm's numpy, per sequence; gates [candidate, input, forget, output]; peep: (w_ic, w_fc, w_oc)."""
    d = wh.shape[0]
    hidden, cell = np.zeros((len(gates_in), d), "float32"), np.zeros((len(gates_in), d), "float32")
    for s, (a, b) in enumerate(spans(lengths)):
        h = np.zeros(d, "float32") if h0 is None else h0[s]
        c = np.zeros(d, "float32") if c0 is None else c0[s]
        for t in reversed(range(a, b)) if reverse else range(a, b):
            cand, i, f, o = np.split(gates_in[t] + h @ wh, 4)
            i, f = sigmoid(i + c * peep[0]), sigmoid(f + c * peep[1])
            c = f * c + i * np.tanh(cand)
            h = sigmoid(o + c * peep[2]) * np.tanh(c)
            hidden[t], cell[t] = h, c
    return hidden, cell


def gru_ref(xx, wh, h0=None, lengths=LENS, origin_mode=False):
    """gru's numpy: xx holds [update, reset, candidate] inputs; wh's memory the [D, 2D] update/reset
    weights, then the [D, D] candidate's; origin_mode takes u of the old state, not of the candidate."""
    d = wh.shape[0]
    w_ur, w_c = wh.reshape(-1)[: 2 * d * d].reshape(d, 2 * d), wh.reshape(-1)[2 * d * d :].reshape(d, d)
    out = np.zeros((len(xx), d), "float32")
    for s, (a, b) in enumerate(spans(lengths)):
        h = np.zeros(d, "float32") if h0 is None else h0[s]
        for t in range(a, b):
            u, r = np.split(sigmoid(xx[t, : 2 * d] + h @ w_ur), 2)
            c = np.tanh(xx[t, 2 * d :] + (r * h) @ w_c)
            h = u * h + (1 - u) * c if origin_mode else (1 - u) * h + u * c
            out[t] = h
    return out


def attention_lstm_ref(x, c0, h0, aw, ab, scalar, scalar_b, w, b, lengths=LENS):
    """attention_lstm's numpy: each step attends over its whole sequence, then one LSTM step with gates
    [forget, input, output, candidate] over [hidden, attended x]."""
    m, d = x.shape[1], c0.shape[1]
    hidden, cell = np.zeros((len(x), d), "float32"), np.zeros((len(x), d), "float32")
    for s, (a, e) in enumerate(spans(lengths)):
        xs, h, c = x[a:e], (np.zeros(d, "float32") if h0 is None else h0[s]), c0[s]
        for t in range(e - a):
            score = np.maximum(xs @ aw[:m, 0] + (ab[0, 0] if ab is not None else 0) + c @ aw[m:, 0], 0)
            if scalar is not None:
                score = np.maximum(score * scalar[0, 0] + (scalar_b[0, 0] if scalar_b is not None else 0), 0)
            att = np.exp(score - score.max()) / np.exp(score - score.max()).sum()
            f, i, o, cand = np.split(np.concatenate([h, att @ xs]) @ w + b[0], 4)
            c = sigmoid(f) * c + sigmoid(i) * np.tanh(cand)
            h = sigmoid(o) * np.tanh(c)
            hidden[a + t], cell[a + t] = h, c
    return hidden, cell


def context_ref(x, start, length, lengths=LENS):
    """sequence_conv's context: each row's rows t+start ... side by side, zeros outside its sequence."""
    col = np.zeros((len(x), x.shape[1] * length), "float32")
    for a, b in spans(lengths):
        for t in range(a, b):
            for k in range(length):
                if a <= t + start + k < b:
                    col[t, k * x.shape[1] : (k + 1) * x.shape[1]] = x[t + start + k]
    return col


def seqpool_ref(x, pooltype, lengths=LENS):
    sums = np.array([x[a:b].sum(0) for a, b in spans(lengths)])
    scale = {"SUM": np.ones(len(lengths)), "AVERAGE": np.array(lengths), "SQRT": np.sqrt(lengths)}[pooltype]
    return (sums / scale[:, None]).astype("float32")


def cvm_ref(p):
    show = np.log(p[:, :1] + 1)
    return np.concatenate([show, np.log(p[:, 1:2] + 1) - show, p[:, 2:]], 1)


def append(op_type, inputs, outputs, attrs=None):
    """Append one op to the current program: outputs slot -> count; returns the output variables."""
    block = fluid.default_main_program().global_block()
    new = fluid.unique_name.generate
    outs = {
        s: [block.create_var(name=new(op_type + ".tmp"), dtype="float32") for _ in range(n)] for s, n in outputs.items()
    }
    block.append_op(type=op_type, inputs=inputs, outputs=outs, attrs=attrs or {})
    return outs


D = 2
WX, WH, B7 = rand(3, 4 * D), rand(D, 4 * D), rand(1, 7 * D)
H0, C0 = rand(N, D), rand(N, D)
EMB, IDS = rand(5, 4 * D), rng.randint(0, 5, (T, 1)).astype("int64")
GWX, GWH, GB = rand(3, 3 * D), rand(D, 3 * D), rand(1, 3 * D)
AW, AB, AS, ASB, LW, LB = rand(3 + D, 1), rand(1, 1), rand(1, 1), rand(1, 1), rand(D + 3, 4 * D), rand(1, 4 * D)
SEQ, SEQ2 = rand(T, 3), rand(T, 3)
POSITIVE, POSITIVE2 = rng.rand(T, 3).astype("float32"), rng.rand(T, 3).astype("float32")


def _lstm_case():
    def build(x, wx, wh, b, h0, c0):
        ins = {"X": [x], "WeightX": [wx], "WeightH": [wh], "Bias": [b], "H0": [h0], "C0": [c0]}
        outs = append("fusion_lstm", ins, {"Hidden": 1, "Cell": 1, "XX": 1})
        return outs["Hidden"][0], outs["Cell"][0]

    def ref(x, wx, wh, b, h0, c0):
        return lstm_ref(x @ wx + b[0, : 4 * D], wh, np.split(b[0, 4 * D :], 3), h0, c0)

    inputs = {"x": SEQ, "wx": WX, "wh": WH, "b": B7, "h0": H0, "c0": C0}
    return Case("fusion_lstm", build, inputs, ref, lods={"x": [LENS]})


def _embedding_lstm_case():
    def build(ids, emb, wh, b):
        ins = {"Ids": [ids], "Embeddings": [emb], "WeightH": [wh], "Bias": [b]}
        return append("fused_embedding_fc_lstm", ins, {"Hidden": 1, "Cell": 1, "XX": 1})["Hidden"][0]

    def ref(ids, emb, wh, b):
        return lstm_ref(emb[ids[:, 0]], wh, np.split(b[0, 4 * D :], 3))[0]

    inputs = {"ids": IDS, "emb": EMB, "wh": WH, "b": B7}
    return Case("fused_embedding_fc_lstm", build, inputs, ref, lods={"ids": [LENS]})


def _gru_case():
    def build(x, wx, wh, b):
        ins = {"X": [x], "WeightX": [wx], "WeightH": [wh], "Bias": [b]}
        return append("fusion_gru", ins, {"Hidden": 1, "XX": 1})["Hidden"][0]

    inputs = {"x": SEQ, "wx": GWX, "wh": GWH, "b": GB}
    return Case("fusion_gru", build, inputs, lambda x, wx, wh, b: gru_ref(x @ wx + b[0], wh), lods={"x": [LENS]})


def _attention_case():
    def build(x, c0, aw, ab, scalar, scalar_b, w, b):
        ins = {"X": [x], "C0": [c0], "AttentionWeight": [aw], "AttentionBias": [ab], "AttentionScalar": [scalar]}
        ins.update(AttentionScalarBias=[scalar_b], LSTMWeight=[w], LSTMBias=[b])
        return append("attention_lstm", ins, {"Hidden": 1, "Cell": 1, "AttentionedX": 1})["Hidden"][0]

    def ref(x, c0, aw, ab, scalar, scalar_b, w, b):
        return attention_lstm_ref(x, c0, None, aw, ab, scalar, scalar_b, w, b)[0]

    inputs = {"x": SEQ, "c0": C0, "aw": AW, "ab": AB, "scalar": AS, "scalar_b": ASB, "w": LW, "b": LB}
    return Case("attention_lstm", build, inputs, ref, lods={"x": [LENS]})


def _seqexpand_case():
    def build(x0, x1, w):
        ins = {"X": [x0, x1], "FCWeight": [w]}
        outs = append("fusion_seqexpand_concat_fc", ins, {"Out": 1, "FCOut": 1}, {"fc_activation": "tanh"})
        return outs["Out"][0], outs["FCOut"][0]

    def ref(x0, x1, w):
        return np.tanh(np.concatenate([x0, np.repeat(x1, LENS, 0)], 1) @ w), x1 @ w[3:]

    inputs = {"x0": SEQ, "x1": rand(N, 2), "w": rand(5, 4)}
    return Case("fusion_seqexpand_concat_fc", build, inputs, ref, lods={"x0": [LENS], "x1": [[1] * N]})


def _seqconv_case():
    def build(x, w, b):
        attrs = {"contextLength": 3, "contextStart": -1}
        outs = append(
            "fusion_seqconv_eltadd_relu", {"X": [x], "Filter": [w], "Bias": [b]}, {"Out": 1, "ColMat": 1}, attrs
        )
        return outs["Out"][0], outs["ColMat"][0]

    def ref(x, w, b):
        col = context_ref(x, -1, 3)
        return np.maximum(col @ w + b, 0), col

    return Case(
        "fusion_seqconv_eltadd_relu", build, {"x": SEQ, "w": rand(9, 4), "b": rand(1, 4)}, ref, lods={"x": [LENS]}
    )


def _seqpool_cases():
    def build(x0, x1):
        return append("fusion_seqpool_concat", {"X": [x0, x1]}, {"Out": 1}, {"pooltype": "AVERAGE"})["Out"][0]

    def build_cvm(x0, x1, cvm):
        return append("fusion_seqpool_cvm_concat", {"X": [x0, x1], "CVM": [cvm]}, {"Out": 1})["Out"][0]

    lods = {"x0": [LENS], "x1": [LENS]}
    return [
        Case("fusion_seqpool_concat", build, {"x0": SEQ, "x1": SEQ2},
             lambda x0, x1: np.concatenate([seqpool_ref(x0, "AVERAGE"), seqpool_ref(x1, "AVERAGE")], 1), lods=lods),
        Case("fusion_seqpool_cvm_concat", build_cvm, {"x0": POSITIVE, "x1": POSITIVE2, "cvm": rand(N, 2)},
             lambda x0, x1, cvm: np.concatenate([cvm_ref(seqpool_ref(x, "SUM")) for x in (x0, x1)], 1), lods=lods),
    ]  # fmt: skip


def _dense_cases():
    def fc(x, w, b):
        return append("fc", {"Input": [x], "W": [w], "Bias": [b]}, {"Out": 1}, {"activation_type": "relu"})["Out"][0]

    def repeated(x, w0, w1, b0, b1):
        outs = append("fusion_repeated_fc_relu", {"X": [x], "W": [w0, w1], "Bias": [b0, b1]}, {"ReluOut": 1, "Out": 1})
        return outs["ReluOut"][0], outs["Out"][0]

    def repeated_ref(x, w0, w1, b0, b1):
        r = np.maximum(x @ w0 + b0, 0)
        return r, np.maximum(r @ w1 + b1, 0)

    def squared(x, y):
        return append("fusion_squared_mat_sub", {"X": [x], "Y": [y]}, {"SquaredX": 1, "SquaredY": 1, "SquaredXY": 1,
                      "Out": 1}, {"scalar": -0.3})["Out"][0]  # fmt: skip

    return [
        Case("fc", fc, {"x": rand(2, 3, 2), "w": rand(6, 4), "b": rand(4)},
             lambda x, w, b: np.maximum(x.reshape(2, 6) @ w + b, 0)),
        Case("fusion_repeated_fc_relu", repeated, {"x": rand(3, 4), "w0": rand(4, 5), "w1": rand(5, 2),
             "b0": rand(1, 5), "b1": rand(2)}, repeated_ref),
        Case("fusion_squared_mat_sub", squared, {"x": rand(3, 4), "y": rand(4, 2)},
             lambda x, y: -0.3 * ((x @ y) ** 2 - (x * x) @ (y * y))),
    ]  # fmt: skip


FUSION_CASES = [
    _lstm_case(),
    _embedding_lstm_case(),
    _gru_case(),
    _attention_case(),
    _seqexpand_case(),
    _seqconv_case(),
    *_seqpool_cases(),
    *_dense_cases(),
]
# fused_embedding_fc_lstm checks its ids against the table (a read of values)
FUSION_READS_VALUES = frozenset({"fused_embedding_fc_lstm"})
