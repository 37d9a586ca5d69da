"""fluid.contrib.mixed_precision: the programs decorate() builds against fluid 1.8.5's (recorded in
tests/golden/mixed_precision.json), a float16 training step against numpy, loss scaling on overflow,
bad input, and the same step on cuda:0 (skipped without CUDA)."""

from __future__ import annotations

import numpy as np
import pytest

import fluidcompat as fluid
from fluidcompat.contrib import mixed_precision as mp
from tests.report_rows import tables
from tests.test_goldens import load, run_fluidcompat

L = fluid.layers


@pytest.fixture(scope="module")
def ours():
    return run_fluidcompat("mixed_precision.py")


@pytest.fixture(scope="module")
def fluid18():
    return load("mixed_precision.json")


def _normal(op):
    """An op [type, inputs, outputs] with conditional_block's var lists as sets (fluid built them from a
    Python set)."""
    kind, ins, outs = op
    if kind == "conditional_block":
        ins = {k: sorted(v) for k, v in ins.items()}
        outs = {k: sorted(v) for k, v in outs.items()}
    return [kind, ins, outs]


def _same_program(got, want):
    """The same ops with the same slots, and the same dtypes (the gradient of a cast of a data
    variable, which nothing reads, included, as fluid 1.8.5 made it)."""
    assert len(got["ops"]) == len(want["ops"])
    for i, (g, w) in enumerate(zip(got["ops"], want["ops"])):
        assert _normal(g) == _normal(w), (i, g, w)
    assert got["dtypes"] == want["dtypes"]


def test_mlp_program_matches_fluid(ours, fluid18):
    """fc + relu + fc + softmax_with_cross_entropy with SGD and dynamic loss scaling: the casts around
    mul and the bias adds, float16 activations, the param-gradient casts moved after the backward pass,
    the unscaling, the finite check, the Switch of the loss-scaling rule and the update ops."""
    _same_program(ours["mlp"], fluid18["mlp"])
    assert ours["mlp"]["names"] == fluid18["mlp"]["names"]


def test_cnn_program_matches_fluid(ours, fluid18):
    """conv2d + batch_norm (only X cast, float32 statistics) + pool2d + fc, a custom white op (tanh), a
    black variable name (its mul stays float32) and static loss scaling with Adam."""
    _same_program(ours["cnn"], fluid18["cnn"])


def test_lists_and_their_errors_match_fluid(ours, fluid18):
    assert ours["lists"] == fluid18["lists"]
    assert ours["overlap_error"].startswith(fluid18["overlap_error"])
    assert "relu" in ours["overlap_error"]


def test_dynamic_loss_scaling_matches_fluid(ours, fluid18):
    """Nine Momentum steps, four with an infinite input: the scaling (x3 after 2 finite steps, x0.1 after
    1 bad one), both counters, and the parameters (gradients zeroed on a bad step) as fluid 1.8.5."""
    assert [op[0] for op in ours["fp32_ops"]] == [op[0] for op in fluid18["fp32_ops"]]
    for step, (g, w) in enumerate(zip(ours["scaling_steps"], fluid18["scaling_steps"])):
        for a, b in zip(g, w):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6, err_msg=f"step {step}")


# -- float16 arithmetic against numpy --------------------------------------------------------------
def _mlp(lr=0.1, scaling=128.0, **kw):
    x = fluid.data("x", [None, 4], "float32")
    y = fluid.data("y", [None, 1], "int64")
    h = L.fc(x, 8, act="relu", param_attr="w1", bias_attr="b1")
    p = L.fc(h, 3, param_attr="w2", bias_attr="b2")
    loss = L.mean(L.softmax_with_cross_entropy(p, y))
    opt = mp.decorate(fluid.optimizer.SGD(lr), init_loss_scaling=scaling, **kw)
    opt.minimize(loss)
    return loss, opt


def _h(a):
    """Round to float16 and back: what a float16 kernel's output holds."""
    return np.asarray(a, np.float32).astype(np.float16).astype(np.float32)


