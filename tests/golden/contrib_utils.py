"""fluid.contrib's optimizer extension and program tools as fluid 1.8.5 had them:
extend_with_decoupled_weight_decay (Adam and Momentum, a float and a Variable coefficient,
apply_decay_param_fun) over 4 steps; memory_usage of a CNN for two batch sizes; model_stat.summary's
table; and the errors. Prints JSON (the summary's table first); run under fluid 1.8.5
(tools/fluid18) it wrote contrib_utils.json."""

import contextlib
import io
import json

import numpy as np
import paddle.fluid as fluid
from _golden import errors_of
from paddle.fluid.contrib import extend_with_decoupled_weight_decay, memory_usage
from paddle.fluid.contrib.model_stat import summary

L = fluid.layers
results = {}


def train(base, coeff, decay_fun, **kw):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data("x", [None, 3], "float32")
        y = fluid.data("y", [None, 1], "float32")
        h = L.fc(x, 4, act="tanh", param_attr=fluid.ParamAttr(name="w1", initializer=fluid.initializer.Constant(0.3)))
        p = L.fc(h, 1, param_attr=fluid.ParamAttr(name="w2", initializer=fluid.initializer.Constant(-0.2)))
        loss = L.mean(L.square_error_cost(p, y))
        if coeff == "var":
            coeff = L.fill_constant([1], "float32", 0.05)
        opt = extend_with_decoupled_weight_decay(base)(coeff, apply_decay_param_fun=decay_fun, **kw)
        opt.minimize(loss)
    ops = [op.type for op in main.global_block().ops]
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    rng = np.random.RandomState(0)
    out = []
    with fluid.scope_guard(scope):
        exe.run(startup)
        for _ in range(4):
            feed = {"x": rng.rand(5, 3).astype("float32"), "y": rng.rand(5, 1).astype("float32")}
            got = exe.run(main, feed=feed, fetch_list=[loss, "w1", "w2", "fc_0.b_0"])
            out.append([np.round(np.array(g, "float64").ravel(), 6).tolist() for g in got])
    return {"ops": ops, "steps": out, "str": str(opt).split(":")[0]}


results["adamw"] = train(fluid.optimizer.Adam, 0.1, None, learning_rate=0.01)
results["momentumw"] = train(
    fluid.optimizer.Momentum, "var", lambda n: n.startswith("w"), learning_rate=0.1, momentum=0.9
)

main, startup = fluid.Program(), fluid.Program()
with fluid.program_guard(main, startup):
    img = fluid.data("img", [None, 3, 16, 16], "float32")
    c = L.conv2d(img, 8, 3, padding=1, act="relu")
    b = L.batch_norm(c)
    p = L.pool2d(b, 2, pool_stride=2)
    c2 = L.conv2d(p, 4, 3, groups=2, bias_attr=False)
    s = L.sigmoid(c2)
    f = L.fc(s, 10, act="softmax")
    loss = L.mean(L.cross_entropy(f, fluid.data("label", [None, 1], "int64")))
results["memory"] = [list(memory_usage(main, 1)), list(memory_usage(main, 32))]
buf = io.StringIO()
with contextlib.redirect_stdout(buf):
    summary(main)
results["summary"] = buf.getvalue()
results["errors"] = errors_of(
    (
        lambda: memory_usage(main, 0),
        lambda: memory_usage("main", 1),
        lambda: extend_with_decoupled_weight_decay(object),
        lambda: extend_with_decoupled_weight_decay(fluid.optimizer.SGD)(1, learning_rate=0.1),
    )
)
print(json.dumps(results, sort_keys=True))
