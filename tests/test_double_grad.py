"""Gradients of gradients (fluid 1.8's double grad): ``fluid.gradients`` of a first-order gradient
appends ``<type>_grad_grad`` ops (NOTE: [Grad of grad] in fluidcompat_ops/grad.py); their values are
checked against torch.autograd's second derivatives, in float64."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import fluidcompat as fluid

L = fluid.layers
rng = np.random.RandomState(11)


def _set(name, value):
    fluid.global_scope().find_var(name).get_tensor().set(value, fluid.CPUPlace())


W = rng.uniform(-1, 1, (2, 3, 3, 3))

# name: (input arrays, fluid builder, torch function of the same inputs); a builder gets the data
# variables and returns (output, extra variables to differentiate by and their values)
CASES = {
    "relu": ([rng.uniform(0.1, 1, (2, 3)) * rng.choice([-1, 1], (2, 3))], lambda x: L.relu(x), torch.relu),
    "leaky_relu": (
        [rng.uniform(0.1, 1, (2, 3)) * rng.choice([-1, 1], (2, 3))],
        lambda x: L.leaky_relu(x, alpha=0.2),
        lambda x: torch.nn.functional.leaky_relu(x, 0.2),
    ),
    "elu": ([rng.uniform(-1, 1, (2, 3))], lambda x: L.elu(x, alpha=1.1), lambda x: torch.nn.functional.elu(x, 1.1)),
    "sqrt": ([rng.uniform(0.2, 1, (2, 3))], lambda x: L.sqrt(x), torch.sqrt),
    "square": ([rng.uniform(-1, 1, (2, 3))], lambda x: L.square(x), torch.square),
    "tanh": ([rng.uniform(-1, 1, (2, 3))], lambda x: L.tanh(x), torch.tanh),
    "elementwise_mul": (
        [rng.uniform(-1, 1, (2, 3, 4)), rng.uniform(-1, 1, (2, 3))],
        lambda x, y: L.elementwise_mul(x, y, axis=0),
        lambda x, y: x * y[:, :, None],
    ),
    "elementwise_div": (
        [rng.uniform(-1, 1, (2, 3)), rng.uniform(0.5, 1, (2, 3))],
        lambda x, y: L.elementwise_div(x, y),
        lambda x, y: x / y,
    ),
    "elementwise_add": (
        [rng.uniform(-1, 1, (2, 3, 4)), rng.uniform(-1, 1, (3,))],
        lambda x, y: L.elementwise_add(x, y, axis=1),
        lambda x, y: x + y[None, :, None],
    ),
    "conv2d": (
        [rng.uniform(-1, 1, (2, 3, 5, 5))],
        lambda x: L.conv2d(x, 2, 3, padding=[1, 0], param_attr=fluid.ParamAttr(name="w"), bias_attr=False),
        lambda x: torch.nn.functional.conv2d(x, torch.from_numpy(W), padding=(1, 0)),
    ),
    "instance_norm": (
        [rng.uniform(-1, 1, (2, 3, 4))],
        lambda x: L.instance_norm(x),
        lambda x: torch.nn.functional.instance_norm(x, eps=1e-5),
    ),
}


def _torch_double_grad(fn, arrays, dy, ddx):
    xs = [torch.tensor(a, requires_grad=True) for a in arrays]
    g = torch.tensor(dy, requires_grad=True)
    y = fn(*xs)
    firsts = torch.autograd.grad(y, xs, g, create_graph=True)
    ddxs = [torch.tensor(d) for d in ddx]
    seconds = torch.autograd.grad(firsts, xs + [g], ddxs, allow_unused=True)
    return [f.detach().numpy() for f in firsts], [None if s is None else s.numpy() for s in seconds]


@pytest.mark.parametrize("name", sorted(CASES))
def test_second_derivatives_match_torch(name):
    arrays, build, fn = CASES[name]
    xs = []
    for i, a in enumerate(arrays):
        x = fluid.data(f"x{i}", list(a.shape), "float64")
        x.stop_gradient = False
        xs.append(x)
    y = build(*xs)
    block = fluid.default_main_program().global_block()
    dy = block.create_var(name="dy", shape=y.shape, dtype="float64", persistable=True)
    dy.stop_gradient = False
    firsts = fluid.gradients(y, xs, dy)
    ddx = [block.create_var(name=f"ddx{i}", shape=a.shape, dtype="float64") for i, a in enumerate(arrays)]
    seconds = fluid.gradients(firsts, xs + [dy], ddx)
    dy_v = rng.uniform(-1, 1, tuple(y.shape))
    ddx_v = [rng.uniform(-1, 1, a.shape) for a in arrays]
    feed = {f"x{i}": a for i, a in enumerate(arrays)}
    feed.update({f"ddx{i}": d for i, d in enumerate(ddx_v)}, dy=dy_v)
    exe = fluid.Executor(fluid.CPUPlace())
    if fluid.default_startup_program().global_block().ops:
        exe.run(fluid.default_startup_program())
    if name == "conv2d":
        _set("w", W)
    fetch = firsts + [s for s in seconds if s is not None]
    got = iter(exe.run(feed=feed, fetch_list=fetch))
    want_first, want_second = _torch_double_grad(fn, arrays, dy_v, ddx_v)
    for w in want_first:
        np.testing.assert_allclose(next(got), w, rtol=1e-7, atol=1e-9)
    for s, w in zip(seconds, want_second):
        if s is None:  # fluid gives none where the gradient is zero (relu's of x)
            assert w is None or not np.any(w), name
            continue
        np.testing.assert_allclose(next(got), np.zeros(s.shape) if w is None else w, rtol=1e-7, atol=1e-9)


def _ops(program):
    return [
        (op.type, {k: v for k, v in op.inputs.items() if v}, {k: v for k, v in op.outputs.items() if v})
        for op in program.global_block().ops
    ]


def test_double_grad_ops_have_fluids_types_and_slots():
    """fluid 1.8.5 names: <type>_grad_grad, D<slot> for a first-order gradient, DD<slot> for its
    gradient; the second pass's gradients of x are grad/grad/x@GRAD."""
    x = fluid.data("x", [2, 3], "float64")
    x.stop_gradient = False
    y = L.sqrt(x)
    dy = fluid.default_main_program().global_block().create_var(name="y@GRAD", shape=[2, 3], dtype="float64")
    dy.stop_gradient = False
    (gx,) = fluid.gradients(y, [x], dy)
    got = fluid.gradients(gx, [x, dy])
    assert [g.name for g in got] == ["grad/grad/x@GRAD", "y@GRAD@GRAD"]
    ops = _ops(fluid.default_main_program())
    assert [t for t, _, _ in ops] == ["sqrt", "sqrt_grad", "shape", "fill_constant", "sqrt_grad_grad", "sqrt_grad"]
    _, ins, outs = ops[4]
    y_name = y.name
    assert ins == {"Out": [y_name], "DOut": ["y@GRAD"], "DDX": ["x@GRAD@GRAD"]}
    assert outs == {"DOut": [y_name + "@GRAD"], "DDOut": ["y@GRAD@GRAD"]}
    assert ops[5][1]["Out@GRAD"] == [y_name + "@GRAD"]
    assert ops[5][2] == {"X@GRAD": ["grad/grad/x@GRAD"]}


