"""nce with a seed draws fluid 1.8.5's negatives for each sampler (uniform and log-uniform from a
std::mt19937_64, the custom distribution by its alias tables from a std::mt19937), the same in
every run; costs and the mean loss of two SGD steps; the custom distribution's three parameters and
the startup ops filling them; sampled_softmax_with_cross_entropy's classes (one log-uniform draw of
distinct classes shared by the batch), probabilities and losses of two steps. (fluid's nce layer
prints a line about sparse mode while building: kept off stdout.)"""

import io
import json
import sys

import numpy as np
import paddle.fluid as fluid

out = {}
for sampler in ("uniform", "log_uniform", "custom_dist"):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [None, 4], "float32")
        y = fluid.data("y", [None, 1], "int64")
        kw = {}
        if sampler == "custom_dist":
            kw["custom_dist"] = [0.05, 0.1, 0.15, 0.2, 0.1, 0.1, 0.05, 0.05, 0.1, 0.1]
        old = sys.stdout
        sys.stdout = io.StringIO()
        cost = fluid.layers.nce(x, y, 10, num_neg_samples=4, sampler=sampler, seed=3, **kw)
        sys.stdout = old
        loss = fluid.layers.mean(cost)
        fluid.optimizer.SGD(0.5).minimize(loss)
    op = [o for o in main.global_block().ops if o.type == "nce"][0]
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    exe.run(startup, scope=scope)
    w = main.global_block().var(op.input("Weight")[0])
    scope.find_var(w.name).get_tensor().set(
        np.random.RandomState(0).uniform(-1, 1, (10, 4)).astype("float32"), fluid.CPUPlace()
    )
    feed = {
        "x": np.random.RandomState(1).uniform(-1, 1, (3, 4)).astype("float32"),
        "y": np.array([[1], [2], [3]], "int64"),
    }
    r = [exe.run(main, feed=feed, fetch_list=[op.output("SampleLabels")[0], cost, loss], scope=scope) for _ in range(2)]
    out[sampler] = [[np.round(np.asarray(v), 5).tolist() for v in rr] for rr in r]
    out[sampler + "_params"] = [[p.name, list(p.shape)] for p in main.global_block().all_parameters()]
    out[sampler + "_startup"] = [o.type for o in startup.global_block().ops]
main, startup = fluid.Program(), fluid.Program()
with fluid.program_guard(main, startup):
    x = fluid.data("x", [None, 6], "float32")
    y = fluid.data("y", [None, 1], "int64")
    logits = fluid.layers.fc(x, 20, param_attr=fluid.ParamAttr(initializer=fluid.initializer.Uniform(-1, 1, seed=4)))
    loss = fluid.layers.sampled_softmax_with_cross_entropy(logits, y, num_samples=5, seed=3)
    avg = fluid.layers.mean(loss)
    fluid.optimizer.SGD(0.5).minimize(avg)
op = [o for o in main.global_block().ops if o.type == "sample_logits"][0]
exe = fluid.Executor(fluid.CPUPlace())
exe.run(startup)
feed = {"x": np.random.RandomState(0).uniform(-1, 1, (3, 6)).astype("float32"), "y": np.array([[1], [7], [3]], "int64")}
out["sampled_softmax"] = [
    [
        np.round(np.asarray(v).astype("float64"), 5).tolist()
        for v in exe.run(
            main, feed=feed, fetch_list=[op.output("Samples")[0], op.output("Probabilities")[0], loss, avg]
        )
    ]
    for _ in range(2)
]
print(json.dumps(out))
