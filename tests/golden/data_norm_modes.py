# Golden script: data_norm with enable_scale_and_shift, with slot_dim, and with both: outputs and every gradient
# (names too: a later gradients pass gives None for what it does not reach) as fluid 1.8.5 computed them.
import json

import numpy as np
import paddle.fluid as fluid
import paddle.fluid.layers as L

x = fluid.data("x", [3, 4], "float32")
x.stop_gradient = False
pa = {"batch_size": 10.0, "batch_sum": 2.0, "batch_square": 30.0, "scale_w": 1.5, "bias": 0.2}
y1 = L.data_norm(x, name="a", enable_scale_and_shift=True, param_attr=dict(pa))
y2 = L.data_norm(x, name="b", slot_dim=2, param_attr=dict(pa))
y3 = L.data_norm(x, name="c", slot_dim=2, enable_scale_and_shift=True, param_attr=dict(pa))
w = L.assign(np.array([[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12]], "float32"))
blk = fluid.default_main_program().global_block()
params = [p.name for p in blk.all_parameters()]

outs = []
for y in (y1, y2, y3):
    gs = fluid.gradients([L.reduce_sum(y * w)], [x] + [blk.var(p) for p in params])
    outs.append((y, gs))
exe = fluid.Executor(fluid.CPUPlace())
exe.run(fluid.default_startup_program())
xv = np.array([[1.0, 2.0, 3.0, 4.0], [0.0, 5.0, 6.0, 7.0], [2.0, 0.5, 0.0, 1.0]], "float32")
res = []
for y, gs in outs:
    fetch = [y] + [g for g in gs if g is not None]
    res.append([np.round(np.asarray(r, "float64"), 5).tolist() for r in exe.run(feed={"x": xv}, fetch_list=fetch)])
    res[-1].insert(0, [g.name if g is not None else None for g in gs])
print(json.dumps(res))
