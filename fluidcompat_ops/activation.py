"""Activation ops (fluid 1.8's activation_op.cc and friends): one-input elementwise functions
(relu, sigmoid, tanh, exp, log, sqrt, abs, sin, ceil, round, softplus, gelu, elu, relu6, swish,
hard_sigmoid, hard_swish, acos, erf, log1p, the shrinks, brelu, soft_relu, stanh, selu, mish, ...),
softmax, log_softmax, pow, maxout and prelu.

``_unary`` registers a one-input op, whose output takes its input's lod_level when built (lod_levels.py)."""

from __future__ import annotations

import math

from fluidcompat import lod_levels
from fluidcompat_ops.registry import GradDef, OpDef, _op, register
from fluidcompat_ops.shapes import _x, first, norm_axis, out, same_as

torch = None  # NOTE: [Lazy torch] in registry.py
F = None


# -- activations ---------------------------------------------------------------------------------------
def _zero_grad(ins, a):
    return {"X@GRAD": [torch.zeros_like(ins["Out@GRAD"][0])]}


def _unary(name, fn, attrs=None, out_grad=None, zero_grad=False, x_grad=None, infer=None):
    """A one-input activation. ``out_grad(out, g, attrs)`` computes its gradient from its output, as
    fluid's ``<name>_grad`` does, ``x_grad(x, g, attrs)`` from its input; without either the gradient
    is a VJP from X. ``zero_grad``: fluid's ``<name>_grad`` gives zeros (floor, ceil, round). Where an
    activation has edges (relu6, brelu, hard_sigmoid, ...) fluid's gradient there is 0: the explicit
    grads keep fluid's strict comparisons, which a VJP through torch.clamp would not."""
    if zero_grad:
        grad = GradDef((), in_grads=("X",), kernel=_zero_grad)
    elif x_grad is not None:
        grad = GradDef(
            ("X",), kernel=lambda ins, a: {"X@GRAD": [x_grad(ins["X"][0], ins["Out@GRAD"][0], a)]}, double=True
        )
    elif out_grad is not None:
        grad = GradDef(
            ("Out",),
            in_grads=("X",),
            kernel=lambda ins, a: {"X@GRAD": [out_grad(ins["Out"][0], ins["Out@GRAD"][0], a)]},
            double=True,
        )
    else:
        grad = GradDef()
    kernel = lambda ins, a: {"Out": [fn(ins["X"][0], a)]}  # noqa: E731
    lod_levels.takes_x_lod(name)
    register(OpDef(name, ("X",), ("Out",), attrs or {}, infer or same_as(), kernel, grad=grad))


def _softmax_infer(ins, a):
    rank = len(first(ins, "X").shape)
    if not -rank <= a["axis"] < rank:  # fluid 1.8.5's check when built
        raise ValueError(
            "Attr(axis) value should be in range [-R, R-1], R is the rank of Input(X). "
            f"Received: axis={a['axis']}, R={rank}"
        )
    return same_as()(ins, a)


_unary("relu", lambda x, a: torch.relu(x), out_grad=lambda o, g, a: torch.ops.aten.threshold_backward(g, o, 0))
_unary("sigmoid", lambda x, a: torch.sigmoid(x), out_grad=lambda o, g, a: g * o * (1.0 - o))
_unary("tanh", lambda x, a: torch.tanh(x), out_grad=lambda o, g, a: g * (1.0 - o * o))
_unary("exp", lambda x, a: torch.exp(x), out_grad=lambda o, g, a: g * o)
_unary("log", lambda x, a: torch.log(x), x_grad=lambda x, g, a: g / x)
_unary("sqrt", lambda x, a: torch.sqrt(x), out_grad=lambda o, g, a: g * 0.5 / o)
_unary("rsqrt", lambda x, a: torch.rsqrt(x), out_grad=lambda o, g, a: -0.5 * g * o * o * o)
_unary("square", lambda x, a: torch.square(x), x_grad=lambda x, g, a: g * 2.0 * x)
_unary("abs", lambda x, a: torch.abs(x), x_grad=lambda x, g, a: g * torch.sign(x))
_unary("sin", lambda x, a: torch.sin(x), x_grad=lambda x, g, a: g * torch.cos(x))
_unary("cos", lambda x, a: torch.cos(x), x_grad=lambda x, g, a: -g * torch.sin(x))
_unary("ceil", lambda x, a: torch.ceil(x), zero_grad=True)
_unary("floor", lambda x, a: torch.floor(x), zero_grad=True)
# torch rounds halves to even, as fluid 1.8.5's vectorized loop did for all but an array's last few
# elements (those it rounded away from zero: the result depended on the position)
_unary("round", lambda x, a: torch.round(x), zero_grad=True)
_unary("reciprocal", lambda x, a: torch.reciprocal(x))
_unary("softsign", lambda x, a: F.softsign(x))
_unary("logsigmoid", lambda x, a: F.logsigmoid(x))
_unary("softplus", lambda x, a: F.softplus(x))
_unary("gelu", lambda x, a: F.gelu(x, approximate="tanh" if a["approximate"] else "none"), {"approximate": False})
_unary("leaky_relu", lambda x, a: F.leaky_relu(x, a["alpha"]), {"alpha": 0.02})
_unary("elu", lambda x, a: F.elu(x, a["alpha"]), {"alpha": 1.0})
_unary(
    "relu6",
    lambda x, a: torch.clamp(x, 0.0, a["threshold"]),
    {"threshold": 6.0},
    out_grad=lambda o, g, a: g * ((o > 0) & (o < a["threshold"])).to(g.dtype),
)
_unary("swish", lambda x, a: x * torch.sigmoid(a["beta"] * x), {"beta": 1.0})
_unary(
    "hard_sigmoid",
    lambda x, a: torch.clamp(a["slope"] * x + a["offset"], 0.0, 1.0),
    {"slope": 0.2, "offset": 0.5},
    out_grad=lambda o, g, a: g * ((o > 0) & (o < 1)).to(g.dtype) * a["slope"],
)
_unary(
    "hard_swish",
    lambda x, a: x * torch.clamp(x + a["offset"], 0.0, a["threshold"]) / a["scale"],
    {"threshold": 6.0, "scale": 6.0, "offset": 3.0},
    x_grad=lambda x, g, a: g * _hard_swish_slope(x, a),
)


