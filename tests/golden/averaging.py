# Golden script: ExponentialMovingAverage (constant decay; an int64 thres_steps, whose warm-up fluid
# 1.8.5's integer division never applied; a float32 one; apply before any update), ModelAverage and
# Lookahead over five SGD steps: losses, the weight, and the weight and test loss under apply.
import json
import warnings

import numpy as np
import paddle.fluid as fluid

warnings.simplefilter("ignore")
res = {}
for kind in ("ema", "ema_int_thres", "ema_float_thres", "model_average", "lookahead"):
    main, start = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, start):
        x = fluid.data("x", [None, 3], "float32")
        w = np.linspace(-1, 1, 6).reshape(3, 2).astype("float32")
        w_attr = fluid.ParamAttr("w", initializer=fluid.initializer.NumpyArrayInitializer(w))
        h = fluid.layers.fc(x, 2, param_attr=w_attr, bias_attr=False)
        cost = fluid.layers.mean(fluid.layers.square(h - 0.3))
        test = main.clone(for_test=True)
        if kind == "lookahead":
            opt = fluid.optimizer.LookaheadOptimizer(fluid.optimizer.SGD(0.1), alpha=0.5, k=2)
            opt.minimize(cost, startup_program=start)
        else:
            fluid.optimizer.SGD(0.1).minimize(cost)
        if kind == "ema":
            avg = fluid.optimizer.ExponentialMovingAverage(0.9)
            avg.update()
        elif kind == "ema_int_thres":
            avg = fluid.optimizer.ExponentialMovingAverage(0.99, thres_steps=fluid.layers.autoincreased_step_counter())
            avg.update()
        elif kind == "ema_float_thres":
            steps = fluid.layers.cast(fluid.layers.autoincreased_step_counter(), "float32")
            avg = fluid.optimizer.ExponentialMovingAverage(0.99, thres_steps=steps)
            avg.update()
        elif kind == "model_average":
            avg = fluid.optimizer.ModelAverage(0.5, min_average_window=2, max_average_window=3)
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    out = []
    with fluid.scope_guard(scope):
        exe.run(start)
        if kind.startswith("ema"):
            with avg.apply(exe):
                out.append(np.array(scope.find_var("w").get_tensor()).ravel().tolist())
        for step in range(5):
            xv = np.linspace(-1, 1, 12).reshape(4, 3).astype("float32") * (step + 1)
            out.append(float(exe.run(main, feed={"x": xv}, fetch_list=[cost])[0][0]))
        out.append(np.array(scope.find_var("w").get_tensor()).ravel().tolist())
        if kind != "lookahead":
            with avg.apply(exe):
                out.append(float(exe.run(test, feed={"x": xv}, fetch_list=[cost])[0][0]))
                out.append(np.array(scope.find_var("w").get_tensor()).ravel().tolist())
            out.append(np.array(scope.find_var("w").get_tensor()).ravel().tolist())
    res[kind] = out
print(json.dumps(res))
