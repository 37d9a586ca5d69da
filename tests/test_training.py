"""Backward and optimizer building blocks: names, roles, placement, sparse rows, schedules, averaging."""

from __future__ import annotations

import math

import numpy as np
import pytest

import fluidcompat as fluid
from fluidcompat.backward import append_backward
from fluidcompat.dtypes import VarType

L = fluid.layers


def op_types(program=None):
    return [op.type for op in (program or fluid.default_main_program()).global_block().ops]


def regression_net():
    x = fluid.data("x", [None, 13])
    y = fluid.data("y", [None, 1])
    pred = L.fc(x, 1)
    return L.mean(L.square_error_cost(pred, y))


class TestBackwardNames:
    def test_fit_a_line_program_as_fluid_builds_it(self):
        # op order, names and roles recorded from fluid 1.8.5 (spec section 6)
        loss = regression_net()
        ops, params_grads = fluid.optimizer.SGD(0.001).minimize(loss)
        assert op_types() == [
            "mul",
            "elementwise_add",
            "elementwise_sub",
            "square",
            "mean",
            "fill_constant",
            "mean_grad",
            "square_grad",
            "elementwise_sub_grad",
            "elementwise_add_grad",
            "mul_grad",
            "sgd",
            "sgd",
        ]
        assert [(p.name, g.name) for p, g in params_grads] == [
            ("fc_0.w_0", "fc_0.w_0@GRAD"),
            ("fc_0.b_0", "fc_0.b_0@GRAD"),
        ]
        block = fluid.default_main_program().global_block()
        sgds = [op for op in block.ops if op.type == "sgd"]
        assert [op.input("Param") for op in sgds] == [["fc_0.b_0"], ["fc_0.w_0"]]  # sorted by name
        assert all(op.attr("op_role") == 2 for op in sgds)
        assert sgds[0].attr("op_role_var") == ["fc_0.b_0", "fc_0.b_0@GRAD"]
        roles = {op.type: op.attr("op_role") for op in block.ops}
        assert roles["mean"] == 256 and roles["fill_constant"] == 257 and roles["mul_grad"] == 1
        mul_grad = next(op for op in block.ops if op.type == "mul_grad")
        assert mul_grad.output("X@GRAD") == [] and mul_grad.output("Y@GRAD") == ["fc_0.w_0@GRAD"]
        assert not block.has_var("x@GRAD")
        assert [op.output("Out") for op in fluid.default_startup_program().global_block().ops][0] == ["learning_rate_0"]
        assert ops == block.ops[-2:]

    def test_repeated_contributions_are_renamed_and_summed(self):
        x = fluid.data("x", [None, 4])
        h = L.fc(x, 4)
        loss = L.mean(h * 2.0 + h)
        append_backward(loss)
        block = fluid.default_main_program().global_block()
        sums = [op for op in block.ops if op.type == "sum" and op.attr("op_role") == 1]
        assert len(sums) == 1
        assert sums[0].input("X") == ["fc_0.tmp_1@GRAD@RENAME@block0@0", "fc_0.tmp_1@GRAD@RENAME@block0@1"]
        assert sums[0].output("Out") == ["fc_0.tmp_1@GRAD"]

    def test_no_grad_set_and_trainable(self):
        x = fluid.data("x", [None, 4])
        h = L.fc(x, 3, param_attr=fluid.ParamAttr(trainable=False))
        loss = L.mean(L.fc(h, 1))
        pg = append_backward(loss, no_grad_set={"fc_1.b_0"})
        assert [p.name for p, _ in pg] == ["fc_0.b_0", "fc_1.w_0"]  # fc_0.w_0 is not trainable
        assert "mul_grad" in op_types() and not fluid.default_main_program().global_block().has_var("fc_0.w_0@GRAD")

    def test_grad_ops_inherit_op_device(self):
        x = fluid.data("x", [None, 4])
        with fluid.device_guard("cpu"):
            h = L.fc(x, 3)
        with fluid.device_guard("gpu"):
            loss = L.mean(h)
        append_backward(loss)
        devices = {op.type: op.attr("op_device") for op in fluid.default_main_program().global_block().ops}
        assert devices["mul_grad"] == "cpu" and devices["elementwise_add_grad"] == "cpu"
        assert devices["mean_grad"] == "gpu" and devices["fill_constant"] == "gpu"

    def test_loss_must_be_a_single_value(self):
        x = fluid.data("x", [2, 3])
        h = L.fc(x, 2)
        before = str(fluid.default_main_program())
        with pytest.raises(ValueError, match=r"loss.shape should be \(1L,\), but the current loss.shape is \(2, 2\)"):
            fluid.optimizer.SGD(0.1).minimize(h)
        assert str(fluid.default_main_program()) == before
        with pytest.raises(ValueError, match=r"loss must hold a single value.*shape \(2, 2\)"):
            fluid.backward.append_backward(h)  # its own check: a fully known shape of more than one value
        assert str(fluid.default_main_program()) == before

    def test_optimizer_argument_checks(self):
        with pytest.raises(TypeError, match="learning rate should be float or Variable"):
            fluid.optimizer.SGD("0.1")
        with pytest.raises(TypeError, match="'grad_clip' should be an instance of GradientClipBase"):
            fluid.optimizer.SGD(0.1, grad_clip=5.0)


