"""fluid 1.8's fused inference ops (fluidcompat_ops/fusion.py) built with ``block.append_op`` as
fluid's inference passes left them, run, and compared with the numpy references of
tests/ops_fusion_cases.py (more attributes and slots than the op table's cases); their build-time
shapes and LoD levels, their outputs' LoD, and the refusals fluid made when building."""

from __future__ import annotations

import numpy as np
import pytest

import fluidcompat as fluid
from fluidcompat_ops import lookup
from tests.ops_fusion_cases import (
    attention_lstm_ref,
    context_ref,
    cvm_ref,
    gru_ref,
    lstm_ref,
    seqpool_ref,
)

RNG = np.random.RandomState(7)
LENGTHS = [2, 3, 1]
T, N = sum(LENGTHS), len(LENGTHS)


def rand(*shape):
    return RNG.uniform(-1, 1, shape).astype("float32")


def run_op(op_type, inputs, outputs, attrs=None, lods=None):
    """Append one op (inputs: slot -> [(name, array)]; outputs: slot -> [name]) and run it; returns
    (the output variables by name, the fetched LoDTensors by name)."""
    lods = lods or {}
    prog = fluid.Program()
    block = prog.global_block()
    ins, feed = {}, {}
    for slot, items in inputs.items():
        ins[slot] = []
        for name, arr in items:
            level = 1 if name in lods else 0
            ins[slot].append(block.create_var(name=name, shape=arr.shape, dtype=str(arr.dtype), lod_level=level))
            feed[name] = fluid.create_lod_tensor(arr, [lods[name]], fluid.CPUPlace()) if name in lods else arr
    outs = {slot: [block.create_var(name=n, dtype="float32") for n in names] for slot, names in outputs.items()}
    block.append_op(type=op_type, inputs=ins, outputs=outs, attrs=attrs or {})
    fetch = [v for vs in outs.values() for v in vs]
    got = fluid.Executor(fluid.CPUPlace()).run(prog, feed=feed, fetch_list=fetch, return_numpy=False)
    return {v.name: v for v in fetch}, {v.name: g for v, g in zip(fetch, got)}


def check(got, want, var=None, lod_level=None):
    got_arr = np.array(got)
    np.testing.assert_allclose(got_arr, want, rtol=1e-5, atol=1e-5)
    if var is not None:  # the build-time shape agrees with the run's, dtype as the run's
        assert len(var.shape) == got_arr.ndim and all(d < 0 or d == a for d, a in zip(var.shape, got_arr.shape))
        assert var.dtype == fluid.core.VarDesc.VarType.FP32
    if lod_level is not None:
        assert var.lod_level == lod_level


LSTM_EXTRA = {s: [s.lower()] for s in ("BatchedInput", "BatchedHidden", "BatchedCell", "ReorderedH0", "ReorderedC0")}


@pytest.mark.parametrize("reverse", [False, True])
def test_fusion_lstm_is_lstm_of_x_times_weight_x(reverse):
    d = 3
    x, wx, wh, b, h0, c0 = rand(T, 4), rand(4, 4 * d), rand(d, 4 * d), rand(1, 7 * d), rand(N, d), rand(N, d)
    outs = {"Hidden": ["h"], "Cell": ["c"], "XX": ["xx"], "CheckedCell": ["cc"], **LSTM_EXTRA}
    ins = {"X": [("x", x)], "WeightX": [("wx", wx)], "WeightH": [("wh", wh)], "Bias": [("b", b)]}
    ins.update(H0=[("h0", h0)], C0=[("c0", c0)])
    var, got = run_op("fusion_lstm", ins, outs, {"is_reverse": reverse}, {"x": LENGTHS})
    gates_in = x @ wx + b[0, : 4 * d]
    hidden, cell = lstm_ref(gates_in, wh, np.split(b[0, 4 * d :], 3), h0, c0, reverse)
    check(got["h"], hidden, var["h"], lod_level=1)
    check(got["c"], cell, var["c"], lod_level=1)
    check(got["xx"], gates_in, var["xx"], lod_level=1)
    assert got["h"].recursive_sequence_lengths() == [LENGTHS]


