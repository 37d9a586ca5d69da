"""Scripts run under real fluid 1.8.5 (recorded in tests/golden/*.json) and under fluidcompat agree.

Record again with: ../shared/tools/fluid18 tests/golden/NAME.py > tests/golden/NAME.json
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
GOLDEN = os.path.join(HERE, "golden")


def run_lines(script: str, **env: str) -> list:
    """The lines a golden script prints under fluidcompat (``env``: more environment variables)."""
    proc = subprocess.run(
        [sys.executable, "-m", "fluidcompat", "run", "--device", "cpu", os.path.join(GOLDEN, script)],
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ, **env),
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip().splitlines()


def run_fluidcompat(script: str) -> dict:
    return json.loads("\n".join(run_lines(script)))


def load(name: str) -> dict:
    with open(os.path.join(GOLDEN, name)) as f:
        return json.load(f)


def same_dims(a, b) -> bool:
    # fluid 1.8 multiplies unknown dims (-1 * 3 = -3 for flatten); every negative dim means unknown
    return len(a) == len(b) and all((x < 0 and y < 0) or x == y for x, y in zip(a, b))


def test_forward_ops_match_fluid():
    want, got = load("ops_forward.json"), run_fluidcompat("ops_forward.py")
    assert sorted(want) == sorted(got)
    assert len(want) >= 30
    for key, w in want.items():
        g = got[key]
        assert g["name"] == w["name"], key
        assert same_dims(g["build_shape"], w["build_shape"]), (key, g["build_shape"], w["build_shape"])
        assert (g["build_dtype"], g["shape"], g["dtype"]) == (w["build_dtype"], w["shape"], w["dtype"]), key
        if w["values"] is not None:
            np.testing.assert_allclose(g["values"], w["values"], rtol=1e-5, atol=1e-5, err_msg=key)


@pytest.mark.parametrize("script,count", [("ops_extra", 9), ("ops_extra2", 8)])
def test_more_ops_match_fluid(script, count):
    """add_position_encoding, mean_iou, warpctc, edit_distance; im2sequence, ctc_greedy_decoder, auc and
    inplace_abn: dtypes and values of fluid 1.8.5."""
    got, want = run_fluidcompat(script + ".py"), load(script + ".json")
    assert len(got) == len(want) == count
    for (gd, gv), (wd, wv) in zip(got, want):
        assert gd == wd
        np.testing.assert_allclose(gv, wv, atol=2e-5)


def test_roi_chunk_center_cvm_ops_match_fluid():
    """similarity_focus, cvm, center_loss, chunk_eval, roi_pool, roi_align (values, dtypes, LoD), and
    the gradients fluid 1.8.5 gave for cvm and center_loss with its centers update over two runs."""
    got, want = run_fluidcompat("ops_extra3.py"), load("ops_extra3.json")
    assert sorted(got) == sorted(want)
    for key, (wd, wv, wlod) in want.items():
        gd, gv, glod = got[key]
        assert (gd, glod) == (wd, wlod), key
        np.testing.assert_allclose(gv, wv, atol=2e-5, err_msg=key)
    got, want = run_fluidcompat("ops_extra4.py"), load("ops_extra4.json")
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, atol=2e-5)


@pytest.mark.parametrize(
    "script,first", [("hsigmoid", "['hierarchical_sigmoid'] (5, 3) (5, 1)"), ("hsigmoid_custom", "(4, 3) (4, 1)")]
)
def test_hsigmoid_matches_fluid(script, first):
    lines = run_lines(script + ".py")
    # fluid printed its sparse-mode line for every hsigmoid built
    assert lines[0] == "With sparse mode, if your models has only small parameter prefetch may cause speed down"
    assert lines[1] == first
    for g, w in zip(json.loads(lines[-1]), load(script + ".json")):
        np.testing.assert_allclose(g, w, atol=2e-5)


def test_data_norm_matches_fluid():
    """data_norm's output, x's gradient, the statistics' gradients (with epsilon per row) and their SGD
    updates over two runs, as fluid 1.8.5 computed them."""
    lines = run_lines("data_norm.py")
    assert lines[2].endswith("'data_norm_grad', 'sgd', 'sgd', 'sgd']")
    for g, w in zip(json.loads(lines[-1]), load("data_norm.json")):
        np.testing.assert_allclose(g, w, atol=2e-5, rtol=1e-6)


def test_sampled_softmax_matches_fluid():
    got, want = run_fluidcompat("sampled_softmax.py"), load("sampled_softmax.json")
    for (gd, gv), (wd, wv) in zip(got, want):
        assert gd == wd
        np.testing.assert_allclose(gv, wv, atol=2e-5)


def test_crf_matches_fluid():
    got, want = run_fluidcompat("crf.py"), load("crf.json")
    for (gd, gv), (wd, wv) in zip(got, want):
        assert gd == wd
        np.testing.assert_allclose(gv, wv, atol=2e-5)


def test_prroi_pool_matches_fluid():
    for g, w in zip(run_fluidcompat("prroi_pool.py"), load("prroi_pool.json")):
        np.testing.assert_allclose(g, w, atol=2e-5)


def test_nce_matches_fluid():
    lines = run_lines("nce.py")
    assert lines[-2] == "['nce', 'scale']"
    for g, w in zip(json.loads(lines[-1]), load("nce.json")):
        np.testing.assert_allclose(g, w, atol=2e-5)


def test_adaptive_pool_with_index_matches_fluid():
    for (gd, gv), (wd, wv) in zip(run_fluidcompat("adaptive_pool_index.py"), load("adaptive_pool_index.json")):
        assert gd == wd
        np.testing.assert_allclose(gv, wv, atol=2e-5)


def test_data_norm_modes_match_fluid():
    got, want = run_fluidcompat("data_norm_modes.py"), load("data_norm_modes.json")
    assert len(got) == len(want) == 3
    for g, w in zip(got, want):
        assert g[0] == w[0]  # the gradient variables each pass returns
        for gv, wv in zip(g[1:], w[1:]):
            np.testing.assert_allclose(gv, wv, atol=2e-5)


def test_hash_op_matches_fluid():
    assert run_fluidcompat("hash_op.py") == load("hash_op.json")


def test_crop_program_matches_fluid():
    assert run_fluidcompat("crop_program.py") == load("crop_program.json")


@pytest.mark.usefixtures("one_large_table_at_a_time")
def test_embedding_forward_matches_fluid():
    """The docs' 10,000,000 x 150 table under device_guard('cpu'), l2_normalize, square_error_cost, mean."""
    got = run_fluidcompat("embedding_forward.py")
    assert got == load("embedding_forward.json")
    assert all(got[k] for k in ("emb_within_xavier_bound", "out_unit_norm", "cost_is_square_error", "mean_is_mean"))


# Where fluidcompat deliberately words an error differently, and why.
DELIBERATE = {
    # fluid passed an unformatted tuple as the message
    "pool_type": ["ValueError", "Unknown Attr(pool_type): 'min'. It can only be 'max' or 'avg'."],
    # the class lives in fluidcompat.framework
    "program_guard_str": [
        "TypeError",
        "The type of 'main_program' in fluid.program_guard must be <class 'fluidcompat.framework.Program'>, "
        "but received <class 'str'>.",
    ],
}


@pytest.fixture(scope="module")
def error_texts():
    return load("error_texts.json"), run_fluidcompat("error_texts.py")


def test_error_texts_match_fluid(error_texts):
    want, got = error_texts
    for key, w in want.items():
        assert got[key] == DELIBERATE.get(key, w), key


TRAINING = [
    ("train_fit_a_line.py", [], "train_fit_a_line.json"),
    ("train_mlp_adam.py", [], "train_mlp_adam.json"),
    ("train_cnn_momentum.py", [], "train_cnn_momentum.json"),
    ("train_regularized.py", [], "train_regularized.json"),
    ("train_embedding_sgd.py", [], "train_embedding_sgd.json"),
    ("train_embedding_sgd.py", ["sparse"], "train_embedding_sgd_sparse.json"),
]


@pytest.mark.parametrize("script,args,golden", TRAINING, ids=[f"{s}{''.join(a)}" for s, a, _ in TRAINING])
def test_training_matches_fluid(script, args, golden):
    """20 steps from the same weights and data: losses within 1e-4 relative, same op lists."""
    proc = subprocess.run(
        [sys.executable, "-m", "fluidcompat", "run", "--device", "cpu", os.path.join(GOLDEN, script), *args],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    got, want = json.loads(proc.stdout), load(golden)
    assert got["ops"] == want["ops"]
    assert got["startup_ops"] == want["startup_ops"]
    assert got["persistables"] == want["persistables"]
    np.testing.assert_allclose(got["losses"], want["losses"], rtol=1e-4)
    for g, w in zip(got["extras"], want["extras"]):
        for a, b in zip(g, w):
            np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)


def test_sparse_clips_adam_and_lamb_update_as_fluid():
    """Three steps each: a sparse embedding gradient under the three gradient clips and Adam (lazy or
    not), dense Adam, and Lamb, against fluid 1.8.5's losses and parameters."""
    got, want = run_fluidcompat("sparse_updates.py"), load("sparse_updates.json")
    assert sorted(got) == sorted(want) and len(want) == 8
    for case, w in want.items():
        for key in ("losses", "emb", "fc_w"):
            np.testing.assert_allclose(got[case][key], w[key], rtol=1e-5, atol=3e-6, err_msg=f"{case} {key}")


def test_optimizer_updates_and_schedules_match_fluid():
    """Four steps of Adamax, Adagrad, DecayedAdagrad, Adadelta, RMSProp (centered or not), Ftrl, Lars,
    L1-regularized Momentum, Adam with a beta1 variable and six learning-rate schedules."""
    got, want = run_fluidcompat("optimizer_steps.py"), load("optimizer_steps.json")
    assert sorted(got) == sorted(want) and len(want) == 18
    for case, (losses, w) in want.items():
        np.testing.assert_allclose(got[case][0], losses, rtol=1e-5, atol=2e-6, err_msg=case)
        np.testing.assert_allclose(got[case][1], w, rtol=1e-5, atol=2e-6, err_msg=case)


def test_moving_averages_match_fluid():
    """ExponentialMovingAverage (constant decay, int64 and float32 thres_steps, apply before any update),
    ModelAverage and Lookahead: losses, weights and the weights under apply equal fluid 1.8.5's."""
    got, want = run_fluidcompat("averaging.py"), load("averaging.json")
    assert sorted(got) == sorted(want) and len(want) == 5
    for case, w in want.items():
        assert len(got[case]) == len(w), case
        for i, (g, v) in enumerate(zip(got[case], w)):
            np.testing.assert_allclose(g, v, rtol=1e-5, atol=1e-6, err_msg=f"{case} [{i}]")


def test_auc_counters_match_fluid():
    """auc over four batches: both AUC values and all four counters in fluid 1.8.5's layout (so its
    checkpoints load), then its refusal of a prediction above 1 (ours names the value and variable)."""
    got, want = run_fluidcompat("auc_window.py"), load("auc_window.json")
    assert len(got) == len(want) == 5
    for g, w in zip(got[:4], want[:4]):
        np.testing.assert_allclose(g[0] + g[1], w[0] + w[1], rtol=1e-12)
        assert g[2:] == w[2:]
    assert got[4][0].startswith(want[4][0]) and "1.5 in 'p'" in got[4][0]


@pytest.mark.parametrize("script,count", [("layers_spatial", 32), ("layers_3d", 13)])
def test_spatial_layers_with_less_common_arguments_match_fluid(script, count):
    """2-D: conv SAME with dilation (fluid runs it undilated), resize_bilinear align_mode 1, prelu's
    parameter shapes, space_to_depth's element order, ...; 3-D: conv3d/pool3d padding forms, pool3d
    ceil_mode (fluid's window rule, its lowest-float value for empty windows), trilinear align modes.
    Outputs and input gradients."""
    got, want = run_fluidcompat(script + ".py"), load(script + ".json")
    assert sorted(got) == sorted(want) and len(want) == count
    for case, w in want.items():
        g = got[case]
        assert g[0] == w[0], case
        assert len(g) == len(w), case
        for (gs, gsum, gw, gv), (ws, wsum, ww, wv) in zip(g[1:], w[1:]):
            assert gs == ws, case
            np.testing.assert_allclose([gsum, gw], [wsum, ww], rtol=1e-4, atol=1e-4, err_msg=case)
            np.testing.assert_allclose(gv, wv, atol=2e-5, err_msg=case)


def test_math_activation_and_loss_layers_match_fluid():
    """53 layers with their less common arguments: outputs and gradients (which inputs get none too:
    kldiv_loss's Target and label_smooth's label get none, as in fluid 1.8.5)."""
    got, want = run_fluidcompat("layers_math.py"), load("layers_math.json")
    assert sorted(got) == sorted(want) and len(want) == 53
    for case, w in want.items():
        g = got[case]
        if isinstance(w, str):  # both refuse the call the same way (layers.where takes the condition only)
            assert g == w, case
            continue
        assert len(g) == len(w) and g[-1] == w[-1], (case, g, w)
        for (gs, *gv), (ws, *wv) in zip(g[:-1], w[:-1]):
            assert gs == ws, case
            np.testing.assert_allclose(gv, wv, rtol=1e-4, atol=1e-4, err_msg=case)


def test_lod_checks_match_fluid():
    """Setting sequence lengths or offsets: the same accepted and refused (the LoD kept) as fluid 1.8.5."""
    with open(os.path.join(GOLDEN, "lod_checks.txt")) as f:
        assert run_lines("lod_checks.py") == f.read().strip().splitlines()


def test_rnn_with_lstm_and_gru_cells_matches_fluid():
    """layers.rnn over LSTMCell and GRUCell (reversed, with sequence lengths, with initial states):
    parameter names and shapes, outputs, final states, and gradients for the input and parameters."""
    got, want = run_fluidcompat("rnn_cells.py"), load("rnn_cells.json")
    assert sorted(got) == sorted(want) and len(want) == 6
    for case, w in want.items():
        g = got[case]
        assert g["params"] == w["params"] and g["shapes"] == w["shapes"], case
        assert len(g["values"]) == len(w["values"]), case
        for (gs, *gv), (ws, *wv) in zip(g["values"], w["values"]):
            assert gs == ws, case
            np.testing.assert_allclose(gv, wv, rtol=1e-4, atol=1e-4, err_msg=case)


def test_lstm_unit_and_gru_unit_match_fluid():
    """Parameters, op types and attributes line for line; outputs and every gradient (gru_unit's Gate and
    ResetHiddenPrev send none back, as in fluid) to 2e-5."""
    with open(os.path.join(GOLDEN, "rnn_units.txt")) as f:
        want = f.read().strip().splitlines()
    got = run_lines("rnn_units.py")
    assert got[:5] == want[:5]
    values_got, values_want = json.loads(got[5]), json.loads(want[5])
    assert len(values_got) == len(values_want) == 16
    for g, w in zip(values_got, values_want):
        np.testing.assert_allclose(g, w, atol=2e-5)


def _attr_types(data: bytes) -> dict:
    """{(block, op type, outputs): {attribute: type}} of a serialized ProgramDesc."""
    from fluidcompat import proto

    found = {}
    for block in proto._parse(data).get(1, []):
        b = proto._parse(block)
        for op in b.get(4, []):
            o = proto._parse(op)
            outs = tuple(sorted(n.decode() for slot in o.get(2, []) for n in proto._parse(slot).get(2, [])))
            attrs = {proto._parse(a)[1][0].decode(): proto._parse(a)[2][0] for a in o.get(4, [])}
            found[(b[1][0], o[3][0].decode(), outs)] = attrs
    return found


def test_program_desc_reads_fluids_bytes_and_writes_its_attribute_types(tmp_path):
    """A program serialized by fluid 1.8.5 (while, cond, assign_value of every dtype, lookup tables, a
    Momentum step) runs here to fluid's values; the programs fluidcompat builds and writes carry every
    attribute with the type fluid wrote (fluid reads an attribute only as its declared type: an empty
    list written as ints stopped fluid loading a while op), for the training program too."""
    for mode in ("", "read"):
        assert json.loads("\n".join(run_lines("program_desc.py", PROGRAM_DESC=mode))) == load("program_desc.json"), mode
    run_lines("program_desc.py", PROGRAM_DESC=f"write:{tmp_path}")
    for name in ("program_desc.bin", "program_desc_train.bin"):
        with open(os.path.join(GOLDEN, name), "rb") as f:
            want = _attr_types(f.read())
        got = _attr_types((tmp_path / name).read_bytes())
        shared = [key for key in want if key in got]
        assert len(shared) >= (30 if name == "program_desc.bin" else 55), (name, len(shared))
        for key in shared:
            for attr in set(want[key]) & set(got[key]):
                assert got[key][attr] == want[key][attr], (name, key, attr)


