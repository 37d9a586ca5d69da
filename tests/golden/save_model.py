# Golden script: an fc net trained one Adam step, then saved in every fluid.io format under argv[1].
# Run under real fluid 1.8.5 to record tests/golden/fluid18_saved/ (see test_io.py); prints the
# test-mode outputs for a fixed input as JSON.
import json
import sys

import numpy as np
import paddle.fluid as fluid

out_dir = sys.argv[1]
x = fluid.data("x", [None, 4])
y = fluid.layers.fc(x, 3, act="relu", param_attr=fluid.ParamAttr(initializer=fluid.initializer.Uniform(seed=1)))
z = fluid.layers.fc(y, 2, param_attr=fluid.ParamAttr(initializer=fluid.initializer.Uniform(seed=2)))
loss = fluid.layers.mean(z)
fluid.optimizer.Adam(0.01).minimize(loss)
exe = fluid.Executor(fluid.CPUPlace())
exe.run(fluid.default_startup_program())
exe.run(feed={"x": np.ones((2, 4), "float32")}, fetch_list=[loss])
fluid.io.save_persistables(exe, out_dir + "/pers")
fluid.io.save_params(exe, out_dir + "/comb", filename="params")
fluid.io.save_inference_model(out_dir + "/infer", ["x"], [z], exe)
fluid.save(fluid.default_main_program(), out_dir + "/ckpt/model")
test = fluid.default_main_program().clone(for_test=True)
out = exe.run(test, feed={"x": np.arange(8).reshape(2, 4).astype("float32")}, fetch_list=[z])[0]
json.dump({"outputs": out.tolist()}, sys.stdout)