def _hard_swish_slope(x, a):
    """(2x + offset) / scale strictly between the edges, 1 from the upper one on, 0 below."""
    shifted = x + a["offset"]
    inside = ((shifted > 0) & (shifted < a["threshold"])).to(x.dtype)
    return inside * (2 * x + a["offset"]) / a["scale"] + (shifted >= a["threshold"]).to(x.dtype)


def clipped_logits(x, axis):
    """``x`` minus its maximum along ``axis``, clipped at -64: what fluid's softmax exponentiates, so that no
    probability underflows to 0 (the least is e^-64 / the sum) and a cross entropy of it stays finite."""
    if x.numel() == 0:
        return x
    return (x - x.amax(axis, keepdim=True).detach()).clamp_min_(-64.0)


_E_MINUS_64 = math.exp(-64.0)


def _softmax(x, axis):
    """fluid's softmax: exp of the clipped logits times 1 / their sum. On the CPU along fewer than 16
    classes spelled out (torch's softmax kernel takes up to 5x longer there). Else torch's softmax with
    each value raised to at least e^-64 times its row's largest, which is what the clip gives (the sum
    differs from the clipped one by less than classes * 1.6e-28): one pass fewer, and under autograd
    (dygraph) one node, whose backward reads the raised values as fluid's softmax_grad reads its Out."""
    if x.device.type == "cpu" and x.dim() and x.shape[axis] < 16 and not x.requires_grad and x.numel():
        z = clipped_logits(x, axis).exp_()
        return z.mul_(z.sum(axis, keepdim=True).reciprocal_())
    out = torch.softmax(x, axis)
    if out.numel():
        values = out.data  # the same memory, out of autograd's sight: raising it is no change it must see
        values.clamp_min_(values.amax(axis, keepdim=True).mul_(_E_MINUS_64))
    return out


_unary(
    "softmax",
    lambda x, a: _softmax(x, a["axis"]),
    {"axis": -1, "use_cudnn": False, "data_format": "AnyLayout", "is_test": False},
    out_grad=lambda o, g, a: torch._softmax_backward_data(g.to(o.dtype), o, a["axis"] % max(o.dim(), 1), o.dtype),
    infer=_softmax_infer,
)
_unary("log_softmax", lambda x, a: torch.log_softmax(x, a["axis"]), {"axis": -1})


def _pow_kernel(ins, attrs):
    ft = first(ins, "FactorTensor")
    factor = ft.reshape(-1)[0].item() if ft is not None else attrs["factor"]
    return {"Out": [torch.pow(ins["X"][0], factor)]}


register(
    OpDef(
        "pow",
        ("X", "FactorTensor"),
        ("Out",),
        {"factor": 1.0},
        same_as(),
        _pow_kernel,
        host_inputs=frozenset({"FactorTensor"}),
        grad=GradDef(),
    )
)