def test_serialized_attribute_types_match_fluid(tmp_path):
    """About 90 layers in one program: every (op, attribute) fluidcompat writes has the type fluid 1.8.5
    wrote for it (recorded in attr_types.json), e.g. fill_constant's shape as int64s, assign_value's
    bool_values as ints, lookup_table's padding_idx as an int64."""
    out = tmp_path / "attr_types.bin"
    run_lines("attr_types.py", OUT=str(out))
    want = load("attr_types.json")
    written = _attr_types(out.read_bytes())
    got = {f"{op}.{attr}": ty for (_, op, _), attrs in written.items() for attr, ty in attrs.items()}
    shared = sorted(set(want) & set(got))
    assert len(shared) >= 700, len(shared)
    assert [k for k in shared if got[k] != want[k]] == []


def _same_fetches(got, want, case):
    """[[lod, shape, values...]] fetches: the same LoDs and shapes, values to 1e-5."""
    assert len(got) == len(want), case
    for (g_lod, g_shape, *g), (w_lod, w_shape, *w) in zip(got, want):
        assert (g_lod, g_shape) == (w_lod, w_shape), case
        np.testing.assert_allclose(np.ravel(g), np.ravel(w), rtol=1e-4, atol=1e-5, err_msg=case)


def _same_cases(stem: str, count: int) -> None:
    """The golden script ``stem``.py under fluidcompat against ``stem``.json: the same ``count`` cases,
    each a list of fetches as _same_fetches compares them."""
    got, want = run_fluidcompat(f"{stem}.py"), load(f"{stem}.json")
    assert sorted(got) == sorted(want) and len(want) == count
    for case, w in want.items():
        _same_fetches(got[case], w, case)


def test_sequence_ops_match_fluid():
    """Every LoD sequence op (pool types, softmax, conv, reverse, pad/unpad, reshape, concat, enumerate,
    slice, expand/expand_as, scatter, sequence_conv_pool, lod_reset, lod_append) with an empty sequence
    and a 2-level LoD:
    outputs' LoD, shape and values and the input's gradient as fluid 1.8.5; where fluid refused the
    input, the same refusal in its words."""
    got, want = run_fluidcompat("sequence_ops.py"), load("sequence_ops.json")
    assert sorted(got) == sorted(want) and len(want) == 47
    for case, w in want.items():
        g = got[case]
        if isinstance(w, str):
            assert isinstance(g, str), (case, g)
            assert w.split("Error: ", 1)[1].rstrip(".") in g, (case, g, w)
            continue
        _same_fetches(g, [[lod, shape, values] for lod, shape, values in w], case)


def test_dynamic_lstm_and_gru_match_fluid():
    """dynamic_lstm (peepholes or not, reversed, other activations, initial states) and dynamic_gru
    (both origin modes, reversed, initial state): parameter names and shapes, hidden and cell values
    with their LoD, and the gradients of the input, the initial state and every parameter."""
    got, want = run_fluidcompat("sequence_rnn.py"), load("sequence_rnn.json")
    assert sorted(got) == sorted(want) and len(want) == 11
    for case, w in want.items():
        assert got[case]["params"] == w["params"], case
        _same_fetches(got[case]["values"], w["values"], case)


def test_lod_is_shared_as_fluid_shared_it():
    """Which ordinary ops' outputs (and the input's gradients) keep a LoD, DataFeeder's LoDTensors for
    lod_level 1 and 2, an embedding and pooling over them, and the error fetching a LoD as numpy."""
    assert run_fluidcompat("lod_sharing.py") == load("lod_sharing.json")


def test_data_loader_batches_carry_lod_as_fluid():
    """DataLoader.from_generator over sequence fields (sample, sample-list and batch generators;
    iterable and with a read op): the same pooled values and LoDs as fluid 1.8.5."""
    with open(os.path.join(GOLDEN, "lod_loader.txt")) as f:
        assert run_lines("lod_loader.py") == f.read().strip().splitlines()


def test_stacked_lstm_sentiment_classifier_trains_as_fluid():
    """The fluid book's stacked-LSTM sentiment net over variable-length sequences (sparse embedding,
    three dynamic_lstm layers, max pooling, Adagrad), from the same initial parameters: the loss and
    accuracy of 8 steps and the cloned test program's predictions as fluid 1.8.5's."""
    got, want = run_fluidcompat("sentiment_lstm.py"), load("sentiment_lstm.json")
    np.testing.assert_allclose(got["train"], want["train"], rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(got["test"], want["test"], rtol=1e-4, atol=1e-6)


def test_crf_and_chunk_eval_over_lod_sequences_match_fluid():
    """linear_chain_crf, crf_decoding (with and without the label) and chunk_eval on LoD sequences:
    costs, the emission and transition gradients, the paths with their LoD and the chunk counts."""
    got, want = run_fluidcompat("crf_lod.py"), load("crf_lod.json")
    assert sorted(got) == sorted(want)
    for key, (lod, values) in want.items():
        assert got[key][0] == lod, key
        np.testing.assert_allclose(got[key][1], values, rtol=1e-4, atol=1e-5, err_msg=key)


def test_dynamic_lstmp_matches_fluid():
    """dynamic_lstmp (peepholes or not, reversed, clipped, initial states, other activations):
    parameter and variable names, projection and cell with their LoD, and every gradient."""
    got, want = run_fluidcompat("sequence_lstmp.py"), load("sequence_lstmp.json")
    assert sorted(got) == sorted(want) and len(want) == 5
    for case, w in want.items():
        assert got[case]["params"] == w["params"] and got[case]["vars"] == w["vars"], case
        _same_fetches(got[case]["values"], w["values"], case)


def test_print_shows_the_lod_as_fluid():
    """layers.Print of a tensor with a 2-level LoD: the same lines as fluid 1.8.5 (after the timestamp)."""
    with open(os.path.join(GOLDEN, "lod_print.txt")) as f:
        assert run_lines("lod_print.py")[-5:] == f.read().strip("\n").splitlines()


def test_dynamic_rnn_matches_fluid():
    """DynamicRNN (step_input, a memory from a shape, one from an initial tensor in length order or
    reordered, update_memory, two outputs): outputs with their LoD and the gradients of the input,
    the initial state and every fc parameter, as fluid 1.8.5's."""
    _same_cases("dynamic_rnn", 3)


def test_dynamic_rnn_attention_decoder_matches_fluid():
    """An attention decoder inside a DynamicRNN (static_input, need_reorder memory, sequence_expand,
    sequence_softmax, sequence_pool per step): outputs, their LoD and the source gradient."""
    got, want = run_fluidcompat("dynamic_rnn_attention.py"), load("dynamic_rnn_attention.json")
    assert [g[0] for g in got] == [w[0] for w in want]
    for (_, g), (_, w) in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=2e-5)


def _decode_fetches(got, want, case):
    assert got[0] == want[0], case  # the parameters' names
    assert len(got) == len(want), case
    for (g_name, g_dtype, g_shape, *g), (w_name, w_dtype, w_shape, *w) in zip(got[1:], want[1:]):
        assert (g_name, g_dtype, g_shape) == (w_name, w_dtype, w_shape), case
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5, err_msg=f"{case} {g_name}")


@pytest.fixture(scope="module")
def dynamic_decode():
    """dynamic_decode.py's fetches (it trains two SGD steps) and fluid 1.8.5's, for the two tests below."""
    return run_fluidcompat("dynamic_decode.py"), load("dynamic_decode.json")


def test_dynamic_decode_matches_fluid(dynamic_decode):
    """BeamSearchDecoder (GRU and LSTM cells, embedding_fn, output_fn, return_length) and BasicDecoder
    with TrainingHelper (two SGD steps through the loop, impute_finished, time-major) and
    GreedyEmbeddingHelper (max_step_num): every fetch as fluid 1.8.5's. The two cases where fluid's
    loop lost track of reordered beams are checked in the next test."""
    got, want = dynamic_decode
    assert sorted(got) == sorted(want) and len(want) == 8
    for case in want:
        if case.startswith("beam_gru_b2_m8"):
            continue
        _decode_fetches(got[case], want[case], case)


def test_dynamic_decode_follows_reordered_beams_where_fluid_did_not(dynamic_decode):
    """Deliberate difference: fluid 1.8.5 OR-ed a step's finished flags into the previous step's by
    position, so a live beam moved into a finished beam's slot counted as finished: its loop stopped
    after 8 steps (max_step_num 8 allows 9) with a beam running, and with is_test=True the flag cut
    that beam short. fluidcompat gives numpy's beam search in both modes; up to where fluid lost
    track, its ids are fluid's."""
    from tests.numpy_ref import beam_search, sigmoid

    got, want = dynamic_decode
    params = got["beam_gru_b2_m8_train"][0][1:]
    shapes = {"b_0": [12], "b_1": [6], "w_0": [11, 12], "w_1": [11, 6], "out_w": [6, 10], "trg_emb": [10, 5]}
    p = {}
    for i, name in enumerate(params):  # the golden script's draws, by sorted parameter name
        key = name.rsplit(".", 1)[-1]
        p[key] = (np.random.RandomState(100 + i).uniform(-1, 1, shapes[key]) * 1.5).astype("float32")
    enc = np.random.RandomState(7).uniform(-1, 1, (3, 6)).astype("float32")

    class GruStep:
        h = np.repeat(enc, 2, axis=0)

        def __call__(self, ids):
            x = p["trg_emb"][ids]
            g = sigmoid(np.concatenate([x, self.h], 1) @ p["w_0"] + p["b_0"])
            r, u = g[:, :6], g[:, 6:]
            c = np.tanh(np.concatenate([x, r * self.h], 1) @ p["w_1"] + p["b_1"])
            self.h = u * self.h + (1 - u) * c
            logits = self.h @ p["out_w"]
            shifted = logits - logits.max(1, keepdims=True)
            return shifted - np.log(np.exp(shifted).sum(1, keepdims=True))

        def reorder(self, parent):
            rows = (np.arange(parent.shape[0])[:, None] * 2 + parent).reshape(-1)
            self.h = self.h[rows]

    ids, log_probs, finished, lengths = beam_search(GruStep(), np.zeros(6, "int64"), 2, 10, 1, 8)
    assert ids.shape[0] == 9 and not finished.all()  # max_step_num + 1 steps, a beam still running
    for case in ("beam_gru_b2_m8_train", "beam_gru_b2_m8_test"):
        rows = {r[0]: (r[2], np.array(r[3:])) for r in got[case][1:]}
        assert rows["ids#0"][0] == [9, 3, 2]
        np.testing.assert_array_equal(rows["ids#0"][1].reshape(9, 3, 2), ids)
        np.testing.assert_allclose(rows["log_probs#0"][1].reshape(3, 2), log_probs, rtol=1e-5)
        np.testing.assert_array_equal(rows["finished#0"][1].reshape(3, 2), finished)
        np.testing.assert_array_equal(rows["lengths#0"][1].reshape(3, 2), lengths)
        np.testing.assert_array_equal(rows["sequence_lengths#0"][1].reshape(3, 2), lengths)
    fluid_train = np.array(want["beam_gru_b2_m8_train"][1][3:]).reshape(8, 3, 2)
    np.testing.assert_array_equal(fluid_train, ids[:8])  # fluid stopped one step early
    fluid_test = np.array(want["beam_gru_b2_m8_test"][1][3:]).reshape(8, 3, 2)
    assert (fluid_test[:4] == ids[:4]).all() and (fluid_test[4:, 0, 1] == 1).all() and (ids[4:, 0, 1] == 0).all()


def test_ctc_family_on_lod_sequences_matches_fluid():
    """ctc_greedy_decoder, edit_distance (with ignored_tokens) and warpctc (with the logits' gradient)
    on LoD sequences: LoDs, shapes, dtypes and values as fluid 1.8.5, including its all-empty decoding
    ([-1] under an all-empty LoD), a zero loss for a label too long for its logits, and its message for
    an empty reference."""
    got, want = run_fluidcompat("ctc_lod.py"), load("ctc_lod.json")
    assert sorted(got) == sorted(want) and len(want) == 11
    for case, w in want.items():
        g = got[case]
        if w[0] == "error":
            message = w[2].split("Error: ", 1)[1].split(" at (")[0]
            assert g[0] == "error" and message in g[2], (case, g)
            continue
        assert len(g) == len(w), case
        for (g_lod, g_shape, g_dtype, *gv), (w_lod, w_shape, w_dtype, *wv) in zip(g, w):
            assert (g_lod, g_shape, g_dtype) == (w_lod, w_shape, w_dtype), case
            np.testing.assert_allclose(gv, wv, rtol=1e-4, atol=1e-5, err_msg=case)


def test_warpctc_with_blank_in_labels_matches_fluid():
    """warpctc over labels holding the blank class itself (the docs' example draws them so): costs
    and gradients as fluid 1.8.5's warp-ctc gave them, padded (norm_by_times too) and LoD, including
    a label no path finishes in time (cost inf, gradient softmax) and one too long for its logits
    (cost 0). torch's CTC skips into such a label where warp-ctc did not."""
    got, want = run_fluidcompat("ctc_blank_labels.py"), load("ctc_blank_labels.json")
    assert sorted(got) == sorted(want) == ["blank2", "docs", "lod", "mixed", "tight", "tight4"]
    for case, w in want.items():
        np.testing.assert_allclose(got[case]["cost"], w["cost"], rtol=1e-5, atol=1e-5, err_msg=case)
        np.testing.assert_allclose(got[case]["grad"], w["grad"], rtol=1e-4, atol=1e-5, err_msg=case)
    assert np.isinf(want["tight"]["cost"][0]) and want["tight"]["cost"][3] == 0.0


def test_row_conv_on_lod_sequences_matches_fluid():
    """row_conv over LoD sequences (a sequence shorter than the lookahead, relu): output and LoD, and
    the gradients of the input (no LoD, as fluid's) and the filter."""
    _same_cases("row_conv_lod", 3)


def test_im2sequence_gives_each_image_a_sequence_as_fluid():
    """im2sequence: each image's patches one LoD sequence; with input_image_size and out_stride the
    patch counts of the images' real sizes, taken as fluid 1.8.5 took them."""
    _same_cases("im2sequence_lod", 4)


def test_lod_beam_search_decoders_match_fluid():
    """fluid 1.x's While-loop beam search over 2-level LoD arrays (beam_search, is_empty, then
    beam_search_decode): the sentences, their scores, LoD and the steps run, with sources pruned
    early and with probabilities (is_accumulated=False); the two ops alone with finished branches,
    ids None, parent_idx, ties and pruning."""
    _same_cases("beam_search_lod", 8)


def test_deformable_conv_matches_fluid():
    """deformable_conv (with a mask) and deformable_conv_v1: outputs and the gradients of the input,
    offsets, mask, filter and bias, with groups, deformable_groups, stride, dilation and padding."""
    got, want = run_fluidcompat("deformable_conv.py"), load("deformable_conv.json")
    assert sorted(got) == sorted(want) and len(want) == 3
    for case, w in want.items():
        assert [g[0] for g in got[case]] == [x[0] for x in w], case
        for g, x in zip(got[case], w):
            np.testing.assert_allclose(g[1:], x[1:], rtol=1e-4, atol=1e-5, err_msg=case)


def test_rfcn_pooling_matches_fluid():
    """psroi_pool and deformable_roi_pooling (position-sensitive with groups, with parts and two
    classes of offsets, no_trans) over rois in two images: outputs and the input's and offsets'
    gradients (the position-sensitive case's output only: fluid 1.8.5's gradients there were wrong)."""
    got, want = run_fluidcompat("rfcn_pooling.py"), load("rfcn_pooling.json")
    assert sorted(got) == sorted(want) and len(want) == 5
    for case, w in want.items():
        assert [g[0] for g in got[case]] == [x[0] for x in w], case
        for g, x in zip(got[case], w):
            np.testing.assert_allclose(g[1:], x[1:], rtol=1e-4, atol=1e-5, err_msg=case)


def test_detection_layers_match_fluid():
    """fluid.layers.detection: priors, anchors, box coding, clipping, IoU, YOLOv3 boxes, focal loss
    and its gradient, NMS (including fluid's one-row [-1] when nothing is detected), SSD's
    detection_output, bipartite matching and target assignment: values, shapes and LoDs."""
    _same_cases("detection_layers", 25)


def test_ssd_layers_match_fluid():
    """SSD as fluid 1.8 scripts wrote it: multi_box_head over two and three maps, ssd_loss (matching,
    hard negative mining, both losses; normalized or not) with the head's weight gradients, and
    detection_output; mine_hard_examples alone in both mining modes."""
    _same_cases("ssd_layers", 4)


