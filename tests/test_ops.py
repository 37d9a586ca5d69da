"""The op table: every registered op against numpy, with inferred shapes checked against run shapes."""

from __future__ import annotations

import numpy as np
import pytest

import fluidcompat as fluid
from fluidcompat_ops import all_defs
from tests import numpy_ref as R
from tests.op_harness import Case, case_feed, run_case
from tests.ops_extra_cases import EXTRA_CASES
from tests.ops_fusion_cases import FUSION_CASES, FUSION_READS_VALUES
from tests.ops_sequence_cases import SEQUENCE_CASES
from tests.test_more_ops import MORE_CASES, MORE_READS_VALUES

L = fluid.layers
rng = np.random.RandomState(42)
X = rng.uniform(-2, 2, (2, 3, 4)).astype("float32")
Y = rng.uniform(0.5, 2, (2, 3, 4)).astype("float32")
POS = rng.uniform(0.1, 3, (2, 3, 4)).astype("float32")
I = rng.randint(-7, 9, (2, 3, 4)).astype("int64")
J = rng.randint(1, 4, (2, 3, 4)).astype("int64")
M = rng.uniform(-1, 1, (3, 5)).astype("float32")
IMG = rng.uniform(-1, 1, (2, 3, 6, 7)).astype("float32")
PROB = R.softmax(rng.uniform(-1, 1, (5, 4))).astype("float32")
LAB = np.array([[0], [3], [1], [2], [3]], dtype="int64")
B = X > 0
WK = rng.uniform(-1, 1, (2, 3, 3, 2)).astype("float32")


def f32(a):
    return np.asarray(a, dtype="float32")


def const(arr):
    return fluid.layers.assign(np.asarray(arr))


def param(arr):
    return fluid.ParamAttr(initializer=fluid.initializer.NumpyArrayInitializer(np.asarray(arr, dtype="float32")))


def _round_away(v):
    return np.sign(v) * np.floor(np.abs(v) + 0.5)


def _moving_average_quant(x, rate, accum, state):
    state, accum = rate * state + 1, rate * accum + np.abs(x).max()
    scale = accum / state
    parts = [_round_away(np.clip(x, -scale, scale) * 127 / scale), [scale], [state], [accum]]
    return [np.asarray(p, "float32") for p in parts]


def append(op_type, inputs, outputs, attrs=None):
    """Append a raw op with fresh outputs of the given dtypes and return them."""
    block = fluid.default_main_program().current_block()
    outs = {
        slot: block.create_var(name=fluid.unique_name.generate(f"{op_type}.{slot}"), dtype=dt)
        for slot, dt in outputs.items()
    }
    block.append_op(type=op_type, inputs=inputs, outputs={k: [v] for k, v in outs.items()}, attrs=attrs or {})
    return list(outs.values())


