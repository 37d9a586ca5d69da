"""LoD sequences: feeding and fetching LoDTensors, the LoD kept apart from programs without one,
refusals of bad sequence input, and a text classifier over variable-length sequences that trains.
Values of every sequence op against fluid 1.8.5 are in test_goldens.py (sequence_ops, sequence_rnn,
lod_sharing)."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import numpy as np
import pytest

import fluidcompat as fluid
from fluidcompat import places
from fluidcompat.executor.interpreter import PreparedBlock
from fluidcompat.executor.placement import plan_block

L = fluid.layers


def lod_tensor(data, lengths):
    return fluid.create_lod_tensor(np.asarray(data), lengths, fluid.CPUPlace())


def run_one(build, feed, return_numpy=False):
    main, start = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, start):
        out = build()
    exe = fluid.Executor(fluid.CPUPlace())
    if start.global_block().ops:
        exe.run(start)
    return exe.run(main, feed=feed, fetch_list=[out], return_numpy=return_numpy)[0], main


def test_sequence_pool_against_numpy():
    rows = np.random.RandomState(0).rand(6, 3).astype("float32")
    lengths = [2, 0, 3, 1]
    offsets = np.cumsum([0] + lengths)
    out, _ = run_one(
        lambda: L.sequence_pool(fluid.data("x", [None, 3], lod_level=1), "sqrt", pad_value=-1.0),
        {"x": lod_tensor(rows, [lengths])},
    )
    want = [rows[a:b].sum(0) / np.sqrt(b - a) if b > a else np.full(3, -1.0) for a, b in zip(offsets, offsets[1:])]
    np.testing.assert_allclose(np.array(out), np.array(want), rtol=1e-6)
    assert out.lod() == []  # pooling the only level leaves no LoD


def test_fetching_a_lod_as_numpy_is_refused_and_as_lodtensor_keeps_it():
    x = lod_tensor(np.arange(10, dtype="float32").reshape(5, 2), [[2, 3]])
    out, _ = run_one(lambda: L.relu(fluid.data("x", [None, 2], lod_level=1)), {"x": x})
    assert out.lod() == [[0, 2, 5]] and out.recursive_sequence_lengths() == [[2, 3]]
    with pytest.raises(RuntimeError, match="hold LoD information.*return_numpy"):
        run_one(lambda: L.relu(fluid.data("x", [None, 2], lod_level=1)), {"x": x}, return_numpy=True)
    # the fed LoDTensor is the caller's: the run marked nothing on its tensor
    assert not hasattr(x.torch(), "_lod") and x.lod() == [[0, 2, 5]]


def test_programs_without_lod_run_the_plain_kernels():
    """The LoD bookkeeping (a wrapper per kernel) exists only in programs that declare a LoD."""
    for lod_level, wrapped in ((0, False), (1, True)):
        main, start = fluid.Program(), fluid.Program()
        with fluid.program_guard(main, start):
            y = L.fc(fluid.data("x", [None, 4], lod_level=lod_level), 3, act="relu")
            fluid.backward.append_backward(L.mean(y))
        prepared = PreparedBlock(plan_block(main.global_block(), fluid.CPUPlace(), {"x": None}), keep=())
        assert prepared.lod is wrapped
        plain = [s.kernel is s.plan.op._def.kernel or s.plan.op._def.specialize is not None for s in prepared.steps]
        assert all(plain) is not wrapped


def test_sequence_concat_of_different_sequence_counts_names_both_inputs():
    """fluid 1.8.5 crashed (SIGSEGV) on this; the error names each input and its sequence count."""
    main, start = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, start):
        a = fluid.data("a", [None, 2], lod_level=1)
        b = fluid.data("b", [None, 2], lod_level=1)
        out = L.sequence_concat([a, b])
    exe = fluid.Executor(fluid.CPUPlace())
    feed = {"a": lod_tensor(np.ones((3, 2), "float32"), [[1, 2]]), "b": lod_tensor(np.ones((3, 2), "float32"), [[3]])}
    with pytest.raises(Exception, match=r"same number of sequences.*'a' with 2, 'b' with 1"):
        exe.run(main, feed=feed, fetch_list=[out], return_numpy=False)


def test_bad_pool_type_leaves_the_program_as_it_was():
    main, start = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, start):
        x = fluid.data("x", [None, 2], lod_level=1)
        before = (len(main.global_block().ops), sorted(main.global_block().vars))
        with pytest.raises(ValueError, match="pool_type must be one of.*Received: 'median'"):
            L.sequence_pool(x, "median")
        assert (len(main.global_block().ops), sorted(main.global_block().vars)) == before


def test_sequence_op_on_a_tensor_without_lod_says_how_to_feed_one():
    with pytest.raises(Exception, match="does not contain LoD information: feed it as a LoDTensor"):
        run_one(lambda: L.sequence_softmax(fluid.data("x", [None, 1])), {"x": np.ones((3, 1), "float32")})


def test_data_feeder_refuses_a_field_that_is_not_a_sequence():
    ids = fluid.data("ids", [None, 1], dtype="int64", lod_level=1)
    feeder = fluid.DataFeeder(feed_list=[ids], place=fluid.CPUPlace())
    with pytest.raises(ValueError, match="'ids' has lod_level 1.*Received: 7"):
        feeder.feed([([1, 2],), (7,)])


def test_text_classifier_over_sequences_trains():
    """embedding -> sequence_conv_pool and dynamic_lstm + last step -> softmax, Adam, fed through
    DataFeeder: sequences holding word 1 are class 1; the classifier learns it."""
    rng = np.random.RandomState(3)
    samples = []
    for i in range(32):
        words = list(rng.randint(2, 10, size=rng.randint(2, 7)))
        label = i % 2
        if label:
            words[rng.randint(len(words))] = 1
        samples.append((words, [label]))
    main, start = fluid.Program(), fluid.Program()
    main.random_seed = start.random_seed = 5
    with fluid.program_guard(main, start):
        words = fluid.data("words", [None, 1], dtype="int64", lod_level=1)
        label = fluid.data("label", [None, 1], dtype="int64")
        emb = L.embedding(words, size=[10, 8])
        conv = fluid.nets.sequence_conv_pool(emb, num_filters=8, filter_size=3, act="tanh", pool_type="max")
        hidden, _ = L.dynamic_lstm(L.fc(emb, 16), 16)
        last = L.sequence_last_step(hidden)
        prob = L.fc([conv, last], 2, act="softmax")
        loss = L.mean(L.cross_entropy(prob, label))
        acc = L.accuracy(prob, label)
        fluid.optimizer.Adam(0.05).minimize(loss)
    feeder = fluid.DataFeeder(feed_list=[words, label], place=fluid.CPUPlace())
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(start)
    feed = feeder.feed(samples)
    first = None
    for _ in range(40):
        lv, av = exe.run(main, feed=feed, fetch_list=[loss, acc])
        first = lv if first is None else first
    assert float(lv) < 0.25 * float(first) and float(av) == 1.0, (first, lv, av)


def test_vlog_lines_show_the_lod_as_fluid_did():
    """GLOG_vmodule=operator=3: each variable's LoD as fluid 1.8.5 printed it (``({{0, 2, 5}})``).
    One difference is left: fluid printed sequence_pool's unused MaxIndex as an empty tensor
    (``:[0]({})``), fluidcompat as never written (``[uninited]``)."""
    golden = os.path.join(os.path.dirname(os.path.abspath(__file__)), "golden")
    proc = subprocess.run(
        [sys.executable, "-m", "fluidcompat", "run", "--device", "cpu", os.path.join(golden, "lod_vlog.py")],
        capture_output=True,
        text=True,
        timeout=120,
        env=dict(os.environ, GLOG_vmodule="operator=3", GLOG_logtostderr="1"),
    )
    assert proc.returncode == 0, proc.stderr
    got = [line.split("operator.cc:180] ", 1)[1] for line in proc.stderr.splitlines() if "operator.cc:180]" in line]
    with open(os.path.join(golden, "lod_vlog.txt")) as f:
        want = f.read().strip().splitlines()

    def unused_max_index(lines):
        return [re.sub(r"MaxIndex\[.*?\], Out\[", "MaxIndex[], Out[", line) for line in lines]

    assert unused_max_index(got) == unused_max_index(want)


def test_a_planned_copy_keeps_the_lod():
    """Copies between devices (device_guard on a GPU) carry the value's LoD to the copy."""
    import torch

    from fluidcompat.executor.interpreter import _lod_to

    t = torch.ones(5, 2)
    t._lod = [[0, 2, 5]]
    moved = _lod_to(t, torch.device("meta"))
    assert moved is not t and moved.device.type == "meta" and moved._lod == [[0, 2, 5]]


