# Golden script: prroi_pool with batch_roi_nums, output and input gradient as fluid 1.8.5 computed them.
import json

import numpy as np
import paddle.fluid as fluid
import paddle.fluid.layers as L

rng = np.random.RandomState(8)
x = fluid.data("x", [2, 2, 6, 6], "float32")
x.stop_gradient = False
rois = L.assign(np.array([[0.3, 0.2, 3.7, 4.1], [1.2, 1.5, 5.1, 4.4], [0.0, 0.0, 2.0, 2.0]], "float32"))
nums = L.assign(np.array([2, 1], "int64"))
y = L.prroi_pool(x, rois, spatial_scale=1.0, pooled_height=2, pooled_width=2, batch_roi_nums=nums)
g = fluid.gradients([L.reduce_sum(y * y)], [x])[0]
exe = fluid.Executor(fluid.CPUPlace())
res = exe.run(feed={"x": rng.uniform(-1, 1, (2, 2, 6, 6)).astype("float32")}, fetch_list=[y, g])
print(json.dumps([np.round(r.astype("float64"), 5).tolist() for r in res]))
