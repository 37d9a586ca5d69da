# Golden script: three steps of a small embedding + MLP under the optimizers' options at their edges:
# gradient clips (by value / norm / global norm, need_clip, set_gradient_clip on all parameters),
# parameter regularizers over the optimizer's, dense regularizers on sparse gradients, per-parameter
# learning rates, frozen parameters, sparse updates (lazy Adam, Adagrad, RMSProp, Nesterov, Lamb),
# LARS with weight decay and zero-initialised biases, DPSGD without noise.
# Prints {case: [losses, {parameter: values}]} or {case: ["error", type, last line]}.
import json
import sys
import warnings

import numpy as np
import paddle.fluid as fluid
import paddle.fluid.layers as L

warnings.simplefilter("ignore")
O, R, C = fluid.optimizer, fluid.regularizer, fluid.clip
report = {}


def run(name, make_opt, attrs=None, sparse=False, pre=None, steps=3):
    main, start = fluid.Program(), fluid.Program()
    try:
        with fluid.program_guard(main, start):
            with fluid.unique_name.guard():
                x = L.data("x", [4, 3], dtype="float32", append_batch_size=False)
                ids = L.data("ids", [4, 1], dtype="int64", append_batch_size=False)
                e = L.embedding(
                    ids,
                    [6, 3],
                    is_sparse=sparse,
                    param_attr=fluid.ParamAttr(
                        name="emb",
                        initializer=fluid.initializer.NumpyArrayInitializer(
                            np.sin(np.arange(18)).reshape(6, 3).astype("float32")
                        ),
                    ),
                )
                a = attrs or {}
                h = L.fc(
                    x + e,
                    5,
                    act="tanh",
                    param_attr=fluid.ParamAttr(
                        name="w1",
                        initializer=fluid.initializer.NumpyArrayInitializer(
                            np.cos(np.arange(15)).reshape(3, 5).astype("float32")
                        ),
                        **a.get("w1", {}),
                    ),
                    bias_attr=fluid.ParamAttr(name="b1", **a.get("b1", {})),
                )
                y = L.fc(
                    h,
                    1,
                    param_attr=fluid.ParamAttr(
                        name="w2",
                        initializer=fluid.initializer.NumpyArrayInitializer(
                            np.sin(np.arange(5) + 1.0).reshape(5, 1).astype("float32")
                        ),
                        **a.get("w2", {}),
                    ),
                    bias_attr=fluid.ParamAttr(name="b2"),
                )
                loss = L.reduce_mean(L.square(y - 1.0))
                if pre:
                    pre()
                opt = make_opt()
                opt.minimize(loss)
        exe = fluid.Executor(fluid.CPUPlace())
        exe.run(start)
        feed = {
            "x": np.linspace(-1, 1, 12).reshape(4, 3).astype("float32"),
            "ids": np.array([[1], [3], [1], [5]], "int64"),
        }
        ls = []
        for _ in range(steps):
            (l,) = exe.run(main, feed=feed, fetch_list=[loss])
            ls.append(round(float(l), 5))
        sc = fluid.global_scope()
        ws = {
            n: np.round(np.array(sc.find_var(n).get_tensor()).astype("float64").ravel(), 5).tolist()
            for n in ["emb", "w1", "b1", "w2"]
        }
        report[name] = [ls, ws]
    except Exception as e:
        report[name] = ["error", type(e).__name__, [m for m in str(e).splitlines() if m.strip()][-1]]


run("clip_value", lambda: O.SGD(0.5, grad_clip=C.GradientClipByValue(0.05)))
run("clip_value_min", lambda: O.SGD(0.5, grad_clip=C.GradientClipByValue(0.05, -0.01)))
run("clip_norm", lambda: O.SGD(0.5, grad_clip=C.GradientClipByNorm(0.1)))
run("clip_global", lambda: O.SGD(0.5, grad_clip=C.GradientClipByGlobalNorm(0.1)))
run("clip_global_sparse", lambda: O.SGD(0.5, grad_clip=C.GradientClipByGlobalNorm(0.1)), sparse=True)
run("clip_value_sparse", lambda: O.SGD(0.5, grad_clip=C.GradientClipByValue(0.01)), sparse=True)
run(
    "param_reg_over_opt",
    lambda: O.SGD(0.5, regularization=R.L2Decay(0.5)),
    attrs={"w1": {"regularizer": R.L1Decay(0.1)}},
)
run("l2_sparse", lambda: O.SGD(0.5, regularization=R.L2Decay(0.5)), sparse=True)
run("l1_sparse", lambda: O.Momentum(0.5, 0.9, regularization=R.L1Decay(0.1)), sparse=True)
run("param_lr", lambda: O.Adam(0.1), attrs={"w1": {"learning_rate": 0.1}, "w2": {"learning_rate": 3.0}})
run("not_trainable", lambda: O.Adam(0.1), attrs={"w1": {"trainable": False}})
run("adam_lazy", lambda: O.Adam(0.1, lazy_mode=True), sparse=True)
run("adam_sparse", lambda: O.Adam(0.1), sparse=True)
run("adagrad_sparse", lambda: O.Adagrad(0.1), sparse=True)
run("rmsprop_sparse", lambda: O.RMSProp(0.1), sparse=True)
run("momentum_nesterov_sparse", lambda: O.Momentum(0.1, 0.9, use_nesterov=True), sparse=True)
run("lamb", lambda: O.Lamb(0.1, lamb_weight_decay=0.1, exclude_from_weight_decay_fn=lambda p: p.name.startswith("b")))
run("lamb_sparse", lambda: O.Lamb(0.1), sparse=True)
run("lars_wd", lambda: O.LarsMomentum(0.1, 0.9, lars_weight_decay=0.1))
run("dpsgd", lambda: O.Dpsgd(0.1, clip=10.0, batch_size=1.0, sigma=0.0))
run(
    "clip_and_reg",
    lambda: O.Momentum(0.5, 0.9, regularization=R.L2Decay(0.1), grad_clip=C.GradientClipByGlobalNorm(0.2)),
)
run("clip_global_group", lambda: O.SGD(0.5, grad_clip=C.GradientClipByGlobalNorm(0.1, group_name="g")))
run("clip_need_clip", lambda: O.SGD(0.5, grad_clip=C.GradientClipByGlobalNorm(0.1, need_clip=lambda p: p.name == "w1")))
run("set_gradient_clip_all", lambda: O.SGD(0.5), pre=lambda: C.set_gradient_clip(C.GradientClipByNorm(0.05)))
run(
    "set_gradient_clip_and_grad_clip",
    lambda: O.SGD(0.5, grad_clip=C.GradientClipByValue(0.01)),
    pre=lambda: C.set_gradient_clip(C.GradientClipByNorm(0.05)),
)
run("need_clip_not_callable", lambda: O.SGD(0.5, grad_clip=C.GradientClipByNorm(0.1, need_clip=True)))
run("clip_value_min_over_max", lambda: O.SGD(0.5, grad_clip=C.GradientClipByValue(0.01, 0.02)))
run("lars_zero_bias", lambda: O.LarsMomentum(0.5, 0.5))
json.dump(report, sys.stdout, indent=1, sort_keys=True)
