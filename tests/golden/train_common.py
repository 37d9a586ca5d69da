# Shared by the training golden scripts: fixed data and weights, and the JSON report.
import json
import sys

import numpy as np
import paddle.fluid as fluid


def init(array):
    return fluid.ParamAttr(initializer=fluid.initializer.NumpyArrayInitializer(np.asarray(array, "float32")))


def train(loss, feeds, steps=20, extra=()):
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(fluid.default_startup_program())
    losses = []
    extras = []
    for i in range(steps):
        out = exe.run(fluid.default_main_program(), feed=feeds(i), fetch_list=[loss] + list(extra))
        losses.append(float(np.array(out[0]).reshape(-1)[0]))
        extras.append([np.array(v).astype("float64").reshape(-1).tolist() for v in out[1:]])
    report = {
        "losses": losses,
        "extras": extras,
        "ops": [op.type for op in fluid.default_main_program().global_block().ops],
        "startup_ops": [op.type for op in fluid.default_startup_program().global_block().ops],
        "persistables": sorted(v.name for v in fluid.default_main_program().list_vars() if v.persistable),
    }
    json.dump(report, sys.stdout, indent=0, sort_keys=True)
