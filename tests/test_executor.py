"""Executor.run: feeds, fetches, scopes, caching, errors; places and the CPU mapping of GPU places."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

import fluidcompat as fluid
from fluidcompat import places

L = fluid.layers
GOLDEN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "golden", "error_texts.json")


def fluid_message(key):
    with open(GOLDEN) as f:
        return json.load(f)[key][1]


@pytest.fixture
def net():
    x = fluid.data("x", [None, 4])
    y = L.fc(x, 2, param_attr=fluid.ParamAttr(initializer=fluid.initializer.Constant(0.5)))
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(fluid.default_startup_program())
    return x, y, exe


def runs(exe, y):
    out = exe.run(feed={"x": np.ones((3, 4), "float32")}, fetch_list=[y])[0]
    np.testing.assert_allclose(out, np.full((3, 2), 2.0, "float32"))


class TestFeedAndFetch:
    def test_wrong_shape_has_fluids_message(self, net):
        x, y, exe = net
        with pytest.raises(ValueError) as err:
            exe.run(feed={"x": np.ones((3, 5), "float32")}, fetch_list=[y])
        assert str(err.value) == fluid_message("feed_shape")
        runs(exe, y)

    def test_wrong_rank_is_caught(self, net):
        x, y, exe = net
        with pytest.raises(ValueError, match=r"dimensions = 2, shape = \(-1, 4\), but received fed shape \[4\]"):
            exe.run(feed={"x": np.ones(4, "float32")}, fetch_list=[y])
        runs(exe, y)

    def test_wrong_dtype_has_fluids_message(self, net):
        x, y, exe = net
        with pytest.raises(ValueError) as err:
            exe.run(feed={"x": np.ones((3, 4), "float64")}, fetch_list=[y])
        assert str(err.value) == fluid_message("feed_dtype")
        runs(exe, y)

    def test_missing_feed_names_the_variable(self, net):
        x, y, exe = net
        before = {n: np.array(fluid.global_scope().find_var(n).get_tensor()) for n in ("fc_0.w_0", "fc_0.b_0")}
        with pytest.raises(RuntimeError) as err:
            exe.run(fetch_list=[y])
        msg = str(err.value)
        assert "'x'" in msg and "op 0 (mul)" in msg and "not fed" in msg
        for n, v in before.items():
            np.testing.assert_array_equal(np.array(fluid.global_scope().find_var(n).get_tensor()), v)
        runs(exe, y)

    def test_unknown_fetch_name(self, net):
        x, y, exe = net
        with pytest.raises(ValueError, match="Fetch variable 'nonexist' cannot be found"):
            exe.run(feed={"x": np.ones((3, 4), "float32")}, fetch_list=["nonexist"])
        runs(exe, y)

    def test_fetch_by_name_and_as_tensor(self, net):
        x, y, exe = net
        feed = {"x": np.ones((3, 4), "float32")}
        by_name = exe.run(feed=feed, fetch_list=[y.name, "fc_0.w_0"])
        np.testing.assert_allclose(by_name[0], np.full((3, 2), 2.0))
        np.testing.assert_allclose(by_name[1], np.full((4, 2), 0.5))
        t = exe.run(feed=feed, fetch_list=y, return_numpy=False)[0]
        assert isinstance(t, fluid.LoDTensor) and t.shape() == [3, 2]
        np.testing.assert_allclose(np.array(t), np.full((3, 2), 2.0))

    def test_bad_fetch_and_feed_types(self, net):
        x, y, exe = net
        with pytest.raises(TypeError, match="The item in fetch_list should be str, variable or optimize_op"):
            exe.run(feed={"x": np.ones((3, 4), "float32")}, fetch_list=[3])
        with pytest.raises(TypeError, match="feed requires dict as its Parameter"):
            exe.run(feed="x", fetch_list=[y])
        with pytest.raises(AssertionError, match="Not compiled with data parallel"):
            exe.run(feed=[{}, {}], fetch_list=[y])
        # fluid 1.8.5 ignored a key that is not a name and failed in the first op that read it
        with pytest.raises(TypeError, match=r"received the Variable 'x': feed=\{'x': \.\.\.\}"):
            exe.run(feed={x: np.ones((3, 4), "float32")}, fetch_list=[y])
        with pytest.raises(TypeError, match="variable names \\(str\\); received int 0"):
            exe.run(feed={0: np.ones((3, 4), "float32")}, fetch_list=[y])

    def test_unfed_unknown_name_warns(self, net):
        x, y, exe = net
        with pytest.warns(UserWarning, match="The variable other is not found in program"):
            exe.run(feed={"x": np.ones((3, 4), "float32"), "other": np.ones(1)}, fetch_list=[y])

    def test_layers_data_is_not_checked_but_failure_names_the_op(self):
        x = L.data("x", [4])  # [-1, 4], feeds unchecked as in fluid 1.8
        y = L.fc(x, 2)
        exe = fluid.Executor(fluid.CPUPlace())
        exe.run(fluid.default_startup_program())
        with pytest.raises(RuntimeError) as err:
            exe.run(feed={"x": np.ones((3, 5), "float32")}, fetch_list=[y])
        msg = str(err.value)
        assert "op 0 (mul) of block 0 on cpu" in msg
        assert "test_executor.py" in msg and "y = L.fc(x, 2)" in msg
        assert exe.run(feed={"x": np.ones((3, 4), "float32")}, fetch_list=[y])[0].shape == (3, 2)

    def test_scalar_and_list_feeds(self):
        a = fluid.data("a", [1], "int64")
        b = fluid.data("b", [2, 2], "float32")
        exe = fluid.Executor(fluid.CPUPlace())
        out = exe.run(feed={"a": 5, "b": [[1, 2], [3, 4]]}, fetch_list=[a * 2, b])
        assert out[0].dtype == np.int64 and out[0].tolist() == [10]
        assert out[1].dtype == np.float32

    def test_uninitialized_fetch_is_none(self):
        v = fluid.default_main_program().global_block().create_var(name="lonely", shape=[1])
        x = fluid.data("x", [1])
        exe = fluid.Executor(fluid.CPUPlace())
        assert exe.run(feed={"x": np.ones(1, "float32")}, fetch_list=[L.relu(x), v])[1] is None

    def test_output_dtypes(self):
        x = fluid.data("x", [2, 3])
        outs = fluid.Executor(fluid.CPUPlace()).run(
            feed={"x": np.ones((2, 3), "float32")}, fetch_list=[L.shape(x), x < 2.0, L.argmax(x, 1)]
        )
        assert [o.dtype for o in outs] == [np.int32, np.bool_, np.int64]


class TestScopesAndCaching:
    def test_temporaries_freed_params_kept(self, net):
        x, y, exe = net
        runs(exe, y)
        scope = fluid.global_scope()
        assert scope.find_var("fc_0.tmp_0") is None
        assert scope.find_var("x") is None
        assert scope.find_var("fc_0.w_0").get_tensor().shape() == [4, 2]

    def test_set_tensor_changes_next_run(self, net):
        x, y, exe = net
        w = fluid.global_scope().find_var("fc_0.w_0").get_tensor()
        w.set(np.zeros((4, 2), "float32"), fluid.CPUPlace())
        out = exe.run(feed={"x": np.ones((3, 4), "float32")}, fetch_list=[y])[0]
        np.testing.assert_allclose(out, np.zeros((3, 2)))
        assert w._dtype() == fluid.core.VarDesc.VarType.FP32 and "dim: 4, 2" in str(w)

    def test_scope_guard_and_scope_argument(self):
        x = fluid.data("x", [None, 4])
        y = L.fc(x, 2)
        exe = fluid.Executor(fluid.CPUPlace())
        own = fluid.Scope()
        with fluid.scope_guard(own):
            assert fluid.global_scope() is own
            exe.run(fluid.default_startup_program())
        assert fluid.global_scope().find_var("fc_0.w_0") is None
        assert own.find_var("fc_0.w_0") is not None
        out = exe.run(feed={"x": np.ones((1, 4), "float32")}, fetch_list=[y], scope=own)[0]
        assert out.shape == (1, 2)
        with pytest.raises(RuntimeError, match="'fc_0.w_0'"):
            exe.run(feed={"x": np.ones((1, 4), "float32")}, fetch_list=[y])

    def test_plan_follows_program_changes(self):
        x = fluid.data("x", [2])
        y = L.relu(x)
        exe = fluid.Executor(fluid.CPUPlace())
        feed = {"x": np.array([-1.0, 2.0], "float32")}
        for cache in (False, True):
            assert exe.run(feed=feed, fetch_list=[y], use_program_cache=cache)[0].tolist() == [0.0, 2.0]
        z = y * 3.0
        assert exe.run(feed=feed, fetch_list=[z], use_program_cache=True)[0].tolist() == [0.0, 6.0]

    def test_compiled_program(self, net):
        x, y, exe = net
        compiled = fluid.CompiledProgram(fluid.default_main_program()).with_data_parallel(loss_name=y.name)
        out = exe.run(compiled, feed={"x": np.ones((3, 4), "float32")}, fetch_list=[y])[0]
        np.testing.assert_allclose(out, np.full((3, 2), 2.0))
        with pytest.raises(AssertionError, match="Already compiled with parallel"):
            compiled.with_data_parallel()
        from fluidcompat import compiler

        assert compiler.CompiledProgram is fluid.CompiledProgram

    def test_closed_executor(self, net):
        x, y, exe = net
        exe.close()
        with pytest.raises(RuntimeError, match="Attempted to use a closed Executor"):
            runs(exe, y)

    def test_empty_program_warns(self):
        with pytest.warns(UserWarning, match="Now you are using default_main_program"):
            fluid.Executor(fluid.CPUPlace()).run()


class TestPlaces:
    def test_place_texts(self):
        assert str(fluid.CPUPlace()) == "CPUPlace"
        assert fluid.CPUPlace() == fluid.CPUPlace()
        assert len(fluid.cpu_places(3)) == 3

    @pytest.mark.skipif(places.cuda_available(), reason="checks the machine without CUDA")
    def test_cuda_place_without_cuda(self, monkeypatch):
        monkeypatch.delenv(places.ENV_DEVICE, raising=False)
        with pytest.raises(places.CUDAUnavailableError, match=r"CUDAPlace\(0\) needs CUDA.*--device cpu"):
            fluid.CUDAPlace(0)
        assert fluid.is_compiled_with_cuda() is False

    def test_cpu_mode_maps_gpu_places(self, monkeypatch, capsys):
        monkeypatch.setenv(places.ENV_DEVICE, "cpu")
        monkeypatch.setattr(places, "_announced", False)
        place = fluid.CUDAPlace(0)
        fluid.CUDAPlace(1)
        assert str(place) == "CUDAPlace(0)"
        assert places.torch_device(place) == "cpu"
        assert places.torch_device("gpu:1", place) == "cpu"
        assert fluid.is_compiled_with_cuda() is False
        assert capsys.readouterr().err.count("device cpu requested") == 1
        x = fluid.data("x", [2])
        with fluid.device_guard("gpu"):
            y = L.relu(x)
        out = fluid.Executor(place).run(feed={"x": np.array([-1, 1], "float32")}, fetch_list=[y])[0]
        assert out.tolist() == [0.0, 1.0]

    def test_torch_device_mapping(self, monkeypatch):
        monkeypatch.delenv(places.ENV_DEVICE, raising=False)
        assert places.torch_device(None, "cuda:0") == "cuda:0"
        assert places.torch_device("cpu", "cuda:0") == "cpu"
        assert places.torch_device("gpu", "cuda:1") == "cuda:1"
        assert places.torch_device("gpu", fluid.CPUPlace()) == "cpu"  # fluid 1.8: 'gpu' stays on a CPU executor
        assert places.torch_device("gpu:2", fluid.CPUPlace()) == "cuda:2"
        with pytest.raises(ValueError, match="Cannot map 'tpu'"):
            places.torch_device("tpu")


def test_np_array_of_a_tensor_is_a_snapshot(net):
    x, y, exe = net
    w = fluid.global_scope().find_var("fc_0.w_0").get_tensor()
    before = np.array(w)
    w.set(np.zeros((4, 2), "float32"), fluid.CPUPlace())
    assert np.all(before == 0.5)


class TestRepeatedRuns:
    """Runs after the first with the same program, feeds, fetch list and scope skip the set-up but
    not the checks, and never write into the caller's arrays."""

    def test_feed_checks_hold_on_every_run(self, net):
        x, y, exe = net
        for _ in range(3):
            runs(exe, y)
        with pytest.raises(ValueError, match=r"shape = \(-1, 4\), but received fed shape \[3, 5\]"):
            exe.run(feed={"x": np.ones((3, 5), "float32")}, fetch_list=[y])
        with pytest.raises(ValueError, match="must be 'float32', but received 'float64'"):
            exe.run(feed={"x": np.ones((3, 4))}, fetch_list=[y])
        runs(exe, y)

    def test_shape_check_holds_after_many_batch_sizes(self, net):
        """The repeated run remembers the shapes it saw fit (a bounded set): a shape that does not fit
        is refused after 20 batch sizes that did, and the sizes seen before still run."""
        x, y, exe = net
        for n in [*range(1, 21), 3, 1]:
            out = exe.run(feed={"x": np.ones((n, 4), "float32")}, fetch_list=[y])[0]
            assert out.shape == (n, 2) and (out == 2.0).all()
        with pytest.raises(ValueError, match=r"shape = \(-1, 4\), but received fed shape \[20, 3\]"):
            exe.run(feed={"x": np.ones((20, 3), "float32")}, fetch_list=[y])
        with pytest.raises(ValueError, match=r"received fed shape \[4\]"):
            exe.run(feed={"x": np.ones(4, "float32")}, fetch_list=[y])
        runs(exe, y)

    def test_big_endian_arrays_are_fed_and_set_with_their_values(self, net):
        """fluid 1.8.5 refused a '>f4' array (tensor.set() ... but got >f4); torch cannot read one: its values,
        in this machine's byte order."""
        x, y, exe = net
        fed = np.arange(12, dtype=">f4").reshape(3, 4)
        for _ in range(2):  # the first run and the repeated one
            out = exe.run(feed={"x": fed}, fetch_list=[y])[0]
            np.testing.assert_allclose(out, np.repeat(fed.astype("float32").sum(1, keepdims=True) * 0.5, 2, 1))
        t = fluid.LoDTensor()
        t.set(np.arange(3, dtype=">i8"), fluid.CPUPlace())
        assert np.array(t).tolist() == [0, 1, 2] and np.array(t).dtype == np.int64

    def test_in_place_updates_never_write_into_a_fed_array(self):
        """sgd updates its Param in place; fed as Param, the caller's array is updated in a copy."""
        x = fluid.data("x", [3], "float32")
        g = L.fill_constant([3], "float32", 1.0)
        lr = L.fill_constant([1], "float32", 0.5)
        fluid.default_main_program().global_block().append_op(
            "sgd", {"Param": [x], "Grad": [g], "LearningRate": [lr]}, {"ParamOut": [x]}
        )
        exe = fluid.Executor(fluid.CPUPlace())
        fed = np.ones(3, "float32")
        for _ in range(3):
            assert exe.run(feed={"x": fed}, fetch_list=[x])[0].tolist() == [0.5, 0.5, 0.5]
        assert fed.tolist() == [1.0, 1.0, 1.0]

    def test_training_reads_the_fed_array_without_changing_it(self, net):
        x, y, exe = net
        loss = L.mean(y)
        fluid.optimizer.SGD(0.1).minimize(loss)
        exe.run(fluid.default_startup_program())
        fed = np.ones((3, 4), "float32")
        got = [exe.run(feed={"x": fed}, fetch_list=[loss])[0][0] for _ in range(3)]
        assert got[0] > got[1] > got[2]  # the parameters move every run
        assert (fed == 1.0).all()

    def test_scope_guard_is_followed_on_repeated_runs(self):
        x = fluid.data("x", [None, 4])
        y = L.fc(x, 2, param_attr=fluid.ParamAttr(initializer=fluid.initializer.Constant(1.0)), bias_attr=False)
        exe = fluid.Executor(fluid.CPUPlace())
        a, b = fluid.Scope(), fluid.Scope()
        for s in (a, b):
            with fluid.scope_guard(s):
                exe.run(fluid.default_startup_program())
        b.find_var(y.block.program.all_parameters()[0].name).get_tensor().set(np.zeros((4, 2), "float32"), None)
        feed = {"x": np.ones((1, 4), "float32")}
        for _ in range(2):
            for s, want in ((a, 4.0), (b, 0.0)):
                with fluid.scope_guard(s):
                    assert exe.run(feed=feed, fetch_list=[y])[0].tolist() == [[want, want]]


