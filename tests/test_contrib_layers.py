"""fluid.contrib.layers' recurrent units and layers: one step against numpy, fluid 1.8.5's parameter
names, dropout between layers, and bad input (the full layers against fluid 1.8.5: test_goldens)."""

from __future__ import annotations

import numpy as np
import pytest

import fluidcompat as fluid
from fluidcompat.contrib.layers import BasicGRUUnit, BasicLSTMUnit, basic_gru, basic_lstm

L = fluid.layers


def _sigmoid(v):
    return 1 / (1 + np.exp(-v))


def test_units_one_step_against_numpy():
    """BasicLSTMUnit: c' = c sigmoid(f + forget_bias) + sigmoid(i) tanh(j), h' = tanh(c') sigmoid(o) from
    [x, h] W + b; BasicGRUUnit: r, u from [x, h] W0 + b0, m = tanh([x, r h] W1 + b1), h' = u h + (1 - u) m.
    Parameters named {scope}/Basic...Unit_N.w_K / .b_K as fluid 1.8.5 named them."""
    x = fluid.data("x", [None, 3], "float32")
    h = fluid.data("h", [None, 2], "float32")
    c = fluid.data("c", [None, 2], "float32")
    lstm = BasicLSTMUnit("enc", 2, forget_bias=0.5)
    gru = BasicGRUUnit("dec", 2)
    nh, nc = lstm(x, h, c)
    gh = gru(x, h)
    names = sorted(p.name for p in lstm.parameters() + gru.parameters())
    assert names == [
        "dec/BasicGRUUnit_0.b_0", "dec/BasicGRUUnit_0.b_1", "dec/BasicGRUUnit_0.w_0", "dec/BasicGRUUnit_0.w_1",
        "enc/BasicLSTMUnit_0.b_0", "enc/BasicLSTMUnit_0.w_0",
    ]  # fmt: skip
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(fluid.default_startup_program())
    scope = fluid.global_scope()
    rng = np.random.RandomState(0)
    w = {}
    for name in names:
        t = scope.find_var(name).get_tensor()
        w[name] = rng.uniform(-1, 1, np.array(t).shape).astype("float32")
        t.set(w[name], fluid.CPUPlace())
    xv, hv, cv = (rng.uniform(-1, 1, (4, n)).astype("float32") for n in (3, 2, 2))
    got = exe.run(feed={"x": xv, "h": hv, "c": cv}, fetch_list=[nh, nc, gh])
    gates = np.concatenate([xv, hv], 1) @ w["enc/BasicLSTMUnit_0.w_0"] + w["enc/BasicLSTMUnit_0.b_0"]
    i, j, f, o = np.split(gates, 4, axis=1)
    want_c = cv * _sigmoid(f + 0.5) + _sigmoid(i) * np.tanh(j)
    want_h = np.tanh(want_c) * _sigmoid(o)
    ru = _sigmoid(np.concatenate([xv, hv], 1) @ w["dec/BasicGRUUnit_0.w_0"] + w["dec/BasicGRUUnit_0.b_0"])
    r, u = np.split(ru, 2, axis=1)
    m = np.tanh(np.concatenate([xv, r * hv], 1) @ w["dec/BasicGRUUnit_0.w_1"] + w["dec/BasicGRUUnit_0.b_1"])
    for g, want in zip(got, [want_h, want_c, u * hv + (1 - u) * m]):
        np.testing.assert_allclose(g, want, rtol=1e-5, atol=1e-6)


def test_basic_lstm_dropout_between_layers_scales_what_it_keeps():
    """dropout_prob between layers (upscale_in_train): with is_test the program gives the no-dropout
    result; training, the run differs from it and still has the output's shape."""
    x = fluid.data("x", [None, None, 3], "float32")
    out, h, c = basic_lstm(x, None, None, 4, num_layers=2, dropout_prob=0.5)
    plain_prog = fluid.default_main_program().clone(for_test=True)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(fluid.default_startup_program())
    xv = np.random.RandomState(1).uniform(-1, 1, (2, 5, 3)).astype("float32")
    test_out = exe.run(plain_prog, feed={"x": xv}, fetch_list=[out])[0]
    train_out = exe.run(feed={"x": xv}, fetch_list=[out])[0]
    assert test_out.shape == train_out.shape == (2, 5, 4)
    assert not np.allclose(test_out, train_out)
    assert h.shape == c.shape == (2, -1, 4)


def test_bad_input_is_named():
    x = fluid.data("x", [None, 3], "float32")
    with pytest.raises(ValueError, match=r"basic_lstm: input must be 3-D .* received shape \[-1, 3\]"):
        basic_lstm(x, None, None, 4)
    seq = fluid.data("seq", [None, None, 3], "float32")
    h0 = fluid.data("h0", [1, None, 4], "float32")
    with pytest.raises(ValueError, match="basic_lstm: give both init_hidden and init_cell, or neither"):
        basic_lstm(seq, h0, None, 4)
    with pytest.raises(ValueError, match="basic_gru: hidden_size and num_layers must be positive ints, received 4, 0"):
        basic_gru(seq, None, 4, num_layers=0)
    with pytest.raises(TypeError, match="basic_gru: input must be a Variable, received ndarray"):
        basic_gru(np.zeros((2, 3, 3)), None, 4)
    assert not fluid.default_main_program().global_block().all_parameters()
