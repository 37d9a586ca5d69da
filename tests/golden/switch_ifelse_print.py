# Golden script: Switch, IfElse (forward and gradients), Print (its text on stdout) and py_func (with a
# backward function); prints Print's text, then one JSON line: each block's ops with their slots,
# and values.
import json
import sys

import numpy as np
import paddle.fluid as fluid
import paddle.fluid.layers as L

out = {}
exe = fluid.Executor(fluid.CPUPlace())


def blocks(program):
    result = []
    for b in program.blocks:
        ops = []
        for op in b.ops:
            ins = {k: op.input(k) for k in op.input_names if op.input(k)}
            outs = {k: op.output(k) for k in op.output_names if op.output(k)}
            ops.append([op.type, ins, outs])
        result.append([b.idx, b.parent_idx, ops])
    return result


def values(vals):
    return [[str(np.asarray(v).dtype), np.round(np.asarray(v).astype("float64"), 6).tolist()] for v in vals]


# 1. Switch: a piecewise value chosen by the first case that holds
main, startup = fluid.Program(), fluid.Program()
with fluid.program_guard(main, startup):
    lr = L.create_global_var(shape=[1], value=0.0, dtype="float32", persistable=True, name="lr")
    zero = L.fill_constant([1], "float32", 0.0)
    one = L.fill_constant([1], "float32", 1.0)
    two = L.fill_constant([1], "float32", 2.0)
    step = fluid.data("step", [1], "float32")
    with L.Switch() as switch:
        with switch.case(L.less_than(step, one)):
            L.assign(zero, lr)
        with switch.case(L.less_than(step, two)):
            L.assign(one, lr)
        with switch.default():
            L.assign(two, lr)
exe.run(startup)
runs = [exe.run(main, feed={"step": np.array([s], "float32")}, fetch_list=[lr]) for s in (0.5, 1.5, 5.0)]
out["switch"] = {"blocks": blocks(main), "values": [values(r) for r in runs]}

# 2. IfElse over rows, with gradients
main, startup = fluid.Program(), fluid.Program()
with fluid.program_guard(main, startup):
    x = fluid.data("x", [None, 2], "float32")
    y = fluid.data("y", [None, 2], "float32")
    x.stop_gradient = False
    w = L.create_parameter([2, 2], "float32", name="w", default_initializer=fluid.initializer.Constant(0.5))
    cond = L.greater_than(L.reduce_sum(x, dim=1, keep_dim=True), L.fill_constant([1], "float32", 0.0))
    ie = L.IfElse(cond)
    with ie.true_block():
        a = ie.input(x)
        ie.output(L.matmul(a, w) + 1.0)
    with ie.false_block():
        a = ie.input(x)
        b = ie.input(y)
        ie.output(a * b - 1.0)
    merged = ie()
    loss = L.mean(merged[0])
    fluid.backward.append_backward(loss)
exe.run(startup)
xv = np.array([[1, 2], [-3, 1], [0.5, -2], [2, 2]], "float32")
yv = np.arange(8, dtype="float32").reshape(4, 2)
runs = [
    exe.run(main, feed={"x": v, "y": yv}, fetch_list=[merged[0], loss, "x@GRAD", "w@GRAD"])
    for v in (xv, np.abs(xv), -np.abs(xv))
]
out["ifelse"] = {"blocks": blocks(main), "values": [values(r) for r in runs], "shape": list(merged[0].shape)}

# 3. Print, forward and backward
main, startup = fluid.Program(), fluid.Program()
with fluid.program_guard(main, startup):
    x = fluid.data("x", [2, 3], "float32")
    x.stop_gradient = False
    p = L.Print(x, message="The content of x:")
    q = L.Print(L.cast(x, "int64"), summarize=2, print_tensor_name=False, print_phase="forward")
    r = L.Print(L.cast(x, "float64") * 0.1, print_tensor_type=False, print_tensor_shape=False)
    loss = L.mean(p * p)
    fluid.backward.append_backward(loss)
xv = np.array([[1, 2, 3], [4.5, -5, 6e-7]], "float32")
sys.stdout.flush()
got = exe.run(main, feed={"x": xv}, fetch_list=[loss, "x@GRAD", q, r])
sys.stdout.flush()
out["print"] = {"blocks": blocks(main), "values": values(got), "names": [p.name, q.name, r.name]}


# 4. py_func with a backward function, and one without
def tanh(a):
    return np.tanh(np.array(a))


def tanh_grad(y, dy):
    return np.array(dy) * (1 - np.square(np.array(y)))


def two(a, b):
    return np.array(a) + np.array(b), np.array(a) * 2


main, startup = fluid.Program(), fluid.Program()
with fluid.program_guard(main, startup):
    x = fluid.data("x", [2, 2], "float32")
    x.stop_gradient = False
    y = main.current_block().create_var(name="y", dtype="float32", shape=[2, 2])
    same = L.py_func(func=tanh, x=x, out=y, backward_func=tanh_grad, skip_vars_in_backward_input=x) is y
    o1 = main.current_block().create_var(name="o1", dtype="float32", shape=[2, 2])
    o2 = main.current_block().create_var(name="o2", dtype="float32", shape=[2, 2])
    listed = len(L.py_func(two, [y, x], [o1, o2]))
    loss = L.mean(y * 3.0) + L.mean(o1)
    fluid.backward.append_backward(loss)
xv = np.array([[0.1, -0.5], [1.0, 2.0]], "float32")
got = exe.run(main, feed={"x": xv}, fetch_list=[y, o1, o2, "x@GRAD"])
out["py_func"] = {"blocks": blocks(main), "values": values(got), "returns": [same, listed]}
print(json.dumps(out, sort_keys=True))
