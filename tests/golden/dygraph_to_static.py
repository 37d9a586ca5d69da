# dygraph_to_static_func built into static programs: Python if / while on Variables (fluid 1.8.5
# translated them into cond and while ops), loops that break and continue, `and` / `not` in a
# condition, a branch assigning a variable first defined before it, a condition on a plain Python
# value, a loop counting with a Variable; the values for inputs that take each path.
import json

import numpy as np
import paddle.fluid as fluid
from paddle.fluid.dygraph import dygraph_to_static_func


@dygraph_to_static_func
def branch(x):
    if fluid.layers.reduce_mean(x) > 0:
        y = x * 2.0
    else:
        y = x - 1.0
    return y


@dygraph_to_static_func
def branch_no_else(x):
    y = x + 1.0
    if fluid.layers.reduce_sum(x) < 0:
        y = y * 3.0
    return y


@dygraph_to_static_func
def loop(x, n):
    i = fluid.layers.fill_constant([1], "int64", 0)
    while i < n:
        x = x * 2.0
        i = i + 1
    return x


@dygraph_to_static_func
def both(x):
    s = fluid.layers.reduce_sum(x)
    if s > 0 and s < 10:
        x = x + 100.0
    if not (s > 0):
        x = x - 100.0
    return x


@dygraph_to_static_func
def with_break(x):
    i = fluid.layers.fill_constant([1], "int64", 0)
    while i < 10:
        x = x * 2.0
        if fluid.layers.reduce_sum(x) > 20:
            break
        i = i + 1
    return x + fluid.layers.cast(i, "float32")


@dygraph_to_static_func
def with_continue(x):
    i = fluid.layers.fill_constant([1], "int64", 0)
    total = fluid.layers.fill_constant([1], "float32", 0.0)
    while i < 5:
        i = i + 1
        if fluid.layers.reduce_sum(x * fluid.layers.cast(i, "float32")) < 6:
            continue
        total = total + fluid.layers.cast(i, "float32")
    return total


@dygraph_to_static_func
def python_condition(x, k):
    if k > 1:
        x = x * k
    return x


out = {}
cases = {
    "branch": (branch, [np.array([1.0, 2.0], "float32")], [np.array([-3.0, 1.0], "float32")]),
    "with_break": (with_break, [np.array([1.0, 2.0], "float32")], [np.array([-1.0, 0.5], "float32")]),
    "with_continue": (with_continue, [np.array([1.0, 2.0], "float32")], [np.array([-1.0, 0.5], "float32")]),
    "branch_no_else": (branch_no_else, [np.array([1.0, 2.0], "float32")], [np.array([-3.0, 1.0], "float32")]),
    "loop": (
        loop,
        [np.array([1.0, 3.0], "float32"), np.array([3], "int64")],
        [np.array([2.0, 1.0], "float32"), np.array([0], "int64")],
    ),
    "both": (
        both,
        [np.array([1.0, 2.0], "float32")],
        [np.array([-3.0, 1.0], "float32")],
        [np.array([30.0, 1.0], "float32")],
    ),
}
exe = fluid.Executor(fluid.CPUPlace())
for name, (func, *feeds) in cases.items():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        ins = [fluid.data("in%d" % k, list(a.shape), str(a.dtype)) for k, a in enumerate(feeds[0])]
        result = func(*ins)
    exe.run(startup)
    out[name] = [
        np.array(exe.run(main, feed={"in%d" % k: a for k, a in enumerate(f)}, fetch_list=[result])[0]).tolist()
        for f in feeds
    ]
main, startup = fluid.Program(), fluid.Program()
with fluid.program_guard(main, startup):
    x = fluid.data("x", [2], "float32")
    r = python_condition(x, 3)
out["python_condition"] = np.array(
    exe.run(main, feed={"x": np.array([1.0, 2.0], "float32")}, fetch_list=[r])[0]
).tolist()
print(json.dumps(out, sort_keys=True))