def test_embedding_id_out_of_range_names_it_and_leaves_the_scope_usable():
    """fluid 1.8.5's message for an id outside the table (recorded with tools/fluid18), and the next run
    with good ids works."""
    ids = fluid.data("ids", [None, 1], "int64")
    emb = fluid.embedding(ids, size=(10, 4))
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(fluid.default_startup_program())
    with pytest.raises(Exception) as err:
        exe.run(feed={"ids": np.array([[3], [12]], "int64")}, fetch_list=[emb])
    want = (
        "Variable value (input) of OP(fluid.layers.embedding) expected >= 0 and < 10, but got 12. "
        "Please check input value."
    )
    assert want in str(err.value)
    table = np.array(fluid.global_scope().find_var("embedding_0.w_0").get_tensor())
    got = exe.run(feed={"ids": np.array([[3], [9]], "int64")}, fetch_list=[emb])[0]
    np.testing.assert_array_equal(got.reshape(2, 4), table[[3, 9]])


@pytest.mark.parametrize("loss", ["cross_entropy", "softmax_with_cross_entropy"])
@pytest.mark.parametrize("bad", [3, -2])
def test_label_out_of_range_gets_fluids_message(loss, bad):
    """fluid 1.8.5's message for a label outside [0, classes) (recorded with tools/fluid18; fluid names
    cross_entropy for both ops); an ignore_index label stays allowed and the next run works."""
    x = fluid.data("x", [None, 3], "float32")
    lab = fluid.data("l", [None, 1], "int64")
    if loss == "cross_entropy":
        out = fluid.layers.cross_entropy(fluid.layers.softmax(x), lab, ignore_index=-1)
    else:
        out = fluid.layers.softmax_with_cross_entropy(x, lab, ignore_index=-1)
    exe = fluid.Executor(fluid.CPUPlace())
    feed = {"x": np.ones((3, 3), "float32")}
    with pytest.raises(Exception) as err:
        exe.run(feed=dict(feed, l=np.array([[0], [-1], [bad]], "int64")), fetch_list=[out])
    want = (
        f"Variable value (label) of OP(fluid.layers.cross_entropy) expected >= 0 and < 3, but got {bad}. "
        "Please check label value."
    )
    assert want in str(err.value)
    got = exe.run(feed=dict(feed, l=np.array([[0], [-1], [2]], "int64")), fetch_list=[out])[0]
    np.testing.assert_allclose(got.ravel(), [np.log(3), 0.0, np.log(3)], rtol=1e-6)


