# Golden script: tensor ops at their edges: ties in argmax / argmin / argsort, cumsum with and
# without an axis, negative reduce dims, unique order, scatter with repeated indices, range and
# linspace bounds, where, isfinite, eye, l2_normalize's epsilon, strided_slice with a negative
# stride, integer division and remainder of negative numbers, casts out of range.
# Prints {case: [[dtype, shape, values], ...] or ["error", last line of the message]}.
import json
import sys

import numpy as np
import paddle.fluid as fluid
import paddle.fluid.layers as L

report = {}


def run(name, build, feed):
    main, start = fluid.Program(), fluid.Program()
    try:
        with fluid.program_guard(main, start):
            outs = build()
        exe = fluid.Executor(fluid.CPUPlace())
        exe.run(start)
        res = exe.run(main, feed=feed, fetch_list=outs)
        report[name] = [[str(r.dtype), list(r.shape), np.round(r.astype("float64"), 5).tolist()] for r in res]
    except Exception as e:  # noqa: BLE001
        report[name] = ["error", [m for m in str(e).strip().splitlines() if m.strip()][-1]]


XT = np.array([[1, 3, 3, 2], [5, 5, 1, 5], [0, 0, 0, 0]], "float32")


def x():
    return L.data("x", [3, 4], dtype="float32", append_batch_size=False)


def ints(name, n, dtype="int64"):
    return L.data(name, [n], dtype=dtype, append_batch_size=False)


F = {"x": XT}
run("arg_ties", lambda: [L.argmax(x(), axis=1), L.argmin(x(), axis=1), L.argmax(x(), axis=-1), L.argmax(x(), 0)], F)
run(
    "argsort_ties",
    lambda: list(L.argsort(x(), axis=1)) + list(L.argsort(x(), axis=1, descending=True)) + list(L.argsort(x(), 0)),
    F,
)
run(
    "cumsum",
    lambda: [
        L.cumsum(x(), axis=1),
        L.cumsum(x(), axis=1, exclusive=True),
        L.cumsum(x(), axis=1, reverse=True),
        L.cumsum(x(), axis=1, exclusive=True, reverse=True),
        L.cumsum(x()),
        L.cumsum(x(), axis=0),
    ],
    F,
)
run(
    "reduce_dims",
    lambda: [
        L.reduce_sum(x(), dim=-1),
        L.reduce_mean(x(), dim=[0], keep_dim=True),
        L.reduce_max(x(), dim=None, keep_dim=True),
        L.reduce_prod(x(), dim=1),
        L.reduce_min(x(), dim=-2),
    ],
    F,
)
U = {"u": np.array([3, 1, 3, 2, 1, 7], "int64")}
run("unique", lambda: list(L.unique(ints("u", 6))), U)
run("unique_with_counts", lambda: list(L.unique_with_counts(ints("u", 6))), U)
run("one_hot_allow", lambda: [fluid.one_hot(ints("i", 3), 4, allow_out_of_range=True)], {"i": np.array([0, 3, 4])})
SC = {"x": XT, "i": np.array([1, 1, 0], "int64"), "u": np.arange(12, dtype="float32").reshape(3, 4)}


def upd():
    return L.data("u", [3, 4], dtype="float32", append_batch_size=False)


run(
    "scatter_repeated",
    lambda: [L.scatter(x(), ints("i", 3), upd()), L.scatter(x(), ints("i", 3), upd(), overwrite=False)],
    SC,
)
SN = dict(SC, i=SC["i"].reshape(3, 1))
run(
    "scatter_nd_add_repeated",
    lambda: [L.scatter_nd_add(x(), L.data("i", [3, 1], dtype="int64", append_batch_size=False), upd())],
    SN,
)
run(
    "range_linspace",
    lambda: [
        L.range(0, 1, 0.3, "float32"),
        L.range(5, 0, -2, "int64"),
        L.linspace(0, 1, 4, "float32"),
        L.linspace(0, 1, 1, "float64"),
    ],
    {},
)
run(
    "where",
    lambda: [L.where(L.data("b", [2, 3], dtype="bool", append_batch_size=False))],
    {"b": np.array([[True, False, True], [False, False, True]])},
)
N = {"n": np.array([1, np.inf, 2, 3], "float32")}


def nv():
    return L.data("n", [4], dtype="float32", append_batch_size=False)


run("finite_checks", lambda: [L.isfinite(nv()), L.has_inf(nv()), L.has_nan(nv())], N)
run(
    "diag_eye",
    lambda: [
        L.diag(L.data("d", [3], dtype="float32", append_batch_size=False)),
        L.eye(2, 3),
        L.eye(2, batch_shape=[2]),
    ],
    {"d": np.array([1, 2, 3], "float32")},
)
run("l2_normalize", lambda: [L.l2_normalize(x(), axis=1), L.l2_normalize(x(), axis=0, epsilon=1e-3)], F)
run(
    "strided_slice",
    lambda: [
        L.strided_slice(x(), axes=[1], starts=[-1], ends=[-5], strides=[-1]),
        L.strided_slice(x(), axes=[0, 1], starts=[0, 1], ends=[10, 100], strides=[2, 2]),
    ],
    F,
)
run("slice_clamped", lambda: [L.slice(x(), axes=[1], starts=[-3], ends=[-1]), L.slice(x(), [1], [1], [10000])], F)
XV, YV = np.array([7, -7, 7, -7, 3, 0]), np.array([2, 2, -2, -2, 5, 3])
for dt in ["int32", "int64", "float32"]:
    D = {"a": XV.astype(dt), "b": YV.astype(dt)}

    def ab(dt=dt):
        return ints("a", 6, dt), ints("b", 6, dt)

    run(
        "arith_" + dt,
        lambda: (
            [
                L.elementwise_div(*ab()),
                L.elementwise_mod(*ab()),
                L.elementwise_pow(*ab()),
                L.scale(ab()[0], scale=2.5, bias=0.5),
            ]
            + ([L.elementwise_floordiv(*ab())] if dt != "float32" else [])
        ),
        D,
    )
CASTS = ["int32", "int64", "uint8", "int8", "bool"]
run(
    "cast_out_of_range",
    lambda: [L.cast(L.data("f", [8], dtype="float32", append_batch_size=False), t) for t in CASTS],
    {"f": np.array([-2.7, -0.5, 0.5, 2.5, 255.9, 300.2, -1.0, 1e10], "float32")},
)
json.dump(report, sys.stdout, indent=1, sort_keys=True)
