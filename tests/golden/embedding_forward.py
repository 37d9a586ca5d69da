# Golden script: the device_guard tutorial's embedding program (seed 000), forward only: a
# 10,000,000 x 150 table under device_guard("cpu"), l2_normalize, square_error_cost, mean. The table
# is random, so the report holds names, shapes, dtypes, op devices and relations between the values.
import json
import sys

import numpy as np
import paddle.fluid as fluid

data = fluid.layers.fill_constant(shape=[1], value=128, dtype="int64")
label = fluid.layers.fill_constant(shape=[1, 150], value=0.5, dtype="float32")
with fluid.device_guard("cpu"):
    emb = fluid.embedding(input=data, size=(10000000, 150), dtype="float32")
out = fluid.layers.l2_normalize(x=emb, axis=-1)
cost = fluid.layers.square_error_cost(input=out, label=label)
avg_cost = fluid.layers.mean(cost)
exe = fluid.Executor(fluid.CPUPlace())
exe.run(fluid.default_startup_program())
fetch = [emb, out, cost, avg_cost]
res = exe.run(fluid.default_main_program(), fetch_list=fetch)
e, o, c, m = res
limit = float(np.sqrt(6.0 / (10000000 + 150)))
report = {
    "ops": [[op.type, op.attr("op_device")] for op in fluid.default_main_program().global_block().ops],
    "startup_ops": [op.type for op in fluid.default_startup_program().global_block().ops],
    "params": [p.name for p in fluid.default_main_program().global_block().all_parameters()],
    "vars": {v.name: [list(v.shape), str(v.dtype), list(r.shape), str(r.dtype)] for v, r in zip(fetch, res)},
    "emb_within_xavier_bound": bool(np.all(np.abs(e) <= limit)),
    "out_unit_norm": bool(abs(float(np.sqrt((o**2).sum())) - 1.0) < 1e-5),
    "cost_is_square_error": bool(np.allclose(c, (o - 0.5) ** 2, atol=1e-6)),
    "mean_is_mean": bool(np.allclose(m, c.mean(), atol=1e-7)),
}
json.dump(report, sys.stdout, indent=0, sort_keys=True)