def test_loss_label_check_lets_unknown_dims_match():
    """Logits whose time axis is unknown when built (a stacked tensor array, transposed) against a label
    of known shape: fluid 1.8.5 built it, so does fluidcompat; known dims that differ are refused."""
    logits = fluid.data("logits", [2, None, 5], "float32")
    label = fluid.data("label", [2, 3, 1], "int64")
    loss = fluid.layers.softmax_with_cross_entropy(logits, label)
    ce = fluid.layers.cross_entropy(fluid.layers.softmax(logits), label)
    feed = {"logits": np.zeros((2, 3, 5), "float32"), "label": np.ones((2, 3, 1), "int64")}
    a, b = fluid.Executor(fluid.CPUPlace()).run(feed=feed, fetch_list=[loss, ce])
    np.testing.assert_allclose(a, np.full((2, 3, 1), np.log(5)), rtol=1e-6)
    np.testing.assert_allclose(b, a, rtol=1e-6)
    with pytest.raises(ValueError, match="Label must have Logits' shape"):
        fluid.layers.softmax_with_cross_entropy(logits, fluid.data("bad", [4, 3, 1], "int64"))


def test_values_read_for_their_shape_only_are_stubbed_after_their_last_other_use():
    """fc's mul output is read later by elementwise_add_grad for its shape only: the plan makes it a
    shape-only stub right after the add (fluid's "no need buffer" variables; at run time a value
    under 64 KiB is kept, the stub would cost more than it frees); the gradients stay those of numpy."""
    x = fluid.data("x", [None, 3], "float32")
    w = fluid.layers.create_parameter([3, 2], "float32", name="w", default_initializer=fluid.initializer.Constant(0.5))
    b = fluid.layers.create_parameter([2], "float32", name="b", default_initializer=fluid.initializer.Constant(0.1))
    out = fluid.layers.elementwise_add(fluid.layers.mul(x, w), b)
    loss = fluid.layers.mean(fluid.layers.relu(out) * 2.0)
    fluid.backward.append_backward(loss)
    main = fluid.default_main_program()
    mul_out = main.global_block().ops[0].output("Out")[0]
    exe = fluid.Executor(fluid.CPUPlace())
    steps = exe._prepare(main, {"x"}, [loss.name, "w@GRAD", "b@GRAD"]).steps
    stubbed = [(i, s.plan.op.type) for i, s in enumerate(steps) if mul_out in s.stubs]
    assert stubbed == [(1, "elementwise_add")]
    assert any(mul_out in s.dels and s.plan.op.type == "elementwise_add_grad" for s in steps)
    exe.run(fluid.default_startup_program())
    xv = np.array([[1.0, -2.0, 0.5], [0.3, 0.2, -0.1]], "float32")
    got_w, got_b = exe.run(feed={"x": xv}, fetch_list=["w@GRAD", "b@GRAD"])
    z = xv @ np.full((3, 2), 0.5, "float32") + 0.1
    dz = (z > 0) * 2.0 / z.size
    np.testing.assert_allclose(got_w, xv.T @ dz, rtol=1e-6)
    np.testing.assert_allclose(got_b, dz.sum(0), rtol=1e-6)


