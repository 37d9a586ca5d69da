"""cond / case / switch_case: fluid 1.8's sub-blocks, values, build errors, placement and the docs' samples."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import fluidcompat as fluid
from fluidcompat import places
from fluidcompat.executor.placement import plan_block
from tests.report_rows import tables

L = fluid.layers
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(script, *args):
    proc = subprocess.run(
        [sys.executable, "-m", "fluidcompat", "run", "--device", "cpu", script, *args],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_matches_fluid():
    """Values, dtypes, output names and every block's op list as fluid 1.8.5 built and ran them."""
    got = json.loads(run(os.path.join(ROOT, "tests", "golden", "control_flow.py")))
    with open(os.path.join(ROOT, "tests", "golden", "control_flow.json")) as f:
        assert got == json.load(f)


def test_cond_runs_only_the_taken_branch():
    x = fluid.data("x", [1])
    out = L.cond(x > 0.0, lambda: L.scale(x, 10.0), lambda: L.scale(x, -1.0))
    exe = fluid.Executor(fluid.CPUPlace())
    assert exe.run(feed={"x": np.array([2.0], "float32")}, fetch_list=[out])[0].tolist() == [20.0]
    assert exe.run(feed={"x": np.array([-3.0], "float32")}, fetch_list=[out])[0].tolist() == [3.0]
    assert [op.type for op in fluid.default_main_program().block(1).ops] == ["scale", "assign"]


def snapshot():
    return str(fluid.default_main_program()), dict(fluid.unique_name.generator.ids)


class TestBuildErrors:
    def test_pred_must_be_a_bool_scalar(self):
        f = L.fill_constant([1], "float32", 1.0)
        b = L.fill_constant([2], "bool", 1.0)
        before = snapshot()
        with pytest.raises(
            TypeError,
            match=r"The data type of 'pred' in fluid.layers.cond must be \['bool'\], but "
            r"received float32",
        ):
            L.cond(f, lambda: f, lambda: f)
        with pytest.raises(ValueError, match=r"must hold a single bool \(shape \[1\]\).*shape \(2,\)"):
            L.cond(b, lambda: f, lambda: f)
        assert snapshot() == before

    def test_mismatched_branches(self):
        p = L.fill_constant([1], "bool", 1.0)
        f = L.fill_constant([1], "float32", 1.0)
        before = snapshot()
        with pytest.raises(ValueError, match="Incompatible return values of true_fn and false_fn in cond"):
            L.cond(p, lambda: (f, f), lambda: [f])
        with pytest.raises(ValueError, match="true_fn returns None while false_fn returns non-None"):
            L.cond(p, lambda: None, lambda: f)
        assert snapshot() == before
        assert fluid.default_main_program().num_blocks == 1
        out = L.cond(p, lambda: f * 2.0, lambda: f)
        assert fluid.Executor(fluid.CPUPlace()).run(fetch_list=[out])[0].tolist() == [2.0]

    def test_case_and_switch_case_arguments(self):
        p = L.fill_constant([1], "bool", 1.0)
        with pytest.raises(TypeError, match=r"The elements' type of 'pred_fn_pairs' in case must be <class 'tuple'>"):
            L.case([[p, lambda: p]])
        with pytest.raises(TypeError, match=r"The default in Op\(case\) must be callable\."):
            L.case([(p, lambda: p)], default=3)
        with pytest.raises(ValueError, match="The key in 'branch_fns' must be unique, but '1' appears more than once"):
            L.switch_case(L.fill_constant([1], "int64", 1), [(1, lambda: p), (1, lambda: p)])


def crop_like_case(guard):
    fn_1 = lambda: L.fill_constant(shape=[1, 2], dtype="float32", value=1)  # noqa: E731
    fn_2 = lambda: L.fill_constant(shape=[2, 2], dtype="int32", value=2)  # noqa: E731
    fn_3 = lambda: L.fill_constant(shape=[3], dtype="int32", value=3)  # noqa: E731
    with fluid.device_guard("cpu" if guard else None):
        x = L.fill_constant(shape=[1], dtype="float32", value=0.3)
        y = L.fill_constant(shape=[1], dtype="float32", value=0.1)
        z = L.fill_constant(shape=[1], dtype="float32", value=0.2)
        p1, p2, p3 = L.less_than(z, x), L.less_than(x, y), L.equal(x, y)
    L.case(pred_fn_pairs=[(p1, fn_1), (p2, fn_2)], default=fn_3)
    L.case(pred_fn_pairs=[(p2, fn_2), (p3, fn_3)])


@pytest.mark.parametrize("guard,copies", [(False, 9), (True, 0)])
def test_guarding_the_predicates_removes_the_copies(monkeypatch, guard, copies):
    monkeypatch.delenv(places.ENV_DEVICE, raising=False)
    crop_like_case(guard)
    plan = plan_block(fluid.default_main_program().global_block(), "cuda:0")
    assert len(plan.copies) == copies
    # conditional_block read its Cond with TensorCopy + Wait (Async), select_input its Mask in a data
    # transform (Sync), as the docs' GPU report names them
    assert {(c.slot, c.kind) for c in plan.copies} <= {
        ("Cond", "GpuMemcpyAsync:GPU->CPU"),
        ("Mask", "GpuMemcpySync:GPU->CPU"),
    }


@pytest.mark.parametrize("name", ["control_flow_case.py", "control_flow_case_guarded.py"])
def test_docs_control_flow_samples(name):
    out = run(os.path.join("samples", name)).splitlines()
    assert out[-2:] == ["[[1. 1.]]", "[3 3 3]"]
    assert out[0].startswith("time cost")
    calls = [(name, n) for (_, name), n in tables("\n".join(out))[-1][0].items()]
    # the same events and counts as fluid 1.8.5's report of this program (tests/golden/profiler)
    assert sorted(calls) == sorted(
        [
            ("thread0::fill_constant", 300),
            ("thread0::conditional_block", 400),
            ("fill_constant", 200),
            ("assign", 200),
            ("thread0::less_than", 200),
            ("thread0::cast", 200),
            ("thread0::logical_not", 200),
            ("thread0::equal", 100),
            ("thread0::fetch", 200),
            ("thread0::select_input", 200),
        ]
    )