xy = {"x": X, "y": Y}
CASES = [
    # elementwise, with fluid's axis broadcasting
    Case("elementwise_add", lambda x, y: L.elementwise_add(x, y), xy, lambda x, y: x + y),
    Case(
        "elementwise_add_axis1",
        lambda x, v: L.elementwise_add(x, v, axis=1),
        {"x": X, "v": f32([1, 2, 3])},
        lambda x, v: x + v[None, :, None],
    ),
    Case(
        "elementwise_add_trailing1",
        lambda x, v: L.elementwise_add(x, v, axis=1),
        {"x": X, "v": f32([[1], [2], [3]])},
        lambda x, v: x + v[None, :, 0, None],
    ),
    Case("elementwise_sub", lambda x, y: L.elementwise_sub(x, y), xy, lambda x, y: x - y),
    Case("elementwise_mul", lambda x, y: L.elementwise_mul(x, y), xy, lambda x, y: x * y),
    Case("elementwise_div", lambda x, y: L.elementwise_div(x, y), xy, lambda x, y: x / y),
    Case(
        "elementwise_div_int",
        lambda i, j: L.elementwise_div(i, j),
        {"i": I, "j": J},
        lambda i, j: (np.trunc(i / j)).astype("int64"),
    ),
    Case("elementwise_max", lambda x, y: L.elementwise_max(x, y), xy, np.maximum),
    Case("elementwise_min", lambda x, y: L.elementwise_min(x, y), xy, np.minimum),
    Case("elementwise_pow", lambda x, y: L.elementwise_pow(y, x), xy, lambda x, y: f32(y**x), rtol=1e-4),
    Case("elementwise_mod_float", lambda x, y: L.elementwise_mod(x, y), xy, lambda x, y: f32(np.mod(x, y)), atol=1e-5),
    Case("elementwise_mod_int", lambda i, j: L.elementwise_mod(i, j), {"i": I, "j": J}, np.fmod),
    Case(
        "elementwise_floordiv",
        lambda i, j: L.elementwise_floordiv(i, j),
        {"i": I, "j": J},
        lambda i, j: (np.trunc(i / j)).astype("int64"),
    ),
    # compare and logical
    Case("less_than", lambda x, y: L.less_than(x, y), xy, np.less),
    Case("less_equal", lambda x, y: L.less_equal(x, y), xy, np.less_equal),
    Case("greater_than", lambda x, y: L.greater_than(x, y), xy, np.greater),
    Case("greater_equal", lambda i, j: L.greater_equal(i, j), {"i": I, "j": J}, np.greater_equal),
    Case("equal", lambda i, j: L.equal(i, j), {"i": I, "j": J}, np.equal),
    Case("not_equal", lambda i, j: L.not_equal(i, j), {"i": I, "j": J}, np.not_equal),
    Case("logical_and", lambda b, c: L.logical_and(b, c), {"b": B, "c": ~B | (X > 1)}, np.logical_and),
    Case("logical_or", lambda b, c: L.logical_or(b, c), {"b": B, "c": X > 1}, np.logical_or),
    Case("logical_xor", lambda b, c: L.logical_xor(b, c), {"b": B, "c": X > 1}, np.logical_xor),
    Case("logical_not", lambda b: L.logical_not(b), {"b": B}, np.logical_not),
    # scale, sum, mean, reductions
    Case("scale", lambda x: L.scale(x, 2.5, -1.0), {"x": X}, lambda x: x * 2.5 - 1.0),
    Case(
        "scale_bias_first", lambda x: L.scale(x, 2.0, 1.0, bias_after_scale=False), {"x": X}, lambda x: (x + 1.0) * 2.0
    ),
    Case("scale_int", lambda i: L.scale(i, 3.0, 2.0), {"i": I}, lambda i: i * 3 + 2),
    Case("sum", lambda x, y: L.sums([x, y, x]), xy, lambda x, y: x + y + x),
    Case("mean", lambda x: L.mean(x), {"x": X}, lambda x: f32([x.mean()]), rtol=1e-5),
    Case("reduce_sum_all", lambda x: L.reduce_sum(x), {"x": X}, lambda x: f32([x.sum()]), rtol=1e-5),
    Case("reduce_sum", lambda x: L.reduce_sum(x, dim=[0, 2]), {"x": X}, lambda x: x.sum(axis=(0, 2))),
    Case(
        "reduce_mean_keep",
        lambda x: L.reduce_mean(x, dim=1, keep_dim=True),
        {"x": X},
        lambda x: x.mean(axis=1, keepdims=True),
    ),
    Case("reduce_max", lambda x: L.reduce_max(x, dim=-1), {"x": X}, lambda x: x.max(axis=-1)),
    Case("reduce_min", lambda x: L.reduce_min(x, dim=[0, 1]), {"x": X}, lambda x: x.min(axis=(0, 1))),
    Case("reduce_prod", lambda y: L.reduce_prod(y, dim=[1, 2]), {"y": Y}, lambda y: y.prod(axis=(1, 2)), rtol=1e-4),
    # matmul, mul, fc
    Case(
        "matmul",
        lambda x, y: L.matmul(x, y, transpose_y=True, alpha=0.5),
        xy,
        lambda x, y: 0.5 * x @ np.swapaxes(y, 1, 2),
        rtol=1e-5,
    ),
    Case(
        "matmul_transpose_x",
        lambda x, y: L.matmul(x, y, transpose_x=True),
        xy,
        lambda x, y: np.swapaxes(x, 1, 2) @ y,
        rtol=1e-5,
    ),
    Case("matmul_vector", lambda x, v: L.matmul(x, v), {"x": X, "v": f32([1, 2, 3, 4])}, lambda x, v: x @ v),
    Case(
        "matmul_broadcast",
        lambda x, m: L.matmul(x, m, transpose_x=True),
        {"x": X, "m": M},
        lambda x, m: np.swapaxes(x, 1, 2) @ m,
        rtol=1e-5,
    ),
    Case(
        "mul",
        lambda x, m: L.mul(x, m, x_num_col_dims=2),
        {"x": np.swapaxes(X, 1, 2).copy(), "m": M},
        lambda x, m: (x.reshape(-1, 3) @ m).reshape(2, 4, 5),
        rtol=1e-5,
    ),
    Case(
        "mul_flatten",
        lambda x, m: L.mul(x, m),
        {"x": X, "m": rng.uniform(-1, 1, (12, 2)).astype("float32")},
        lambda x, m: x.reshape(2, 12) @ m,
        rtol=1e-5,
    ),
    Case(
        "fc",
        lambda x: L.fc(x, 5, num_flatten_dims=2, param_attr=param(np.ones((4, 5)) * 0.1), act="relu"),
        {"x": X},
        lambda x: np.maximum(x @ (np.ones((4, 5), "float32") * 0.1), 0),
        rtol=1e-5,
    ),
    Case(
        "fc_two_inputs",
        lambda x, y: L.fc([x, y], 2, param_attr=[param(np.ones((12, 2))), param(np.eye(12, 2))]),
        xy,
        lambda x, y: x.reshape(2, 12).sum(1, keepdims=True) + y.reshape(2, 12)[:, :2],
        rtol=1e-5,
    ),
    # activations
    Case("relu", lambda x: L.relu(x), {"x": X}, lambda x: np.maximum(x, 0)),
    Case("sigmoid", lambda x: L.sigmoid(x), {"x": X}, lambda x: f32(R.sigmoid(x))),
    Case("tanh", lambda x: L.tanh(x), {"x": X}, np.tanh),
    Case("exp", lambda x: L.exp(x), {"x": X}, np.exp),
    Case("log", lambda p: L.log(p), {"p": POS}, np.log),
    Case("sqrt", lambda p: L.sqrt(p), {"p": POS}, np.sqrt),
    Case("rsqrt", lambda p: L.rsqrt(p), {"p": POS}, lambda p: 1 / np.sqrt(p)),
    Case("square", lambda x: L.square(x), {"x": X}, np.square),
    Case("abs", lambda x: L.abs(x), {"x": X}, np.abs),
    Case("sin", lambda x: L.sin(x), {"x": X}, np.sin),
    Case("cos", lambda x: L.cos(x), {"x": X}, np.cos),
    Case("ceil", lambda x: L.ceil(x), {"x": X}, np.ceil),
    Case("floor", lambda x: L.floor(x), {"x": X}, np.floor),
    Case("round", lambda x: L.round(x * 4.0), {"x": X}, lambda x: np.round(x * 4.0)),
    Case("reciprocal", lambda p: L.reciprocal(p), {"p": POS}, lambda p: 1 / p),
    Case("softsign", lambda x: L.softsign(x), {"x": X}, lambda x: x / (1 + np.abs(x))),
    Case("logsigmoid", lambda x: L.logsigmoid(x), {"x": X}, lambda x: f32(np.log(R.sigmoid(x)))),
    Case("softplus", lambda x: L.softplus(x), {"x": X}, lambda x: f32(np.log1p(np.exp(x)))),
    Case("gelu", lambda x: L.gelu(x), {"x": X}, R.gelu),
    Case("leaky_relu", lambda x: L.leaky_relu(x, 0.1), {"x": X}, lambda x: np.where(x > 0, x, 0.1 * x)),
    Case("elu", lambda x: L.elu(x, 0.5), {"x": X}, lambda x: f32(np.where(x > 0, x, 0.5 * (np.exp(x) - 1)))),
    Case("relu6", lambda x: L.relu6(x * 4.0), {"x": X}, lambda x: np.clip(x * 4.0, 0, 6)),
    Case("swish", lambda x: L.swish(x), {"x": X}, lambda x: f32(x * R.sigmoid(x))),
    Case("hard_sigmoid", lambda x: L.hard_sigmoid(x), {"x": X}, lambda x: np.clip(0.2 * x + 0.5, 0, 1)),
    Case(
        "hard_swish", lambda x: L.hard_swish(x * 3.0), {"x": X}, lambda x: x * 3.0 * np.clip(x * 3.0 + 3.0, 0, 6) / 6.0
    ),
    Case("pow", lambda p: L.pow(p, 1.5), {"p": POS}, lambda p: p**1.5),
    Case("softmax", lambda x: L.softmax(x, axis=1), {"x": X}, lambda x: R.softmax(x, 1)),
    Case("log_softmax_layer", lambda x: L.log_softmax(x), {"x": X}, lambda x: np.log(R.softmax(x)), atol=1e-5),
    Case(
        "log_softmax_op",
        lambda x: append("log_softmax", {"X": [x]}, {"Out": "float32"}, {"axis": 1}),
        {"x": X},
        lambda x: [np.log(R.softmax(x, 1))],
        atol=1e-5,
    ),
    Case("clip", lambda x: L.clip(x, -0.5, 0.7), {"x": X}, lambda x: np.clip(x, -0.5, 0.7)),
    Case("clip_by_norm", lambda x: L.clip_by_norm(x, 2.0), {"x": X}, lambda x: x * 2.0 / np.linalg.norm(x)),
    Case("clip_by_norm_small", lambda x: L.clip_by_norm(x * 0.01, 2.0), {"x": X}, lambda x: x * 0.01),
    Case("sign", lambda x: append("sign", {"X": [x]}, {"Out": "float32"}), {"x": X}, lambda x: [np.sign(x)]),
    # fake quantization (QuantizeTranspiler): round(x * 127 / scale), halves away from zero
    Case(
        "fake_quantize_abs_max",
        lambda x: append("fake_quantize_abs_max", {"X": [x]}, {"Out": "float32", "OutScale": "float32"}),
        {"x": X},
        lambda x: [_round_away(x * 127 / np.abs(x).max()), [np.abs(x).max()]],
    ),
    Case(
        "fake_dequantize_max_abs",
        lambda x, s: append("fake_dequantize_max_abs", {"X": [x], "Scale": [s]}, {"Out": "float32"}),
        {"x": X, "s": f32([2.0])},
        lambda x, s: [x * 2.0 / 127],
    ),
    Case(
        "fake_quantize_moving_average_abs_max",
        lambda x, s, acc, st: append(
            "fake_quantize_moving_average_abs_max",
            {"X": [x], "InScale": [s], "InAccum": [acc], "InState": [st]},
            {"Out": "float32", "OutScale": "float32", "OutState": "float32", "OutAccum": "float32"},
            {"moving_rate": 0.5},
        ),
        {"x": X, "s": f32([0.1]), "acc": f32([3.0]), "st": f32([2.0])},
        lambda x, s, acc, st: _moving_average_quant(x, 0.5, 3.0, 2.0),
        rtol=1e-5,
    ),
    Case(
        "fake_quantize_range_abs_max",
        lambda x, s, it: append(
            "fake_quantize_range_abs_max",
            {"X": [x], "InScale": [s], "Iter": [it]},
            {"Out": "float32", "OutScale": "float32", "OutScales": "float32"},
            {"window_size": 4},
        ),
        {"x": X, "s": f32([0.1]), "it": np.array([1], "int64")},
        lambda x, s, it: [
            _round_away(x * 127 / np.abs(x).max()),
            [np.abs(x).max()],
            np.array([0.0, np.abs(x).max(), 0.0, 0.0], "float32"),
        ],
    ),
    # the step outputs of a recurrent op (a StaticRNN saved by fluid 1.8): the value as it is
    Case(
        "rnn_memory_helper",
        lambda x: append("rnn_memory_helper", {"X": [x]}, {"Out": "float32"}),
        {"x": X},
        lambda x: [x],
    ),
    Case(
        "l2_normalize",
        lambda x: L.l2_normalize(x, axis=1),
        {"x": X},
        lambda x: x / np.sqrt((x**2).sum(axis=1, keepdims=True) + 1e-12),
    ),
    # losses and metrics
    Case("square_error_cost", lambda x, y: L.square_error_cost(x, y), xy, lambda x, y: (x - y) ** 2),
    Case(
        "cross_entropy",
        lambda p, lab: L.cross_entropy(p, lab),
        {"p": PROB, "lab": LAB},
        lambda p, lab: -np.log(np.take_along_axis(p, lab, 1)),
    ),
    Case(
        "cross_entropy_ignore",
        lambda p, lab: L.cross_entropy(p, lab, ignore_index=3),
        {"p": PROB, "lab": LAB},
        lambda p, lab: np.where(lab == 3, 0, -np.log(np.take_along_axis(p, lab, 1))).astype("float32"),
    ),
    Case(
        "cross_entropy_soft",
        lambda p, q: L.cross_entropy(p, q, soft_label=True),
        {"p": PROB, "q": PROB[::-1].copy()},
        lambda p, q: -(q * np.log(p)).sum(1, keepdims=True),
    ),
    Case(
        "softmax_with_cross_entropy",
        lambda p, lab: L.softmax_with_cross_entropy(p, lab, return_softmax=True),
        {"p": PROB, "lab": LAB},
        lambda p, lab: (-np.log(np.take_along_axis(R.softmax(p), lab, 1)), R.softmax(p)),
    ),
    Case(
        "sigmoid_cross_entropy_with_logits",
        lambda x, z: L.sigmoid_cross_entropy_with_logits(x, z),
        {"x": X, "z": (Y > 1).astype("float32")},
        lambda x, z: f32(np.maximum(x, 0) - x * z + np.log1p(np.exp(-np.abs(x)))),
    ),
    Case(
        "accuracy",
        lambda p, lab: L.accuracy(p, lab, k=2),
        {"p": PROB, "lab": LAB},
        lambda p, lab: f32([np.mean([lab[i, 0] in np.argsort(-p[i])[:2] for i in range(5)])]),
    ),
    # arg ops, sort, top_k, one_hot
    Case("argmax", lambda x: L.argmax(x, axis=1), {"x": X}, lambda x: np.argmax(x, 1)),
    Case("argmin", lambda x: L.argmin(x, axis=-1), {"x": X}, lambda x: np.argmin(x, -1)),
    Case(
        "argsort",
        lambda x: L.argsort(x, axis=1, descending=True),
        {"x": X},
        lambda x: (-np.sort(-x, axis=1), np.argsort(-x, axis=1, kind="stable")),
    ),
    Case(
        "topk",
        lambda x: L.topk(x, 2),
        {"x": X},
        lambda x: (-np.sort(-x, -1)[..., :2], np.argsort(-x, -1, kind="stable")[..., :2]),
    ),
    Case("one_hot", lambda lab: L.one_hot(lab, 4), {"lab": LAB}, lambda lab: np.eye(4, dtype="float32")[lab[:, 0]]),
    Case("one_hot_v2", lambda lab: fluid.one_hot(lab, 5), {"lab": LAB}, lambda lab: np.eye(5, dtype="float32")[lab]),
    # embeddings
    Case(
        "lookup_table",
        lambda lab: L.embedding(lab, [4, 3], padding_idx=-1, param_attr=param(M[:, :4].T)),
        {"lab": LAB},
        lambda lab: np.where(lab == 3, 0, M[:, :4].T[lab[:, 0]]),
    ),
    Case(
        "lookup_table_v2",
        lambda lab: fluid.embedding(lab, [4, 3], padding_idx=0, param_attr=param(M[:, :4].T)),
        {"lab": LAB},
        lambda lab: np.where(lab[..., None] == 0, 0, M[:, :4].T[lab]),
    ),
    # tensor creation and manipulation
    Case("fill_constant", lambda: L.fill_constant([2, 3], "int64", 3.7), {}, lambda: np.full((2, 3), 3, "int64")),
    Case(
        "fill_constant_shape_tensor",
        lambda: L.fill_constant(L.assign(np.array([2, 2], "int32")), "float32", 1.5),
        {},
        lambda: np.full((2, 2), 1.5, "float32"),
    ),
    Case(
        "fill_constant_batch_size_like",
        lambda x: L.fill_constant_batch_size_like(x, [1, 5], "float32", 2.0),
        {"x": X},
        lambda x: np.full((2, 5), 2.0, "float32"),
    ),
    Case("fill_any_like", lambda i: L.ones_like(i), {"i": I}, lambda i: np.ones_like(i)),
    Case("fill_zeros_like", lambda x: L.zeros_like(x), {"x": X}, np.zeros_like),
    Case("assign", lambda x: L.assign(x), {"x": X}, lambda x: x),
    Case(
        "assign_value",
        lambda: L.assign(np.arange(6, dtype="int32").reshape(2, 3)),
        {},
        lambda: np.arange(6, dtype="int32").reshape(2, 3),
    ),
    Case("cast", lambda x: L.cast(x, "int32"), {"x": X}, lambda x: x.astype("int32")),
    Case(
        "shape",
        lambda img: L.shape(img),
        {"img": IMG},
        lambda img: np.array(img.shape, "int32"),
        shapes={"img": [None, 3, 6, 7]},
    ),
    Case(
        "slice",
        lambda x: L.slice(x, axes=[1, 2], starts=[1, -3], ends=[10000, -1]),
        {"x": X},
        lambda x: x[:, 1:, -3:-1],
    ),
    Case(
        "slice_tensor_bounds",
        lambda x: L.slice(x, [2], [L.fill_constant([1], "int32", 1)], L.assign(np.array([3], "int32"))),
        {"x": X},
        lambda x: x[:, :, 1:3],
    ),
    Case(
        "crop",
        lambda x: L.crop(x, shape=[1, 2, 3], offsets=[1, 1, 0]),
        {"x": X},
        lambda x: x[1:2, 1:3, 0:3],
    ),
    Case(
        "crop_tensor",
        lambda x: L.crop_tensor(x, shape=[2, 2, -1], offsets=[0, 1, 1]),
        {"x": X},
        lambda x: x[:, 1:3, 1:],
    ),
    Case(
        "crop_tensor_shape_var",
        lambda x: L.crop_tensor(x, shape=L.assign(np.array([1, 2, 3], "int32")), offsets=[1, 0, 1]),
        {"x": X},
        lambda x: x[1:, :2, 1:],
    ),
    Case("reshape2", lambda x: L.reshape(x, [0, -1, 2]), {"x": X}, lambda x: x.reshape(2, 6, 2)),
    Case("transpose2", lambda x: L.transpose(x, [2, 0, 1]), {"x": X}, lambda x: x.transpose(2, 0, 1)),
    Case("concat", lambda x, y: L.concat([x, y], axis=-1), xy, lambda x, y: np.concatenate([x, y], -1)),
    Case("split", lambda x: L.split(x, [1, -1, 2], dim=2), {"x": X}, lambda x: np.split(x, [1, 2], axis=2)),
    Case("split_num", lambda x: L.split(x, 2, dim=0), {"x": X}, lambda x: np.split(x, 2, axis=0)),
    Case("squeeze2", lambda x: L.squeeze(L.reshape(x, [2, 1, 12, 1]), [1, 3]), {"x": X}, lambda x: x.reshape(2, 12)),
    Case("unsqueeze2", lambda x: L.unsqueeze(x, [0, -1]), {"x": X}, lambda x: x[None, ..., None]),
    Case("stack", lambda x, y: L.stack([x, y], axis=1), xy, lambda x, y: np.stack([x, y], 1)),
    Case("expand", lambda x: L.expand(x, [1, 2, 3]), {"x": X}, lambda x: np.tile(x, (1, 2, 3))),
    Case("gather", lambda x: L.gather(x, L.assign(np.array([1, 0, 1], "int64"))), {"x": X}, lambda x: x[[1, 0, 1]]),
    Case(
        "scatter",
        lambda m: L.scatter(m, L.assign(np.array([2, 0], "int64")), L.assign(np.ones((2, 5), "float32"))),
        {"m": M},
        lambda m: np.where(np.arange(3)[:, None] % 2 == 0, 1.0, m).astype("float32"),
    ),
    Case(
        "scatter_add",
        lambda m: L.scatter(
            m, L.assign(np.array([2, 2], "int64")), L.assign(np.ones((2, 5), "float32")), overwrite=False
        ),
        {"m": M},
        lambda m: np.concatenate([m[:2], np.full((1, 5), 2.0, "float32")]),
    ),
    Case("range", lambda: L.range(1, 10, 2, "int64"), {}, lambda: np.arange(1, 10, 2, dtype="int64")),
    Case("linspace", lambda: L.linspace(0, 1, 5, "float32"), {}, lambda: np.linspace(0, 1, 5, dtype="float32")),
    Case(
        "flatten2",
        lambda img: L.flatten(img, axis=2),
        {"img": IMG},
        lambda img: img.reshape(6, 42),
        shapes={"img": [None, 3, 6, 7]},
    ),
    Case(
        "pad",
        lambda x: L.pad(x, [0, 0, 1, 0, 2, 1], pad_value=-1.0),
        {"x": X},
        lambda x: np.pad(x, [(0, 0), (1, 0), (2, 1)], constant_values=-1.0),
    ),
    Case(
        "pad2d_constant",
        lambda img: L.pad2d(img, [1, 0, 2, 1], pad_value=0.5),
        {"img": IMG},
        lambda img: R.pad_hw(img, 1, 0, 2, 1, 0.5),
    ),
    Case(
        "pad2d_reflect",
        lambda img: L.pad2d(img, [1, 2, 0, 1], mode="reflect"),
        {"img": IMG},
        lambda img: np.pad(img, [(0, 0), (0, 0), (1, 2), (0, 1)], mode="reflect"),
    ),
    Case(
        "pad2d_edge",
        lambda img: L.pad2d(img, [2, 0, 1, 1], mode="edge"),
        {"img": IMG},
        lambda img: np.pad(img, [(0, 0), (0, 0), (2, 0), (1, 1)], mode="edge"),
    ),
    Case("where_index", lambda b: L.where(b), {"b": B}, lambda b: np.argwhere(b)),
    Case(
        "where",
        lambda b, x, y: append("where", {"Condition": [b], "X": [x], "Y": [y]}, {"Out": "float32"}),
        {"b": B, "x": X, "y": Y},
        lambda b, x, y: [np.where(b, x, y)],
    ),
    Case("select_input", lambda x, y: L.select_input([x, y], L.assign(np.array([1], "int32"))), xy, lambda x, y: y),
    Case("select_input_0", lambda x, y: L.select_input([x, y], L.assign(np.array([0], "int32"))), xy, lambda x, y: x),
    Case("increment", lambda: L.increment(L.fill_constant([1], "int64", 5), 2), {}, lambda: np.array([7], "int64")),
    # convolution, pooling, normalisation
    Case(
        "conv2d",
        lambda img: L.conv2d(
            img, 2, 3, stride=2, padding=1, param_attr=param(np.ones((2, 3, 3, 3)) * 0.1), bias_attr=False
        ),
        {"img": IMG},
        lambda img: R.conv2d(img, np.ones((2, 3, 3, 3), "float32") * 0.1, (2, 2), (1, 1, 1, 1)),
        rtol=1e-4,
    ),
    Case(
        "conv2d_dilated_asym",
        lambda img: L.conv2d(img, 2, [3, 2], dilation=2, padding=[1, 0, 2, 1], param_attr=param(WK), bias_attr=False),
        {"img": IMG},
        lambda img: R.conv2d(img, WK, (1, 1), (1, 0, 2, 1), (2, 2)),
        rtol=1e-4,
        atol=1e-5,
    ),
    Case(
        "conv2d_same",
        lambda img: L.conv2d(
            img, 2, 3, stride=2, padding="SAME", param_attr=param(np.ones((2, 3, 3, 3)) * 0.1), bias_attr=False
        ),
        {"img": IMG},
        lambda img: R.conv2d(img, np.ones((2, 3, 3, 3), "float32") * 0.1, (2, 2), (0, 1, 1, 1)),
        rtol=1e-4,
    ),
    Case(
        "depthwise_conv2d",
        lambda img: L.conv2d(
            img, 3, 3, groups=3, use_cudnn=False, param_attr=param(np.arange(27).reshape(3, 1, 3, 3) / 27.0)
        ),
        {"img": IMG},
        lambda img: R.conv2d(img, f32(np.arange(27).reshape(3, 1, 3, 3) / 27.0), groups=3),
        rtol=1e-4,
        atol=1e-5,
    ),
    Case(
        "conv2d_transpose",
        lambda img: L.conv2d_transpose(
            img, 2, filter_size=3, stride=2, padding=1, param_attr=param(np.ones((3, 2, 3, 3)) * 0.2), bias_attr=False
        ),
        {"img": IMG},
        lambda img: R.conv2d_transpose(img, np.ones((3, 2, 3, 3), "float32") * 0.2, (2, 2), (1, 1, 1, 1)),
        rtol=1e-4,
        atol=1e-5,
    ),
    Case(
        "conv2d_transpose_output_size",
        lambda img: L.conv2d_transpose(
            img, 2, output_size=[13, 15], stride=2, param_attr=param(np.ones((3, 2, 3, 3)) * 0.2), bias_attr=False
        ),
        {"img": IMG},
        lambda img: R.conv2d_transpose(img, np.ones((3, 2, 3, 3), "float32") * 0.2, (2, 2)),
        rtol=1e-4,
        atol=1e-5,
    ),
    Case(
        "pool2d_max",
        lambda img: L.pool2d(img, 3, "max", 2, 1),
        {"img": IMG},
        lambda img: R.pool2d(img, (3, 3), (2, 2), (1, 1, 1, 1), "max"),
    ),
    Case(
        "pool2d_avg_ceil",
        lambda img: L.pool2d(img, 2, "avg", 2, 0, ceil_mode=True),
        {"img": IMG},
        lambda img: R.pool2d(img, (2, 2), (2, 2), (0, 0, 0, 0), "avg", ceil=True),
    ),
    Case(
        "pool2d_avg_inclusive",
        lambda img: L.pool2d(img, 3, "avg", 2, 1, exclusive=False),
        {"img": IMG},
        lambda img: R.pool2d(img, (3, 3), (2, 2), (1, 1, 1, 1), "avg", exclusive=False),
    ),
    Case(
        "pool2d_global",
        lambda img: L.pool2d(img, pool_type="avg", global_pooling=True),
        {"img": IMG},
        lambda img: img.mean(axis=(2, 3), keepdims=True),
    ),
    Case(
        "batch_norm",
        lambda img: L.batch_norm(img),
        {"img": IMG},
        lambda img: R.batch_norm_train(img, np.ones(3, "float32"), np.zeros(3, "float32"))[0],
        atol=1e-5,
    ),
    Case(
        "batch_norm_test",
        lambda img: L.batch_norm(img, is_test=True),
        {"img": IMG},
        lambda img: f32(img / np.sqrt(1 + 1e-5)),
        atol=1e-6,
    ),
    Case(
        "layer_norm",
        lambda x: append(
            "layer_norm", {"X": [x]}, {"Y": "float32", "Mean": "float32", "Variance": "float32"}, {"begin_norm_axis": 2}
        ),
        {"x": X},
        lambda x: R.layer_norm(x, 2),
        atol=1e-5,
    ),
    Case(
        "layer_norm_layer",
        lambda x: L.layer_norm(x, begin_norm_axis=1),
        {"x": X},
        lambda x: R.layer_norm(x, 1)[0],
        atol=1e-5,
    ),
    Case("dropout_test", lambda x: L.dropout(x, 0.3, is_test=True), {"x": X}, lambda x: x * 0.7, rtol=1e-6),
    Case(
        "dropout_test_upscale",
        lambda x: L.dropout(x, 0.3, is_test=True, dropout_implementation="upscale_in_train"),
        {"x": X},
        lambda x: x,
    ),
    # tensor arrays, IfElse's row routing, and the ops that call Python
    Case(
        "tensor_array_ops",
        lambda x, y: _array_ops(x, y),
        xy,
        lambda x, y: [y, np.array([3], "int64"), np.concatenate([x, y, x], 1)],
    ),
    Case(
        "split_merge_lod_tensor",
        lambda x, m: _split_merge(x, m),
        {"x": X, "m": np.array([[False], [True]])},
        lambda x, m: [x[1:], x[:1], np.concatenate([x[:1] * 3.0, x[1:] * 2.0])],
    ),
    Case(
        "split_merge_lod_tensor_infer",
        lambda x, m: _split_merge(x, m, "merge_lod_tensor_infer"),
        {"x": X, "m": np.array([[True], [False]])},
        lambda x, m: [x[:1], x[1:], np.concatenate([x[:1] * 2.0, x[1:] * 3.0])],
    ),
    Case("print", lambda x: L.Print(x, first_n=1, summarize=2), {"x": X}, lambda x: x),
    Case("py_func", lambda x: _py_func(x), {"x": X}, lambda x: x * 2.0),
    Case("assert", lambda x: _assert_then(x), {"x": X}, lambda x: x + 1.0),
]