def test_yolov3_loss_matches_fluid():
    """yolov3_loss: loss, objectness mask, match mask and the head's gradient, with label smoothing,
    gt scores, scale_x_y, an empty box and boxes of other heads' anchors. Where two boxes share a
    cell and anchor (image 0, cell (1, 1) when both go to one of this head's anchors) fluid 1.8.5's
    gradient kept the last box alone although its loss counts both; that cell is left out here and
    checked by finite differences in tests/test_grads.py (yolov3_loss)."""
    got, want = run_fluidcompat("yolov3_loss.py"), load("yolov3_loss.json")
    assert sorted(got) == sorted(want) and len(want) == 3
    for case, w in want.items():
        assert [g[0] for g in got[case]] == [x[0] for x in w], case
        for g, x in zip(got[case][:3], w[:3]):
            np.testing.assert_allclose(g[1:], x[1:], rtol=1e-4, atol=1e-4, err_msg=case)
        shape = w[3][0]
        g_grad, w_grad = np.reshape(got[case][3][1:], shape), np.reshape(w[3][1:], shape)
        match = np.reshape(w[2][1:], w[2][0])
        if match[0, 0] >= 0 and match[0, 0] == match[0, 2]:  # both boxes in cell (1, 1) on one anchor
            start = int(match[0, 0]) * 8  # 5 + class_num channels per anchor
            g_grad[0, start : start + 8, 1, 1] = w_grad[0, start : start + 8, 1, 1] = 0
        np.testing.assert_allclose(g_grad, w_grad, rtol=1e-4, atol=1e-4, err_msg=case)


def test_rcnn_layers_match_fluid():
    """generate_proposals, distribute_fpn_proposals, collect_fpn_proposals and box_decoder_and_assign:
    values, shapes and LoDs as fluid 1.8.5. Where no roi is left fluid 1.8.5 gave a tensor of shape
    [0]; fluidcompat keeps its columns ([0, 4] rois, [0, 1] probabilities), so concat and the roi
    ops still take it."""
    got, want = run_fluidcompat("rcnn_layers.py"), load("rcnn_layers.json")
    assert sorted(got) == sorted(want) and len(want) == 7
    for case, w in want.items():
        fetches = []
        for g, x in zip(got[case], w):
            if x[1] == [0] and g[1][:1] == [0] and len(g[1]) == 2:
                g = [g[0], [0]] + g[2:]
            fetches.append(g)
        _same_fetches(fetches, w, case)


def test_matrix_nms_matches_fluid():
    """matrix_nms: linear and gaussian decay, thresholds, top-k, pixel boxes, an image without
    detections: rows, LoD and box indices as fluid 1.8.5."""
    _same_cases("matrix_nms", 3)


def test_detection_map_metric_matches_fluid():
    """fluid.metrics.DetectionMAP: each batch's mAP and the mAP accumulated over batches (the state
    kept in the scope between runs, reset by reset()), integral and 11point, difficult boxes
    evaluated or not, with and without a difficult input."""
    got, want = run_fluidcompat("detection_map.py"), load("detection_map.json")
    assert sorted(got) == sorted(want) and len(want) == 3
    for case, w in want.items():
        np.testing.assert_allclose(got[case], w, atol=1e-5, err_msg=case)


def test_rpn_and_retinanet_target_assign_match_fluid():
    """rpn_target_assign (use_random=False: the first candidates, as fluid's) and
    retinanet_target_assign: the gathered logits and box predictions, labels, box targets (boxes at
    the image's scale), weights (zero for fluid's stand-in rows) and foreground counts, with crowd
    boxes and straddle thresholds."""
    _same_cases("target_assign_rpn", 5)


def test_retinanet_detection_output_matches_fluid():
    """retinanet_detection_output over two FPN levels: thresholds (none on the last level), top-k
    per level, decoding at each image's scale with clipping, NMS per class, keep_top_k."""
    _same_cases("retinanet_detection_output", 2)


def test_generate_proposal_labels_matches_fluid():
    """generate_proposal_labels with use_random=False: rois (ground truth first, at the image's
    scale), labels, class-specific and class-agnostic box targets and weights, with crowd boxes and
    threshold ranges that overlap; is_cascade_rcnn (rois starting with the ground truth, no
    sampling, boxes without area left out), class-specific and agnostic."""
    _same_cases("generate_proposal_labels", 5)


def test_multiclass_nms_lod_form_matches_fluid():
    """multiclass_nms and multiclass_nms2 in R-CNN's LoD form (a box per class, each image's rows by
    the LoD): rows in fluid's order (a class's rows in row order), LoD and Index (row * C + class)."""
    _same_cases("multiclass_nms_lod", 2)


def test_lod_rank_table_and_reorder_match_fluid():
    """lod_rank_table, max_sequence_len and reorder_lod_tensor_by_rank (1- and 2-level LoD, a plain
    tensor) with the reordered LoD, and the gradient put back in the input's order."""
    _same_cases("lod_rank_table", 1)


def test_lod_tensor_arrays_by_rank_match_fluid():
    """lod_tensor_to_array, array_to_lod_tensor and shrink_memory, alone and in a While loop over the
    steps (a running sum), and the gradient through the array and back, as fluid 1.8.5."""
    _same_cases("lod_tensor_array", 1)


def test_roi_perspective_transform_matches_fluid():
    """roi_perspective_transform: slanted rois, rois off the map and a rectangle, two output sizes and
    spatial scales: output, mask, transform matrices and the input's gradient."""
    _same_cases("roi_perspective_transform", 2)


def test_locality_aware_nms_matches_fluid():
    """locality_aware_nms: merging in input order, NMS, thresholds and top-k, for boxes and for
    8-coordinate quadrilaterals."""
    _same_cases("locality_aware_nms", 3)


def test_filter_by_instag_matches_fluid():
    """filter_by_instag over LoD instances and rows, and with none kept: output, LoD, loss weight and
    the input's gradient."""
    _same_cases("filter_by_instag", 3)


def test_generate_mask_labels_matches_fluid():
    """generate_mask_labels: foreground rois matched to polygon boxes and rasterized at 7 x 7 and
    14 x 14 (COCO's rasterizer) into their class slots, multi-polygon boxes, crowd boxes, image
    scales, and an image without a foreground roi."""
    _same_cases("generate_mask_labels", 3)


def _same_runs(got, want, case):
    """{"params": [[name, shape]], "runs": [[[shape, values...]]]}: the same parameters, shapes and values."""
    assert got["params"] == want["params"], case
    assert len(got["runs"]) == len(want["runs"]), case
    for run, (g_run, w_run) in enumerate(zip(got["runs"], want["runs"])):
        assert len(g_run) == len(w_run), case
        for k, ((g_shape, *g), (w_shape, *w)) in enumerate(zip(g_run, w_run)):
            assert g_shape == w_shape, (case, run, k)
            np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5, err_msg=f"{case} run {run} fetch {k}")


def test_rnns_over_an_unknown_number_of_steps_match_fluid():
    """StaticRNN, layers.rnn (LSTMCell with sequence_length, GRUCell reversed), contrib's basic_lstm (2
    layers, bidirectional, named attributes, initial states, sequence_length) and basic_gru, each fed
    two batches of different lengths through one program: outputs, final states, gradients and the
    parameters' names as fluid 1.8.5; and a GRUCell's named attributes (_gate / _candidate)."""
    got, want = run_fluidcompat("rnn_dynamic_length.py"), load("rnn_dynamic_length.json")
    assert sorted(got) == sorted(want) == ["basic_gru", "basic_lstm", "named_gru", "rnn_cells", "static_rnn"]
    for case in want:
        _same_runs(got[case], want[case], case)


def test_variable_indexing_matches_fluid():
    """x[int], x[-1], x[a:b], x[::-1], x[a:b:step], x[Variable], tuples and shape(x)[k]: the declared
    shapes, the slice / strided_slice / reverse ops (the gradient's included) and values as fluid 1.8.5."""
    assert run_fluidcompat("variable_getitem.py") == load("variable_getitem.json")


def test_distributions_match_fluid():
    """Uniform, Normal, Categorical, MultivariateNormalDiag from floats, lists, arrays and Variables:
    entropy, log_prob (-inf outside a Uniform), kl_divergence, declared shapes, sample shapes and the
    errors for mixed or mistyped arguments, as fluid 1.8.5."""
    got, want = run_fluidcompat("distributions.py"), load("distributions.json")
    assert got["declared"] == want["declared"]
    assert got["sample_shapes"] == want["sample_shapes"]
    assert len(got["values"]) == len(want["values"])
    for k, ((g_shape, *g), (w_shape, *w)) in enumerate(zip(got["values"], want["values"])):
        assert g_shape == w_shape, k
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5, err_msg=str(k))
    # the error texts name fluidcompat's classes where fluid named its own
    assert got["errors"] == [
        None if e is None else [e[0], e[1].replace("paddle.fluid.", "fluidcompat.")] for e in want["errors"]
    ]


def test_contrib_ops_match_fluid():
    """fused_elemwise_activation (the 8 functor pairs fluid 1.8.5's kernel ran, and Y broadcast on axis
    1), partial_concat / partial_sum, fused_embedding_seq_pool (padding_idx, an empty sequence) with
    their gradients, and shuffle_batch's placement (row j at ShuffleIdx[j]) and gradient, as fluid
    1.8.5."""
    got, want = run_fluidcompat("contrib_ops.py"), load("contrib_ops.json")
    assert got["shuffle_batch"] == want["shuffle_batch"]
    assert sorted(got["fused_elemwise_activation"]) == sorted(want["fused_elemwise_activation"])
    for pair, w in want["fused_elemwise_activation"].items():
        _same_fetches(got["fused_elemwise_activation"][pair], w, pair)
    _same_fetches(got["partial"], want["partial"], "partial")
    _same_fetches(got["fused_embedding_seq_pool"], want["fused_embedding_seq_pool"], "fused_embedding_seq_pool")


def test_train_from_dataset_matches_fluid():
    """InMemoryDataset (0 ids dropped when loaded, a pipe command) and QueueDataset through
    train_from_dataset / infer_from_dataset: every batch's printed ids, dense slot (with the LoD fluid's
    feed gave it), loss and accuracy as fluid 1.8.5 printed them, the trained parameters, the memory size
    and the errors."""
    got = run_lines("dataset_train.py")
    with open(os.path.join(GOLDEN, "dataset_train.txt")) as f:
        want = f.read().splitlines()
    assert got[:-1] == want[:-1]
    g, w = json.loads(got[-1]), json.loads(want[-1])
    assert g["errors"] == w["errors"] and g["memory_size"] == w["memory_size"] == 14
    for kind in ("InMemoryDataset", "QueueDataset"):
        for a, b in zip(g[kind], w[kind]):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=2e-6, err_msg=kind)


def test_data_feed_desc_matches_fluid():
    """fluid.DataFeedDesc read from a protobuf text file, its slots made dense / used, and desc()'s text
    as fluid 1.8.5 wrote it; set_use_slots on another feed kind is refused with fluid's text."""
    with open(os.path.join(GOLDEN, "data_feed_desc.txt")) as f:
        assert run_lines("data_feed_desc.py") == f.read().strip().splitlines()


def test_recompute_matches_fluid():
    """RecomputeOptimizer over an MLP with two checkpoints: every op of the program (the segments'
    forward ops again, renamed NAME.subprog_N, before their grad ops; a seed op for a dropout) and 3
    Adam steps as fluid 1.8.5."""
    got, want = run_fluidcompat("recompute.py"), load("recompute.json")
    assert got["ops"] == want["ops"]
    assert got["dropout_ops"] == want["dropout_ops"]
    assert got["params"] == want["params"]
    np.testing.assert_allclose(got["losses"], want["losses"], rtol=1e-5)
    for a, b in zip(got["end"], want["end"]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=2e-6)


def test_ctr_metric_bundle_matches_fluid():
    """ctr_metric_bundle's six running sums over three batches (and their names), and the
    squared_l2_norm / l1_norm ops with their gradients, as fluid 1.8.5."""
    got, want = run_fluidcompat("ctr_metric_bundle.py"), load("ctr_metric_bundle.json")
    assert got["names"] == want["names"] and got["shapes"] == want["shapes"]
    for run, (g_run, w_run) in enumerate(zip(got["runs"], want["runs"])):
        for k, (a, b) in enumerate(zip(g_run, w_run)):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5, err_msg=f"batch {run} fetch {k}")


def test_softmax_and_cross_entropy_extremes_match_fluid():
    """Logits hundreds apart and probabilities of 0 and inf: fluid's softmax clips the logits minus their
    maximum at -64 (no probability is 0), its cross entropies clip log at +-1e20 (0 * log 0 is 0 with
    soft labels); values and gradients in float32 and float64, an SGD step whose loss stays 64, and
    softmax + cross_entropy and softmax_with_cross_entropy in dygraph mode.

    One departure: fluid 1.8.5's softmax_with_cross_entropy_grad on the CPU does not skip a row whose
    label is ignore_index: it leaves that row at softmax * dLoss and subtracts 1 at index
    row * classes + ignore_index (here -1: the previous row's last entry). fluidcompat gives the
    ignored row 0 and every other row softmax - one_hot(label), checked against fluid's softmax."""
    got, want = run_fluidcompat("softmax_extremes.py"), load("softmax_extremes.json")
    assert sorted(got) == sorted(want) and len(want) == 34
    for key, w in want.items():
        if key.startswith("dygraph"):  # [loss, gradient]
            for part, g, v in zip(("loss", "gradient"), got[key], w):
                np.testing.assert_allclose(g, v, rtol=1e-6, atol=0, err_msg=f"{key} {part}")
            continue
        g = np.array(got[key])
        if key.startswith("swce hard grad"):
            sm = np.array(want[key.replace("grad", "softmax")])
            expect = sm - np.eye(3)[[0, 1, 0, 0]]
            expect[3] = 0.0  # ignore_index row
            np.testing.assert_allclose(g[:2], np.array(w)[:2], rtol=1e-6, atol=0, err_msg=key)
            np.testing.assert_allclose(g, expect, rtol=1e-6, atol=1e-7, err_msg=key)
            continue
        np.testing.assert_allclose(g, np.array(w), rtol=1e-6, atol=0, equal_nan=True, err_msg=key)


def test_activation_and_loss_edges_match_fluid():
    """Activations at 0, their thresholds and +-1000 (value and gradient), zero gradients of floor / ceil /
    round / sign, cos_sim with zero and tiny rows, sigmoid_cross_entropy_with_logits normalized with an
    ignored label, ties (reduce_max / reduce_min give each tied element all of the gradient,
    elementwise_max / min give a tie's to Y, maxout to the first of its group), clip at its bounds,
    rank_loss and teacher_student_sigmoid_loss where a VJP gives NaN or a subgradient, and log_loss's
    refusal of a wide Predicted.

    Departures, each where fluid 1.8.5 gives what no user wants: elu's gradient at 1000 is NaN in fluid
    (its kernel multiplies exp(1000) by 0), 1 here; tanh's and stanh's gradients at +-6 are 1 - out^2,
    which cancels to a few significant digits, so they differ from fluid's by torch's last bit of tanh."""
    got, want = run_fluidcompat("activation_edges.py"), load("activation_edges.json")
    assert sorted(got) == sorted(want) and len(want) == 60
    pts = [-1000, -50, -40, -24, -6, -3, -2.5, -1, -0.5, -1e-3, 0, 1e-3, 0.5, 1, 2.5, 3, 6, 20, 24, 40, 50, 1000]
    six = [i for i, x in enumerate(pts) if abs(x) == 6]
    for key, w in want.items():
        if key == "log_loss wide":
            assert "2nd dimension of Input(X) must be 1" in got[key][0][0] and "(1, 8)" in got[key][0][0]
            assert "2nd dimension of Input(X) must be 1" in w[0][0]
            continue
        assert len(got[key]) == len(w), key
        for i, (g, v) in enumerate(zip(got[key], w)):
            g, v = np.array(g), np.array(v)
            if key == "elu" and i == 1:
                assert np.isnan(v[-1]) and g[-1] == 22.0
                g, v = g[:-1], v[:-1]
            if key in ("tanh", "stanh") and i == 1:
                np.testing.assert_allclose(g[six], v[six], rtol=2e-2)
                g, v = np.delete(g, six), np.delete(v, six)
            np.testing.assert_allclose(g, v, rtol=1e-5, atol=1e-6, equal_nan=True, err_msg=f"{key} [{i}]")


