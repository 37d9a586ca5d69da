"""Gradient table: every differentiable op's grad op against central finite differences, in float64."""

from __future__ import annotations

from typing import Callable, Dict, Optional, Sequence

import numpy as np
import pytest

import fluidcompat as fluid
from fluidcompat.framework import OpRole
from fluidcompat_ops import all_defs
from tests.grads_extra_cases import make_cases, sequence_cases

L = fluid.layers
rng = np.random.RandomState(7)


def away_from_zero(shape, lo=0.2, hi=1.5):
    v = rng.uniform(lo, hi, shape)
    return v * rng.choice([-1.0, 1.0], shape)


def pos(shape, lo=0.5, hi=2.0):
    return rng.uniform(lo, hi, shape)


A = away_from_zero((2, 3))
B = away_from_zero((2, 3))
P = pos((2, 3))
IMG = rng.uniform(-1, 1, (1, 2, 4, 4))
FLT = rng.uniform(-1, 1, (3, 2, 3, 3))
LAB = np.array([[2], [0]], dtype="int64")


def raw(op_type, inputs, outputs, attrs=None):
    """Append one op with float64 outputs; returns the outputs in order."""
    block = fluid.default_main_program().current_block()
    dtypes = outputs if isinstance(outputs, dict) else dict.fromkeys(outputs, "float64")
    outs = {
        s: block.create_var(name=fluid.unique_name.generate(f"{op_type}.{s}"), dtype=dt) for s, dt in dtypes.items()
    }
    block.append_op(type=op_type, inputs=inputs, outputs={k: [v] for k, v in outs.items()}, attrs=attrs or {})
    return [outs[s] for s in outputs]


class G:
    """A gradient case: ``build(**vars)`` returns the output(s); grads are checked for ``wrt``."""

    def __init__(
        self,
        name: str,
        build: Callable,
        inputs: Dict[str, np.ndarray],
        wrt: Optional[Sequence[str]] = None,
        rtol: float = 1e-5,
        atol: float = 1e-7,
        lods: Optional[Dict[str, list]] = None,
    ) -> None:
        self.name, self.build, self.inputs = name, build, inputs
        self.lods = lods or {}  # input name -> sequence lengths per level: fed as a LoDTensor
        self.wrt = list(wrt) if wrt is not None else [k for k, v in inputs.items() if v.dtype == np.float64]
        self.rtol, self.atol = rtol, atol

    def __str__(self) -> str:
        return self.name


def _build(case: G, weights=None):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        vars_ = {}
        for k, v in case.inputs.items():
            var = fluid.data(k, list(v.shape), str(v.dtype), lod_level=len(case.lods.get(k, ())))
            var.stop_gradient = k not in case.wrt
            vars_[k] = var
        outs = case.build(**vars_)
        outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
        loss = None
        if weights is not None:
            terms = [
                L.reduce_sum(L.elementwise_mul(o, L.assign(w) if w.dtype != np.float64 else _const64(w)))
                for o, w in zip(outs, weights)
            ]
            loss = terms[0] if len(terms) == 1 else L.sums(terms)
            grads = fluid.gradients([loss], [vars_[k] for k in case.wrt])
            return main, startup, outs, loss, grads
    return main, startup, outs, None, None


def _fed(case: G, feed: dict) -> dict:
    """``feed`` with the case's sequence inputs as LoDTensors."""
    return {
        k: fluid.create_lod_tensor(v, case.lods[k], fluid.CPUPlace()) if k in case.lods else v for k, v in feed.items()
    }


def _arrays(results) -> list:
    return [np.array(r) for r in results]


def _const64(w):
    block = fluid.default_main_program().global_block()
    v = block.create_var(name=fluid.unique_name.generate("w64"), dtype="float64", shape=w.shape)
    from fluidcompat.initializer import NumpyArrayInitializer  # noqa: F401  (float64 goes through a feed)

    v.is_data = True
    return v


def _forward_only(program: fluid.Program) -> fluid.Program:
    p = program.clone()
    block = p.global_block()
    block.ops = [op for op in block.ops if not op.attrs.get("op_role", 0) & OpRole.Backward]
    return p


