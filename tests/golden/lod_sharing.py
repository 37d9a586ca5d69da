"""Which outputs keep a LoD: ordinary ops on a LoDTensor (the LoD of each output and of the input's
gradient), DataFeeder with lod_level 1 and 2, and fetching a LoD value as numpy. Prints JSON; run
under fluid 1.8.5 (tools/fluid18) it wrote lod_sharing.json."""

import json

import numpy as np
import paddle.fluid as fluid

L = fluid.layers
C = fluid.initializer.Constant
OPS = {
    "relu": lambda x: L.relu(x),
    "tanh": lambda x: L.tanh(x),
    "fc": lambda x: L.fc(x, 3, param_attr=C(0.1)),
    "scale": lambda x: L.scale(x, 2.0),
    "add": lambda x: L.elementwise_add(x, x),
    "add_to_dense": lambda x: L.elementwise_add(L.assign(np.ones([5, 4], "float32")), x),
    "mul_row": lambda x: L.elementwise_mul(x, L.assign(np.ones([4], "float32"))),
    "softmax": lambda x: L.softmax(x),
    "cast": lambda x: L.cast(x, "float64"),
    "concat_axis1": lambda x: L.concat([x, x], axis=1),
    "concat_axis0": lambda x: L.concat([x, x], axis=0),
    "reshape": lambda x: L.reshape(x, [-1, 2, 2]),
    "reduce_sum_dim1": lambda x: L.reduce_sum(x, dim=1),
    "dropout": lambda x: L.dropout(x, 0.5),
    "matmul": lambda x: L.matmul(x, L.assign(np.ones([4, 2], "float32"))),
    "mean": lambda x: L.mean(x),
    "sums": lambda x: L.sums([x, x]),
    "assign": lambda x: L.assign(x),
    "layer_norm": lambda x: L.layer_norm(x),
    "unsqueeze": lambda x: L.unsqueeze(x, [1]),
    "slice": lambda x: L.slice(x, axes=[1], starts=[0], ends=[2]),
    "split": lambda x: L.split(x, 2, dim=1)[0],
    "square": lambda x: L.square(x),
    "clip": lambda x: L.clip(x, -1.0, 1.0),
    "transpose": lambda x: L.transpose(x, [1, 0]),
    "gather": lambda x: L.gather(x, L.assign(np.array([0, 1], "int64"))),
    "argmax": lambda x: L.argmax(x, axis=1),
    "topk": lambda x: L.topk(x, 2)[0],
    "batch_norm": lambda x: L.batch_norm(x),
    "zeros_like": lambda x: L.zeros_like(x),
    "stack": lambda x: L.stack([x, x], axis=1),
    "expand": lambda x: L.expand(x, [1, 2]),
    "pow": lambda x: L.pow(x, 2.0),
    "sequence_conv": lambda x: L.sequence_conv(x, 2, param_attr=C(0.1)),
    "sequence_pool": lambda x: L.sequence_pool(x, "sum"),
    "sequence_reverse": lambda x: L.sequence_reverse(x),
}
results = {}
xv = np.linspace(-1, 1, 20).reshape(5, 4).astype("float32")
for name, build in OPS.items():
    main, start = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, start):
        x = fluid.data(name="x", shape=[None, 4], dtype="float32", lod_level=1)
        x.stop_gradient = False
        out = build(x)
        fetch = [out]
        if out.dtype == x.dtype and name not in ("gather", "argmax", "topk"):
            fluid.backward.append_backward(L.reduce_sum(out))
            if main.global_block().has_var("x@GRAD"):
                fetch.append("x@GRAD")
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(start)
    rs = exe.run(main, feed={"x": fluid.create_lod_tensor(xv, [[2, 3]], fluid.CPUPlace())}, fetch_list=fetch,
                 return_numpy=False)  # fmt: skip
    results[name] = [[r.lod(), list(np.array(r).shape)] for r in rs]

main, start = fluid.Program(), fluid.Program()
with fluid.program_guard(main, start):
    ids = fluid.layers.data(name="ids", shape=[1], dtype="int64", lod_level=1)
    words = fluid.layers.data(name="words", shape=[1], dtype="int64", lod_level=2)
    rows = fluid.data(name="rows", shape=[None, 3], dtype="float32", lod_level=1)
    label = fluid.layers.data(name="label", shape=[1], dtype="int64")
    emb = L.embedding(ids, size=[10, 3], param_attr=C(0.5))
    pooled = L.sequence_pool(emb, "sum")
    feeder = fluid.DataFeeder(feed_list=[ids, words, rows, label], place=fluid.CPUPlace())
feed = feeder.feed([([1, 2, 3], [[1], [2, 3]], [[1, 2, 3], [4, 5, 6]], 0), ([4, 5], [[4, 5, 6]], [[7, 8, 9]], 1)])
results["feeder"] = {
    k: [v.lod() if hasattr(v, "lod") else [], np.array(v).reshape(-1).tolist()] for k, v in sorted(feed.items())
}
exe = fluid.Executor(fluid.CPUPlace())
exe.run(start)
r = exe.run(main, feed=feed, fetch_list=[emb, pooled], return_numpy=False)
results["feeder_run"] = [[t.lod(), np.array(t).reshape(-1).tolist()] for t in r]
try:
    exe.run(main, feed=feed, fetch_list=[emb])
    results["fetch_numpy"] = "no error"
except Exception as e:  # noqa: BLE001
    results["fetch_numpy"] = type(e).__name__ + ": " + " ".join(str(e).split())
print(json.dumps(results, sort_keys=True))
