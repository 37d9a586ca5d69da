# Golden script: every fluid 1.8.5 optimizer in dygraph mode, three steps of an embedding and a
# Linear, with the embedding dense and is_sparse (the sparse table's rows reach the update as fluid's
# sparse kernels took them); the sparse gradient as gradient() gives it ((values, rows), the docs'
# example). Prints a JSON report: the losses, or the error.
import json

import numpy as np
import paddle.fluid as fluid

O = fluid.optimizer
makers = {
    "sgd": lambda p: O.SGD(0.1, parameter_list=p),
    "momentum": lambda p: O.Momentum(0.1, 0.9, use_nesterov=True, parameter_list=p),
    "adagrad": lambda p: O.Adagrad(0.1, parameter_list=p),
    "adam": lambda p: O.Adam(0.05, parameter_list=p),
    "adamax": lambda p: O.Adamax(0.05, parameter_list=p),
    "adadelta": lambda p: O.Adadelta(0.5, parameter_list=p),
    "rmsprop": lambda p: O.RMSProp(0.05, centered=True, momentum=0.1, parameter_list=p),
    "ftrl": lambda p: O.Ftrl(0.1, parameter_list=p),
    "lamb": lambda p: O.Lamb(0.05, parameter_list=p),
    "decayed_adagrad": lambda p: O.DecayedAdagrad(0.1, parameter_list=p),
    "lars": lambda p: O.LarsMomentum(0.1, 0.9, parameter_list=p),
    "adam_l2_clip": lambda p: O.Adam(
        0.05,
        parameter_list=p,
        regularization=fluid.regularizer.L2Decay(0.1),
        grad_clip=fluid.clip.GradientClipByGlobalNorm(0.5),
    ),
}
out = {}
for name, mk in makers.items():
    for sparse in (False, True):
        with fluid.dygraph.guard(fluid.CPUPlace()):
            fluid.default_startup_program().random_seed = 5
            fluid.default_main_program().random_seed = 5
            emb = fluid.dygraph.Embedding(size=[20, 4], is_sparse=sparse)
            fc = fluid.dygraph.Linear(4, 3)
            opt = mk(emb.parameters() + fc.parameters())
            rng = np.random.RandomState(0)
            losses = []
            try:
                for _step in range(3):
                    ids = fluid.dygraph.to_variable(rng.randint(0, 20, (6,)).astype("int64"))
                    loss = fluid.layers.mean(fc(emb(ids)) ** 2)
                    loss.backward()
                    opt.minimize(loss)
                    emb.clear_gradients()
                    fc.clear_gradients()
                    losses.append(round(float(loss.numpy()[0]), 6))
                out[f"{name} sparse={sparse}"] = losses
            except Exception as e:
                out[f"{name} sparse={sparse}"] = (
                    f"{type(e).__name__}: {str(e).strip().splitlines()[-1][:150] if str(e).strip() else ''}"
                )
with fluid.dygraph.guard():
    embedding = fluid.dygraph.Embedding(size=[20, 32], param_attr="emb.w", is_sparse=True)
    x = fluid.dygraph.base.to_variable(np.arange(12).reshape(4, 3, 1).astype("int64"))
    embedding(x).backward()
    values, rows = embedding.weight.gradient()
    out["sparse_gradient"] = [list(values.shape), float(values.sum()), rows.tolist()]
print(json.dumps(out))
