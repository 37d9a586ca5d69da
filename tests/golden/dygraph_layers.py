# More dygraph layers: Conv3D, Conv3DTranspose (bias given), BilinearTensorProduct, GRUUnit,
# SpectralNorm, BCELoss, NLLLoss, MSELoss, L1Loss, DataParallel with one worker, DataLoader batches:
# parameter names and shapes, outputs and the inputs' and parameters' gradients.
import json

import numpy as np
import paddle.fluid as fluid
from paddle.fluid.dygraph import to_variable


def r(a):
    return None if a is None else np.round(np.asarray(a, "float64").reshape(-1), 5).tolist()


def set_params(layer):
    for k, p in enumerate(sorted(layer.parameters(), key=lambda p: p.name)):
        p.set_value(np.random.RandomState(10 + k).uniform(-0.5, 0.5, p.shape).astype("float32"))


def run(layer, inputs, reduce=True):
    set_params(layer)
    vs = [to_variable(a) for a in inputs]
    for v in vs:
        if v.dtype == fluid.core.VarDesc.VarType.FP32:
            v.stop_gradient = False
    outs = layer(*vs)
    outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
    total = fluid.layers.reduce_sum(outs[0] * outs[0]) if reduce else outs[0]
    total.backward()
    return {
        "params": [[p.name, p.shape] for p in layer.parameters()],
        "outs": [[o.shape, r(o.numpy())] for o in outs],
        "in_grads": [r(v.gradient()) for v in vs],
        "param_grads": [r(p.gradient()) for p in layer.parameters()],
    }


rng = np.random.RandomState(0)
out = {}
with fluid.dygraph.guard(fluid.CPUPlace()):
    out["conv3d"] = run(
        fluid.dygraph.Conv3D(2, 3, [2, 2, 1], stride=[1, 2, 1], padding=1, act="relu"),
        [rng.rand(2, 2, 3, 4, 3).astype("float32")],
    )
    out["conv3d_transpose"] = run(
        fluid.dygraph.Conv3DTranspose(2, 4, 2, stride=2, groups=2, bias_attr=fluid.ParamAttr(name="c3t_b")),
        [rng.rand(1, 2, 2, 2, 3).astype("float32")],
    )
    out["bilinear"] = run(
        fluid.dygraph.BilinearTensorProduct(3, 4, 2, act="tanh"),
        [rng.rand(5, 3).astype("float32"), rng.rand(5, 4).astype("float32")],
    )
    out["gru_unit"] = run(
        fluid.dygraph.GRUUnit(3 * 4),
        [rng.rand(2, 12).astype("float32"), rng.rand(2, 4).astype("float32")],
    )
    out["gru_unit_relu"] = run(
        fluid.dygraph.GRUUnit(3 * 2, activation="relu", gate_activation="sigmoid"),
        [rng.rand(3, 6).astype("float32"), rng.rand(3, 2).astype("float32")],
    )
    out["spectral_norm"] = run(
        fluid.dygraph.SpectralNorm([3, 4], dim=0, power_iters=3), [rng.rand(3, 4).astype("float32")]
    )
    probs = rng.uniform(0.05, 0.95, (4, 3)).astype("float32")
    labels = (rng.rand(4, 3) > 0.5).astype("float32")
    for red in ["mean", "sum", "none"]:
        out["bce_" + red] = run(fluid.dygraph.BCELoss(reduction=red), [probs, labels])
        out["mse_" + red] = run(fluid.dygraph.MSELoss(reduction=red), [probs, labels])
        out["l1_" + red] = run(fluid.dygraph.L1Loss(reduction=red), [probs, labels])
    out["bce_weight"] = run(
        fluid.dygraph.BCELoss(weight=to_variable(np.array([1.0, 2.0, 0.5], "float32"))), [probs, labels]
    )
    logp = np.log(rng.dirichlet(np.ones(5), 6)).astype("float32")
    lab = np.array([0, 4, 2, 2, 1, 3], "int64")
    for red in ["mean", "sum", "none"]:
        out["nll_" + red] = run(fluid.dygraph.NLLLoss(reduction=red), [logp, lab])
    out["nll_weight_ignore"] = run(
        fluid.dygraph.NLLLoss(weight=to_variable(np.array([1, 2, 3, 4, 5], "float32")), ignore_index=2),
        [logp, lab],
    )
    logp4 = np.log(rng.dirichlet(np.ones(3), (2, 2, 2)).transpose(0, 3, 1, 2)).astype("float32")
    out["nll_4d"] = run(fluid.dygraph.NLLLoss(), [logp4, rng.randint(0, 3, (2, 2, 2)).astype("int64")])
    out["nll_4d_none"] = run(
        fluid.dygraph.NLLLoss(reduction="none"), [logp4, rng.randint(0, 3, (2, 2, 2)).astype("int64")]
    )

    prepared = fluid.dygraph.prepare_context()  # None with one worker
    env = fluid.dygraph.ParallelEnv()
    strategy = fluid.dygraph.parallel.ParallelStrategy()
    strategy.nranks = env.nranks  # fluid 1.8's DataParallel failed on prepare_context's None
    net = fluid.dygraph.DataParallel(fluid.dygraph.Linear(3, 2), strategy)
    set_params(net)
    loss = fluid.layers.reduce_mean(net(to_variable(np.ones((2, 3), "float32"))))
    scaled = net.scale_loss(loss)
    scaled.backward()
    net.apply_collective_grads()
    out["data_parallel"] = {
        "prepared": prepared is None,
        "env": [env.nranks, env.local_rank, env.dev_id],
        "state": sorted(net.state_dict()),
        "params": [p.name for p in net.parameters()],
        "grads": [r(p.gradient()) for p in net.parameters()],
        "scaled": r(scaled.numpy()),
    }
print(json.dumps(out, sort_keys=True))