class TestDataParallelSplit:
    """How a data-parallel run on several places of one process splits a feed (fluid's rule:
    ceil(batch / places) rows or top-level sequences a place, the last place the rest)."""

    def test_rows_and_sequences(self):
        from fluidcompat.executor import data_parallel

        parts = data_parallel._split(np.arange(7), 4)
        assert [p.tolist() for p in parts] == [[0, 1], [2, 3], [4, 5], [6]]
        assert [len(p) for p in data_parallel._split(np.zeros((5, 2)), 4)] == [2, 2, 1]
        t = fluid.create_lod_tensor(np.arange(9).reshape(9, 1), [[2, 1], [1, 3, 5]], fluid.CPUPlace())
        first, second = data_parallel._split(t, 2)
        assert first.lod() == [[0, 2], [0, 1, 4]] and np.array(first).reshape(-1).tolist() == [0, 1, 2, 3]
        assert second.lod() == [[0, 1], [0, 5]] and np.array(second).reshape(-1).tolist() == [4, 5, 6, 7, 8]

    def test_places_argument_and_a_batch_too_small(self, monkeypatch):
        monkeypatch.delenv("CPU_NUM", raising=False)
        x = fluid.data("x", [None, 2], "float32")
        y = L.fc(x, 1, param_attr=fluid.ParamAttr(initializer=fluid.initializer.Constant(1.0)), bias_attr=False)
        loss = L.mean(y)
        fluid.optimizer.SGD(0.5).minimize(loss)
        exe = fluid.Executor(fluid.CPUPlace())
        exe.run(fluid.default_startup_program())
        compiled = fluid.CompiledProgram(fluid.default_main_program()).with_data_parallel(
            loss_name=loss.name, places=fluid.cpu_places(3)
        )
        xs = np.arange(12, dtype="float32").reshape(6, 2)
        per_place, w = exe.run(compiled, feed={"x": xs}, fetch_list=[loss, "fc_0.w_0"])
        np.testing.assert_allclose(per_place, xs.reshape(3, 2, 2).sum(2).mean(1))
        # the mean of the places' gradients: the whole batch's mean, as one device would have it
        np.testing.assert_allclose(w.reshape(3, 2), np.tile(1.0 - 0.5 * xs.mean(0), (3, 1)), rtol=1e-6)
        with pytest.raises(ValueError, match=r"The number\(2\) of samples\[x\] .* count\(3\) of devices\(CPU\)"):
            exe.run(compiled, feed={"x": xs[:2]}, fetch_list=[loss])
        w_now = np.array(fluid.global_scope().find_var("fc_0.w_0").get_tensor())
        np.testing.assert_array_equal(w_now, w[:2])  # the refused run changed nothing