@pytest.mark.cuda
@pytest.mark.skipif(not places.cuda_available(), reason="needs a CUDA device")
def test_sequences_across_devices_on_cuda():
    """An embedding guarded to the CPU feeding sequence ops on the GPU: the LoD crosses the copy,
    and the values are the CPU run's."""
    rows = np.arange(12, dtype="float32").reshape(6, 2) / 10

    def build():
        x = fluid.data("x", [None, 2], lod_level=1)
        with fluid.device_guard("cpu"):
            y = L.scale(x, 2.0)
        return L.sequence_pool(L.sequence_conv(y, 3, param_attr=fluid.initializer.Constant(0.1)), "max")

    results = []
    for place in (fluid.CPUPlace(), fluid.CUDAPlace(0)):
        main, start = fluid.Program(), fluid.Program()
        with fluid.program_guard(main, start):
            out = build()
        exe = fluid.Executor(place)
        exe.run(start)
        results.append(exe.run(main, feed={"x": lod_tensor(rows, [[2, 4]])}, fetch_list=[out])[0])
    np.testing.assert_allclose(results[1], results[0], rtol=1e-6)


def test_lod_append_of_a_level_that_does_not_fit_is_refused_where_it_is_made():
    """fluid 1.8.5 appended it and failed later, in whichever sequence op read it ("The input lod
    information is illegal"); here lod_append itself says what the level must be."""
    rows = np.arange(12, dtype="float32").reshape(6, 2)
    with pytest.raises(Exception, match=r"lod_append: the appended level \[0, 1, 2, 3, 5, 6\] must have .* 7 offsets"):
        run_one(
            lambda: L.lod_append(fluid.data("x", [None, 2], lod_level=1), [0, 1, 2, 3, 5, 6]),
            {"x": lod_tensor(rows, [[2, 4]])},
        )
    out, _ = run_one(
        lambda: L.lod_append(fluid.data("x", [None, 2], lod_level=1), [0, 1, 2, 3, 4, 5, 6]),
        {"x": lod_tensor(rows, [[2, 4]])},
    )
    assert out.lod() == [[0, 2, 6], [0, 1, 2, 3, 4, 5, 6]]