def test_conv2d_and_elementwise_mul_double_grad_slots():
    x = fluid.data("x", [1, 2, 4, 4], "float64")
    x.stop_gradient = False
    y = L.conv2d(x, 2, 1, bias_attr=False)
    z = L.elementwise_mul(y, y)
    (gx,) = fluid.gradients(z, [x])
    fluid.gradients(gx, [x])
    by_type = {t: (ins, outs) for t, ins, outs in _ops(fluid.default_main_program())}
    ins, outs = by_type["conv2d_grad_grad"]
    assert sorted(ins) == ["DDFilter", "DDInput", "DOutput", "Filter", "Input"]  # (fluid 1.8.5's)
    assert sorted(outs) == ["DDOutput", "DFilter", "DInput"]
    ins, outs = by_type["elementwise_mul_grad_grad"]
    assert sorted(ins) == ["DDX", "DDY", "DOut", "X", "Y"]
    assert sorted(outs) == ["DDOut", "X@GRAD", "Y@GRAD"]


def test_a_clone_keeps_counting_backward_passes():
    """Program.clone() copies fluid's _appending_grad_times: the clone's next pass renames x@GRAD."""
    x = fluid.data("x", [2], "float32")
    x.stop_gradient = False
    fluid.gradients([L.reduce_sum(x * 2.0)], [x])
    clone = fluid.default_main_program().clone()
    with fluid.program_guard(clone):
        cx = clone.global_block().var("x")
        (g,) = fluid.gradients([L.reduce_sum(L.square(cx))], [cx])
    assert g.name == "grad/grad/x@GRAD"