def test_group_norm_makes_parameters_as_fluid():
    """Static group_norm has a scale and a bias only when param_attr / bias_attr are given, as fluid
    1.8.5's layer: the program's parameters, the op's inputs, three SGD steps' losses and the values
    match. Without a scale fluid 1.8.5's group_norm_grad is wrong (it differs from finite differences;
    ours is checked against them in test_grads), so there only the parameters and the first loss are
    compared."""
    got, want = run_fluidcompat("group_norm_params.py"), load("group_norm_params.json")
    assert sorted(got) == sorted(want) == sorted(["defaults", "scale only", "both", "bias False"])
    for case, w in want.items():
        g = got[case]
        assert (g["params"], g["inputs"]) == (w["params"], w["inputs"]), case
        steps = 1 if case == "defaults" else 3
        np.testing.assert_allclose(g["losses"][:steps], w["losses"][:steps], rtol=1e-5, err_msg=case)
        if case != "defaults":
            for p in w["params"]:
                np.testing.assert_allclose(g["values"][p], w["values"][p], rtol=1e-5, atol=1e-6, err_msg=p)


def test_topk_and_accuracy_with_ties_match_fluid():
    """Tied predictions (uniform rows, as from zero weights): top_k's indices for k = 1, 2, 3, 5, 10 and
    on a 3-D input, and accuracy for k = 1, 2, 5, exactly as fluid 1.8.5's CPU top_k (libstdc++'s
    partial_sort: which equal values it keeps and their order); rows without ties as torch's topk.
    gradients() of top_k's values (which stop gradients) is [] as in fluid."""
    got, want = run_fluidcompat("topk_ties.py"), load("topk_ties.json")
    assert len(want) == 15
    assert got == want


def test_integer_reductions_match_fluid():
    """reduce_sum / reduce_prod / cumsum of int32 stay int32 (torch widens them to int64, so the fetched
    dtype differed from the declared one), reduce_mean of integers divides in integers, truncated (it
    failed), and mean / clip refuse an integer input with fluid's message."""
    got, want = run_fluidcompat("int_reductions.py"), load("int_reductions.json")
    assert sorted(want) == ["errors", "int32", "int64"] and len(want["int32"]) == 9
    assert got == want


def test_channels_last_resize_matches_fluid():
    """resize_bilinear / resize_nearest / image_resize with NHWC input and resize_trilinear with NDHWC:
    build-time and run shapes, values and input gradients (out_shape, scale, a shape tensor, the
    corner modes), and fluid's refusal of a data_format that does not fit the rank. They were resized
    as if channels-first: a [2, 4, 5, 3] NHWC input came out [2, 4, 7, 8]."""
    got, want = run_fluidcompat("resize_nhwc.py"), load("resize_nhwc.json")
    assert sorted(got) == sorted(want) and len(want) == 10
    _same_shapes_and_values(got, want, lambda key: 1 if key == "trilinear" else 2, atol=1e-6)


def _same_shapes_and_values(got, want, shapes, atol):
    """Per case but "errors" (compared whole): the first ``shapes(case)`` entries (shapes) equal, the
    rest (flat values) close."""
    assert got["errors"] == want["errors"]
    for key in want:
        if key == "errors":
            continue
        n = shapes(key)
        assert got[key][:n] == want[key][:n], key
        for g, w in zip(got[key][n:], want[key][n:]):
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=atol, err_msg=key)


def test_channels_last_3d_ops_match_fluid():
    """pool3d (max, avg with padding and ceil_mode, SAME, global), conv3d (bias along the channels,
    SAME with stride) and conv3d_transpose (bias, output_size) on NDHWC input, lrn and group_norm on
    NHWC: shapes,
    values and input gradients, and fluid's refusals of a wrong data_format. pool3d and lrn computed
    channels-last input as channels-first; conv3d(_transpose) refused NDHWC; conv3d_transpose ignored
    bias_attr (a zero bias always)."""
    got, want = run_fluidcompat("channels_last_3d.py"), load("channels_last_3d.json")
    assert sorted(got) == sorted(want) and len(want) == 13
    # without a scale fluid 1.8.5's group_norm_grad is wrong (test_group_norm_makes_parameters_as_fluid):
    # there the output only
    no_scale = got.pop("group_norm"), want.pop("group_norm")
    assert no_scale[0][:2] == no_scale[1][:2]
    np.testing.assert_allclose(no_scale[0][2], no_scale[1][2], rtol=1e-5, atol=1e-5)
    _same_shapes_and_values(got, want, lambda key: 2, atol=1e-5)


def test_squeeze_refuses_an_axis_whose_size_is_not_1():
    """squeeze of size-1 axes (known, all, unknown when built: the declared shape drops it as fluid's
    does) and its refusal, with fluid's message, of an axis of size 3: when the program is built if
    the size is known then (fluid 1.8.5 waited for the run), else when it runs. It used to keep such
    an axis silently."""
    got, want = run_fluidcompat("squeeze_axes.py"), load("squeeze_axes.json")
    assert sorted(got) == sorted(want) and len(want) == 5
    for key, w in want.items():
        if w[0] == "error":
            assert got[key][0] == "error", key
            fluid_text = w[1][0].split(": ", 1)[1]
            assert fluid_text in got[key][1][0] and "axis 1 has size 3" in got[key][1][0], key
        else:
            assert got[key] == w, key


def test_var_recreate_matches_fluid():
    """A variable created again by name must agree in type, shape, dtype, lod_level and persistable,
    with fluid 1.8.5's messages (it used to return the first one silently, and create_parameter over
    a data variable replaced it); a layer whose op needs a parameter refuses param_attr / bias_attr
    False with fluid's message. fluid asserted (AssertionError) and, for layer_norm's bias, had already
    added the scale; fluidcompat raises ValueError and leaves the program as it was."""
    got, want = run_fluidcompat("var_recreate.py"), load("var_recreate.json")
    assert sorted(got) == sorted(want) and len(want) == 34
    for key, (kind, msg, _) in want.items():
        expected = ["ValueError" if kind == "AssertionError" else kind, msg, True]
        assert got[key] == expected, key


def test_tensor_edges_match_fluid():
    """Ties (argmax / argmin / argsort), cumsum with and without an axis (fluid 1.8.5's runs along
    the last axis; fluidcompat used to flatten), negative reduce dims, unique's order, scatter with
    repeated indices, range / linspace bounds, integer division and remainder of negative numbers,
    casts out of range: dtypes, shapes and values as fluid's."""
    got, want = run_fluidcompat("tensor_edges.py"), load("tensor_edges.json")
    assert sorted(got) == sorted(want) and len(want) == 20
    for key, w in want.items():
        assert got[key] == w, key


def test_optimizer_edges_match_fluid():
    """Three steps under each optimizer option at its edge (28 cases): losses and every weight as
    fluid 1.8.5's. Found by it: GradientClipBy* took no ``need_clip``, and LarsMomentum divided by
    zero norms (a zero-initialised bias never moved; a zero gradient gave NaN) where fluid uses the
    plain learning rate. A clip whose min is over its max is refused when it is made (fluid failed
    in the clip op at run time)."""
    got, want = run_fluidcompat("optimizer_edges.py"), load("optimizer_edges.json")
    assert sorted(got) == sorted(want) and len(want) == 28
    for key, w in want.items():
        if key == "clip_value_min_over_max":
            assert w[:2] == ["error", "EnforceNotMet"] and got[key][:2] == ["error", "ValueError"]
            assert "min=0.02, max=0.01" in got[key][2]
        elif w[0] == "error":
            assert got[key] == w, key
        else:
            np.testing.assert_allclose(got[key][0], w[0], rtol=1e-4, err_msg=key)
            assert sorted(got[key][1]) == sorted(w[1])
            for name, value in w[1].items():
                np.testing.assert_allclose(got[key][1][name], value, rtol=1e-4, atol=2e-4, err_msg=f"{key} {name}")


def test_toplevel_api_matches_fluid():
    """What fluid 1.8 published at the top of paddle.fluid beyond its static API, which fluidcompat
    refused: the dygraph layers (fluid.Linear ...), fluid.input, fluid.average.WeightedAverage,
    fluid.dataset (it was paddle.dataset's downloads), load_program_state / set_program_state. A
    state of the wrong shape is refused naming the variable and both shapes (fluid asserted) and
    leaves the scope as it was."""
    got, want = run_fluidcompat("toplevel_api.py"), load("toplevel_api.json")
    assert sorted(got) == sorted(want) and len(want["dygraph_layers"]) == 23
    for key, w in want.items():
        if key == "set_program_state_shape":
            assert w[0] == "AssertionError" and "namely [ table ]" in w[1]
            assert got[key] == [
                "ValueError",
                "Shape of variable 'table' in the state dict is [4, 3], but the program declares [5, 3]",
            ]
        else:
            assert got[key] == w, key


def test_clone_for_test_matches_fluid():
    """clone(for_test=True) after minimize drops, with the backward and optimizer ops, every variable
    no op left uses, as fluid 1.8.5: save_persistables of the test program writes the parameters and
    batch-norm statistics only (it wrote the Adam moments, beta powers and learning rate too, and
    load_persistables of a fluid-saved test checkpoint looked for them). Before minimize nothing is
    dropped; ops, is_test attributes and the test program's results are fluid's."""
    got, want = run_fluidcompat("program_clone.py"), load("program_clone.json")
    assert got == want
    assert "fc_0.w_0_moment1_0" in want["plain"]["vars"] and "fc_0.w_0_moment1_0" not in want["after"]["vars"]


def test_variable_order_matches_fluid():
    """Where fluid 1.8.5 rebuilt a program's Python blocks from its C++ ones (the gradients of
    minimize and fluid.gradients, clone, clone(for_test=True) before and after minimize, a while
    loop's blocks, _prune, _prune_with_input, save_inference_model's __model__ read back by
    load_inference_model and parse_from_string, a startup program's clone, a 994-variable block,
    removed and renamed variables), the variables come in fluid's order (NOTE: [Variable order])."""
    got, want = run_fluidcompat("var_order.py"), load("var_order.json")
    assert got == want
    assert want["clone_forward"] != want["forward"] and len(want["big_trained"]) > 409


def test_name_scopes_match_fluid():
    """op_namescope as fluid 1.8.5 set it: a scope opened again under the same parent is numbered
    (/s1_1/, the docs' example), and optimizers put the decay terms under /regularization/ and each
    parameter's update under /optimizer/, /optimizer_1/, ... (with /adamx/ and scale_with_param_lr
    inside), counted on across minimize calls and under an enclosing scope."""
    got, want = run_fluidcompat("name_scopes.py"), load("name_scopes.json")
    assert got == want
    assert ["pow", "/s1_1/"] in want["docs"] and ["sgd", "/outer/optimizer_3/"] in want["outer"]


def test_dtype_arguments_match_fluid():
    """A layer's dtype argument as fluid 1.8.5 read and checked it: 'float' / 'int' are numpy's
    float64 / int64 where fluid took numpy's reading (fluid.data, create_var, eye, gaussian_random;
    they were float32 / int32 here), refused with fluid's ValueError where it checked the argument,
    fluid's TypeError for a type the layer does not allow (cast to int16, fill_constant of uint8,
    ...), a parameter of an integer type without an initializer refused, no checks in dygraph mode.
    Departure: uniform_random(dtype='float64') gives float64 (fluid's layer dropped the dtype and
    gave float32)."""
    got, want = run_fluidcompat("dtype_args.py"), load("dtype_args.json")
    assert sorted(got) == sorted(want) and len(want) == 200
    departures = {"uniform_random float", "uniform_random float64"}
    assert {k for k in want if got[k] != want[k]} == departures
    assert all(want[k] == "VarType.FP32" and got[k] == "VarType.FP64" for k in departures)


def test_complex_to_variable_matches_fluid():
    """to_variable of a complex array gives a ComplexVariable of two real values, as fluid 1.8.5 (the
    docs' examples; it raised 'Unsupported data type'): names, dtype, shape, numpy(), its printed form
    and a rename."""
    assert run_fluidcompat("complex_variable.py") == load("complex_variable.json")


def test_dygraph_optimizers_match_fluid():
    """Every optimizer in dygraph mode trains an embedding and a Linear to fluid 1.8.5's losses,
    with the embedding dense and is_sparse (Adam's sparse update bias-corrects a step ahead, as
    fluid's sparse kernel: the table's rows now reach it; backward of an is_sparse embedding failed,
    and Adadelta failed to update at all); gradient() of the sparse table is fluid's (values, rows).
    Departures: sparse Momentum and RMSProp update every row given (fluid's kernels looked rows up by
    binary search in unsorted unique ids and lost some: fluidcompat's losses are the dense ones); the
    optimizers fluid could not run on sparse rows (Adamax, Adadelta, Ftrl, DecayedAdagrad,
    LarsMomentum, Adam with decay and clipping) train as with a dense table."""
    _check_dygraph_optimizers(run_fluidcompat("dygraph_optimizers.py"), rtol=2e-5, atol=2e-6)


def _check_dygraph_optimizers(got: dict, rtol: float, atol: float) -> None:
    """dygraph_optimizers.py's report against fluid 1.8.5's (the departures: see the test above)."""
    want = load("dygraph_optimizers.json")
    assert sorted(got) == sorted(want) and len(want) == 25
    (shape, total, rows), (want_shape, want_total, want_rows) = got["sparse_gradient"], want["sparse_gradient"]
    assert (shape, rows) == (want_shape, want_rows)
    np.testing.assert_allclose(total, want_total, rtol=rtol)
    lost_rows = {"momentum", "rmsprop"}
    for key, losses in want.items():
        name, kind = key.split(" ") if " " in key else (key, "")
        if kind == "sparse=True" and (name in lost_rows or isinstance(losses, str)):
            if not isinstance(losses, str):  # (the rows fluid lost first count in the third loss)
                np.testing.assert_allclose(got[key][:2], losses[:2], rtol=rtol, atol=atol, err_msg=key)
            np.testing.assert_allclose(got[key], want[f"{name} sparse=False"], rtol=rtol, atol=atol, err_msg=key)
        elif key != "sparse_gradient":
            np.testing.assert_allclose(got[key], losses, rtol=rtol, atol=atol, err_msg=key)


@pytest.mark.parametrize(
    "script",
    ["dygraph_ptb_lm", "dygraph_sentiment", "dygraph_lac", "dygraph_transformer", "dygraph_senet", "dygraph_cyclegan"],
)
def test_dygraph_models_train_as_fluid(script):
    """Dygraph models in the shape of fluid 1.8's model zoo, seeded, train to fluid 1.8.5's losses and
    parameters to 5 places: the PTB language model (a hand-written two-layer LSTM, seeded dropout,
    global-norm clipping, piecewise decay) and the sentiment BOW and GRU (GRUUnit) models over
    is_sparse embeddings (padding_idx, a parameter learning rate) with Adagrad, and the lexical
    analysis model (a bidirectional GRU of GRUUnit steps, its own LinearChainCRF / CRFDecoding
    layers appending linear_chain_crf and crf_decoding, chunk_eval; the decoder's ``weight`` property
    set to the CRF's parameter: fluid registered it under both names, fluidcompat under one), and a
    Transformer decoder layer (multi-head attention, layer_norm pre/post processing, seeded dropout,
    label smoothing, soft-label cross entropy, NoamDecay, Adam), and SE-ResNeXt / MobileNet pieces
    (grouped and depthwise convolutions, squeeze-excitation, relu6, CosineDecay with Momentum and
    L2Decay, ExponentialDecay with RMSProp), and CycleGAN pieces (InstanceNorm, Conv2DTranspose,
    reflect padding, LSGAN losses, two Adam optimizers, the fake image detached for the
    discriminator). Losses to 2e-5 (printed to 5 places), parameter sums to 1e-3."""
    got, want = run_fluidcompat(f"{script}.py"), load(f"{script}.json")
    sums = [k for k in want if k.endswith("params")]
    got_params, want_params = [got.pop(k) for k in sums], [want.pop(k) for k in sums]
    assert [list(p) for p in got_params] == [list(p) for p in want_params]
    assert _close(got, want, atol=2e-5) and _close(got_params, want_params, atol=1e-3)


def test_dygraph_resnet_trains_as_fluid():
    """A dygraph ResNet in the shape of fluid 1.8's model zoo (ConvBNLayer, bottleneck blocks with a
    projection shortcut, LayerHelper.append_activation, global average pooling), seeded, trained with
    Momentum, L2Decay and piecewise decay, then in eval mode: fluid 1.8.5's losses, accuracies,
    predictions, state_dict keys and parameter sums (to 1e-3: sums of hundreds of values)."""
    got, want = run_fluidcompat("dygraph_resnet.py"), load("dygraph_resnet.json")
    assert got["keys"] == want["keys"] and len(want["keys"]) == 47
    assert _close(got, want, atol=1e-3)


def test_float16_on_the_cpu_matches_fluid():
    """float16 on the CPU bit for bit as fluid 1.8.5 made it: cast and fill_constant round toward zero
    (subnormals too; above 65504 infinite; torch rounds to nearest), and every initializer fills a
    float16 parameter through a float32 temporary and a cast, with fluid's names and seeded values.
    (Bilinear too, but its values are the bilinear kernel: fluid 1.8.5 under Python 3 divided with
    ``/`` where it meant ``//`` and made another kernel, test_initializer checks the kernel.)"""
    assert run_fluidcompat("float16_cpu.py") == load("float16_cpu.json")


