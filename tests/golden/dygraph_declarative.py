# fluid.dygraph.declarative and ProgramTranslator in dygraph mode: values of functions whose Python
# branches on tensor values, a Layer with a declarative forward trained with SGD, the translator's
# switch, get_output, get_program of a function without data-dependent branches, error texts.
import json
import os
import sys

import numpy as np
import paddle.fluid as fluid
from paddle.fluid.dygraph import Linear, ProgramTranslator, declarative, to_variable

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _golden import errors_of  # noqa: E402


def r(a):
    return np.round(np.asarray(a, "float64").reshape(-1), 5).tolist()


@declarative
def shift(x):
    x = fluid.dygraph.to_variable(x)
    if fluid.layers.mean(x) < 0:
        x_v = x - 1
    else:
        x_v = x + 1
    return x_v


@declarative
def loop(x, n):
    # a while on a tensor's value
    i = fluid.layers.fill_constant([1], "int64", 0)
    while i < n:
        x = x * 2.0
        i = i + 1
    return x


@declarative
def plain(x, y):
    return fluid.layers.relu(x * 2.0 + y), fluid.layers.reduce_sum(y, dim=1)


class Net(fluid.dygraph.Layer):
    def __init__(self):
        super(Net, self).__init__()
        self.fc = Linear(3, 2)
        self.fc2 = Linear(2, 2)

    @declarative
    def forward(self, x):
        y = self.fc(x)
        if fluid.layers.reduce_sum(y) > 0:
            y = self.fc2(y)
        else:
            y = y * 0.5
        return fluid.layers.relu(y)


out = {}
translator = ProgramTranslator()
out["translator"] = [translator is ProgramTranslator(), translator.enable_declarative]
with fluid.dygraph.guard(fluid.CPUPlace()):
    for sign in (1.0, -1.0):
        v = shift(sign * np.ones([1, 2]))
        out["shift_%d" % sign] = [type(v).__name__ == "VarBase", v.shape, str(v.dtype), v.stop_gradient, r(v.numpy())]
    out["loop"] = []
    for k in (0, 1, 3):
        # a new x each time: fluid 1.8.5's translated loop wrote its result into its argument
        x = to_variable(np.array([[1.5, -2.0]], "float32"))
        out["loop"].append(r(loop(x, to_variable(np.array([k], "int64"))).numpy()))
    net = Net()
    for k, p in enumerate(sorted(net.parameters(), key=lambda p: p.name)):
        p.set_value(np.random.RandomState(k).uniform(-0.5, 0.5, p.shape).astype("float32"))
    opt = fluid.optimizer.SGD(0.5, parameter_list=net.parameters())
    steps = []
    for i in range(4):
        data = to_variable(np.random.RandomState(20 + i).uniform(-1, 1, (4, 3)).astype("float32"))
        y = net(data)
        loss = fluid.layers.reduce_mean(y)
        loss.backward()
        grads = [r(p.gradient()) for p in sorted(net.parameters(), key=lambda p: p.name)]
        opt.minimize(loss)
        net.clear_gradients()
        steps.append([y.shape, r(loss.numpy()), grads])
    out["train"] = steps
    out["params"] = [[p.name, r(p.numpy())] for p in sorted(net.parameters(), key=lambda p: p.name)]
    o = translator.get_output(plain, to_variable(np.ones([2, 2], "float32")), to_variable(np.eye(2, dtype="float32")))
    out["get_output"] = [type(o).__name__, [r(v.numpy()) for v in o]]
    main, startup, inputs, outputs = translator.get_program(
        plain, np.ones([2, 2], "float32"), np.eye(2, dtype="float32")
    )
    out["get_program"] = [
        [op.type for op in main.global_block().ops],
        [[list(v.shape), str(v.dtype)] for v in inputs],
        [[list(v.shape), str(v.dtype)] for v in outputs],
        len(startup.global_block().ops),
    ]
    translator.enable(False)
    out["disabled"] = [r(shift(-np.ones([1, 2])).numpy()), r(net(to_variable(np.ones((1, 3), "float32"))).numpy())]
    translator.enable(True)
out["errors"] = errors_of([lambda: translator.enable(1)])
print(json.dumps(out, sort_keys=True))
