"""Optimizer update ops: sgd, momentum, adam, adamax, adagrad, decayed_adagrad, adadelta, rmsprop,
ftrl, lamb, lars_momentum, dpsgd, proximal_gd, proximal_adagrad. Each updates its parameter and state
in place (``ParamOut`` is the same variable as ``Param``); a SelectedRows gradient never becomes a
dense table."""

from __future__ import annotations

import numpy as np

from fluidcompat_ops.grad import SelectedRows
from fluidcompat_ops.registry import OpDef, register
from fluidcompat_ops.shapes import first

torch = None  # NOTE: [Lazy torch] in registry.py
F = None


def _merged(g):
    """The rows and values of a SelectedRows with each row once (repeated rows summed)."""
    m = g.merged()
    return m.rows, m.values


def _dense(g):
    return g.to_dense() if isinstance(g, SelectedRows) else g


def _lr(ins):
    return ins["LearningRate"][0]


def _sgd_kernel(ins, attrs):
    p, g, lr = ins["Param"][0], ins["Grad"][0], _lr(ins)
    if isinstance(g, SelectedRows):
        p.index_add_(0, g.rows, g.values * -lr.to(p.dtype))
    else:
        p.addcmul_(g, lr.to(p.dtype), value=-1.0)
    return {"ParamOut": [p]}


register(OpDef("sgd", ("Param", "Grad", "LearningRate"), ("ParamOut",), {}, None, _sgd_kernel))


def _momentum_kernel(ins, attrs):
    p, g, v, lr = ins["Param"][0], ins["Grad"][0], ins["Velocity"][0], _lr(ins)
    mu = attrs["mu"]
    v.mul_(mu)
    if isinstance(g, SelectedRows):
        v.index_add_(0, g.rows, g.values)
        g = None
    else:
        v.add_(g)
    if attrs["use_nesterov"]:
        # p -= (g + mu * v) * lr
        if g is None:
            p.addcmul_(v, lr, value=-mu)
            rows, vals = _merged(ins["Grad"][0])
            p.index_add_(0, rows, vals * -lr)
        else:
            p.sub_((g + mu * v) * lr)
    else:
        p.addcmul_(v, lr, value=-1.0)
    return {"ParamOut": [p], "VelocityOut": [v]}


register(
    OpDef(
        "momentum",
        ("Param", "Grad", "Velocity", "LearningRate"),
        ("ParamOut", "VelocityOut"),
        {"mu": 0.0, "use_nesterov": False},
        None,
        _momentum_kernel,
    )
)


def _minus(beta: float, p) -> float:
    """1 - beta as fluid's kernels computed it: in the parameter's precision (float32: 1 - 0.999f)."""
    if p.dtype != torch.float32:
        return 1 - beta
    got = _MINUS_F32.get(beta)
    if got is None:
        got = _MINUS_F32[beta] = float(np.float32(1) - np.float32(beta))
    return got


_MINUS_F32: dict = {}  # beta -> 1 - beta in float32 (a plain dict: torch.compile traces through it)


def _in_place(op, *slots) -> bool:
    """Whether each input slot of ``slots`` is the same variable as its output slot (``slot + "Out"``).
    In dygraph mode (no op) it is: fluid's optimizers hand the same variables in and out there too."""
    if op is None:
        return True
    return all(op.inputs[s] == op.outputs.get(s + "Out") for s in slots)