def _numpy_step(xv, yv, w, lr, s):
    """One mixed-precision SGD step in numpy: float16 storage after each op, float32 master weights."""
    w1, b1, w2, b2 = (w[k] for k in ("w1", "b1", "w2", "b2"))
    z1 = _h(_h(_h(xv) @ _h(w1)) + _h(b1))
    h = np.maximum(z1, 0)
    z2 = _h(_h(h @ _h(w2)) + _h(b2))
    e = np.exp(z2 - z2.max(1, keepdims=True))
    soft = e / e.sum(1, keepdims=True)
    n = len(xv)
    loss = -np.log(soft[np.arange(n), yv[:, 0]]).mean()
    d2 = soft.copy()
    d2[np.arange(n), yv[:, 0]] -= 1
    g2 = _h(d2 * (s / n))  # the scaled gradient, cast to float16
    gw2, gb2 = _h(h.T @ g2), _h(g2.sum(0))
    g1 = _h(_h(g2 @ _h(w2).T) * (z1 > 0))
    gw1, gb1 = _h(_h(xv).T @ g1), _h(g1.sum(0))
    new = {k: w[k] - lr * (g / s) for k, g in (("w1", gw1), ("b1", gb1), ("w2", gw2), ("b2", gb2))}
    return loss, new, z1


def _started(seed, **kw):
    """The MLP built and initialised: (loss, optimizer, executor, scope, initial parameters, x, y)."""
    loss, opt = _mlp(**kw)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(fluid.default_startup_program())
    scope = fluid.global_scope()
    w = {k: np.array(scope.find_var(k).get_tensor()) for k in ("w1", "b1", "w2", "b2")}
    rng = np.random.RandomState(seed)
    return loss, opt, exe, scope, w, rng.uniform(-2, 2, (6, 4)).astype("float32"), rng.randint(0, 3, (6, 1))


def test_float16_step_matches_numpy():
    """One step: the loss, the float16 activations and the updated float32 parameters as numpy computes
    them with a float16 rounding after each op."""
    loss, opt, exe, scope, w, xv, yv = _started(0, lr=0.1, scaling=128.0)
    got = exe.run(
        feed={"x": xv, "y": yv},
        fetch_list=[loss, "fc_0.tmp_1", "w1.cast_fp16@GRAD", "w1@GRAD", "w1", "b1", "w2", "b2"],
    )
    want_loss, want, z1 = _numpy_step(xv, yv, w, 0.1, 128.0)
    assert got[1].dtype == np.float16 and got[2].dtype == np.float16 and got[3].dtype == np.float32
    np.testing.assert_allclose(got[0], want_loss, rtol=2e-3)
    np.testing.assert_allclose(got[1].astype(np.float32), z1, rtol=2e-3, atol=2e-3)
    for i, k in enumerate(("w1", "b1", "w2", "b2")):
        assert got[4 + i].dtype == np.float32
        np.testing.assert_allclose(got[4 + i], want[k], rtol=1e-3, atol=1e-4, err_msg=k)
    # the step changed every parameter
    assert all(not np.allclose(got[4 + i], w[k]) for i, k in enumerate(("w1", "b1", "w2", "b2")))


def test_float16_overflow_skips_the_step_and_lowers_the_scaling():
    """A scaling so large that the float16 gradients overflow: the parameters stay as they were (SGD on
    zeroed gradients), and once more than decr_every_n_nan_or_inf (2) bad steps are counted the scaling is
    multiplied by decr_ratio (0.5)."""
    loss, opt, exe, scope, before, xv, yv = _started(
        1, lr=0.1, scaling=2.0**20, decr_every_n_nan_or_inf=2, decr_ratio=0.5
    )
    seen = []
    for _ in range(3):
        got = exe.run(feed={"x": xv, "y": yv}, fetch_list=[opt.get_loss_scaling(), "w1@GRAD"])
        seen.append(float(got[0][0]))
        assert not np.isfinite(got[1]).all()
    assert seen == [2.0**20, 2.0**20, 2.0**19]
    for k, v in before.items():
        np.testing.assert_array_equal(np.array(scope.find_var(k).get_tensor()), v, err_msg=k)


