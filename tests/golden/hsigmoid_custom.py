# Golden script: hsigmoid over a custom tree (path_table / path_code with -1 padding): loss and the gradients of
# x, weights and bias as fluid 1.8.5 computed them.
import json

import numpy as np
import paddle.fluid as fluid
import paddle.fluid.layers as L

rng = np.random.RandomState(2)
x = fluid.data("x", [3, 3], "float32")
x.stop_gradient = False
y = fluid.data("y", [3, 1], "int64")
pt = fluid.data("pt", [3, 3], "int64")
pc = fluid.data("pc", [3, 3], "int64")
out = L.hsigmoid(
    x,
    y,
    num_classes=4,
    path_table=pt,
    path_code=pc,
    is_custom=True,
    param_attr=fluid.ParamAttr(
        name="hw", initializer=fluid.initializer.NumpyArrayInitializer(rng.uniform(-1, 1, (4, 3)).astype("float32"))
    ),
    bias_attr=fluid.ParamAttr(
        name="hb", initializer=fluid.initializer.NumpyArrayInitializer(rng.uniform(-1, 1, (4, 1)).astype("float32"))
    ),
)
blk = fluid.default_main_program().global_block()
print(blk.var("hw").shape, blk.var("hb").shape)
gx, gw, gb = fluid.gradients([L.reduce_sum(out)], [x, blk.var("hw"), blk.var("hb")])
exe = fluid.Executor(fluid.CPUPlace())
exe.run(fluid.default_startup_program())
feed = {
    "x": rng.uniform(-1, 1, (3, 3)).astype("float32"),
    "y": np.array([[0], [1], [2]], "int64"),
    "pt": np.array([[0, 1, -1], [0, 2, 3], [1, -1, -1]], "int64"),
    "pc": np.array([[1, 0, -1], [0, 1, 1], [1, -1, -1]], "int64"),
}
res = exe.run(feed=feed, fetch_list=[out, gx, gw, gb])
print(json.dumps([np.round(r.astype("float64"), 5).tolist() for r in res]))