def test_compiled_program_unmerged_fetch_is_per_place(net, monkeypatch):
    """fluid 1.8.5 (one place): return_merged=False gives each fetched variable as a list of its
    places' values, [[array]], for a CompiledProgram with or without with_data_parallel, on the
    first run and the repeated ones; return_merged=True, and a plain Program, give the arrays."""
    monkeypatch.setenv("CPU_NUM", "1")
    x, y, exe = net
    feed = {"x": np.ones((3, 4), "float32")}
    for compiled in (fluid.CompiledProgram(fluid.default_main_program()),
                     fluid.CompiledProgram(fluid.default_main_program()).with_data_parallel()):  # fmt: skip
        for _ in range(2):
            [per_place] = exe.run(compiled, feed=feed, fetch_list=[y], return_merged=False)
            assert isinstance(per_place, list) and len(per_place) == 1 and per_place[0].shape == (3, 2)
        assert exe.run(compiled, feed=feed, fetch_list=[y])[0].shape == (3, 2)
    assert exe.run(feed=feed, fetch_list=[y], return_merged=False)[0].shape == (3, 2)


def test_cpu_places_without_cpu_num_says_so_once(monkeypatch, capsys):
    """fluid 1.8.5 on a machine with more than one core: the first cpu_places() without CPU_NUM writes
    its notice to stderr and sets CPU_NUM=1; later calls, and a set CPU_NUM, say nothing."""
    monkeypatch.delenv("CPU_NUM", raising=False)
    monkeypatch.setattr("os.cpu_count", lambda: 4)
    assert len(fluid.cpu_places()) == 1 and len(fluid.cpu_places()) == 1
    err = capsys.readouterr().err
    assert err.startswith("!!! The CPU_NUM is not specified, you should set CPU_NUM in the environment variable list.")
    assert "export CPU_NUM=4 # for example" in err and err.endswith("!!! The default number of CPU_NUM=1.\n")
    assert err.count("!!!") == 2
    monkeypatch.setenv("CPU_NUM", "3")
    assert len(fluid.cpu_places()) == 3 and capsys.readouterr().err == ""


