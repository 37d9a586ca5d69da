# Golden script: the variables and forward op a warpctc layer adds to a program (its WarpCTCGrad
# output included) and a training step's loss shape. Prints a JSON report.
import json

import numpy as np
import paddle.fluid as fluid

x = fluid.data("x", [None, 5], lod_level=1)
y = fluid.data("y", [None, 1], dtype="int32", lod_level=1)
loss = fluid.layers.warpctc(fluid.layers.fc(x, 5), y)
z = fluid.layers.mean(loss)
fluid.optimizer.SGD(0.1).minimize(z)
blk = fluid.default_main_program().global_block()
out = {"vars": sorted([n, list(blk.var(n).shape)] for n in blk.vars if "warpctc" in n)}
op = [op for op in blk.ops if op.type == "warpctc"][0]
out["op"] = [{k: op.input(k) for k in sorted(op.input_names)}, {k: op.output(k) for k in sorted(op.output_names)}]
exe = fluid.Executor(fluid.CPUPlace())
exe.run(fluid.default_startup_program())
rng = np.random.RandomState(0)
xt = fluid.create_lod_tensor(rng.rand(7, 5).astype("float32"), [[4, 3]], fluid.CPUPlace())
yt = fluid.create_lod_tensor(np.array([[1], [2], [3]], "int32"), [[2, 1]], fluid.CPUPlace())
out["loss_shape"] = list(exe.run(feed={"x": xt, "y": yt}, fetch_list=[loss])[0].shape)
print(json.dumps(out))
