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


def _tree_nodes_grad_by_finite_differences(nodes, edges, weight, max_depth, upstream):
    """d/d nodes of sum(tree_conv(nodes) * upstream), central differences in float64."""
    import torch

    from fluidcompat.executor.scope import LoDTensor  # noqa: F401  (the op library is loaded)
    from fluidcompat_ops import lookup

    kernel = lookup("tree_conv").kernel

    def f(x):
        ins = {
            "NodesVector": [torch.tensor(x)],
            "EdgeSet": [torch.tensor(edges)],
            "Filter": [torch.tensor(weight, dtype=torch.float64)],
        }
        return float((kernel(ins, {"max_depth": max_depth})["Out"][0].numpy() * upstream).sum())

    grad = np.zeros_like(nodes)
    for idx in np.ndindex(nodes.shape):
        for sign in (1.0, -1.0):
            x = nodes.copy()
            x[idx] += sign * 1e-6
            grad[idx] += sign * f(x) / 2e-6
    return grad


def test_tree_conv_matches_fluid():
    """contrib.layers.tree_conv (two stacked, per-node bias, tanh / relu) and dygraph TreeConv:
    parameter names and shapes, ops, outputs, the loss and the gradients that do not go through
    tree_conv's NodesVector gradient, as fluid 1.8.5. fluid 1.8.5's NodesVector gradient disagreed
    with finite differences of its own forward: here it is checked against them (and the filter
    and bias gradients it feeds then follow)."""
    from tests.test_dygraph import _close
    from tests.test_goldens import load, run_fluidcompat

    got, want = run_fluidcompat("tree_conv.py"), load("tree_conv.json")
    assert got["static_params"] == want["static_params"] and got["static_ops"] == want["static_ops"]
    # fetched: h, h2, loss, nodes@GRAD, then the gradients of tree_conv_0.b_0, tree_conv_0.w_0, tree_conv_1.w_0
    for k in (0, 1, 2, 6):
        _close(got["static"][k], want["static"][k], f"static[{k}]")
    for g_layer, w_layer in zip(got["dygraph"], want["dygraph"]):
        assert g_layer[0] == w_layer[0] and g_layer[1] == w_layer[1]
        shape = w_layer[1]
        g_y, w_y = np.reshape(g_layer[2], shape), np.reshape(w_layer[2], shape)
        # the first sample's tree has 4 nodes: fluid 1.8.5 left whatever its buffer held in the rows
        # of the other 3; here they are zeros (plus the bias, if any)
        np.testing.assert_allclose(g_y[0, :4], w_y[0, :4], atol=1e-4)
        np.testing.assert_allclose(g_y[1], w_y[1], atol=1e-4)
        outside = g_y[0, 4:]
        assert np.allclose(outside, outside.reshape(-1)[0]) and (len(g_layer[0]) == 2 or not outside.any())
    # the first layer's filter gradient (no bias) reads only the forward and the output gradient
    _close(got["dygraph"][0][4], want["dygraph"][0][4], "dygraph filter gradient")


def test_tree_conv_nodes_gradient_matches_finite_differences():
    import torch

    rs = np.random.RandomState(4)
    nodes = rs.uniform(-1, 1, (2, 6, 3))
    edges = np.array([[[1, 2], [1, 3], [2, 4], [2, 5], [3, 6]], [[1, 3], [3, 2], [0, 0], [0, 0], [0, 0]]], "int32")
    weight = rs.uniform(-1, 1, (3, 3, 4, 2))
    upstream = rs.uniform(-1, 1, (2, 6, 4, 2))
    from fluidcompat_ops import lookup

    x = torch.tensor(nodes, requires_grad=True)
    w = torch.tensor(weight, requires_grad=True)
    ins = {"NodesVector": [x], "EdgeSet": [torch.tensor(edges)], "Filter": [w]}
    out = lookup("tree_conv").kernel(ins, {"max_depth": 3})["Out"][0]
    (out * torch.tensor(upstream)).sum().backward()
    want = _tree_nodes_grad_by_finite_differences(nodes, edges, weight, 3, upstream)
    np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-6, atol=1e-7)
    assert not out[1, 3:].detach().numpy().any()  # nodes outside the second tree


def test_tree_conv_bad_input_is_named():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        nodes = fluid.data("nodes", [1, 4, 2], "float32")
        edges = fluid.data("edges", [1, 3, 2], "int32")
        with pytest.raises(ValueError, match="nodes_vector must be 3-D"):
            fluid.contrib.layers.tree_conv(fluid.data("flat", [4, 2], "float32"), edges, 3)
        assert not main.global_block().ops and not startup.global_block().ops
        out = fluid.contrib.layers.tree_conv(nodes, edges, 3, max_depth=1)
    assert main.global_block().ops[0].input("Filter") == ["tree_conv_0.w_0"]  # no name was used up
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    with pytest.raises(Exception, match="max_depth must be larger than 1. Received: 1"):
        exe.run(
            main,
            feed={"nodes": np.ones((1, 4, 2), "float32"), "edges": np.array([[[1, 2], [1, 3], [0, 0]]], "int32")},
            fetch_list=[out],
        )