def _array_ops(x, y):
    arr = L.create_array("float32")
    for k, v in enumerate((x, y, x)):
        L.array_write(v, L.fill_constant([1], "int64", k), array=arr)
    t, _ = L.tensor_array_to_tensor(arr, axis=1)  # OutIndex: shape [] when built, as in fluid 1.8.5
    return [L.array_read(arr, L.fill_constant([1], "int64", 1)), L.array_length(arr), t]


def _split_merge(x, m, merge="merge_lod_tensor"):
    t, f = append("split_lod_tensor", {"X": [x], "Mask": [m]}, {"OutTrue": "float32", "OutFalse": "float32"})
    merged = append(merge, {"X": [m], "Mask": [m], "InTrue": [t * 2.0], "InFalse": [f * 3.0]}, {"Out": "float32"})
    return [t, f, merged[0]]


def _py_func(x):
    out = fluid.default_main_program().current_block().create_var(name="py_out", dtype="float32", shape=[2, 3, 4])
    L.py_func(lambda a: np.array(a) * 2.0, x, out)
    return out


def _assert_then(x):
    L.Assert(L.reduce_max(x) < 100.0, [x])
    return x + 1.0


def _check_uniform(out):
    assert out.min() >= -2.0 and out.max() < 3.0 and out.std() > 0.5