# -- acos ... mish: more of activation_op.cc -------------------------------------------------------
_unary("acos", lambda x, a: torch.acos(x))
_unary("asin", lambda x, a: torch.asin(x))
_unary("atan", lambda x, a: torch.atan(x))
_unary("erf", lambda x, a: torch.erf(x))
_unary("log1p", lambda x, a: torch.log1p(x))
_unary("tanh_shrink", lambda x, a: x - torch.tanh(x))
_unary("hard_shrink", lambda x, a: F.hardshrink(x, a["threshold"]), {"threshold": 0.5})
_unary("softshrink", lambda x, a: F.softshrink(x, a["lambda"]), {"lambda": 0.5})
_unary("thresholded_relu", lambda x, a: torch.where(x > a["threshold"], x, torch.zeros_like(x)), {"threshold": 1.0})
_unary(
    "brelu",
    lambda x, a: torch.clamp(x, a["t_min"], a["t_max"]),
    {"t_min": 0.0, "t_max": 24.0},
    x_grad=lambda x, g, a: g * ((x > a["t_min"]) & (x < a["t_max"])).to(g.dtype),
)
_unary(
    "soft_relu",
    lambda x, a: torch.log1p(torch.exp(torch.clamp(x, -a["threshold"], a["threshold"]))),
    {"threshold": 40.0},
    out_grad=lambda o, g, a: g * (1 - torch.exp(-o)) * ((o > -a["threshold"]) & (o < a["threshold"])).to(g.dtype),
)
_unary("stanh", lambda x, a: a["scale_b"] * torch.tanh(a["scale_a"] * x), {"scale_a": 0.67, "scale_b": 1.7159})
_unary(
    "selu",
    lambda x, a: a["scale"] * torch.where(x > 0, x, a["alpha"] * (torch.exp(x) - 1)),
    {"scale": 1.0507009873554804934193349852946, "alpha": 1.6732632423543772848170429916717},
    out_grad=lambda o, g, a: torch.where(o > 0, g * a["scale"], g * (o + a["scale"] * a["alpha"])),
)


def _mish_softplus(x, a):
    return torch.where(x > a["threshold"], x, torch.log1p(torch.exp(x)))


def _mish_grad(x, g, a):
    """fluid's: x * (1 - tanh(sp)^2) * (1 - e^-sp) + tanh(sp), sp the softplus (x itself above threshold):
    no inf * 0 for large x."""
    sp = _mish_softplus(x, a)
    tsp = torch.tanh(sp)
    return g * (x * (1 - tsp * tsp) * (1 - torch.exp(-sp)) + tsp)


_unary("mish", lambda x, a: x * torch.tanh(_mish_softplus(x, a)), {"threshold": 20.0}, x_grad=_mish_grad)


# -- maxout, prelu ---------------------------------------------------------------------------------
def _maxout_infer(ins, a):
    x, g = first(ins, "X"), a["groups"]
    shape = list(x.shape)
    axis = norm_axis(a["axis"], len(shape))
    shape[axis] = shape[axis] // g if shape[axis] >= 0 else -1
    return out("Out", shape, x.dtype)


def _maxout_groups(x, a):
    """X with its channel axis split into (channels // groups, groups), and the axis of the groups."""
    g, axis = a["groups"], norm_axis(a["axis"], x.dim())
    shape = list(x.shape)
    return x.reshape(shape[:axis] + [shape[axis] // g, g] + shape[axis + 1 :]), axis + 1


def _maxout(ins, a):
    grouped, axis = _maxout_groups(_x(ins), a)
    return {"Out": [grouped.amax(axis)]}


def _maxout_grad(ins, a):
    """fluid's: each output's gradient goes to the first input of its group equal to it."""
    x, o, g = ins["X"][0], ins["Out"][0], ins["Out@GRAD"][0]
    grouped, axis = _maxout_groups(x, a)
    hit = grouped == o.unsqueeze(axis)
    first_hit = hit & (hit.cumsum(axis) == 1)
    return {"X@GRAD": [(first_hit * g.unsqueeze(axis)).reshape(x.shape)]}


register(
    OpDef(
        "maxout",
        ("X",),
        ("Out",),
        {"groups": 1, "axis": 1},
        _maxout_infer,
        _maxout,
        grad=GradDef(("X", "Out"), kernel=_maxout_grad),
    )
)


def _prelu(ins, a):
    x, alpha = _x(ins), ins["Alpha"][0]
    if a["mode"] == "channel":
        alpha = alpha.reshape((1, -1) + (1,) * (x.dim() - 2))
    elif a["mode"] == "element":
        alpha = alpha.reshape((1,) + tuple(x.shape[1:]))
    else:
        alpha = alpha.reshape(())
    return {"Out": [torch.where(x > 0, x, alpha * x)]}


_op("prelu", ("X", "Alpha"), ("Out",), {"mode": "all"}, same_as(), _prelu)
