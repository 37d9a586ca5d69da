# Golden script: softmax, softmax_with_cross_entropy and cross_entropy where logits are far apart or a
# probability is 0 or inf: fluid's softmax clips the logits minus their maximum at -64, its cross
# entropy clips log at +-1e20 (so 0 * log 0 is 0 with soft labels), its MatchX is 0 for ignored rows.
# Values and gradients, float32 and float64, and one SGD step that stays finite.
import json

import numpy as np
import paddle.fluid as fluid

LOGITS = np.array([[0.0, 200.0, 0.5], [-100.0, 100.0, 0.8], [0.2, 0.3, 0.5], [-30.0, 40.0, 0.0]], "float32")
PROBS = np.array([[0.0, 0.5, 0.5], [0.2, 0.3, 0.5], [np.inf, 0.1, 0.8], [0.25, 0.25, 0.5]], "float32")
HARD = np.array([[0], [1], [0], [-1]], "int64")
SOFT = np.array([[0.0, 0.5, 0.5], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.5, 0.0, 0.5]], "float32")

main, startup = fluid.Program(), fluid.Program()
fetch, names = [], []


def add(name, var):
    names.append(name)
    fetch.append(var)


with fluid.program_guard(main, startup):
    for dtype in ("float32", "float64"):
        x = fluid.data("x_" + dtype, [None, 3], dtype)
        x.stop_gradient = False
        label = fluid.data("hard_" + dtype, [None, 1], "int64")
        soft = fluid.data("soft_" + dtype, [None, 3], dtype)
        sm = fluid.layers.softmax(x)
        sm0 = fluid.layers.softmax(x, axis=0)
        add("softmax " + dtype, sm)
        add("softmax axis 0 " + dtype, sm0)
        w = fluid.layers.cast(fluid.layers.assign(np.array([[1.0, 2.0, 3.0]] * 4, "float32")), dtype)
        (gs,) = fluid.backward.gradients([fluid.layers.reduce_sum(sm * w)], [x])
        add("softmax grad " + dtype, gs)
        hard_loss, hard_sm = fluid.layers.softmax_with_cross_entropy(x, label, ignore_index=-1, return_softmax=True)
        soft_loss = fluid.layers.softmax_with_cross_entropy(x, soft, soft_label=True)
        (gh,) = fluid.backward.gradients([fluid.layers.reduce_sum(hard_loss)], [x])
        (gso,) = fluid.backward.gradients([fluid.layers.reduce_sum(soft_loss)], [x])
        add("swce hard loss " + dtype, hard_loss)
        add("swce hard softmax " + dtype, hard_sm)
        add("swce hard grad " + dtype, gh)
        add("swce soft loss " + dtype, soft_loss)
        add("swce soft grad " + dtype, gso)
        ce = fluid.layers.cross_entropy(sm, label, ignore_index=-1)
        (gce,) = fluid.backward.gradients([fluid.layers.reduce_sum(ce)], [x])
        add("softmax + cross_entropy loss " + dtype, ce)
        add("softmax + cross_entropy grad " + dtype, gce)
        p = fluid.data("p_" + dtype, [None, 3], dtype)
        p.stop_gradient = False
        ce_hard = fluid.layers.cross_entropy(p, label, ignore_index=-1)
        ce_soft = fluid.layers.cross_entropy(p, soft, soft_label=True)
        (gph,) = fluid.backward.gradients([fluid.layers.reduce_sum(ce_hard)], [p])
        (gps,) = fluid.backward.gradients([fluid.layers.reduce_sum(ce_soft)], [p])
        match = [op for op in main.global_block().ops if op.type == "cross_entropy2"][-1].output("MatchX")[0]
        add("cross_entropy hard " + dtype, ce_hard)
        add("cross_entropy hard MatchX " + dtype, main.global_block().var(match))
        add("cross_entropy hard grad " + dtype, gph)
        add("cross_entropy soft " + dtype, ce_soft)
        add("cross_entropy soft grad " + dtype, gps)

exe = fluid.Executor(fluid.CPUPlace())
exe.run(startup)
feed = {}
for dtype in ("float32", "float64"):
    feed.update({"x_" + dtype: LOGITS.astype(dtype), "hard_" + dtype: HARD, "soft_" + dtype: SOFT.astype(dtype)})
    feed["p_" + dtype] = PROBS.astype(dtype)
values = exe.run(main, feed=feed, fetch_list=fetch)
out = {n: np.asarray(v).astype("float64").tolist() for n, v in zip(names, values)}

# one SGD step of a classifier whose logits are hundreds apart: the loss and the new weights stay finite
train, start2 = fluid.Program(), fluid.Program()
with fluid.program_guard(train, start2):
    img = fluid.data("img", [None, 4], "float32")
    lab = fluid.data("lab", [None, 1], "int64")
    pred = fluid.layers.fc(
        img, 3, act="softmax", param_attr=fluid.ParamAttr(name="fc_w", initializer=fluid.initializer.Constant(0.0))
    )
    loss = fluid.layers.mean(fluid.layers.cross_entropy(pred, lab))
    fluid.optimizer.SGD(0.1).minimize(loss)
exe.run(start2)
scope = fluid.global_scope()
scope.find_var("fc_w").get_tensor().set(np.array([[100.0, -100.0, 0.0]] * 4, "float32"), fluid.CPUPlace())
batch = {"img": np.ones((2, 4), "float32"), "lab": np.array([[1], [2]], "int64")}
first = exe.run(train, feed=batch, fetch_list=[loss])
second = exe.run(train, feed=batch, fetch_list=[loss])
out["train losses"] = [float(first[0][0]), float(second[0][0])]
out["train weights"] = np.array(scope.find_var("fc_w").get_tensor()).astype("float64").tolist()

# the same in dygraph mode: softmax + cross_entropy and softmax_with_cross_entropy, values and gradients
with fluid.dygraph.guard(fluid.CPUPlace()):
    for name in ("dygraph softmax + cross_entropy", "dygraph swce"):
        logits = fluid.dygraph.to_variable(LOGITS)
        logits.stop_gradient = False
        label = fluid.dygraph.to_variable(np.array([[0], [1], [0], [2]], "int64"))
        if name == "dygraph swce":
            loss = fluid.layers.softmax_with_cross_entropy(logits, label)
        else:
            loss = fluid.layers.cross_entropy(fluid.layers.softmax(logits), label)
        fluid.layers.reduce_sum(loss).backward()
        out[name] = [loss.numpy().astype("float64").tolist(), logits.gradient().astype("float64").tolist()]
print(json.dumps(out))
