# Golden: DataFeeder.feed_parallel and decorate_reader(multi_devices=True) (fluid 1.8's docs examples,
# seeded) feeding with_data_parallel programs on an explicit list of CPU places, and their refusals.
import json

import numpy as np
import paddle.fluid as fluid
from _golden import errors_of


def generate_reader(batch_size, base=0, factor=1):
    def _reader():
        for _ in range(batch_size):
            yield np.ones([4]) * factor + base, np.ones([4]) * factor + base + 5

    return _reader()


out = {}
main, startup = fluid.Program(), fluid.Program()
with fluid.program_guard(main, startup):
    x = fluid.data(name="x", shape=[None, 2, 2])
    y = fluid.data(name="y", shape=[None, 2, 2], dtype="float32")
    z = fluid.layers.elementwise_add(x, y)
    feeder = fluid.DataFeeder(["x", "y"], fluid.CPUPlace())
    places = [fluid.CPUPlace() for _ in range(2)]
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    program = fluid.CompiledProgram(main).with_data_parallel(places=places)
    fed = list(feeder.feed_parallel([generate_reader(5, 0, 1), generate_reader(3, 10, 2)], 2))
    out["fed"] = [[sorted(d), [list(np.array(v).shape) for _, v in sorted(d.items())]] for d in fed]
    res = exe.run(program=program, feed=fed, fetch_list=[z])
    out["feed_parallel"] = [list(res[0].shape), np.round(res[0], 5).reshape(-1).tolist()]
    out["refused"] = errors_of([lambda: list(feeder.feed_parallel([generate_reader(2)], 2))])

rng = np.random.RandomState(0)


def reader():
    def _mini_batch(batch_size):
        for _ in range(batch_size):
            yield rng.random_sample([16]).astype("float32"), rng.randint(10, size=[1])

    for size in (3, 1, 4, 2, 5, 2, 1):
        yield _mini_batch(size)


main, startup = fluid.Program(), fluid.Program()
with fluid.program_guard(main, startup):
    places = [fluid.CPUPlace() for _ in range(3)]
    data = fluid.data(name="data", shape=[None, 4, 4], dtype="float32")
    label = fluid.data(name="label", shape=[None, 1], dtype="int64")
    w = fluid.ParamAttr(initializer=fluid.initializer.Constant(0.1))
    hidden = fluid.layers.fc(input=data, size=3, param_attr=w)
    feeder = fluid.DataFeeder(place=places[0], feed_list=[data, label])
    decorated = feeder.decorate_reader(reader, multi_devices=True, num_places=3, drop_last=True)
    exe = fluid.Executor(places[0])
    exe.run(startup)
    compiled_prog = fluid.CompiledProgram(main).with_data_parallel(places=places)
    steps = []
    for i, batch in enumerate(decorated()):
        ret = exe.run(compiled_prog, feed=batch, fetch_list=[hidden])
        steps.append([i, len(batch), list(ret[0].shape), round(float(ret[0].sum()), 4)])
    out["decorate_reader"] = steps
    single = feeder.decorate_reader(reader, multi_devices=False)
    out["single"] = [sorted(d) for d in single()]
    kept = feeder.decorate_reader(reader, multi_devices=True, num_places=3, drop_last=False)
    out["not_dropped"] = errors_of([lambda: list(kept())])
print(json.dumps(out))