def test_fused_embedding_fc_lstm_reads_gate_inputs_from_the_table():
    d = 2
    ids = RNG.randint(0, 5, (T, 1)).astype("int64")
    emb, wh, b = rand(5, 4 * d), rand(d, 4 * d), rand(1, 4 * d)
    ins = {"Ids": [("ids", ids)], "Embeddings": [("emb", emb)], "WeightH": [("wh", wh)], "Bias": [("b", b)]}
    outs = {"Hidden": ["h"], "Cell": ["c"], "XX": ["xx"], **LSTM_EXTRA}
    var, got = run_op("fused_embedding_fc_lstm", ins, outs, {"use_peepholes": False}, {"ids": LENGTHS})
    hidden, cell = lstm_ref(emb[ids[:, 0]], wh)  # Bias's gate part is not added
    check(got["h"], hidden, var["h"], lod_level=1)
    check(got["c"], cell, var["c"], lod_level=1)


def test_fusion_gru_is_gru_of_x_times_weight_x():
    d = 3
    x, wx, wh, b = rand(T, 2), rand(2, 3 * d), rand(d, 3 * d), rand(1, 3 * d)
    ins = {"X": [("x", x)], "WeightX": [("wx", wx)], "WeightH": [("wh", wh)], "Bias": [("b", b)]}
    outs = {"Hidden": ["h"], "XX": ["xx"], "ReorderedH0": ["r"], "BatchedInput": ["bi"], "BatchedOut": ["bo"]}
    var, got = run_op("fusion_gru", ins, outs, {}, {"x": LENGTHS})
    xx = x @ wx + b[0]
    want = gru_ref(xx, wh)
    check(got["h"], want, var["h"], lod_level=1)
    check(got["xx"], xx, var["xx"])


def test_fusion_gru_honours_origin_mode():
    """fluid 1.8.5's fusion_gru kernel computed origin_mode=False's values whatever the attribute;
    fluidcompat's takes it as the gru op does (README, differences)."""
    d = 2
    x, wx, wh = rand(T, 2), rand(2, 3 * d), rand(d, 3 * d)
    ins = {"X": [("x", x)], "WeightX": [("wx", wx)], "WeightH": [("wh", wh)]}
    _, got = run_op("fusion_gru", ins, {"Hidden": ["h"]}, {"origin_mode": True}, {"x": LENGTHS})
    check(got["h"], gru_ref(x @ wx, wh, origin_mode=True))


def test_attention_lstm_attends_over_its_whole_sequence():
    m, d = 3, 2
    x, c0, h0 = rand(T, m), rand(N, d), rand(N, d)
    aw, ab, scalar, scalar_b = rand(m + d, 1), rand(1, 1), rand(1, 1), rand(1, 1)
    w, b = rand(d + m, 4 * d), rand(1, 4 * d)
    ins = {"X": [("x", x)], "C0": [("c0", c0)], "H0": [("h0", h0)], "AttentionWeight": [("aw", aw)]}
    ins.update(AttentionBias=[("ab", ab)], AttentionScalar=[("as", scalar)], AttentionScalarBias=[("asb", scalar_b)])
    ins.update(LSTMWeight=[("w", w)], LSTMBias=[("b", b)])
    outs = {"Hidden": ["h"], "Cell": ["c"], "AttentionedX": ["ax"]}
    outs.update(AttentionFCOut=["fc"], LSTMX=["lx"], LSTMOUT=["lo"])
    var, got = run_op("attention_lstm", ins, outs, {}, {"x": LENGTHS})
    hidden, cell = attention_lstm_ref(x, c0, h0, aw, ab, scalar, scalar_b, w, b)
    check(got["h"], hidden, var["h"], lod_level=1)
    check(got["c"], cell, var["c"], lod_level=1)
    check(got["ax"], x @ aw[:m] + ab[0, 0], var["ax"])