def _adam_kernel(ins, attrs):
    p, g, lr = ins["Param"][0], ins["Grad"][0], _lr(ins)
    m1, m2 = ins["Moment1"][0], ins["Moment2"][0]
    b1p, b2p = ins["Beta1Pow"][0], ins["Beta2Pow"][0]
    b1t, b2t = first(ins, "Beta1Tensor"), first(ins, "Beta2Tensor")
    beta1 = b1t.reshape(-1)[0].item() if b1t is not None else attrs["beta1"]
    beta2 = b2t.reshape(-1)[0].item() if b2t is not None else attrs["beta2"]
    eps = attrs["epsilon"]
    sparse = isinstance(g, SelectedRows)
    if sparse and _in_place(attrs["_op"], "Beta1Pow", "Beta2Pow"):
        # fluid 1.8.5's sparse kernel writes the new powers before it reads them, and fluid's optimizer
        # makes the powers in place: a sparse gradient's step is bias-corrected one step ahead
        lr_t = lr * torch.sqrt(1 - b2p * beta2) / (1 - b1p * beta1)
    else:
        lr_t = lr * torch.sqrt(1 - b2p) / (1 - b1p)
    # fluid 1.8 adds epsilon unscaled: p -= lr_t * m1 / (sqrt(m2) + epsilon)
    if sparse:
        rows, vals = _merged(g)
        if attrs["lazy_mode"]:
            m1r = m1[rows] * beta1 + _minus(beta1, p) * vals
            m2r = m2[rows] * beta2 + _minus(beta2, p) * vals * vals
            m1[rows] = m1r
            m2[rows] = m2r
            p[rows] = p[rows] - lr_t * (m1r / (torch.sqrt(m2r) + eps))
        else:
            m1.mul_(beta1).index_add_(0, rows, _minus(beta1, p) * vals)
            m2.mul_(beta2).index_add_(0, rows, _minus(beta2, p) * vals * vals)
            p.sub_(lr_t * (m1 / (torch.sqrt(m2) + eps)))
    else:
        m1.mul_(beta1).add_(g, alpha=_minus(beta1, p))
        m2.mul_(beta2).addcmul_(g, g, value=_minus(beta2, p))
        p.sub_(lr_t * (m1 / (torch.sqrt(m2) + eps)))
    return {
        "ParamOut": [p],
        "Moment1Out": [m1],
        "Moment2Out": [m2],
        "Beta1PowOut": [b1p * beta1],
        "Beta2PowOut": [b2p * beta2],
    }


register(
    OpDef(
        "adam",
        ("Param", "Grad", "LearningRate", "Moment1", "Moment2", "Beta1Pow", "Beta2Pow", "Beta1Tensor", "Beta2Tensor"),
        ("ParamOut", "Moment1Out", "Moment2Out", "Beta1PowOut", "Beta2PowOut"),
        {"beta1": 0.9, "beta2": 0.999, "epsilon": 1e-8, "lazy_mode": False, "min_row_size_to_use_multithread": 1000},
        None,
        _adam_kernel,
        host_inputs=frozenset({"Beta1Tensor", "Beta2Tensor"}),
    )
)


# NOTE: [Grouped adam]
# A training program ends with one adam op per parameter; each op is about 16 tensor operations, and
# on a GPU each is a kernel launch of a few microseconds on tensors of a few thousand elements. The
# interpreter hands a run of consecutive dense adam ops with the same attributes to ``adam_group``,
# which does each of those operations once for the whole group with torch's multi-tensor (foreach)
# kernels: the same operations per element in the same order as ``_adam_kernel`` (so the same
# values), a few launches in all.
ADAM_GROUP_SLOTS = ("Param", "Grad", "LearningRate", "Moment1", "Moment2", "Beta1Pow", "Beta2Pow")
ADAM_GROUP_OUTS = ("Beta1PowOut", "Beta2PowOut")


def adam_groupable(op) -> bool:
    """Whether an adam op can join a group (decided when the program is prepared): its parameter and
    moments updated in place, constant betas (no Beta1Tensor / Beta2Tensor)."""
    return (
        op.type == "adam"
        and not op.inputs.get("Beta1Tensor")
        and not op.inputs.get("Beta2Tensor")
        and _in_place(op, "Param", "Moment1", "Moment2")
        and all(len(op.inputs.get(s, ())) == 1 for s in ADAM_GROUP_SLOTS)
        and all(len(op.outputs.get(s, ())) == 1 for s in ADAM_GROUP_OUTS)
    )


