# Shared by the layers_*.py golden scripts (run under fluid 1.8.5 and under fluidcompat alike): build
# each case on fed inputs, weight its output, take the gradients with respect to the inputs and print
# a summary of each value as JSON.
import json

import numpy as np
import paddle.fluid as fluid

L = fluid.layers


def weights(shape, seed):
    """A ParamAttr initialising a parameter of ``shape`` with seeded uniform values."""
    values = np.random.RandomState(seed).uniform(-0.5, 0.5, shape).astype("float32")
    return fluid.ParamAttr(initializer=fluid.initializer.NumpyArrayInitializer(values))


def summary(v):
    """Shape, sum, weighted sum and every 7th value: enough to tell two results apart."""
    flat = v.ravel().astype("float64")
    weights = np.cos(np.arange(flat.size))
    return [list(v.shape), float(flat.sum()), float((flat * weights).sum()), flat[::7].round(5).tolist()]


def run_cases(cases, inputs):
    """``cases``: name -> fn(*input variables); ``inputs``: name -> array (fed with its exact shape).
    Prints {name: [output shape, summary of the output, of each input's gradient]} or the error."""
    res = {}
    for name, fn in cases.items():
        main, start = fluid.Program(), fluid.Program()
        with fluid.program_guard(main, start):
            xs = []
            for key, value in inputs.items():
                var = fluid.data(key, list(value.shape), "float32")
                var.stop_gradient = False
                xs.append(var)
            try:
                out = fn(*xs)
            except Exception as e:  # noqa: BLE001
                res[name] = "BUILD " + type(e).__name__
                continue
            shape = [int(d) for d in out.shape]
            wts = L.assign(np.random.RandomState(99).uniform(-1, 1, shape).astype("float32"))
            grads = fluid.gradients([L.reduce_sum(out * wts)], xs)
        exe = fluid.Executor(fluid.CPUPlace())
        with fluid.scope_guard(fluid.Scope()):
            exe.run(start)
            try:
                fetch = [out] + [g for g in grads if g is not None]
                r = exe.run(main, feed=dict(inputs), fetch_list=fetch)
                res[name] = [list(out.shape)] + [summary(np.asarray(v)) for v in r]
            except Exception as e:  # noqa: BLE001
                res[name] = "RUN " + [line for line in str(e).splitlines() if line.strip()][-1][:200]
    print(json.dumps(res))