def test_match_matrix_and_topk_avg_pooling_match_fluid():
    """contrib.match_matrix_tensor (with and without tanh) feeding sequence_topk_avg_pooling (k up
    to more than a row holds): outputs, LoDs, Tmp, the pooled features, the loss and the gradients
    of X, Y and W, as fluid 1.8.5."""
    from tests.test_dygraph import _close
    from tests.test_goldens import load, run_fluidcompat

    got, want = run_fluidcompat("match_matrix.py"), load("match_matrix.json")
    assert sorted(got) == sorted(want) == ["c2", "c3"]
    _close(got, want, "")


def test_match_matrix_bad_input_is_named():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [None, 3], "float32", lod_level=1)
        with pytest.raises(
            ValueError, match=r"x and y must be 2-D with the same width. Received: x \[-1, 3\], y \[-1, 4\]"
        ):
            fluid.contrib.match_matrix_tensor(x, fluid.data("y", [None, 4], "float32", lod_level=1), 2)
        assert not main.global_block().ops
        out, _ = fluid.contrib.match_matrix_tensor(x, fluid.data("y2", [None, 3], "float32", lod_level=1), 2)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    with pytest.raises(Exception, match="X has 2 sequences but Y has 1"):
        exe.run(
            main,
            feed={
                "x": fluid.create_lod_tensor(np.ones((3, 3), "float32"), [[1, 2]], fluid.CPUPlace()),
                "y2": fluid.create_lod_tensor(np.ones((2, 3), "float32"), [[2]], fluid.CPUPlace()),
            },
            fetch_list=[out],
        )


def test_var_conv_2d_matches_fluid():
    """contrib.var_conv_2d with square and oblong kernels, strides 1 and (2, 1), a 1 x 1 image and
    relu: outputs, LoDs, the im2col matrix, the loss and the gradients of the input and the filter, as
    fluid 1.8.5."""
    from tests.test_dygraph import _close
    from tests.test_goldens import load, run_fluidcompat

    got, want = run_fluidcompat("var_conv.py"), load("var_conv.json")
    assert sorted(got) == sorted(want) == ["k1s2", "k2x3s2", "k3s1"]
    _close(got, want, "")


def test_tdm_child_matches_fluid(tmp_path):
    """contrib.layers.tdm_child: children and leaf masks of [N, 1] and [N, 3] node ids (node 0 as
    padding, a child without an item id not a leaf) as fluid 1.8.5; an id outside the tree is named."""
    from tests.test_goldens import load, run_fluidcompat

    assert run_fluidcompat("tdm_child.py") == load("tdm_child.json")
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        ids = fluid.data("ids", [None, 1], "int32")
        child, _ = fluid.contrib.layers.tdm_child(ids, 3, 2)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    with pytest.raises(Exception, match="X holds node ids 1..5, but the tree has nodes 0..2"):
        exe.run(main, feed={"ids": np.array([[1], [5]], "int32")}, fetch_list=[child])


def test_topk_pooling_names_mismatched_sequences():
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        v = fluid.data("v", [None, 1], "float32", lod_level=1)
        r = fluid.data("r", [None, 1], "float32", lod_level=1)
        c = fluid.data("c", [None, 1], "float32", lod_level=1)
        out = fluid.contrib.sequence_topk_avg_pooling(v, r, c, [1], 1)
    place = fluid.CPUPlace()
    feed = {
        "v": fluid.create_lod_tensor(np.ones((6, 1), "float32"), [[4, 2]], place),
        "r": fluid.create_lod_tensor(np.zeros((2, 1), "float32"), [[2]], place),
        "c": fluid.create_lod_tensor(np.zeros((2, 1), "float32"), [[2]], place),
    }
    with pytest.raises(Exception, match="X, ROW and COLUMN must hold as many sequences; they hold 2, 1 and 1"):
        fluid.Executor(place).run(main, feed=feed, fetch_list=[out])
    feed["v"] = fluid.create_lod_tensor(np.ones((5, 1), "float32"), [[5]], place)
    with pytest.raises(Exception, match=r"sequence 0 of X has 5 values; channel_num \* rows \* columns = 1 \* 2 \* 2"):
        fluid.Executor(place).run(main, feed=feed, fetch_list=[out])


def test_tdm_sampler_matches_fluid():
    """contrib.layers.tdm_sampler with a seed draws fluid 1.8.5's negatives (one std::mt19937_64 per
    layer, libstdc++'s uniform_int_distribution, distinct nodes other than the path's): as lists and
    flat, without the positive, int64 trees and outputs, padding in a path, a 300-node layer; the
    program (ops, attributes, parameters, shapes, dtypes) and the errors as fluid 1.8.5."""
    from tests.test_goldens import load, run_fluidcompat

    got, want = run_fluidcompat("tdm_sampler.py"), load("tdm_sampler.json")
    assert got == want
    assert want["flat"]["runs"][0] == want["flat"]["runs"][1]  # a seed: the same draws every run