def _check_gaussian(out):
    assert abs(out.mean() - 1.0) < 0.1 and abs(out.std() - 2.0) < 0.15


def _check_truncated(out):
    assert np.all(np.abs(out) <= 2.0) and 0.7 < out.std() < 0.95


RANDOM_CASES = [
    Case(
        "dropout_train",
        lambda x: L.dropout(L.expand(x, [20, 20, 20]), 0.5, dropout_implementation="upscale_in_train"),
        {"x": X},
        check=lambda out: _check_dropout_train_big(out),
    ),
    Case("uniform_random", lambda: L.uniform_random([100, 100], min=-2.0, max=3.0), {}, check=_check_uniform),
    Case("gaussian_random", lambda: L.gaussian_random([100, 100], mean=1.0, std=2.0), {}, check=_check_gaussian),
    Case(
        "truncated_gaussian_random",
        lambda: L.scale(
            L.create_parameter([100, 100], "float32", default_initializer=fluid.initializer.TruncatedNormal(0.0, 1.0))
        ),
        {},
        check=_check_truncated,
    ),
]


def _check_dropout_train_big(out):
    big = np.tile(X, (20, 20, 20))
    kept = out != 0
    np.testing.assert_allclose(out[kept], (big * 2.0)[kept], rtol=1e-6)
    assert 0.45 < kept.mean() < 0.55