def test_a_persistable_keeps_its_scope_lod_in_the_program():
    """A persistable whose scope LoDTensor holds a LoD is read with it, and a LoD value written to a
    persistable is kept in the scope with its LoD."""
    rows = np.arange(10, dtype="float32").reshape(5, 2)
    main, start = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, start):
        # its value is set in the scope below
        table = main.global_block().create_var(
            name="table", shape=[5, 2], dtype="float32", persistable=True, lod_level=1
        )
        pooled = L.sequence_pool(table, "sum")
        kept = L.create_global_var([5, 2], 0.0, "float32", persistable=True, name="kept")
        L.assign(L.scale(table, 2.0), kept)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(start)
    tensor = fluid.global_scope().var("table").get_tensor()
    tensor.set(rows, fluid.CPUPlace())
    tensor.set_recursive_sequence_lengths([[2, 3]])
    out = exe.run(main, fetch_list=[pooled])[0]
    np.testing.assert_array_equal(out, [rows[:2].sum(0), rows[2:].sum(0)])
    assert fluid.global_scope().find_var("kept").get_tensor().lod() == [[0, 2, 5]]


def test_a_list_fed_to_a_lod_variable_gets_fluids_error_and_the_way_out():
    main, start = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, start):
        x = fluid.data("x", [None, 1], dtype="int64", lod_level=1)
        y = L.sequence_pool(L.cast(x, "float32"), "sum")
    exe = fluid.Executor(fluid.CPUPlace())
    with pytest.raises(RuntimeError, match=r"Some of your feed data hold LoD information.*'x' has lod_level 1"):
        exe.run(main, feed={"x": [[1], [2, 3]]}, fetch_list=[y])


def test_dynamic_rnn_refuses_misuse_with_its_reason():
    x = fluid.data("x", [None, 2], lod_level=1)
    rnn = L.DynamicRNN()
    with pytest.raises(ValueError, match="step_input can only be invoked inside rnn block"):
        rnn.step_input(x)
    with pytest.raises(ValueError, match="only be visited outside the rnn block"):
        rnn()
    with rnn.block():
        with pytest.raises(ValueError, match="call step_input before memory"):
            rnn.memory(shape=[2])
        word = rnn.step_input(x)
        rnn.output(L.scale(word, 2.0))
    with pytest.raises(ValueError, match="block\\(\\) can only be invoke once"):
        with rnn.block():
            pass
    rows = np.arange(10, dtype="float32").reshape(5, 2)
    exe = fluid.Executor(fluid.CPUPlace())
    out = exe.run(feed={"x": lod_tensor(rows, [[3, 2]])}, fetch_list=[rnn()], return_numpy=False)[0]
    assert out.lod() == [[0, 3, 5]]
    np.testing.assert_array_equal(np.array(out), rows * 2)


