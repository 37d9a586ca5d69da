# Golden script: layers given Variables where fluid 1.8 took them (split's dim and sections, concat's
# axis, unsqueeze's axes, strided_slice's and slice's bounds, reshape's actual_shape, expand's times,
# crop_tensor's shape): the shapes known when the program is built and the values.
# Prints {case: [build-time shapes, [[shape, values], ...]] or ["error", type]}.
import json
import sys

import numpy as np
import paddle.fluid as fluid
import paddle.fluid.layers as L

report = {}


def run(name, build, feed=None):
    main, start = fluid.Program(), fluid.Program()
    try:
        with fluid.program_guard(main, start):
            x = L.data("x", [2, 3, 4], dtype="float32", append_batch_size=False)
            outs = build(x)
            shapes = [list(o.shape) for o in outs]
        exe = fluid.Executor(fluid.CPUPlace())
        exe.run(start)
        res = exe.run(main, feed={"x": np.arange(24, dtype="float32").reshape(2, 3, 4)}, fetch_list=outs)
        report[name] = [shapes, [[list(r.shape), np.round(r.astype("float64").ravel(), 4).tolist()] for r in res]]
    except Exception as e:  # noqa: BLE001
        report[name] = ["error", type(e).__name__]


def c(v, dt="int32"):
    return L.fill_constant([1], dt, v)


run("reshape_0_-1", lambda x: [L.reshape(x, [0, -1]), L.reshape(x, [-1, 0, 2])])
run("reshape_var", lambda x: [L.reshape(x, [c(4), -1]), L.reshape(x, shape=L.assign(np.array([3, 8], "int32")))])
run("reshape_actual", lambda x: [L.reshape(x, [4, 6], actual_shape=L.assign(np.array([6, 4], "int32")))])
run("expand_var", lambda x: [L.expand(x, [c(2), 1, 1]), L.expand(x, L.assign(np.array([1, 2, 1], "int32")))])
run("split_-1", lambda x: list(L.split(x, [1, -1], dim=2)) + list(L.split(x, 3, dim=-2)))
run("split_var_dim", lambda x: list(L.split(x, 2, dim=c(2))))
run("concat_var_axis", lambda x: [L.concat([x, x], axis=c(1)), L.concat([x, x], axis=-1)])
run(
    "slice_var",
    lambda x: [
        L.slice(x, axes=[1, 2], starts=[c(1), 0], ends=[3, c(2)]),
        L.slice(x, axes=[2], starts=L.assign(np.array([1], "int32")), ends=L.assign(np.array([3], "int32"))),
    ],
)
run("strided_var", lambda x: [L.strided_slice(x, [2], [c(0)], [c(4)], [c(2)])])
run("unsqueeze_neg", lambda x: [L.unsqueeze(x, [-1]), L.unsqueeze(x, [0, -1]), L.unsqueeze(x, axes=[c(1)])])
run("one_hot_var", lambda x: [fluid.one_hot(L.cast(L.slice(x, [2], [0], [1]), "int64"), depth=c(30))])
run("crop_var", lambda x: [L.crop_tensor(x, shape=[1, c(2), 2], offsets=[0, c(1), 1])])
run("stack_unstack", lambda x: [L.stack([x, x], axis=-1)] + L.unstack(x, axis=-2))
run("transpose_neg", lambda x: [L.transpose(x, [2, 0, 1])])
run("flatten", lambda x: [L.flatten(x, 0), L.flatten(x, 3)])
run("pad_var", lambda x: [L.pad(x, [0, 0, 1, 1, 0, 2])])
run("range_var", lambda x: [L.range(c(0, "float32"), c(5, "float32"), c(2, "float32"), "float32")])
run("assign_out", lambda x: [L.assign(x, L.create_tensor("float32"))])
run("sums_out", lambda x: [L.sums([x, x], out=L.create_tensor("float32"))])
run("fill_out", lambda x: [L.fill_constant([2], "float32", 1.0, out=L.create_tensor("float32"))])
run("argmax_kd", lambda x: [L.argmax(x, axis=1)])
run("cast_same", lambda x: [L.cast(x, "float32")])
run("split_sections_var", lambda x: list(L.split(x, [1, c(2), -1], dim=2)) + list(L.split(x, [c(1), 2], dim=1)))
run("split_var_all", lambda x: list(L.split(x, [c(2), c(1)], dim=c(1))))
run("unsqueeze_tensor", lambda x: [L.unsqueeze(x, L.assign(np.array([0, 2], "int32")))])
run("strided_tensor", lambda x: [L.strided_slice(x, [1, 2], L.assign(np.array([2, 3], "int32")), [0, 0], [-1, -2])])
run("split_errors_none", lambda x: list(L.split(x, [2, -1, 1], dim=-1)))


def grads(x):  # gradients through the Variable-argument forms
    x.stop_gradient = False
    a, b = L.split(x, [c(1), 2], dim=c(1))
    u = L.unsqueeze(a, [0, c(2)])
    s = L.strided_slice(b, [2], [c(1)], [4], [c(2)])
    cc = L.concat([a * 2, b], axis=c(1))
    loss = L.reduce_sum(u * u) + L.reduce_sum(s * 3) + L.reduce_sum(cc * x)
    return [loss] + fluid.gradients([loss], [x])


run("gradients", grads)
json.dump(report, sys.stdout, indent=1, sort_keys=True)
