"""fluid.contrib's decoupled weight decay, memory_usage, op_freq_statistic and model_stat.summary
against fluid 1.8.5 (tests/golden/contrib_utils.json) and against hand counts."""

from __future__ import annotations

import re

import numpy as np
import pytest

import fluidcompat as fluid
from fluidcompat.contrib import extend_with_decoupled_weight_decay, op_freq_statistic
from tests.test_goldens import load, run_fluidcompat

L = fluid.layers


@pytest.fixture(scope="module")
def ours():
    return run_fluidcompat("contrib_utils.py")


@pytest.fixture(scope="module")
def fluid18():
    return load("contrib_utils.json")


@pytest.mark.parametrize("case", ["adamw", "momentumw"])
def test_decoupled_weight_decay_matches_fluid(ours, fluid18, case):
    """Adam with a float coefficient on every parameter, Momentum with a Variable coefficient on the
    weights only: the ops (products first, then the updates, then the optimizer's) and 4 steps of
    loss and parameters as fluid 1.8.5."""
    got, want = ours[case], fluid18[case]
    assert got["ops"] == want["ops"]
    assert got["str"] == want["str"]
    for step, (g, w) in enumerate(zip(got["steps"], want["steps"])):
        for a, b in zip(g, w):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6, err_msg=f"{case} step {step}")


def test_memory_usage_and_errors_match_fluid(ours, fluid18):
    for g, w in zip(ours["memory"], fluid18["memory"]):
        assert g[2] == w[2]
        np.testing.assert_allclose(g[:2], w[:2], rtol=1e-9)
    assert ours["errors"] == fluid18["errors"]


def _rows(text):
    return [[c.strip() for c in line.strip("|").split("|")] for line in text.splitlines() if line.startswith("|")]


def test_model_summary_matches_fluid_where_fluid_counted_right(ours, fluid18):
    """The table's layout, shapes and counts as fluid 1.8.5 printed them, but for two fluid slips:
    activations' FLOPs counted the unknown batch (-1) and came out negative (here: per sample), and a
    grouped conv's parameters were divided by the groups twice (here: the filter's size)."""
    got, want = _rows(ours["summary"]), _rows(fluid18["summary"])
    assert got[0] == want[0] and len(got) == len(want)
    for g, w in zip(got[1:], want[1:]):
        if w[1] in ("relu", "sigmoid"):
            assert int(w[5]) < 0 and int(g[5]) == -int(w[5]) and g[:5] == w[:5]
        elif w[1] == "conv2d" and w[2] == "(8, 8, 8)":  # groups=2
            assert int(g[4]) == 2 * int(w[4]) and int(g[5]) == 2 * int(w[5]) and g[:4] == w[:4]
        else:
            assert g == w
    # the same rules and widths
    g_lines, w_lines = ours["summary"].splitlines(), fluid18["summary"].splitlines()
    assert [len(x) for x in g_lines[:3]] == [len(x) for x in w_lines[:3]]
    total = sum(int(r[5]) for r in got[1:])
    assert f"Total FLOPs: {total}({total / 1e9:.2f}G)" in ours["summary"]
    assert re.search(r"Total PARAMs: \d+\(\d+\.\d{4}M\)", ours["summary"])
    assert g_lines[-2:] == w_lines[-2:]


def test_op_freq_statistic_counts_ops_and_adjacent_pairs():
    """fluid 1.8.5's version failed on Python 3 (dict.has_key); counted by hand for fc-relu-fc-mean."""
    x = fluid.data("x", [None, 4], "float32")
    loss = L.mean(L.fc(L.fc(x, 3, act="relu"), 2))
    ops, pairs = op_freq_statistic(fluid.default_main_program())
    assert ops == [("mul", 2), ("elementwise_add", 2), ("relu", 1), ("mean", 1)]
    assert pairs == [
        ("mul->elementwise_add", 2), ("elementwise_add->relu", 1), ("relu->mul", 1),
        ("elementwise_add->mean", 1),
    ]  # fmt: skip
    assert loss.name == "mean_0.tmp_0"
    with pytest.raises(TypeError, match="The input type should be Porgram"):
        op_freq_statistic("main")


def test_weight_decay_that_fails_leaves_the_program_as_it_was():
    x = fluid.data("x", [None, 4], "float32")
    loss = L.mean(L.fc(x, 2))
    coeff = L.fill_constant([1], "float64", 0.1)
    opt = extend_with_decoupled_weight_decay(fluid.optimizer.SGD)(coeff, learning_rate=0.1)
    before = str(fluid.default_main_program())
    with pytest.raises(TypeError, match="the type of coeff \\(FP64\\) and parameter 'fc_0.w_0' \\(FP32\\)"):
        opt.minimize(loss)
    assert str(fluid.default_main_program()) == before


def test_distributed_batch_reader_matches_fluid(monkeypatch):
    """Trainer k of n takes every n-th batch from the k-th, drops a last incomplete group and says
    so once per pass; one trainer passes every batch (fluid 1.8.5's output, line for line). A
    trainer id not below the number of trainers is an error naming both."""
    import os

    from tests.test_goldens import GOLDEN, run_lines

    with open(os.path.join(GOLDEN, "dist_reader.txt")) as f:
        want = f.read().strip().splitlines()
    assert run_lines("dist_reader.py") == want
    monkeypatch.setenv("PADDLE_TRAINERS_NUM", "2")
    monkeypatch.setenv("PADDLE_TRAINER_ID", "2")
    with pytest.raises(ValueError, match="PADDLE_TRAINER_ID 2 is not below PADDLE_TRAINERS_NUM 2"):
        fluid.contrib.reader.distributed_batch_reader(lambda: iter([]))


def test_contrib_exports_mixed_precision_and_summary_names():
    """fluid 1.8.5's contrib package re-exported mixed_precision's and model_stat's names: scripts
    call fluid.contrib.decorate(...) and fluid.contrib.summary(program)."""
    from fluidcompat.contrib import mixed_precision, model_stat

    assert fluid.contrib.decorate is mixed_precision.decorate
    assert fluid.contrib.AutoMixedPrecisionLists is mixed_precision.AutoMixedPrecisionLists
    assert fluid.contrib.summary is model_stat.summary
