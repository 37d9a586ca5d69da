# Golden script: pool3d, conv3d and conv3d_transpose with NDHWC input, lrn and group_norm with NHWC
# input: shapes, values (bias along the channels) and input gradients; the refusals of a wrong format.
import json

import numpy as np
import paddle.fluid as fluid
from _golden import errors_of

L = fluid.layers
rng = np.random.RandomState(0)
X5 = rng.rand(2, 3, 4, 5, 3).astype("float32")
X4 = rng.rand(2, 3, 3, 5).astype("float32")


def weights(shape):
    return fluid.ParamAttr(initializer=fluid.initializer.NumpyArrayInitializer(rng.rand(*shape).astype("float32")))


CASES = {
    "pool3d max": lambda x: L.pool3d(x, 2, "max", 2, data_format="NDHWC"),
    "pool3d avg pad": lambda x: L.pool3d(x, 2, "avg", 1, pool_padding=1, data_format="NDHWC"),
    "pool3d avg ceil": lambda x: L.pool3d(x, 2, "avg", 2, ceil_mode=True, exclusive=False, data_format="NDHWC"),
    "pool3d same": lambda x: L.pool3d(x, 3, "max", 2, pool_padding="SAME", data_format="NDHWC"),
    "pool3d global": lambda x: L.pool3d(x, global_pooling=True, pool_type="avg", data_format="NDHWC"),
    "conv3d": lambda x: L.conv3d(
        x, 2, 2, padding=1, data_format="NDHWC", param_attr=weights([2, 3, 2, 2, 2]), bias_attr=weights([2])
    ),
    "conv3d same stride": lambda x: L.conv3d(
        x, 4, 3, stride=2, padding="SAME", data_format="NDHWC", param_attr=weights([4, 3, 3, 3, 3]), bias_attr=False
    ),
    "conv3d_transpose": lambda x: L.conv3d_transpose(
        x, 2, filter_size=2, stride=2, data_format="NDHWC", param_attr=weights([3, 2, 2, 2, 2]), bias_attr=weights([2])
    ),
    "conv3d_transpose output_size": lambda x: L.conv3d_transpose(
        x, 2, output_size=[5, 6, 7], padding=1, stride=2, data_format="NDHWC", bias_attr=False
    ),
}
out = {}
exe = fluid.Executor(fluid.CPUPlace())
NHWC = {
    "lrn": lambda x: L.lrn(x, 3, data_format="NHWC"),
    "group_norm": lambda x: L.group_norm(x, 5, data_layout="NHWC"),
    "group_norm affine": lambda x: L.group_norm(
        x, 5, param_attr=weights([5]), bias_attr=weights([5]), data_layout="NHWC", act="relu"
    ),
}
for name, build in list(CASES.items()) + list(NHWC.items()):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        if name in NHWC:
            x = fluid.data("x", [2, 3, 3, 5], "float32")
            x.stop_gradient = False
            y = build(x)
        else:
            x = fluid.data("x", [2, 3, 4, 5, 3], "float32")
            x.stop_gradient = False
            y = build(x)
        w = L.assign(rng.rand(*y.shape).astype("float32"))  # a weighted sum: not a constant of x
        (g,) = fluid.backward.gradients([L.reduce_sum(y * w)], [x])
    exe.run(startup)
    if name == "conv3d_transpose output_size":  # a default-initialized filter: set it from numpy
        for p in main.global_block().all_parameters():
            shape = np.array(fluid.global_scope().find_var(p.name).get_tensor()).shape
            fluid.global_scope().find_var(p.name).get_tensor().set(rng.rand(*shape).astype("float32"), fluid.CPUPlace())
    values = exe.run(main, feed={"x": X4 if name in NHWC else X5}, fetch_list=[y, g])
    out[name] = [list(y.shape), [list(v.shape) for v in values]] + [
        v.reshape(-1).astype("float64").tolist() for v in values
    ]


def wrong(layer):
    def call():
        with fluid.program_guard(fluid.Program(), fluid.Program()):
            layer(fluid.data("x", [2, 3, 4, 5, 3], "float32"), fluid.data("x4", [2, 3, 3, 5], "float32"))

    return call


out["errors"] = errors_of(
    [
        wrong(lambda x, x4: L.conv3d(x, 2, 2, data_format="NHWC")),
        wrong(lambda x, x4: L.conv3d_transpose(x, 2, filter_size=2, data_format="NCHW")),
        wrong(lambda x, x4: L.lrn(x4, data_format="NCDHW")),
        wrong(lambda x, x4: L.group_norm(x4, 5, data_layout="NDHWC")),
    ]
)
print(json.dumps(out))