def test_run_error_notice_matches_fluid():
    """Executor.run warns "The following exception is not an EOF exception." before an error, as
    fluid 1.8.5 did, and not at the end of a reader's data."""
    assert run_fluidcompat("run_error_notice.py") == load("run_error_notice.json")


def test_regularizer_note_is_logged_as_fluid():
    """A parameter's own regularizer beside the optimizer's is noted once at INFO on the root logger,
    as fluid 1.8.5 did: nothing shows until logging is configured (fluidcompat warned on stderr)."""
    with open(os.path.join(GOLDEN, "regularizer_log.txt")) as f:
        assert run_lines("regularizer_log.py") == f.read().strip().splitlines()


def test_float16_dtype_warnings_match_fluid():
    """A float16 variable given to a layer in a static program warns as fluid 1.8.5's dtype check
    did ("... only support float16 in GPU now."), before any refusal; resize with an actual_shape
    Variable gives fluid's notice that actual_shape will be deprecated."""
    assert run_fluidcompat("float16_warnings.py") == load("float16_warnings.json")


def test_warpctc_program_matches_fluid():
    """warpctc adds its WarpCTCGrad variable and output as fluid 1.8.5 (a program listed one variable
    fewer) and trains."""
    assert run_fluidcompat("warpctc_program.py") == load("warpctc_program.json")


def test_dygraph_parameter_names_match_fluid():
    """A parameter name given twice in one dygraph guard is refused with fluid 1.8.5's text (it was
    taken: two parameters of one name), a new guard starts afresh, and the layers' names follow."""
    assert run_fluidcompat("dygraph_param_names.py") == load("dygraph_param_names.json")


def test_dygraph_sparse_gradients_match_fluid():
    """An is_sparse embedding's gradient in dygraph mode as fluid 1.8.5 gave it: one lookup's rows as
    given (repeated rows repeated; a plain int64 array), several lookups' added up (each row once,
    ascending), dense where the table is also used densely, None after clear_gradients, and the SGD
    steps' table. (fluidcompat gave several lookups' rows one after the other, and zeros after a
    clear; its sparse gradients also went through autograd as dense tables: a 1M x 150 step took
    0.5 s.)"""
    assert run_fluidcompat("dygraph_sparse_grads.py") == load("dygraph_sparse_grads.json")


