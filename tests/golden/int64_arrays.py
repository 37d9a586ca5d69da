# Golden script: the printed form of int64 results, which fluid's tensors handed numpy as C long long
# (so an array's repr says dtype=int64): fetched values printed as a list, as_numpy, np.array of a
# LoDTensor, a dygraph VarBase's numpy(); int32, float32 and bool ones for comparison. Prints JSON.
import json

import numpy as np
import paddle.fluid as fluid

report = {}
x = fluid.data("x", [None, 3], "float32")
top = fluid.layers.argmax(x, axis=1)
ints = fluid.layers.cast(x, "int32")
flags = fluid.layers.greater_than(x, fluid.layers.fill_constant([1], "float32", 1.5))
count = fluid.layers.fill_constant([2], "int64", 7)
exe = fluid.Executor(fluid.CPUPlace())
feed = {"x": np.array([[1, 3, 2], [5, 0, 1]], "float32")}
fetched = exe.run(feed=feed, fetch_list=[top, ints, flags, count, x])
report["fetched"] = str(fetched)
(lod,) = exe.run(feed=feed, fetch_list=[top], return_numpy=False)
report["as_numpy"] = repr(fluid.executor.as_numpy(lod))
report["np_array"] = repr(np.array(lod))
with fluid.dygraph.guard():
    v = fluid.dygraph.to_variable(np.array([1, 2], "int64"))
    report["dygraph"] = [
        repr(v.numpy()),
        repr(fluid.layers.argmax(fluid.dygraph.to_variable(feed["x"]), axis=1).numpy()),
    ]
print(json.dumps(report))
