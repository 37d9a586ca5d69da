"""Recomputation: what the backward pass no longer reads, the dropout mask drawn again, and misuse
(the program against fluid 1.8.5: test_goldens)."""

from __future__ import annotations

import numpy as np
import pytest

import fluidcompat as fluid

L = fluid.layers


def _mlp(recompute, dropout=False):
    x = fluid.data("x", [None, 6], "float32")
    y = fluid.data("y", [None, 1], "int64")
    h1 = L.fc(x, 8, act="relu")
    h2 = L.fc(h1, 8, act="tanh")
    if dropout:
        h2 = L.dropout(h2, 0.5)
    h3 = L.fc(h2, 8, act="relu")
    loss = L.mean(L.softmax_with_cross_entropy(L.fc(h3, 3), y))
    inner = fluid.optimizer.SGD(0.1)
    if recompute:
        opt = fluid.optimizer.RecomputeOptimizer(inner)
        opt._set_checkpoints([h1, h3])
        opt.minimize(loss)
    else:
        inner.minimize(loss)
    return loss


def _read_after_loss(program, loss):
    ops = program.global_block().ops
    at = next(i for i, op in enumerate(ops) if loss.name in op.output_arg_names)
    return {n for op in ops[at + 1 :] for n in op.input_arg_names}


def test_the_backward_pass_reads_recomputed_values_only():
    """Without recompute the grad ops read the segment's activations (kept from the forward pass until
    then); with it they read their recomputed copies, so the executor frees the originals after the
    forward pass. The losses are the same."""
    inside = {"fc_1.tmp_0", "fc_1.tmp_2", "fc_2.tmp_0"}  # what the segment's grad ops read
    plain_loss = _mlp(False)
    plain = fluid.default_main_program()
    assert inside <= _read_after_loss(plain, plain_loss)
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        loss = _mlp(True)
    read = _read_after_loss(main, loss)
    assert not (inside | {"fc_1.tmp_1", "fc_2.tmp_1"}) & read
    assert {n + ".subprog_0" for n in inside} <= read
    exe = fluid.Executor(fluid.CPUPlace())
    rng = np.random.RandomState(0)
    feeds = [{"x": rng.rand(4, 6).astype("float32"), "y": rng.randint(0, 3, (4, 1)).astype("int64")} for _ in range(3)]
    got = []
    for prog, start, lo in ((plain, fluid.default_startup_program(), plain_loss), (main, startup, loss)):
        scope = fluid.Scope()
        with fluid.scope_guard(scope):
            exe.run(start)
            for k, p in enumerate(sorted(q.name for q in prog.global_block().all_parameters())):
                shape = np.array(scope.find_var(p).get_tensor()).shape
                scope.find_var(p).get_tensor().set(
                    np.random.RandomState(k).uniform(-0.5, 0.5, shape).astype("float32"), fluid.CPUPlace()
                )
            got.append([exe.run(prog, feed=f, fetch_list=[lo])[0] for f in feeds])
    np.testing.assert_allclose(got[0], got[1], rtol=1e-6)


def test_a_recomputed_dropout_draws_its_mask_again():
    loss = _mlp(True, dropout=True)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(fluid.default_startup_program())
    feed = {"x": np.ones((16, 6), "float32"), "y": np.zeros((16, 1), "int64")}
    for _ in range(2):
        first, again = exe.run(feed=feed, fetch_list=["dropout_0.tmp_1", "dropout_0.tmp_1.subprog_0"])
        np.testing.assert_array_equal(first, again)
        assert 0 < first.mean() < 1  # a real mask
    assert loss.name == "mean_0.tmp_0"


def test_recompute_misuse_is_refused_and_leaves_the_program():
    x = fluid.data("x", [None, 4], "float32")
    h = L.fc(x, 4)
    out = L.cond(L.reduce_sum(h) > 0, lambda: h * 2.0, lambda: h * 3.0)
    loss = L.mean(L.fc(out, 1))
    before = str(fluid.default_main_program())
    opt = fluid.optimizer.RecomputeOptimizer(fluid.optimizer.SGD(0.1))
    with pytest.raises(ValueError, match="You should call _set_checkpoints first"):
        opt.minimize(loss)
    opt._set_checkpoints([h])
    with pytest.raises(NotImplementedError, match="does not support ops with a sub-block: op 'conditional_block'"):
        opt.minimize(loss)
    assert str(fluid.default_main_program()) == before
    with pytest.raises(TypeError, match="checkpoints must be Variables or names. Received: int"):
        fluid.backward.append_backward(loss, checkpoints=[3])