@pytest.mark.parametrize("guard", [False, True])
def test_docs_control_flow_on_an_emulated_gpu(guard):
    """Under --device emulated-gpu the report shows the docs' GPU copies of this program (seed 004):
    conditional_block's Cond reads (GpuMemcpyAsync:GPU->CPU, 400), select_input's Mask reads and the
    fetches (GpuMemcpySync:GPU->CPU, 200 each), assign's and select_input's copies on the GPU
    (GpuMemcpyAsync(same_gpu), 200 each); with the predicates guarded to the CPU the fetches' and the
    two on-device copies are left, as in the docs (tests/test_samples.py compares every row)."""
    name = "control_flow_case_guarded.py" if guard else "control_flow_case.py"
    proc = subprocess.run(
        [sys.executable, "-m", "fluidcompat", "run", "--device", "emulated-gpu", os.path.join("samples", name)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr
    [(rows, memcpy)] = tables(proc.stdout)
    copies = {key: n for key, n in rows.items() if key[1].startswith("GpuMemcpy")}
    want = {
        ("thread0::fetch", "GpuMemcpySync:GPU->CPU"): 200,
        ("thread0::conditional_block", "GpuMemcpyAsync(same_gpu):GPU->GPU"): 200,
        ("thread0::select_input", "GpuMemcpyAsync(same_gpu):GPU->GPU"): 200,
    }
    if not guard:
        want[("thread0::conditional_block", "GpuMemcpyAsync:GPU->CPU")] = 400
        want[("thread0::select_input", "GpuMemcpySync:GPU->CPU")] = 200
    assert copies == want
    if guard:
        assert memcpy == [("GpuMemcpy", "600"), ("GpuMemcpyAsync", "400"), ("GpuMemcpySync", "200")]
    else:
        assert memcpy == [("GpuMemcpy", "1200"), ("GpuMemcpyAsync", "800"), ("GpuMemcpySync", "400")]


def counted_loop(guard: bool):
    """x doubled 5 times by a while_loop; with ``guard`` its counter and bound live on the CPU."""
    with fluid.device_guard("cpu" if guard else None):
        i = L.fill_constant([1], "int64", 0)
        n = L.fill_constant([1], "int64", 5)
    x = L.fill_constant([4], "float32", 1.0)

    def body(i, x):
        with fluid.device_guard("cpu" if guard else None):
            j = L.increment(i, 1, in_place=False)
        return [j, x * 2.0]

    return L.while_loop(lambda i, x: L.less_than(i, n), body, [i, x])[1]


@pytest.mark.parametrize("guard", [False, True])
def test_while_loop_condition_reads_on_an_emulated_gpu(monkeypatch, capsys, guard):
    """A while loop whose counter lives on the GPU reads its Condition back to the host before the
    first pass and after each pass: 6 copies a run for 5 passes, in the report under `while`; with
    the counter and bound made under device_guard('cpu') there are none. Values as numpy's."""
    from fluidcompat import profiler

    monkeypatch.setenv(places.ENV_DEVICE, places.EMULATED_GPU)
    out = counted_loop(guard)
    exe = fluid.Executor(fluid.CUDAPlace(0))
    with profiler.profiler("All", "total"):
        for _ in range(3):
            np.testing.assert_array_equal(exe.run(fetch_list=[out])[0], np.full(4, 32.0, "float32"))
    [(rows, _)] = tables(capsys.readouterr().out)
    reads = rows.get(("thread0::while", "GpuMemcpyAsync:GPU->CPU"), 0)
    assert reads == (0 if guard else 3 * 6)
    report = fluid.executor.explain.placement_report(fluid.default_main_program(), fluid.CUDAPlace(0))
    assert ("(after every pass: the body writes it on the GPU)" in report) == (not guard)


def test_while_loop_matches_fluid():
    """while_loop (counter sum, nested cond, gather of rows) and a While block: values, dtypes, names and
    every block's op list as fluid 1.8.5 built and ran them."""
    got = json.loads(run(os.path.join(ROOT, "tests", "golden", "while_loop.py")))
    with open(os.path.join(ROOT, "tests", "golden", "while_loop.json")) as f:
        assert got == json.load(f)


def test_while_loop_feed_and_profiler(capsys):
    """The loop count comes from a feed; each pass's ops nest under the while op in the report."""
    from fluidcompat import profiler

    n = fluid.data("n", [1], "int64")
    i = L.fill_constant([1], "int64", 0)
    x = L.fill_constant([2], "float32", 1.0)
    i, x = L.while_loop(lambda i, x: L.less_than(i, n), lambda i, x: [L.increment(i, 1, False), x * 2.0], [i, x])
    exe = fluid.Executor(fluid.CPUPlace())
    for k in (0, 1, 5):
        got = exe.run(feed={"n": np.array([k], "int64")}, fetch_list=[x, i])
        np.testing.assert_array_equal(got[0], np.full([2], 2.0**k, "float32"))
        assert got[1].tolist() == [k]
    with profiler.profiler("CPU", "total", "", "OpDetail"):
        exe.run(feed={"n": np.array([3], "int64")}, fetch_list=[x])
    text = capsys.readouterr().out
    assert re.search(r"thread0::while +1 ", text)
    assert re.search(r"thread0::while +1 .*\n(  .*\n)*  scale +3 ", text), text


class TestWhileErrors:
    def test_condition_must_be_one_bool(self):
        f = L.fill_constant([1], "float32", 1.0)
        b = L.fill_constant([2], "bool", 1.0)
        before = snapshot()
        with pytest.raises(TypeError, match=r"The data type of 'cond' in fluid.layers.While must be \['bool'\]"):
            L.While(f)
        with pytest.raises(TypeError, match=r"condition expected shape as \[\], but given shape as \[2\]"):
            L.While(b)
        with pytest.raises(TypeError, match=r"the shape of the variable returned by cond should be \[1\]"):
            L.while_loop(lambda v: L.fill_constant([2], "bool", 1.0), lambda v: [v], [f])
        with pytest.raises(TypeError, match="cond in while_loop should be callable"):
            L.while_loop(None, lambda v: [v], [f])
        with pytest.raises(ValueError, match="loop_vars in while_loop should not be empty"):
            L.while_loop(lambda: b, lambda: [], [])
        assert snapshot()[0] == before[0]

    def test_body_must_keep_arity_shape_and_dtype(self):
        i = L.fill_constant([1], "int64", 0)
        x = L.fill_constant([2, 3], "float32", 1.0)
        before = snapshot()
        cond = lambda i, x: L.less_than(i, L.fill_constant([1], "int64", 3))  # noqa: E731
        with pytest.raises(ValueError, match="should return the same arity"):
            L.while_loop(cond, lambda i, x: [i], [i, x])
        with pytest.raises(
            ValueError,
            match=r"changes loop variable 'fill_constant_1.tmp_0': it enters as float32\[2, 3\] and the body "
            r"returns float32\[2, 6\]",
        ):
            L.while_loop(cond, lambda i, x: [L.increment(i, 1, False), L.concat([x, x], axis=1)], [i, x])
        with pytest.raises(ValueError, match=r"enters as float32\[2, 3\] and the body returns float64\[2, 3\]"):
            L.while_loop(cond, lambda i, x: [L.increment(i, 1, False), L.cast(x, "float64")], [i, x])
        assert snapshot() == before
        assert len(fluid.default_main_program().blocks) == 1


def test_gradients_through_cond_case_switch_case_match_fluid():
    """Loss, w@GRAD and x@GRAD for every branch of cond, case (no default), switch_case (with and
    without default), and every block's op types, parent and forward block, as fluid 1.8.5 built and
    ran them (conditional_block_grad over grad blocks, select_output, the renamed sums)."""
    got = json.loads(run(os.path.join(ROOT, "tests", "golden", "control_flow_grads.py")))
    with open(os.path.join(ROOT, "tests", "golden", "control_flow_grads.json")) as f:
        want = json.load(f)
    assert sorted(got) == sorted(want)
    for kind in want:
        assert got[kind]["blocks"] == want[kind]["blocks"], kind
        for g_run, w_run in zip(got[kind]["runs"], want[kind]["runs"]):
            for g, w in zip(g_run, w_run):
                np.testing.assert_allclose(g, w, atol=2e-6, err_msg=kind)


def _numeric_grad(f, a, eps=1e-6):
    g = np.zeros_like(a)
    for idx in np.ndindex(a.shape):
        hi, lo = a.copy(), a.copy()
        hi[idx] += eps
        lo[idx] -= eps
        g[idx] = (f(hi) - f(lo)) / (2 * eps)
    return g


def _loop_np(kind, x, w, steps):
    h, g = x, x * 0.5
    for i in range(steps):
        if kind == "tanh":
            h = np.tanh(h @ w) * h
        elif kind == "nested_cond":
            h = h @ w if i % 2 == 0 else np.tanh(h) + g  # g: carried through unchanged
        elif kind == "two_carried":  # g never reaches the loss directly, only through h
            h, g = h + g * g, g @ w
    return np.mean(h * h)


def _loop_program(kind, steps):
    x = fluid.data("x", [2, 3], "float32")
    x.stop_gradient = False
    w = L.create_parameter([3, 3], "float32", name="w")
    i = L.fill_constant([1], "int64", 0)
    n = L.fill_constant([1], "int64", steps)

    def body(i, h, g):
        if kind == "tanh":
            h = L.tanh(L.matmul(h, w)) * h
        elif kind == "nested_cond":
            even = L.equal(L.elementwise_mod(i, L.fill_constant([1], "int64", 2)), L.fill_constant([1], "int64", 0))
            h = L.cond(even, lambda: L.matmul(h, w), lambda: L.tanh(h) + g)
        else:
            h, g = h + g * g, L.matmul(g, w)
        return [L.increment(i, 1, in_place=False), h, g]

    _, h, _ = L.while_loop(lambda i, h, g: L.less_than(i, n), body, [i, x, L.scale(x, 0.5)])
    loss = L.mean(h * h)
    fluid.backward.append_backward(loss)
    return loss


@pytest.mark.parametrize("kind,steps", [("tanh", 3), ("nested_cond", 4), ("two_carried", 3), ("tanh", 0)])
def test_while_loop_gradients_match_finite_differences(kind, steps):
    """w@GRAD and x@GRAD through while_loop (x enters as the loop variable, w is read each step)
    against numpy finite differences: a nonlinear body, a cond nested in the body, a loop variable
    that reaches the loss only through another one, and a loop that never runs. (fluid 1.8.5 gets
    these wrong: for the first it returns x@GRAD = 0 and a w@GRAD about 100x too small, as its
    while_grad reads each loop variable's last value.)"""
    loss = _loop_program(kind, steps)
    _check_x_and_w_grads(loss, lambda x, w: _loop_np(kind, x, w, steps), seed=3, x_range=0.5, w_range=0.8)


def _check_x_and_w_grads(loss, loss_np, seed, x_range, w_range):
    """Run the default programs with random x [2, 3] and parameter w [3, 3]: the loss against
    ``loss_np(x, w)`` (float64) and w@GRAD, x@GRAD against its finite differences."""
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(fluid.default_startup_program())
    rng = np.random.RandomState(seed)
    xv = rng.uniform(-x_range, x_range, (2, 3)).astype("float32")
    wv = rng.uniform(-w_range, w_range, (3, 3)).astype("float32")
    fluid.global_scope().find_var("w").get_tensor().set(wv, fluid.CPUPlace())
    got_loss, gw, gx = exe.run(feed={"x": xv}, fetch_list=[loss, "w@GRAD", "x@GRAD"])
    x64, w64 = xv.astype("float64"), wv.astype("float64")
    np.testing.assert_allclose(got_loss, [loss_np(x64, w64)], rtol=1e-5)
    np.testing.assert_allclose(gw, _numeric_grad(lambda w_: loss_np(x64, w_), w64), atol=1e-5)
    np.testing.assert_allclose(gx, _numeric_grad(lambda x_: loss_np(x_, w64), x64), atol=1e-5)


def _array_loop_np(kind, x, w, steps):
    h, outs = x, []
    for i in range(steps):
        if kind == "written_only":  # the body writes the array and reads only x and w
            outs.append(np.tanh(x @ w) * (i + 1))
        else:  # "carried": h is carried (assigned back), each step writes a value of it
            h = np.tanh(h @ w) * x
            outs.append(h * 2.0 if kind == "carried_write_after" else h)
    return np.mean(np.concatenate(outs, axis=0) ** 2)


@pytest.mark.parametrize("kind", ["written_only", "carried", "carried_write_after"])
def test_gradients_through_a_while_that_writes_an_array(kind):
    """A While whose body writes one array entry per step (the array is not a loop variable): every
    step's entry sends its gradient back, against finite differences. Before, only the last step's
    entry did (the other steps were seeded with zeros); fluid 1.8.5 gets the first right and fails on
    the carried ones (``Tensor holds no memory``)."""
    steps = 3
    x = fluid.data("x", [2, 3], "float32")
    x.stop_gradient = False
    w = L.create_parameter([3, 3], "float32", name="w")
    i = L.fill_constant([1], "int64", 0)
    n = L.fill_constant([1], "int64", steps)
    arr = L.create_array("float32")
    h = L.assign(x)
    cond = L.less_than(i, n)
    loop = L.While(cond)
    with loop.block():
        if kind == "written_only":
            scale = L.cast(L.increment(i, 1, in_place=False), "float32")
            L.array_write(L.elementwise_mul(L.tanh(L.matmul(x, w)), scale, axis=0), i, arr)
        else:
            h2 = L.tanh(L.matmul(h, w)) * x
            if kind == "carried":
                L.assign(h2, h)
                L.array_write(h2, i, arr)
            else:
                L.array_write(h2 * 2.0, i, arr)
                L.assign(h2, h)
        L.increment(i, 1, in_place=True)
        L.less_than(i, n, cond=cond)
    stacked, _ = L.tensor_array_to_tensor(arr, axis=0)
    loss = L.mean(stacked * stacked)
    fluid.backward.append_backward(loss)
    _check_x_and_w_grads(loss, lambda x, w: _array_loop_np(kind, x, w, steps), seed=5, x_range=0.9, w_range=0.9)


def test_value_a_loop_overwrites_reaches_the_grad_op_before_the_loop():
    """tanh's grad reads its Out, which the loop then overwrites as its loop variable: the grad op
    gets the value tanh wrote (kept before the while op ran), so x@GRAD matches finite differences."""
    x = fluid.data("x", [3], "float32")
    x.stop_gradient = False
    h = L.tanh(x)
    i = L.fill_constant([1], "int64", 0)
    n = L.fill_constant([1], "int64", 2)
    _, out = L.while_loop(lambda i, h: L.less_than(i, n), lambda i, h: [L.increment(i, 1, False), h * h], [i, h])
    loss = L.mean(out)
    fluid.backward.append_backward(loss)
    xv = np.array([0.3, -0.6, 0.9], "float32")
    got_out, gx = fluid.Executor(fluid.CPUPlace()).run(feed={"x": xv}, fetch_list=[out, "x@GRAD"])
    x64 = xv.astype("float64")
    np.testing.assert_allclose(got_out, np.tanh(x64) ** 4, rtol=1e-6)
    np.testing.assert_allclose(gx, _numeric_grad(lambda a: np.mean(np.tanh(a) ** 4), x64), atol=1e-6)


def test_in_place_increment_between_array_writes():
    """``increment(i)`` in place between two array_writes: each write's gradient reads the index it
    wrote at (fluid 1.8.5 read the last one for both)."""
    a = fluid.data("a", [2], "float32")
    b = fluid.data("b", [2], "float32")
    a.stop_gradient = b.stop_gradient = False
    i = L.zeros([1], "int64")
    arr = L.array_write(a, i)
    i = L.increment(i)
    L.array_write(b, i, array=arr)
    j0, j1 = L.fill_constant([1], "int64", 0), L.fill_constant([1], "int64", 1)
    loss = L.mean(L.array_read(arr, j0) * 3.0 + L.array_read(arr, j1) * L.array_read(arr, j1))
    fluid.backward.append_backward(loss)
    av, bv = np.array([1.0, 2.0], "float32"), np.array([0.5, -1.5], "float32")
    ga, gb = fluid.Executor(fluid.CPUPlace()).run(feed={"a": av, "b": bv}, fetch_list=["a@GRAD", "b@GRAD"])
    np.testing.assert_allclose(ga, [1.5, 1.5])
    np.testing.assert_allclose(gb, bv, rtol=1e-6)


def test_counter_loop_does_not_block_backward():
    """A loop over values that need no gradient leaves training alone."""
    x = fluid.data("x", [2], "float32")
    w = L.create_parameter([2], "float32", default_initializer=fluid.initializer.Constant(1.0))
    i = L.fill_constant([1], "int64", 0)
    i = L.while_loop(
        lambda i: L.less_than(i, L.fill_constant([1], "int64", 3)), lambda i: [L.increment(i, 1, False)], [i]
    )[0]
    loss = L.mean(L.elementwise_mul(x, w)) + L.cast(i, "float32")
    fluid.optimizer.SGD(1.0).minimize(loss)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(fluid.default_startup_program())
    out = exe.run(feed={"x": np.array([2.0, 4.0], "float32")}, fetch_list=[loss, w])
    assert out[0].tolist() == [6.0]
    np.testing.assert_allclose(out[1], [0.0, -1.0])


def _all_copies(plan):
    out = list(plan.copies)
    for sub in plan.subplans.values():
        out += _all_copies(sub)
    return out


@pytest.mark.parametrize("guard,copies", [(False, [("GpuMemcpyAsync:GPU->CPU", "Condition")]), (True, [])])
def test_loop_counter_guarded_to_the_cpu_stays_there(monkeypatch, guard, copies):
    """On cuda:0 a while_loop whose counter and bound are made under device_guard('cpu') plans no
    copies: less_than and the sub-block's assigns run where their inputs live, as in fluid."""
    monkeypatch.delenv(places.ENV_DEVICE, raising=False)
    counted_loop(guard)
    plan = plan_block(fluid.default_main_program().global_block(), "cuda:0")
    assert [(c.kind, c.slot) for c in _all_copies(plan)] == copies
    sub = next(iter(plan.subplans.values()))
    want = "cpu" if guard else "cuda:0"
    assert {p.op.type: p.device for p in sub.ops if p.op.type in ("increment", "less_than")} == {
        "increment": want,
        "less_than": want,
    }


def _mem_loop_np(ds):
    """The golden While over arrays: mem[k + 1] = tanh(d[k]) + 0.5 * mem[k]; loss = mean(mem[3]^2)."""
    mem = np.zeros_like(ds[0])
    for d in ds:
        mem = np.tanh(d) + 0.5 * mem
    return np.mean(mem * mem)


def test_tensor_arrays_match_fluid_and_finite_differences():
    """create_array, array_write/read/length, tensor_array_to_tensor (concat and stack on both axes),
    a while_loop summing an array, and While over arrays: names, shapes, dtypes, values and every
    block's op types as fluid 1.8.5 built them. The gradients of While over arrays are checked by
    finite differences instead: fluid 1.8.5 gives every d_k the gradient of the last one."""
    got = json.loads(run(os.path.join(ROOT, "tests", "golden", "tensor_array.py")))
    with open(os.path.join(ROOT, "tests", "golden", "tensor_array.json")) as f:
        want = json.load(f)
    for part in ("ops", "sum"):
        assert got[part] == want[part], part
    g, w = got["while_grad"], want["while_grad"]
    assert g["blocks"][:2] == w["blocks"][:2]
    # fluid's grad block also decrements the in-place loop index; fluidcompat restores each step's values
    assert g["blocks"][2][:3] == [2, 0, 1]
    assert g["blocks"][2][3] == [t for t in w["blocks"][2][3] if t != "increment"]
    assert g["values"][0] == w["values"][0]  # the loss
    ds = [(np.arange(6, dtype="float64").reshape(2, 3) / 10.0 - 0.2 * k) for k in range(3)]
    for k in range(3):
        dtype, grad = g["values"][1 + k]
        assert dtype == "float32"

        def f(dk, k=k):
            return _mem_loop_np([dk if j == k else ds[j] for j in range(3)])

        np.testing.assert_allclose(grad, _numeric_grad(f, ds[k]), atol=2e-6)


def test_array_errors_name_the_problem():
    """Build-time errors carry fluid 1.8.5's texts; reading past the end, which fluid 1.8.5 answered
    with no value at all, names the index and the length; the program is left as it was."""
    f = L.fill_constant([1], "float32", 0.0)
    i32, i64 = L.fill_constant([1], "int32", 0), L.fill_constant([1], "int64", 0)
    before = snapshot()
    with pytest.raises(TypeError, match=re.escape("The type of 'x' in array_write must be")):
        L.array_write(np.zeros(2, "float32"), i64)
    want = "The data type of 'i' in array_write must be ['int64'], but received int32. "
    with pytest.raises(TypeError, match=re.escape(want)):
        L.array_write(f, i32)
    with pytest.raises(TypeError, match="^array should be tensor array vairable$"):
        L.array_read(f, i64)
    with pytest.raises(TypeError, match="^array should be tensor array vairable in array_length Op$"):
        L.array_length(f)
    with pytest.raises(TypeError, match="^array should be tensor array vairable in array_write Op$"):
        L.array_write(f, i64, array=f)
    assert snapshot() == before
    arr = L.array_write(f, i64)
    r = L.array_read(arr, L.fill_constant([1], "int64", 2))
    want = r"read_from_array.*index 2 is out of range: the array X holds 1 elements"
    with pytest.raises(fluid.core.EnforceNotMet, match=want):
        fluid.Executor(fluid.CPUPlace()).run(fetch_list=[r])


def test_array_fetch_and_gradient_of_tensor_array_to_tensor():
    """An array fetches as the list of its elements; tensor_array_to_tensor's gradient splits (or
    unstacks) Out@GRAD back into the elements."""
    x = fluid.data("x", [2, 3], "float32")
    y = fluid.data("y", [2, 2], "float32")
    x.stop_gradient = y.stop_gradient = False
    arr = L.array_write(x, L.fill_constant([1], "int64", 0))
    L.array_write(y, L.fill_constant([1], "int64", 1), array=arr)
    t, idx = L.tensor_array_to_tensor(arr, axis=1)
    w = L.assign(np.arange(10, dtype="float32").reshape(2, 5))
    loss = L.mean(t * w)
    fluid.backward.append_backward(loss)
    xv = np.ones((2, 3), "float32")
    yv = np.full((2, 2), 2.0, "float32")
    a, tv, iv, gx, gy = fluid.Executor(fluid.CPUPlace()).run(
        feed={"x": xv, "y": yv}, fetch_list=[arr, t, idx, "x@GRAD", "y@GRAD"]
    )
    assert isinstance(a, list) and len(a) == 2
    np.testing.assert_array_equal(a[0], xv)
    np.testing.assert_array_equal(a[1], yv)
    np.testing.assert_array_equal(tv, np.concatenate([xv, yv], 1))
    assert iv.dtype == np.int32 and iv.tolist() == [3, 2]
    wv = np.arange(10, dtype="float32").reshape(2, 5) / 10.0
    np.testing.assert_allclose(gx, wv[:, :3], rtol=1e-6)
    np.testing.assert_allclose(gy, wv[:, 3:], rtol=1e-6)


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_gradient_of_stacked_tensor_array_to_tensor(axis):
    """use_stack: OutIndex holds each element's size along axis (fluid 1.8.5's values for 0 and 1; it
    crashed on -1, which stacks last here), and the gradient unstacks Out@GRAD."""
    xs = [fluid.data(f"x{k}", [2, 3], "float32") for k in range(3)]
    arr = L.create_array("float32")
    for k, x in enumerate(xs):
        x.stop_gradient = False
        L.array_write(x, L.fill_constant([1], "int64", k), array=arr)
    t, idx = L.tensor_array_to_tensor(arr, axis=axis, use_stack=True)
    w = np.random.RandomState(0).rand(*np.stack([np.zeros((2, 3))] * 3, axis).shape).astype("float32")
    loss = L.reduce_sum(t * L.assign(w))
    fluid.backward.append_backward(loss)
    feed = {f"x{k}": np.full((2, 3), k, "float32") for k in range(3)}
    got = fluid.Executor(fluid.CPUPlace()).run(feed=feed, fetch_list=[t, idx] + [f"x{k}@GRAD" for k in range(3)])
    np.testing.assert_array_equal(got[0], np.stack([feed[f"x{k}"] for k in range(3)], axis))
    assert got[1].dtype == np.int32 and got[1].tolist() == {0: [2, 2, 2], 1: [3, 3, 3], -1: [1, 1, 1]}[axis]
    for k in range(3):
        np.testing.assert_allclose(got[2 + k], np.take(w, k, axis=axis if axis >= 0 else 2), rtol=1e-6)


def test_switch_ifelse_print_py_func_match_fluid():
    """Switch, IfElse (forward and gradients, rows on both sides, all on one side), Print's text in
    forward and backward, and py_func with and without a backward function: ops with their slots, and
    values, as fluid 1.8.5 built and ran them (golden/switch_ifelse_print.txt)."""
    got = run(os.path.join(ROOT, "tests", "golden", "switch_ifelse_print.py")).strip().splitlines()
    with open(os.path.join(ROOT, "tests", "golden", "switch_ifelse_print.txt")) as f:
        want = f.read().strip().splitlines()
    g_json, w_json = json.loads(got[-1]), json.loads(want[-1])
    assert g_json == w_json

    def text(lines):
        return [re.sub(r"^\d+\t", "T\t", line) for line in lines[:-1]]

    g_text, w_text = text(got), text(want)
    # fluid 1.8.5 could not print float64 data
    assert w_text[11] == "\tdata: unprintable type: c"
    w_text[11] = "\tdata: 0.1,0.2,0.3,0.45,-0.5,6e-08,"
    assert g_text == w_text
    assert all(re.match(r"^\d+\t", line) for line in got[:-1] if "The place is:" in line)


def test_assert_passes_or_fails_naming_cond_and_data():
    x = fluid.data("x", [3], "float32")
    ok = L.reduce_max(x) < 10.0
    L.Assert(ok, [x], summarize=2)
    y = x * 2.0
    exe = fluid.Executor(fluid.CPUPlace())
    (got,) = exe.run(feed={"x": np.array([1, 2, 3], "float32")}, fetch_list=[y])
    np.testing.assert_array_equal(got, [2, 4, 6])
    want = rf"The condition variable '{ok.name}' of Assert must be true, but received false\n"
    want += r".*\nTensor\[x\]\n(.*\n)*\tdata: 1,20,\n"
    with pytest.raises(fluid.core.EnforceNotMet, match=want):
        exe.run(feed={"x": np.array([1, 20, 3], "float32")}, fetch_list=[y])
    with pytest.raises(TypeError, match=r"The data type of 'cond' in fluid.layers.Assert must be \['bool'\]"):
        L.Assert(x)


def test_py_func_errors_name_the_function_and_output():
    x = fluid.data("x", [2], "float32")
    block = fluid.default_main_program().current_block()
    y = block.create_var(name="y", dtype="float32", shape=[2])
    with pytest.raises(TypeError, match="^func must be a Python function$"):
        L.py_func(1, x, y)
    with pytest.raises(TypeError, match=r"The type of 'X' in py_func must be .* but received <class 'int'>. $"):
        L.py_func(np.tanh, 1, y)

    def pair(a):
        return np.array(a), np.array(a)

    def wide(a):
        return np.array(a).astype("float64")

    exe = fluid.Executor(fluid.CPUPlace())
    for fn, want in (
        (pair, r"'pair' returned 2 values for the 1 outputs \['y'\]"),
        (wide, r"'wide' returned float64 for the output 'y', which is declared float32"),
    ):
        main = fluid.Program()
        with fluid.program_guard(main, fluid.Program()):
            x = fluid.data("x", [2], "float32")
            y = main.current_block().create_var(name="y", dtype="float32", shape=[2])
            L.py_func(fn, x, y)
        with pytest.raises(fluid.core.EnforceNotMet, match=want):
            exe.run(main, feed={"x": np.ones(2, "float32")}, fetch_list=[y])


def test_switch_and_ifelse_misuse_is_refused():
    sw = L.Switch()
    c = L.fill_constant([1], "bool", True)
    with pytest.raises(ValueError, match="case should be called inside with"):
        sw.case(c)
    with L.Switch() as sw:
        with pytest.raises(ValueError, match="there should be at least one condition"):
            sw.default()
        with pytest.raises(
            TypeError, match=r"The data type of 'condition' .* must be \['bool'\], but received float32"
        ):
            sw.case(L.fill_constant([1], "float32", 1.0))
    x = fluid.data("x", [None, 2], "float32")
    ie = L.IfElse(L.greater_than(x, x))
    with pytest.raises(ValueError, match="input must in true/false blocks"):
        ie.input(x)
    with pytest.raises(ValueError, match="Must invoke true_block/false_block before __call__"):
        ie()
    with ie.true_block():
        ie.output(ie.input(x), ie.input(x))
    with ie.false_block():
        ie.output(ie.input(x))
    with pytest.raises(
        ValueError, match="The output side must be same: the true block gave 2 outputs and the false block 1"
    ):
        ie()
    with pytest.raises(ValueError, match="print_phase must be 'forward', 'backward' or 'both'"):
        L.Print(x, print_phase="never")


def test_print_first_n_counts_over_runs(capfd):
    """first_n limits how often the op prints (fluid 1.8.5 restarted the count on every run)."""
    x = fluid.data("x", [1], "float32")
    y = L.Print(x, first_n=2, message="seen")
    exe = fluid.Executor(fluid.CPUPlace())
    for _ in range(4):
        exe.run(feed={"x": np.ones(1, "float32")}, fetch_list=[y])
    assert capfd.readouterr().out.count("seen\tThe place is:CPUPlace") == 2


def test_arrays_are_never_copied_whole_on_a_gpu_plan(monkeypatch):
    """Planned for cuda:0 with the writes guarded to the CPU: no copy moves an array (a read moves
    its one element to the reading op's device); the indexes are read on the host."""
    monkeypatch.delenv(places.ENV_DEVICE, raising=False)
    x = fluid.data("x", [2, 3], "float32")
    with fluid.device_guard("cpu"):
        arr = L.array_write(x, L.fill_constant([1], "int64", 0))
        L.array_write(x * 2.0, L.fill_constant([1], "int64", 1), array=arr)
    r = L.array_read(arr, L.fill_constant([1], "int64", 1))
    t, _ = L.tensor_array_to_tensor(arr)
    n = L.array_length(arr)
    plan = plan_block(fluid.default_main_program().global_block(), "cuda:0")
    assert arr.type == fluid.core.VarDesc.VarType.LOD_TENSOR_ARRAY
    assert not [c for c in plan.copies if c.var == arr.name]
    by_type = {p.op.type: p for p in plan.ops}
    assert by_type["read_from_array"].device == "cuda:0" and by_type["write_to_array"].device == "cpu"
    assert plan.locations[r.name] == "cuda:0" and plan.locations[n.name] == "cpu"
    assert plan.locations[t.name] == "cuda:0"


def test_static_rnn_matches_fluid():
    """StaticRNN (boot memory, batch_ref memory, two outputs) and the gradient of its input, as fluid
    1.8.5 computed them; fluidcompat unrolls the step block."""
    lines = run(os.path.join(ROOT, "tests", "golden", "static_rnn.py")).strip().splitlines()
    assert lines[0] == "(4, 3, 6) (4, 3, 2)"
    with open(os.path.join(ROOT, "tests", "golden", "static_rnn.json")) as f:
        want = json.load(f)
    for g, w in zip(json.loads(lines[-1]), want):
        np.testing.assert_allclose(g, w, atol=2e-5)


def test_static_rnn_misuse_is_refused():
    """Errors name the problem; a step that fails leaves the programs and name counters as they were."""
    x = fluid.data("x", [4, 3, 5], "float32")
    y = fluid.data("y", [None, 3, 5], "float32")
    rnn = L.StaticRNN()
    with pytest.raises(ValueError, match=r"You must invoke step_input in rnn.step\(\)"):
        rnn.step_input(x)
    before = snapshot()
    with pytest.raises(ValueError, match="memory 'static_rnn_memory_.*' is never updated: call rnn.update_memory"):
        with rnn.step():
            word = rnn.step_input(x)
            rnn.memory(shape=[-1, 2], batch_ref=word)
            rnn.step_output(word)
    assert snapshot() == before
    with pytest.raises(ValueError, match="if init is None, memory at least need shape and batch_ref"):
        with L.StaticRNN().step() as guard:
            guard.rnn.memory()
    with pytest.raises(ValueError, match="needs at least one rnn.step_input"):
        r = L.StaticRNN()
        with r.step():
            m = r.memory(init=L.fill_constant([3, 5], "float32", 1.0))
            r.update_memory(m, m * 2.0)
            r.step_output(m)
    with pytest.raises(ValueError, match="Static RNN only take fix seq_len input"):
        r = L.StaticRNN()
        with r.step():
            r.step_input(x)
            r.step_input(L.fill_constant([5, 3, 5], "float32", 1.0))
    assert len(fluid.default_main_program().blocks) == 1
    assert y.name == "y"


def test_static_rnn_unrolls_known_lengths_and_loops_over_unknown_ones():
    """A known number of time steps unrolls the step (no while op); an unknown one runs it in a while
    op, and both give the same values and gradients (numpy: a running sum over time)."""

    def build(x):
        x.stop_gradient = False
        r = L.StaticRNN()
        with r.step():
            xt = r.step_input(x)
            acc = r.memory(shape=[-1, 2], batch_ref=xt, init_value=1.0)
            new = acc * 0.5 + xt
            r.update_memory(acc, new)
            r.step_output(new)
        out = r()
        fluid.backward.append_backward(L.reduce_sum(out * out))
        return out

    known, free = fluid.data("k", [3, 2, 2], "float32"), fluid.data("f", [None, None, 2], "float32")
    out_k = build(known)
    n_ops = len(fluid.default_main_program().global_block().ops)
    assert all(op.type != "while" for op in fluid.default_main_program().global_block().ops)
    out_f = build(free)
    assert [op.type for op in fluid.default_main_program().global_block().ops[n_ops:]].count("while") == 1
    xv = np.random.RandomState(0).rand(3, 2, 2).astype("float32")
    exe = fluid.Executor(fluid.CPUPlace())
    a, ga, b, gb = exe.run(feed={"k": xv, "f": xv}, fetch_list=[out_k, "k@GRAD", out_f, "f@GRAD"])
    acc, want = np.ones((2, 2), "float32"), []
    for t in range(3):
        acc = acc * 0.5 + xv[t]
        want.append(acc)
    want = np.stack(want)
    # d sum(out^2) / dx_t = sum over s >= t of 2 out_s 0.5^(s-t)
    grad = np.stack([sum(2 * want[s] * 0.5 ** (s - t) for s in range(t, 3)) for t in range(3)])
    for out, g in ((a, ga), (b, gb)):
        np.testing.assert_allclose(out, want, rtol=1e-6)
        np.testing.assert_allclose(g, grad, rtol=1e-5)


def test_array_as_a_while_loop_variable():
    """A while_loop carrying an array it reads and extends: t = [x, 2x+1, 4x+3, 8x+7], so
    d sum(t) / dx = 15 (fluid 1.8.5 gave 64); the loop's ``assign(arr, arr)`` gradient must not add the
    array's gradient to itself."""
    x = fluid.data("x", [2], "float32")
    x.stop_gradient = False
    i = L.fill_constant([1], "int64", 0)
    n = L.fill_constant([1], "int64", 3)
    arr = L.create_array("float32")
    L.array_write(x, i, array=arr)

    def body(i, arr):
        i2 = L.increment(i, 1, in_place=False)
        L.array_write(L.array_read(arr, i) * 2.0 + 1.0, i2, array=arr)
        return [i2, arr]

    i, arr = L.while_loop(lambda i, arr: L.less_than(i, n), body, [i, arr])
    t, _ = L.tensor_array_to_tensor(arr, axis=0, use_stack=True)
    (g,) = fluid.gradients([L.reduce_sum(t)], [x])
    xv = np.array([1.0, -2.0], "float32")
    tv, gv = fluid.Executor(fluid.CPUPlace()).run(feed={"x": xv}, fetch_list=[t, g])
    np.testing.assert_allclose(tv, [xv, 2 * xv + 1, 4 * xv + 3, 8 * xv + 7])
    np.testing.assert_allclose(gv, [15.0, 15.0])


@pytest.mark.parametrize("k", [1, 0])
def test_array_written_in_a_cond_branch(k):
    """arr[1] = 3x or x*x by branch; loss = sum(arr[1] * arr[0]): the gradient is 6x or 3x^2 (fluid
    1.8.5 gave x * 3 and x^2: the gradient through arr[0] only)."""
    x = fluid.data("x", [2], "float32")
    x.stop_gradient = False
    kv = fluid.data("k", [1], "int64")
    i0, i1 = L.fill_constant([1], "int64", 0), L.fill_constant([1], "int64", 1)
    arr = L.array_write(x, i0)

    def branch(value):
        def fn():
            L.array_write(value(), i1, array=arr)
            return L.fill_constant([1], "float32", 1.0)

        return fn

    L.cond(L.equal(kv, L.fill_constant([1], "int64", 1)), branch(lambda: x * 3.0), branch(lambda: x * x))
    loss = L.reduce_sum(L.array_read(arr, i1) * L.array_read(arr, i0))
    (g,) = fluid.gradients([loss], [x])
    xv = np.array([1.5, -2.0], "float32")
    (gv,) = fluid.Executor(fluid.CPUPlace()).run(feed={"x": xv, "k": np.array([k], "int64")}, fetch_list=[g])
    np.testing.assert_allclose(gv, 6 * xv if k == 1 else 3 * xv * xv, rtol=1e-6)


def test_rnn_time_major_equals_batch_major_and_unknown_steps():
    """layers.rnn with time_major=True (fluid 1.8.5 failed to build it) gives the batch-major result
    transposed, with the same cell; so does a time axis of unknown length."""
    x = fluid.data("x", [3, 4, 5], "float32")
    xt = L.transpose(x, [1, 0, 2])
    lens = fluid.data("lens", [3], "int64")
    cell = L.GRUCell(6)
    out, last = L.rnn(cell, x, sequence_length=lens, is_reverse=True)
    out_t, last_t = L.rnn(cell, xt, sequence_length=lens, is_reverse=True, time_major=True)
    assert len(fluid.default_main_program().global_block().all_parameters()) == 4  # one set of weights
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(fluid.default_startup_program())
    feed = {"x": np.random.RandomState(2).rand(3, 4, 5).astype("float32"), "lens": np.array([4, 1, 2], "int64")}
    a, b, c, d = exe.run(feed=feed, fetch_list=[out, last, out_t, last_t])
    np.testing.assert_allclose(a, np.transpose(c, (1, 0, 2)), rtol=1e-6)
    np.testing.assert_allclose(b, d, rtol=1e-6)
    # the same cell over a time axis of unknown length: a while op over the steps, the same values
    free = fluid.data("free", [3, None, 5], "float32")
    out_f, last_f = L.rnn(cell, free, sequence_length=lens, is_reverse=True)
    e, f = exe.run(feed=dict(feed, free=feed["x"]), fetch_list=[out_f, last_f])
    np.testing.assert_allclose(e, a, rtol=1e-6)
    np.testing.assert_allclose(f, b, rtol=1e-6)


def test_rnn_that_fails_leaves_program_and_cell_as_they_were():
    x = fluid.data("x", [2, 3, 5], "float32")
    cell = L.LSTMCell(4)
    main = fluid.default_main_program()
    before = (len(main.global_block().ops), sorted(main.global_block().vars))
    assert before[0] == 1  # the cell's forget bias
    bad = L.zeros([2, 7], "float32")  # the states must have 4 columns
    with pytest.raises(ValueError):
        L.rnn(cell, x, initial_states=[bad, bad])
    assert before[0] + 1 == len(main.global_block().ops)  # only the zeros of the bad states
    out, _ = L.rnn(cell, x)
    names = sorted(p.name for p in main.global_block().all_parameters())
    assert names == ["LSTMCell/BasicLSTMUnit_0.b_0", "LSTMCell/BasicLSTMUnit_0.w_0"]
    assert out.shape == (2, 3, 4)


def test_gru_unit_runs_tanh_and_sigmoid_and_says_so_for_another_activation():
    x = fluid.data("x", [2, 6], "float32")
    h = fluid.data("h", [2, 2], "float32")
    with pytest.warns(UserWarning, match="fluid 1.8.5 ran every gru_unit with activation 'tanh'"):
        new, _, _ = L.gru_unit(x, h, 6, activation="relu")
    op = fluid.default_main_program().global_block().ops[-1]
    assert (op.type, op.attr("activation"), op.attr("gate_activation")) == ("gru_unit", 2, 1)
    with pytest.raises(ValueError, match="activation must be one of identity, sigmoid, tanh, relu"):
        L.gru_unit(x, h, 6, activation="gelu")


def test_variable_written_only_in_a_branch_keeps_its_scope_value_when_the_branch_does_not_run():
    """A persistable variable that only a Switch case writes, read after the Switch: when the case does
    not run, the read gets the value the scope holds (the startup's, or an earlier run's), as in fluid;
    a temporary written only in a branch that did not run is named as not initialized."""
    flag = fluid.data("flag", [1], "bool")
    counter = L.create_global_var([1], 5.0, "float32", persistable=True, name="counter")
    temp = L.create_tensor("float32", name="temp")
    with L.Switch() as switch:
        with switch.case(flag):
            L.assign(L.fill_constant([1], "float32", 1.5), counter)
            L.assign(L.fill_constant([1], "float32", 7.0), temp)
    doubled = counter * 2.0
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(fluid.default_startup_program())
    seen = []
    for f in (False, True, False):
        seen.append(float(exe.run(feed={"flag": np.array([f])}, fetch_list=[doubled])[0][0]))
    assert seen == [10.0, 3.0, 3.0]
    assert float(exe.run(feed={"flag": np.array([True])}, fetch_list=[temp * 1.0])[0][0]) == 7.0
    with pytest.raises(Exception, match="'temp'.*not initialized"):
        exe.run(feed={"flag": np.array([False])}, fetch_list=[temp * 1.0])
