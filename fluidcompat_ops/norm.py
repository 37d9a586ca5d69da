"""Normalization ops: batch_norm, layer_norm, group_norm, instance_norm, data_norm, inplace_abn
(batch_norm and its activation in one op), spectral_norm, lrn, affine_channel and norm (the L2
normalization of fluid's ``l2_normalize``)."""

from __future__ import annotations

from fluidcompat_ops.registry import GradDef, OpDef, _op, lookup, register
from fluidcompat_ops.shapes import _channels_first, _x, first, norm_axis, prod_or_unknown, same_as

torch = None  # NOTE: [Lazy torch] in registry.py
F = None


# -- batch_norm, layer_norm ---------------------------------------------------------------------------------
def _bn_infer(ins, attrs):
    x = first(ins, "X")
    c = x.shape[-1] if attrs["data_layout"] == "NHWC" else x.shape[1]
    for slot in ("Scale", "Bias", "Mean", "Variance"):
        v = first(ins, slot)
        if c >= 0 and tuple(v.shape) != (c,):
            raise ValueError(f"{slot} must have shape ({c},). Received: {slot}.shape={v.shape}")
    stat = ((c,), first(ins, "Scale").dtype)  # float32 statistics for a float16 X (mixed precision)
    return {
        "Y": [(x.shape, x.dtype)],
        "MeanOut": [stat],
        "VarianceOut": [stat],
        "SavedMean": [stat],
        "SavedVariance": [stat],
    }


def _inv_std(var, eps):
    return 1.0 / rounded_sqrt(var + eps)


def _bn_affine(x, mean, inv, scale, bias, view):
    """Normalized ``x`` in fluid 1.8's arithmetic (bit for bit on the CPU): per channel
    ``x * (inv * scale) + (bias - mean * inv * scale)``."""
    new_scale = inv * scale
    new_bias = bias - mean * inv * scale
    return x * new_scale.reshape(view) + new_bias.reshape(view)


def _bn_kernel(ins, attrs):
    x = ins["X"][0]
    scale, bias, mean, var = (ins[k][0] for k in ("Scale", "Bias", "Mean", "Variance"))
    if x.dtype != scale.dtype:  # a float16 X with float32 parameters (mixed precision): Y in X's type
        y = _bn_kernel({**ins, "X": [x.to(scale.dtype)]}, attrs)
        y["Y"] = [y["Y"][0].to(x.dtype)]
        return y
    ch_axis = x.dim() - 1 if attrs["data_layout"] == "NHWC" else 1
    view = [1] * x.dim()
    view[ch_axis] = -1
    eps = attrs["epsilon"]
    if attrs["is_test"] or attrs["use_global_stats"]:
        inv = _inv_std(var, eps)
        y = _bn_affine(x, mean, inv, scale, bias, view)
        return {"Y": [y], "MeanOut": [mean], "VarianceOut": [var], "SavedMean": [mean], "SavedVariance": [inv]}
    if x.numel() == x.shape[ch_axis]:  # one value per channel: fluid 1.8 passed X through, statistics kept
        zeros = torch.zeros_like(mean)
        saved = {"SavedMean": [zeros], "SavedVariance": [zeros]}
        return {"Y": [x.clone()], "MeanOut": [mean], "VarianceOut": [var], **saved}
    dims = [d for d in range(x.dim()) if d != ch_axis]
    bmean = x.mean(dim=dims)
    bvar = x.var(dim=dims, unbiased=False)
    inv = _inv_std(bvar, eps)
    y = _bn_affine(x, bmean, inv, scale, bias, view)
    mom = attrs["momentum"]
    mt = first(ins, "MomentumTensor")
    if mt is not None:
        mom = mt.reshape(-1)[0].item()
    return {
        "Y": [y],
        "MeanOut": [mean * mom + bmean * (1 - mom)],
        "VarianceOut": [var * mom + bvar * (1 - mom)],
        "SavedMean": [bmean],
        "SavedVariance": [inv],
    }


