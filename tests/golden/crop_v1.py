# fluid 1.8's deprecated layers.crop (op crop): shape a float or an int Variable (its shape is used,
# not its values), a list with offsets a Variable; values, the input's gradient and the op list.
import json

import numpy as np
import paddle.fluid as fluid

L = fluid.layers
out = {}
x = fluid.data("x", [3, 5], "float32")
x.stop_gradient = False
yf = fluid.data("yf", [2, 3], "float32")
yi = fluid.data("yi", [2, 2], "int32")
off = fluid.data("off", [2], "int32")
a = L.crop(x, shape=yf, offsets=[1, 1])
b = L.crop(x, shape=yi)
c = L.crop(x, shape=[2, 2], offsets=off)
out["shapes"] = [list(v.shape) for v in (a, b, c)]
(ga,) = fluid.gradients([L.reduce_sum(a) + L.reduce_sum(c) * 2.0], [x])
exe = fluid.Executor(fluid.CPUPlace())
xv = np.arange(15, dtype="float32").reshape(3, 5)
r = exe.run(
    feed={
        "x": xv,
        "yf": np.zeros((2, 3), "float32"),
        "yi": np.full((2, 2), 7, "int32"),
        "off": np.array([1, 2], "int32"),
    },
    fetch_list=[a, b, c, ga],
)
out["vals"] = [np.array(v).tolist() for v in r]
out["ops"] = [op.type for op in fluid.default_main_program().global_block().ops]
print(json.dumps(out))
