# Dygraph learning-rate schedules: the rate each minimize uses (read back from an SGD step on a
# parameter whose gradient is 1), current_step_lr, epoch schedules, ReduceLROnPlateau, and the
# optimizer state of a scheduled optimizer.
import json

import numpy as np
import paddle.fluid as fluid
from paddle.fluid.dygraph import Linear, to_variable


def rates(make, steps=7, epoch=False, plateau=None, ask=True):
    with fluid.dygraph.guard(fluid.CPUPlace()):
        fc = Linear(1, 1, bias_attr=False, param_attr=fluid.initializer.Constant(0.0))
        sched = make()
        opt = fluid.optimizer.SGD(sched, parameter_list=fc.parameters())
        x = to_variable(np.ones((1, 1), "float32"))
        got, current = [], []
        for k in range(steps):
            if plateau is None and ask:  # fluid 1.8's current_step_lr failed for ReduceLROnPlateau
                current.append(round(float(opt.current_step_lr()), 6))
            before = float(fc.weight.numpy()[0, 0])
            loss = fluid.layers.reduce_sum(fc(x))
            loss.backward()
            opt.minimize(loss)
            fc.clear_gradients()
            got.append(round(before - float(fc.weight.numpy()[0, 0]), 6))
            if epoch:
                sched.epoch()
            if plateau is not None:
                sched.step(to_variable(np.array([plateau[k]], "float32")))
        return [got, current]


out = {
    "piecewise": rates(lambda: fluid.dygraph.PiecewiseDecay([2, 4], [0.1, 0.05, 0.01], 0)),
    "piecewise_layers": rates(lambda: fluid.layers.piecewise_decay([3], [0.2, 0.02])),
    "natural_exp": rates(lambda: fluid.dygraph.NaturalExpDecay(0.5, 2, 0.5, staircase=True)),
    "exponential": rates(lambda: fluid.dygraph.ExponentialDecay(0.5, 3, 0.5)),
    "inverse_time": rates(lambda: fluid.dygraph.InverseTimeDecay(0.5, 2, 0.5)),
    "polynomial": rates(lambda: fluid.dygraph.PolynomialDecay(0.5, 4, 0.01, power=2.0)),
    "polynomial_cycle": rates(lambda: fluid.dygraph.PolynomialDecay(0.5, 3, 0.01, cycle=True)),
    "cosine": rates(lambda: fluid.dygraph.CosineDecay(0.5, 2, 4)),
    "noam": rates(lambda: fluid.dygraph.NoamDecay(16, 3)),
    "noam_layers": rates(lambda: fluid.layers.noam_decay(16, 3, learning_rate=2.0)),
    "exp_layers": rates(lambda: fluid.layers.exponential_decay(0.3, 2, 0.9, staircase=True)),
    "warmup_decay": rates(
        lambda: fluid.dygraph.LinearLrWarmup(fluid.dygraph.PiecewiseDecay([5], [0.4, 0.04], 0), 3, 0.0, 0.3),
        ask=False,  # fluid 1.8's current_step_lr advanced the inner schedule
    ),
    "step": rates(lambda: fluid.dygraph.StepDecay(0.5, 2, 0.5), epoch=True),
    "multistep": rates(lambda: fluid.dygraph.MultiStepDecay(0.5, [1, 3, 4], 0.5), epoch=True),
    "lambda": rates(lambda: fluid.dygraph.LambdaDecay(0.5, lambda e: 0.9**e), epoch=True),
    "plateau": rates(
        lambda: fluid.dygraph.ReduceLROnPlateau(0.5, patience=1, decay_rate=0.5, cooldown=1),
        plateau=[1.0, 0.9, 0.95, 0.97, 0.99, 0.8, 0.85],
    ),
}
with fluid.dygraph.guard(fluid.CPUPlace()):
    fc = Linear(2, 1)
    opt = fluid.optimizer.Adam(fluid.dygraph.PiecewiseDecay([2], [0.1, 0.01], 0), parameter_list=fc.parameters())
    for _ in range(3):
        loss = fluid.layers.reduce_sum(fc(to_variable(np.ones((1, 2), "float32"))))
        loss.backward()
        opt.minimize(loss)
        fc.clear_gradients()
    state = opt.state_dict()
    out["opt_state"] = [sorted(state), state["LR_Scheduler"], state["global_step"].numpy().tolist()]
    opt2 = fluid.optimizer.Adam(fluid.dygraph.PiecewiseDecay([2], [0.1, 0.01], 0), parameter_list=fc.parameters())
    opt2.set_dict(state)
    out["restored_lr"] = round(float(opt2.current_step_lr()), 6)
print(json.dumps(out, sort_keys=True))
