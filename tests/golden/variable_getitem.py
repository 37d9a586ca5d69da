"""Variable indexing as fluid 1.8.5 built it: x[int], x[-1], x[a:b], x[::-1], x[a:b:step], x[Variable],
mixed tuples, and shape(x)[0]: declared shapes, op types, values and the gradient through them.
Prints JSON; run under fluid 1.8.5 (tools/fluid18) it wrote variable_getitem.json."""

import json

import numpy as np
import paddle.fluid as fluid

L = fluid.layers
main, startup = fluid.Program(), fluid.Program()
with fluid.program_guard(main, startup):
    x = fluid.data("x", [4, None, 3], "float32")
    x.stop_gradient = False
    i = L.fill_constant([1], "int32", 2)
    outs = [x[1, 0], x[-1], x[:, 1:3], x[::-1], x[0:4:2], x[i], x[1:, -2:, ::-1], x[2:, 1], L.shape(x)[1]]
    weights = [L.fill_constant([1], "float32", float(k + 1)) for k in range(len(outs) - 1)]
    loss = L.sum([L.reduce_sum(o * w) for o, w in zip(outs[:-1], weights)])
    fluid.backward.append_backward(loss)
xv = np.arange(4 * 5 * 3, dtype="float32").reshape(4, 5, 3) / 10
got = fluid.Executor(fluid.CPUPlace()).run(main, feed={"x": xv}, fetch_list=outs + ["x@GRAD"])
ops = [op.type for op in main.global_block().ops if op.type in ("slice", "strided_slice", "reverse")]
print(
    json.dumps(
        {
            "shapes": [list(o.shape) for o in outs],
            "ops": ops,
            "values": [[list(np.shape(g))] + np.round(np.array(g, "float64").ravel(), 5).tolist() for g in got],
        },
        sort_keys=True,
    )
)
