# Golden script: error types and messages fluid 1.8.5 gives for bad input that fluidcompat reproduces
# word for word. Prints {case: [exception type name, message]} as JSON.
import json
import sys

import numpy as np
import paddle.fluid as fluid

x = fluid.data(name="x", shape=[None, 4], dtype="float32")
y = fluid.layers.fc(x, 2)
ids = fluid.data(name="ids", shape=[None, 1], dtype="float32")
exe = fluid.Executor(fluid.CPUPlace())
exe.run(fluid.default_startup_program())


def attempt(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001
        return [type(e).__name__, str(e).strip().splitlines()[0]]
    return ["no error", ""]


report = {
    "feed_shape": attempt(lambda: exe.run(feed={"x": np.ones((3, 5), "float32")}, fetch_list=[y])),
    "feed_dtype": attempt(lambda: exe.run(feed={"x": np.ones((3, 4), "float64")}, fetch_list=[y])),
    "device_guard_tpu": attempt(lambda: fluid.device_guard("tpu").__enter__()),
    "program_guard_str": attempt(lambda: fluid.program_guard("main").__enter__()),
    "data_shape_int": attempt(lambda: fluid.data(name="z", shape=3)),
    "embedding_float_ids": attempt(lambda: fluid.embedding(ids, size=[10, 4])),
    "pool_type": attempt(lambda: fluid.layers.pool2d(fluid.data("img", [1, 3, 8, 8]), 2, pool_type="min")),
    "transpose_perm": attempt(lambda: fluid.layers.transpose(x, [1, 0, 2])),
    "feed_type": attempt(lambda: exe.run(feed=[1, 2], fetch_list=[y])),
    "after_errors_runs": attempt(lambda: exe.run(feed={"x": np.ones((3, 4), "float32")}, fetch_list=[y])),
}
json.dump(report, sys.stdout, indent=1, sort_keys=True)