def _get_places_beside(x):
    """get_places runs (its PLACE_LIST is read by no op since parallel_do went: its values are checked
    in test_get_places.py); the case's output is x."""
    from fluidcompat.layers.device import get_places

    get_places(device_count=2, device_type="CPU")
    return L.assign(x)


CASES.append(Case("get_places", _get_places_beside, {"x": X}, lambda x: x))
CASES += EXTRA_CASES + SEQUENCE_CASES + FUSION_CASES + MORE_CASES


@pytest.mark.parametrize("case", CASES + RANDOM_CASES, ids=str)
def test_op(case):
    run_case(case)


@pytest.mark.cuda
@pytest.mark.skipif(not fluid.places.cuda_available(), reason="needs a CUDA device")
@pytest.mark.parametrize("case", CASES + RANDOM_CASES, ids=str)
def test_op_on_cuda(case):
    """The same table on cuda:0: every kernel, with its host slots, gives numpy's values there."""
    run_case(case, fluid.CUDAPlace(0))


@pytest.mark.parametrize("case", CASES + RANDOM_CASES, ids=str)
def test_op_on_an_emulated_gpu_under_the_profiler(case, monkeypatch):
    """The table with the GPU plan (--device emulated-gpu: cuda:0 places, host tensors) and the
    profiler recording: each kernel gets its inputs through the plan's copies and gives numpy's
    values, and the report has one GpuMemcpy event per planned copy, per run, and one same-GPU copy
    per op whose kernel is a copy (assign)."""
    from fluidcompat import places, profiler
    from fluidcompat.executor.interpreter import _reads_an_array
    from fluidcompat.executor.placement import plan_block
    from fluidcompat.profiler.events import RECORDER

    monkeypatch.setenv(places.ENV_DEVICE, places.EMULATED_GPU)
    profiler.start_profiler("CPU")
    try:
        main, startup, _ = run_case(case, fluid.CUDAPlace(0))
        events = [e.name for t in RECORDER.lists for e in t.events]
    finally:
        profiler.reset_profiler()
        RECORDER.stop()
    plans = [plan_block(prog.global_block(), "cuda:0", case.inputs) for prog in (startup, main)]
    planned = [c for plan in plans for c in plan.copies]
    copies = [n for n in events if "GpuMemcpy" in n and "(same_gpu)" not in n and not n.startswith(("feed/", "fetch/"))]
    assert len(copies) == len(planned), (case.name, copies, planned)
    on_device = [
        p
        for plan in plans
        for p in plan.ops
        if p.op._def.copies_on_device and p.device == "cuda:0" and not _reads_an_array(p.op)
    ]
    assert len([n for n in events if "(same_gpu)" in n]) == len(on_device), case.name