@pytest.mark.cuda
def test_seeded_draws_and_sparse_dygraph_on_cuda_match_fluid(tmp_path):
    """On cuda:0 a fixed seed draws what fluid 1.8.5's CPU kernels drew (fluidcompat draws the same
    numbers on every device; fluid's GPU kernels drew others), and dygraph's sparse embedding
    gradients train every optimizer as on the CPU (gradient() of a sparse table too), and the dygraph
    Transformer (seeded dropout) trains as on the CPU: the golden scripts with their CPUPlace made
    CUDAPlace(0), against the same recordings (training to 1e-4: GPU kernels sum in other orders)."""
    import torch

    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    got = {}
    for script in ("seeded_draws.py", "dygraph_optimizers.py", "dygraph_sparse_grads.py", "dygraph_transformer.py"):
        with open(os.path.join(GOLDEN, script)) as f:
            source = f.read()
        assert source.count("fluid.CPUPlace()") == 1, script
        (tmp_path / script).write_text(source.replace("fluid.CPUPlace()", "fluid.CUDAPlace(0)"))
        proc = subprocess.run(
            [sys.executable, "-m", "fluidcompat", "run", "--device", "gpu", str(tmp_path / script)],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert proc.returncode == 0, proc.stderr
        got[script] = json.loads(proc.stdout)
    draws, want = got["seeded_draws.py"], load("seeded_draws.json")
    assert draws.pop("layer_u64")[1] == "float64" and want.pop("layer_u64")[1] == "float32"
    assert _close(draws, want, atol=1e-4, rtol=1e-4)
    _check_dygraph_optimizers(got["dygraph_optimizers.py"], rtol=1e-4, atol=1e-5)
    assert _close(got["dygraph_sparse_grads.py"], load("dygraph_sparse_grads.json"), atol=1e-5)
    assert _close(got["dygraph_transformer.py"], load("dygraph_transformer.json"), atol=1e-3)


def test_affine_grid_batch_matches_fluid():
    """affine_grid takes its batch from theta whatever out_shape says (the docs' example asks for 5
    with a batch of 2, and failed here) and declares the grid's height and width unknown, as fluid
    1.8.5; values rounded to 5 places."""
    assert run_fluidcompat("affine_grid_batch.py") == load("affine_grid_batch.json")


def test_api_forms_match_fluid():
    """Argument forms fluid 1.8.5 took (its docs' examples use them) that failed here: diag_embed of
    a numpy array in dygraph mode, randint with a shape holding Variables or given as one,
    unique_name.switch's (generator, checker) pair, a label declared 'int' (int64) fed to accuracy."""
    assert run_fluidcompat("api_forms.py") == load("api_forms.json")


def test_sample_generators_convert_as_fluid():
    """A DataLoader's or PyReader's sample and sample-list generators in static mode convert each
    field as fluid 1.8.5's DataFeeder did: float64 images to float32, int labels to int64 [batch, 1],
    each a LoDTensor (they were stacked as given, and the feed check refused float64 for float32)."""
    assert run_fluidcompat("sample_generator_dtypes.py") == load("sample_generator_dtypes.json")


def test_int64_results_print_as_fluids():
    """int64 results print as fluid 1.8.5's did: its tensors handed numpy C long long, so an array's
    repr (and a printed list of fetched values) says dtype=int64; here numpy's default long printed
    none. Fetched values, as_numpy, np.array of a LoDTensor, dygraph numpy()."""
    assert run_fluidcompat("int64_arrays.py") == load("int64_arrays.json")


def test_numpy_results_match_fluid():
    """fluid.executor.as_numpy (the docs' example, lists, an empty tensor, LoD refused with fluid's
    text) and one-element numpy results printed with '%f' (as_numpy, a dygraph loss.numpy(),
    fluid.metrics' [1] arrays): under numpy 2.4 float() of a [1] array fails, fluid-era numpy took it."""
    got, want = run_fluidcompat("numpy_results.py"), load("numpy_results.json")
    assert got == want and len(want) == 9


def test_legacy_names_match_fluid():
    """Names fluid-era scripts use that numpy 2 and Python 3.8 / 3.10 removed (np.float, np.int,
    np.NaN, np.product, np.in1d, np.asscalar, collections.Iterable, time.clock, ...) work under
    `fluidcompat run` as under fluid 1.8.5's numpy 1.19 and Python 3.7. Departure: fluid
    refused the builtin types np.int / np.float as the dtype of cast and fill_constant ("dtype must be
    any of [...]"); fluidcompat takes them as int64 / float64, as fluid.data did."""
    got, want = run_fluidcompat("legacy_names.py"), load("legacy_names.json")
    for key in ("dtypes", "constants", "functions", "fluid", "python"):
        assert got[key] == want[key], key
    assert [e and e[0] for e in want["fluid_dtypes"]] == ["ValueError", "ValueError", None, None, None]
    assert got["fluid_dtypes"] == [None] * 5


def test_six_examples_match_fluid():
    """fluid 1.8's docs examples that `import six` (py_func's network, Program.clone's print_prog):
    paddlepaddle 1.8 installed six, and so does fluidcompat."""
    assert run_fluidcompat("six_examples.py") == load("six_examples.json")


def test_check_nan_inf_matches_fluid():
    """FLAGS_check_nan_inf=1: fluid 1.8.5's report of the first op output with a NaN or an Inf (its
    lines on stdout, the error naming op and variable), the sgd step that writes an Inf into a
    parameter and the mul reading it on the next run, set_flags turning it off: the same lines."""
    with open(os.path.join(GOLDEN, "check_nan_inf.txt")) as f:
        want = f.read().strip().splitlines()
    assert run_lines("check_nan_inf.py", FLAGS_check_nan_inf="1") == want


def test_metrics_forms_match_fluid():
    """fluid.metrics as fluid 1.8.5: values, errors and the forms of results (ChunkEvaluator and
    EditDistance return [1] arrays for fetched [1] counts; they returned floats), Auc with curve='PR'
    (fluid computed the ROC area for any curve; fluidcompat refused it, now warns and does the same).
    Precision given two columns of predictions names the shapes (fluid: numpy's truth-value error)."""
    got, want = run_fluidcompat("metrics_forms.py"), load("metrics_forms.json")
    assert sorted(got) == sorted(want) and len(want) == 19
    for key, w in want.items():
        if key == "precision_shape":
            assert w[0] == "ValueError" and got[key][0] == "ValueError"
            assert "Received: preds (3, 2), labels (3, 1)" in got[key][1]
        else:
            assert got[key] == w, key


def test_weight_norm_matches_fluid():
    """WeightNormParamAttr normalises the weight (it was a plain parameter): parameters <name>_g and
    <name>_v, fluid 1.8.5's ops in both programs, g's starting values, and three SGD steps, for dim
    None, 0, the last and an inner one (fc and conv2d)."""
    got, want = run_fluidcompat("weight_norm.py"), load("weight_norm.json")
    for key in ("params", "startup_ops", "main_ops"):
        assert got[key] == want[key], key
    np.testing.assert_allclose(got["losses"], want["losses"], rtol=1e-4)
    for stage in ("initial", "after"):
        assert sorted(got[stage]) == sorted(want[stage]) and len(want[stage]) == 13
        for name, value in want[stage].items():
            np.testing.assert_allclose(got[stage][name], value, atol=2e-5, err_msg=f"{stage} {name}")


def test_variable_args_match_fluid():
    """Layers given Variables where fluid 1.8.5 took them: split's dim and sections, unsqueeze's axes
    and strided_slice's bounds were refused (TypeError), concat with a Variable axis declared the
    shape of axis 0; the shapes known when the program is built (fluid's: the numbers given are
    known, a Variable's dims are -1) and the values, as fluid's."""
    got, want = run_fluidcompat("variable_args.py"), load("variable_args.json")
    assert sorted(got) == sorted(want) and len(want) == 28
    for key, w in want.items():
        assert got[key] == w, key


# fluidcompat's error where fluid 1.8.5 gave another: [exception type, words of the message]
ARG_CHECK_DELIBERATE = {
    "concat_mixed": ["ValueError", "Data Type mismatch: VarType.FP32 to VarType.INT64"],  # fluid: "5 to 3"
    "sum_mixed": ["ValueError", "Data Type mismatch: VarType.FP32 to VarType.INT64"],
    "cross_entropy_int": ["TypeError", "The data type of 'input' in cross_entropy must be"],  # fluid: cross_entropy2
    "gather_float_index": ["ValueError", "Index must be 1-D or [N, 1]"],  # fluid: when run, no words
    "increment_float": ["ValueError", "increment needs a tensor with one element"],
    "slice_np": ["TypeError", "The type of 'input' in slice must be"],  # fluid: to_variable's assertion
    "split_np": ["TypeError", "The type of 'input' in split must be"],  # fluid: a divisibility assertion
    "unsqueeze_np": ["TypeError", "The type of 'input' in unsqueeze must be"],  # fluid: printed the array
    "assign_int_list": ["ok", ""],  # a list is taken as an array (fluid refused it)
    # fluid built it and failed when run ("Tensor holds the wrong type")
    "elementwise_add_mixed": ["TypeError", "The data types of 'x' and 'y' of elementwise_add must be the same"],
}


def test_layer_arg_checks_match_fluid():
    """Layers given a Variable of a dtype fluid 1.8.5 refuses while building (relu / fc / matmul of
    int64, reduce_sum of bool, logical_and of float32, ...) raise its TypeError word for word; they
    used to build, and the kernel failed when the program ran (or, for relu of int64, ran). A numpy
    array where a Variable is due names the argument and layer as fluid's (whose type list names its
    own classes)."""
    got, want = run_fluidcompat("layer_arg_checks.py"), load("layer_arg_checks.json")
    assert sorted(got) == sorted(want) and len(want) == 52
    for key, (kind, msg) in want.items():
        if key in ARG_CHECK_DELIBERATE:
            expected_kind, words = ARG_CHECK_DELIBERATE[key]
            assert got[key][0] == expected_kind and words in got[key][1], key
        elif msg.startswith("The type of '"):
            assert got[key][0] == kind and got[key][1].startswith(msg.split(" must be ")[0] + " must be "), key
            assert got[key][1].endswith(msg[msg.rindex(", but received") :]), key
        else:
            assert got[key] == [kind, msg], key


def test_nets_attention_matches_fluid():
    """scaled_dot_product_attention with two heads projects each input by an fc first, as fluid
    1.8.5 (fluidcompat did not: no parameters, other values); its softmax is built as fluid's
    (reshape, softmax, reshape). Parameters, ops and values for one and two heads, and glu."""
    got, want = run_fluidcompat("nets_attention.py"), load("nets_attention.json")
    assert sorted(got) == ["heads_1", "heads_2"] == sorted(want)
    for heads, w in want.items():
        for key in ("params", "ops", "shape"):
            assert got[heads][key] == w[key], (heads, key)
        for key in ("out", "glu"):
            np.testing.assert_allclose(got[heads][key], w[key], atol=1e-5, err_msg=f"{heads} {key}")
    assert len(want["heads_2"]["params"]) == 6 and want["heads_1"]["params"] == []


def test_minimize_args_match_fluid():
    """minimize / backward / apply_gradients / append_backward with their arguments build fluid
    1.8.5's ops and pairs. A loss that is not one value is refused with fluid's message (as a
    ValueError; fluid asserted; fluidcompat seeded it with ones when its batch dim was unknown), and a
    parameter_list naming an unknown variable is refused (fluid appended the backward ops and
    trained nothing)."""
    got, want = run_fluidcompat("minimize_args.py"), load("minimize_args.json")
    assert sorted(got) == sorted(want) and len(want) == 9
    for key, w in want.items():
        if key == "loss_not_scalar":
            assert w[:2] == ["error", "AssertionError"] and got[key] == ["error", "ValueError", w[2]]
        elif key == "plist_unknown":
            assert w[:2] == [[], []] and got[key][:2] == ["error", "ValueError"] and "['nope']" in got[key][2]
        else:
            assert got[key] == w, key


def test_static_loader_matches_fluid():
    """Static-mode DataLoader.from_generator as fluid 1.8.5: start / EOFException / reset epochs,
    feed dicts per place, and with return_list=True a list per place holding the list of arrays
    (fluidcompat gave the arrays' list itself)."""
    got = json.loads("\n".join(run_lines("static_loader.py")))
    assert got == load("static_loader.json")


def test_lodtensor_api_matches_fluid():
    """The LoDTensor / Scope API at its edges: a tensor that holds no value yet has shape [0] and
    reads as an empty float64 array (fluidcompat raised); str() prints numbers as fluid's C++ stream
    did (1.5 2 1e-07 1.23457e+08, bools as 1/0; fluidcompat printed 2.0 and 1.0000000116860974e-07).
    A LoD that does not fit the rows is refused (fluid: EnforceNotMet, fluidcompat: ValueError naming
    the LoD and the rows) and leaves the tensor's LoD as it was."""
    refused = (["error", "EnforceNotMet"], ["error", "ValueError"])
    _same_but(
        run_fluidcompat("lodtensor_api.py"),
        load("lodtensor_api.json"),
        {"create_bad": refused, "lod_covering_too_many_rows": refused},
    )


def _same_but(got: dict, want: dict, departures: dict) -> None:
    """``got`` has ``want``'s keys and values, but for each key of ``departures``: (fluid's value,
    fluidcompat's), asserted both."""
    assert sorted(got) == sorted(want)
    for key, w in want.items():
        if key in departures:
            assert w == departures[key][0] and got[key] == departures[key][1], key
        else:
            assert got[key] == w, key


def test_data_feeder_matches_fluid():
    """DataFeeder.feed returns LoDTensors for every variable, dense ones too (fluidcompat returned
    ndarrays, so ``.lod()`` / ``.shape()`` on them failed); feed_shapes / feed_dtypes /
    feed_lod_level exist. A sample with the wrong number of fields is refused with fluid's words plus
    the sample's index (fluid: AssertionError, fluidcompat: ValueError); ragged fields name the
    variable and the samples' shapes (fluid: numpy's "setting an array element with a sequence")."""
    refused = (["error", "AssertionError"], ["error", "ValueError"])
    _same_but(
        run_fluidcompat("data_feeder.py"),
        load("data_feeder.json"),
        {"too_few_fields": refused, "too_many_fields": refused},
    )


def test_data_feeder_refuses_fields_that_do_not_fit():
    """fluid 1.8.5 fed a [1, 2] batch to a [-1, 3] variable and failed later inside an op; a field
    that does not fit the variable's shape, or ragged fields, are refused at feed() naming both."""
    import fluidcompat as fluid

    x = fluid.data("x", [None, 3], "float32")
    img = fluid.data("img", [None, 2, 2], "float32")
    f = fluid.DataFeeder([x], fluid.CPUPlace())
    with pytest.raises(ValueError, match=r"samples of 'x' have shape \[2\], which does not fit .*\[-1, 3\]"):
        f.feed([([1, 2],)])
    with pytest.raises(ValueError, match=r"samples of 'x' differ in shape: sample 0 has \[3\], sample 1 has \[2\]"):
        f.feed([([1, 2, 3],), ([1, 2],)])
    g = fluid.DataFeeder([img], fluid.CPUPlace())
    with pytest.raises(ValueError, match=r"sample 0's field for 'img' is a ragged nesting"):
        g.feed([([[1, 2], [3]],)])


def test_error_clip_and_backward_callbacks_match_fluid():
    """ErrorClipByValue set on a variable (``_set_error_clip``) clips its gradient in minimize's
    backward pass (fluidcompat accepted it and clipped nothing): ops, gradients and the trained
    weights match fluid 1.8.5. append_backward's callbacks get fluid's context (the grad -> forward
    variable map and ``__current_op_desc__``; fluidcompat passed {}). Departure: the clip op is a
    backward op, so ``clone(for_test=True)`` drops it; fluid 1.8.5 kept it in the test program, which
    then failed to run ("operator < clip > error")."""
    got, want = run_fluidcompat("error_clip.py"), load("error_clip.json")
    assert sorted(got) == sorted(want)
    for key, w in want.items():
        if key in ("max_only", "min_max"):
            assert w["test_ops"][-1] == "clip" and got[key]["test_ops"] == w["test_ops"][:-1]
            assert got[key]["ops"] == w["ops"] and "clip" in w["ops"]
            np.testing.assert_allclose(np.concatenate(got[key]["values"]), np.concatenate(w["values"]), atol=2e-5)
        elif key == "none":
            assert got[key]["ops"] == w["ops"] and got[key]["test_ops"] == w["test_ops"]
            np.testing.assert_allclose(np.concatenate(got[key]["values"]), np.concatenate(w["values"]), atol=2e-5)
        else:
            assert got[key] == w, key


def test_error_clip_of_the_wrong_type_is_refused():
    """An error clip that is not a BaseErrorClipAttr names the variable; the program is unchanged."""
    import fluidcompat as fluid

    x = fluid.data("x", [None, 3], "float32")
    h = fluid.layers.fc(x, 2)
    loss = fluid.layers.mean(h)
    h._set_error_clip(0.5)
    before = [op.type for op in fluid.default_main_program().global_block().ops]
    with pytest.raises(TypeError, match=rf"error_clip should be an instance of BaseErrorClipAttr.*'{h.name}'"):
        fluid.optimizer.SGD(0.1).minimize(loss)
    assert [op.type for op in fluid.default_main_program().global_block().ops] == before


def test_operator_api_matches_fluid():
    """Operator.attr_type (missing) gives the AttrType fluid 1.8.5 declared for every attribute the
    ops share; op.desc (missing) answers fluid's OpDesc methods (type(), input(), _set_attr ...) on
    the op itself; slot and argument names come in fluid's sorted slot order. Attributes fluid's ops
    carried for MKL-DNN / cuDNN kernels are not kept (fluidcompat has no such kernels); arg_max has
    its ``flatten`` attribute (fluid 1.8.5 loads programs that carry it)."""
    got, want = run_fluidcompat("operator_api.py"), load("operator_api.json")
    assert sorted(got) == sorted(want)
    for key, w in want.items():
        if key != "attr_types":
            assert got[key] == w, key
    for op, types in want["attr_types"].items():
        mine = got["attr_types"][op]
        shared = set(types) & set(mine)
        assert {n: mine[n] for n in shared} == {n: types[n] for n in shared}, op
        assert set(types) - set(mine) <= {"use_mkldnn", "use_cudnn", "use_quantizer", "data_format"}, op
        assert set(mine) - set(types) <= ({"flatten"} if op == "arg_max" else set()), op


def test_var_names_match_fluid():
    """The names of ~150 layers' outputs, with and without name=, and the variables a program and its
    startup program hold match fluid 1.8.5: group_norm / data_norm / spectral_norm /
    teacher_student_sigmoid_loss outputs are _generated_var_N, instance_norm's and lrn's come after
    their statistics, adaptive max pooling is max_pool2d_with_index, rank is a 0-D assign,
    random_crop's seed is the persistable random_crop_seed_N, mse_loss goes through
    square_error_cost, piecewise_decay / linear_lr_warmup write the persistable learning_rate /
    learning_rate_warmup. Departure: those two schedules are arithmetic, not fluid's Switch blocks
    (no host round trip per step), so the temporaries after them are numbered differently."""
    import ast

    with open(os.path.join(GOLDEN, "var_names.txt")) as f:
        want = f.read().strip().splitlines()
    got = run_lines("var_names.py")
    assert len(got) == len(want)
    assert got[:2] == want[:2] and want[0].startswith("With sparse mode")  # printed by nce and hsigmoid
    for g, w in zip(got[:-2], want[:-2]):
        assert g == w or (g.startswith("cosine_decay ") and w.startswith("cosine_decay ")), (g, w)
    assert got[-1] == want[-1]  # the startup program
    mine, theirs = set(ast.literal_eval(got[-2])), set(ast.literal_eval(want[-2]))
    assert all(n.startswith(("_generated_var_", "logical_not_")) for n in theirs - mine), theirs - mine
    assert all(n.startswith(("cast_", "tmp_")) for n in mine - theirs), mine - theirs
    assert {"learning_rate", "learning_rate_warmup", "random_crop_seed_0"} <= mine


def _close(got, want, atol=2e-5, rtol=0.0) -> bool:
    """Same structure, numbers within ``atol + rtol * |want|`` (2e-5)."""
    if isinstance(want, dict):
        return (
            isinstance(got, dict)
            and sorted(got) == sorted(want)
            and all(_close(got[k], want[k], atol, rtol) for k in want)
        )
    if isinstance(want, list):
        return (
            isinstance(got, list) and len(got) == len(want) and all(_close(g, w, atol, rtol) for g, w in zip(got, want))
        )
    if isinstance(want, float):
        return isinstance(got, (int, float)) and abs(got - want) <= atol + rtol * abs(want)
    return got == want


def test_dataset_image_and_flowers_match_fluid():
    """paddle.dataset.image (decoding, resize_short, crops with numpy's seeded generator, flips,
    simple_transform, load_and_transform, batch_images_from_tar) and paddle.dataset.flowers' train /
    test / valid readers (mapped in threads or not, a given mapper, cycle) over stand-in files in
    fluid's cache layout, MAT files read without scipy: the same shapes, labels, crops, batch files
    and values as fluid 1.8.5. OpenCV's bicubic resize rounds a few pixels one step apart from one
    OpenCV release to the next, so values after a resize are compared to within 1 (sums to 0.1%)."""
    got, want = run_fluidcompat("flowers_image.py"), load("flowers_image.json")
    assert sorted(got) == sorted(want)
    resized = ("resize_", "simple_", "load_and_transform", "train_plain", "test_plain", "valid_xmap", "test_xmap")
    for key in want:
        if key.startswith(resized):
            assert _close(got[key], want[key], atol=1.0, rtol=1e-3), key
        else:
            assert got[key] == want[key], key


def test_norm_layers_train_as_fluid():
    """batch_norm (momentum, act, use_global_stats, NHWC, named parameters and statistics),
    inplace_abn (its parameters are inplace_abn_N.*, they were batch_norm_N.*), dropout, layer_norm,
    instance_norm and group_norm: three SGD steps' losses, the persistables after them and the test
    clone's output match fluid 1.8.5. Departure: an is_test batch_norm or dropout in a program that
    trains trains (with the running statistics, as use_global_stats; with dropout's scaling), where
    fluid 1.8.5 failed in the grad op (an is_test dropout's grad op read a Mask nothing made)."""
    got, want = run_fluidcompat("norm_layers.py"), load("norm_layers.json")
    assert sorted(got) == sorted(want)
    for key, w in want.items():
        if key in ("bn_is_test", "dropout_test"):
            assert w == ["error", "EnforceNotMet"]
        else:
            assert _close(got[key], w), key
    assert got["bn_is_test"][0] == got["bn_global"][0][:3]
    x = np.random.RandomState(0).uniform(-1, 2, (4, 3, 5, 5)).astype("float32")
    want_dropout = [float(np.mean(np.square(0.7 * (x + i)))) for i in range(3)]
    np.testing.assert_allclose(got["dropout_test"][0], want_dropout, atol=2e-5)


def test_data_generator_matches_fluid():
    """fluid.incubate.data_generator (missing): a MultiSlotDataGenerator script's slot lines, batches,
    float slots and checks, and a QueueDataset piping its files through it (run with the script's
    interpreter) training to fluid 1.8.5's printed values."""
    with open(os.path.join(GOLDEN, "data_generator.txt")) as f:
        want = f.read().splitlines()
    assert "\n".join(run_lines("data_generator.py")) == "\n".join(want).strip()


def test_a_pipe_command_python_is_fluidcompats(tmp_path):
    """`dataset.set_pipe_command("python gen.py")`, as fluid's examples write it: `python` is the
    interpreter running the job and `import paddle` works in it; a failing command names itself,
    the file and its error."""
    import fluidcompat as fluid

    (tmp_path / "data.txt").write_text("0.5 1 2 3\n2 7\n")
    words = fluid.data("words", [None, 1], "int64", lod_level=1)
    score = fluid.data("score", [None, 1], "float32", lod_level=1)
    label = fluid.data("label", [None, 1], "int64", lod_level=1)
    ds = fluid.DatasetFactory().create_dataset("QueueDataset")
    ds.set_use_var([words, score, label])
    ds.set_filelist([str(tmp_path / "data.txt")])
    ds.set_pipe_command(f"cd {GOLDEN} && python slot_generator.py stdin")
    lines = [text for _, _, text in ds._lines()]
    assert lines == ["1 7 1 2.0 1 0", "3 1 2 3 1 0.5 1 0"]
    ds.set_pipe_command("python -c 'import sys; sys.exit(\"no such slots\")'")
    with pytest.raises(RuntimeError, match=r"the pipe command .* failed on '.*data.txt' \(exit 1\): no such slots"):
        list(ds._lines())


def test_book_datasets_match_fluid():
    """paddle.dataset's movielens, conll05, wmt14 and wmt16 (missing) over small archives in fluid's
    cache layout and file names: the same samples, train/test split, dictionaries and built dict
    files as fluid 1.8.5; paddle.compat and paddle.version (missing) alike. Ids fluid numbered in a
    set's order (varying per process) are compared as the words they stand for."""
    assert run_fluidcompat("book_datasets.py") == load("book_datasets.json")


def test_lod_levels_match_fluid():
    """The lod_level of ~200 layers' outputs built from sequence inputs: fluid 1.8.5 gave an op's main
    output its first input's level (embedding, fc, activations, elementwise, lstm, ...; fluidcompat
    gave 0). Departure: sequence_expand and sequence_slice outputs carry a LoD when run, and say so
    (lod_level 1; fluid said 0)."""
    _same_but(run_fluidcompat("lod_levels.py"), load("lod_levels.json"), {"seq_expand": (0, 1), "seq_slice": (0, 1)})


def test_map_style_dataloader_matches_fluid():
    """fluid.io.Dataset / BatchSampler / DataLoader(dataset, ...) (fluidcompat raised
    NotImplementedError): index batches (shuffled by numpy's generator as fluid did), feed dicts per
    place, return_list, a given batch_sampler, collate_fn, dygraph VarBases, and the losses of a
    small fc trained on them, as fluid 1.8.5 printed them."""
    with open(os.path.join(GOLDEN, "map_dataloader.txt")) as f:
        want = f.read().strip().splitlines()
    assert run_lines("map_dataloader.py", CPU_NUM="1") == want


def test_layers_utils_nest_helpers_match_fluid():
    """fluid.layers.utils (missing: map_structure, flatten, pack_sequence_as, assert_same_structure,
    convert_to_list, ...) over lists, tuples, namedtuples and dicts, with fluid 1.8.5's errors; the
    RNN, decoder and cond layers now share them."""
    assert run_fluidcompat("nest_utils.py") == load("nest_utils.json")


def test_inference_api_matches_fluid():
    """fluid.core's inference API (missing): AnalysisConfig over a model directory and over combined
    files, create_paddle_predictor, run() over PaddleTensors (names, shapes, dtypes, values), the
    zero-copy tensors, NativeConfig and clone(), as fluid 1.8.5 printed them. Departures in the last
    three lines: a missing model is a ValueError naming the file (fluid: EnforceNotMet), run() with
    too few inputs is refused naming the model's inputs (fluid logged an error and returned), and a
    config used twice is a ValueError (fluid: EnforceNotMet)."""
    with open(os.path.join(GOLDEN, "inference_api.txt")) as f:
        want = f.read().strip().splitlines()
    got = run_lines("inference_api.py")
    assert got[:-3] == want[:-3]
    assert want[-3:] == ["EnforceNotMet", "no error", "EnforceNotMet"]
    assert got[-3:] == ["ValueError", "ValueError", "ValueError"]


def test_inference_api_errors_name_the_problem(tmp_path):
    import fluidcompat as fluid
    from fluidcompat.core import AnalysisConfig, PaddleTensor, create_paddle_predictor

    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [None, 2], "float32")
        y = fluid.layers.scale(x, 2.0)
    exe = fluid.Executor(fluid.CPUPlace())
    fluid.io.save_inference_model(str(tmp_path / "m"), ["x"], [y], exe, main_program=main)
    with pytest.raises(ValueError, match=r"Cannot find the inference model file .*missing/__model__"):
        create_paddle_predictor(AnalysisConfig(str(tmp_path / "missing")))
    config = AnalysisConfig(str(tmp_path / "m"))
    pred = create_paddle_predictor(config)
    with pytest.raises(ValueError, match="can only be used for one predictor"):
        create_paddle_predictor(config)
    with pytest.raises(ValueError, match=r"takes 1 inputs \['x'\], received 2 PaddleTensors"):
        pred.run([PaddleTensor(np.ones((1, 2), "float32"))] * 2)
    with pytest.raises(TypeError, match="float32, int64 or int32 data .* Received: float64"):
        PaddleTensor(np.ones((1, 2)))
    with pytest.raises(ValueError, match=r"no data was copied into the inputs \['x'\]"):
        pred.zero_copy_run()
    with pytest.raises(ValueError, match="'z' is not an input of the model; its inputs: \\['x'\\]"):
        pred.get_input_tensor("z")
    named = AnalysisConfig()
    named.switch_specify_input_names(True)
    named.set_model(str(tmp_path / "m"))  # keeps the switches set before it
    with pytest.raises(ValueError, match=r"inputs named \['w'\] are not the model's inputs \['x'\]"):
        create_paddle_predictor(named).run([PaddleTensor(np.ones((1, 2), "float32"), name="w")])
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        s = fluid.data("s", [None, 2], "float32", lod_level=1)
        pooled = fluid.layers.sequence_pool(fluid.layers.scale(s, 2.0), "sum")
        doubled = fluid.layers.scale(s, 2.0)
    fluid.io.save_inference_model(str(tmp_path / "seq"), ["s"], [pooled, doubled], exe, main_program=main)
    pooled, doubled = create_paddle_predictor(AnalysisConfig(str(tmp_path / "seq"))).run(
        [PaddleTensor(np.ones((3, 2), "float32"), lod=[[0, 1, 3]])]
    )
    assert pooled.as_ndarray().tolist() == [[2.0, 2.0], [4.0, 4.0]]
    assert doubled.lod == [[0, 1, 3]] and doubled.shape == [3, 2]


def test_fluid_reads_the_inference_models_fluidcompat_writes(tmp_path):
    """An inference model written by fluidcompat (conv, batch_norm, pool, fc, embedding, dynamic_lstm,
    sequence_pool; combined files) loads and runs in fluid 1.8.5, through load_inference_model and its
    inference API (load_saved.json, recorded there from tests/golden/saved_by_fluidcompat/); fluidcompat
    gives the same outputs, and still writes those files byte for byte. If the bytes change, check the
    new files under fluid 1.8.5 (tools/fluid18 load_saved.py) before recording them again."""
    run_lines("saved_by_fluidcompat.py", SAVE_DIR=str(tmp_path / "m"))
    for name in ("__model__", "__params__"):
        with (
            open(tmp_path / "m" / name, "rb") as got,
            open(os.path.join(GOLDEN, "saved_by_fluidcompat", name), "rb") as want,
        ):
            assert got.read() == want.read(), name
    assert _close(run_fluidcompat("load_saved.py"), load("load_saved.json"))


