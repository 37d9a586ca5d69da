# Golden script: adaptive_pool2d / adaptive_pool3d with require_index (max_pool2d/3d_with_index): outputs, masks and
# input gradients as fluid 1.8.5 computed them.
import json

import numpy as np
import paddle.fluid as fluid
import paddle.fluid.layers as L

rng = np.random.RandomState(1)
x = fluid.data("x", [1, 2, 5, 7], "float32")
x.stop_gradient = False
v = fluid.data("v", [1, 1, 4, 5, 3], "float32")
v.stop_gradient = False
p2, m2 = L.adaptive_pool2d(x, [2, 3], "max", require_index=True)
p3, m3 = L.adaptive_pool3d(v, [2, 2, 2], "max", require_index=True)

g2, g3 = fluid.gradients([L.reduce_sum(p2 * p2) + L.reduce_sum(p3)], [x, v])
exe = fluid.Executor(fluid.CPUPlace())
res = exe.run(
    feed={
        "x": rng.uniform(-1, 1, (1, 2, 5, 7)).astype("float32"),
        "v": rng.uniform(-1, 1, (1, 1, 4, 5, 3)).astype("float32"),
    },
    fetch_list=[p2, m2, p3, m3, g2, g3],
)
print(json.dumps([[np.asarray(r).dtype.name, np.round(np.asarray(r).astype("float64"), 5).tolist()] for r in res]))
