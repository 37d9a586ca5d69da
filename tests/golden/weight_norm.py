# Golden script: WeightNormParamAttr in static programs: fc and conv2d weights normalised over every
# dim but dim (None, 0, the last, an inner one), their _g and _v parameters (shapes, the values the
# startup program gives g), the ops of both programs, and three SGD steps (losses, g and v after).
# Prints a JSON report.
import json
import sys

import numpy as np
import paddle.fluid as fluid
import paddle.fluid.layers as L


def wn(shape, dim, name):
    value = np.sin(np.arange(int(np.prod(shape))) * 0.37 + 0.2).reshape(shape).astype("float32")
    return fluid.WeightNormParamAttr(dim=dim, name=name, initializer=fluid.initializer.NumpyArrayInitializer(value))


main, start = fluid.Program(), fluid.Program()
with fluid.program_guard(main, start):
    x = fluid.data("x", [None, 4], "float32")
    img = fluid.data("img", [None, 2, 5, 5], "float32")
    a = L.fc(x, 3, param_attr=wn([4, 3], None, "fc_all"), act="tanh")
    b = L.fc(a, 3, param_attr=wn([3, 3], 0, "fc_dim0"), act="tanh")
    c = L.fc(b, 2, param_attr=wn([3, 2], 1, "fc_dim1"))
    conv = L.conv2d(img, 3, 3, param_attr=wn([3, 2, 3, 3], 1, "conv_dim1"), bias_attr=False)
    conv0 = L.conv2d(img, 2, 3, param_attr=wn([2, 2, 3, 3], 0, "conv_dim0"), bias_attr=False)
    loss = L.reduce_mean(L.square(c)) + L.reduce_mean(L.square(conv)) + L.reduce_mean(conv0)
    fluid.optimizer.SGD(0.3).minimize(loss)
report = {
    "params": sorted([p.name, list(p.shape)] for p in main.global_block().all_parameters()),
    "startup_ops": [op.type for op in start.global_block().ops],
    "main_ops": [op.type for op in main.global_block().ops],
}
exe = fluid.Executor(fluid.CPUPlace())
exe.run(start)
scope = fluid.global_scope()
names = sorted(p.name for p in main.global_block().all_parameters())


def values():
    return {n: np.round(np.array(scope.find_var(n).get_tensor()), 5).reshape(-1).tolist() for n in names}


report["initial"] = values()
feed = {
    "x": np.cos(np.arange(8)).reshape(2, 4).astype("float32"),
    "img": np.sin(np.arange(100) * 0.3).reshape(2, 2, 5, 5).astype("float32"),
}
report["losses"] = [round(float(exe.run(main, feed=feed, fetch_list=[loss])[0][0]), 5) for _ in range(3)]
report["after"] = values()
json.dump(report, sys.stdout, indent=1, sort_keys=True)
