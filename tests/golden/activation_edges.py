# Golden script: activations and losses at their edges (0, thresholds, +-1000), values and gradients:
# fluid's grad kernels compare strictly (relu6, brelu, hard_sigmoid, hard_swish, soft_relu give 0 at an
# edge), floor / ceil / round / sign have zero gradients, sigmoid_cross_entropy_with_logits' gradient at
# 0 is sigmoid(0) - label, cos_sim keeps norms of at least 1e-4, log_loss wants one column.
import json

import numpy as np
import paddle.fluid as fluid
from _golden import errors_of

L = fluid.layers
PTS = [-1000, -50, -40, -24, -6, -3, -2.5, -1, -0.5, -1e-3, 0, 1e-3, 0.5, 1, 2.5, 3, 6, 20, 24, 40, 50, 1000]
NAMES = [
    "relu", "relu6", "leaky_relu", "elu", "selu", "brelu", "soft_relu", "softplus", "softsign", "sigmoid",
    "logsigmoid", "hard_sigmoid", "hard_swish", "swish", "tanh", "tanh_shrink", "stanh", "hard_shrink",
    "softshrink", "thresholded_relu", "gelu", "erf", "exp", "log", "sqrt", "rsqrt", "square", "abs",
    "reciprocal", "sin", "cos", "acos", "asin", "atan", "ceil", "floor", "round", "sign", "mish", "log1p",
]  # fmt: skip
exe = fluid.Executor(fluid.CPUPlace())
out = {}


def run(name, build, feed):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        fetch = build()
    exe.run(startup)
    values = exe.run(main, feed=feed, fetch_list=fetch)
    out[name] = [np.asarray(v).astype("float64").reshape(-1).tolist() for v in values]


def activation(name):
    x = fluid.data("x", [1, len(PTS)], "float32")
    x.stop_gradient = False
    if name == "sigmoid_ce":
        o = L.sigmoid_cross_entropy_with_logits(x, L.fill_constant([1, len(PTS)], "float32", 1.0))
    elif name == "prelu":
        o = L.prelu(x, "all")
    elif name == "pow":
        o = L.pow(x, 2.5)
    else:
        o = getattr(L, name)(x)
    w = L.assign(np.arange(1, len(PTS) + 1, dtype="float32").reshape(1, -1))
    return [o] + fluid.backward.gradients([L.reduce_sum(o * w)], [x])


for n in NAMES + ["sigmoid_ce", "prelu", "pow"]:
    run(n, lambda n=n: activation(n), {"x": np.array([PTS], "float32")})


def zero_grads():
    a = fluid.data("a", [3], "float32")
    a.stop_gradient = False
    ops = ("sign", "floor", "ceil", "round")
    return [fluid.backward.gradients([L.reduce_sum(getattr(L, n)(a))], [a])[0] for n in ops]


run("zero grads", zero_grads, {"a": np.array([-1.5, 0.25, 2.75], "float32")})


def cos_sim(y_rows):
    def build():
        x = fluid.data("x", [4, 3], "float32")
        y = fluid.data("y", [y_rows, 3], "float32")
        x.stop_gradient = y.stop_gradient = False
        o = L.cos_sim(x, y)
        return [o] + fluid.backward.gradients([L.reduce_sum(o)], [x, y])

    return build


X = np.array([[1e-5, 0, 0], [1e-3, 0, 0], [0, 0, 0], [3, 4, 0]], "float32")
run("cos_sim", cos_sim(4), {"x": X, "y": np.array([[1, 2, 3], [1, 2, 3], [1e-6, 0, 0], [3, 4, 0]], "float32")})
run("cos_sim one zero row", cos_sim(1), {"x": X, "y": np.zeros((1, 3), "float32")})


def sigmoid_ce_normalized():
    x = fluid.data("x", [2, 3], "float32")
    z = fluid.data("z", [2, 3], "float32")
    x.stop_gradient = False
    o = L.sigmoid_cross_entropy_with_logits(x, z, ignore_index=-1, normalize=True)
    return [o] + fluid.backward.gradients([L.reduce_sum(o)], [x])


run(
    "sigmoid_ce normalize",
    sigmoid_ce_normalized,
    {
        "x": np.array([[0.0, 2.0, -3.0], [0.0, 50.0, -50.0]], "float32"),
        "z": np.array([[1.0, -1.0, 0.0], [0.0, 1.0, -1.0]], "float32"),
    },
)


A = np.array([[0.0], [1e-8], [0.5], [1.0], [-3.0], [60.0]], "float32")
B = np.array([[0.0], [1.0], [0.5], [0.0], [2.0], [-60.0]], "float32")
P = np.array([[0.0, 1.0], [0.5, 0.5], [1e-9, 1 - 1e-9], [0.3, 0.7], [1.0, 0.0], [0.9, 0.1]], "float32")
PAIR = {
    "rank_loss": lambda a, b, p: L.rank_loss(L.fill_constant([6, 1], "float32", 1.0), a, b),
    "teacher_student": lambda a, b, p: L.teacher_student_sigmoid_loss(a, L.fill_constant([6, 1], "float32", 1.0)),
    "reduce_max tie": lambda a, b, p: L.reduce_max(L.concat([a, a], axis=1), dim=1),
    "reduce_min tie": lambda a, b, p: L.reduce_min(L.concat([b, b], axis=1), dim=1),
    "reduce_max all": lambda a, b, p: L.reduce_max(L.concat([a, a, b], axis=1)),
    "elementwise_min tie": lambda a, b, p: L.elementwise_min(a, b),
    "elementwise_max tie": lambda a, b, p: L.elementwise_max(b, a),
    "clip edges": lambda a, b, p: L.clip(a, 0.0, 1.0),
    "maxout tie": lambda a, b, p: L.maxout(L.reshape(L.concat([p, p], axis=1), [6, 4, 1, 1]), groups=2),
    "margin_rank_loss": lambda a, b, p: L.margin_rank_loss(L.fill_constant([6, 1], "float32", 1.0), a, b, 0.1),
    "huber": lambda a, b, p: L.huber_loss(a, b, 1.0),
    "smooth_l1": lambda a, b, p: L.smooth_l1(a, b),
}


def pair(name):
    a, b = fluid.data("a", [6, 1], "float32"), fluid.data("b", [6, 1], "float32")
    p = fluid.data("p", [6, 2], "float32")
    a.stop_gradient = b.stop_gradient = p.stop_gradient = False
    o = PAIR[name](a, b, p)
    weighted = o
    if name == "maxout tie":  # weights tell which output's gradient reached an input
        weighted = o * L.assign(np.arange(1, 13, dtype="float32").reshape([6, 2, 1, 1]))
    grads = fluid.backward.gradients([L.reduce_sum(weighted)], [a, b, p])
    return [o] + [g for g in grads if g is not None]


for n in PAIR:
    run(n, lambda n=n: pair(n), {"a": A, "b": B, "p": P})


def log_loss_wide():
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        p = fluid.data("p", [1, 8], "float32")
        o = L.log_loss(p, fluid.data("l", [1, 8], "float32"))
    feed = {"p": np.full((1, 8), 0.5, "float32"), "l": np.ones((1, 8), "float32")}
    exe.run(main, feed=feed, fetch_list=[o])


out["log_loss wide"] = [
    [line.strip() for line in message.splitlines() if "Input(Predicted)" in line][:1]
    for _, message in errors_of([log_loss_wide])
]
print(json.dumps(out))
