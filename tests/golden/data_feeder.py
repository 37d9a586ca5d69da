# Golden script: fluid.DataFeeder: what feed() returns for dense and LoD variables (LoDTensors, dtype,
# shape, LoD), scalar and array fields, an empty batch, variables by name, a flat field reshaped to
# the variable's shape, the feed_* attributes, decorate_reader and feed_parallel; the errors for a
# sample with too few or too many fields and for ragged fields. Prints a JSON report.
import json

import numpy as np
import paddle.fluid as fluid
from _golden import attempt

report = {}


def desc(d):
    return {
        k: [
            type(v).__name__,
            np.array(v).dtype.name,
            list(np.array(v).shape),
            v.lod(),
            np.array(v).reshape(-1).tolist(),
        ]
        for k, v in sorted(d.items())
    }


main = fluid.Program()
with fluid.program_guard(main, fluid.Program()):
    x = fluid.data("x", [None, 3], "float32")
    y = fluid.data("y", [None, 1], "int64")
    w = fluid.data("w", [None, 1], "int64", lod_level=1)
    img = fluid.layers.data("img", [1, 2, 2], "float32")
    s2 = fluid.layers.data("s2", [1], "float32", lod_level=2)
place = fluid.CPUPlace()
f = fluid.DataFeeder([x, y], place)
report["basic"] = desc(f.feed([([1, 2, 3], [1]), ([4, 5, 6], [0])]))
report["np_rows"] = desc(f.feed([(np.ones(3), 1), (np.zeros(3), 0)]))
report["empty"] = desc(f.feed([]))
report["too_few_fields"] = attempt(lambda: f.feed([([1, 2, 3],)]))
report["too_many_fields"] = attempt(lambda: f.feed([([1, 2, 3], [1], [2])]))
report["ragged"] = attempt(lambda: f.feed([([1, 2, 3], [1]), ([1, 2], [1])]))
f2 = fluid.DataFeeder([w, y], place)
report["lod"] = desc(f2.feed([([1, 2, 3], [1]), ([4], [0])]))
report["lod_nested"] = desc(f2.feed([([[1], [2], [3]], [1]), ([[4]], [0])]))
f3 = fluid.DataFeeder(["img"], place, program=main)
report["by_name_flat"] = desc(f3.feed([(np.arange(4),), (np.arange(4, 8),)]))
f4 = fluid.DataFeeder(["s2"], place, program=main)
report["lod2"] = desc(f4.feed([([[1, 2], [3]],), ([[4]],)]))
report["attrs"] = [
    [f.feed_names, [list(s) for s in f.feed_shapes], f.feed_lod_level, [str(d) for d in f.feed_dtypes]],
    [f3.feed_names, [list(s) for s in f3.feed_shapes], f3.feed_lod_level],
    [f4.feed_names, [list(s) for s in f4.feed_shapes], f4.feed_lod_level],
]


def reader():
    for i in range(3):
        yield [([i, i, i], [i]), ([i + 1] * 3, [i + 1])]


report["decorate"] = [desc(d) for d in f.decorate_reader(reader, multi_devices=False)()]
report["feed_parallel"] = [desc(d) for d in f.feed_parallel([[([1, 2, 3], [1])]], num_places=1)]
exe = fluid.Executor(place)
with fluid.program_guard(main, fluid.Program()):
    out = fluid.layers.reduce_sum(x) + fluid.layers.cast(fluid.layers.reduce_sum(y), "float32")
report["run"] = np.array(exe.run(main, feed=f.feed([([1, 2, 3], [1]), ([4, 5, 6], [2])]), fetch_list=[out])[0]).tolist()
print(json.dumps(report, sort_keys=True))