def test_fusion_seqexpand_concat_fc():
    x0, x1, x2, w, b = rand(T, 3), rand(N, 2), rand(N, 1), rand(6, 4), rand(4)
    ins = {"X": [("x0", x0), ("x1", x1), ("x2", x2)], "FCWeight": [("w", w)], "FCBias": [("b", b)]}
    lods = {"x0": LENGTHS, "x1": [1] * N, "x2": [1] * N}
    var, got = run_op(
        "fusion_seqexpand_concat_fc", ins, {"Out": ["o"], "FCOut": ["fo"]}, {"fc_activation": "relu"}, lods
    )
    expanded = np.concatenate([x0, np.repeat(x1, LENGTHS, 0), np.repeat(x2, LENGTHS, 0)], 1)
    check(got["o"], np.maximum(expanded @ w + b, 0), var["o"], lod_level=1)
    check(got["fo"], np.concatenate([x1, x2], 1) @ w[3:], var["fo"])
    assert got["o"].recursive_sequence_lengths() == [LENGTHS]


@pytest.mark.filterwarnings("ignore:The following exception is not an EOF exception")
def test_fusion_seqconv_eltadd_relu():
    length, start = 3, -1
    x, w, b = rand(T, 2), rand(2 * length, 4), rand(1, 4)
    ins = {"X": [("x", x)], "Filter": [("w", w)], "Bias": [("b", b)]}
    attrs = {"contextLength": length, "contextStart": start}
    var, got = run_op("fusion_seqconv_eltadd_relu", ins, {"Out": ["o"], "ColMat": ["col"]}, attrs, {"x": LENGTHS})
    col = context_ref(x, start, length)
    check(got["col"], col, var["col"], lod_level=0)
    check(got["o"], np.maximum(col @ w + b, 0), var["o"], lod_level=1)
    with pytest.raises(
        fluid.core.EnforceNotMet, match="up_pad is: 0, down_pad is: 3"
    ):  # fluid's kernel padded above only
        run_op("fusion_seqconv_eltadd_relu", ins, {"Out": ["o"]}, dict(attrs, contextStart=1), {"x": LENGTHS})


@pytest.mark.parametrize("pooltype", ["SUM", "AVERAGE", "SQRT"])
def test_fusion_seqpool_concat(pooltype):
    x0, x1 = rand(T, 3), rand(T, 3)
    ins = {"X": [("x0", x0), ("x1", x1)]}
    var, got = run_op(
        "fusion_seqpool_concat", ins, {"Out": ["o"]}, {"pooltype": pooltype}, {"x0": LENGTHS, "x1": LENGTHS}
    )
    check(got["o"], np.concatenate([seqpool_ref(x0, pooltype), seqpool_ref(x1, pooltype)], 1), var["o"], lod_level=1)
    assert var["o"].shape == (-1, 6)
    assert got["o"].lod() == [list(range(N + 1))]


def test_fusion_seqpool_cvm_concat():
    x0, x1 = RNG.rand(T, 3).astype("float32"), RNG.rand(T, 3).astype("float32")
    ins = {"X": [("x0", x0), ("x1", x1)], "CVM": [("cvm", rand(N, 2))]}
    var, got = run_op("fusion_seqpool_cvm_concat", ins, {"Out": ["o"]}, {}, {"x0": LENGTHS, "x1": LENGTHS})

    check(got["o"], np.concatenate([cvm_ref(seqpool_ref(x, "SUM")) for x in (x0, x1)], 1), var["o"], lod_level=0)
    assert got["o"].lod() == [list(range(N + 1))]  # fluid's kernel set it (and declared lod_level 0)


def test_fusion_repeated_fc_relu():
    x, ws, bs = rand(4, 3), [rand(3, 5), rand(5, 2), rand(2, 3)], [rand(5), rand(1, 2), rand(3)]
    ins = {
        "X": [("x", x)],
        "W": [(f"w{i}", w) for i, w in enumerate(ws)],
        "Bias": [(f"b{i}", b) for i, b in enumerate(bs)],
    }
    var, got = run_op("fusion_repeated_fc_relu", ins, {"ReluOut": ["r0", "r1"], "Out": ["o"]})
    y = x
    for i, (w, b) in enumerate(zip(ws, bs)):
        y = np.maximum(y @ w + b.reshape(-1), 0)
        check(got[f"r{i}" if i < 2 else "o"], y, var[f"r{i}" if i < 2 else "o"])


