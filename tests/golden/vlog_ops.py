# Golden script: VLOG lines of feed, shape, slice, crop_tensor, lookup_table_v2 and fetch ops, run with
# GLOG_vmodule=operator=3,feed_op=3,fetch_op=3,tensor_util=3 (tests/golden/vlog_ops.txt from fluid 1.8.5).
import numpy as np
import paddle.fluid as fluid

x = fluid.data("x", [3, 4])
ids = fluid.data("ids", [3, 1], "int64")
s = fluid.layers.shape(x)
sl = fluid.layers.slice(x, axes=[1], starts=[0], ends=[2])
c = fluid.layers.crop_tensor(x, shape=[3, 2])
e = fluid.embedding(ids, [10, 3])
exe = fluid.Executor(fluid.CPUPlace())
exe.run(fluid.default_startup_program())
exe.run(feed={"ids": np.array([[1], [2], [3]]), "x": np.ones((3, 4), "float32")}, fetch_list=[s, sl, c, e])