def adam_group(env, members, attrs) -> bool:
    """Runs the adam ops ``members`` (per op: the names of ADAM_GROUP_SLOTS, then of ADAM_GROUP_OUTS)
    over ``env`` at once (NOTE: [Grouped adam]). Returns False, having changed nothing, when a gradient
    is not a dense tensor or the dtypes differ: the ops then run one by one."""
    ps, gs, lrs, m1s, m2s, b1ps, b2ps = ([env[m[k]] for m in members] for k in range(7))
    dtype = ps[0].dtype
    for group in (ps, gs, lrs, m1s, m2s, b1ps, b2ps):
        for t in group:
            if not torch.is_tensor(t) or t.dtype != dtype:
                return False
    f = torch
    beta1, beta2 = attrs["beta1"], attrs["beta2"]
    # lr_t = lr * sqrt(1 - b2p) / (1 - b1p)  (1 - x computed as -x + 1: the same rounding)
    lr_t = f._foreach_neg(b2ps)
    f._foreach_add_(lr_t, 1)
    f._foreach_sqrt_(lr_t)
    lr_t = f._foreach_mul(lrs, lr_t)
    one_b1 = f._foreach_neg(b1ps)
    f._foreach_add_(one_b1, 1)
    f._foreach_div_(lr_t, one_b1)
    f._foreach_mul_(m1s, beta1)
    f._foreach_add_(m1s, gs, alpha=_minus(beta1, ps[0]))
    f._foreach_mul_(m2s, beta2)
    f._foreach_addcmul_(m2s, gs, gs, value=_minus(beta2, ps[0]))
    # p -= lr_t * (m1 / (sqrt(m2) + epsilon))
    step = f._foreach_sqrt(m2s)
    f._foreach_add_(step, attrs["epsilon"])
    step = f._foreach_div(m1s, step)
    f._foreach_mul_(step, lr_t)
    f._foreach_sub_(ps, step)
    for m, b1, b2 in zip(members, f._foreach_mul(b1ps, beta1), f._foreach_mul(b2ps, beta2)):
        env[m[7]], env[m[8]] = b1, b2
    return True


def _adamax_kernel(ins, attrs):
    p, g, lr = ins["Param"][0], _dense(ins["Grad"][0]), _lr(ins)
    m, inf, b1p = ins["Moment"][0], ins["InfNorm"][0], ins["Beta1Pow"][0]
    b1, b2, eps = attrs["beta1"], attrs["beta2"], attrs["epsilon"]
    m.mul_(b1).add_(g, alpha=_minus(b1, p))
    torch.maximum(inf * b2 + eps, g.abs(), out=inf)
    p.sub_(lr / (1 - b1p) * m / inf)
    return {"ParamOut": [p], "MomentOut": [m], "InfNormOut": [inf]}


register(
    OpDef(
        "adamax",
        ("Param", "Grad", "LearningRate", "Moment", "InfNorm", "Beta1Pow"),
        ("ParamOut", "MomentOut", "InfNormOut"),
        {"beta1": 0.9, "beta2": 0.999, "epsilon": 1e-8},
        None,
        _adamax_kernel,
    )
)


def _adagrad_kernel(ins, attrs):
    p, g, m, lr = ins["Param"][0], ins["Grad"][0], ins["Moment"][0], _lr(ins)
    if isinstance(g, SelectedRows):
        # only the gradient's rows change (a row with a zero gradient keeps its moment and value), as
        # in fluid's sparse adagrad: the rows merged, then updated
        rows, vals = _merged(g)
        moment = m.index_select(0, rows).addcmul_(vals, vals)
        m.index_copy_(0, rows, moment)
        p.index_add_(0, rows, lr * vals / (torch.sqrt(moment) + attrs["epsilon"]), alpha=-1)
        return {"ParamOut": [p], "MomentOut": [m]}
    m.addcmul_(g, g)
    p.sub_(lr * g / (torch.sqrt(m) + attrs["epsilon"]))
    return {"ParamOut": [p], "MomentOut": [m]}


register(
    OpDef(
        "adagrad",
        ("Param", "Grad", "Moment", "LearningRate"),
        ("ParamOut", "MomentOut"),
        {"epsilon": 1e-6},
        None,
        _adagrad_kernel,
    )
)


def _decayed_adagrad_kernel(ins, attrs):
    p, g, m, lr = ins["Param"][0], _dense(ins["Grad"][0]), ins["Moment"][0], _lr(ins)
    d = attrs["decay"]
    m.mul_(d).addcmul_(g, g, value=_minus(d, p))
    p.sub_(lr * g / (torch.sqrt(m) + attrs["epsilon"]))
    return {"ParamOut": [p], "MomentOut": [m]}