# what torch says when a kernel needs the values of a tensor that has none (the meta device)
_NO_DATA = ("meta tensor", "Meta tensor", "Cannot copy out of meta", "register_meta", "no fake impl", "META device")
# the cases whose kernels read values (host slots, data-dependent shapes, checks, host algorithms,
# random generators): on the meta device they stop at that read; every other case must run through
_READS_VALUES = set(
    "sequence_unpad sequence_slice sequence_scatter sequence_erase "
    "one_hot one_hot_v2 lookup_table lookup_table_v2 fill_constant_shape_tensor slice_tensor_bounds "
    "crop_tensor_shape_var range linspace where_index select_input select_input_0 tensor_array_ops "
    "split_merge_lod_tensor split_merge_lod_tensor_infer print py_func assert arange unique unique_with_counts "
    "nonzero dice_loss "
    "randint randperm selected_rows random_crop mean_iou edit_distance warpctc ctc_greedy_decoder auc "
    "linear_chain_crf crf_decoding sampled_softmax_log_uniform hash similarity_focus center_loss chunk_eval "
    "roi_pool roi_align sequence_mask_longest beam_search beam_search_decode multiclass_nms multiclass_nms2 "
    "bipartite_match mine_hard_examples yolov3_loss generate_proposals distribute_fpn_proposals "
    "collect_fpn_proposals matrix_nms detection_map rpn_target_assign retinanet_target_assign "
    "retinanet_detection_output generate_proposal_labels lod_tensor_to_array roi_perspective_transform "
    "locality_aware_nms filter_by_instag generate_mask_labels tree_conv tdm_child tdm_sampler "
    "fake_quantize_range_abs_max rank_attention "
    "nce_custom_dist".split()  # a seeded custom distribution reads its alias tables on the host
)
_READS_VALUES |= FUSION_READS_VALUES | MORE_READS_VALUES


