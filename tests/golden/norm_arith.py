# batch_norm's and layer_norm's arithmetic: outputs of an is_test and a training batch_norm over 4-D
# and 2-D inputs and of a layer_norm, every float32 value printed in full (fluid 1.8.5 computed
# x * (inv * scale) + (bias - mean * inv * scale), and (x - mean) / sqrt(var + eps) * scale + bias,
# with a correctly rounded square root). Prints JSON.
import json
import sys

import numpy as np
import paddle.fluid as fluid

out = {}
for mode in ("test", "train"):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [None, 3, 4, 4], "float32")
        x2 = fluid.data("x2", [None, 3], "float32")
        kw = dict(moving_mean_name="mm", moving_variance_name="mv", param_attr="sc", bias_attr="bi")
        y = fluid.layers.batch_norm(x, is_test=mode == "test", **kw)
        y2 = fluid.layers.batch_norm(x2, is_test=mode == "test", **kw)
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    with fluid.scope_guard(scope):
        exe.run(startup)
        rng = np.random.RandomState(0)
        for n, v in (
            ("mm", rng.uniform(5, 10, 3)),
            ("mv", rng.uniform(0.01, 3, 3)),
            ("sc", rng.uniform(-2, 2, 3)),
            ("bi", rng.uniform(-1, 1, 3)),
        ):
            scope.find_var(n).get_tensor().set(v.astype("float32"), fluid.CPUPlace())
        feed = {
            "x": rng.uniform(0, 15, (2, 3, 4, 4)).astype("float32"),
            "x2": rng.uniform(0, 15, (5, 3)).astype("float32"),
        }
        a, b = exe.run(main, feed=feed, fetch_list=[y, y2])
    out[mode + "_4d"] = a.ravel().tolist()
    out[mode + "_2d"] = b.ravel().tolist()
main, startup = fluid.Program(), fluid.Program()
with fluid.program_guard(main, startup):
    x = fluid.data("x", [None, 6], "float32")
    c = fluid.initializer.Constant
    y = fluid.layers.layer_norm(
        x, param_attr=fluid.ParamAttr(initializer=c(1.3)), bias_attr=fluid.ParamAttr(initializer=c(0.2))
    )
exe = fluid.Executor(fluid.CPUPlace())
exe.run(startup)
rng = np.random.RandomState(0)
(ln,) = exe.run(main, feed={"x": rng.uniform(-5, 15, (4, 6)).astype("float32")}, fetch_list=[y])
out["layer_norm"] = ln.ravel().tolist()
json.dump(out, sys.stdout)
