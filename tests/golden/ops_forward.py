# Golden script: forward ops on fixed inputs. Run under real fluid 1.8.5 (../shared/tools/fluid18) to
# record tests/golden/ops_forward.json, and under `fluidcompat run --device cpu` to compare.
import json
import sys

import numpy as np
import paddle.fluid as fluid

L = fluid.layers
rng = np.random.RandomState(0)
A = rng.uniform(-2, 2, (2, 3, 4)).astype("float32")
B = rng.uniform(0.5, 2, (2, 3, 4)).astype("float32")
V4 = rng.uniform(-1, 1, (4,)).astype("float32")
I1 = rng.randint(1, 9, (2, 3, 4)).astype("int64")
I2 = rng.randint(1, 4, (2, 3, 4)).astype("int64")
IMG = rng.uniform(-1, 1, (2, 3, 7, 7)).astype("float32")
P = rng.uniform(0.05, 1, (6, 4)).astype("float32")
P = P / P.sum(axis=1, keepdims=True)
LAB = np.array([[0], [3], [1], [2], [3], [0]], dtype="int64")
W_FC = rng.uniform(-1, 1, (4, 5)).astype("float32")
W_CONV = rng.uniform(-1, 1, (4, 3, 3, 3)).astype("float32")
W_DW = rng.uniform(-1, 1, (3, 1, 3, 3)).astype("float32")
W_CT = rng.uniform(-1, 1, (3, 2, 3, 3)).astype("float32")
W_EMB = rng.uniform(-1, 1, (10, 3)).astype("float32")
IDS = np.array([[1], [9], [4], [0]], dtype="int64")
COND = A > 0

a = fluid.data("a", [2, 3, 4], "float32")
b = fluid.data("b", [2, 3, 4], "float32")
v4 = fluid.data("v4", [4], "float32")
i1 = fluid.data("i1", [2, 3, 4], "int64")
i2 = fluid.data("i2", [2, 3, 4], "int64")
img = fluid.data("img", [None, 3, 7, 7], "float32")
p = fluid.data("p", [6, 4], "float32")
lab = fluid.data("lab", [6, 1], "int64")
ids = fluid.data("ids", [4, 1], "int64")
cond = fluid.data("cond", [2, 3, 4], "bool")
feed = {"a": A, "b": B, "v4": V4, "i1": I1, "i2": I2, "img": IMG, "p": P, "lab": LAB, "ids": IDS, "cond": COND}


def init(w):
    return fluid.ParamAttr(initializer=fluid.initializer.NumpyArrayInitializer(w))


outs = {}  # key -> (variable, compare values?)


def add(key, var, values=True):
    outs[key] = (var, values)


add("elementwise_add", L.elementwise_add(a, b))
add("elementwise_add_axis", L.elementwise_add(a, v4, axis=2))
add("elementwise_sub", L.elementwise_sub(a, b))
add("elementwise_mul", L.elementwise_mul(a, b, act="relu"))
add("elementwise_div", L.elementwise_div(a, b))
add("elementwise_max", L.elementwise_max(a, b))
add("elementwise_min", L.elementwise_min(a, b))
add("elementwise_pow", L.elementwise_pow(b, a))
add("elementwise_mod_f", L.elementwise_mod(a, b))
add("elementwise_mod_i", L.elementwise_mod(i1 - 5, i2))
add("elementwise_floordiv_i", L.elementwise_floordiv(i1, i2))
add("elementwise_div_i", L.elementwise_div(i1, i2))
add("patch_ops", ((a + 1.0) * 2 - b / 2.0 + (1.0 - a)) ** 2.0)
add("patch_rdiv", 3.0 / b)
add("patch_cmp", a < b)
add("patch_neg_astype", (-a).astype("int32"))
add("scale", L.scale(a, scale=2.5, bias=-1.0, bias_after_scale=False))
add("sums", L.sums([a, b, a]))
add("mean", L.mean(a))
add("reduce_sum", L.reduce_sum(a, dim=[0, 2]))
add("reduce_mean", L.reduce_mean(a, dim=1, keep_dim=True))
add("reduce_max", L.reduce_max(a))
add("reduce_min", L.reduce_min(a, dim=-1))
add("reduce_prod", L.reduce_prod(b, dim=[1]))
add("matmul", L.matmul(a, b, transpose_y=True, alpha=0.5))
add("matmul_vec", L.matmul(a, v4))
add("mul", L.mul(a, fluid.layers.assign(W_FC), x_num_col_dims=2))
add("fc", L.fc(a, 5, num_flatten_dims=2, param_attr=init(W_FC), act="tanh"))
for act in [
    "relu",
    "sigmoid",
    "tanh",
    "exp",
    "abs",
    "square",
    "softsign",
    "logsigmoid",
    "softplus",
    "sin",
    "cos",
    "floor",
    "ceil",
    "round",
]:
    add(act, getattr(L, act)(a))
