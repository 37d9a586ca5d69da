"""fluid.optimizer.RecomputeOptimizer as fluid 1.8.5 built it: an MLP with two checkpoints, its
backward pass recomputing each segment's forward ops (outputs renamed NAME.subprog_N) before that
segment's grad ops: the ops of the program, and 3 Adam steps from parameters set by numpy (losses and
parameters); and the ops when a segment holds a dropout (a seed op feeds it, so the recomputation draws the same mask).
Prints JSON; run under fluid 1.8.5 (tools/fluid18) it wrote recompute.json."""

import json

import numpy as np
import paddle.fluid as fluid
from _golden import set_params

L = fluid.layers
results = {}


def ops_of(prog):
    return [
        [op.type, {k: op.input(k) for k in op.input_names if op.input(k)},
         {k: op.output(k) for k in op.output_names if op.output(k)}]
        for op in prog.global_block().ops
    ]  # fmt: skip


def build(dropout):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data("x", [None, 6], "float32")
        y = fluid.data("y", [None, 1], "int64")
        h1 = L.fc(x, 8, act="relu")
        h2 = L.fc(h1, 8, act="tanh")
        if dropout:
            h2 = L.dropout(h2, 0.3)
        h3 = L.fc(h2, 8, act="relu")
        h4 = L.fc(h3, 5, act="sigmoid")
        logits = L.fc(h4, 3)
        loss = L.mean(L.softmax_with_cross_entropy(logits, y))
        opt = fluid.optimizer.RecomputeOptimizer(fluid.optimizer.Adam(0.05))
        opt._set_checkpoints([h1, h3])
        opt.minimize(loss)
    return main, startup, loss


main, startup, loss = build(False)
results["ops"] = ops_of(main)
exe = fluid.Executor(fluid.CPUPlace())
scope = fluid.Scope()
rng = np.random.RandomState(0)
steps = []
with fluid.scope_guard(scope):
    exe.run(startup)
    params = sorted(p.name for p in main.global_block().all_parameters())
    set_params(main, scope)
    for _ in range(3):
        feed = {"x": rng.uniform(-1, 1, (4, 6)).astype("float32"), "y": rng.randint(0, 3, (4, 1)).astype("int64")}
        steps.append(np.round(np.array(exe.run(main, feed=feed, fetch_list=[loss])[0], "float64"), 6).tolist())
    end = [np.round(np.array(scope.find_var(p).get_tensor()).astype("float64"), 6).tolist() for p in params]
results["params"], results["losses"], results["end"] = params, steps, end
results["dropout_ops"] = ops_of(build(True)[0])
print(json.dumps(results, sort_keys=True))