register(
    OpDef(
        "decayed_adagrad",
        ("Param", "Grad", "Moment", "LearningRate"),
        ("ParamOut", "MomentOut"),
        {"decay": 0.95, "epsilon": 1e-6},
        None,
        _decayed_adagrad_kernel,
    )
)


def _adadelta_kernel(ins, attrs):
    p, g = ins["Param"][0], _dense(ins["Grad"][0])
    asg, asu = ins["AvgSquaredGrad"][0], ins["AvgSquaredUpdate"][0]
    rho, eps = attrs["rho"], attrs["epsilon"]
    asg.mul_(rho).addcmul_(g, g, value=_minus(rho, p))
    update = -torch.sqrt((asu + eps) / (asg + eps)) * g
    asu.mul_(rho).addcmul_(update, update, value=_minus(rho, p))
    if _in_place(attrs["_op"], "AvgSquaredUpdate"):
        # fluid 1.8.5 evaluated the update a second time for the parameter, after AvgSquaredUpdateOut
        # (the same variable, as fluid's optimizer makes it) had been written
        update = -torch.sqrt((asu + eps) / (asg + eps)) * g
    p.add_(update)
    return {"ParamOut": [p], "AvgSquaredGradOut": [asg], "AvgSquaredUpdateOut": [asu]}


register(
    OpDef(
        "adadelta",
        ("Param", "Grad", "AvgSquaredGrad", "AvgSquaredUpdate"),
        ("ParamOut", "AvgSquaredGradOut", "AvgSquaredUpdateOut"),
        {"rho": 0.95, "epsilon": 1e-6},
        None,
        _adadelta_kernel,
    )
)


def _rmsprop_kernel(ins, attrs):
    p, g, lr = ins["Param"][0], _dense(ins["Grad"][0]), _lr(ins)
    ms, mg, mom = ins["MeanSquare"][0], ins["MeanGrad"][0], ins["Moment"][0]
    rho, eps, momentum = attrs["decay"], attrs["epsilon"], attrs["momentum"]
    ms.mul_(rho).addcmul_(g, g, value=_minus(rho, p))
    if attrs["centered"]:
        mg.mul_(rho).add_(g, alpha=_minus(rho, p))
        denom = torch.sqrt(ms - mg * mg + eps)
    else:
        denom = torch.sqrt(ms + eps)
    mom.mul_(momentum).add_(lr * g / denom)
    p.sub_(mom)
    return {"ParamOut": [p], "MomentOut": [mom], "MeanSquareOut": [ms], "MeanGradOut": [mg]}


register(
    OpDef(
        "rmsprop",
        ("Param", "MeanSquare", "MeanGrad", "LearningRate", "Grad", "Moment"),
        ("ParamOut", "MomentOut", "MeanSquareOut", "MeanGradOut"),
        {"epsilon": 1e-10, "decay": 0.9, "momentum": 0.0, "centered": False},
        None,
        _rmsprop_kernel,
    )
)


def _ftrl_kernel(ins, attrs):
    p, g, lr = ins["Param"][0], _dense(ins["Grad"][0]), _lr(ins)
    sq, lin = ins["SquaredAccumulator"][0], ins["LinearAccumulator"][0]
    l1, l2, power = attrs["l1"], attrs["l2"], attrs["lr_power"]
    new_sq = sq + g * g
    if power == -0.5:
        lin.add_(g - (torch.sqrt(new_sq) - torch.sqrt(sq)) / lr * p)
        y = torch.sqrt(new_sq) / lr + 2 * l2
    else:
        lin.add_(g - (new_sq.pow(-power) - sq.pow(-power)) / lr * p)
        y = new_sq.pow(-power) / lr + 2 * l2
    x = l1 * torch.sign(lin) - lin
    p.copy_(torch.where(lin.abs() > l1, x / y, torch.zeros_like(p)))
    sq.copy_(new_sq)
    return {"ParamOut": [p], "SquaredAccumOut": [sq], "LinearAccumOut": [lin]}


