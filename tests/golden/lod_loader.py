"""LoD batches through DataLoader.from_generator: set_sample_generator and set_sample_list_generator
(iterable and with a read op) make LoDTensors of sequence fields; set_batch_generator passes LoDTensors on.
Run under fluid 1.8.5 (tools/fluid18) it printed lod_loader.txt."""

import numpy as np
import paddle.fluid as fluid

words = fluid.data(name="words", shape=[None, 1], dtype="int64", lod_level=1)
label = fluid.data(name="label", shape=[None, 1], dtype="int64")
pooled = fluid.layers.sequence_pool(
    fluid.layers.embedding(words, size=[10, 2], param_attr=fluid.initializer.Constant(1.0)), "sum"
)


def samples():
    for i in range(4):
        yield [list(range(1, i + 2)), [i % 2]]


ITER = True
loader = fluid.io.DataLoader.from_generator(feed_list=[words, label], capacity=4, iterable=ITER)
loader.set_sample_generator(samples, batch_size=2, places=fluid.CPUPlace())
exe = fluid.Executor(fluid.CPUPlace())
exe.run(fluid.default_startup_program())
for data in loader():
    r = exe.run(feed=data, fetch_list=[pooled, words], return_numpy=False)
    print(np.array(r[0]).tolist(), r[1].lod())
main2 = fluid.Program()
with fluid.program_guard(main2, fluid.Program()):
    w2 = fluid.data(name="w2", shape=[None, 1], dtype="int64", lod_level=1)
    l2 = fluid.data(name="l2", shape=[None, 1], dtype="int64")
    loader2 = fluid.io.DataLoader.from_generator(feed_list=[w2, l2], capacity=4, iterable=False)
    p2 = fluid.layers.sequence_pool(fluid.layers.cast(w2, "float32"), "sum")
loader2.set_sample_list_generator(fluid.io.batch(samples, 2))
loader2.start()
try:
    while True:
        print(exe.run(main2, fetch_list=[p2])[0].tolist())
except fluid.core.EOFException:
    loader2.reset()


def batches():
    yield [
        fluid.create_lod_tensor(np.array([[1], [2], [3]], "int64"), [[1, 2]], fluid.CPUPlace()),
        np.array([[0], [1]], "int64"),
    ]


loader.set_batch_generator(batches, places=fluid.CPUPlace())
for data in loader():
    r = exe.run(feed=data, fetch_list=[pooled], return_numpy=False)
    print(np.array(r[0]).tolist())