def _output_shapes(case: G, exe):
    """The shapes of the case's outputs, from a forward run."""
    main, startup, outs, _, _ = _build(case)
    scope = fluid.Scope()
    if startup.global_block().ops:
        exe.run(startup, scope=scope)
    fetched = exe.run(main, feed=_fed(case, case.inputs), fetch_list=outs, scope=scope, return_numpy=False)
    return [r.shape for r in _arrays(fetched)]


def check_grad(case: G):
    exe = fluid.Executor(fluid.CPUPlace())
    weights = [rng.uniform(-1, 1, s) for s in _output_shapes(case, exe)]
    main, startup, outs, loss, grads = _build(case, weights)
    assert all(g is not None for g in grads), f"{case.name}: no gradient for some of {case.wrt}"
    w_names = [n for n in main.global_block().vars if n.startswith("w64")]
    feed = dict(case.inputs)
    feed.update(dict(zip(w_names, weights)))
    scope = fluid.Scope()
    if startup.global_block().ops:
        exe.run(startup, scope=scope)
    analytic = _arrays(exe.run(main, feed=_fed(case, feed), fetch_list=grads, scope=scope, return_numpy=False))
    forward = _forward_only(main)
    eps = 1e-6
    for k, got in zip(case.wrt, analytic):
        x = case.inputs[k]
        numeric = np.zeros_like(x)
        for idx in np.ndindex(x.shape):
            vals = []
            for sign in (1.0, -1.0):
                f = dict(feed)
                xp = x.copy()
                xp[idx] += sign * eps
                f[k] = xp
                vals.append(float(exe.run(forward, feed=_fed(case, f), fetch_list=[loss], scope=scope)[0][0]))
            numeric[idx] = (vals[0] - vals[1]) / (2 * eps)
        assert got.shape == x.shape, f"{case.name}: grad of {k} has shape {got.shape}, input {x.shape}"
        np.testing.assert_allclose(got, numeric, rtol=case.rtol, atol=case.atol, err_msg=f"{case.name}: d loss / d {k}")
    return main


