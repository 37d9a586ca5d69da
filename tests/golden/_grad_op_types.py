# Shared by grad_op_types*.py: builds mean(layer(x)) for a [4, 6] parameter x, appends the backward
# pass, and prints per layer the grad ops appended after the loss's seed and x's gradient (the
# layers' own parameters set from numpy), or "no gradient", or the error building it raised.
import json

import numpy as np
import paddle.fluid as fluid

VALUES = (np.arange(24, dtype="float32").reshape(4, 6) * 7 % 11 / 11 + 0.05).astype("float32")


def _grads(main, startup):
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    with fluid.scope_guard(scope):
        exe.run(startup)
        names = sorted(p.name for p in main.global_block().all_parameters() if p.name != "x")
        for k, n in enumerate(names):
            t = scope.find_var(n).get_tensor()
            value = np.random.RandomState(k).uniform(-0.5, 0.5, np.array(t).shape).astype("float32")
            t.set(value, fluid.CPUPlace())
        (g,) = exe.run(main, fetch_list=["x@GRAD"])
    return np.round(np.array(g).astype("float64").reshape(-1), 5).tolist()


def run(cases):
    out = {}
    for name, fn in cases.items():
        main, startup = fluid.Program(), fluid.Program()
        try:
            with fluid.program_guard(main, startup), fluid.unique_name.guard():
                init = fluid.initializer.NumpyArrayInitializer(VALUES)
                x = fluid.layers.create_parameter([4, 6], "float32", name="x", default_initializer=init)
                fluid.backward.append_backward(fluid.layers.mean(fn(x)))
            ops = [op.type for op in main.global_block().ops]
            i = ops.index("fill_constant", ops.index("mean")) if "mean" in ops else 0
            has_grad = main.global_block().has_var("x@GRAD")
            out[name] = [ops[i + 1 :], _grads(main, startup) if has_grad else "no gradient"]
        except Exception as e:  # noqa: BLE001
            out[name] = ["error", type(e).__name__]
    print(json.dumps(out, sort_keys=True))
