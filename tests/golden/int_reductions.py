# Golden script: reductions and cumulative sums of integer tensors keep their dtype (int32 stays int32),
# reduce_mean of integers divides in integers (truncated), and mean / clip refuse integer inputs.
import json

import numpy as np
import paddle.fluid as fluid
from _golden import errors_of

L = fluid.layers
exe = fluid.Executor(fluid.CPUPlace())
X = np.array([[1, 2, 4], [-3, 5, -7]])
out = {}
for dtype in ("int32", "int64"):
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        x = fluid.data("x", [2, 3], dtype)
        fetch = [
            L.reduce_sum(x),
            L.reduce_sum(x, dim=0),
            L.reduce_mean(x),
            L.reduce_mean(x, dim=1),
            L.reduce_mean(x, dim=0, keep_dim=True),
            L.reduce_prod(x, dim=1),
            L.cumsum(x, axis=1),
            L.cumsum(x, axis=0, exclusive=True, reverse=True),
            L.reduce_sum(L.cast(L.greater_than(x, L.zeros_like(x)), dtype)),
        ]
    values = exe.run(main, feed={"x": X.astype(dtype)}, fetch_list=fetch)
    out[dtype] = [[np.asarray(v).dtype.name, np.asarray(v).reshape(-1).tolist()] for v in values]


def build(layer):
    def call():
        with fluid.program_guard(fluid.Program(), fluid.Program()):
            layer(fluid.data("x", [2, 3], "int64"))

    return call


out["errors"] = errors_of([build(L.mean), build(lambda x: L.clip(x, 0, 3))])
print(json.dumps(out))
