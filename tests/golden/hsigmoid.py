# Golden script: hsigmoid (default tree, 6 classes) loss and the gradients of x, weights and bias, as fluid
# 1.8.5 computed them (its loss adds log 2 for each step a shorter path lacks).
import json

import numpy as np
import paddle.fluid as fluid
import paddle.fluid.layers as L

rng = np.random.RandomState(2)
x = fluid.data("x", [4, 3], "float32")
x.stop_gradient = False
y = fluid.data("y", [4, 1], "int64")
out = L.hsigmoid(
    x,
    y,
    num_classes=6,
    param_attr=fluid.ParamAttr(
        name="hw", initializer=fluid.initializer.NumpyArrayInitializer(rng.uniform(-1, 1, (5, 3)).astype("float32"))
    ),
    bias_attr=fluid.ParamAttr(
        name="hb", initializer=fluid.initializer.NumpyArrayInitializer(rng.uniform(-1, 1, (5, 1)).astype("float32"))
    ),
)
print(
    [op.type for op in fluid.default_main_program().global_block().ops],
    fluid.default_main_program().global_block().var("hw").shape,
    fluid.default_main_program().global_block().var("hb").shape,
)
gx, gw, gb = fluid.gradients(
    [L.reduce_sum(out)],
    [x, fluid.default_main_program().global_block().var("hw"), fluid.default_main_program().global_block().var("hb")],
)
exe = fluid.Executor(fluid.CPUPlace())
exe.run(fluid.default_startup_program())
res = exe.run(
    feed={"x": rng.uniform(-1, 1, (4, 3)).astype("float32"), "y": np.array([[0], [5], [3], [2]], "int64")},
    fetch_list=[out, gx, gw, gb],
)
print(json.dumps([np.round(r.astype("float64"), 5).tolist() for r in res]))
