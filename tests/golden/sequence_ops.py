"""LoD sequence ops on a LoDTensor with an empty sequence and on a 2-level LoD: each output's LoD,
shape and values, and the input's gradient (of mean(out * out)) with its LoD. Prints JSON; run
under fluid 1.8.5 (tools/fluid18) it wrote sequence_ops.json."""

import json

import numpy as np
import paddle.fluid as fluid

L = fluid.layers
NI = fluid.initializer.NumpyArrayInitializer
results = {}


def error_text(e):
    text = str(e)
    if "Error Message Summary" in text:
        text = text[text.index("Error Message Summary") :].split("\n")[2]
    return type(e).__name__ + ": " + text.strip().split("\n")[0]


def run(name, build, feeds, grad=True):
    main, start = fluid.Program(), fluid.Program()
    try:
        with fluid.program_guard(main, start):
            x = fluid.data(name="x", shape=[None, 4], dtype="float32", lod_level=1)
            x.stop_gradient = False
            outs = build(x)
            fetch = list(outs)
            if grad:
                loss = L.mean(L.cast(outs[0], "float32") * L.cast(outs[0], "float32"))
                fluid.backward.append_backward(loss)
                fetch.append(main.global_block().var("x@GRAD"))
        exe = fluid.Executor(fluid.CPUPlace())
        exe.run(start)
        rs = exe.run(main, feed=feeds, fetch_list=fetch, return_numpy=False)
        results[name] = [
            [r.lod(), list(np.array(r).shape), np.array(r).astype("float64").reshape(-1).tolist()] for r in rs
        ]
    except Exception as e:  # noqa: BLE001
        results[name] = error_text(e)


def lt(a, lens):
    return fluid.create_lod_tensor(a, lens, fluid.CPUPlace())


xv = (np.arange(28).reshape(7, 4) % 5 - 2).astype("float32") / 3
F = {"x": lt(xv, [[2, 0, 4, 1]])}
F2 = {"x": lt(xv, [[2, 1], [1, 2, 4]])}
for pt in ["sum", "average", "sqrt", "max", "last", "first"]:
    run("pool_" + pt, lambda x: [L.sequence_pool(x, pt)], F)
    run("pool2_" + pt, lambda x: [L.sequence_pool(x, pt)], F2)
run("pool_pad", lambda x: [L.sequence_pool(x, "sum", pad_value=1.5)], F)
run("first_step", lambda x: [L.sequence_first_step(x)], F)
run("last_step", lambda x: [L.sequence_last_step(x)], F)
run("softmax", lambda x: [L.sequence_softmax(L.slice(x, axes=[1], starts=[0], ends=[1]))], F)
run("softmax_1d", lambda x: [L.sequence_softmax(L.reshape(L.slice(x, axes=[1], starts=[0], ends=[1]), [-1]))], F)
w3 = np.linspace(-1, 1, 24).reshape(12, 2).astype("float32")
run("conv", lambda x: [L.sequence_conv(x, 2, 3, param_attr=NI(w3), bias_attr=fluid.initializer.Constant(0.1))], F)
w5 = np.linspace(-1, 1, 60).reshape(20, 3).astype("float32")
run("conv5", lambda x: [L.sequence_conv(x, 3, 5, padding_start=-1, param_attr=NI(w5), bias_attr=False, act="tanh")], F)
w2 = np.linspace(-1, 1, 16).reshape(8, 2).astype("float32")
run("conv2", lambda x: [L.sequence_conv(x, 2, 2, param_attr=NI(w2))], F)
run("conv_pool", lambda x: [fluid.nets.sequence_conv_pool(x, 2, 3, param_attr=NI(w3), pool_type="average")], F)
run("reverse", lambda x: [L.sequence_reverse(x)], F)
run("reverse_2_levels", lambda x: [L.sequence_reverse(x)], F2, grad=False)
run("pad", lambda x: list(L.sequence_pad(x, L.assign(np.array([9.0], "float32")))), F)
run("pad_maxlen", lambda x: list(L.sequence_pad(x, L.assign(np.array([0.0], "float32")), maxlen=5)), F)
run(
    "unpad",
    lambda x: [
        L.sequence_unpad(
            L.reshape(L.slice(x, axes=[0], starts=[0], ends=[6]), [2, 3, 4]), L.assign(np.array([2, 3], "int64"))
        )
    ],
    F,
    grad=False,
)
run("reshape", lambda x: [L.sequence_reshape(x, 2)], {"x": lt(xv[:6], [[2, 0, 3, 1]])})
run("reshape_8", lambda x: [L.sequence_reshape(x, 8)], {"x": lt(xv[:6], [[2, 0, 2, 2]])})
run("reshape_bad", lambda x: [L.sequence_reshape(x, 3)], {"x": lt(xv, [[3, 4]])}, grad=False)
run("concat", lambda x: [L.sequence_concat([x, L.scale(x, 2.0)])], F)
run(
    "enumerate",
    lambda x: [L.sequence_enumerate(L.cast(L.slice(x, axes=[1], starts=[0], ends=[1]) * 3, "int64"), 3, pad_value=-1)],
    F,
    grad=False,
)
run(
    "slice",
    lambda x: [
        L.sequence_slice(
            x, L.assign(np.array([[1], [0], [1], [0]], "int64")), L.assign(np.array([[1], [0], [2], [1]], "int64"))
        )
    ],
    F,
)
run("expand_as", lambda x: [L.sequence_expand_as(L.sequence_pool(x, "sum"), x)], F)