def test_data_parallel_input_gradients_without_parameters(monkeypatch):
    """fluid.gradients of an input (no parameter gradients to all-reduce) on CPU_NUM=2: each place runs
    the whole program on its rows, unscaled, as fluid 1.8.5 gave ([14, 126] and 2x)."""
    monkeypatch.setenv("CPU_NUM", "2")
    x = fluid.data("x", [None, 2], "float32")
    x.stop_gradient = False
    y = L.reduce_sum(x * x)
    g = fluid.gradients([y], [x])[0]
    compiled = fluid.CompiledProgram(fluid.default_main_program()).with_data_parallel(loss_name=y.name)
    xs = np.arange(8, dtype="float32").reshape(4, 2)
    per_place, grad = fluid.Executor(fluid.CPUPlace()).run(compiled, feed={"x": xs}, fetch_list=[y, g])
    assert per_place.tolist() == [14.0, 126.0] and grad.tolist() == (2 * xs).tolist()


def test_nan_inf_report_prints_float64_values_as_they_are(capsys):
    """FLAGS_check_nan_inf's report of a float64 output keeps its values (no float32 rounding:
    16777217 is not a float32); a bfloat16 one prints too (numpy has no bfloat16)."""
    import torch

    from fluidcompat.executor.interpreter import _print_nan_inf

    _print_nan_inf(torch.tensor([16777217.0, float("inf")], dtype=torch.float64))
    _print_nan_inf(torch.tensor([2.0, float("-inf")], dtype=torch.bfloat16))
    assert capsys.readouterr().out.splitlines() == [
        "numel:2 index:0 value:16777217.000000",
        "numel:2 index:1 value:inf",
        "In cpu, there has 0,1,1 nan,inf,num",
        "numel:2 index:0 value:2.000000",
        "numel:2 index:1 value:-inf",
        "In cpu, there has 0,1,1 nan,inf,num",
    ]


