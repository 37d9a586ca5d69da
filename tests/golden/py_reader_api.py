# The fluid 1.x reader API: layers.py_reader (shapes, dtypes, double buffer) + read_file fed by
# decorate_paddle_reader(paddle.batch(...)), trained two epochs with start / EOFException / reset;
# create_py_reader_by_data + decorate_tensor_provider.
import json

import numpy as np
import paddle
import paddle.fluid as fluid
from _golden import set_params

out = {}


def reader():
    rng = np.random.RandomState(0)
    for i in range(10):
        yield rng.rand(4).astype("float32"), np.array([i % 3], "int64")


main, startup = fluid.Program(), fluid.Program()
with fluid.program_guard(main, startup):
    py_reader = fluid.layers.py_reader(
        capacity=8,
        shapes=[(-1, 4), (-1, 1)],
        dtypes=["float32", "int64"],
        lod_levels=[0, 0],
        name="train_reader",
        use_double_buffer=True,
    )
    x, y = fluid.layers.read_file(py_reader)
    pred = fluid.layers.fc(x, 3, act="softmax")
    loss = fluid.layers.mean(fluid.layers.cross_entropy(pred, y))
    fluid.optimizer.SGD(0.5).minimize(loss)
out["shapes"] = [list(x.shape), list(y.shape), x.dtype == fluid.core.VarDesc.VarType.FP32]
py_reader.decorate_paddle_reader(paddle.batch(reader, batch_size=3))
exe = fluid.Executor(fluid.CPUPlace())
exe.run(startup)
set_params(main, fluid.global_scope())
losses = []
for _epoch in range(2):
    py_reader.start()
    try:
        while True:
            (l,) = exe.run(main, fetch_list=[loss])
            losses.append(round(float(np.array(l).reshape(-1)[0]), 5))
    except fluid.core.EOFException:
        py_reader.reset()
out["losses"] = losses

# create_py_reader_by_data + decorate_tensor_provider
main2, startup2 = fluid.Program(), fluid.Program()
with fluid.program_guard(main2, startup2):
    a = fluid.data("a", [None, 2], "float32")
    b = fluid.data("b", [None, 1], "int64")
    r2 = fluid.layers.create_py_reader_by_data(capacity=4, feed_list=[a, b])
    a2, b2 = fluid.layers.read_file(r2)
    s = fluid.layers.reduce_sum(a2) + fluid.layers.cast(fluid.layers.reduce_sum(b2), "float32")


def tensors():
    for i in range(3):
        yield [np.full((2, 2), i, "float32"), np.full((2, 1), i, "int64")]


r2.decorate_tensor_provider(tensors)
exe.run(startup2)
r2.start()
vals = []
try:
    while True:
        vals.append(float(np.array(exe.run(main2, fetch_list=[s])[0]).reshape(-1)[0]))
except fluid.core.EOFException:
    r2.reset()
out["tensor_provider"] = vals
print(json.dumps(out, sort_keys=True))
