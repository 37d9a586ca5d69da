"""Per-op VLOG lines (GLOG_vmodule=operator=3) of a program over a LoDTensor: the LoD in each variable's text.
Run under fluid 1.8.5 (tools/fluid18) it wrote lod_vlog.txt (the operator.cc:180 lines after the place)."""

import numpy as np
import paddle.fluid as fluid

x = fluid.data(name="x", shape=[None, 2], dtype="float32", lod_level=1)
y = fluid.layers.sequence_pool(fluid.layers.relu(x), "sum")
exe = fluid.Executor(fluid.CPUPlace())
exe.run(feed={"x": fluid.create_lod_tensor(np.ones((5, 2), "float32"), [[2, 3]], fluid.CPUPlace())}, fetch_list=[y])