def test_fusion_squared_mat_sub():
    x, y = rand(3, 4), rand(4, 2)
    outs = {"SquaredX": ["sx"], "SquaredY": ["sy"], "SquaredXY": ["sxy"], "Out": ["o"]}
    var, got = run_op("fusion_squared_mat_sub", {"X": [("x", x)], "Y": [("y", y)]}, outs, {"scalar": 0.5})
    check(got["o"], 0.5 * ((x @ y) ** 2 - (x * x) @ (y * y)), var["o"])
    check(got["sxy"], (x @ y) ** 2, var["sxy"])
    check(got["sy"], y * y, var["sy"])


@pytest.mark.parametrize("padding", [False, True])
def test_fc(padding):
    x, w, b = rand(2, 3, 4), rand(4 + 4 * padding, 5 + 4 * padding), rand(1, 5)
    attrs = {"in_num_col_dims": 2, "activation_type": "relu", "padding_weights": padding}
    ins = {"Input": [("x", x)], "W": [("w", w)], "Bias": [("b", b)]}
    var, got = run_op("fc", ins, {"Out": ["o"]}, attrs)
    check(got["o"], np.maximum(x @ w[:4, :5] + b[0], 0), var["o"])
    assert var["o"].shape == (2, 3, 5)


@pytest.mark.parametrize(
    "op_type, inputs, attrs, message",
    [
        ("fc", {"Input": [[2, 4]], "W": [[4, 3]]}, {"activation_type": "tanh"}, "activation_type 'tanh'"),
        ("fc", {"Input": [[2, 4]], "W": [[5, 3]]}, {}, "second dimension"),
        ("fusion_seqpool_concat", {"X": [[-1, 3]]}, {"axis": 0}, "only concat axis=1"),
        ("fusion_seqpool_concat", {"X": [[-1, 3]]}, {"pooltype": "MAX"}, "pooltype 'MAX'"),
        ("fusion_seqpool_cvm_concat", {"X": [[-1, 3]], "CVM": [[-1, 2]]}, {"use_cvm": False}, "use_cvm=True"),
        ("fusion_repeated_fc_relu", {"X": [[2, 4]], "W": [[4, 3]], "Bias": [[3]]}, {}, "more than 1"),
        (
            "fusion_seqconv_eltadd_relu",
            {"X": [[-1, 2]], "Filter": [[6, 4]], "Bias": [[1, 4]]},
            {"contextLength": 3, "contextStride": 2},
            "contextStride=1",
        ),  # fmt: skip
        ("fusion_lstm", {"X": [[-1, 2]], "WeightX": [[2, 8]], "WeightH": [[2, 8]], "Bias": [[1, 8]]}, {}, "7 \\* 2"),
    ],
)
def test_build_refusals(op_type, inputs, attrs, message):
    block = fluid.Program().global_block()
    ins = {
        s: [block.create_var(name=f"{s}{i}", shape=sh, dtype="float32") for i, sh in enumerate(v)]
        for s, v in inputs.items()
    }
    with pytest.raises(ValueError, match=message):
        block.append_op(
            type=op_type,
            inputs=ins,
            outputs={lookup(op_type).outputs[0]: [block.create_var(name="o", dtype="float32")]},
            attrs=attrs,
        )


FUSED = ("fc", "fusion_lstm", "fusion_gru", "fused_embedding_fc_lstm", "attention_lstm")
FUSED += ("fusion_seqexpand_concat_fc", "fusion_seqconv_eltadd_relu", "fusion_seqpool_concat")
FUSED += ("fusion_seqpool_cvm_concat", "fusion_repeated_fc_relu", "fusion_squared_mat_sub")


def test_no_fused_op_has_a_gradient():
    """fluid 1.8 registered empty grad makers for all of them (CPU inference ops)."""
    for t in FUSED:
        assert lookup(t).grad is None
