# Golden script: image_resize's run-time sizes (scale as a Variable, out_shape holding Variables, an
# out_shape Variable) and the inputs fluid 1.8.5 refused when building.
import json

import numpy as np
import paddle.fluid as fluid
from _golden import errors_of, flat

L = fluid.layers
x_np = np.arange(2 * 2 * 4 * 5, dtype="float32").reshape(2, 2, 4, 5) / 7.0
v_np = np.arange(1 * 1 * 2 * 3 * 4, dtype="float32").reshape(1, 1, 2, 3, 4)
main, startup = fluid.Program(), fluid.Program()
with fluid.program_guard(main, startup):
    x = fluid.data("x", [None, 2, 4, 5], "float32")
    v = fluid.data("v", [None, 1, 2, 3, 4], "float32")
    h = fluid.data("h", [1], "int32")
    outs = {
        "scale_var": L.resize_bilinear(x, scale=L.fill_constant([1], "float32", 1.5)),
        "scale_var_nearest": L.resize_nearest(x, scale=L.fill_constant([1], "float32", 2.0), align_corners=False),
        "size_tensor": L.resize_bilinear(x, out_shape=[h, 7]),
        "size_tensor_nearest": L.resize_nearest(x, out_shape=[3, h]),
        "out_shape_var": L.resize_bilinear(x, out_shape=L.assign(np.array([6, 3], "int32")), align_corners=False),
        "trilinear_size_tensor": L.resize_trilinear(v, out_shape=[3, h, 5]),
        "scale_float": L.image_resize(x, scale=0.5, resample="NEAREST"),
    }
shapes = {k: list(o.shape) for k, o in outs.items()}
exe = fluid.Executor(fluid.CPUPlace())
exe.run(startup)
names = list(outs)
got = exe.run(main, feed={"x": x_np, "v": v_np, "h": np.array([6], "int32")}, fetch_list=[outs[k] for k in names])
result = {"shapes": shapes, "values": {k: flat(g) for k, g in zip(names, got)}}


def build(fn):
    def call():
        with fluid.program_guard(fluid.Program(), fluid.Program()):
            fn()

    return call


d = lambda n, s: fluid.data(n, s, "float32")  # noqa: E731
result["errors"] = errors_of(
    [
        build(lambda: L.resize_bilinear(d("a", [None, 3, 8]), out_shape=[4, 4])),
        build(lambda: L.resize_nearest(d("a", [None, 3, 8, 8, 8]), out_shape=[4, 4])),
        build(lambda: L.resize_trilinear(d("a", [None, 3, 8, 8]), out_shape=[4, 4, 4])),
        build(lambda: L.image_resize(d("a", [None, 3, 8, 8]), scale=-1.0)),
        build(lambda: L.image_resize(d("a", [None, 3, 8, 8]), scale=0)),
        build(lambda: L.resize_bilinear(d("a", [None, 3, 8, 8]))),
        build(lambda: L.resize_bilinear(d("a", [None, 3, 8, 8]), out_shape=4)),
    ]
)
print(json.dumps(result))