ab = {"a": A, "b": B}
CASES = [
    G("elementwise_add", lambda a, b: L.elementwise_add(a, b), ab),
    G("elementwise_add_broadcast", lambda a, v: L.elementwise_add(a, v, axis=1), {"a": A, "v": away_from_zero((3,))}),
    G("elementwise_add_scalar_y", lambda a, s: L.elementwise_add(a, s), {"a": A, "s": away_from_zero((1,))}),
    G("elementwise_sub_scalar_y", lambda a, s: L.elementwise_sub(a, s), {"a": A, "s": away_from_zero((1,))}),
    G("elementwise_sub", lambda a, b: L.elementwise_sub(a, b), ab),
    G("elementwise_mul_axis0", lambda a, v: L.elementwise_mul(a, v, axis=0), {"a": A, "v": away_from_zero((2,))}),
    G("elementwise_div", lambda a, p: L.elementwise_div(a, p), {"a": A, "p": P}),
    G("elementwise_max", lambda a, b: L.elementwise_max(a, b), ab),
    G("elementwise_min", lambda a, b: L.elementwise_min(a, b), ab),
    G("elementwise_pow", lambda p, b: L.elementwise_pow(p, b), {"p": P, "b": B}),
    G("same_input_twice", lambda a: L.elementwise_mul(a, a) + a, {"a": A}),
    G("scale", lambda a: L.scale(a, 2.5, 1.0), {"a": A}),
    G("sum", lambda a, b: L.sums([a, b, a]), ab),
    G("mean", lambda a: L.mean(a), {"a": A}),
    G("reduce_sum", lambda a: L.reduce_sum(a, dim=1), {"a": A}),
    G("reduce_mean", lambda a: L.reduce_mean(a, dim=0, keep_dim=True), {"a": A}),
    G("reduce_max", lambda a: L.reduce_max(a, dim=1), {"a": A}),
    G("reduce_min", lambda a: L.reduce_min(a), {"a": A}),
    G("reduce_prod", lambda a: L.reduce_prod(a, dim=1), {"a": A}),
    G("matmul", lambda a, b: L.matmul(a, b, transpose_y=True, alpha=0.5), ab),
    G("mul", lambda a, m: L.mul(a, m), {"a": A, "m": away_from_zero((3, 2))}),
    G("relu", lambda a: L.relu(a), {"a": A}),
    G("sigmoid", lambda a: L.sigmoid(a), {"a": A}),
    G("tanh", lambda a: L.tanh(a), {"a": A}),
    G("exp", lambda a: L.exp(a), {"a": A}),
    G("log", lambda p: L.log(p), {"p": P}),
    G("sqrt", lambda p: L.sqrt(p), {"p": P}),
    G("rsqrt", lambda p: L.rsqrt(p), {"p": P}),
    G("square", lambda a: L.square(a), {"a": A}),
    G("abs", lambda a: L.abs(a), {"a": A}),
    G("sin", lambda a: L.sin(a), {"a": A}),
    G("cos", lambda a: L.cos(a), {"a": A}),
    G("reciprocal", lambda p: L.reciprocal(p), {"p": P}),
    G("softsign", lambda a: L.softsign(a), {"a": A}),
    G("logsigmoid", lambda a: L.logsigmoid(a), {"a": A}),
    G("softplus", lambda a: L.softplus(a), {"a": A}),
    G("gelu", lambda a: L.gelu(a), {"a": A}),
    G("leaky_relu", lambda a: L.leaky_relu(a, 0.1), {"a": A}),
    G("elu", lambda a: L.elu(a, 0.7), {"a": A}),
    G("relu6", lambda a: L.relu6(a * 5.0), {"a": A}),
    G("swish", lambda a: L.swish(a), {"a": A}),
    G("hard_sigmoid", lambda a: L.hard_sigmoid(a), {"a": A}),
    G("hard_swish", lambda a: L.hard_swish(a * 2.0), {"a": A}),
    G("softmax", lambda a: L.softmax(a), {"a": A}),
    G("log_softmax", lambda a: raw("log_softmax", {"X": [a]}, ["Out"], {"axis": 0}), {"a": A}),
    G("pow", lambda p: L.pow(p, 1.7), {"p": P}),
    G("clip", lambda a: L.clip(a, -0.9, 0.8), {"a": A}),
    G("norm", lambda a: L.l2_normalize(a, axis=1), {"a": A}),
    G("top_k", lambda a: raw("top_k", {"X": [a]}, {"Out": "float64", "Indices": "int64"}, {"k": 2})[0], {"a": A}),
    G("argsort", lambda a: L.argsort(a, axis=1, descending=True)[0], {"a": A}),
    G("cast", lambda a: L.cast(a, "float64") * 3.0, {"a": A}),
    G("assign", lambda a: L.assign(a) * 2.0, {"a": A}),
    G("slice", lambda a: L.slice(a, axes=[1], starts=[1], ends=[3]), {"a": A}),
    G("crop_tensor", lambda a: L.crop_tensor(a, shape=[1, 2], offsets=[1, 0]), {"a": A}),
    G("crop", lambda a: L.crop(a, shape=[1, 2], offsets=[1, 1]), {"a": A}),
    G("reshape2", lambda a: L.reshape(a, [3, 2]), {"a": A}),
    G("transpose2", lambda a: L.transpose(a, [1, 0]), {"a": A}),
    G("flatten2", lambda i: L.flatten(i, axis=2), {"i": IMG[:, :, :2, :2].copy()}),
    G("squeeze2", lambda a: L.squeeze(L.unsqueeze(a, [0]), [0]), {"a": A}),
    G("concat", lambda a, b: L.concat([a, b], axis=1), ab),
    G("split", lambda a: L.split(a, [1, 2], dim=1)[1], {"a": A}),
    G("stack", lambda a, b: L.stack([a, b], axis=1), ab),
    G("expand", lambda a: L.expand(a, [2, 2]), {"a": A}),
    G("gather", lambda a: L.gather(a, L.assign(np.array([1, 1, 0], "int64"))), {"a": A}),
    G("scatter", lambda a, u: L.scatter(a, L.assign(np.array([1], "int64")), u), {"a": A, "u": away_from_zero((1, 3))}),
    G("pad", lambda a: L.pad(a, [1, 0, 0, 2]), {"a": A}),
    G("pad2d", lambda i: L.pad2d(i, [1, 0, 0, 1], mode="reflect"), {"i": IMG}),
    G("where", lambda a, b: raw("where", {"Condition": [L.assign(A > 0)], "X": [a], "Y": [b]}, ["Out"]), ab),
    G(
        "lookup_table",
        lambda w: raw(
            "lookup_table",
            {"Ids": [L.assign(np.array([[1], [2], [1]], "int64"))], "W": [w]},
            ["Out"],
            {"padding_idx": 2},
        ),
        {"w": away_from_zero((4, 3))},
    ),
    G(
        "lookup_table_v2",
        lambda w: raw("lookup_table_v2", {"Ids": [L.assign(np.array([[1, 3]], "int64"))], "W": [w]}, ["Out"]),
        {"w": away_from_zero((4, 3))},
    ),
    G(
        "conv2d",
        lambda i, f: raw(
            "conv2d", {"Input": [i], "Filter": [f]}, ["Output"], {"strides": [2, 1], "paddings": [1, 0, 1, 1]}
        ),
        {"i": IMG, "f": FLT},
    ),
    G(
        "depthwise_conv2d",
        lambda i, f: raw(
            "depthwise_conv2d", {"Input": [i], "Filter": [f]}, ["Output"], {"groups": 2, "paddings": [1, 1]}
        ),
        {"i": IMG, "f": FLT[:2, :1].copy()},
    ),
    G(
        "conv2d_transpose",
        lambda i, f: raw(
            "conv2d_transpose", {"Input": [i], "Filter": [f]}, ["Output"], {"strides": [2, 2], "paddings": [1, 1]}
        ),
        {"i": IMG[:, :, :3, :3].copy(), "f": FLT[:2].copy()},
    ),
    G("pool2d_max", lambda i: L.pool2d(i, 2, "max", 2), {"i": IMG}),
    G("pool2d_avg", lambda i: L.pool2d(i, 3, "avg", 2, 1, ceil_mode=True), {"i": IMG}),
    G(
        "batch_norm",
        lambda i, s, b: raw(
            "batch_norm",
            {"X": [i], "Scale": [s], "Bias": [b], "Mean": [L.assign(np.zeros(2))], "Variance": [L.assign(np.ones(2))]},
            ["Y", "MeanOut", "VarianceOut", "SavedMean", "SavedVariance"],
        )[0],
        {"i": IMG, "s": pos((2,)), "b": away_from_zero((2,))},
        rtol=1e-4,
        atol=1e-6,
    ),
    G(
        "layer_norm",
        lambda a, s, b: raw(
            "layer_norm", {"X": [a], "Scale": [s], "Bias": [b]}, ["Y", "Mean", "Variance"], {"begin_norm_axis": 1}
        )[0],
        {"a": A, "s": pos((3,)), "b": away_from_zero((3,))},
        rtol=1e-4,
        atol=1e-6,
    ),
    G("dropout", lambda a: L.dropout(a, 0.4, seed=11), {"a": A}),
    G("dropout_upscale", lambda a: L.dropout(a, 0.4, seed=3, dropout_implementation="upscale_in_train"), {"a": A}),
    G(
        "cross_entropy",
        lambda p: raw("cross_entropy", {"X": [L.softmax(p)], "Label": [L.assign(LAB)]}, ["Y"]),
        {"p": P},
    ),
    G("cross_entropy2", lambda p: L.cross_entropy(L.softmax(p), L.assign(LAB)), {"p": P}),
    G("softmax_with_cross_entropy", lambda a: L.softmax_with_cross_entropy(a, L.assign(LAB)), {"a": A}),
    G(
        "sigmoid_cross_entropy_with_logits",
        lambda a: L.sigmoid_cross_entropy_with_logits(a, L.assign((B > 0).astype("float64"))),
        {"a": A},
    ),
    # control flow: conditional_block + select_input (each branch), while (a read-only input and a
    # loop-carried one)
    *[
        G(
            f"cond_{name}",
            lambda a, b, k: L.cond(
                L.equal(k, L.fill_constant([1], "int64", 1)), lambda: L.tanh(a) * b, lambda: a * a - b
            ),
            {"a": A, "b": B, "k": np.array([kv], "int64")},
        )
        for name, kv in (("true", 1), ("false", 0))
    ],
    G(
        "while_loop",
        lambda a, b: L.while_loop(
            lambda i, h: L.less_than(i, L.fill_constant([1], "int64", 3)),
            lambda i, h: [L.increment(i, 1, False), L.sin(h) * b + h],
            [L.fill_constant([1], "int64", 0), a],
        )[1],
        ab,
    ),
    G("tensor_array", lambda a, b: _array_case(a, b), ab),
    G("ifelse", lambda a, b, k: _ifelse_case(a, b, k), {"a": A, "b": B, "k": np.array([[1], [0]], "int64")}),
    G("print", lambda a: L.Print(a, first_n=1, summarize=1) * 2.0, {"a": A}),
    G("py_func", lambda a: _py_func_case(a), {"a": A}),
]


