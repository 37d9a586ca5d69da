"""fluid.contrib.layers' simple ops as fluid 1.8.5 ran them: fused_elemwise_activation over its functor
pairs (with the intermediate output and gradients), partial_concat and partial_sum with start and
length (and gradients), fused_embedding_seq_pool over LoD ids with padding_idx, and shuffle_batch
(its rows a permutation kept in ShuffleIdx; the gradient put back). Prints JSON; run under fluid
1.8.5 (tools/fluid18) it wrote contrib_ops.json."""

import json

import numpy as np
import paddle.fluid as fluid
from _golden import flat
from paddle.fluid.contrib import layers as C

L = fluid.layers
place = fluid.CPUPlace()
results = {}


rng = np.random.RandomState(0)
xv = rng.uniform(-1, 1, (3, 4)).astype("float32")
yv = rng.uniform(-1, 1, (3, 4)).astype("float32")
bv = rng.uniform(-1, 1, (4,)).astype("float32")
fused = {}
# the pairs fluid 1.8.5's CPU kernel ran ("elementwise_add,tanh" and others: "has not been implemented")
for functors in (
    ["elementwise_add", "relu"],
    ["relu", "elementwise_add"],
    ["elementwise_add", "scale"],
    ["scale", "elementwise_add"],
    ["tanh", "elementwise_add"],
    ["elementwise_mul", "scale"],
    ["elementwise_mul", "tanh"],
    ["elementwise_mul", "sigmoid"],
):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [3, 4], "float32")
        y = fluid.data("y", [3, 4], "float32")
        x.stop_gradient = y.stop_gradient = False
        out = C.fused_elemwise_activation(x, y, functors, scale=0.5)
        mid = out.block.ops[-1].output("IntermediateOut")[0]
        fluid.backward.append_backward(L.reduce_sum(out * out))
    got = fluid.Executor(place).run(main, feed={"x": xv, "y": yv}, fetch_list=[out, mid, "x@GRAD", "y@GRAD"])
    fused[",".join(functors)] = [flat(g) for g in got]
main, startup = fluid.Program(), fluid.Program()
with fluid.program_guard(main, startup):
    x = fluid.data("x", [3, 4], "float32")
    b = fluid.data("b", [4], "float32")
    x.stop_gradient = b.stop_gradient = False
    out = C.fused_elemwise_activation(x, b, "elementwise_add,relu", axis=1)
    fluid.backward.append_backward(L.reduce_sum(out * out))
got = fluid.Executor(place).run(main, feed={"x": xv, "b": bv}, fetch_list=[out, "x@GRAD", "b@GRAD"])
fused["broadcast_axis1"] = [flat(g) for g in got]
results["fused_elemwise_activation"] = fused

main, startup = fluid.Program(), fluid.Program()
with fluid.program_guard(main, startup):
    xs = [fluid.data(n, [3, 5], "float32") for n in ("a", "b", "c")]
    for v in xs:
        v.stop_gradient = False
    outs = [C.partial_concat(xs, 1, 2), C.partial_concat(xs, 2), C.partial_sum(xs, 0, 3), C.partial_sum(xs, 1)]
    weights = [L.assign(np.arange(np.prod([3, s]), dtype="float32").reshape(3, s)) for s in (6, 9, 3, 4)]
    fluid.backward.append_backward(L.sum([L.reduce_sum(o * w) for o, w in zip(outs, weights)]))
feed = {n: rng.uniform(-1, 1, (3, 5)).astype("float32") for n in ("a", "b", "c")}
got = fluid.Executor(place).run(main, feed=feed, fetch_list=outs + ["a@GRAD", "b@GRAD", "c@GRAD"])
results["partial"] = [flat(g) for g in got]

main, startup = fluid.Program(), fluid.Program()
with fluid.program_guard(main, startup):
    ids = fluid.data("ids", [None, 1], "int64", lod_level=1)
    pooled = C.fused_embedding_seq_pool(
        ids,
        [6, 3],
        padding_idx=2,
        param_attr=fluid.ParamAttr(
            name="emb",
            initializer=fluid.initializer.NumpyArrayInitializer(np.arange(18, dtype="float32").reshape(6, 3) / 10),
        ),
    )
    fluid.backward.append_backward(L.reduce_sum(pooled * pooled))
exe = fluid.Executor(place)
exe.run(startup)
ids_v = fluid.create_lod_tensor(np.array([[1], [2], [3], [0], [5], [2], [4], [0]], "int64"), [[2, 1, 0, 5]], place)
got = exe.run(main, feed={"ids": ids_v}, fetch_list=[pooled, "emb@GRAD"], return_numpy=False)
results["fused_embedding_seq_pool"] = [flat(g) for g in got]

main, startup = fluid.Program(), fluid.Program()
with fluid.program_guard(main, startup):
    x = fluid.data("x", [None, 2, 3], "float32")
    x.stop_gradient = False
    out = C.shuffle_batch(x, seed=7)
    idx = out.block.ops[-1].output("ShuffleIdx")[0]
    fluid.backward.append_backward(L.reduce_sum(out * L.assign(np.arange(30, dtype="float32").reshape(5, 2, 3))))
exe = fluid.Executor(place)
exe.run(startup)
xsv = np.arange(30, dtype="float32").reshape(5, 2, 3)
o, i, g = exe.run(main, feed={"x": xsv}, fetch_list=[out, idx, "x@GRAD"])
# the draws differ from fluid's; what holds for any draw: row j goes to place ShuffleIdx[j] and the
# gradient of row j is the output gradient at that place
i, rows, grad_rows = np.array(i), np.array(o).reshape(10, 3), np.array(g).reshape(10, 3)
results["shuffle_batch"] = {
    "permutation": sorted(i.tolist()) == list(range(10)),
    "row_j_at_idx_j": bool(np.array_equal(rows[i], xsv.reshape(10, 3))),
    "idx_shape": list(np.shape(i)),
    "grad_row_j_from_idx_j": bool(np.array_equal(grad_rows, np.arange(30, dtype="float32").reshape(10, 3)[i])),
    "out_shape": list(np.shape(o)),
}
print(json.dumps(results, sort_keys=True))