def test_fluid_evaluator_matches_fluid():
    """fluid.evaluator.ChunkEvaluator / EditDistance (missing; older scripts use them): state
    variable names, per-batch metrics, eval() accumulated since reset(), as fluid 1.8.5 printed."""
    with open(os.path.join(GOLDEN, "evaluator.txt")) as f:
        want = f.read().strip().splitlines()
    assert run_lines("evaluator.py") == want


def test_use_prune_and_program_prune_match_fluid():
    """Executor.run(use_prune=True) was accepted and ignored (a branch whose input was not fed failed);
    now it runs what the fetch list and the optimizer ops need from the fed variables, training as
    fluid 1.8.5 did; Program._prune / _prune_with_input (missing) keep fluid's ops and variables."""
    with open(os.path.join(GOLDEN, "use_prune.txt")) as f:
        want = f.read().strip().splitlines()
    assert run_lines("use_prune.py") == want


def test_batch_norm_and_layer_norm_arithmetic_is_fluids():
    """batch_norm computes as fluid 1.8.5's CPU kernel did, x * (inv * scale) + (bias - mean * inv *
    scale) with a correctly rounded square root: an is_test batch_norm (a served model's) gives
    fluid's float32 values bit for bit, 4-D and 2-D (fluidcompat's were an ulp off in places), and so
    does a layer_norm over short rows ((x - mean) / sqrt(var + eps) * scale + bias). In training the
    batch statistics are summed in torch's order (within a few ulps of fluid's)."""
    got, want = run_fluidcompat("norm_arith.py"), load("norm_arith.json")
    for key in ("test_4d", "test_2d", "layer_norm"):
        assert got[key] == want[key], key
    for key in ("train_4d", "train_2d"):
        np.testing.assert_allclose(got[key], want[key], rtol=2e-6, atol=1e-6, err_msg=key)


def test_resize_sizes_given_when_run_match_fluid():
    """image_resize with ``scale`` a Variable, ``out_shape`` holding Variables (SizeTensor) or being
    one: shapes when built and values as fluid 1.8.5's; the refusals (a BILINEAR / NEAREST input not
    4-D, TRILINEAR not 5-D, a scale not above 0, no size, an out_shape of the wrong type) with its
    messages. fluidcompat failed on a Variable scale or size (float() / int() of a Variable)."""
    got, want = run_fluidcompat("resize_inputs.py"), load("resize_inputs.json")
    assert len(want["values"]) == 7 and len(want["errors"]) == 7
    assert _close(got, want)


def test_variable_arguments_match_fluid():
    """27 layers given Variables where fluid 1.8 took them for attributes (shape lists holding
    Variables, Variable starts / ends / strides / offsets / k / factor / scale / depth / axes /
    sections): shapes when built and values as fluid 1.8.5's. fill_constant with a shape list holding
    a Variable said -1 for the sizes given as numbers too. Departure: topk with a Variable k, where
    fluid's shape said the last size was 1 (its attribute k's default); fluidcompat's says -1."""
    want = load("var_args.json")
    topk = ([[2, 3, 1], want["topk_var"][1]], [[2, 3, -1], want["topk_var"][1]])
    assert len(want) == 27
    _same_but(run_fluidcompat("var_args.py"), want, {"topk_var": topk})


def test_loaded_inference_model_keeps_its_feed_and_fetch_ops():
    """load_inference_model's program holds the saved feed / fetch ops and holder variables, as fluid's
    did (fluidcompat dropped them), and so does its clone; a program parsed from the saved __model__
    runs (it failed: 'op 0 (feed) has no kernel'); a loaded program saved again swaps its feed / fetch
    ops for new ones. Departures: fluid refused fetch lists other than the saved targets as Variables
    (an intermediate variable, a name, none); fluidcompat runs them. A missing feed: fluid's
    "'feed_targets' does not have x variable", fluidcompat's names the variable and the op reading it."""
    got, want = run_fluidcompat("inference_io_ops.py"), load("inference_io_ops.json")
    refused = (
        ["AttributeError", "AttributeError", "Exception", "Exception"],
        [None, None, None, "UninitializedVariableError"],
    )
    _same_but(got, want, {"refused": refused})


def test_data_parallel_on_cpu_num_places_matches_fluid():
    """with_data_parallel with CPU_NUM=2 in one process: fluid's parallel executor split the batch over
    the two places (ceil(batch / 2) rows or sequences each, one dict per place for a list), averaged the
    gradients and returned every fetch per place, concatenated (fluidcompat ran the whole batch as one
    device: a loss of shape [1] where fluid gave [2], batch_norm over the whole batch). Values, shapes,
    LoDs and per-place moving statistics as fluid's; refusals with fluid's words (ValueError for its
    EnforceNotMet, without the C++ location)."""
    got, want = run_fluidcompat("data_parallel_cpu.py"), load("data_parallel_cpu.json")
    fluid_refused = want.pop("refused")
    assert _close({k: v for k, v in got.items() if k != "refused"}, want)
    ours = got["refused"]
    for (ftype, fmessage), (otype, omessage) in zip(fluid_refused, ours):
        core = fmessage.split("Error: ", 1)[-1].split(" at (/paddle")[0].split("\n  [Hint")[0]
        assert (otype, omessage) == ({"EnforceNotMet": "ValueError"}.get(ftype, ftype), core)
    assert len(ours) == len(fluid_refused) == 4


def test_batch_norm_with_one_value_per_channel_matches_fluid():
    """Training batch_norm over one value per channel ([1, C] and [1, C, 1, 1]): fluid 1.8 gave Y = X, kept
    the moving statistics, saved zeros, and X@GRAD = Y@GRAD with zero Scale / Bias gradients
    (fluidcompat normalized the value to 0 and moved the statistics)."""
    assert run_fluidcompat("batch_norm_one_value.py") == load("batch_norm_one_value.json")


def test_data_loaders_feed_each_place_its_own_batch_as_fluid():
    """DataLoader.from_generator with places=cpu_places() on CPU_NUM=2: each step one batch per place
    (fluidcompat gave one dict a step, which a data-parallel run on two places refuses), the tail
    shorter without drop_last; a non-iterable loader's read op gives each place its own batch. The
    losses and predictions of two passes as fluid's (within 2e-5: sgd's update rounds once, fluid's
    twice)."""
    assert _close(run_fluidcompat("data_parallel_loaders.py"), load("data_parallel_loaders.json"))


def test_feed_parallel_and_decorate_reader_match_fluid():
    """fluid 1.8's docs examples of DataFeeder.feed_parallel and decorate_reader(multi_devices=True) on
    lists of CPU places (fluidcompat fed one place and refused multi_devices): per-place dicts, the
    programs' outputs concatenated over the places, a dropped short tail, and fluid's refusals."""
    assert run_fluidcompat("feed_parallel.py") == load("feed_parallel.json")


def test_deepfm_ctr_trains_as_fluid():
    """A DeepFM click-through model with dense and sparse embeddings (padding_idx, an L1-regularised
    table) under Adam, lazy Adam, SGD and Adagrad: losses, auc, predictions and parameters match
    fluid 1.8.5. Departure: a sparse table leaves its padding row as it was, as the dense one does and
    as fluid's docs say; fluid 1.8.5's sparse gradient carried the padding positions' gradient into
    that row (the only values that differ)."""
    got, want = run_fluidcompat("deepfm_ctr.py"), load("deepfm_ctr.json")
    assert sorted(got) == sorted(want) and len(want) == 8
    for key in want:
        *steps, params = want[key]
        assert _close(got[key][:-1], steps), key
        mine = got[key][-1]
        assert sorted(mine) == sorted(params)
        for name, (rest, row0) in params.items():
            assert _close(mine[name][0], rest), (key, name)
            if key.startswith("False") or not name.startswith("embedding"):
                assert _close(mine[name][1], row0), (key, name)
            else:  # the padding row: as the dense run left it (fluid's sparse run moved it)
                assert mine[name][1] == got[key.replace("True", "False")][-1][name][1], (key, name)
                assert not _close(mine[name][1], row0), (key, name)


def test_backward_differentiates_the_ops_fluid_did():
    """A DQN learner's target chain with only data behind it still gets the grad ops of its
    non-stop-gradient part (fluidcompat left them out), trained with RMSProp, global-norm clipping,
    a parameter_list and a target network synced by assign; fluid.gradients() differentiates only the
    ops depending on its inputs (fluidcompat differentiated every branch, and a second call then
    renamed w2@GRAD): op lists, gradient names and values as fluid 1.8.5."""
    got, want = run_fluidcompat("backward_paths.py"), load("backward_paths.json")
    assert _close(got, want)


def test_segmentation_trains_as_fluid():
    """A segmentation net (batch_norm, resize_bilinear, concat; Momentum, L2 decay, polynomial_decay)
    trains as fluid 1.8.5 did; mean_iou counts a label outside num_classes (255, ignored) nowhere, with
    fluid's in-range counts (it failed on the size of a bincount). Departure: rows whose label is
    softmax_with_cross_entropy's ignore_index get no gradient, as fluid's docs say; fluid 1.8.5's CPU
    kernel sent them the softmax (so the ignored case is compared at its first step only)."""
    got, want = run_fluidcompat("segmentation.py"), load("segmentation.json")
    assert sorted(got) == sorted(want)
    assert _close(got["in_range"], want["in_range"]) and _close(got["ignored_first_step"], want["ignored_first_step"])
    (loss, grad), (want_loss, want_grad) = got["ignore_grad"], want["ignore_grad"]
    assert _close(loss, want_loss)
    for row, (label, g, w) in enumerate(zip([0, 255, 3, 1, 255, 2], grad, want_grad)):
        if label == 255:
            assert g == [0.0] * 4 and abs(sum(w) - 1.0) < 1e-3, row  # fluid's: the softmax
        else:
            assert _close(g, w), row


def test_dygraph_groupnorm_checkpoint_of_fluid_loads():
    """A fluid 1.8.5 dygraph checkpoint (parameters and Adam state) of conv + GroupNorm with default
    attributes + Linear loads (GroupNorm made a scale and a bias fluid's had not, so set_dict and the
    optimizer's refused it): the same output and, after one more step, the same fc parameters.
    Departure: the conv's gradient through group_norm is the correct one (fluid 1.8.5's
    group_norm_grad without a scale disagrees with finite differences), so its parameters differ."""
    got, want = run_fluidcompat("dygraph_groupnorm_load.py"), load("dygraph_groupnorm_load.json")
    assert got["saved"] == want["saved"] and _close(got["output"], want["output"])
    for name in ("fc.bias", "fc.weight"):
        assert _close(got["after_step"][name], want["after_step"][name]), name
    for name in ("conv.bias", "conv.weight"):
        assert not _close(got["after_step"][name], want["after_step"][name], atol=1e-3), name


def test_py_reader_api_matches_fluid():
    """layers.py_reader + read_file fed by decorate_paddle_reader over two epochs (start /
    EOFException / reset), and create_py_reader_by_data + decorate_tensor_provider: shapes, losses and
    values as fluid 1.8.5."""
    assert _close(run_fluidcompat("py_reader_api.py"), load("py_reader_api.json"))


def test_conv_and_pool_windows_at_the_edge_match_fluid():
    """A pool2d / conv2d window reaching past the padded input where fluid's C++ division still gives
    one output (fluidcompat inferred 0 with Python's, and torch refused the conv's filter), and fluid's
    refusals of an output size below 1 when built (pool2d, pool3d, conv2d; fluidcompat built empty
    outputs) and when run (an input size known only then): values and fluid's messages."""
    got, want = run_fluidcompat("conv_pool_edges.py"), load("conv_pool_edges.json")
    assert got["shapes"] == want["shapes"] and _close(got["vals"], want["vals"])
    for g, w in [(got["build"][k], want["build"][k]) for k in want["build"]] + [(got["run"], want["run"])]:
        assert w.split(": ", 1)[1] in g, (g, w)


def test_grad_ops_of_seventy_layers_are_fluids():
    """The grad ops fluid 1.8.5 appended for 73 layers, and the gradient each gives a parameter: split
    is differentiated by a concat, flip by a flip, cumsum by a cumsum the other way (fluidcompat
    appended split_grad, flip_grad, cumsum_grad), a piece of split / unstack the loss does not use gets
    a fill_zeros_like first, crop is op crop, roll is followed by fluid's reshape2, a mask cast from a
    comparison gets fluid's cast of its gradient back to bool. Departure: the
    replaced row of scatter's X gets no gradient (fluid 1.8.5 passed it through)."""
    got, want = run_fluidcompat("grad_op_types.py"), load("grad_op_types.json")
    assert sorted(got) == sorted(want) and len(want) == 73
    for name in want:
        assert got[name][0] == want[name][0], (name, got[name][0], want[name][0])
        if name == "scatter":  # row 1 is replaced by row 0: its gradient is 0 (fluid's: 1/24)
            g, w = got[name][1], want[name][1]
            assert g[6:12] == [0.0] * 6 and _close(w[6:12], [0.04167] * 6)
            assert _close(g[:6] + g[12:], w[:6] + w[12:])
        else:
            assert _close(got[name][1], want[name][1]), name


def test_deprecated_crop_matches_fluid():
    """layers.crop is op crop (it was crop_tensor) and takes an int Variable's shape, not its values,
    as fluid 1.8.5 did (fluidcompat cropped to the values [7, 7] and failed): values, gradient, ops."""
    assert run_fluidcompat("crop_v1.py") == load("crop_v1.json")


def test_stop_gradient_flags_match_fluid():
    """The stop_gradient flag of 239 layers' outputs as fluid 1.8.5 set it (it decides which grad ops
    backward appends): diag and range stop gradients; size, isfinite, has_nan, has_inf,
    sampling_id, similarity_focus, chunk_eval, crf_decoding and the random batch-size-like layers do
    not (fluidcompat had it the other way round)."""
    assert run_fluidcompat("stop_gradients.py") == load("stop_gradients.json")


def test_grad_ops_of_a_second_batch_of_layers_are_fluids():
    """grad_op_types' second batch, 64 layers (conv, pool, norms, activations, resizing, losses): the
    grad ops fluid 1.8.5 appended and the gradients. logsumexp is exp, reduce_sum and log as fluid built
    it (it was one logsumexp op); resize_nearest with aligned corners rounds a half up (fluidcompat
    rounded it to even, so a 3 -> 5 upsampling read rows 0 0 1 2 2, fluid's 0 1 1 2 2)."""
    got, want = run_fluidcompat("grad_op_types2.py"), load("grad_op_types2.json")
    assert sorted(got) == sorted(want) and len(want) == 64
    for name in want:
        assert got[name][0] == want[name][0], (name, got[name][0], want[name][0])
        assert _close(got[name][1], want[name][1]), name


def test_grad_ops_of_sequence_layers_are_fluids():
    """grad_op_types' third batch, 27 sequence (LoD) ops, recurrent units, CRF and hsigmoid: the grad
    ops fluid 1.8.5 appended and the gradients. sequence_reverse is differentiated by a
    sequence_reverse, lstm_unit's unused cell gets a fill_zeros_like first (as fluid)."""
    got = json.loads(run_lines("grad_op_types3.py")[-1])
    want = load("grad_op_types3.json")
    assert sorted(got) == sorted(want) and len(want) == 27
    for name in want:
        assert got[name][0] == want[name][0], (name, got[name][0], want[name][0])
        assert _close(got[name][1], want[name][1]), name


def _error_words(found):
    """``found`` with each error's "XxxError: " prefix dropped (fluid's classes are not Python's)."""
    if isinstance(found, dict):
        return {k: _error_words(v) for k, v in found.items()}
    if isinstance(found, list) and len(found) == 2 and found[0] == "error":
        return ["error", [line.partition("rror: ")[2] for line in found[1]]]
    if isinstance(found, list):
        return [_error_words(v) for v in found]
    return found


def test_runtime_lods_match_fluid():
    """The LoD of values when programs run on LoDTensors, as fluid 1.8.5 gave it: ~180 layers of the
    zoo fed sequences (stack and accuracy pass their input's LoD on; scatter, unstack, norm, maxout,
    interpolation, the rank / margin / KL / smooth-L1 losses, nce, gru_unit, lstm_unit and the
    *_batch_size_like ops do not; fluidcompat had it the other way round), and their run-time
    errors word for word (sequence_expand / expand_as / slice, split, one_hot, chunk_eval, crf,
    add_position_encoding, softmax_with_cross_entropy's label rows). A program of fluid.data
    variables (lod_level 0) fed LoDTensors passes the LoD on (fluidcompat dropped it), fed arrays
    next does not. fill_constant_batch_size_like takes a sequence batch's size from its LoD's last
    level; sequence_scatter takes fewer sequences than X has rows; add_position_encoding counts
    positions per LoD sequence (values and gradient)."""
    got, want = run_fluidcompat("runtime_lods.py"), load("runtime_lods.json")
    assert len(want["zoo"]) > 170 and sum(v[0] == "error" for v in want["zoo"].values()) == 11
    assert _error_words(got) == _error_words({k: v for k, v in want.items() if k != "position"}) | {
        "position": _error_words(got["position"])
    }
    assert _close(got["position"], want["position"])


