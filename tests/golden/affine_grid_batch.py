# Golden script: affine_grid takes the batch from theta whatever out_shape says (the docs' example
# asks for 5 with a batch of 2) and declares the grid's height and width unknown. Prints a JSON report.
import json

import numpy as np
import paddle.fluid as fluid

theta = fluid.data(name="x", shape=[None, 2, 3], dtype="float32")
fixed = fluid.data(name="fixed", shape=[2, 2, 3], dtype="float32")
out_shape = fluid.data(name="y", shape=[4], dtype="int32")
grid_0 = fluid.layers.affine_grid(theta, out_shape)
grid_1 = fluid.layers.affine_grid(theta, [5, 3, 4, 3])
grid_2 = fluid.layers.affine_grid(fixed, [5, 3, 4, 3])
exe = fluid.Executor(fluid.CPUPlace())
rng = np.random.RandomState(0)
t = rng.rand(2, 2, 3).astype("float32")
g0, g1 = exe.run(feed={"x": t, "fixed": t, "y": np.array([5, 3, 4, 3], "int32")}, fetch_list=[grid_0, grid_1])
report = {
    "declared": [list(grid_0.shape), list(grid_1.shape), list(grid_2.shape)],
    "run": [list(g0.shape), list(g1.shape)],
    "values": np.round(g1, 5).tolist(),
}
print(json.dumps(report))