register(
    OpDef(
        "ftrl",
        ("Param", "SquaredAccumulator", "LinearAccumulator", "Grad", "LearningRate"),
        ("ParamOut", "SquaredAccumOut", "LinearAccumOut"),
        {"l1": 0.0, "l2": 0.0, "lr_power": -0.5},
        None,
        _ftrl_kernel,
    )
)


def _lamb_kernel(ins, attrs):
    p, g, lr = ins["Param"][0], _dense(ins["Grad"][0]), _lr(ins)
    m1, m2 = ins["Moment1"][0], ins["Moment2"][0]
    b1, b2, eps, wd = attrs["beta1"], attrs["beta2"], attrs["epsilon"], attrs["weight_decay"]
    m1.mul_(b1).add_(g, alpha=_minus(b1, p))
    m2.mul_(b2).addcmul_(g, g, value=_minus(b2, p))
    # fluid 1.8.5's lamb does not bias-correct the moments (Beta1Pow/Beta2Pow are read by no one and
    # never updated): measured against it, tests/golden/sparse_updates.py
    r = m1 / (torch.sqrt(m2) + eps) + wd * p
    p_norm, r_norm = torch.linalg.vector_norm(p), torch.linalg.vector_norm(r)
    trust = torch.where((p_norm > 0) & (r_norm > 0), p_norm / r_norm, torch.ones_like(p_norm))
    p.sub_(lr * trust * r)
    return {"ParamOut": [p], "Moment1Out": [m1], "Moment2Out": [m2]}


register(
    OpDef(
        "lamb",
        ("Param", "Grad", "LearningRate", "Moment1", "Moment2", "Beta1Pow", "Beta2Pow"),
        ("ParamOut", "Moment1Out", "Moment2Out"),
        {"beta1": 0.9, "beta2": 0.999, "epsilon": 1e-6, "weight_decay": 0.01},
        None,
        _lamb_kernel,
    )
)


def _lars_kernel(ins, attrs):
    p, g, v, lr = ins["Param"][0], _dense(ins["Grad"][0]), ins["Velocity"][0], _lr(ins)
    mu, coeff, wd = attrs["mu"], attrs["lars_coeff"], attrs["lars_weight_decay"]
    p_norm, g_norm = torch.linalg.vector_norm(p), torch.linalg.vector_norm(g)
    # fluid 1.8.5 takes the plain learning rate where either norm is 0 (a zero-initialised bias, a
    # zero gradient): the ratio would stop the parameter for ever, or be 0 / 0
    both = (p_norm > 0) & (g_norm > 0)
    local_lr = torch.where(both, lr * coeff * p_norm / torch.where(both, g_norm + wd * p_norm, 1.0), lr)
    v.mul_(mu).add_(local_lr * (g + wd * p))
    p.sub_(v)
    return {"ParamOut": [p], "VelocityOut": [v]}


register(
    OpDef(
        "lars_momentum",
        ("Param", "Grad", "Velocity", "LearningRate"),
        ("ParamOut", "VelocityOut"),
        {"mu": 0.0, "lars_coeff": 0.001, "lars_weight_decay": 0.0005},
        None,
        _lars_kernel,
    )
)


_MAX_ACCUMULATES = 16384


def _average_accumulates_kernel(ins, attrs):
    p = ins["param"][0]
    s1, s2, s3 = ins["in_sum_1"][0], ins["in_sum_2"][0], ins["in_sum_3"][0]
    n_acc, n_old, n_upd = (ins[k][0] for k in ("in_num_accumulates", "in_old_num_accumulates", "in_num_updates"))
    num_updates = int(n_upd.reshape(-1)[0]) + 1
    num_acc = int(n_acc.reshape(-1)[0]) + 1
    old = int(n_old.reshape(-1)[0])
    s1 = s1 + p
    if num_updates % _MAX_ACCUMULATES == 0:
        # move the running sum aside so that it does not lose precision
        s2 = s2 + s1
        s1 = torch.zeros_like(s1)
    window = min(attrs["max_average_window"], num_updates * attrs["average_window"])
    if num_acc >= attrs["min_average_window"] and num_acc >= window:
        # the window is full: keep its sum and start a new one
        s3 = s1 + s2
        s1 = torch.zeros_like(s1)
        s2 = torch.zeros_like(s2)
        old, num_acc = num_acc, 0

    def count(v, ref):
        return torch.tensor([v], dtype=ref.dtype, device=ref.device)

    return {
        "out_sum_1": [s1],
        "out_sum_2": [s2],
        "out_sum_3": [s3],
        "out_num_accumulates": [count(num_acc, n_acc)],
        "out_old_num_accumulates": [count(old, n_old)],
        "out_num_updates": [count(num_updates, n_upd)],
    }