# fluid 1.8.5 ran these and wrote past the tensor or read a transition row that is not there
LOD_OP_ERRORS_DELIBERATE = {
    "scatter_seq": "Ids must hold at most one sequence per row of X (2 rows). Received: 3 sequences",
    "scatter_seq_col": "every id must be in [0, 3) (the width of X)",
    "crf_neg": "tag labels must be in [0, 3). Received: -1",
}


def test_lod_op_errors_match_fluid():
    """Sequence and index ops fed bad LoDTensors or ids fail when run with fluid 1.8.5's words
    (fluidcompat had its own, or none: add_position_encoding took a 3-D LoD input, chunk_eval tags
    out of range, linear_chain_crf raised torch's IndexError, split torch's RuntimeError); what fluid
    accepted, fluidcompat accepts (sequence_scatter's fewer sequences than rows, add_position_encoding
    of [rows, width] LoD sequences, chunk_eval's negative tags), and where fluid wrote out of bounds
    fluidcompat refuses."""
    got, want = run_fluidcompat("lod_op_errors.py"), load("lod_op_errors.json")
    assert sorted(got) == sorted(want) and len(want) == 24
    for key, w in want.items():
        if key in LOD_OP_ERRORS_DELIBERATE:
            assert w is None and got[key][0] == "EnforceNotMet" and LOD_OP_ERRORS_DELIBERATE[key] in got[key][1][0]
        elif w is None or not isinstance(w[1], list):  # ran, or a Python error fluid raised itself
            assert got[key] == w, key
        else:
            assert got[key][0] == w[0] and [x.partition("rror: ")[2] for x in got[key][1]] == [
                x.partition("rror: ")[2] for x in w[1]
            ], key


@pytest.mark.parametrize("chapter", ["book_word2vec", "book_recommender", "book_srl", "book_machine_translation"])
def test_book_chapters_train_as_fluid(chapter):
    """Chapters of the fluid 1.8 book (word2vec, recommender system, label semantic roles, machine
    translation) built as the book builds them, trained a few steps from the same parameters and run
    for test: the same ops, losses, predictions, decoded tags, metrics, beam-searched ids and
    parameters as fluid 1.8.5 (the word2vec inference model's result keeps the fed LoD; the
    translation model's tile_beam_merge_with_batch of [batch, time, width] with the time unknown
    failed to build). Departure: the semantic-role model feeds its LSTMs' cells to fcs, and fluid's
    lstm_grad dropped the cells' gradients (test_rnn_lstm); fluidcompat's full gradient gives other
    steps after the first."""
    got, want = run_fluidcompat(f"{chapter}.py"), load(f"{chapter}.json")
    if chapter == "book_srl":
        assert _close(got["steps"][0], want["steps"][0], atol=1e-4, rtol=1e-4)
        assert [[v[:2] for v in step] for step in got["steps"]] == [[v[:2] for v in step] for step in want["steps"]]
        assert not _close(got["steps"][1][0], want["steps"][1][0], atol=1e-4, rtol=1e-4)  # the departure
        got, want = dict(got, steps=None), dict(want, steps=None)
    assert _close(got, want, atol=1e-4, rtol=1e-4)


# where fluid 1.8.5 failed to differentiate (fluid's error) or had no gradient, fluidcompat has one
GRAD_LODS_DEPARTURES = {
    ("zoo", "split"): "No Input(X) found for Concat operator",  # one piece of a split used
    ("zoo", "unstack"): "Cannot find variable",
    ("zoo", "lstm_unit"): "Input(C@GRAD) should not be null",
    ("zoo", "lstm_unit_h"): "Input(C@GRAD) should not be null",
    ("zoo", "lstm_c"): None,  # the cell's gradient (test_rnn_lstm)
    ("zoo", "lstmp_c"): None,
    ("alone", "split"): "[operator < concat > error]",
    ("alone", "dropout"): "[operator < dropout_grad > error]",  # dropout_grad with is_test
    ("alone", "npair"): None,  # fluid asserted while building: expand_times of the batch's -1
}


def test_grad_lods_match_fluid():
    """The LoD of each input's gradient when a program runs on LoDTensors, as fluid 1.8.5 gave it:
    passed on from the input for most ops, none after convolutions, pools, interpolations,
    instance / group / data norms, cos_sim, nce, scatter, strided_slice, crop_tensor, pad, the
    softmax / sigmoid / focal / KL / smooth-L1 losses and space-to-depth style ops (fluidcompat passed
    it on). Departures: where fluid failed to build or run the gradient, fluidcompat has one."""
    got, want = run_fluidcompat("grad_lods.py"), load("grad_lods.json")
    assert sorted(got) == sorted(want) == ["alone", "zoo"]
    assert len(want["zoo"]) == 175 and len(want["alone"]) == 71
    for part in ("zoo", "alone"):
        assert sorted(got[part]) == sorted(want[part])
        for key, w in want[part].items():
            if (part, key) in GRAD_LODS_DEPARTURES:
                words = GRAD_LODS_DEPARTURES[(part, key)]
                assert w == "none" or w[0] == "error" and (words is None or words in w[2][0]), key
                assert isinstance(got[part][key], dict) and got[part][key], key
            elif (part, key) == ("alone", "affine_ch"):  # both refuse a missing Scale; fluid with an assertion
                assert w[0] == "error" and got[part][key][0] == "error"
            else:
                assert got[part][key] == w, (part, key)


def test_declared_dtypes_match_fluid():
    """edit_distance's and sampling_id's outputs are declared as fluid 1.8.5 declared them (int64;
    sampling_id's ``dtype``, float32 by default: fluidcompat declared what the kernels write, and
    ignored sampling_id's ``dtype``) and hold what fluid's kernels wrote (float32 distances, int64
    ids)."""
    assert run_fluidcompat("declared_dtypes.py") == load("declared_dtypes.json")


def test_seeded_draws_match_fluid():
    """A fixed seed draws what fluid 1.8.5's CPU kernels drew (std::minstd_rand through libstdc++'s
    distributions, NOTE: [Seeded draws]): uniform / gaussian / truncated gaussian values in float32
    and float64, past a chunk's end, their batch_size_like forms, dropout masks, every initializer
    under Program.random_seed, and a seeded MLP with dropout trains to fluid's losses and parameters
    without any set by hand, as does a transformer with seeded dropout (fluidcompat drew torch's
    numbers), and the book's recognize-digits conv net and PaddleRec's CTR-DNN from their seeds.
    Departure: layers.uniform_random with
    dtype float64 gives float64 (fluid ignored the dtype and gave float32; its float64 values are
    the initializers')."""
    got, want = run_fluidcompat("seeded_draws.py"), load("seeded_draws.json")
    tf_got, tf_want = run_fluidcompat("transformer_dropout.py"), load("transformer_dropout.json")
    assert _close(tf_got, tf_want, atol=1e-4, rtol=1e-4)  # (a transformer with seeded dropout)
    digits_got, digits_want = run_fluidcompat("book_digits_seeded.py"), load("book_digits_seeded.json")
    assert _close(digits_got, digits_want, atol=1e-4, rtol=1e-4)  # (the book's conv net from its seed)
    ctr_got, ctr_want = run_fluidcompat("ctr_dnn_seeded.py"), load("ctr_dnn_seeded.json")
    assert _close(ctr_got, ctr_want, atol=1e-4, rtol=1e-4)  # (PaddleRec's CTR-DNN from its seed)
    assert want["layer_u64"][1] == "float32" and got["layer_u64"][1] == "float64"
    got.pop("layer_u64"), want.pop("layer_u64")
    assert sorted(got) == sorted(want)
    # float32 normals: torch's log / sqrt may round one unit in the last place off glibc's
    assert _close(got, want, atol=2e-6, rtol=2e-6)


def test_nce_samplers_match_fluid():
    """nce with a seed draws fluid 1.8.5's negatives for the uniform, log-uniform and custom
    samplers, run after run, and costs them as fluid (the log-uniform probabilities over
    log(classes)); a custom distribution is three parameters the startup program fills (alias
    tables made as fluid made them) and the op's inputs, as in fluid (fluidcompat kept it in an
    attribute and drew torch's negatives). sampled_softmax_with_cross_entropy draws one set of
    distinct classes for the whole batch, as fluid (fluidcompat drew one per row), with fluid's
    expected-count probabilities."""
    got, want = run_fluidcompat("nce_samplers.py"), load("nce_samplers.json")
    assert want["custom_dist_params"][2:] == [["nce_2.w_1", [10]], ["nce_2.w_2", [10]], ["nce_2.w_3", [10]]]
    assert _close(got, want, atol=2e-5)


ZOO_DRAWS_AFRESH = {"dropout", "dropout_ui", "urbsl", "grbsl", "sampling_id", "sampled", "nce"}


def test_zoo_values_match_fluid():
    """~170 layers of the layer zoo (activations, elementwise, sequence, RNN, CRF, detection,
    normalization, pooling, losses, ...) run on LoD sequences with the same parameters give fluid
    1.8.5's values: shapes, leading values and sums. Unseeded random layers are left out (they draw
    afresh: test_seeded_draws compares their seeded forms)."""
    got, want = run_fluidcompat("zoo_values.py"), load("zoo_values.json")
    assert sorted(got) == sorted(want) and len(want) > 170
    for key in ZOO_DRAWS_AFRESH:
        assert got[key][0] == want[key][0], key  # the same shape

    def kept(found):  # (NaN where both have one: log / sqrt of negatives)
        return {k: _nan_named(v) for k, v in found.items() if k not in ZOO_DRAWS_AFRESH}

    assert _close(kept(got), kept(want), atol=2e-4, rtol=1e-4)


def _nan_named(value):
    """``value`` with each NaN made the string "nan" (so that two NaNs compare equal)."""
    if isinstance(value, list):
        return [_nan_named(v) for v in value]
    return "nan" if isinstance(value, float) and value != value else value


# fluidcompat's gradient where fluid 1.8.5's was not its forward's (checked against finite
# differences in test_grads) or where fluid failed to differentiate
ZOO_GRAD_DEPARTURES = {
    "gather": "fluid's gather_grad assigned duplicate indices' gradients instead of adding them",
    "scatter": "fluid passed the gradient through rows the update overwrote",
    "group_norm": "fluid's group_norm_grad without Scale and Bias was off by a constant per group",
    "lstm_c": "fluid's lstm_grad dropped the cell's gradient (test_rnn_lstm)",
    "lstmp_c": "fluid's lstmp_grad dropped the cell's gradient",
    "split": "fluid failed: one piece of a split used",
    "unstack": "fluid failed: one piece of an unstack used",
    "lstm_unit": "fluid failed: Input(C@GRAD) should not be null",
    "lstm_unit_h": "fluid failed: Input(C@GRAD) should not be null",
}


def test_zoo_grads_match_fluid():
    """Each input's gradient through ~160 layers of the layer zoo on LoD sequences, with the same
    parameters, and the gradient slots each grad op writes, as fluid 1.8.5 (log_loss and
    margin_rank_loss gave their labels a gradient fluid did not give). data_norm's grad op also
    wrote the batch statistics in fluid (here the optimizer does). Departures: ZOO_GRAD_DEPARTURES."""
    got, want = run_fluidcompat("zoo_grads.py"), load("zoo_grads.json")
    assert sorted(got) == sorted(want) and len(want) > 150
    for key in ZOO_GRAD_DEPARTURES:
        assert isinstance(got[key], dict) and got[key] != want[key], key
    for key, w in want.items():
        if key in ZOO_GRAD_DEPARTURES:
            continue
        g = dict(got[key])  # (every entry left is a dict: gradients by input, and "grad ops")
        if key == "data_norm":
            ops = [op for op in w["grad ops"] if op[0] != "data_norm_grad"]
            assert [op for op in g.pop("grad ops") if op[0] != "data_norm_grad"] == ops
            w = {k: v for k, v in w.items() if k != "grad ops"}
        g, w = ({k: _nan_named(v) for k, v in d.items()} for d in (g, w))
        assert _close(g, w, atol=2e-4, rtol=1e-4), key


# layers fluid built with int64 inputs that fail later (when run) and fluidcompat refuses at once:
# elementwise ops of int64 and float32, squeezing an axis of size 3, one_hot of [N, 3]
INT64_REFUSED_EARLY = {"elementwise_add", "elementwise_sub", "elementwise_mul", "elementwise_div",
                       "elementwise_max", "elementwise_pow", "squeeze", "one_hot"}  # fmt: skip


def _int64_args_match(got, want):
    """An int64 Variable where a layer wants floats: fluid's TypeError word for word wherever fluid
    checked the data type (fluidcompat's log_softmax and sign did not); a build error wherever
    fluid's shape checks failed (fluidcompat's pad2d said "list index out of range")."""
    assert sorted(got) == sorted(want)
    for key, w in want.items():
        if w is None:
            assert got[key] is None or key in INT64_REFUSED_EARLY, key
        elif w[1].startswith("The data type of '"):
            text = (
                w[1]
                .replace("in cross_entropy2", "in cross_entropy")
                .replace("('float32', 'float64')", "['float32', 'float64']")
            )
            assert got[key] == [w[0], text.strip()] or got[key] == [w[0], text], key
        else:
            assert got[key] is not None, key
    assert got["pad2d"][1].endswith("The size of Input(X)'s dimension should be equal to 4, but received 2.")


def test_layer_arg_types_match_fluid():
    """A numpy array where a layer wants a Variable: wherever fluid 1.8.5 named the argument and
    layer ("The type of 'x' in has_inf must be ..., but received <class 'numpy.ndarray'>."), the same
    error and words, the accepted types named as fluidcompat's classes (concat / sum / sums of a
    list holding an array said "Data Type mismatch", has_inf / has_nan named the op's slot, gelu and
    conv2d_transpose had other words). Where fluid failed otherwise (an assertion of to_variable, an
    AttributeError, the array printed), a TypeError naming the argument."""
    everything, everything_want = run_fluidcompat("layer_arg_types.py"), load("layer_arg_types.json")
    got, want = everything["array"], everything_want["array"]
    assert sorted(got) == sorted(want) and len(want) > 90
    _int64_args_match(everything["int64"], everything_want["int64"])
    for key, w in want.items():
        if w is None:
            assert got[key] is None, key
        elif w[1].startswith("The type of '") and w[1].endswith("but received <class 'numpy.ndarray'>."):
            # (fluid named cross_entropy's op, cross_entropy2: layer_arg_checks' deliberate difference)
            head = w[1].split(" must be ")[0].replace("in cross_entropy2", "in cross_entropy")
            assert got[key][0] == w[0], key
            assert got[key][1].startswith(head + " must be "), key
            assert got[key][1].endswith(", but received <class 'numpy.ndarray'>."), key
        elif key == "l2_normalize":  # (fluid: its axis argument missing, a TypeError too)
            assert got[key][0] == w[0] == "TypeError", key
        elif w[0] not in ("AssertionError", "AttributeError") and not w[1].startswith(" ["):
            assert got[key] == w, key  # fluid's own words (gelu, conv2d_transpose, resize's 4-D check)
        else:
            assert got[key][0] == "TypeError", key
            assert "The type of '" in got[key][1] or "expects Variables" in got[key][1], key


def test_op_attr_names_are_fluids():
    """Every op the layer zoo builds, and every grad op of its outputs, carries no attribute fluid
    1.8.5's op did not (layer_norm / norm / nce had an is_test, layer_norm a use_mkldnn, arg_max /
    arg_min a later Paddle's flatten, swish the slope fluid's layer passed and its op dropped). The
    loss gradient's fill_constant and the scale of a sum's gradient carry their ops' defaults, which
    fluid's backward left unset."""
    got, want = run_fluidcompat("op_attr_names.py"), load("op_attr_names.json")
    assert sorted(got["forward"]) == sorted(want["forward"]) and len(want["forward"]) > 170
    assert sorted(got["backward"]) == sorted(want["backward"]) and len(want["backward"]) > 120
    for part in ("forward", "backward"):
        for op_type, names in want[part].items():
            extra = set(got[part][op_type]) - set(names)
            if part == "backward" and op_type in ("fill_constant", "scale"):
                extra -= {"str_value", "bias", "bias_after_scale"}
            assert not extra, (part, op_type, sorted(extra))