def test_mt19937_64_is_the_standard_engine():
    """The C++ standard's check: the 10000th output of a default-seeded (5489) mt19937_64."""
    from fluidcompat_ops.mt19937_64 import MT19937_64

    engine = MT19937_64(5489)
    for _ in range(9999):
        engine.next()
    assert engine.next() == 9981545732273789042


def test_tdm_sampler_without_a_seed_draws_afresh():
    """Seed 0 takes a new seed each run: the negatives change between runs, the positives do not."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        ids = fluid.data("ids", [None, 1], "int32")
        nodes = np.arange(1, 43, dtype="int32").reshape(-1, 1)
        travel = np.array([[1, 3 + i] for i in range(40)], "int32")
        out, _, _ = fluid.contrib.layers.tdm_sampler(
            ids, [1, 10], [2, 40], 40, output_list=False,
            tree_travel_attr=fluid.ParamAttr(initializer=fluid.initializer.NumpyArrayInitializer(travel)),
            tree_layer_attr=fluid.ParamAttr(initializer=fluid.initializer.NumpyArrayInitializer(nodes)),
        )  # fmt: skip
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    feed = {"ids": np.arange(8, dtype="int32").reshape(-1, 1)}
    a, b = (exe.run(main, feed=feed, fetch_list=[out])[0] for _ in range(2))
    np.testing.assert_array_equal(a[:, [0, 2]], b[:, [0, 2]])
    np.testing.assert_array_equal(a[:, 2], np.arange(3, 11))
    assert not np.array_equal(a[:, 3:], b[:, 3:])


def _rank_attention_np(x, offsets, param, max_rank):
    """The documented formula, one instance and neighbour at a time."""
    d, cols = x.shape[1], param.shape[1]
    blocks = param.reshape(max_rank * max_rank, d, cols)
    out = np.zeros((x.shape[0], cols))
    for i, row in enumerate(offsets):
        own = row[0] - 1
        for k in range(max_rank):
            rank, index = row[1 + 2 * k] - 1, row[2 + 2 * k]
            if own >= 0 and rank >= 0:
                out[i] += x[index] @ blocks[own * max_rank + rank]
    return out


def test_rank_attention_program_matches_fluid_and_values_numpy():
    """contrib.layers.rank_attention builds fluid 1.8.5's program (names, shapes, slots, the grad op
    giving RankParam's gradient only, the initializer; golden rank_attention) and, where fluid 1.8.5
    had only a CUDA kernel, computes the documented formula on any device: checked against numpy
    with missing neighbours and an instance without a rank, and its parameter gradient against
    finite differences."""
    from tests.test_goldens import load, run_fluidcompat

    assert run_fluidcompat("rank_attention.py") == load("rank_attention.json")
    rs = np.random.RandomState(4)
    x = rs.uniform(-1, 1, (5, 3)).astype("float32")
    rows = [[1, 1, 0, 2, 1, 3, 2], [2, 1, 0, 2, 1, 0, 0], [3, 3, 4, 1, 2, 2, 3], [0, 1, 0, 2, 1, 3, 2]]
    offsets = np.array(rows + [[2, 2, 4, 0, 0, 1, 1]], "int32")
    param = rs.uniform(-1, 1, (27, 2)).astype("float32")
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        xv = fluid.data("x", [None, 3], "float32")
        ro = fluid.data("ro", [None, 7], "int32")
        init = fluid.initializer.NumpyArrayInitializer(param)
        out = fluid.contrib.layers.rank_attention(xv, ro, [27, 2], fluid.ParamAttr(name="rp", initializer=init), 3)
        weights = rs.uniform(-1, 1, (5, 2)).astype("float32")
        loss = fluid.layers.reduce_sum(fluid.layers.elementwise_mul(out, fluid.layers.assign(weights)))
        fluid.backward.append_backward(loss)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    got, grad = exe.run(main, feed={"x": x, "ro": offsets}, fetch_list=[out, "rp@GRAD"])
    np.testing.assert_allclose(got, _rank_attention_np(x, offsets, param, 3), rtol=1e-5, atol=1e-6)
    assert np.all(got[3] == 0)  # no rank of its own: nothing
    numeric = np.zeros(param.shape)
    for j in np.ndindex(param.shape):
        for sign in (1, -1):
            moved = param.astype("float64")
            moved[j] += sign * 1e-6
            numeric[j] += sign * np.sum(_rank_attention_np(x, offsets, moved, 3) * weights) / 2e-6
    np.testing.assert_allclose(grad, numeric, rtol=1e-4, atol=1e-5)
    bad = offsets.copy()
    bad[0, 2] = 9
    with pytest.raises(fluid.core.EnforceNotMet, match="RankOffset holds row indices outside X's 5 rows"):
        exe.run(main, feed={"x": x, "ro": bad}, fetch_list=[out])
