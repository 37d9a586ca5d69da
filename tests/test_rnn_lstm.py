"""fluid.layers.lstm (op cudnn_lstm): the program as fluid 1.8.5 builds it (golden cudnn_lstm), values
and gradients against a numpy LSTM reading the flat weight in cuDNN's order, dropout between
layers, and the errors."""

from __future__ import annotations

import numpy as np
import pytest

import fluidcompat as fluid
from fluidcompat_ops.recurrent import cudnn_lstm_weight_size
from tests.numpy_ref import lstm_time_major as numpy_lstm

L = fluid.layers


def _program(layers, bidi, dtype="float64", **kw):
    """x [6, 2, 3], h0 / c0 fed; loss = sum(out * r1) + sum(last_h * r2) + sum(last_c * r3)."""
    dirs = 2 if bidi else 1
    x = fluid.data("x", [6, 2, 3], dtype)
    h0 = fluid.data("h0", [layers * dirs, 2, 4], dtype)
    c0 = fluid.data("c0", [layers * dirs, 2, 4], dtype)
    for v in (x, h0, c0):
        v.stop_gradient = False
    out, h, c = L.lstm(x, h0, c0, 6, 4, layers, is_bidirec=bidi, **kw)
    rs = np.random.RandomState(1)
    # float32 constants (what assign_value holds) cast to the LSTM's dtype: elementwise ops take one dtype
    weights = [rs.uniform(-1, 1, v.shape).astype("float32") for v in (out, h, c)]
    consts = [L.cast(L.assign(w), dtype) for w in weights]
    weights = [w.astype(dtype) for w in weights]
    loss = L.reduce_sum(L.elementwise_mul(out, consts[0]))
    loss = loss + L.reduce_sum(L.elementwise_mul(h, consts[1]))
    loss = loss + L.reduce_sum(L.elementwise_mul(c, consts[2]))
    fluid.backward.append_backward(loss)
    return (out, h, c, loss), weights


def _feed(layers, bidi, dtype="float64"):
    rs = np.random.RandomState(7)
    dirs = 2 if bidi else 1
    return {
        "x": rs.uniform(-1, 1, (6, 2, 3)).astype(dtype),
        "h0": rs.uniform(-0.5, 0.5, (layers * dirs, 2, 4)).astype(dtype),
        "c0": rs.uniform(-0.5, 0.5, (layers * dirs, 2, 4)).astype(dtype),
    }


@pytest.mark.parametrize("layers, bidi", [(1, False), (2, False), (1, True), (2, True)])
def test_values_and_gradients_match_numpy(layers, bidi):
    """Out, last_h, last_c as the numpy LSTM; the gradients of Input, InitH, InitC and W as central
    differences of the numpy LSTM's loss."""
    (out, h, c, loss), weights = _program(layers, bidi)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(fluid.default_startup_program())
    w_name = fluid.default_main_program().global_block().all_parameters()[0].name
    w = np.array(fluid.global_scope().find_var(w_name).get_tensor())
    assert w.shape == (cudnn_lstm_weight_size(3, 4, layers, bidi),)
    feed = _feed(layers, bidi)
    got = exe.run(feed=feed, fetch_list=[out, h, c, "x@GRAD", "h0@GRAD", "c0@GRAD", w_name + "@GRAD"])
    want = numpy_lstm(feed["x"], feed["h0"], feed["c0"], w, 4, layers, bidi)
    for g, ref in zip(got[:3], want):
        np.testing.assert_allclose(g, ref, rtol=1e-10, atol=1e-12)

    def numpy_loss(x, h0, c0, w_):
        return sum(float(np.sum(o * r)) for o, r in zip(numpy_lstm(x, h0, c0, w_, 4, layers, bidi), weights))

    args = [feed["x"], feed["h0"], feed["c0"], w]
    rs = np.random.RandomState(3)
    for k, grad in enumerate(got[3:]):
        flat = args[k].reshape(-1)
        for j in rs.choice(flat.size, min(flat.size, 12), replace=False):
            old = flat[j]
            flat[j] = old + 1e-6
            up = numpy_loss(*args)
            flat[j] = old - 1e-6
            down = numpy_loss(*args)
            flat[j] = old
            np.testing.assert_allclose(grad.reshape(-1)[j], (up - down) / 2e-6, rtol=1e-5, atol=1e-8)