register(
    OpDef(
        "batch_norm",
        ("X", "Scale", "Bias", "Mean", "Variance", "MomentumTensor"),
        ("Y", "MeanOut", "VarianceOut", "SavedMean", "SavedVariance"),
        {
            "momentum": 0.9,
            "epsilon": 1e-5,
            "is_test": False,
            "data_layout": "NCHW",
            "use_global_stats": False,
            "trainable_statistics": False,
            "fuse_with_relu": False,
            "use_mkldnn": False,
        },
        _bn_infer,
        _bn_kernel,
        host_inputs=frozenset({"MomentumTensor"}),
        grad=GradDef(
            ("X", "Scale", "Bias", "SavedMean", "SavedVariance"),
            out_grads=("Y",),
            in_grads=("X", "Scale", "Bias"),
            kernel=lambda ins, a: _bn_grad(ins, a),
        ),
    )
)


def _bn_grad(ins, attrs):
    x, scale, g = ins["X"][0], ins["Scale"][0], ins["Y@GRAD"][0]
    if x.dtype != scale.dtype:  # mixed precision: X@GRAD in X's type, the others in the parameters'
        grads = _bn_grad({**ins, "X": [x.to(scale.dtype)], "Y@GRAD": [g.to(scale.dtype)]}, attrs)
        grads["X@GRAD"] = [grads["X@GRAD"][0].to(x.dtype)]
        return grads
    mean, inv = ins["SavedMean"][0], ins["SavedVariance"][0]
    ch_axis = x.dim() - 1 if attrs["data_layout"] == "NHWC" else 1
    if x.numel() == x.shape[ch_axis] and not (attrs["is_test"] or attrs["use_global_stats"]):
        zeros = torch.zeros_like(scale)  # Y was X (see _bn_kernel): dX is dY, Scale and Bias had no part
        return {"X@GRAD": [g.clone()], "Scale@GRAD": [zeros], "Bias@GRAD": [zeros.clone()]}
    view = [1] * x.dim()
    view[ch_axis] = -1
    dims = [d for d in range(x.dim()) if d != ch_axis]
    xhat = (x - mean.reshape(view)) * inv.reshape(view)
    dbias = g.sum(dim=dims)
    dscale = (g * xhat).sum(dim=dims)
    k = (scale * inv).reshape(view)
    if attrs["is_test"] or attrs["use_global_stats"]:
        dx = g * k
    else:
        n = x.numel() // x.shape[ch_axis]
        dx = k / n * (n * g - dbias.reshape(view) - xhat * dscale.reshape(view))
    return {"X@GRAD": [dx], "Scale@GRAD": [dscale], "Bias@GRAD": [dbias]}


def _ln_infer(ins, attrs):
    x = first(ins, "X")
    axis = attrs["begin_norm_axis"]
    if not 0 < axis < len(x.shape):
        raise ValueError(f"begin_norm_axis must be in [1, {len(x.shape)}). Received: begin_norm_axis={axis}")
    left = prod_or_unknown(x.shape[:axis])
    right = prod_or_unknown(x.shape[axis:])
    for slot in ("Scale", "Bias"):
        v = first(ins, slot)
        if v is not None and right >= 0 and tuple(v.shape) != (right,):
            raise ValueError(f"{slot} must have shape ({right},). Received: {slot}.shape={v.shape}")
    return {"Y": [(x.shape, x.dtype)], "Mean": [((left,), x.dtype)], "Variance": [((left,), x.dtype)]}


def _ln_kernel(ins, attrs):
    x = ins["X"][0]
    axis = attrs["begin_norm_axis"]
    left = 1
    for d in x.shape[:axis]:
        left *= d
    x2 = x.reshape(left, -1)
    mean = x2.mean(dim=1)
    var = x2.var(dim=1, unbiased=False)
    y = (x2 - mean[:, None]) / rounded_sqrt(var + attrs["epsilon"])[:, None]  # fluid's arithmetic, bit for bit
    scale, bias = first(ins, "Scale"), first(ins, "Bias")
    if scale is not None:
        y = y * scale
    if bias is not None:
        y = y + bias
    return {"Y": [y.reshape(x.shape)], "Mean": [mean], "Variance": [var]}


