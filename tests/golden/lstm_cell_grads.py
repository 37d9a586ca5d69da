"""dynamic_lstm's gradient as fluid 1.8.5 computed it: its lstm_grad reads the Hidden output's
gradient only, so a loss of the Cell output alone appends no lstm_grad, and one of both (or an fc
over [hidden, cell], as the book's semantic-role model builds) differentiates the hidden part only.
Grad op list and the gradients of the input and parameters per loss; lstmp's grad op's slots."""

import json

import numpy as np
import paddle.fluid as fluid
from _golden import flat, set_params

out = {}
place = fluid.CPUPlace()
for mode in ("hidden", "cell", "both", "cell_scaled"):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [None, 8], "float32", lod_level=1)
        x.stop_gradient = False
        h, c = fluid.layers.dynamic_lstm(
            x, size=8, candidate_activation="relu", gate_activation="sigmoid", cell_activation="sigmoid"
        )
        if mode == "hidden":
            loss = fluid.layers.reduce_sum(h * h)
        elif mode == "cell":
            loss = fluid.layers.reduce_sum(c * c)
        elif mode == "both":
            loss = fluid.layers.reduce_sum(h * h) + fluid.layers.reduce_sum(c * c)
        else:
            loss = fluid.layers.reduce_sum(fluid.layers.fc([h, c], 3))
        gs = fluid.gradients(loss, [x] + main.global_block().all_parameters())
    exe = fluid.Executor(place)
    scope = fluid.Scope()
    with fluid.scope_guard(scope):
        exe.run(startup)
        set_params(main, scope)
        v = np.random.RandomState(1).uniform(-1, 1, (5, 8)).astype("float32")
        got = exe.run(
            main,
            feed={"x": fluid.create_lod_tensor(v, [[2, 3]], place)},
            fetch_list=[g for g in gs if g is not None],
            return_numpy=False,
        )
        out[mode] = [[op.type for op in main.global_block().ops]] + [flat(t)[:12] for t in got]
main, startup = fluid.Program(), fluid.Program()
with fluid.program_guard(main, startup):
    x = fluid.data("x", [None, 8], "float32", lod_level=1)
    x.stop_gradient = False
    h, c = fluid.layers.dynamic_lstm(x, size=8)
    p, pc = fluid.layers.dynamic_lstmp(x, size=8, proj_size=4)
    loss = fluid.layers.reduce_sum(h * h) + fluid.layers.reduce_sum(c * c) + fluid.layers.reduce_sum(p)
    fluid.backward.append_backward(loss + fluid.layers.reduce_sum(pc))
out["grad_ops"] = [
    [op.type, sorted(k for k in op.input_names if k.endswith("@GRAD") and op.input(k))]
    for op in main.global_block().ops
    if op.type.endswith("_grad") or op.type == "sum"
]
print(json.dumps(out))