def test_dropout_between_layers():
    """dropout_prob 0.4 over 3 layers with a seed: the masks are fixed by the seed, so Out is the
    numpy LSTM with masks of 0 and 1 / 0.6 after layers 1 and 2 (found from the run), the gradient
    of W matches central differences of the program itself, and is_test=True gives the plain LSTM."""
    (out, h, c, loss), _ = _program(3, False, dropout_prob=0.4, seed=11)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(fluid.default_startup_program())
    main = fluid.default_main_program()
    w_name = main.global_block().all_parameters()[0].name
    wt = fluid.global_scope().find_var(w_name).get_tensor()
    w = np.array(wt)
    feed = _feed(3, False)
    first, grad = exe.run(feed=feed, fetch_list=[loss, w_name + "@GRAD"])
    again = exe.run(feed=feed, fetch_list=[loss])[0]
    np.testing.assert_array_equal(first, again)
    plain = numpy_lstm(feed["x"], feed["h0"], feed["c0"], w, 4, 3, False)[0]
    dropped = exe.run(feed=feed, fetch_list=[out])[0]
    assert not np.allclose(dropped, plain)
    rs = np.random.RandomState(4)
    for j in rs.choice(w.size, 10, replace=False):
        vals = []
        for step in (1e-6, -1e-6):
            moved = w.copy()
            moved[j] += step
            wt.set(moved, fluid.CPUPlace())
            vals.append(float(exe.run(feed=feed, fetch_list=[loss])[0]))
        wt.set(w, fluid.CPUPlace())
        np.testing.assert_allclose(grad[j], (vals[0] - vals[1]) / 2e-6, rtol=1e-5, atol=1e-8)
    test_prog = main.clone(for_test=True)
    np.testing.assert_allclose(exe.run(test_prog, feed=feed, fetch_list=[out.name])[0], plain, rtol=1e-10)


def test_program_matches_fluid():
    """Names, shapes, dtypes, attributes, the flat weight's size and initializer and the grad op's
    slots as fluid 1.8.5 built them. Deliberate differences: a bidirectional Out is [T, N, 2H] (fluid
    1.8.5's shape said H, so layers built on it got the wrong width); an output gradient no loss
    reaches is @EMPTY@ (fluid: a fill_zeros_like op's output); the initializer bounds are not
    rounded to float32."""
    from tests.test_goldens import load, run_fluidcompat

    want, got = load("cudnn_lstm.json"), run_fluidcompat("cudnn_lstm.py")
    for case in ("one_layer", "two_layers_bidirectional", "three_layers_float64"):
        w, g = want[case], got[case]
        assert [op["type"] for op in g["ops"]] == ["cudnn_lstm", "cudnn_lstm_grad"]
        assert g["ops"][0] == w["ops"][0]
        gw, gg = w["ops"][1], g["ops"][1]
        assert gg["attrs"] == gw["attrs"] and gg["outputs"] == gw["outputs"]
        empty = set()
        for slot, names in gw["inputs"].items():
            if gg["inputs"][slot] == ["@EMPTY@"]:  # fluid: fill_zeros_like of an output no loss reads
                assert slot.endswith("@GRAD") and names[0].endswith("@GRAD")
                empty.update(names)
            else:
                assert gg["inputs"][slot] == names
        [(kind, outs, attrs)] = w["startup"]
        [(g_kind, g_outs, g_attrs)] = g["startup"]
        assert (g_kind, g_outs, sorted(g_attrs)) == (kind, outs, sorted(attrs))
        for k, v in attrs.items():
            np.testing.assert_allclose(g_attrs[k], v, rtol=1e-7)
        for name, desc in w["vars"].items():
            if name in empty:
                continue
            if name == "enc.tmp_0":
                assert g["vars"][name] == [[7, 3, 10]] + desc[1:]
                continue
            assert g["vars"][name] == desc, name
    assert [e[0] for e in got["errors"]] == [e[0] for e in want["errors"]] == ["TypeError"] * 4
    assert got["errors"][:3] == want["errors"][:3]
    assert got["errors"][3][1].startswith("The type of 'init_h' in lstm must be ")