def expand(x):
    y = fluid.data(name="y", shape=[None, 1], dtype="float32", lod_level=1)
    return [L.sequence_expand(L.sequence_pool(x, "sum"), y)]


run("expand", expand, {"x": F["x"], "y": lt(np.zeros((6, 1), "float32"), [[1, 2, 3, 0]])})


def expand_lod(x):
    y = fluid.data(name="y", shape=[None, 1], dtype="float32", lod_level=2)
    return [L.sequence_expand(x, y, ref_level=0)]


run("expand_x_lod", expand_lod, {"x": lt(xv[:5], [[2, 3]]), "y": lt(np.zeros((5, 1), "float32"), [[2, 1], [1, 2, 2]])})
run(
    "expand_rows",
    lambda x: [L.sequence_expand(L.slice(x, axes=[0], starts=[0], ends=[4]), x)],
    {"x": lt(xv[:7], [[2, 0, 4, 1]])},
    grad=False,
)
run(
    "fc_pool",
    lambda x: [L.sequence_pool(L.fc(x, 3, param_attr=fluid.initializer.Constant(0.2), bias_attr=False), "max")],
    F,
)
run("softmax_wide", lambda x: [L.sequence_softmax(x)], F, grad=False)
run("pool_no_lod", lambda x: [L.sequence_pool(x, "sum")], {"x": xv}, grad=False)
run("conv_no_lod", lambda x: [L.sequence_conv(x, 2, 3)], {"x": xv}, grad=False)


def scatter(x):
    base = fluid.data(name="base", shape=[None, 5], dtype="float32")
    base.stop_gradient = False
    idx = fluid.data(name="idx", shape=[None, 1], dtype="int64", lod_level=1)
    return [L.sequence_scatter(base, idx, L.slice(x, axes=[1], starts=[0], ends=[1]))]


def scatter_feed():
    ids = np.array([[0], [2], [2], [1], [4], [3], [0]], "int64")
    return {
        "x": lt(xv, [[2, 4, 1]]),
        "idx": lt(ids, [[2, 4, 1]]),
        "base": np.arange(15).reshape(3, 5).astype("float32"),
    }


run("scatter", scatter, scatter_feed())
run("lod_reset_target", lambda x: [L.lod_reset(x, target_lod=[0, 1, 3, 7])], F)
run("lod_reset_no_lod", lambda x: [L.lod_reset(x, target_lod=[0, 5, 7])], {"x": xv})


def reset_by(x):
    y = fluid.data(name="y", shape=[None, 1], dtype="float32", lod_level=1)
    return [L.sequence_pool(L.lod_reset(x, y), "max")]


run("lod_reset_y_lod", reset_by, {"x": F["x"], "y": lt(np.zeros((7, 1), "float32"), [[3, 4]])})


def reset_by_values(x):
    y = fluid.data(name="y", shape=[None], dtype="int32")
    return [L.lod_reset(x, y)]


run("lod_reset_y_values", reset_by_values, {"x": F["x"], "y": np.array([0, 2, 3, 7], "int32")})
run("lod_append", lambda x: [L.sequence_pool(L.lod_append(x, [0, 1, 2, 3, 4, 5, 6, 7]), "first")], F)
run("lod_reset_last_not_rows", lambda x: [L.lod_reset(x, target_lod=[0, 1, 5])], F, grad=False)
print(json.dumps(results, sort_keys=True))