register(
    OpDef(
        "average_accumulates",
        ("param", "in_sum_1", "in_sum_2", "in_sum_3", "in_num_accumulates", "in_old_num_accumulates", "in_num_updates"),
        ("out_sum_1", "out_sum_2", "out_sum_3", "out_num_accumulates", "out_old_num_accumulates", "out_num_updates"),
        {"average_window": 0.0, "min_average_window": 10000, "max_average_window": 10000},
        None,
        _average_accumulates_kernel,
    )
)


def _dpsgd_kernel(ins, attrs):
    """Differentially private SGD as fluid 1.8 ran it: the gradient scaled down to L2 norm ``clip``
    at most, plus one Gaussian draw (std ``sigma``) / ``batch_size`` for every element."""
    p, g, lr = ins["Param"][0], _dense(ins["Grad"][0]), _lr(ins)
    norm = torch.linalg.vector_norm(g.to(torch.float64))
    scale = float(norm) / attrs["clip"] if float(norm) > attrs["clip"] else 1.0
    noise = 0.0
    if attrs["sigma"] and attrs["seed"]:  # fluid's draw for the seed (NOTE: [Seeded draws])
        from fluidcompat_ops.fluid_random import dpsgd_noise

        noise = dpsgd_noise(attrs["seed"], attrs["sigma"])
    elif attrs["sigma"]:
        noise = float(torch.randn(())) * attrs["sigma"]
    p.sub_(lr.to(p.dtype) * (g / scale + noise / attrs["batch_size"]))
    return {"ParamOut": [p]}


register(
    OpDef(
        "dpsgd",
        ("Param", "Grad", "LearningRate"),
        ("ParamOut",),
        {"clip": 10.0, "batch_size": 16.0, "sigma": 1.0, "seed": 0},
        None,
        _dpsgd_kernel,
    )
)


def _proximal(p, prox, lr, attrs):
    """ParamOut of the proximal optimizers: sign(prox) * max(|prox| - lr * l1, 0) / (1 + lr * l2), or
    prox / (1 + lr * l2) without l1, written into Param."""
    l1, l2 = attrs["l1"], attrs["l2"]
    if l1 > 0:
        prox = torch.sign(prox) * torch.clamp(prox.abs() - lr * l1, min=0.0)
    return p.copy_(prox / (1.0 + lr * l2))


def _proximal_gd_kernel(ins, attrs):
    p, g, lr = ins["Param"][0], _dense(ins["Grad"][0]), _lr(ins).to(ins["Param"][0].dtype)
    return {"ParamOut": [_proximal(p, p - lr * g, lr, attrs)]}


def _proximal_adagrad_kernel(ins, attrs):
    p, g, m = ins["Param"][0], _dense(ins["Grad"][0]), ins["Moment"][0]
    lr = _lr(ins).to(p.dtype)
    m.addcmul_(g, g)
    return {"ParamOut": [_proximal(p, p - g * lr / torch.sqrt(m), lr, attrs)], "MomentOut": [m]}


register(
    OpDef(
        "proximal_gd",
        ("Param", "Grad", "LearningRate"),
        ("ParamOut",),
        {"l1": 0.0, "l2": 0.0},
        None,
        _proximal_gd_kernel,
    )
)
register(
    OpDef(
        "proximal_adagrad",
        ("Param", "Moment", "Grad", "LearningRate"),
        ("ParamOut", "MomentOut"),
        {"l1": 0.0, "l2": 0.0},
        None,
        _proximal_adagrad_kernel,
    )
)
