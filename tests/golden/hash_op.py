# Golden script: the hash op (XXH64 of each row, 3 seeds, mod 100000) on int64 and int32 ids, as fluid 1.8.5
# computed it (appended directly: fluid 1.8.5's layers.hash rejected every call).
import json

import numpy as np
import paddle.fluid as fluid
import paddle.fluid.layers as L

block = fluid.default_main_program().global_block()
res = []
for dt in ("int64", "int32"):
    ids = L.assign(np.array([[1, 2], [3, 4], [1, 2], [123456, 7]], dt))
    out = block.create_var(name="h_" + dt, dtype=dt)
    block.append_op(type="hash", inputs={"X": [ids]}, outputs={"Out": [out]}, attrs={"num_hash": 3, "mod_by": 100000})
    res.append(out)
r = fluid.Executor(fluid.CPUPlace()).run(fetch_list=res, return_numpy=False)
print(json.dumps([[np.array(t).dtype.name, np.array(t).shape, np.array(t).tolist()] for t in r]))