register(
    OpDef(
        "layer_norm",
        ("X", "Scale", "Bias"),
        ("Y", "Mean", "Variance"),
        {"epsilon": 1e-5, "begin_norm_axis": 1},
        _ln_infer,
        _ln_kernel,
        grad=GradDef(("X", "Scale", "Bias"), out_grads=("Y",), in_grads=("X", "Scale", "Bias")),
    )
)


# -- group_norm, instance_norm, lrn, affine_channel ------------------------------------------------
def _group_norm(ins, a):
    x, scale, bias = _x(ins), first(ins, "Scale"), first(ins, "Bias")
    n, g = x.shape[0], a["groups"]
    xg = x.reshape(n, g, -1)
    mean = xg.mean(-1)
    var = xg.var(-1, unbiased=False)
    y = ((xg - mean[..., None]) / torch.sqrt(var[..., None] + a["epsilon"])).reshape(x.shape)
    shape = (1, -1) + (1,) * (x.dim() - 2)
    if scale is not None:
        y = y * scale.reshape(shape)
    if bias is not None:
        y = y + bias.reshape(shape)
    return {"Y": [y], "Mean": [mean], "Variance": [var]}


def _group_norm_infer(ins, a):
    x = first(ins, "X")
    return {
        "Y": [(x.shape, x.dtype)],
        "Mean": [((x.shape[0], a["groups"]), x.dtype)],
        "Variance": [((x.shape[0], a["groups"]), x.dtype)],
    }


register(
    OpDef(
        "group_norm",
        ("X", "Scale", "Bias"),
        ("Y", "Mean", "Variance"),
        {"epsilon": 1e-5, "groups": 1, "data_layout": "NCHW"},
        *_channels_first(_group_norm, _group_norm_infer, "X", ("Y",), "data_layout", "NHWC"),
        grad=GradDef(out_grads=("Y",)),
    )
)


def _instance_norm(ins, a):
    x, scale, bias = _x(ins), first(ins, "Scale"), first(ins, "Bias")
    n, c = x.shape[:2]
    xf = x.reshape(n, c, -1)
    mean = xf.mean(-1)
    var = xf.var(-1, unbiased=False)
    y = ((xf - mean[..., None]) / torch.sqrt(var[..., None] + a["epsilon"])).reshape(x.shape)
    shape = (1, -1) + (1,) * (x.dim() - 2)
    if scale is not None:
        y = y * scale.reshape(shape)
    if bias is not None:
        y = y + bias.reshape(shape)
    return {"Y": [y], "SavedMean": [mean.reshape(-1)], "SavedVariance": [torch.rsqrt(var + a["epsilon"]).reshape(-1)]}


def _instance_norm_infer(ins, a):
    x = first(ins, "X")
    nc = x.shape[0] * x.shape[1] if x.shape[0] >= 0 and x.shape[1] >= 0 else -1
    return {"Y": [(x.shape, x.dtype)], "SavedMean": [((nc,), x.dtype)], "SavedVariance": [((nc,), x.dtype)]}


register(
    OpDef(
        "instance_norm",
        ("X", "Scale", "Bias"),
        ("Y", "SavedMean", "SavedVariance"),
        {"epsilon": 1e-5},
        _instance_norm_infer,
        _instance_norm,
        grad=GradDef(out_grads=("Y",)),
    )
)


