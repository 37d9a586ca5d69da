# Golden script: image_resize / resize_bilinear / resize_nearest / resize_trilinear with channels-last
# inputs (data_format NHWC / NDHWC): shapes, values and input gradients, by out_shape, scale and a shape
# tensor, with the corner modes; and the refusal of a data_format that does not fit the rank.
import json

import numpy as np
import paddle.fluid as fluid
from _golden import errors_of

L = fluid.layers
rng = np.random.RandomState(0)
X4 = rng.rand(2, 4, 5, 3).astype("float32")
X5 = rng.rand(1, 3, 4, 2, 2).astype("float32")
CASES = {
    "bilinear out_shape": lambda x, s: L.resize_bilinear(x, out_shape=[7, 8], data_format="NHWC"),
    "bilinear scale": lambda x, s: L.resize_bilinear(x, scale=1.5, data_format="NHWC"),
    "bilinear no corners": lambda x, s: L.resize_bilinear(x, [6, 9], align_corners=False, data_format="NHWC"),
    "bilinear mode 0": lambda x, s: L.resize_bilinear(x, [6, 9], align_corners=False, align_mode=0, data_format="NHWC"),
    "bilinear shape tensor": lambda x, s: L.resize_bilinear(x, out_shape=s, data_format="NHWC"),
    "nearest": lambda x, s: L.resize_nearest(x, out_shape=[3, 7], data_format="NHWC"),
    "nearest no corners": lambda x, s: L.resize_nearest(x, scale=2.0, align_corners=False, data_format="NHWC"),
    "image_resize nearest": lambda x, s: L.image_resize(x, [5, 5], resample="NEAREST", data_format="NHWC"),
}
out = {}
exe = fluid.Executor(fluid.CPUPlace())
for name, build in CASES.items():
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        x = fluid.data("x", [2, 4, 5, 3], "float32")
        x.stop_gradient = False
        shape = fluid.data("shape", [2], "int32")
        y = build(x, shape)
        w = L.assign(rng.rand(2, 12, 12, 3).astype("float32"))
        (g,) = fluid.backward.gradients([L.reduce_sum(y * L.crop_tensor(w, shape=L.shape(y)))], [x])
    feed = {"x": X4, "shape": np.array([6, 10], "int32")}
    values = exe.run(main, feed=feed, fetch_list=[y, g])
    out[name] = [list(y.shape), [list(v.shape) for v in values]] + [
        v.reshape(-1).astype("float64").tolist() for v in values
    ]
main = fluid.Program()
with fluid.program_guard(main, fluid.Program()):
    x5 = fluid.data("x5", [1, 3, 4, 2, 2], "float32")
    y5 = L.resize_trilinear(x5, out_shape=[4, 6, 3], data_format="NDHWC")
    y5b = L.resize_trilinear(x5, scale=2.0, align_corners=False, align_mode=0, data_format="NDHWC")
values = exe.run(main, feed={"x5": X5}, fetch_list=[y5, y5b])
out["trilinear"] = [[list(v.shape) for v in values]] + [v.reshape(-1).astype("float64").tolist() for v in values]


def wrong_format(data_format, rank):
    def call():
        with fluid.program_guard(fluid.Program(), fluid.Program()):
            x = fluid.data("x", [1, 2, 3, 4, 5][:rank], "float32")
            L.image_resize(
                x, [4, 4, 4][: rank - 2], resample="BILINEAR" if rank == 4 else "TRILINEAR", data_format=data_format
            )

    return call


out["errors"] = errors_of([wrong_format("NDHWC", 4), wrong_format("NHWC", 5)])
print(json.dumps(out))