def meta_for_gpu(monkeypatch):
    """GPU places planned as on a GPU (emulated), their tensors on torch's meta device: shapes, no data."""
    from fluidcompat import places
    from fluidcompat.executor import executor

    monkeypatch.setenv(places.ENV_DEVICE, places.EMULATED_GPU)
    monkeypatch.setattr(places, "tensor_device", lambda d: "meta" if d != "cpu" else d)
    # no page-locked staging buffers for the meta device: feeds go there directly
    monkeypatch.setattr(executor, "_to_device", lambda t, d: t if t.device == d else t.to(d))


@pytest.mark.parametrize("case", CASES + RANDOM_CASES, ids=str)
def test_op_kernels_stay_on_their_device(case, monkeypatch):
    """Each kernel planned for the GPU, run with the GPU stood in for by torch's meta device (tensors
    with shapes and no data), never mixes in a tensor of another device: no host index or constant
    made on the CPU and combined with the op's inputs, as would fail on cuda:0. Kernels that read
    their inputs' values (_READS_VALUES) stop at the first read and are left to the CUDA table; any
    other case must run through."""
    from fluidcompat.executor import interpreter

    meta_for_gpu(monkeypatch)
    assert interpreter.places.tensor_device("cuda:0") == "meta"
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        vars_ = {k: fluid.data(k, list(case.shapes.get(k, v.shape)), str(v.dtype)) for k, v in case.inputs.items()}
        outs = case.build(**vars_)
    exe = fluid.Executor(fluid.CUDAPlace(0))
    scope = fluid.Scope()
    try:
        if startup.global_block().ops:
            exe.run(startup, scope=scope)
        exe.run(main, feed=case_feed(case), fetch_list=outs, scope=scope, return_numpy=False)
    except Exception as e:  # noqa: BLE001  (only a read of values that meta tensors lack may stop it)
        assert case.name in _READS_VALUES and any(m in str(e) for m in _NO_DATA), f"{case.name}: {e}"


def test_every_registered_op_has_a_case():
    covered = set()
    for case in CASES + RANDOM_CASES:
        main, startup, _ = run_case(case)
        covered.update(op.type for prog in (main, startup) for op in prog.global_block().ops)
    # grad ops are checked in test_grads.py, update ops in test_optimizer_ops.py, collective ops (they
    # need several worker processes) in test_distributed.py, parameter-server ops (they need servers)
    # in test_distribute_transpiler.py
    forward = {
        n
        for n, d in all_defs().items()
        if d.kernel is not None and not d.forward and not d.kernel.__module__.endswith(("optim", "collective", "rpc"))
    }
    missing = forward - covered
    assert not missing, f"ops without a case in the op table: {sorted(missing)}"


def test_seeded_random_ops_repeat():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        u = L.uniform_random([4, 4], seed=7)
        d = L.dropout(L.fill_constant([50], "float32", 1.0), 0.5, seed=3)
    exe = fluid.Executor(fluid.CPUPlace())
    a = exe.run(main, fetch_list=[u, d])
    b = exe.run(main, fetch_list=[u, d])
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])


def test_negating_zero_gives_zero_as_fluid():
    """-x is scale(x, -1, bias 0) and fluid's kernel added the bias: -0 becomes +0, so 1 / -x at 0 is
    +inf as in fluid 1.8.5 (fluidcompat skipped a zero bias and gave -0, -inf)."""
    x = fluid.data("x", [3], "float32")
    neg = -x
    inv = 1.0 / neg
    got_neg, got_inv = fluid.Executor(fluid.CPUPlace()).run(
        feed={"x": np.array([0.0, -0.0, 2.0], "float32")}, fetch_list=[neg, inv]
    )
    assert not np.signbit(got_neg[:2]).any() and got_neg[2] == -2.0
    np.testing.assert_array_equal(got_inv, [np.inf, np.inf, -0.5])