def test_profiler_report_lists_the_casts(capsys, tmp_path):
    """The report of a mixed-precision run counts its cast ops (7 forward and backward, 4 after the
    backward pass, a step) as the docs' XLNet report counts cast, mul and mul_grad."""
    from fluidcompat import profiler

    loss, opt = _mlp()
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(fluid.default_startup_program())
    feed = {"x": np.ones((4, 4), "float32"), "y": np.zeros((4, 1), "int64")}
    with profiler.profiler("CPU", "total", str(tmp_path / "profile")):
        for _ in range(3):
            exe.run(feed=feed, fetch_list=[loss])
    rows, _ = tables(capsys.readouterr().out)[0]
    casts = sum(1 for op in fluid.default_main_program().global_block().ops if op.type == "cast")
    assert casts == 11
    assert rows[("", "thread0::cast")] == 3 * casts
    assert rows[("", "thread0::mul")] == rows[("", "thread0::mul_grad")] == 6


# -- bad input ------------------------------------------------------------------------------------------
def test_overlapping_custom_lists_name_the_op():
    with pytest.raises(ValueError, match=r"Custom white list overlap custom black list: \['mul'\]"):
        mp.AutoMixedPrecisionLists(custom_white_list={"mul", "tanh"}, custom_black_list={"mul"})


def test_decorate_rejects_what_is_not_an_optimizer():
    with pytest.raises(TypeError, match="needs a fluid.optimizer Optimizer"):
        mp.decorate(object())
    with pytest.raises(TypeError, match="amp_lists must be an AutoMixedPrecisionLists"):
        mp.decorate(fluid.optimizer.SGD(0.1), amp_lists={"mul"})


def test_loss_of_another_program_is_refused_and_programs_stay():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [None, 4], "float32")
        loss = L.mean(L.fc(x, 2))
    opt = mp.decorate(fluid.optimizer.SGD(0.1))  # in the default programs, not main
    before = str(main)
    with pytest.raises(ValueError, match=f"loss '{loss.name}' is not in the program"):
        opt.minimize(loss)
    assert str(main) == before


def test_failing_minimize_leaves_the_program_as_it_was():
    x = fluid.data("x", [None, 4], "float32")
    loss = L.mean(L.fc(x, 2))
    opt = mp.decorate(fluid.optimizer.SGD(0.1))
    main = fluid.default_main_program()
    before = str(main)
    with pytest.raises(ValueError, match="no_such_parameter"):
        opt.minimize(loss, parameter_list=["no_such_parameter"])
    assert str(main) == before


@pytest.mark.cuda
def test_float16_step_on_cuda_matches_cpu():
    """The same mixed-precision steps on cuda:0 and on the CPU: losses and parameters agree to float16."""
    results = []
    for place in (fluid.CPUPlace(), fluid.CUDAPlace(0)):
        main, startup = fluid.Program(), fluid.Program()
        with fluid.program_guard(main, startup), fluid.unique_name.guard():
            loss, opt = _mlp()
        scope = fluid.Scope()
        exe = fluid.Executor(place)
        with fluid.scope_guard(scope):
            exe.run(startup)
            if not results:
                init = {k: np.array(scope.find_var(k).get_tensor()) for k in ("w1", "b1", "w2", "b2")}
            else:
                for k, v in init.items():
                    scope.find_var(k).get_tensor().set(v, place)
            rng = np.random.RandomState(0)
            losses = []
            for _ in range(3):
                xv = rng.uniform(-2, 2, (6, 4)).astype("float32")
                yv = rng.randint(0, 3, (6, 1)).astype("int64")
                losses.append(exe.run(main, feed={"x": xv, "y": yv}, fetch_list=[loss])[0])
            results.append((losses, np.array(scope.find_var("w1").get_tensor())))
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=5e-3)
    np.testing.assert_allclose(results[0][1], results[1][1], rtol=5e-3, atol=1e-4)
