# Golden: DataLoader.from_generator feeding a with_data_parallel program on CPU_NUM=2 places: iterable
# (places=cpu_places(): one batch per place each step, a short tail dropped or kept) and not iterable
# (the read op gives each place its own batch), two passes each; the map-style DataLoader with places.
import json
import os

os.environ["CPU_NUM"] = "2"

import numpy as np  # noqa: E402
import paddle.fluid as fluid  # noqa: E402


def reader():
    for i in range(10):
        yield np.array([i, i + 1], "float32"), np.array([2.0 * i], "float32")


def build(iterable):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [None, 2], "float32")
        y = fluid.data("y", [None, 1], "float32")
        loader = fluid.io.DataLoader.from_generator(feed_list=[x, y], capacity=4, iterable=iterable)
        w = fluid.ParamAttr(initializer=fluid.initializer.Constant(0.5))
        pred = fluid.layers.fc(x, 1, param_attr=w, bias_attr=False)
        loss = fluid.layers.mean(fluid.layers.square_error_cost(pred, y))
        fluid.optimizer.SGD(0.01).minimize(loss)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    return loader, exe, fluid.CompiledProgram(main).with_data_parallel(loss_name=loss.name), loss, pred


def row(values):
    return [np.round(np.array(v), 5).reshape(-1).tolist() for v in values]


out = {}
loader, exe, train, loss, pred = build(True)
loader.set_sample_generator(reader, batch_size=2, drop_last=True, places=fluid.cpu_places())
steps = []
for _epoch in range(2):
    for data in loader():
        steps.append([len(data), [sorted(d) for d in data], [list(np.array(d["x"]).shape) for d in data]])
        steps.append(row(exe.run(train, feed=data, fetch_list=[loss, pred])))
out["iterable"] = steps
loader, exe, train, loss, pred = build(True)
loader.set_sample_generator(reader, batch_size=4, drop_last=False, places=fluid.cpu_places())
out["tail"] = [[len(data), [list(np.array(d["x"]).shape) for d in data]] for data in loader()]

loader, exe, train, loss, pred = build(False)
loader.set_sample_generator(reader, batch_size=2, drop_last=True)
steps = []
for _epoch in range(2):
    loader.start()
    try:
        while True:
            steps.append(row(exe.run(train, fetch_list=[loss, pred])))
    except fluid.core.EOFException:
        loader.reset()
out["not_iterable"] = steps


class Pairs(fluid.io.Dataset):
    def __len__(self):
        return 9

    def __getitem__(self, i):
        return np.array([i, i + 1], "float32"), np.array([2.0 * i], "float32")


loader, exe, train, loss, pred = build(True)
steps = []
for drop in (True, False):  # 4 or 5 batches of 2 on 2 places: 2 steps either way
    feed_list = [train._program.global_block().var(n) for n in ("x", "y")]
    mapped = fluid.io.DataLoader(Pairs(), feed_list=feed_list, places=fluid.cpu_places(), batch_size=2, drop_last=drop)
    for data in mapped():
        steps.append([len(data), [list(np.array(d["x"]).shape) for d in data]])
        steps.append(row(exe.run(train, feed=data, fetch_list=[loss])))
out["map_style"] = steps
print(json.dumps(out))