def test_bad_shapes_are_named_and_leave_the_program():
    x = fluid.data("x", [6, 2, 3], "float32")
    h0 = L.fill_constant([2, 2, 4], "float32", 0.0)
    main = fluid.default_main_program()
    before = len(main.global_block().ops)
    want = r"InitH '.*' must have shape \[num_layers \* directions, batch, hidden_size\] = \[1, 2, 4\]"
    with pytest.raises(ValueError, match=want):
        L.lstm(x, h0, h0, 6, 4, 1)
    with pytest.raises(ValueError, match="must be 3-D"):
        L.lstm(L.reshape(x, [12, 3]), h0, h0, 6, 4, 2)
    assert len(main.global_block().ops) == before + 1  # the reshape only
    assert not main.global_block().all_parameters()
    h1 = L.fill_constant([1, 2, 4], "float32", 0.0)
    with pytest.raises(ValueError, match="Input has 6 time steps .*, more than max_len 5"):
        L.lstm(x, h1, h1, 5, 4, 1)
    prog, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(prog, startup):
        free = fluid.data("free", [-1, 2, 3], "float32")
        h1 = L.fill_constant([1, 2, 4], "float32", 0.0)
        out, _, _ = L.lstm(free, h1, h1, 5, 4, 1)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    with pytest.raises(fluid.core.EnforceNotMet, match="Input has 6 time steps .*, more than max_len 5"):
        exe.run(prog, feed={"free": np.zeros((6, 2, 3), "float32")}, fetch_list=[out])


def test_dygraph_matches_the_static_program():
    """In dygraph mode the same op: with a seeded dropout between 2 layers, Out and the input's
    gradient equal the static program's (the grad re-runs the forward with the forward's masks)."""
    feed = _feed(2, False, "float32")
    w0 = np.random.RandomState(2).uniform(-0.5, 0.5, cudnn_lstm_weight_size(3, 4, 2, False)).astype("float32")
    init = fluid.initializer.NumpyArrayInitializer(w0)
    x = fluid.data("x", [6, 2, 3], "float32")
    x.stop_gradient = False
    h0, c0 = L.assign(feed["h0"]), L.assign(feed["c0"])
    out, _, _ = L.lstm(x, h0, c0, 6, 4, 2, dropout_prob=0.3, seed=5, default_initializer=init)
    fluid.backward.append_backward(L.reduce_sum(out))
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(fluid.default_startup_program())
    s_out, s_gx = exe.run(feed={"x": feed["x"]}, fetch_list=[out, "x@GRAD"])
    with fluid.dygraph.guard(fluid.CPUPlace()):  # (the default is the GPU where there is one)
        xv = fluid.dygraph.to_variable(feed["x"])
        xv.stop_gradient = False
        h, c = fluid.dygraph.to_variable(feed["h0"]), fluid.dygraph.to_variable(feed["c0"])
        d_out, _, _ = L.lstm(xv, h, c, 6, 4, 2, dropout_prob=0.3, seed=5, default_initializer=init)
        L.reduce_sum(d_out).backward()
        np.testing.assert_allclose(d_out.numpy(), s_out, rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(xv.gradient(), s_gx, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("layer", ["dynamic_lstm", "dynamic_lstmp"])
def test_dynamic_lstm_cell_output_gradient_matches_finite_differences(layer):
    """A loss that reads the cell state of dynamic_lstm / dynamic_lstmp (the fluid book's semantic role
    labelling model feeds both outputs to an fc) gets its full gradient. fluid 1.8.5's lstm_grad and
    lstmp_grad dropped the Cell gradient (its x gradient was -0.039 where differences give 0.565; with
    only the cell in the loss it found no gradient at all); fluidcompat keeps it."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [None, 8], "float64", lod_level=1)
        x.stop_gradient = False
        if layer == "dynamic_lstm":
            h, c = L.dynamic_lstm(input=x, size=8, dtype="float64")
        else:
            h, c = L.dynamic_lstmp(input=x, size=8, proj_size=3, dtype="float64")
        loss = L.reduce_sum(h * h) + L.reduce_sum(c)
        (g,) = fluid.gradients([loss], [x])
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    rng = np.random.RandomState(0)
    xv = rng.uniform(-1, 1, (7, 8))

    def run(v, fetch):
        t = fluid.create_lod_tensor(v, [[3, 4]], fluid.CPUPlace())
        return np.array(exe.run(main, feed={"x": t}, fetch_list=[fetch], scope=scope, return_numpy=False)[0])

    with fluid.scope_guard(scope):
        exe.run(startup)
    grad = run(xv, g)
    eps = 1e-6
    numeric = np.zeros_like(xv)
    for i in range(xv.shape[0]):
        for j in range(xv.shape[1]):
            e = np.zeros_like(xv)
            e[i, j] = eps
            numeric[i, j] = (run(xv + e, loss)[0] - run(xv - e, loss)[0]) / (2 * eps)
    np.testing.assert_allclose(grad, numeric, rtol=1e-5, atol=1e-7)
