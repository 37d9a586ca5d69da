# Golden script: normalization and dropout layers trained three SGD steps (losses, the persistable
# parameters and running statistics after them, and the for_test clone's output): batch_norm with
# momentum / act / use_global_stats / NHWC / named parameters, inplace_abn, dropout, layer_norm,
# instance_norm, group_norm. A batch_norm or dropout with is_test=True in a program that trains
# failed in fluid 1.8.5 (recorded as an error). Prints a JSON report.
import json

import numpy as np
import paddle.fluid as fluid

L = fluid.layers
res = {}
X = np.random.RandomState(0).uniform(-1, 2, (4, 3, 5, 5)).astype("float32")


def run(key, build, steps=3, test=False):
    try:
        res[key] = trained(build, steps, test)
    except Exception as e:
        res[key] = ["error", type(e).__name__]


def trained(build, steps, test):
    main, start = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, start):
        x = fluid.data("x", [None, 3, 5, 5], "float32")
        x.stop_gradient = False
        y = build(x)
        loss = L.reduce_mean(L.square(y))
        fluid.optimizer.SGD(0.1).minimize(loss)
    scope = fluid.Scope()
    exe = fluid.Executor(fluid.CPUPlace())
    with fluid.scope_guard(scope):
        exe.run(start)
        out = []
        for i in range(steps):
            l, yy = exe.run(main, feed={"x": X + i}, fetch_list=[loss, y])
            out.append(round(float(np.array(l).reshape(-1)[0]), 5))
        pers = {
            v.name: np.round(
                np.array(scope.find_var(v.name).get_tensor()).reshape(-1)[:4].astype("float64"), 5
            ).tolist()
            for v in main.list_vars()
            if v.persistable and scope.find_var(v.name) is not None and "learning_rate" not in v.name
        }
        if test:
            tp = main.clone(for_test=True)
            t = exe.run(tp, feed={"x": X}, fetch_list=[y.name])[0]
            out.append(np.round(np.array(t).reshape(-1)[:5].astype("float64"), 5).tolist())
    return [out, pers]


run("bn", lambda x: L.batch_norm(x), test=True)
run("bn_mom", lambda x: L.batch_norm(x, momentum=0.5, epsilon=1e-3), test=True)
run("bn_relu", lambda x: L.batch_norm(x, act="relu"), test=True)
run("bn_global", lambda x: L.batch_norm(x, use_global_stats=True), test=True)
run("bn_is_test", lambda x: L.batch_norm(x, is_test=True))
run("bn_nhwc", lambda x: L.batch_norm(L.transpose(x, [0, 2, 3, 1]), data_layout="NHWC"), test=True)
run(
    "bn_names",
    lambda x: L.batch_norm(x, moving_mean_name="mm", moving_variance_name="mv", param_attr="bw", bias_attr="bb"),
    test=True,
)
run("bn_nostat", lambda x: L.batch_norm(x, do_model_average_for_mean_and_var=False), test=True)
run("inplace_abn", lambda x: L.inplace_abn(x, act="leaky_relu"), test=True)
run("dropout_test", lambda x: L.dropout(x, 0.3, is_test=True))
run("dropout_upscale", lambda x: L.dropout(x, 0.0, dropout_implementation="upscale_in_train"))
run("layer_norm", lambda x: L.layer_norm(x, begin_norm_axis=2), test=True)
run("instance_norm", lambda x: L.instance_norm(x), test=True)
run("group_norm", lambda x: L.group_norm(x, 3, param_attr=fluid.ParamAttr(), bias_attr=fluid.ParamAttr()), test=True)
print(json.dumps(res, sort_keys=True))