CASES += make_cases(G) + sequence_cases(G)
CASES += [
    G(
        "fused_elemwise_activation",
        lambda a, b: (
            raw(
                "fused_elemwise_activation",
                {"X": [a], "Y": [b]},
                ["Out"],
                {"functor_list": ["elementwise_mul", "sigmoid"]},
            )[0]
            + raw(
                "fused_elemwise_activation",
                {"X": [a], "Y": [b]},
                ["Out"],
                {"functor_list": ["scale", "elementwise_add"], "scale": 0.5},
            )[0]
        ),
        ab,
    ),  # fmt: skip
    G(
        "partial_concat_sum",
        lambda a, b: [
            raw("partial_concat", {"X": [a, b]}, ["Out"], {"start_index": 1, "length": 2})[0],
            raw("partial_sum", {"X": [a, b, a]}, ["Out"], {"start_index": -2, "length": -1})[0],
        ],
        ab,
    ),
    G(
        "fused_embedding_seq_pool",
        lambda ids, w: raw("fused_embedding_seq_pool", {"Ids": [ids], "W": [w]}, ["Out"], {"padding_idx": 2})[0],
        {"ids": np.array([[1], [2], [3], [1], [0]], "int64"), "w": away_from_zero((4, 3))},
        lods={"ids": [[2, 0, 3]]},
    ),
    G(
        "squared_l2_l1_norm",
        lambda a: [raw("squared_l2_norm", {"X": [a]}, ["Out"])[0], raw("l1_norm", {"X": [a]}, ["Out"])[0]],
        {"a": A},
    ),
    G(
        "shuffle_batch",
        lambda a: raw("shuffle_batch", {"X": [a]}, {"Out": "float64", "ShuffleIdx": "int64"}, {"startup_seed": 3})[0],
        {"a": away_from_zero((4, 3))},
    ),
]


