# Golden script: four steps of each dense optimizer update and learning-rate schedule of fluid 1.8.5
# from the same weights and data: losses and the weight after them.
import json

import numpy as np
import paddle.fluid as fluid

O = fluid.optimizer
R = fluid.regularizer
cases = [
    ("adamax", lambda: O.Adamax(0.1)),
    ("adagrad", lambda: O.Adagrad(0.1, initial_accumulator_value=0.1)),
    ("decayed_adagrad", lambda: O.DecayedAdagrad(0.1)),
    ("adadelta", lambda: O.Adadelta(0.1)),
    ("rmsprop", lambda: O.RMSProp(0.1)),
    ("rmsprop_c", lambda: O.RMSProp(0.1, momentum=0.5, centered=True)),
    ("ftrl", lambda: O.Ftrl(0.1, l1=0.01, l2=0.01)),
    ("ftrl_pow", lambda: O.Ftrl(0.1, lr_power=-0.3)),
    ("lars", lambda: O.LarsMomentum(0.1, 0.9)),
    ("momentum_l1", lambda: O.Momentum(0.1, 0.9, regularization=R.L1Decay(0.01))),
    ("adam_beta_var", lambda: O.Adam(0.1, beta1=fluid.layers.create_global_var([1], 0.8, "float32", persistable=True))),
    ("sgd_exp_decay", lambda: O.SGD(fluid.layers.exponential_decay(0.1, 1, 0.5))),
    ("sgd_noam", lambda: O.SGD(fluid.layers.noam_decay(4, 2))),
    ("sgd_cos", lambda: O.SGD(fluid.layers.cosine_decay(0.1, 1, 4))),
    ("sgd_poly", lambda: O.SGD(fluid.layers.polynomial_decay(0.1, 2, 0.01, power=2.0, cycle=True))),
    ("sgd_warm", lambda: O.SGD(fluid.layers.linear_lr_warmup(0.1, 2, 0.0, 0.1))),
    ("sgd_invtime", lambda: O.SGD(fluid.layers.inverse_time_decay(0.1, 1, 0.5))),
    ("sgd_natexp", lambda: O.SGD(fluid.layers.natural_exp_decay(0.1, 1, 0.5, staircase=True))),
]
res = {}
for name, mk in cases:
    main, start = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, start):
        x = fluid.data("x", [None, 3], "float32")
        w = np.linspace(-1, 1, 6).reshape(3, 2).astype("float32")
        h = fluid.layers.fc(
            x,
            2,
            param_attr=fluid.ParamAttr("w", initializer=fluid.initializer.NumpyArrayInitializer(w)),
            bias_attr=fluid.ParamAttr("b", initializer=fluid.initializer.Constant(0.1)),
        )
        cost = fluid.layers.mean(fluid.layers.square(h - 0.3))
        opt = mk()
        opt.minimize(cost)
    scope = fluid.Scope()
    exe = fluid.Executor(fluid.CPUPlace())
    with fluid.scope_guard(scope):
        exe.run(start)
        losses = []
        for step in range(4):
            xv = np.linspace(-1, 1, 12).reshape(4, 3).astype("float32") * (step + 1)
            losses.append(float(exe.run(main, feed={"x": xv}, fetch_list=[cost])[0][0]))
        res[name] = [losses, np.array(scope.find_var("w").get_tensor()).ravel().tolist()]
print(json.dumps(res))