def test_an_unset_variable_error_says_what_to_run_or_feed():
    """A parameter read before the startup program ran points to the startup program (as fluid's
    mul error did); an unfed data variable points to the feed."""
    from fluidcompat.executor.interpreter import UninitializedVariableError

    x = fluid.data("x", [None, 3])
    y = L.fc(x, 2)
    exe = fluid.Executor(fluid.CPUPlace())
    with pytest.raises(UninitializedVariableError, match=r"'fc_0.w_0' .*run the startup program first"):
        exe.run(feed={"x": np.ones((2, 3), "float32")}, fetch_list=[y])
    exe.run(fluid.default_startup_program())
    with pytest.raises(UninitializedVariableError, match=r"'x' .*Feed it: exe.run\(feed=\{'x': ...\}\)"):
        exe.run(fetch_list=[y])
    (out,) = exe.run(feed={"x": np.ones((2, 3), "float32")}, fetch_list=[y])
    assert out.shape == (2, 2)


def test_lod_tensor_alloc_and_slices_as_fluid():
    """LoDTensor._alloc_float / _alloc_int give memory of the dims set; t[index] slices as numpy does
    (negative steps too)."""
    t = fluid.core.LoDTensor()
    t._set_dims([3, 4])
    t._alloc_int(fluid.CPUPlace())
    assert np.array(t).shape == (3, 4) and np.array(t).dtype == np.int32
    t._alloc_float(fluid.CPUPlace())
    assert np.array(t).dtype == np.float32
    a = np.arange(27, dtype="float32").reshape(3, 3, 3)
    t.set(a, fluid.CPUPlace())
    for index in (1, slice(2, None, -2), (slice(None), slice(0, None, -1), slice(2, None))):
        np.testing.assert_array_equal(np.array(t[index]), a[index])
    assert isinstance(t._mutable_data(fluid.CPUPlace(), fluid.core.VarDesc.VarType.FP64), int)
    assert np.array(t).dtype == np.float64