for act in ["sqrt", "rsqrt", "log", "reciprocal"]:
    add(act, getattr(L, act)(b))
add("softmax", L.softmax(a, axis=1))
add("log_softmax", L.log_softmax(a))
add("gelu", L.gelu(a))
add("leaky_relu", L.leaky_relu(a, 0.1))
add("elu", L.elu(a, 0.5))
add("relu6", L.relu6(a * 4.0))
add("swish", L.swish(a, 2.0))
add("hard_sigmoid", L.hard_sigmoid(a))
add("hard_swish", L.hard_swish(a * 3.0))
add("pow", L.pow(b, 1.5))
add("clip", L.clip(a, -0.5, 0.7))
add("l2_normalize", L.l2_normalize(a, axis=-1))
add("square_error_cost", L.square_error_cost(a, b))
add("cross_entropy", L.cross_entropy(p, lab))
add("cross_entropy_soft", L.cross_entropy(p, L.assign(P[::-1].copy()), soft_label=True))
add("softmax_with_cross_entropy", L.softmax_with_cross_entropy(p * 3.0, lab))
add("sigmoid_cross_entropy_with_logits", L.sigmoid_cross_entropy_with_logits(a, L.cast(a > 0, "float32")))
add("accuracy", L.accuracy(p, lab, k=2))
add("argmax", L.argmax(a, axis=1))
add("argmin", L.argmin(a, axis=-1))
srt, srt_idx = L.argsort(a, axis=1, descending=True)
add("argsort", srt)
add("argsort_idx", srt_idx)
tk, tk_idx = L.topk(a, 2)
add("topk", tk)
add("topk_idx", tk_idx)
add("one_hot", L.one_hot(ids, 10))
add("fluid_one_hot", fluid.one_hot(ids, 10))
add("embedding", L.embedding(ids, [10, 3], padding_idx=4, param_attr=init(W_EMB)))
add("fluid_embedding", fluid.embedding(ids, [10, 3], padding_idx=-1, param_attr=init(W_EMB)))
add("less_than", L.less_than(a, b))
add("less_equal", L.less_equal(a, b))
add("greater_than", L.greater_than(a, b))
add("greater_equal", L.greater_equal(i1, i2))
add("equal", L.equal(i1, i2))
add("not_equal", L.not_equal(i1, i2))
add("logical_and", L.logical_and(cond, a < b))
add("logical_or", L.logical_or(cond, a < b))
add("logical_xor", L.logical_xor(cond, a < b))
add("logical_not", L.logical_not(cond))
add("cast", L.cast(a, "int64"))
add("shape", L.shape(img))
add("slice", L.slice(a, axes=[1, 2], starts=[1, -3], ends=[10000, -1]))
add("slice_tensor", L.slice(a, axes=[2], starts=[L.fill_constant([1], "int32", 1)], ends=[3]))
add("crop_tensor", L.crop_tensor(a, shape=[2, 2, -1], offsets=[0, 1, 1]))
add("crop_tensor_var", L.crop_tensor(a, shape=L.assign(np.array([1, 2, 2], "int32"))))
add("reshape", L.reshape(a, [0, -1, 2]))
add("transpose", L.transpose(a, [2, 0, 1]))
add("concat", L.concat([a, b], axis=1))
s0, s1, s2 = L.split(a, [1, -1, 2], dim=2)
add("split_0", s0)
add("split_1", s1)
add("split_2", s2)
add("squeeze", L.squeeze(L.reshape(a, [2, 1, 12]), [1]))
add("unsqueeze", L.unsqueeze(a, [0, -1]))
add("stack", L.stack([a, b], axis=1))
add("expand", L.expand(a, [1, 2, 3]))
add("gather", L.gather(a, L.assign(np.array([1, 0, 1], "int32"))))
add("scatter", L.scatter(L.reshape(a, [6, 4]), L.assign(np.array([4, 1], "int64")), L.assign(P[:2].copy())))
add("fill_constant", L.fill_constant([2, 2], "int64", 3.7))
add("assign", L.assign(a))
add("zeros", L.zeros([3], "float32"))
add("ones", L.ones([2, 1], "int64"))
add("zeros_like", L.zeros_like(a))
add("ones_like", L.ones_like(i1))
add("range", L.range(1, 10, 2, "int64"))
add("linspace", L.linspace(0, 1, 5, "float32"))
add("flatten", L.flatten(img, axis=2))
add("pad", L.pad(a, [0, 0, 1, 0, 2, 1], pad_value=-1.0))
add("pad2d", L.pad2d(img, [1, 0, 2, 1], mode="reflect"))
add("pad2d_edge", L.pad2d(img, [1, 1, 0, 2], mode="edge"))
add("where", L.where(cond))
add("conv2d", L.conv2d(img, 4, 3, stride=2, padding=1, param_attr=init(W_CONV), bias_attr=False))
add("conv2d_dilated", L.conv2d(img, 4, 3, dilation=2, padding=[1, 2], param_attr=init(W_CONV), act="relu"))
add("depthwise_conv2d", L.conv2d(img, 3, 3, groups=3, use_cudnn=False, param_attr=init(W_DW), bias_attr=False))
add(
    "conv2d_transpose",
    L.conv2d_transpose(img, 2, filter_size=3, stride=2, padding=1, param_attr=init(W_CT), bias_attr=False),
)
add("pool2d_max", L.pool2d(img, 3, "max", 2, 1))
add("pool2d_avg_ceil", L.pool2d(img, 2, "avg", 2, 0, ceil_mode=True))
add("pool2d_avg_inclusive", L.pool2d(img, 3, "avg", 2, 1, exclusive=False))
add("pool2d_global", L.pool2d(img, pool_type="avg", global_pooling=True))
add("batch_norm", L.batch_norm(img))
add("batch_norm_test", L.batch_norm(img, is_test=True))
add("layer_norm", L.layer_norm(a, begin_norm_axis=1))
add("dropout_test", L.dropout(a, 0.3, is_test=True))
add("dropout_test_upscale", L.dropout(a, 0.3, is_test=True, dropout_implementation="upscale_in_train"))
add("uniform_random", L.uniform_random([3, 4], min=-2.0, max=2.0), values=False)
add("gaussian_random", L.gaussian_random([3, 4]), values=False)

exe = fluid.Executor(fluid.CPUPlace())
exe.run(fluid.default_startup_program())
keys = list(outs)
res = exe.run(feed=feed, fetch_list=[outs[k][0] for k in keys])
report = {}
for k, r in zip(keys, res):
    var, values = outs[k]
    r = np.asarray(r)
    report[k] = {
        "name": var.name,
        "build_shape": list(var.shape),
        "build_dtype": str(var.dtype),
        "shape": list(r.shape),
        "dtype": str(r.dtype),
        "values": r.astype("float64").reshape(-1).tolist() if values else None,
    }
json.dump(report, sys.stdout, indent=0, sort_keys=True)