def test_gradients_values():
    x = fluid.data("x", [3], "float64")
    x.stop_gradient = False
    y = L.reduce_sum(x * x * 3.0)
    (g,) = fluid.gradients(y, x)
    v = np.array([1.0, -2.0, 0.5])
    got = fluid.Executor(fluid.CPUPlace()).run(feed={"x": v}, fetch_list=[g])[0]
    np.testing.assert_allclose(got, 6 * v)


def test_random_seed_repeats_initialisation_and_dropout():
    def build_and_run():
        main, startup = fluid.Program(), fluid.Program()
        main.random_seed = startup.random_seed = 90
        with fluid.program_guard(main, startup), fluid.unique_name.guard():
            x = fluid.data("x", [None, 8])
            h = L.dropout(L.fc(x, 8), 0.5)
        scope = fluid.Scope()
        exe = fluid.Executor(fluid.CPUPlace())
        exe.run(startup, scope=scope)
        return exe.run(main, feed={"x": np.ones((4, 8), "float32")}, fetch_list=[h, "fc_0.w_0"], scope=scope)

    a, b = build_and_run(), build_and_run()
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])


@pytest.mark.parametrize("check_nan_inf", [False, True])
def test_sparse_embedding_updates_touched_rows_only(check_nan_inf, monkeypatch):
    """(With FLAGS_check_nan_inf too: the sparse gradient's rows are checked, and pass.)"""
    from fluidcompat.executor import interpreter

    checked = []
    real_check = interpreter._check_nan_inf
    monkeypatch.setattr(
        interpreter, "_check_nan_inf", lambda s, env: checked.append(s.plan.op.type) or real_check(s, env)
    )
    if check_nan_inf:
        monkeypatch.setenv("FLAGS_check_nan_inf", "1")  # read when the Executor is made
    ids = fluid.data("ids", [None, 1], "int64")
    table = np.random.RandomState(0).uniform(-1, 1, (20, 4)).astype("float32")
    emb = fluid.embedding(
        ids,
        [20, 4],
        is_sparse=True,
        param_attr=fluid.ParamAttr(initializer=fluid.initializer.NumpyArrayInitializer(table)),
    )
    loss = L.mean(emb)
    fluid.optimizer.SGD(1.0).minimize(loss)
    block = fluid.default_main_program().global_block()
    assert block.var("embedding_0.w_0@GRAD").type == VarType.SELECTED_ROWS
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(fluid.default_startup_program())
    exe.run(feed={"ids": np.array([[3], [7], [3]])}, fetch_list=[loss])
    w = np.array(fluid.global_scope().find_var("embedding_0.w_0").get_tensor())
    untouched = [i for i in range(20) if i not in (3, 7)]
    np.testing.assert_array_equal(w[untouched], table[untouched])
    np.testing.assert_allclose(w[3], table[3] - 2 / 12)  # two lookups of row 3, each 1/12 of the mean
    np.testing.assert_allclose(w[7], table[7] - 1 / 12)
    assert ("lookup_table_v2_grad" in checked) == check_nan_inf and ("sgd" in checked) == check_nan_inf
    monkeypatch.delenv("FLAGS_check_nan_inf", raising=False)
    fluid.flags.refresh()


