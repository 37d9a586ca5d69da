# fluid.layers functions called in dygraph mode: outputs, dtypes and the input's gradient.
import json

import numpy as np
import paddle.fluid as fluid
from paddle.fluid.dygraph import to_variable

L = fluid.layers


def r(a):
    return None if a is None else np.round(np.asarray(a, "float64").reshape(-1), 5).tolist()


rng = np.random.RandomState(0)
A = rng.uniform(-1, 1, (2, 3, 4)).astype("float32")
M = rng.uniform(-1, 1, (3, 4)).astype("float32")
IDS = np.array([[1], [3], [0]], "int64")
LAB = np.array([[2], [0], [3]], "int64")

CASES = {
    "relu": lambda x: L.relu(x),
    "sigmoid": lambda x: L.sigmoid(x),
    "tanh": lambda x: L.tanh(x),
    "softmax": lambda x: L.softmax(x),
    "log_softmax_like": lambda x: L.log(L.softmax(x, axis=1)),
    "leaky_relu": lambda x: L.leaky_relu(x, 0.1),
    "elu": lambda x: L.elu(x),
    "gelu": lambda x: L.gelu(x),
    "swish": lambda x: L.swish(x),
    "hard_sigmoid": lambda x: L.hard_sigmoid(x),
    "scale": lambda x: L.scale(x, 2.0, 1.0),
    "pow": lambda x: L.pow(x, 2.0),
    "sqrt_abs": lambda x: L.sqrt(L.abs(x) + 1.0),
    "clip": lambda x: L.clip(x, -0.3, 0.4),
    "reduce_sum": lambda x: L.reduce_sum(x, dim=1),
    "reduce_mean": lambda x: L.reduce_mean(x, dim=[0, 2], keep_dim=True),
    "reduce_max": lambda x: L.reduce_max(x, dim=-1),
    "reduce_min": lambda x: L.reduce_min(x),
    "reduce_prod": lambda x: L.reduce_prod(x, dim=0),
    "mean": lambda x: L.mean(x),
    "reshape": lambda x: L.reshape(x, [4, -1]),
    "transpose": lambda x: L.transpose(x, [2, 0, 1]),
    "flatten": lambda x: L.flatten(x, axis=2),
    "squeeze_unsqueeze": lambda x: L.squeeze(L.unsqueeze(x, [1]), [1]),
    "concat": lambda x: L.concat([x, x * 2.0], axis=1),
    "split": lambda x: L.split(x, [1, 3], dim=2)[1],
    "stack": lambda x: L.stack([x, x], axis=0),
    "unstack": lambda x: L.unstack(x, axis=1)[2],
    "slice": lambda x: L.slice(x, axes=[1, 2], starts=[1, 0], ends=[3, 2]),
    "expand": lambda x: L.expand(x, [1, 2, 1]),
    "gather": lambda x: L.gather(x, to_variable(np.array([1, 0, 1], "int32"))),
    "pad": lambda x: L.pad(x, [0, 0, 1, 0, 0, 2], pad_value=0.5),
    "matmul": lambda x: L.matmul(x, to_variable(M.T.copy()), transpose_y=False),
    "matmul_t": lambda x: L.matmul(x, to_variable(M), transpose_y=True, alpha=0.5),
    "elementwise_axis": lambda x: L.elementwise_add(x, to_variable(np.arange(3, dtype="float32")), axis=1),
    "elementwise_max": lambda x: L.elementwise_max(x, L.zeros_like(x)),
    "layer_norm": lambda x: L.layer_norm(x, begin_norm_axis=2),
    "l2_normalize": lambda x: L.l2_normalize(x, axis=2),
    "cumsum": lambda x: L.cumsum(x, axis=1),
    "where_like": lambda x: x * L.cast(x > 0.0, "float32"),
    "topk": lambda x: L.topk(x, 2)[0],
    "argmax": lambda x: L.argmax(x, axis=2),
    "argsort": lambda x: L.argsort(x, axis=1)[1],
    "shape": lambda x: L.shape(x),
    "fill_like": lambda x: L.fill_constant_batch_size_like(x, [1, 5], "float32", 1.5),
    "ones_zeros": lambda x: L.ones([2], "float32") + L.zeros([2], "float32"),
    "assign": lambda x: L.assign(np.array([1.5, 2.5], "float32")),
    "fill_constant": lambda x: L.fill_constant([2, 2], "int64", 7),
    "range": lambda x: L.range(0, 6, 2, "int32"),
    "linspace": lambda x: L.linspace(0, 1, 5, "float32"),
    "one_hot": lambda x: L.one_hot(to_variable(IDS), 4),
    "embedding": lambda x: L.embedding(
        to_variable(IDS),
        [4, 3],
        param_attr=fluid.initializer.NumpyArrayInitializer(np.arange(12).reshape(4, 3).astype("float32")),
    ),
    "fc": lambda x: L.fc(
        x,
        2,
        num_flatten_dims=2,
        param_attr=fluid.initializer.Constant(0.1),
        bias_attr=fluid.initializer.Constant(0.2),
        act="tanh",
    ),
    "cross_entropy": lambda x: L.cross_entropy(L.softmax(L.reshape(x, [3, 8])[:, :4]), to_variable(LAB)),
    "softmax_ce": lambda x: L.softmax_with_cross_entropy(L.reshape(x, [3, 8])[:, :4], to_variable(LAB)),
    "sigmoid_ce": lambda x: L.sigmoid_cross_entropy_with_logits(x, L.cast(x > 0.2, "float32")),
    "square_error": lambda x: L.square_error_cost(x, L.zeros_like(x) + 0.5),
    "smooth_l1": lambda x: L.smooth_l1(L.reshape(x, [3, 8]), L.zeros([3, 8], "float32")),
    "accuracy": lambda x: L.accuracy(L.softmax(L.reshape(x, [3, 8])[:, :4]), to_variable(LAB), k=2),
    "conv2d": lambda x: L.conv2d(
        L.unsqueeze(x, [1]), 2, 2, param_attr=fluid.initializer.Constant(0.3), bias_attr=False
    ),
    "pool2d": lambda x: L.pool2d(L.unsqueeze(x, [1]), 2, "avg", 1),
    "batch_norm": lambda x: L.batch_norm(L.unsqueeze(x, [1])),
    "dropout_p0": lambda x: L.dropout(x, 0.0),
    "getitem": lambda x: x[1, :, 1:3],
    "neg_sub_div": lambda x: (-x - 1.0) / (x * x + 1.0),
    "compare": lambda x: L.cast(L.logical_and(x > -0.5, x < 0.5), "float32"),
    "sums": lambda x: L.sums([x, x, x]),
    "increment": lambda x: L.increment(L.fill_constant([1], "float32", 2.0), 3.0),
    "has_nan": lambda x: L.cast(L.has_nan(x), "float32"),
}

out = {}
for name, fn in sorted(CASES.items()):
    with fluid.dygraph.guard(fluid.CPUPlace()):  # one guard each: a failed backward leaves fluid's engine unusable
        x = to_variable(A)
        x.stop_gradient = False
        try:
            y = fn(x)
            case = {"shape": list(y.shape), "dtype": str(y.dtype), "value": r(y.numpy())}
            if str(y.dtype) == "VarType.FP32":
                case["stop"] = y.stop_gradient
            if not y.stop_gradient and str(y.dtype) == "VarType.FP32":
                L.reduce_sum(y * y).backward()
                case["grad"] = r(x.gradient())
        except Exception as e:
            case = {"error": type(e).__name__, "msg": str(e)[-400:]}
        out[name] = case
print(json.dumps(out, sort_keys=True))
