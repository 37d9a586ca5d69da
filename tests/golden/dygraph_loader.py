# DataLoader.from_generator in dygraph mode: batches come as lists of VarBases (sample, sample-list
# and batch generators, paddle.batch's last short batch).
import json

import numpy as np
import paddle
import paddle.fluid as fluid


def reader():
    for i in range(5):
        yield np.full([3], i, "float32"), np.array([i % 2], "int64")


def batches():
    for i in range(2):
        yield np.ones([2, 3], "float32") * i, np.zeros([2, 1], "int64")


out = []
with fluid.dygraph.guard(fluid.CPUPlace()):
    loader = fluid.io.DataLoader.from_generator(capacity=4)
    loader.set_sample_generator(reader, batch_size=2, places=fluid.CPUPlace())
    loader2 = fluid.io.DataLoader.from_generator(capacity=4, return_list=True)
    loader2.set_sample_list_generator(paddle.batch(reader, 2), places=fluid.CPUPlace())
    loader3 = fluid.io.DataLoader.from_generator(capacity=4)
    loader3.set_batch_generator(batches, places=fluid.CPUPlace())
    for ld in (loader, loader2, loader3):
        for data in ld():
            out.append(
                [type(data).__name__, [type(d).__name__ for d in data]]
                + [[d.shape, str(d.dtype), d.stop_gradient, d.numpy().reshape(-1).tolist()] for d in data]
            )
print(json.dumps(out))