def test_random_crop_carries_its_seed_from_run_to_run():
    """As in fluid 1.8.5, random_crop keeps its seed in a persistable random_crop_seed_N that each run
    advances, so every run crops afresh (fluidcompat reseeded each run: the same crop every step),
    while the same startup seed in a fresh scope repeats the same sequence."""
    X = np.arange(2 * 36, dtype="float32").reshape(2, 6, 6)

    def crops():
        main, startup = fluid.Program(), fluid.Program()
        with fluid.program_guard(main, startup):
            x = fluid.data("x", [None, 6, 6], "float32")
            c = L.random_crop(x, [3, 3], seed=11)
        assert [v.name for v in main.list_vars() if v.persistable] == ["random_crop_seed_0"]
        exe = fluid.Executor(fluid.CPUPlace())
        with fluid.scope_guard(fluid.Scope()):
            got = [exe.run(main, feed={"x": X}, fetch_list=[c])[0] for _ in range(6)]
        for out in got:
            for i in range(2):
                r, q = divmod(int(out[i, 0, 0]) - 36 * i, 6)
                np.testing.assert_array_equal(out[i], X[i, r : r + 3, q : q + 3])
        return [tuple(o.reshape(-1)) for o in got]

    from fluidcompat import unique_name

    with unique_name.guard():
        first = crops()
    with unique_name.guard():
        again = crops()
    assert len(set(first)) > 1 and first == again
    with pytest.raises(ValueError, match="'seed' must be a Variable or an int. Received: str"):
        L.random_crop(fluid.data("y", [None, 6, 6], "float32"), [3, 3], seed="7")


@pytest.mark.parametrize("case", CASES + RANDOM_CASES, ids=str)
def test_op_plans_for_cuda(case, monkeypatch):
    """Without a GPU, every case's program still plans for cuda:0 (the planner is pure): each op gets
    a device, host slots read on the CPU, and no copy moves a tensor array."""
    from fluidcompat import places
    from fluidcompat.executor.placement import plan_block

    monkeypatch.delenv(places.ENV_DEVICE, raising=False)
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        for k, v in case.inputs.items():
            fluid.data(k, list(case.shapes.get(k, v.shape)), str(v.dtype))
        case.build(**{k: main.global_block().var(k) for k in case.inputs})
    plan = plan_block(main.global_block(), "cuda:0")
    for p in plan.ops:
        assert p.device in ("cuda:0", "cpu"), (case.name, p.op.type, p.device)
        for c in p.copies:
            var = main.global_block()._find_var_recursive(c.var)
            assert var is None or var.type != fluid.dtypes.VarType.LOD_TENSOR_ARRAY, (case.name, c)
            if c.slot in p.op._def.host_inputs:
                assert c.dst == "cpu", (case.name, p.op.type, c)


@pytest.mark.parametrize(
    "build, message",
    [
        (lambda L, d: L.space_to_depth(d("x", [None, 3, 8, 8]), 2), r"channel count must be divisible by 4 "),
        (lambda L, d: L.space_to_depth(d("x", [None, 4, 7, 8]), 2), r"height must be divisible by 2 .*\[N, 4, 7, 8\]"),
        (lambda L, d: L.space_to_depth(d("x", [None, 4, 8, 5]), 2), r"width must be divisible by 2"),
        (lambda L, d: L.expand(d("x", [None, 4]), [1, -1]), r"expand_times must be a positive int .* \[1, -1\] .*'x'"),
        (lambda L, d: L.expand(d("x", [None, 4]), [0, 2]), r"received \[0, 2\] for variable 'x'"),
        (lambda L, d: L.scatter(d("x", [None, 3]), d("i", [2, 1]), d("u", [2, 3])), r"Ids should be 1-D.*'i' of shape"),
        (lambda L, d: L.scatter(d("x", [None, 3]), d("i", [2]), d("u", [2, 3, 1])), r"the same rank"),
        (lambda L, d: L.scatter(d("x", [None, 3]), d("i", [2]), d("u", [3, 3])), r"Updates and Ids should have same"),
        (lambda L, d: L.scatter(d("x", [None, 3]), d("i", [2]), d("u", [2, 4])), r"X's row shape \[3\]"),
        (lambda L, d: L.lstm_unit(d("x", [None, 3]), d("h", [None, 4]), d("c", [None, 5])), r"The 2nd dimensions"),
        (lambda L, d: L.margin_rank_loss(d("l", [None, 1]), d("a", [None, 1]), d("b", [None, 2])), r"X2\)'s .*-1, 2"),
        (lambda L, d: L.rank_loss(d("l", [None, 1]), d("a", [None, 1]), d("b", [None, 2])), r"\(Right\) must be 1"),
        (lambda L, d: L.rank_loss(d("l", [3, 1]), d("a", [4, 1]), d("b", [4, 1])), r"Label.dims\[0\]=3, Left.dims"),
        (lambda L, d: L.expand_as(d("x", [None, 3]), d("y", [2, 3, 4])), r"target_tensor\): input rank 3"),
        (lambda L, d: L.gather_nd(d("x", [None, 3]), d("i", [2, 3])), r"Index 'i' of shape \[2, 3\], X 'x' of rank 2"),
        (lambda L, d: L.roi_pool(d("x", [None, 3, 8, 8]), d("r", [None, 5]), 2, 2), r"ROIs 'r' of shape \[-1, 5\]"),
        (lambda L, d: L.softmax(d("x", [None, 3]), axis=-3), r"Received: axis=-3, R=2"),
        (
            lambda L, d: L.sequence_reshape(d("emb", [None, 1, 8]), 4),
            r"Rank of Input\(X\) should be 2. But received \(3\): 'emb' of shape \[-1, 1, 8\]",
        ),
        (  # fluid.embedding's [N, 1, D] output of [N, 1] ids (the book used layers.embedding: [N, D])
            lambda L, d: L.sequence_conv(d("emb", [None, 1, 8]), 8, 3),
            r"should be 2-D tensor. But received Input\(X\) 'emb': input rank 3, input shape \[-1, 1, 8\]",
        ),
        (
            lambda L, d: L.box_coder(d("p", [5, 4]), [0.1, 0.1, 0.2, 0.2], d("t", [3, 4]), "decode_center_size"),
            r"decode_center_size needs TargetBox 't' of rank 3 \(\[N, M, 4\]\). Received: shape \[3, 4\]",
        ),
        (
            lambda L, d: L.box_coder(d("p", [5, 4]), [0.1, 0.1, 0.2, 0.2], d("t", [3, 5, 4]), "encode_center_size"),
            r"encode_center_size needs TargetBox 't' of rank 2",
        ),
    ],
)
def test_build_time_shape_refusals_name_the_problem_and_leave_the_program(build, message):
    """Shapes fluid 1.8.5 refused when building (space_to_depth's divisibility, box_coder's TargetBox
    rank) or that built an op failing when run (expand by -1 or 0): a ValueError naming the variable
    and shape, and the program keeps no op of the call."""
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        data = lambda name, shape: fluid.data(name, shape, "float32")  # noqa: E731
        with pytest.raises(ValueError, match=message):
            build(fluid.layers, data)
    assert [op.type for op in main.global_block().ops] == [] and not main.global_block().all_parameters()
