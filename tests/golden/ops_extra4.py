# Golden script: the gradients fluid 1.8.5's cvm gives (CVM's values for the first two columns), center_loss's
# gradient and its centers update over two runs; prints a JSON list.
import json

import numpy as np
import paddle.fluid as fluid
import paddle.fluid.layers as L

rng = np.random.RandomState(9)
x = fluid.data("x", [3, 5], "float32")
x.stop_gradient = False
c = fluid.data("c", [3, 2], "float32")
y1 = L.continuous_value_model(x, c, use_cvm=True)
w = L.assign(rng.uniform(-1, 1, (3, 5)).astype("float32"))
g1 = fluid.gradients([L.reduce_sum(y1 * w)], [x])[0]
y0 = L.continuous_value_model(x, c, use_cvm=False)
g0 = fluid.gradients([L.reduce_sum(y0 * L.slice(w, [1], [0], [3]))], [x])[0]
cl_in = fluid.data("f", [4, 3], "float32")
cl_in.stop_gradient = False
cl_lab = L.assign(np.array([[0], [2], [0], [1]], "int64"))
cl = L.center_loss(
    cl_in,
    cl_lab,
    num_classes=3,
    alpha=0.5,
    param_attr=fluid.ParamAttr(name="centers", initializer=fluid.initializer.Constant(0.1)),
    update_center=True,
)
gcl = fluid.gradients([L.reduce_sum(cl)], [cl_in])[0]
exe = fluid.Executor(fluid.CPUPlace())
exe.run(fluid.default_startup_program())
feed = {
    "x": np.abs(rng.uniform(0, 3, (3, 5))).astype("float32"),
    "c": rng.uniform(0, 2, (3, 2)).astype("float32"),
    "f": rng.uniform(-1, 1, (4, 3)).astype("float32"),
}
r1 = exe.run(feed=feed, fetch_list=[g1, g0, cl, gcl, "centers"])
r2 = exe.run(feed=feed, fetch_list=[cl, "centers"])
print(json.dumps([np.round(np.asarray(a, "float64"), 5).tolist() for a in r1 + r2]))
