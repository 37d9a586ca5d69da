"""layers.Print of a tensor with a 2-level LoD: fluid 1.8.5 printed its LoD line. Run under fluid 1.8.5
(tools/fluid18) it printed lod_print.txt (minus the first line, a timestamp)."""

import numpy as np
import paddle.fluid as fluid

x = fluid.data(name="x", shape=[None, 2], dtype="float32", lod_level=1)
y = fluid.layers.Print(fluid.layers.relu(x), message="relu out")
exe = fluid.Executor(fluid.CPUPlace())
exe.run(
    feed={
        "x": fluid.create_lod_tensor(np.arange(10, dtype="float32").reshape(5, 2), [[1, 1], [2, 3]], fluid.CPUPlace())
    },
    fetch_list=[y],
    return_numpy=False,
)