def _lrn(ins, a):
    x = _x(ins)
    n, k, alpha, beta = a["n"], a["k"], a["alpha"], a["beta"]
    sq = (x * x).unsqueeze(1)
    pad = F.pad(sq, (0, 0, 0, 0, n // 2, (n - 1) // 2))
    s = F.avg_pool3d(pad, (n, 1, 1), stride=1).squeeze(1) * n
    mid = k + alpha * s
    return {"Out": [x / mid**beta], "MidOut": [mid]}


register(
    OpDef(
        "lrn",
        ("X",),
        ("Out", "MidOut"),
        {"n": 5, "k": 1.0, "alpha": 1e-4, "beta": 0.75, "data_format": "AnyLayout", "is_test": False},
        same_as("X", "Out", "MidOut"),
        _channels_first(_lrn, None, "X", ("Out", "MidOut"), "data_format", "NHWC")[1],
        grad=GradDef(),
    )
)


def _affine_channel(ins, a):
    x, scale, bias = _x(ins), ins["Scale"][0], ins["Bias"][0]
    shape = (1, -1) + (1,) * (x.dim() - 2) if a["data_layout"] == "NCHW" else (1,) * (x.dim() - 1) + (-1,)
    return {"Out": [x * scale.reshape(shape) + bias.reshape(shape)]}


_op("affine_channel", ("X", "Scale", "Bias"), ("Out",), {"data_layout": "NCHW"}, same_as(), _affine_channel)


# -- spectral_norm ---------------------------------------------------------------------------------
def _spectral_norm(ins, a):
    w, u, v = ins["Weight"][0], ins["U"][0], ins["V"][0]
    dim = a["dim"]
    perm = [dim] + [i for i in range(w.dim()) if i != dim]
    mat = w.permute(perm).reshape(w.shape[dim], -1)
    with torch.no_grad():
        u, v = u.clone(), v.clone()
        for _ in range(a["power_iters"]):
            v = F.normalize(mat.t() @ u, dim=0, eps=a["eps"])
            u = F.normalize(mat @ v, dim=0, eps=a["eps"])
    sigma = u @ mat @ v
    return {"Out": [w / sigma]}


_op(
    "spectral_norm",
    ("Weight", "U", "V"),
    ("Out",),
    {"dim": 0, "power_iters": 1, "eps": 1e-12},
    same_as("Weight"),
    _spectral_norm,
)


# -- inplace_abn -----------------------------------------------------------------------------------
_BATCH_NORM = lookup("batch_norm")  # inplace_abn is batch_norm and its activation in one op


def _inplace_abn(ins, a):
    result = dict(_bn_kernel(ins, a))
    y = result["Y"][0]
    act = a.get("activation", "identity")
    if act == "leaky_relu":
        y = F.leaky_relu(y, a["alpha"])
    elif act == "elu":
        y = F.elu(y, a["alpha"])
    elif act != "identity":
        raise ValueError(f"inplace_abn: activation must be identity, leaky_relu or elu. Received: {act!r}")
    result["Y"] = [y]
    return result


register(
    OpDef(
        "inplace_abn",
        _BATCH_NORM.inputs,
        _BATCH_NORM.outputs,
        dict(_BATCH_NORM.attrs, activation="identity", alpha=1.0),
        _bn_infer,
        _inplace_abn,
        host_inputs=frozenset({"MomentumTensor"}),
        grad=GradDef(
            ("X", "Scale", "Bias", "Mean", "Variance", "MomentumTensor"),
            out_grads=("Y",),
            in_grads=("X", "Scale", "Bias"),
        ),
    )
)


# -- data_norm: normalization by accumulated batch statistics ---------------------------------------
def _slot_mask(x, slot_dim):
    """1 where the slot's first column (its "show") is non-zero, for every column of that slot."""
    show = x[:, ::slot_dim] != 0
    return show.repeat_interleave(slot_dim, dim=1)[:, : x.shape[1]].to(x.dtype)


def _data_norm(ins, a):
    x = _x(ins)
    size, total, square = ins["BatchSize"][0], ins["BatchSum"][0], ins["BatchSquareSum"][0]
    means = total / size
    scales = torch.sqrt(size / square)
    y = (x - means) * scales
    if a["enable_scale_and_shift"]:
        y = y * ins["scale_w"][0] + ins["bias"][0]
    if a["slot_dim"] > 0:  # slots whose show is 0 give 0
        y = y * _slot_mask(x, a["slot_dim"])
    return {"Y": [y], "Means": [means], "Scales": [scales]}


def _data_norm_grad(ins, a):
    """fluid 1.8's data_norm_grad. X gets dY * Scales (* scale_w, and masked by the slots when both
    options are on); scale_w and bias their true gradients (over the non-empty slots). The statistics
    get what the optimizer adds to them: without slots the batch size, the sum and the sum of squared
    deviations from Means plus epsilon per row; with slots, per column over the rows whose slot
    shows: 1, the mean, and the mean squared deviation plus epsilon times that count."""
    x, means, scales, dy = ins["X"][0], ins["Means"][0], ins["Scales"][0], ins["Y@GRAD"][0]
    slot, shift = a["slot_dim"] > 0, a["enable_scale_and_shift"]
    mask = _slot_mask(x, a["slot_dim"]) if slot else torch.ones_like(x)
    norm = (x - means) * scales
    dx = dy * scales
    result = {}
    if shift:
        dx = dx * ins["scale_w"][0] * mask
        result["scale_w@GRAD"] = [(dy * norm * mask).sum(0)]
        result["bias@GRAD"] = [(dy * mask).sum(0)]
    result["X@GRAD"] = [dx]
    sq = (x - means) ** 2
    eps = a["epsilon"]
    if slot:
        count = mask.sum(0)
        safe = count.clamp(min=1)
        has = (count > 0).to(x.dtype)
        result["BatchSize@GRAD"] = [has]
        result["BatchSum@GRAD"] = [(x * mask).sum(0) / safe * has]
        result["BatchSquareSum@GRAD"] = [((sq * mask).sum(0) / safe + eps * count) * has]
    else:
        n = x.shape[0]
        result["BatchSize@GRAD"] = [torch.full_like(means, float(n))]
        result["BatchSum@GRAD"] = [x.sum(0)]
        result["BatchSquareSum@GRAD"] = [(sq + eps).sum(0)]
    return result


def _data_norm_infer(ins, a):
    x = first(ins, "X")
    c = x.shape[-1]
    return {"Y": [(x.shape, x.dtype)], "Means": [((c,), x.dtype)], "Scales": [((c,), x.dtype)]}


register(
    OpDef(
        "data_norm",
        ("X", "BatchSize", "BatchSum", "BatchSquareSum", "scale_w", "bias"),
        ("Y", "Means", "Scales"),
        {
            "epsilon": 1e-5,
            "slot_dim": -1,
            "data_layout": "NCHW",
            "summary_decay_rate": 0.9999999,
            "enable_scale_and_shift": False,
            "sync_stats": False,
        },
        _data_norm_infer,
        _data_norm,
        grad=GradDef(
            ("X", "Means", "Scales", "scale_w", "bias"),
            out_grads=("Y",),
            in_grads=("X", "BatchSize", "BatchSum", "BatchSquareSum", "scale_w", "bias"),
            kernel=_data_norm_grad,
        ),
    )
)


# -- norm: x / sqrt(sum(x^2) + epsilon) along an axis ----------------------------------------------
def _norm_infer(ins, attrs):
    x = first(ins, "X")
    axis = norm_axis(attrs["axis"], len(x.shape))
    nshape = list(x.shape)
    nshape[axis] = 1
    return {"Out": [(x.shape, x.dtype)], "Norm": [(nshape, x.dtype)]}


def _norm_grad(ins, attrs):
    """dX = (dOut - Out * sum(dOut * Out)) / Norm, with Out = X / Norm."""
    x, n, g = ins["X"][0], ins["Norm"][0], ins["Out@GRAD"][0].reshape(ins["X"][0].shape)
    y = x / n
    return {"X@GRAD": [(g - y * (g * y).sum(dim=attrs["axis"], keepdim=True)) / n]}


def rounded_sqrt(t):
    """``sqrt(t)`` correctly rounded, as fluid's Eigen kernels computed it (torch's float32 sqrt can
    be an ulp off; through float64 it rounds right)."""
    return torch.sqrt(t.to(torch.float64)).to(t.dtype)


def _norm_kernel(ins, attrs):
    x = ins["X"][0]
    norm = rounded_sqrt(torch.sum(x * x, dim=attrs["axis"], keepdim=True) + attrs["epsilon"])
    return {"Out": [x / norm], "Norm": [norm]}


register(
    OpDef(
        "norm",
        ("X",),
        ("Out", "Norm"),
        {"axis": 1, "epsilon": 1e-10},
        _norm_infer,
        _norm_kernel,
        grad=GradDef(("X", "Norm"), kernel=_norm_grad),
    )
)
