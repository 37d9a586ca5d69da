"""fluid 1.8 op types added after the first op table (legacy.py, metrics.py, norm.py, pooling.py,
reshape.py and the additions to loss.py, quant.py, nn.py, optim.py): each appended to a fluid program
and run, against numpy written here; gradients against finite differences; update ops one step.

test_ops.py also runs ``MORE_CASES`` (on an emulated GPU, on torch's meta device, on CUDA where there
is one) and counts them in its coverage check; test_grads.py counts ``MORE_GRAD_CASES`` in its own.
"""

from __future__ import annotations

import struct

import numpy as np
import pytest

import fluidcompat as fluid
from tests.op_harness import Case, run_case
from tests.test_grads import G, check_grad
from tests.test_optimizer_ops import run_update

rng = np.random.RandomState(21)


def op(op_type, inputs, outputs, attrs=None):
    """Append one op; ``outputs`` maps each output slot to its dtype, or to (dtype, count) for a slot of
    several variables. Returns the output variables in order (a slot of several as its own list)."""
    block = fluid.default_main_program().current_block()
    made = {}
    for slot, spec in outputs.items():
        dtype, count = spec if isinstance(spec, tuple) else (spec, None)
        new = [
            block.create_var(name=fluid.unique_name.generate(f"{op_type}.{slot}"), dtype=dtype)
            for _ in range(count or 1)
        ]
        made[slot] = new if count is not None else new[0]
    block.append_op(
        type=op_type,
        inputs={k: v if isinstance(v, list) else [v] for k, v in inputs.items()},
        outputs={k: v if isinstance(v, list) else [v] for k, v in made.items()},
        attrs=attrs or {},
    )
    outs = list(made.values())
    return outs[0] if len(outs) == 1 else outs


def half_away(v):
    """C++'s round: halves away from zero."""
    return np.sign(v) * np.floor(np.abs(v) + 0.5)


# -- numpy references ------------------------------------------------------------------------------------
def conv_transpose_ref(x, w, stride):
    n, c, h, wd = x.shape
    k = w.shape[2]
    out = np.zeros((n, c * w.shape[1], (h - 1) * stride + k, (wd - 1) * stride + k))
    for ch in range(c):  # depthwise: channel ch feeds output channels ch * m .. ch * m + m - 1
        for m in range(w.shape[1]):
            for i in range(h):
                for j in range(wd):
                    out[:, ch * w.shape[1] + m, i * stride : i * stride + k, j * stride : j * stride + k] += (
                        x[:, ch, i, j][:, None, None] * w[ch, m]
                    )
    return out


def nll_ref(x, label, weight, reduction, ignore=-100):
    picked = np.array([0.0 if t == ignore else -x[i, t] * weight[t] for i, t in enumerate(label)])
    total = sum(weight[t] for t in label if t != ignore)
    if reduction == "none":
        return picked, np.zeros(1)
    out = picked.sum() / total if reduction == "mean" else picked.sum()
    return np.array([out]), np.array([total])


def modified_huber_ref(x, y):
    v = x * (2 * y - 1)
    return v, np.where(v < -1, -4 * v, np.where(v < 1, (1 - v) ** 2, 0.0))


def lookup_dequant_ref(w, ids):
    rows = []
    for i in ids.reshape(-1):
        low, high = w[i][0], w[i][1]
        codes = [b for val in w[i][2:] for b in bytearray(struct.pack("f", val))]
        rows.append([np.float32(b * (high - low) / 256.0 + low) for b in codes])
    return np.asarray(rows, "float32")


