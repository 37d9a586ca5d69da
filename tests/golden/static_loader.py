# Golden script: static-mode DataLoader.from_generator: not iterable (start / EOFException / reset over
# two epochs, a last short batch kept), iterable with feed dicts, and iterable with return_list=True
# (a list per place holding the list of arrays). Prints a JSON list.
import json
import sys

import numpy as np
import paddle.fluid as fluid
import paddle.fluid.layers as L

main, start = fluid.Program(), fluid.Program()
with fluid.program_guard(main, start):
    x = fluid.data("x", [None, 2], "float32")
    y = fluid.data("y", [None, 1], "int64")
    loader = fluid.io.DataLoader.from_generator(feed_list=[x, y], capacity=4, iterable=False)
    s = L.reduce_sum(x) + L.cast(L.reduce_sum(y), "float32")


def samples():
    for i in range(5):
        yield np.full([2], i, "float32"), np.array([i], "int64")


loader.set_sample_generator(samples, batch_size=2, drop_last=False)
exe = fluid.Executor(fluid.CPUPlace())
report = []
exe.run(start)
for epoch in range(2):
    loader.start()
    got = []
    try:
        while True:
            got.append(float(exe.run(main, fetch_list=[s])[0][0]))
    except fluid.core.EOFException:
        loader.reset()
    report.append([epoch, got])
# iterable with places and return_list
main2 = fluid.Program()
with fluid.program_guard(main2, fluid.Program()):
    x2 = fluid.data("x2", [None, 2], "float32")
    l2 = fluid.io.DataLoader.from_generator(feed_list=[x2], capacity=2, iterable=True, return_list=False)
    o2 = L.scale(x2, 2.0)
l2.set_batch_generator(
    lambda: iter([(np.ones((3, 2), "float32"),), (np.zeros((1, 2), "float32"),)]), places=fluid.cpu_places(1)
)
for data in l2():
    report.append(
        [type(data).__name__, len(data), sorted(data[0]), list(exe.run(main2, feed=data, fetch_list=[o2])[0].shape)]
    )
l3 = fluid.io.DataLoader.from_generator(feed_list=[x2], capacity=2, iterable=True, return_list=True)
l3.set_sample_list_generator(
    lambda: iter([[(np.ones(2, "float32"),), (np.ones(2, "float32"),)]]), places=fluid.cpu_places(1)
)
for data in l3():
    first = data[0]
    report.append(
        [
            type(data).__name__,
            type(first).__name__,
            [list(np.array(d).shape) for d in first] if isinstance(first, list) else list(np.array(first).shape),
        ]
    )
json.dump(report, sys.stdout)