def test_double_grad_of_a_hessian_vector_product_trains():
    """A gradient penalty: d/dw of |dL/dx|^2 through tanh and mul, against torch."""
    xv = rng.uniform(-1, 1, (3, 4))
    wv = rng.uniform(-1, 1, (4, 2))
    x = fluid.data("x", [3, 4], "float64")
    x.stop_gradient = False
    w = fluid.layers.create_parameter([4, 2], "float64", name="w")
    out = L.reduce_sum(L.tanh(L.matmul(x, w)))
    (gx,) = fluid.gradients(out, [x])
    penalty = L.reduce_sum(L.square(gx))
    (gw,) = fluid.gradients(penalty, [w])
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(fluid.default_startup_program())
    _set("w", wv)
    (got,) = exe.run(feed={"x": xv}, fetch_list=[gw])
    tx, tw = torch.tensor(xv, requires_grad=True), torch.tensor(wv, requires_grad=True)
    (tgx,) = torch.autograd.grad(torch.tanh(tx @ tw).sum(), tx, create_graph=True)
    (want,) = torch.autograd.grad((tgx**2).sum(), tw)
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-7)


def test_dygraph_grad_create_graph_with_no_grad_vars():
    xv = rng.uniform(-1, 1, (2, 3)).astype("float32")
    with fluid.dygraph.guard(fluid.CPUPlace()):
        x = fluid.dygraph.to_variable(xv)
        x.stop_gradient = False
        y1, y2 = L.relu(x), L.relu(x)
        w = L.reduce_sum((y1 + y2) * (y1 + y2))
        (dx,) = fluid.dygraph.grad([w], [x], create_graph=True, no_grad_vars=[y2])
        assert not dx.stop_gradient
        np.testing.assert_allclose(dx.numpy(), 2 * (2 * np.maximum(xv, 0)) * (xv > 0), rtol=1e-6)
        L.reduce_sum(dx * dx).backward()
        # dx = 4 relu(x) relu'(x): d/dx sum(dx^2) = 2 dx * 4 relu'(x)
        np.testing.assert_allclose(x.gradient(), 2 * dx.numpy() * 4 * (xv > 0), rtol=1e-6)


def test_dygraph_grad_checks_its_arguments_as_fluid():
    with fluid.dygraph.guard(fluid.CPUPlace()):
        v = fluid.dygraph.to_variable(np.ones((2, 2), "float32"))
        v.stop_gradient = False
        for args, kwargs in [
            ((None, None), {}),
            ((1, v), {}),
            (([v], [1]), {}),
            (([v, v], [v], [v]), {}),
            (([v], [v]), {"no_grad_vars": 1}),
            (([v], [v]), {"no_grad_vars": [1]}),
        ]:
            with pytest.raises(AssertionError):
                fluid.dygraph.grad(*args, **kwargs)
