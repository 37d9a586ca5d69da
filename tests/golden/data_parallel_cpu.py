# Golden: CompiledProgram.with_data_parallel on CPU_NUM=2 places in one process: the batch split
# across the devices (sequences of a LoD feed, uneven batches, one dict per device), fetched values
# concatenated per device (parameters, the learning rate and batch_norm's moving mean, which each
# device keeps its own of), return_merged=False, gradients averaged over the devices, an inference
# program on fewer devices than places, and what fluid refused.
import json
import os

os.environ["CPU_NUM"] = "2"

import numpy as np  # noqa: E402
import paddle.fluid as fluid  # noqa: E402
from _golden import errors_of  # noqa: E402


def arr(value):
    a = np.array(value)
    return [list(a.shape)] + np.round(a.reshape(-1).astype("float64"), 5).tolist()


main, startup = fluid.Program(), fluid.Program()
with fluid.program_guard(main, startup):
    x = fluid.data("x", [None, 2], "float32")
    w_attr = fluid.ParamAttr(name="w", initializer=fluid.initializer.Constant(0.5))
    s = fluid.layers.fc(x, 1, param_attr=w_attr, bias_attr=False)
    bn = fluid.layers.batch_norm(
        fluid.layers.reshape(s, [-1, 1, 1, 1]), moving_mean_name="mm", moving_variance_name="mv"
    )
    loss = fluid.layers.mean(bn * 0.5 + s)
    test = main.clone(for_test=True)
    lr = fluid.layers.exponential_decay(0.05, 1, 0.5)
    fluid.optimizer.SGD(lr).minimize(loss)
exe = fluid.Executor(fluid.CPUPlace())
exe.run(startup)
train = fluid.CompiledProgram(main).with_data_parallel(loss_name=loss.name)
X = np.array([[1, 2], [3, 4], [5, 7], [6, 9], [2, 1]], "float32")
out = {}
for step in range(2):
    got = exe.run(train, feed={"x": X[:4]}, fetch_list=[loss, "w", lr, "mm", s, "w@GRAD"])
    out["step%d" % step] = [arr(v) for v in got]
out["scope"] = [arr(fluid.global_scope().find_var(n).get_tensor()) for n in ("w", "mm", "mv")]
got = exe.run(train, feed={"x": X}, fetch_list=[loss, s], return_merged=False)  # 5 rows: 3 and 2
out["unmerged"] = [[arr(v) for v in per_device] for per_device in got]
t = exe.run(train, feed={"x": X[:4]}, fetch_list=[s], return_numpy=False)[0]
out["lodtensor"] = [type(t).__name__, list(np.array(t).shape), t.lod()]
got = exe.run(train, feed=[{"x": X[:1]}, {"x": X[1:4]}], fetch_list=[loss, "w"])  # one row on device 0
out["list_feed"] = [arr(v) for v in got]
out["after_list_feed"] = [arr(fluid.global_scope().find_var(n).get_tensor()) for n in ("w", "mm")]
inference = fluid.CompiledProgram(test).with_data_parallel(share_vars_from=train)
out["inference"] = [
    arr(exe.run(inference, feed={"x": X[:n]}, fetch_list=[s], return_merged=False)[0][-1]) for n in (1, 3)
]
out["inference_merged"] = arr(exe.run(inference, feed={"x": X[:3]}, fetch_list=[s])[0])

seq_main, seq_startup = fluid.Program(), fluid.Program()
with fluid.program_guard(seq_main, seq_startup):
    words = fluid.data("words", [None, 1], "float32", lod_level=1)
    pooled = fluid.layers.sequence_pool(words, "sum")
    scaled = fluid.layers.scale(words, 2.0)
seq = fluid.CompiledProgram(seq_main).with_data_parallel()
lod_feed = fluid.create_lod_tensor(np.arange(6).reshape(6, 1).astype("float32"), [[1, 3, 2]], fluid.CPUPlace())
got = exe.run(seq, feed={"words": lod_feed}, fetch_list=[pooled, scaled], return_numpy=False)
out["lod"] = [[arr(v), v.lod()] for v in got]
got = exe.run(seq, feed={"words": lod_feed}, fetch_list=[pooled, scaled], return_numpy=False, return_merged=False)
out["lod_unmerged"] = [[[arr(v), v.lod()] for v in per_device] for per_device in got]


def no_loss_name():
    fluid.CompiledProgram(main).with_data_parallel()


out["refused"] = errors_of(
    [
        lambda: exe.run(train, feed={"x": X[:1]}, fetch_list=[loss]),
        lambda: exe.run(train, feed=[{"x": X[:1]}, 3], fetch_list=[loss]),
        lambda: exe.run(train, feed=[{"x": X[:2]}], fetch_list=[loss]),
        no_loss_name,
    ]
)
out["refused"] = [
    e if e is None else [e[0], e[1].split("Error Message Summary:")[-1].strip()[:400]] for e in out["refused"]
]
print(json.dumps(out))