def _array_case(a, b):
    """write_to_array, read_from_array and tensor_array_to_tensor."""
    i0, i1 = L.fill_constant([1], "int64", 0), L.fill_constant([1], "int64", 1)
    arr = L.array_write(a, i0)
    L.array_write(L.tanh(b), i1, array=arr)
    t, _ = L.tensor_array_to_tensor(arr, axis=0)
    return [t * t, L.array_read(arr, i1) * a]


def _ifelse_case(a, b, k):
    """split_lod_tensor and merge_lod_tensor: row 0 takes the true branch, row 1 the false one."""
    ie = L.IfElse(L.equal(k, L.fill_constant([1], "int64", 1)))
    with ie.true_block():
        ie.output(L.tanh(ie.input(a)) * ie.input(b))
    with ie.false_block():
        ie.output(ie.input(a) * ie.input(a) - ie.input(b))
    return ie()[0]


def _py_func_case(a):
    out = fluid.default_main_program().current_block().create_var(name="py_out", dtype="float64", shape=[2, 3])

    def tanh_grad(x, y, dy):
        return np.array(dy) * (1 - np.square(np.array(y)))

    L.py_func(lambda x: np.tanh(np.array(x)), a, out, backward_func=tanh_grad)
    return out * a


@pytest.mark.parametrize("case", CASES, ids=str)
def test_grad(case):
    check_grad(case)


def test_every_differentiable_op_has_a_grad_case():
    from tests.test_more_ops import MORE_GRAD_CASES  # run there (it imports this module)

    defs = all_defs()
    # (grad ops differentiable again have their cases in test_double_grad.py)
    differentiable = {name for name, d in defs.items() if d.grad is not None and not d.forward}
    covered = set()
    for case in CASES + MORE_GRAD_CASES:
        main, *_ = _build(case)
        covered.update(op.type for op in main.global_block().ops)
    missing = differentiable - covered
    assert not missing, f"differentiable ops without a gradient case: {sorted(missing)}"


