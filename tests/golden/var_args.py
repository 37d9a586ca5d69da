# Golden script: layers given Variables where fluid 1.8 took them for attributes (shape lists holding
# Variables, Variable starts / ends / strides / offsets / k / factor / scale / depth / axes / sections):
# the shapes inferred when built and the values when run.
import json

import numpy as np
import paddle.fluid as fluid
from _golden import flat

L = fluid.layers
X = np.arange(24, dtype="float32").reshape(2, 3, 4) / 5.0
cases = {
    "reshape_var_in_list": lambda x, i: L.reshape(x, [L.fill_constant([1], "int32", 4), -1]),
    "reshape_var": lambda x, i: L.reshape(x, L.assign(np.array([6, 4], "int32"))),
    "slice_var_list": lambda x, i: L.slice(x, axes=[1, 2], starts=[L.fill_constant([1], "int32", 1), 0], ends=[3, i]),
    "slice_var": lambda x, i: L.slice(
        x, axes=[2], starts=L.assign(np.array([1], "int32")), ends=L.assign(np.array([3], "int32"))
    ),
    "strided_slice_var": lambda x, i: L.strided_slice(
        x, axes=[2], starts=[0], ends=[i], strides=[L.fill_constant([1], "int32", 2)]
    ),
    "expand_var_list": lambda x, i: L.expand(x, [1, L.fill_constant([1], "int32", 2), 1]),
    "expand_var": lambda x, i: L.expand(x, L.assign(np.array([2, 1, 1], "int32"))),
    "fill_constant_var_shape": lambda x, i: L.fill_constant([L.fill_constant([1], "int64", 2), 3], "float32", 1.5),
    "fill_constant_var_value": lambda x, i: L.fill_constant([2], "float32", L.fill_constant([1], "float32", 2.5)),
    "crop_tensor_var_offsets": lambda x, i: L.crop_tensor(
        x, shape=[2, 2, 2], offsets=[0, L.fill_constant([1], "int32", 1), 1]
    ),
    "topk_var": lambda x, i: L.topk(x, L.fill_constant([1], "int32", 2))[0],
    "pow_var": lambda x, i: L.pow(x, L.fill_constant([1], "float32", 2.0)),
    "scale_var": lambda x, i: L.scale(x, L.fill_constant([1], "float32", 3.0), bias=1.0),
    "one_hot_var_depth": lambda x, i: L.one_hot(
        L.assign(np.array([[1], [3]], "int64")), L.fill_constant([1], "int32", 5)
    ),
    "range_var": lambda x, i: L.range(0, L.fill_constant([1], "int64", 6), 2, "int64"),
    "linspace_var": lambda x, i: L.linspace(0.0, L.fill_constant([1], "float32", 1.0), 5, "float32"),
    "unsqueeze_var": lambda x, i: L.unsqueeze(x, [L.fill_constant([1], "int32", 1)]),
    "split_var": lambda x, i: L.split(x, [L.fill_constant([1], "int32", 1), -1], dim=2)[1],
    "zeros_like_shape": lambda x, i: L.zeros(shape=[2, 3], dtype="float32"),
    "uniform_var_shape": lambda x, i: L.shape(L.uniform_random([L.fill_constant([1], "int64", 3), 2], seed=1)),
    "gaussian_var_shape": lambda x, i: L.shape(L.gaussian_random(L.assign(np.array([4, 2], "int64")), seed=1)),
    "interp_var": lambda x, i: L.shape(L.resize_nearest(L.reshape(x, [2, 3, 4, 1]), out_shape=[i, 2])),
    "pad_constant_like": lambda x, i: L.pad_constant_like(
        x, L.slice(x, axes=[2], starts=[0], ends=[2]), pad_value=-1.0
    ),
    "sum_list": lambda x, i: L.sum([x, x]),
    "diag_var": lambda x, i: L.diag(L.assign(np.array([1.0, 2.0], "float32"))),
    "eye": lambda x, i: L.eye(2, 3),
    "flip": lambda x, i: L.flip(x, [0, 2]),
}
out = {}
for name, build in cases.items():
    main, startup = fluid.Program(), fluid.Program()
    try:
        with fluid.program_guard(main, startup):
            x = fluid.data("x", [2, 3, 4], "float32")
            i = fluid.data("i", [1], "int32")
            y = build(x, i)
        sh = list(y.shape)
    except Exception as ex:
        out[name] = ["build", type(ex).__name__, str(ex)[:120]]
        continue
    try:
        exe = fluid.Executor(fluid.CPUPlace())
        exe.run(startup)
        (r,) = exe.run(main, feed={"x": X, "i": np.array([3], "int32")}, fetch_list=[y])
        out[name] = [sh, flat(r)]
    except Exception as ex:
        out[name] = ["run", type(ex).__name__, str(ex)[:120]]
print(json.dumps(out))