def test_im2sequence_with_image_sizes_trains():
    """The gradient of im2sequence with input_image_size (fluid 1.8.5's grad op failed there): each
    input pixel gets the sum of its patches' gradients (numpy scatter-add of 2 * patch)."""
    import math

    shape, sizes, k, p = (2, 1, 5, 5), [[5, 4], [2, 3]], 3, 1
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [None, 1, 5, 5], "float32")
        x.stop_gradient = False
        sz = fluid.data("sz", [None, 2], "float32")
        y = fluid.layers.im2sequence(x, filter_size=k, padding=p, input_image_size=sz)
        fluid.backward.append_backward(fluid.layers.reduce_sum(y * y))
    xv = np.sin(np.arange(50) * 0.37).reshape(shape).astype("float32")
    exe = fluid.Executor(fluid.CPUPlace())
    out, grad = exe.run(
        main, feed={"x": xv, "sz": np.array(sizes, "float32")}, fetch_list=[y, "x@GRAD"], return_numpy=False
    )
    want = np.zeros((2, 1, 7, 7), "float32")
    rows, counts = [], []
    for n, (h, w) in enumerate(sizes):
        xp = np.pad(xv[n], ((0, 0), (p, p), (p, p)))
        oh, ow = math.ceil(h) + 2 * p - k + 1, math.ceil(w) + 2 * p - k + 1
        for i in range(oh):
            for j in range(ow):
                patch = xp[:, i : i + k, j : j + k]
                rows.append(patch.reshape(-1))
                want[n, :, i : i + k, j : j + k] += 2 * patch
        counts.append(oh * ow)
    assert out.lod() == [list(np.cumsum([0] + counts))]
    np.testing.assert_allclose(np.array(out), np.array(rows), rtol=1e-6)
    np.testing.assert_allclose(np.array(grad), want[:, :, p:-p, p:-p], rtol=1e-5, atol=1e-6)


def test_reorder_lod_tensor_by_rank_takes_an_empty_sequence():
    """fluid 1.8.5 failed on an empty sequence ("The start row index must be lesser than the end row
    index"); it goes last here, with the LoD saying so."""
    from fluidcompat.layers import control_flow as cf

    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        x = fluid.data("x", [None, 2], "float32", lod_level=1)
        y = fluid.layers.reorder_lod_tensor_by_rank(x, cf.lod_rank_table(x))
    xv = np.arange(12, dtype="float32").reshape(6, 2)
    feed = {"x": fluid.create_lod_tensor(xv, [[2, 0, 3, 1]], fluid.CPUPlace())}
    (got,) = fluid.Executor(fluid.CPUPlace()).run(main, feed=feed, fetch_list=[y], return_numpy=False)
    np.testing.assert_array_equal(np.array(got), np.concatenate([xv[2:5], xv[0:2], xv[5:6]]))
    assert got.lod() == [[0, 3, 5, 6, 6]]


def test_reorder_lod_tensor_by_rank_refuses_a_plain_variable_as_the_table():
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        x = fluid.data("x", [None, 2], "float32", lod_level=1)
        with pytest.raises(TypeError, match="'rank_table' in reorder_lod_tensor_by_rank must be a LOD_RANK_TABLE"):
            fluid.layers.reorder_lod_tensor_by_rank(x, x)
    assert not main.global_block().ops


def test_while_loop_over_rank_ordered_steps_trains():
    """A hand-written dynamic RNN (a running sum) over lod_tensor_to_array steps with a memory cut by
    shrink_memory: the input's gradient equals numpy's (fluid 1.8.5's backward failed on this loop:
    "Tensor holds no memory")."""
    from fluidcompat.layers import control_flow as cf

    L = fluid.layers
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        x = fluid.data("x", [None, 2], "float32", lod_level=1)
        x.stop_gradient = False
        table = cf.lod_rank_table(x)
        arr = cf.lod_tensor_to_array(x, table)
        steps, i = cf.max_sequence_len(table), L.zeros([1], "int64")
        mem = L.fill_constant_batch_size_like(L.array_read(arr, i), [-1, 2], "float32", 0.0)
        mem.stop_gradient = False
        outs = L.create_array("float32")
        cond = L.less_than(i, steps)
        loop = L.While(cond)
        with loop.block():
            new = L.elementwise_add(cf.shrink_memory(mem, i, table), L.array_read(arr, i))
            L.assign(new, mem)
            L.array_write(new, i, array=outs)
            L.increment(i, 1, in_place=True)
            L.less_than(i, steps, cond=cond)
        summed = cf.array_to_lod_tensor(outs, table)
        fluid.backward.append_backward(L.reduce_sum(summed * summed))
    lens = [2, 4, 1, 2]
    xv = np.arange(18, dtype="float32").reshape(9, 2) / 10
    feed = {"x": fluid.create_lod_tensor(xv, [lens], fluid.CPUPlace())}
    got_sum, got_grad = fluid.Executor(fluid.CPUPlace()).run(
        main, feed=feed, fetch_list=[summed, "x@GRAD"], return_numpy=False
    )
    offsets = np.cumsum([0] + lens)
    running = np.concatenate([np.cumsum(xv[a:b], 0) for a, b in zip(offsets, offsets[1:])])
    # d sum(s_t^2) / d x_u = sum over t >= u (same sequence) of 2 s_t
    want = np.concatenate(
        [np.flip(np.cumsum(np.flip(2 * running[a:b], 0), 0), 0) for a, b in zip(offsets, offsets[1:])]
    )
    np.testing.assert_allclose(np.array(got_sum), running, rtol=1e-5)
    np.testing.assert_allclose(np.array(got_grad), want, rtol=1e-5)
    assert got_sum.lod() == [list(offsets)]