def conv_shift_ref(x, y):
    out = np.zeros_like(x)
    m, n = x.shape[1], y.shape[1]
    for i in range(m):
        for j in range(n):
            out[:, i] += x[:, (i + j - (n - 1) // 2) % m] * y[:, j]
    return out


def pr_states(idx, labels, weights, classes):
    """[classes, 4] states: TP, FP, TN, FN per class."""
    states = np.zeros((classes, 4))
    for p, t, w in zip(idx.reshape(-1), labels.reshape(-1), weights.reshape(-1)):
        states[:, 2] += w
        if p == t:
            states[p, 0] += w
            states[p, 2] -= w
        else:
            states[p, 1] += w
            states[t, 3] += w
            states[p, 2] -= w
            states[t, 2] -= w
    return states


def pr_metrics(states):
    def ratio(a, b):
        return a / (a + b) if a + b > 0 else 1.0

    def f1(p, r):
        return 2 * p * r / (p + r) if p + r > 0 else 0.0

    mp = np.mean([ratio(s[0], s[1]) for s in states])
    mr = np.mean([ratio(s[0], s[3]) for s in states])
    tp, fp, fn = states[:, 0].sum(), states[:, 1].sum(), states[:, 3].sum()
    up, ur = ratio(tp, fp), ratio(tp, fn)
    return np.array([mp, mr, f1(mp, mr), up, ur, f1(up, ur)])


def precision_recall_ref(p, i, t, w, prior):
    states = pr_states(i, t, w, 3)
    return pr_metrics(states), pr_metrics(states + prior), (states + prior).astype("float32")


def pn_pair_ref(score, label, query, column):
    pos = neg = neu = 0.0
    s = score[:, column]
    for i in range(len(s)):
        for j in range(i + 1, len(s)):
            if query[i, 0] != query[j, 0] or label[i, 0] == label[j, 0]:
                continue
            if s[i] == s[j]:
                neu += 1.0
            if (s[i] - s[j]) * (label[i, 0] - label[j, 0]) > 0:
                pos += 1.0
            else:  # fluid counts a tie as negative too
                neg += 1.0
    return [np.array([v], "float32") for v in (pos, neg, neu)]


def unpool_ref(x, idx, out_hw):
    out = np.zeros(x.shape[:2] + (out_hw[0] * out_hw[1],))
    for n in range(x.shape[0]):
        for c in range(x.shape[1]):
            out[n, c, idx[n, c].reshape(-1)] = x[n, c].reshape(-1)
    return out.reshape(x.shape[:2] + tuple(out_hw))


def spp_ref(x, height, kind):
    n, c, h, w = x.shape
    levels = []
    for level in range(height):
        bins = 2**level
        kh, kw = -(-h // bins), -(-w // bins)
        ph, pw = (kh * bins - h + 1) // 2, (kw * bins - w + 1) // 2
        out = np.zeros((n, c, bins, bins))
        for i in range(bins):
            for j in range(bins):
                r0, r1 = max(i * kh - ph, 0), min(i * kh - ph + kh, h)
                c0, c1 = max(j * kw - pw, 0), min(j * kw - pw + kw, w)
                win = x[:, :, r0:r1, c0:c1]
                if not win.size:  # a window wholly in the padding: fluid's -FLT_MAX
                    out[:, :, i, j] = -np.finfo(np.float32).max
                else:
                    out[:, :, i, j] = win.max(axis=(2, 3)) if kind == "max" else win.mean(axis=(2, 3))
        levels.append(out.reshape(n, -1))
    return np.concatenate(levels, axis=1)


# -- inputs ----------------------------------------------------------------------------------------------
X23 = rng.uniform(-1, 1, (2, 3))
PROBS = rng.uniform(0.1, 0.9, (4, 3))
LABEL4 = np.array([2, 0, -100, 1], "int64")
W3 = rng.uniform(0.2, 1.0, 3)
QX = (rng.uniform(-1, 1, (3, 4)) * 3).astype("float32")
PACKED = np.concatenate(
    [np.array([[-1.0, 1.0], [0.5, 2.5], [-3.0, 0.0]], "float32"), rng.uniform(-5, 5, (3, 2)).astype("float32")], 1
)
IMG = rng.uniform(-1, 1, (1, 2, 5, 6))
POOLED = rng.uniform(0, 1, (1, 2, 2, 2))
UNPOOL_IDX = np.array([[[[0, 3], [13, 10]], [[7, 4], [8, 15]]]], "int32")  # positions in a 4 x 4 plane
PR_IDX = np.array([[0], [1], [2], [2], [1], [0]], "int32")
PR_LAB = np.array([[0], [2], [2], [1], [1], [1]], "int32")
PR_W = rng.uniform(0.5, 1.5, (6, 1)).astype("float32")
PR_STATES = rng.randint(0, 5, (3, 4)).astype("float32")
SCORE = np.array([[0.1, 0.5], [0.3, 0.5], [0.2, 0.9], [0.7, 0.4], [0.6, 0.4]], "float32")
PN_LABEL = np.array([[1.0], [0.0], [2.0], [0.0], [1.0]], "float32")
QUERY = np.array([[0], [0], [0], [1], [1]], "int64")


def _quant_dequant_ref(x, in_accum, in_state, rate=0.9, bits=8):
    state = rate * in_state + 1
    accum = rate * in_accum + np.abs(x).max()
    s = (accum / state).astype("float32")
    b = (1 << (bits - 1)) - 1
    return half_away(b / s * np.clip(x, -s, s)) * (s / b), s, state, accum


MORE_CASES = [
    Case(
        "depthwise_conv2d_transpose",
        lambda x, w: op(
            "depthwise_conv2d_transpose",
            {"Input": x, "Filter": w},
            {"Output": "float64"},
            {"groups": 2, "strides": [2, 2]},
        ),  # fmt: skip
        {"x": IMG[:, :, :3, :3], "w": rng.uniform(-1, 1, (2, 1, 2, 2))},
        lambda x, w: conv_transpose_ref(x, w, 2),
    ),
    Case(
        "nll_loss_mean_weighted",
        lambda x, t, w: op(
            "nll_loss", {"X": x, "Label": t, "Weight": w}, {"Out": "float64", "Total_weight": "float64"}
        ),
        {"x": PROBS, "t": LABEL4, "w": W3},
        lambda x, t, w: nll_ref(x, t, w, "mean"),
    ),
    Case(
        "nll_loss_none",
        lambda x, t: op(
            "nll_loss", {"X": x, "Label": t}, {"Out": "float64", "Total_weight": "float64"}, {"reduction": "none"}
        ),  # fmt: skip
        {"x": PROBS, "t": LABEL4},
        lambda x, t: nll_ref(x, t, np.ones(3), "none"),
    ),
    Case(
        "bce_loss",
        lambda x, t: op("bce_loss", {"X": x, "Label": t}, {"Out": "float64"}),
        {"x": PROBS, "t": rng.randint(0, 2, (4, 3)).astype("float64")},
        lambda x, t: -(t * np.log(x) + (1 - t) * np.log(1 - x)),
    ),
    Case(
        "hinge_loss",
        lambda x, t: op("hinge_loss", {"Logits": x, "Labels": t}, {"Loss": "float32"}),
        {"x": np.array([[-2.0], [0.5], [1.5], [-0.3]], "float32"), "t": np.array([[1], [1], [0], [0]], "float32")},
        lambda x, t: np.maximum(1 - (2 * t - 1) * x, 0),
    ),
    Case(
        "modified_huber_loss",
        lambda x, y: op("modified_huber_loss", {"X": x, "Y": y}, {"IntermediateVal": "float64", "Out": "float64"}),
        {"x": np.array([[-2.0], [-0.5], [0.3], [1.5]]), "y": np.array([[1.0], [0.0], [1.0], [1.0]])},
        modified_huber_ref,
    ),
    Case(
        "fake_channel_wise_quantize_abs_max",
        lambda x: op("fake_channel_wise_quantize_abs_max", {"X": x}, {"Out": "float32", "OutScale": "float32"}),
        {"x": QX},
        lambda x: (half_away(x / np.abs(x).max(1, keepdims=True) * 127), np.abs(x).max(1)),
    ),
    Case(
        "fake_quantize_dequantize_moving_average_abs_max",
        lambda x, s, a, st: op(
            "fake_quantize_dequantize_moving_average_abs_max",
            {"X": x, "InScale": s, "InAccum": a, "InState": st},
            {"Out": "float32", "OutScale": "float32", "OutState": "float32", "OutAccum": "float32"},
        ),
        {"x": QX, "s": np.ones(1, "float32"), "a": np.full(1, 2.0, "float32"), "st": np.full(1, 3.0, "float32")},
        lambda x, s, a, st: _quant_dequant_ref(x, a, st),
    ),
    Case(
        "moving_average_abs_max_scale",
        lambda x, a, st: op(
            "moving_average_abs_max_scale",
            {"X": x, "InAccum": a, "InState": st},
            {"Out": "float32", "OutScale": "float32", "OutState": "float32", "OutAccum": "float32"},
            {"moving_rate": 0.5},
        ),
        {"x": QX, "a": np.full(1, 2.0, "float32"), "st": np.full(1, 3.0, "float32")},
        lambda x, a, st: (x, (0.5 * a + np.abs(x).max()) / (0.5 * st + 1), 0.5 * st + 1, 0.5 * a + np.abs(x).max()),
    ),
    Case(
        "fake_channel_wise_dequantize_max_abs",
        lambda x, s0, s1: op(
            "fake_channel_wise_dequantize_max_abs",
            {"X": x, "Scales": [s0, s1]},
            {"Out": "float32"},
            {"quant_bits": [8, 4]},
        ),  # fmt: skip
        {
            "x": half_away(QX * 30).reshape(2, 2, 3),
            "s0": np.array([0.5, 2.0], "float32"),
            "s1": np.full(1, 0.7, "float32"),
        },
        lambda x, s0, s1: x * s0.reshape(1, 2, 1) / 127 * (s1 / 7),
        rtol=1e-6,
    ),
    Case(
        "dequantize_abs_max",
        lambda x, s: op("dequantize_abs_max", {"X": x, "Scale": s}, {"Out": "float32"}, {"max_range": 127.0}),
        {"x": np.array([[-127, 5], [64, 127]], "int8"), "s": np.array([0.5], "float32")},
        lambda x, s: (x * s / 127).astype("float32"),
    ),
    Case(
        "lookup_table_dequant",
        lambda w, ids: op("lookup_table_dequant", {"W": w, "Ids": ids}, {"Out": "float32"}),
        {"w": PACKED, "ids": np.array([[2], [0], [2]], "int64")},
        lookup_dequant_ref,
    ),
    Case(
        "frobenius_norm",
        lambda x: op("frobenius_norm", {"X": x}, {"Out": "float64"}, {"dim": [1, 2]}),
        {"x": IMG[0]},
        lambda x: np.sqrt((x * x).sum(axis=(1, 2))),
    ),
    Case(
        "p_norm",
        lambda x: op("p_norm", {"X": x}, {"Out": "float64"}, {"axis": 1, "porder": 3.0, "keepdim": True}),
        {"x": X23},
        lambda x: (np.abs(x) ** 3).sum(1, keepdims=True) ** (1 / 3),
    ),
    Case(
        "squared_l2_distance",
        lambda x, y: op("squared_l2_distance", {"X": x, "Y": y}, {"sub_result": "float64", "Out": "float64"}),
        {"x": IMG[0], "y": IMG[0, :1] * 0.5},
        lambda x, y: ((x - y).reshape(2, -1), ((x - y) ** 2).reshape(2, -1).sum(1, keepdims=True)),
    ),
    Case(
        "flatten",
        lambda x: op("flatten", {"X": x}, {"Out": "float64"}, {"axis": 2}),
        {"x": IMG},
        lambda x: x.reshape(2, 30),
    ),  # fmt: skip
    Case(
        "squeeze", lambda x: op("squeeze", {"X": x}, {"Out": "float64"}, {"axes": [0]}), {"x": IMG}, lambda x: x[0]
    ),  # fmt: skip
    Case(
        "unsqueeze",
        lambda x: op("unsqueeze", {"X": x}, {"Out": "float64"}, {"axes": [0, 3]}),
        {"x": X23},
        lambda x: x.reshape(1, 2, 3, 1),
    ),  # fmt: skip
    Case(
        "unbind",
        lambda x: op("unbind", {"X": x}, {"Out": ("float64", 3)}, {"axis": -1}),
        {"x": X23},
        lambda x: [x[:, i] for i in range(3)],
    ),  # fmt: skip
    Case(
        "minus",
        lambda x, y: op("minus", {"X": x, "Y": y}, {"Out": "float32"}),
        {"x": QX, "y": QX[::-1].copy()},
        lambda x, y: x - y,
    ),  # fmt: skip
    Case(
        "conv_shift",
        lambda x, y: op("conv_shift", {"X": x, "Y": y}, {"Out": "float64"}),
        {"x": rng.uniform(-1, 1, (2, 5)), "y": rng.uniform(-1, 1, (2, 3))},
        conv_shift_ref,
    ),  # fmt: skip
    Case(
        "fill",
        lambda: op("fill", {}, {"Out": "int32"}, {"value": [1.5, -2.7, 3.0, 4.9], "shape": [2, 2], "dtype": 2}),
        {},
        lambda: np.array([[1, -2], [3, 4]], "int32"),
    ),
    Case(
        "merge_ids",
        lambda i0, i1, r0, r1, x0, x1: op(
            "merge_ids", {"Ids": [i0, i1], "Rows": [r0, r1], "X": [x0, x1]}, {"Out": ("float32", 2)}
        ),
        {
            "i0": np.array([[0], [5], [2]], "int64"),
            "i1": np.array([[3], [3]], "int64"),
            "r0": np.array([[0], [2]], "int64"),
            "r1": np.array([[3], [5]], "int64"),
            "x0": np.array([[0.1, 0.2], [0.3, 0.4]], "float32"),
            "x1": np.array([[0.5, 0.6], [0.7, 0.8]], "float32"),
        },
        lambda *a: [np.array([[0.1, 0.2], [0.7, 0.8], [0.3, 0.4]], "float32"), np.array([[0.5, 0.6]] * 2, "float32")],
    ),
    Case(
        "precision_recall",
        lambda p, i, t, w, s: op(
            "precision_recall",
            {"MaxProbs": p, "Indices": i, "Labels": t, "Weights": w, "StatesInfo": s},
            {"BatchMetrics": "float64", "AccumMetrics": "float64", "AccumStatesInfo": "float32"},
            {"class_number": 3},
        ),
        {"p": PR_W, "i": PR_IDX, "t": PR_LAB, "w": PR_W, "s": PR_STATES},
        precision_recall_ref,
    ),
    Case(
        "positive_negative_pair",
        lambda s, t, q: op(
            "positive_negative_pair",
            {"Score": s, "Label": t, "QueryID": q},
            {"PositivePair": "float32", "NegativePair": "float32", "NeutralPair": "float32"},
            {"column": 1},
        ),
        {"s": SCORE, "t": PN_LABEL, "q": QUERY},
        lambda s, t, q: pn_pair_ref(s, t, q, 1),
    ),
    Case(
        "unpool",
        lambda x, i: op(
            "unpool",
            {"X": x, "Indices": i},
            {"Out": "float64"},
            {"ksize": [2, 2], "strides": [2, 2], "unpooling_type": "max"},
        ),  # fmt: skip
        {"x": POOLED, "i": UNPOOL_IDX},
        lambda x, i: unpool_ref(x, i, (4, 4)),
    ),
    Case(
        "spp_max",
        lambda x: op("spp", {"X": x}, {"Out": "float64"}, {"pyramid_height": 3, "pooling_type": "max"}),
        {"x": IMG},
        lambda x: spp_ref(x, 3, "max"),
    ),
    Case(
        "spp_avg",
        lambda x: op("spp", {"X": x}, {"Out": "float64"}, {"pyramid_height": 2, "pooling_type": "avg"}),
        {"x": IMG},
        lambda x: spp_ref(x, 2, "avg"),
    ),
]


# the cases whose kernels read input values (index range checks): test_ops.py's meta-device run stops there
MORE_READS_VALUES = {"lookup_table_dequant", "merge_ids", "precision_recall", "unpool"}


@pytest.mark.parametrize("case", MORE_CASES, ids=str)
def test_op(case):
    run_case(case)


# -- gradients (float64, central differences) ------------------------------------------------------------
A = rng.uniform(0.2, 1.5, (2, 3)) * rng.choice([-1.0, 1.0], (2, 3))
MORE_GRAD_CASES = [
    G(
        "depthwise_conv2d_transpose",
        lambda x, w: op(
            "depthwise_conv2d_transpose",
            {"Input": x, "Filter": w},
            {"Output": "float64"},
            {"groups": 2, "strides": [2, 2], "paddings": [1, 1]},
        ),  # fmt: skip
        {"x": IMG[:, :, :3, :3], "w": rng.uniform(-1, 1, (2, 1, 3, 3))},
    ),
    G(
        "nll_loss",
        lambda x, t, w: op(
            "nll_loss", {"X": x, "Label": t, "Weight": w}, {"Out": "float64", "Total_weight": "float64"}
        )[0],
        {"x": PROBS, "t": LABEL4, "w": W3},
        wrt=["x"],
    ),
    G(
        "bce_loss",
        lambda x, t: op("bce_loss", {"X": x, "Label": t}, {"Out": "float64"}),
        {"x": PROBS, "t": rng.uniform(0, 1, (4, 3))},
        wrt=["x"],
    ),  # fmt: skip
    G(
        "hinge_loss",
        lambda x, t: op("hinge_loss", {"Logits": x, "Labels": t}, {"Loss": "float64"}),
        {"x": np.array([[-2.0], [0.5], [1.5], [-0.3]]), "t": np.array([[1.0], [1.0], [0.0], [0.0]])},
        wrt=["x"],
    ),  # fmt: skip
    G(
        "modified_huber_loss",
        lambda x, y: op("modified_huber_loss", {"X": x, "Y": y}, {"IntermediateVal": "float64", "Out": "float64"})[1],
        {"x": np.array([[-2.0], [-0.5], [0.3], [1.5]]), "y": np.array([[1.0], [0.0], [1.0], [1.0]])},
        wrt=["x"],
    ),
    G("frobenius_norm", lambda x: op("frobenius_norm", {"X": x}, {"Out": "float64"}, {"dim": [0, 1]}), {"x": A}),
    G("p_norm", lambda x: op("p_norm", {"X": x}, {"Out": "float64"}, {"axis": 0, "porder": 3.0}), {"x": A}),
    G(
        "squared_l2_distance",
        lambda x, y: op("squared_l2_distance", {"X": x, "Y": y}, {"sub_result": "float64", "Out": "float64"})[1],
        {"x": A, "y": A[:1] * 0.3},
    ),
    G("flatten", lambda x: op("flatten", {"X": x}, {"Out": "float64"}, {"axis": 0}), {"x": A}),
    G("squeeze", lambda x: op("squeeze", {"X": x}, {"Out": "float64"}, {"axes": [1]}), {"x": A.reshape(2, 1, 3)}),
    G("unsqueeze", lambda x: op("unsqueeze", {"X": x}, {"Out": "float64"}, {"axes": [1]}), {"x": A}),
    G("unbind", lambda x: op("unbind", {"X": x}, {"Out": ("float64", 2)}, {"axis": 0}), {"x": A}),
    G("minus", lambda x, y: op("minus", {"X": x, "Y": y}, {"Out": "float64"}), {"x": A, "y": A * 0.5 + 0.1}),
    G(
        "conv_shift",
        lambda x, y: op("conv_shift", {"X": x, "Y": y}, {"Out": "float64"}),
        {"x": rng.uniform(-1, 1, (2, 5)), "y": rng.uniform(-1, 1, (2, 3))},
    ),  # fmt: skip
    G(
        "unpool",
        lambda x, i: op(
            "unpool",
            {"X": x, "Indices": i},
            {"Out": "float64"},
            {"ksize": [2, 2], "strides": [2, 2], "unpooling_type": "max"},
        ),  # fmt: skip
        {"x": POOLED, "i": UNPOOL_IDX},
    ),
    G(
        "spp",
        lambda x: op("spp", {"X": x}, {"Out": "float64"}, {"pyramid_height": 2, "pooling_type": "max"}),
        {"x": IMG},
    ),  # fmt: skip
    G(
        "spp_avg",
        lambda x: op("spp", {"X": x}, {"Out": "float64"}, {"pyramid_height": 2, "pooling_type": "avg"}),
        {"x": IMG},
    ),  # fmt: skip
]


@pytest.mark.parametrize("case", MORE_GRAD_CASES, ids=str)
def test_grad(case):
    check_grad(case)


def test_minus_grad_is_two_scale_ops_as_fluid():
    x, y = fluid.data("x", [2, 3], "float32"), fluid.data("y", [2, 3], "float32")
    x.stop_gradient = y.stop_gradient = False
    out = op("minus", {"X": x, "Y": y}, {"Out": "float32"})
    fluid.gradients([fluid.layers.reduce_sum(out)], [x, y])
    ops = fluid.default_main_program().global_block().ops
    assert [o.type for o in ops if o.type == "scale"][-2:] == ["scale", "scale"]
    assert sorted(o.attr("scale") for o in ops[-2:]) == [-1.0, 1.0]


def test_unbind_grad_is_a_stack():
    x = fluid.data("x", [2, 3], "float64")
    x.stop_gradient = False
    pieces = op("unbind", {"X": x}, {"Out": ("float64", 3)}, {"axis": 1})
    (g,) = fluid.gradients([fluid.layers.reduce_sum(pieces[1])], [x])  # no gradient for pieces 0 and 2
    assert g.op.type == "stack"
    got = fluid.Executor(fluid.CPUPlace()).run(feed={"x": X23}, fetch_list=[g])[0]
    np.testing.assert_array_equal(got, [[0, 1, 0], [0, 1, 0]])


# -- update ops ------------------------------------------------------------------------------------------
P = rng.uniform(-1, 1, (4, 3)).astype("float32")
GR = rng.uniform(-1, 1, (4, 3)).astype("float32")
MOM = rng.uniform(0.1, 1, (4, 3)).astype("float32")
LR = np.array([0.1], "float32")


def proximal_ref(prox, lr, l1, l2):
    if l1 > 0:
        prox = np.sign(prox) * np.maximum(np.abs(prox) - lr * l1, 0)
    return prox / (1 + lr * l2)


@pytest.mark.parametrize("l1", [0.0, 0.5])
def test_proximal_gd(l1):
    out = run_update("proximal_gd", {"Param": P, "Grad": GR, "LearningRate": LR}, {"ParamOut": "Param"},
                     {"l1": l1, "l2": 0.2})  # fmt: skip
    np.testing.assert_allclose(out["ParamOut"], proximal_ref(P - 0.1 * GR, 0.1, l1, 0.2), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("l1", [0.0, 0.5])
def test_proximal_adagrad(l1):
    out = run_update(
        "proximal_adagrad",
        {"Param": P, "Moment": MOM, "Grad": GR, "LearningRate": LR},
        {"ParamOut": "Param", "MomentOut": "Moment"},
        {"l1": l1, "l2": 0.2},
    )
    m = MOM + GR * GR
    np.testing.assert_allclose(out["MomentOut"], m, rtol=1e-6)
    np.testing.assert_allclose(
        out["ParamOut"], proximal_ref(P - 0.1 * GR / np.sqrt(m), 0.1, l1, 0.2), rtol=1e-5, atol=1e-7
    )


# -- build-time checks as fluid's ------------------------------------------------------------------------
def test_required_attributes_are_refused_when_missing():
    p = fluid.data("p", [4, 1], "float32")
    i = fluid.data("i", [4, 1], "int32")
    with pytest.raises(ValueError, match="Attribute 'class_number' is required!"):
        op("precision_recall", {"MaxProbs": p, "Indices": i, "Labels": i},
           {"BatchMetrics": "float64", "AccumMetrics": "float64", "AccumStatesInfo": "float32"})  # fmt: skip
    with pytest.raises(ValueError, match="Attribute 'pooling_type' is required!"):
        op("spp", {"X": fluid.data("img", [1, 2, 4, 4], "float32")}, {"Out": "float32"}, {"pyramid_height": 2})


def test_nll_loss_refuses_a_3d_input_and_gives_0_when_every_label_is_ignored():
    with pytest.raises(ValueError, match="The tensor rank of Input\\(X\\) must be 2 or 4"):
        op("nll_loss", {"X": fluid.data("x3", [2, 3, 4], "float32"), "Label": fluid.data("t3", [2, 4], "int64")},
           {"Out": "float32", "Total_weight": "float32"})  # fmt: skip
    x, t = fluid.data("x", [2, 3], "float64"), fluid.data("t", [2], "int64")
    out, total = op("nll_loss", {"X": x, "Label": t}, {"Out": "float64", "Total_weight": "float64"})
    got = fluid.Executor(fluid.CPUPlace()).run(
        feed={"x": PROBS[:2], "t": np.full(2, -100, "int64")}, fetch_list=[out, total]
    )
    np.testing.assert_array_equal(got, [[0.0], [0.0]])
