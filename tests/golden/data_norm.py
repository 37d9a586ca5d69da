# Golden script: data_norm forward, the gradients fluid 1.8.5 gave its statistics and their SGD updates over
# two runs.
import json

import numpy as np
import paddle.fluid as fluid
import paddle.fluid.layers as L

rng = np.random.RandomState(4)
x = fluid.data("x", [3, 4], "float32")
x.stop_gradient = False
y = L.data_norm(x)
print(
    [op.type for op in fluid.default_main_program().global_block().ops],
    [(op.type, op.input_names, op.output_names) for op in fluid.default_main_program().global_block().ops],
)
params = [p.name for p in fluid.default_main_program().global_block().all_parameters()]
print(params, [fluid.default_main_program().global_block().var(p).shape for p in params])
loss = L.reduce_sum(y * L.assign(rng.uniform(-1, 1, (3, 4)).astype("float32")))
fluid.optimizer.SGD(0.1).minimize(loss)
print([op.type for op in fluid.default_main_program().global_block().ops])
exe = fluid.Executor(fluid.CPUPlace())
exe.run(fluid.default_startup_program())
xv = rng.uniform(-1, 1, (3, 4)).astype("float32")
res = []
for _ in range(2):
    res += exe.run(feed={"x": xv}, fetch_list=[y, "x@GRAD"] + [p + "@GRAD" for p in params] + params)
print(json.dumps([np.round(np.asarray(r, "float64"), 5).tolist() for r in res]))
