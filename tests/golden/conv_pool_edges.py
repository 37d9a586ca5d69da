# Windows at the edge of the input: pool2d / conv2d whose window reaches past the padded input where
# fluid's C++ division still gives one output (max, exclusive and inclusive avg, ceil_mode, a conv
# over the zeros beyond), and the build-time and run-time refusals of an output size below 1 (pool2d,
# pool3d, conv2d, and a pool2d whose input size is known only when run).
import json

import numpy as np
import paddle.fluid as fluid

out = {}
x = fluid.data("x", [1, 2, 2, 2], "float32")
ys = {
    "max": fluid.layers.pool2d(x, 5, "max", pool_stride=2, pool_padding=1),
    "avg_ex": fluid.layers.pool2d(x, 5, "avg", pool_stride=2, pool_padding=1),
    "avg_inc": fluid.layers.pool2d(x, 5, "avg", pool_stride=2, pool_padding=1, exclusive=False),
    "ceil": fluid.layers.pool2d(x, 3, "max", pool_stride=2, pool_padding=0, ceil_mode=True),
    "conv": fluid.layers.conv2d(
        x, 1, 3, stride=2, param_attr=fluid.ParamAttr(initializer=fluid.initializer.Constant(1.0)), bias_attr=False
    ),
}
out["shapes"] = {k: list(v.shape) for k, v in ys.items()}
exe = fluid.Executor(fluid.CPUPlace())
exe.run(fluid.default_startup_program())
xv = np.arange(8, dtype="float32").reshape(1, 2, 2, 2)
r = exe.run(feed={"x": xv}, fetch_list=list(ys.values()))
out["vals"] = {k: np.round(np.array(v).astype("float64"), 5).tolist() for k, v in zip(ys, r)}


def size_error(fn):
    try:
        fn()
        return "no error"
    except Exception as e:  # noqa: BLE001
        return [line.strip() for line in str(e).splitlines() if "size" in line and "greater than 0" in line][0]


img = fluid.data("img", [1, 3, 2, 2], "float32")
out["build"] = {
    "pool2d": size_error(lambda: fluid.layers.pool2d(img, 3, pool_stride=1)),
    "conv2d": size_error(lambda: fluid.layers.conv2d(img, 4, 5)),
    "conv2d_stride": size_error(lambda: fluid.layers.conv2d(img, 4, 5, stride=2)),
    "pool3d": size_error(lambda: fluid.layers.pool3d(fluid.data("v", [1, 3, 2, 2, 2], "float32"), 3, pool_stride=1)),
}
p2 = fluid.Program()
with fluid.program_guard(p2, fluid.Program()):
    xd = fluid.data("xd", [1, 2, None, None], "float32")
    dyn = fluid.layers.pool2d(xd, 3, "max", pool_stride=1)
out["run"] = size_error(lambda: exe.run(p2, feed={"xd": xv}, fetch_list=[dyn]))
print(json.dumps(out, sort_keys=True))