def _attention_translator(dtype):
    """The fluid book's machine-translation model, small: a bidirectional dynamic_lstm encoder whose
    states enter a DynamicRNN attention decoder as two static inputs, the memory booted from the
    backward LSTM's first step."""
    L = fluid.layers
    src = fluid.data("src", [None, 3], dtype, lod_level=1)
    trg = fluid.data("trg", [None, 3], dtype, lod_level=1)
    fwd, _ = L.dynamic_lstm(L.fc(src, 16, param_attr="enc_fwd_w", bias_attr="enc_fwd_b"), 16, dtype=dtype)
    bwd, _ = L.dynamic_lstm(L.fc(src, 16, param_attr="enc_bwd_w"), 16, is_reverse=True, dtype=dtype)
    enc = L.concat([fwd, bwd], axis=1)
    enc_proj = L.fc(enc, 4, bias_attr=False)
    boot = L.fc(L.sequence_pool(bwd, "first"), 4, bias_attr=False, act="tanh")
    rnn = L.DynamicRNN()
    with rnn.block():
        word = rnn.step_input(trg)
        vec, proj = rnn.static_input(enc), rnn.static_input(enc_proj)
        state = rnn.memory(init=boot, need_reorder=True)
        mixed = L.elementwise_add(proj, L.sequence_expand(L.fc(state, 4, bias_attr=False), proj))
        weights = L.reshape(L.sequence_softmax(L.fc(mixed, 1, bias_attr=False)), [-1])
        context = L.sequence_pool(L.elementwise_mul(vec, weights, axis=0), "sum")
        new_state = L.fc([word, context], 4, bias_attr=False, act="tanh")
        rnn.update_memory(state, new_state)
        rnn.output(new_state)
    return L.reduce_sum(rnn() * rnn())


def test_dynamic_rnn_static_inputs_pass_gradients_back_to_the_encoder():
    """Gradients reach the encoder through the DynamicRNN's static inputs (checked against finite
    differences). fluid 1.8.5 gave the book model's forward-LSTM input bias a zero gradient (it
    feeds the decoder only through the static inputs) and a wrong embedding gradient, so its losses
    after the first step differ from fluidcompat's in the second digit."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        loss = _attention_translator("float64")
        (grad,) = fluid.gradients([loss], [main.global_block().var("enc_fwd_b")])
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    rng = np.random.RandomState(0)
    feed = {
        "src": fluid.create_lod_tensor(rng.uniform(-1, 1, (7, 3)), [[3, 1, 3]], fluid.CPUPlace()),
        "trg": fluid.create_lod_tensor(rng.uniform(-1, 1, (6, 3)), [[2, 3, 1]], fluid.CPUPlace()),
    }
    with fluid.scope_guard(scope):
        exe.run(startup)
        tensor = scope.find_var("enc_fwd_b").get_tensor()
        base = np.array(tensor)
        analytic = np.array(exe.run(main, feed=feed, fetch_list=[grad])[0])
        numeric = np.zeros_like(base)
        for i in range(base.size):
            values = []
            for step in (1e-6, -1e-6):
                shifted = base.copy()
                shifted.flat[i] += step
                tensor.set(shifted, fluid.CPUPlace())
                values.append(float(exe.run(main, feed=feed, fetch_list=[loss])[0][0]))
            numeric.flat[i] = (values[0] - values[1]) / 2e-6
        tensor.set(base, fluid.CPUPlace())
    assert np.abs(numeric).max() > 1e-3  # the bias matters to the loss
    np.testing.assert_allclose(analytic, numeric, rtol=1e-5, atol=1e-8)
