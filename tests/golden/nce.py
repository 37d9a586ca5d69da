# Golden script: nce with a one-class custom_dist (negatives are all class 4, so the run is deterministic; one
# row's true label is 4 too): cost and the gradients of x, weights and bias, as fluid 1.8.5 computed them.
import json

import numpy as np
import paddle.fluid as fluid
import paddle.fluid.layers as L

rng = np.random.RandomState(3)
x = fluid.data("x", [3, 4], "float32")
x.stop_gradient = False
y = fluid.data("y", [3, 1], "int64")
dist = [0.0, 0.0, 0.0, 0.0, 1.0]
cost = L.nce(
    x,
    y,
    num_total_classes=5,
    num_neg_samples=2,
    sampler="custom_dist",
    custom_dist=dist,
    seed=1,
    param_attr=fluid.ParamAttr(
        name="nw", initializer=fluid.initializer.NumpyArrayInitializer(rng.uniform(-1, 1, (5, 4)).astype("float32"))
    ),
    bias_attr=fluid.ParamAttr(
        name="nb", initializer=fluid.initializer.NumpyArrayInitializer(rng.uniform(-1, 1, (5, 1)).astype("float32"))
    ),
)
blk = fluid.default_main_program().global_block()
print([op.type for op in blk.ops])
g = fluid.gradients([L.reduce_sum(cost)], [x, blk.var("nw"), blk.var("nb")])
exe = fluid.Executor(fluid.CPUPlace())
exe.run(fluid.default_startup_program())
res = exe.run(
    feed={"x": rng.uniform(-1, 1, (3, 4)).astype("float32"), "y": np.array([[0], [4], [3]], "int64")},
    fetch_list=[cost] + g,
)
print(json.dumps([np.round(np.asarray(r, "float64"), 5).tolist() for r in res]))