SCHEDULES = [
    (
        "exponential_decay",
        lambda: L.exponential_decay(0.1, 3, 0.5, staircase=True),
        lambda s: 0.1 * 0.5 ** math.floor(s / 3),
    ),
    ("natural_exp_decay", lambda: L.natural_exp_decay(0.1, 3, 0.5), lambda s: 0.1 * math.exp(-0.5 * s / 3)),
    ("inverse_time_decay", lambda: L.inverse_time_decay(0.1, 3, 0.5), lambda s: 0.1 / (1 + 0.5 * s / 3)),
    (
        "polynomial_decay",
        lambda: L.polynomial_decay(0.1, 4, 0.01, power=2.0),
        lambda s: (0.1 - 0.01) * (1 - min(s, 4) / 4) ** 2 + 0.01,
    ),
    (
        "polynomial_decay_cycle",
        lambda: L.polynomial_decay(0.1, 4, 0.01, power=1.0, cycle=True),
        lambda s: (0.1 - 0.01) * (1 - s / (4 * max(math.ceil(s / 4), 1))) + 0.01,
    ),
    (
        "piecewise_decay",
        lambda: L.piecewise_decay([2, 5], [1.0, 0.5, 0.1]),
        lambda s: 1.0 if s < 2 else (0.5 if s < 5 else 0.1),
    ),
    ("noam_decay", lambda: L.noam_decay(16, 3), lambda s: 16**-0.5 * min((s + 1) ** -0.5, 3**-1.5 * (s + 1))),
    (
        "cosine_decay",
        lambda: L.cosine_decay(0.1, 2, 5),
        lambda s: 0.1 * 0.5 * (math.cos(math.floor(s / 2) * math.pi / 5) + 1),
    ),
    ("linear_lr_warmup", lambda: L.linear_lr_warmup(0.2, 4, 0.0, 0.1), lambda s: 0.1 * s / 4 if s < 4 else 0.2),
]


@pytest.mark.parametrize("name,build,formula", SCHEDULES, ids=[s[0] for s in SCHEDULES])
def test_learning_rate_schedules_advance_once_per_run(name, build, formula):
    lr = build()
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(fluid.default_startup_program())
    got = [float(exe.run(fetch_list=[lr])[0]) for _ in range(9)]
    np.testing.assert_allclose(got, [formula(s) for s in range(9)], rtol=1e-5, err_msg=name)
    assert op_types()[0] == "increment"


def test_exponential_moving_average_apply_restore():
    x = fluid.data("x", [None, 2])
    w0 = np.array([[1.0], [2.0]], "float32")
    y = L.fc(x, 1, bias_attr=False, param_attr=fluid.ParamAttr(initializer=fluid.initializer.NumpyArrayInitializer(w0)))
    loss = L.mean(y)
    fluid.optimizer.SGD(0.5).minimize(loss)
    ema = fluid.optimizer.ExponentialMovingAverage(0.9)
    ema.update()
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(fluid.default_startup_program())
    feed = {"x": np.ones((1, 2), "float32")}
    history, shadow = [], np.zeros_like(w0)
    for _ in range(3):
        exe.run(feed=feed, fetch_list=[loss])
        w = np.array(fluid.global_scope().find_var("fc_0.w_0").get_tensor())
        history.append(w)
        shadow = 0.9 * shadow + 0.1 * w
    expected = shadow / (1 - 0.9**3)
    with ema.apply(exe):
        np.testing.assert_allclose(
            np.array(fluid.global_scope().find_var("fc_0.w_0").get_tensor()), expected, rtol=1e-5
        )
    np.testing.assert_allclose(np.array(fluid.global_scope().find_var("fc_0.w_0").get_tensor()), history[-1])


def test_exponential_moving_average_applies_the_same_twice_and_names_fluids_variables():
    """fluid 1.8.5 wrote the corrected averages back into the averages, so a second apply corrected them
    again; here apply leaves them as they are. The variables carry fluid's names (checkpoints load)."""
    x = fluid.data("x", [None, 2])
    loss = L.mean(L.fc(x, 1, bias_attr=False))
    fluid.optimizer.SGD(0.5).minimize(loss)
    with pytest.warns(UserWarning, match="thres_steps '@STEP_COUNTER@' is an integer variable"):
        ema = fluid.optimizer.ExponentialMovingAverage(0.9, thres_steps=L.autoincreased_step_counter())
    ema.update()
    persistable = {v.name for v in fluid.default_main_program().list_vars() if v.persistable}
    assert {"@EMA_STEP_COUNTER@", "scheduled_ema_decay_rate", "fc_0.w_0_ema_0"} <= persistable
    assert not any("ema_tmp" in n for n in persistable)  # the backups are the apply program's only
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(fluid.default_startup_program())
    for _ in range(3):
        exe.run(feed={"x": np.ones((1, 2), "float32")}, fetch_list=[loss])
    scope = fluid.global_scope()
    applied = []
    for _ in range(2):
        with ema.apply(exe):
            applied.append(np.array(scope.find_var("fc_0.w_0").get_tensor()))
    np.testing.assert_array_equal(applied[0], applied[1])
    ema_value = np.array(scope.find_var("fc_0.w_0_ema_0").get_tensor())
    np.testing.assert_allclose(applied[0], ema_value / (1 - 0.9**3), rtol=1e-6)


