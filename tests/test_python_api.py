"""fluid 1.8's Python-side API: reader decorators, DataLoader.from_generator, DataFeeder, metrics,
nets, flags, create_lod_tensor, install_check."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

import fluidcompat as fluid
from fluidcompat import reader as R

L = fluid.layers


def counting(n):
    return lambda: iter(range(n))


def test_reader_decorators():
    assert list(R.batch(counting(5), 2)()) == [[0, 1], [2, 3], [4]]
    assert list(R.batch(counting(5), 2, drop_last=True)()) == [[0, 1], [2, 3]]
    with pytest.raises(ValueError, match="batch_size should be a positive integeral value, but got batch_size=0"):
        R.batch(counting(5), 0)
    assert list(R.firstn(counting(10), 3)()) == [0, 1, 2]
    assert list(R.chain(counting(2), counting(3))()) == [0, 1, 0, 1, 2]
    assert list(R.map_readers(lambda a, b: a + b, counting(3), counting(3))()) == [0, 2, 4]
    assert list(R.compose(counting(2), lambda: iter([(5, 6), (7, 8)]))()) == [(0, 5, 6), (1, 7, 8)]
    with pytest.raises(R.ComposeNotAligned, match="outputs of readers are not aligned."):
        list(R.compose(counting(2), counting(3))())
    assert sorted(R.shuffle(counting(20), 7)()) == list(range(20))
    assert list(R.buffered(counting(50), 4)()) == list(range(50))
    assert list(R.xmap_readers(lambda x: x * x, counting(6), 3, 2, order=True)()) == [0, 1, 4, 9, 16, 25]
    assert sorted(R.xmap_readers(lambda x: x * x, counting(6), 3, 2)()) == [0, 1, 4, 9, 16, 25]
    assert sorted(R.multiprocess_reader([counting(3), counting(2)])()) == [0, 0, 1, 1, 2]
    calls = []

    def once():
        calls.append(1)
        return iter([1, 2])

    cached = R.cache(once)
    assert list(cached()) == [1, 2] and list(cached()) == [1, 2] and len(calls) == 1
    assert fluid.io.batch is R.batch


def _linear_program():
    x = fluid.data("x", [None, 3], "float32")
    y = fluid.data("y", [None, 1], "float32")
    pred = L.fc(x, 1, param_attr=fluid.ParamAttr(initializer=fluid.initializer.Constant(0.5)), bias_attr=False)
    return x, y, L.reduce_sum(L.elementwise_sub(pred, y))


def _samples():
    for k in range(5):
        yield np.full(3, k, "float32"), np.array([k], "float32")


def test_data_loader_from_generator_and_data_feeder_feed_the_executor():
    x, y, out = _linear_program()
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(fluid.default_startup_program())
    loader = fluid.io.DataLoader.from_generator(feed_list=[x, y], capacity=4)
    loader.set_sample_generator(_samples, batch_size=2, drop_last=False)
    got = [exe.run(feed=data, fetch_list=[out])[0].item() for data in loader()]
    # per batch: sum_k (1.5 k - k)
    assert got == [0.5, 2.5, 2.0]
    feeder = fluid.DataFeeder(feed_list=[x, "y"], place=fluid.CPUPlace())
    feed = feeder.feed(list(_samples())[:2])
    assert feed["x"].shape() == [2, 3] and np.array(feed["y"]).dtype == np.float32 and feed["x"].lod() == []
    np.testing.assert_allclose(exe.run(feed=feed, fetch_list=[out])[0], [0.5])
    with pytest.raises(ValueError, match=r"The number of fields in data \(1\) does not match len\(feed_list\) \(2\)"):
        feeder.feed([(np.zeros(3),)])
    batches = fluid.io.DataLoader.from_generator(feed_list=[x, y], capacity=2)
    batches.set_batch_generator(lambda: iter([[np.ones((2, 3), "float32"), np.ones((2, 1), "float32")]]))
    assert [sorted(d[0]) for d in batches()] == [["x", "y"]]


def test_metrics():
    acc = fluid.metrics.Accuracy()
    with pytest.raises(ValueError, match="There is no data in Accuracy Metrics"):
        acc.eval()
    acc.update(0.5, 4)
    acc.update(1.0, 4)
    assert acc.eval() == 0.75
    acc.reset()
    # layers.accuracy's fetched value: the mean keeps its dtype and shape, as in fluid 1.8.5
    acc.update(np.array([0.5], "float32"), 6)
    acc.update(np.array([0.25], "float32"), 2)
    got = acc.eval()
    assert isinstance(got, np.ndarray) and got.dtype == np.float32 and got.tolist() == [0.4375]
    # ... and prints as a number, as fluid-era scripts did before numpy 2.4 refused float() of [1] arrays
    assert "%.4f" % got == "0.4375" and float(got) == 0.4375
    with pytest.raises(ValueError, match="The 'weight' can not be negative"):
        acc.update(0.5, -1)
    acc.reset()
    assert acc.weight == 0.0
    p, r = fluid.metrics.Precision(), fluid.metrics.Recall()
    preds, labels = np.array([[0.9], [0.2], [0.7], [0.6]]), np.array([[1], [1], [0], [1]])
    comp = fluid.metrics.CompositeMetric()
    comp.add_metric(p)
    comp.add_metric(r)
    comp.update(preds, labels)
    assert comp.eval() == [2 / 3, 2 / 3]
    chunk = fluid.metrics.ChunkEvaluator()
    chunk.update(4, 5, 2)
    assert chunk.eval() == pytest.approx((0.5, 0.4, 2 * 0.5 * 0.4 / 0.9))
    chunk.update(np.array([4]), np.array([5]), np.array([2]))  # fetched counts: [1] arrays, as fluid's
    assert [v.shape for v in chunk.eval()] == [(1,)] * 3
    assert "%.2f %.2f" % chunk.eval()[:2] == "0.50 0.40"
    ed = fluid.metrics.EditDistance("ed")
    ed.update(np.array([[0.0], [2.0], [1.0]]), 3)
    assert ed.eval() == (1.0, 2 / 3)
    with pytest.raises(ValueError, match="'seq_num' must be a number"):
        ed.update(np.array([[1.0]]), "1")
    auc = fluid.metrics.Auc("auc", num_thresholds=100)
    scores = np.array([0.1, 0.4, 0.35, 0.8])
    auc.update(np.stack([1 - scores, scores], 1), np.array([0, 0, 1, 1]))
    assert auc.eval() == pytest.approx(0.75)  # sklearn's roc_auc_score for these scores
    assert fluid.metrics.MetricBase("m").get_config() == {"name": "m"}


def test_nets_build_and_run():
    img = fluid.data("img", [None, 1, 8, 8], "float32")
    a = fluid.nets.simple_img_conv_pool(img, 4, 3, 2, 2, act="relu")
    b = fluid.nets.img_conv_group(img, [2, 3], 2, conv_with_batchnorm=True, pool_stride=2)
    seq = fluid.data("seq", [None, 5, 8], "float32")
    att = fluid.nets.scaled_dot_product_attention(seq, seq, seq, num_heads=2)
    g = fluid.nets.glu(seq, dim=-1)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(fluid.default_startup_program())
    sv = np.random.RandomState(0).rand(2, 5, 8).astype("float32")
    ra, rb, ratt, rg = exe.run(feed={"img": np.ones((2, 1, 8, 8), "float32"), "seq": sv}, fetch_list=[a, b, att, g])
    assert ra.shape == (2, 4, 3, 3) and rb.shape == (2, 3, 4, 4) and ratt.shape == (2, 5, 8)
    np.testing.assert_allclose(rg, sv[..., :4] / (1 + np.exp(-sv[..., 4:])), rtol=1e-5)

    # with two heads each input first goes through an fc (fluid 1.8): queries', keys', values' in order
    fcs = sorted(
        {p.name.split(".")[0] for p in fluid.default_main_program().all_parameters() if p.name.startswith("fc_")},
        key=lambda n: int(n.split("_")[1]),
    )
    assert len(fcs) == 3

    def project(x, fc):
        w, bias = (np.array(fluid.global_scope().find_var(f"{fc}.{p}_0").get_tensor(), "float64") for p in ("w", "b"))
        return x @ w + bias

    def attention(x):  # two heads of 4
        q, k, v = (project(x, fc).reshape(2, 5, 2, 4).transpose(0, 2, 1, 3) for fc in fcs)
        w = q @ k.transpose(0, 1, 3, 2) / 2.0
        w = np.exp(w - w.max(-1, keepdims=True))
        w /= w.sum(-1, keepdims=True)
        return (w @ v).transpose(0, 2, 1, 3).reshape(2, 5, 8)

    # (float64 reference, an absolute floor: float32 sums differ in the last bits between CPUs)
    np.testing.assert_allclose(ratt, attention(sv.astype("float64")), rtol=1e-5, atol=1e-6)


def test_flags_version_and_retired_helpers(monkeypatch):
    monkeypatch.delenv("FLAGS_check_nan_inf", raising=False)
    assert fluid.get_flags(["FLAGS_check_nan_inf"]) == {"FLAGS_check_nan_inf": False}
    fluid.set_flags({"FLAGS_check_nan_inf": True})
    assert fluid.get_flags("FLAGS_check_nan_inf") == {"FLAGS_check_nan_inf": True}
    assert fluid.flags.CHECK_NAN_INF  # what the executor reads
    fluid.set_flags({"FLAGS_check_nan_inf": False})
    assert not fluid.flags.CHECK_NAN_INF
    monkeypatch.delenv("FLAGS_check_nan_inf")
    with pytest.raises(ValueError, match="Flag FLAGS_nope cannot get its value through this function."):
        fluid.get_flags("FLAGS_nope")
    fluid.require_version("1.7", "1.8.5")
    with pytest.raises(Exception, match="VersionError: PaddlePaddle version >= 2.0 required, but 1.8.5 installed"):
        fluid.require_version("2.0")
    with pytest.warns(UserWarning, match="memory_optimize\\(\\) is deprecated"):
        fluid.memory_optimize(fluid.default_main_program())
    assert fluid.framework.cpu_places is fluid.places.cpu_places


def test_create_lod_tensor_keeps_data_and_lengths():
    t = fluid.create_lod_tensor([[1, 2], [3, 4, 5]], [[2, 3]], fluid.CPUPlace())
    assert t.recursive_sequence_lengths() == [[2, 3]] and t.lod() == [[0, 2, 5]]
    np.testing.assert_array_equal(np.array(t).reshape(-1), [1, 2, 3, 4, 5])
    with pytest.raises(ValueError, match="recursive_seq_lens info is invalid"):
        fluid.create_lod_tensor(np.zeros((4, 1)), [[2, 3]], fluid.CPUPlace())
    r = fluid.create_random_int_lodtensor([[2, 2]], [3], fluid.CPUPlace(), 0, 9)
    arr = np.array(r)
    assert arr.shape == (4, 3) and arr.min() >= 0 and arr.max() <= 9


def test_install_check(capsys):
    fluid.install_check.run_check()
    assert "installed successfully" in capsys.readouterr().out


# w after each of 7 steps of LookaheadOptimizer(SGD(0.1), alpha=0.5, k=3), printed by fluid 1.8.5
LOOKAHEAD_FLUID = [
    [0.3675000071525574, 0.20500001311302185],
    [0.44081249833106995, 0.14737500250339508],
    [0.40680235624313354, 0.2037828266620636],
    [0.4753846526145935, 0.1408710479736328],
    [0.5448309183120728, 0.09912782907485962],
    [0.509330153465271, 0.13581106066703796],
    [0.5752922296524048, 0.0915060043334961],
]


def _lookahead_net(opt):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [None, 2], "float32")
        y = L.fc(
            x, 1, param_attr=fluid.ParamAttr(name="w", initializer=fluid.initializer.Constant(0.3)), bias_attr=False
        )
        loss = L.mean(L.square(y - 1.0))
        opt.minimize(loss)
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    exe.run(startup, scope=scope)
    xv = np.array([[1.0, 2.0], [0.5, -1.0]], "float32")
    return main, [exe.run(main, feed={"x": xv}, fetch_list=["w"], scope=scope)[0].ravel().tolist() for _ in range(7)]


def test_lookahead_matches_fluid_and_recompute_trains_as_its_inner_optimizer():
    main, got = _lookahead_net(fluid.optimizer.LookaheadOptimizer(fluid.optimizer.SGD(0.1), alpha=0.5, k=3))
    np.testing.assert_allclose(got, LOOKAHEAD_FLUID, rtol=1e-6)
    assert [op.type for op in main.global_block().ops][-3:] == ["logical_not", "conditional_block", "conditional_block"]
    recompute = fluid.optimizer.RecomputeOptimizer(fluid.optimizer.SGD(0.1))
    with pytest.raises(ValueError, match="You should call _set_checkpoints first"):
        _lookahead_net(recompute)
    recompute._set_checkpoints([])
    _, plain = _lookahead_net(fluid.optimizer.SGD(0.1))
    assert _lookahead_net(recompute)[1] == plain
    with pytest.raises(ValueError, match="alpha should be larger or equal to 0.0"):
        fluid.optimizer.LookaheadOptimizer(fluid.optimizer.SGD(0.1), alpha=1.5)


def _batches():
    for k in range(3):
        yield [np.full((2, 3), k, "float32"), np.full((2, 1), k, "int64")]


def _passes(exe, start, reset, fetch):
    results = []
    for _ in range(2):
        start()
        try:
            while True:
                results.append(exe.run(fetch_list=[fetch])[0].item())
        except fluid.core.EOFException as e:
            assert str(e) == "There is no next data."
            reset()
    return results


def test_py_reader_feeds_each_run_until_eof():
    reader = L.py_reader(capacity=4, shapes=[(-1, 3), (-1, 1)], dtypes=["float32", "int64"])
    x, y = L.read_file(reader)
    assert (x.name, list(x.shape), y.dtype) == ("read_file_0.tmp_0", [-1, 3], fluid.core.VarDesc.VarType.INT64)
    out = L.reduce_sum(x) + L.cast(L.reduce_sum(y), "float32")
    exe = fluid.Executor(fluid.CPUPlace())
    with pytest.raises(fluid.core.EnforceNotMet, match="The reader 'double_buffer_0' is not started: call start"):
        exe.run(fetch_list=[out])
    reader.decorate_batch_generator(_batches)
    # the values fluid 1.8.5 printed for this program: two passes of 3 batches
    assert _passes(exe, reader.start, reader.reset, out) == [0.0, 8.0, 16.0] * 2
    reader.start()
    with pytest.raises(ValueError, match="is started already: call reset"):
        reader.start()


def test_non_iterable_data_loader_and_create_py_reader_by_data():
    x = fluid.data("x", [None, 3], "float32")
    y = fluid.data("y", [None, 1], "int64")
    loader = fluid.io.DataLoader.from_generator(feed_list=[x, y], capacity=2, iterable=False)
    out = L.reduce_sum(x) + L.cast(L.reduce_sum(y), "float32")
    loader.set_batch_generator(_batches)
    exe = fluid.Executor(fluid.CPUPlace())
    assert _passes(exe, loader.start, loader.reset, out) == [0.0, 8.0, 16.0] * 2
    with pytest.raises(TypeError, match="iterable=False is not iterable"):
        iter(loader)
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        a = fluid.data("a", [None, 2], "float32")
        reader = L.create_py_reader_by_data(capacity=2, feed_list=[a])
        assert L.read_file(L.double_buffer(reader)) is a
        total = L.reduce_sum(a)
    reader.decorate_sample_list_generator(lambda: iter([[np.ones(2, "float32"), np.ones(2, "float32") * 2]]))
    reader.start()
    assert exe.run(main, fetch_list=[total])[0].item() == 6.0


def test_layers_load_reads_a_saved_variable(tmp_path):
    w = L.create_parameter([2, 3], "float32", name="w", default_initializer=fluid.initializer.Constant(1.5))
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(fluid.default_startup_program())
    fluid.io.save_vars(exe, str(tmp_path), vars=[w])
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        v = main.global_block().create_var(name="loaded", shape=[2, 3], dtype="float32")
        L.load(v, str(tmp_path / "w"))
    np.testing.assert_array_equal(exe.run(main, fetch_list=[v])[0], np.full((2, 3), 1.5, "float32"))
    with fluid.program_guard(main, fluid.Program()):
        L.load(v, str(tmp_path / "nope"))
    with pytest.raises(fluid.core.EnforceNotMet, match="load: the file '.*nope' does not exist"):
        exe.run(main, fetch_list=[v])


def test_dpsgd_matches_fluid_and_adds_one_noise_draw():
    def run(sigma, steps):
        main, startup = fluid.Program(), fluid.Program()
        with fluid.program_guard(main, startup):
            x = fluid.data("x", [None, 2], "float32")
            y = L.fc(
                x, 1, param_attr=fluid.ParamAttr(name="w", initializer=fluid.initializer.Constant(0.3)), bias_attr=False
            )
            loss = L.mean(L.square(y - 1.0))
            fluid.optimizer.Dpsgd(learning_rate=0.1, clip=0.5, batch_size=4.0, sigma=sigma).minimize(loss)
        exe = fluid.Executor(fluid.CPUPlace())
        scope = fluid.Scope()
        exe.run(startup, scope=scope)
        xv = np.array([[1.0, 2.0], [0.5, -1.0]], "float32")
        return [exe.run(main, feed={"x": xv}, fetch_list=["w", "w@GRAD"], scope=scope) for _ in range(steps)]

    got = run(0.0, 3)
    # w after each step, printed by fluid 1.8.5 (sigma=0: no noise)
    want = [[0.32896036, 0.25924098], [0.3621264, 0.22182423], [0.39905468, 0.18811513]]
    np.testing.assert_allclose([w.ravel() for w, _ in got], want, rtol=1e-6)
    ((w, g),) = run(2.0, 1)
    clipped = g.ravel() / (np.linalg.norm(g) / 0.5)
    noise = (0.3 - w.ravel()) / 0.1 - clipped  # the noise / batch_size each element got
    assert abs(noise[0] - noise[1]) < 1e-5 and abs(noise[0]) > 0


def test_parallel_executor_runs_the_program_on_one_device():
    x, y, out = _linear_program()
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(fluid.default_startup_program())
    pe = fluid.ParallelExecutor(use_cuda=False, loss_name=out.name)
    feed = {"x": np.ones((2, 3), "float32"), "y": np.zeros((2, 1), "float32")}
    (got,) = pe.run(fetch_list=[out.name], feed=feed)
    np.testing.assert_allclose(got, [3.0])  # 2 rows of 3 * 0.5
    assert pe.device_count == 1
    np.testing.assert_allclose(pe.run([out], feed_dict=feed)[0], [3.0])


def test_sampled_softmax_with_several_true_classes():
    """num_true=2: soft targets of 1/2 on the two true columns (fluid 1.8.5 failed with a shape
    error); loss and gradient against numpy."""
    rng = np.random.RandomState(6)
    z = fluid.data("z", [3, 6], "float32")
    z.stop_gradient = False
    samples = np.array([[2, 1, 4, 0], [0, 4, 5, 1], [5, 3, 2, 2]], "int64")
    probs = rng.uniform(0.1, 0.9, (3, 4)).astype("float32")
    out = L.sampled_softmax_with_cross_entropy(
        z,
        L.assign(np.array([[2, 1], [0, 4], [5, 3]], "int64")),
        num_samples=2,
        num_true=2,
        use_customized_samples=True,
        customized_samples=L.assign(samples),
        customized_probabilities=L.assign(probs),
    )
    (g,) = fluid.gradients([L.reduce_sum(out)], [z])
    zv = rng.uniform(-1, 1, (3, 6)).astype("float32")
    got, gz = fluid.Executor(fluid.CPUPlace()).run(feed={"z": zv}, fetch_list=[out, g])
    picked = np.take_along_axis(zv, samples, 1) - np.log(probs)
    soft = np.exp(picked - picked.max(1, keepdims=True))
    soft /= soft.sum(1, keepdims=True)
    target = np.array([0.5, 0.5, 0.0, 0.0])
    np.testing.assert_allclose(got[:, 0], -(np.log(soft) * target).sum(1), rtol=1e-5)
    want = np.zeros_like(zv)
    for i in range(3):
        np.add.at(want[i], samples[i], soft[i] - target)
    np.testing.assert_allclose(gz, want, rtol=1e-5, atol=1e-6)


def test_multiprocess_reader_reads_in_processes():
    import os

    def pids():
        for _ in range(3):
            yield os.getpid()

    got = list(R.multiprocess_reader([pids, pids])())
    assert len(got) == 6 and os.getpid() not in got and len(set(got)) == 2

    def broken():
        yield 1
        raise ValueError("bad sample")

    with pytest.raises(RuntimeError, match="a reader failed in its process: ValueError: bad sample"):
        list(R.multiprocess_reader([broken])())


def test_fluid_submodules_resolve_as_attributes_in_a_fresh_process():
    """`import paddle.fluid as fluid; fluid.profiler.profiler(...)` works without importing the
    submodule first, as in fluid 1.8 (fluidcompat raised UnsupportedAPIError for fluid.profiler,
    fluid.incubate, fluid.lod_tensor, ...); dir(fluid) lists the names loaded on first use."""
    import subprocess
    import sys

    code = (
        "import fluidcompat as fluid\n"
        "print(fluid.profiler.__name__, fluid.incubate.__name__, fluid.lod_tensor.__name__,"
        " fluid.data_generator.__name__, fluid.fleet.__name__, fluid.parallel_executor.__name__)\n"
        "print(all(n in dir(fluid) for n in ('Executor', 'DataFeeder', 'profiler', 'dygraph', 'Linear')))\n"
        "print(fluid.incubate.fleet.__name__, fluid.layers.utils.__name__, fluid.contrib.reader.__name__)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == [
        "fluidcompat.profiler",
        "fluidcompat.incubate",
        "fluidcompat.lod_tensor",
        "fluidcompat.incubate.data_generator",
        "fluidcompat.incubate.fleet",
        "fluidcompat.parallel_executor",
        "True",
        "fluidcompat.incubate.fleet",
        "fluidcompat.layers.utils",
        "fluidcompat.contrib.reader",
    ]


def test_ploter_keeps_the_curves_and_names_what_is_missing(monkeypatch, capsys):
    """paddle.utils.plot.Ploter (the fluid book's training curves): append / reset as fluid 1.8 kept
    them; without matplotlib plot() says so once (fluid failed at Ploter()) and plot(path) raises
    naming it; DISABLE_PLOT=True draws nothing."""
    from fluidcompat.compat.utils.plot import Ploter

    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    monkeypatch.delenv("DISABLE_PLOT", raising=False)
    plot = Ploter("Train cost", "Test cost")
    for step in range(3):
        plot.append("Train cost", step, 1.0 / (step + 1))
    assert plot.__plot_data__["Train cost"].value == [1.0, 0.5, 1.0 / 3]
    plot.plot()
    plot.plot()
    assert capsys.readouterr().err.count("matplotlib is not installed") == 1
    with pytest.raises(ImportError, match=r"Ploter.plot\('curve.png'\) needs matplotlib"):
        plot.plot("curve.png")
    with pytest.raises(ValueError, match=r"'Valid cost' is not one of the titles \['Train cost', 'Test cost'\]"):
        plot.append("Valid cost", 0, 1.0)
    plot.reset()
    assert plot.__plot_data__["Train cost"].step == []
    monkeypatch.setenv("DISABLE_PLOT", "True")
    Ploter("a").plot("never.png")  # disabled: no error, no file


def test_a_watched_worker_that_fails_is_reported_as_fluid_did():
    """core._set_process_pids / _throw_error_if_process_failed (a DataLoader's worker watch): a worker
    that exits with an error or is killed by a signal raises EnforceNotMet with fluid's FatalError text."""
    import signal
    import time

    from fluidcompat import core

    for how, want in ((lambda: os._exit(3), "exited unexpectedly with code 3"),
                      (lambda: os.kill(os.getpid(), signal.SIGBUS), "killed by signal: Bus error")):  # fmt: skip
        pid = os.fork()
        if pid == 0:
            core._set_process_signal_handler()
            how()
        core._set_process_pids("worker", [pid])
        try:
            with pytest.raises(core.EnforceNotMet, match=want):
                for _ in range(200):
                    core._throw_error_if_process_failed()
                    time.sleep(0.01)
        finally:
            os.waitpid(pid, 0)
            core._erase_process_pids("worker")


def test_check_import_scipy_names_the_dll_problem_on_windows(monkeypatch):
    """paddle.check_import_scipy('nt'): scipy's failed DLL load becomes fluid's ImportError with its hint;
    on other systems, and when scipy loads, nothing."""
    import builtins

    from fluidcompat.compat.check_import_scipy import check_import_scipy

    assert check_import_scipy("posix") is None
    real = builtins.__import__

    def failing(name, *args, **kwargs):
        if name.startswith("scipy"):
            raise ImportError("DLL load failed: the specified module could not be found")
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", failing)
    with pytest.raises(ImportError, match="visual C\\+\\+ Redistributable"):
        check_import_scipy("nt")