def test_a_second_backward_pass_renames_the_gradients_it_makes_again():
    """fluid 1.8.5: the second ``gradients`` call names its x gradient grad/grad/x@GRAD, so both
    passes' values can be fetched (2 and 3 here)."""
    x = fluid.data("x", [2], "float32")
    x.stop_gradient = False
    a = fluid.gradients([L.reduce_sum(x * 2.0)], [x])[0]
    b = fluid.gradients([L.reduce_sum(x * 3.0)], [x])[0]
    assert (a.name, b.name) == ("x@GRAD", "grad/grad/x@GRAD")
    assert b.dtype == x.dtype and tuple(b.shape) == (2,)
    got = fluid.Executor(fluid.CPUPlace()).run(feed={"x": np.ones(2, "float32")}, fetch_list=[a, b])
    np.testing.assert_array_equal(got, [[2.0, 2.0], [3.0, 3.0]])


_READS_VALUES = set(
    "sequence_unpad sequence_concat_slice sequence_scatter "
    "lookup_table lookup_table_v2 dropout dropout_upscale cond_true cond_false while_loop tensor_array ifelse "
    "print py_func roi_pool_roi_align linear_chain_crf warpctc yolov3_loss lod_tensor_to_array "
    "roi_perspective_transform filter_by_instag tree_conv rank_attention sampled_softmax_customized "
    "nce".split()  # a seeded custom distribution reads its alias tables on the host
)


@pytest.mark.parametrize("case", CASES, ids=str)
def test_grad_kernels_stay_on_their_device(case, monkeypatch):
    """The backward program planned for the GPU, run with torch's meta device standing in for it (as
    tests/test_ops.py does for the forward kernels): no grad kernel mixes in a tensor of another
    device. Cases whose kernels read values (lookups check their ids, random generators, control
    flow, host algorithms) stop at the first read; any other case must run through."""
    from tests.test_ops import _NO_DATA, meta_for_gpu

    shapes = _output_shapes(case, fluid.Executor(fluid.CPUPlace()))
    main, startup, outs, loss, grads = _build(case, [rng.uniform(-1, 1, s) for s in shapes])
    feed = dict(case.inputs)
    feed.update({n: np.ones(s) for n, s in zip([n for n in main.global_block().vars if n.startswith("w64")], shapes)})
    meta_for_gpu(monkeypatch)
    exe = fluid.Executor(fluid.CUDAPlace(0))
    scope = fluid.Scope()
    try:
        if startup.global_block().ops:
            exe.run(startup, scope=scope)
        exe.run(main, feed=_fed(case, feed), fetch_list=grads, scope=scope, return_numpy=False)
    except Exception as e:  # noqa: BLE001  (only a read of values that meta tensors lack may stop it)
        assert case.name in _READS_VALUES and any(m in str(e) for m in _NO_DATA), f"{case.name}: {e}"


def test_gradients_and_calc_gradient_return_fluids_forms():
    """fluid 1.8.5: calc_gradient returns one input's gradient itself (None when the targets do not
    depend on it) and a list for several; gradients always a list, empty for one unreached input."""
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        x = fluid.data("x", [2], "float32")
        z = fluid.data("z", [2], "float32")
        x.stop_gradient = z.stop_gradient = False
        loss = L.reduce_sum(x * 3.0)
        g = fluid.backward.calc_gradient(loss, x)
        assert isinstance(g, fluid.Variable) and g.name == "x@GRAD"
        assert fluid.backward.calc_gradient(loss, z) is None
        both = fluid.backward.calc_gradient(loss, [x, z])
        assert isinstance(both, list) and both[1] is None and both[0].name.endswith("x@GRAD")
        assert fluid.gradients(loss, z) == []
        (gx,) = fluid.gradients([loss], [x])
    got = fluid.Executor(fluid.CPUPlace()).run(main, feed={"x": np.ones(2, "float32")}, fetch_list=[gx])
    np.testing.assert_array_equal(got[0], [3.0, 3.0])