def test_model_average_apply_restore():
    x = fluid.data("x", [None, 2])
    y = L.fc(x, 1, bias_attr=False)
    loss = L.mean(y)
    fluid.optimizer.SGD(0.5).minimize(loss)
    avg = fluid.optimizer.ModelAverage(0.5, min_average_window=2, max_average_window=10)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(fluid.default_startup_program())
    ws = []
    for _ in range(4):
        exe.run(feed={"x": np.ones((1, 2), "float32")}, fetch_list=[loss])
        ws.append(np.array(fluid.global_scope().find_var("fc_0.w_0").get_tensor()))
    with avg.apply(exe):
        applied = np.array(fluid.global_scope().find_var("fc_0.w_0").get_tensor())
    # windows close after 2 and 4 updates (min 2, 0.5 * updates): the last full window is updates 3-4
    np.testing.assert_allclose(applied, (ws[2] + ws[3]) / 2, rtol=1e-5)
    np.testing.assert_allclose(np.array(fluid.global_scope().find_var("fc_0.w_0").get_tensor()), ws[-1])


def test_clone_for_test_after_minimize_does_not_train():
    loss = regression_net()
    fluid.optimizer.SGD(0.1).minimize(loss)
    test = fluid.default_main_program().clone(for_test=True)
    assert "sgd" not in op_types(test) and "mul_grad" not in op_types(test)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(fluid.default_startup_program())
    w = np.array(fluid.global_scope().find_var("fc_0.w_0").get_tensor())
    feed = {"x": np.ones((2, 13), "float32"), "y": np.zeros((2, 1), "float32")}
    a = exe.run(test, feed=feed, fetch_list=[loss])[0]
    b = exe.run(test, feed=feed, fetch_list=[loss])[0]
    assert a == b
    np.testing.assert_array_equal(np.array(fluid.global_scope().find_var("fc_0.w_0").get_tensor()), w)


def test_set_gradient_clip_clips_the_listed_parameters_and_says_fluid_did_not():
    """fluid 1.8.5 clipped nothing when param_list left a parameter out (measured); fluidcompat clips the
    listed ones, with fluid's deprecation caution and a warning naming the difference."""
    x = fluid.data("x", [2, 2], "float32")
    h = L.fc(x, 2, param_attr=fluid.ParamAttr("w1", initializer=fluid.initializer.Constant(1.0)), bias_attr=False)
    y = L.fc(h, 1, param_attr=fluid.ParamAttr("w2", initializer=fluid.initializer.Constant(1.0)), bias_attr=False)
    loss = L.mean(y)
    with pytest.warns(UserWarning, match="Caution! 'set_gradient_clip' is not recommended"):
        fluid.clip.set_gradient_clip(fluid.clip.GradientClipByValue(0.01), param_list=["w1"])
    with pytest.warns(UserWarning, match=r"clipping the gradients of \['w1'\] only"):
        fluid.optimizer.SGD(1.0).minimize(loss)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(fluid.default_startup_program())
    xv = np.array([[1.0, 2.0], [3.0, 4.0]], "float32")
    exe.run(feed={"x": xv}, fetch_list=[loss])
    scope = fluid.global_scope()
    # d loss / d w1[i, j] = mean over rows of x[:, i] (w2 is all ones): 2 and 3, clipped to 0.01
    np.testing.assert_allclose(np.array(scope.find_var("w1").get_tensor()), np.full((2, 2), 0.99), rtol=1e-6)
    # d loss / d w2[j] = mean over rows of h[:, j] = mean of x's row sums = 5, not clipped
    np.testing.assert_allclose(np.array(scope.find_var("w2").get_tensor()), np.full((2, 1), -4.0), rtol=1e-6)
