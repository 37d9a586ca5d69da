"""Loss ops: cross_entropy, cross_entropy2, softmax_with_cross_entropy, sigmoid_cross_entropy_with_logits,
nll_loss, bce_loss, hinge_loss, modified_huber_loss, label_smooth, log_loss, smooth_l1_loss, kldiv_loss,
huber_loss, margin_rank_loss, rank_loss, bpr_loss, teacher_student_sigmoid_loss and center_loss; and the
losses over large label sets: hierarchical_sigmoid, sample_logits (sampled softmax) and nce."""

from __future__ import annotations

import math

from fluidcompat_ops.activation import clipped_logits
from fluidcompat_ops.registry import GradDef, OpDef, _op, register
from fluidcompat_ops.shapes import _x, dims_agree, first, norm_axis, out, same_as

torch = None  # NOTE: [Lazy torch] in registry.py
F = None


# -- cross_entropy, cross_entropy2, softmax_with_cross_entropy, sigmoid_cross_entropy --------------
def _check_label(x, label, soft):
    if soft:
        if not dims_agree(label.shape, x.shape):
            raise ValueError(
                f"with soft_label, Label must have X's shape. Received: X.shape={x.shape}, Label.shape={label.shape}"
            )
    elif not dims_agree(label.shape[:-1], x.shape[:-1]) or label.shape[-1] not in (1, -1):
        if not (len(label.shape) == len(x.shape) - 1 and dims_agree(label.shape, x.shape[:-1])):
            raise ValueError(
                "Label must have X's shape with the last dim 1. "
                f"Received: X.shape={tuple(x.shape)}, Label.shape={tuple(label.shape)}"
            )


def _ce_infer(two):
    def infer(ins, attrs):
        x, label = first(ins, "X"), first(ins, "Label")
        _check_label(x, label, attrs.get("soft_label", False))
        yshape = tuple(x.shape[:-1]) + (1,)
        res = {"Y": [(_y_shape(x.shape, label.shape), x.dtype)]}
        if two:
            res["XShape"] = [((0,) + tuple(x.shape), x.dtype)]
            res["MatchX"] = [(yshape, x.dtype)]
        return res

    return infer


def _y_shape(xshape, label_shape):
    """cross_entropy's Y: X's shape with the last dim 1, or the label's shape where the label has one
    dim fewer than X (fluid 1.8.5's, for cross_entropy2's Y too; its MatchX keeps the last dim 1)."""
    if len(label_shape) == len(xshape) - 1:
        return tuple(label_shape)
    return tuple(xshape[:-1]) + (1,)


def _bad_label(lab, classes, ignore_index):
    """fluid's message for a label outside [0, classes) that is not ignore_index, or None if none is."""
    bad = lab[((lab < 0) | (lab >= classes)) & (lab != ignore_index)]
    if bad.numel() == 0:
        return None
    return ValueError(
        "Variable value (label) of OP(fluid.layers.cross_entropy) expected >= 0 and < "
        f"{classes}, but got {int(bad.reshape(-1)[0])}. Please check label value."
    )


def _label_checked(call, lab, classes, ignore_index):
    """``call()``, whose torch index error for a label outside [0, classes) (and not ignore_index) becomes
    fluid's message (checked only when torch refuses: no cost otherwise)."""
    try:
        return call()
    except (RuntimeError, IndexError):
        error = _bad_label(lab, classes, ignore_index)
        if error is None:
            raise
        raise error from None


def _gather_labels(x, axis, index, lab, ignore_index):
    """``torch.gather(x, axis, index)`` with fluid's message for a label out of range."""
    return _label_checked(lambda: torch.gather(x, axis, index), lab, x.shape[axis], ignore_index)


def _label_rows(label):
    """The hard labels as one int64 vector, a row of X each."""
    return (label if label.dtype == torch.int64 else label.long()).reshape(-1)


def _picked(x, rows, ignore_index):
    """X[row, label] per row of X (its last dim the classes), 0 for rows whose label is ignore_index; a
    label out of range gets fluid's message."""
    flat = x if x.dim() == 2 else x.reshape(-1, x.shape[-1])
    loss = lambda: torch._C._nn.nll_loss(flat, rows, None, 0, ignore_index)  # noqa: E731
    nll = _label_checked(loss, rows, flat.shape[1], ignore_index)
    return nll.neg_()


_LOG_BOUND = 1e20  # fluid's TolerableValue


def _tolerable_log(t):
    """log, with -inf and inf as -1e20 and 1e20: fluid's cross entropies clip it so (0 * log 0 is 0)."""
    return torch.log(t).clamp_(-_LOG_BOUND, _LOG_BOUND)


def _hard_ce(x, label, ignore_index):
    """Y = -log X[label] and MatchX = X[label], both X's shape with the last dim 1; rows whose label is
    ignore_index: Y 0 and MatchX 0 (fluid leaves it unset)."""
    rows = _label_rows(label)
    shape = tuple(x.shape[:-1]) + (1,)
    if x.requires_grad:  # dygraph, which autograd differentiates: fewer autograd nodes
        ignored = (rows == ignore_index).reshape(shape)
        picked = _gather_labels(x, -1, rows.reshape(shape).masked_fill(ignored, 0), rows, ignore_index)
        logs = torch.log(picked)
        logs.data.clamp_(-_LOG_BOUND, _LOG_BOUND)  # out of autograd's sight (log's backward reads its input)
        return logs.neg_().masked_fill_(ignored, 0.0), picked.masked_fill(ignored, 0.0)
    picked = _picked(x, rows, ignore_index)
    logs = _tolerable_log(picked)
    # nll_loss over the logs as a column repeated for every class picks each row's log back, negated,
    # and 0 in ignored rows: -log X[label] in one call, no mask
    y = torch._C._nn.nll_loss(_columns(logs, x.shape[-1]), rows, None, 0, ignore_index)
    return y.reshape(shape), picked.reshape(shape)


def _columns(v, classes):
    """A fresh 1-D tensor ``v`` of n values as an [n, classes] view whose every column is ``v``."""
    return v.as_strided((v.shape[0], classes), (1, 0))


_ONE = {}  # (dtype, device) -> a 0-d tensor 1: nll_loss_backward's total_weight, unread without a reduction


def _hard_ce_grad(g, picked, rows, ignore_index, xshape):
    """dX: -dY / X[label] at each row's label, 0 elsewhere and in rows whose label is ignore_index."""
    quotient = torch.div(g.reshape(-1), picked.reshape(-1))
    one = _ONE.get((quotient.dtype, quotient.device))
    if one is None:
        one = quotient.new_ones(())
        if not (one.is_cuda and torch.cuda.is_current_stream_capturing()):  # not from a graph's private pool
            _ONE[(quotient.dtype, quotient.device)] = one
    like = _columns(quotient, xshape[-1])  # nll_loss_backward reads its shape, dtype and device
    dx = torch.ops.aten.nll_loss_backward(quotient, like, rows, None, 0, ignore_index, one)
    return dx if len(xshape) == 2 else dx.reshape(xshape)


def _ce_kernel(ins, attrs):
    x, label = ins["X"][0], ins["Label"][0]
    if attrs["soft_label"]:
        return {"Y": [-(label * _tolerable_log(x)).sum(dim=-1, keepdim=True)]}
    y = _hard_ce(x, label, attrs["ignore_index"])[0]
    return {"Y": [y.reshape(label.shape) if label.dim() == x.dim() - 1 else y]}


def _ce_grad(ins, attrs):
    """fluid's cross_entropy_grad: -label * dY / X with soft labels (0 / 0 where both are 0, as fluid's)."""
    x, label, g = ins["X"][0], ins["Label"][0], ins["Y@GRAD"][0]
    if attrs["soft_label"]:
        return {"X@GRAD": [-(label * g) / x]}
    rows, ignore_index = _label_rows(label), attrs["ignore_index"]
    return {"X@GRAD": [_hard_ce_grad(g, _picked(x, rows, ignore_index), rows, ignore_index, x.shape)]}


def _ce2_kernel(ins, attrs):
    x, label = ins["X"][0], ins["Label"][0]
    y, match = _hard_ce(x, label, attrs["ignore_index"])
    y = y.reshape(label.shape) if label.dim() == x.dim() - 1 else y
    return {"Y": [y], "MatchX": [match], "XShape": [x.new_empty((0,) + tuple(x.shape))]}


def _ce2_grad(ins, attrs):
    label, match, g = ins["Label"][0], ins["MatchX"][0], ins["Y@GRAD"][0]
    xshape = ins["XShape"][0].shape[1:]
    return {"X@GRAD": [_hard_ce_grad(g, match, _label_rows(label), attrs["ignore_index"], xshape)]}


register(
    OpDef(
        "cross_entropy",
        ("X", "Label"),
        ("Y",),
        {"soft_label": False, "ignore_index": -100},
        _ce_infer(False),
        _ce_kernel,
        grad=GradDef(("X", "Label"), out_grads=("Y",), in_grads=("X",), kernel=_ce_grad),
    )
)
register(
    OpDef(
        "cross_entropy2",
        ("X", "Label"),
        ("Y", "XShape", "MatchX"),
        {"ignore_index": -100},
        _ce_infer(True),
        _ce2_kernel,
        grad=GradDef(
            ("Label", "MatchX", "XShape"),
            out_grads=("Y",),
            in_grads=("X",),
            kernel=_ce2_grad,
            type="cross_entropy_grad2",
        ),
    )
)


def _swce_infer(ins, attrs):
    x, label = first(ins, "Logits"), first(ins, "Label")
    axis = norm_axis(attrs["axis"], len(x.shape))
    if attrs["soft_label"]:
        if not dims_agree(label.shape, x.shape):
            raise ValueError(f"with soft_label, Label must have Logits' shape. Received: {x.shape} vs {label.shape}")
    else:
        want = list(x.shape)
        want[axis] = 1
        if not dims_agree(label.shape, want):
            raise ValueError(
                "Label must have Logits' shape with the axis dim 1. "
                f"Received: Logits.shape={tuple(x.shape)}, Label.shape={tuple(label.shape)}, axis={attrs['axis']}"
            )
    lshape = list(x.shape)
    lshape[axis] = 1
    return {"Softmax": [(x.shape, x.dtype)], "Loss": [(lshape, x.dtype)]}


def _swce_kernel(ins, attrs):
    x, label = ins["Logits"][0], ins["Label"][0]
    axis = attrs["axis"] % x.dim()
    logp = torch.log_softmax(clipped_logits(x, axis), dim=axis)
    if attrs["soft_label"]:
        loss = -(label * logp).sum(dim=axis, keepdim=True)
    else:
        if label.dim() == x.dim() and any(label.shape[d] != x.shape[d] for d in range(x.dim()) if d != axis):
            raise ValueError("Input(Logits) and Input(Label) should in same shape in dimensions except axis.")
        lab = label.long()
        ignored = lab == attrs["ignore_index"]
        safe = torch.where(ignored, torch.zeros_like(lab), lab)
        loss = -_gather_labels(logp, axis, safe, lab, attrs["ignore_index"])
        loss = torch.where(ignored, torch.zeros_like(loss), loss)
    return {"Softmax": [torch.exp(logp)], "Loss": [loss]}


register(
    OpDef(
        "softmax_with_cross_entropy",
        ("Logits", "Label"),
        ("Softmax", "Loss"),
        {"soft_label": False, "ignore_index": -100, "numeric_stable_mode": True, "axis": -1},
        _swce_infer,
        _swce_kernel,
        grad=GradDef(
            ("Label", "Softmax"), out_grads=("Loss",), in_grads=("Logits",), kernel=lambda i, a: _swce_grad(i, a)
        ),
    )
)


def _swce_grad(ins, attrs):
    label, sm, g = ins["Label"][0], ins["Softmax"][0], ins["Loss@GRAD"][0]
    axis = attrs["axis"] % sm.dim()
    if attrs["soft_label"]:
        return {"Logits@GRAD": [(sm - label) * g]}
    lab = label.long()
    ignored = lab == attrs["ignore_index"]
    safe = torch.where(ignored, torch.zeros_like(lab), lab)
    d = sm.scatter_add(axis, safe, -torch.ones_like(safe, dtype=sm.dtype))
    d = d * g
    return {"Logits@GRAD": [torch.where(ignored, torch.zeros_like(d), d)]}


def _sigce_infer(ins, attrs):
    x, label = first(ins, "X"), first(ins, "Label")
    if tuple(x.shape) != tuple(label.shape):
        raise ValueError(
            f"X and Label must have the same shape. Received: X.shape={x.shape}, Label.shape={label.shape}"
        )
    return out("Out", x.shape, x.dtype)


def _sigce_kernel(ins, attrs):
    x, z = ins["X"][0], ins["Label"][0]
    loss = torch.clamp(x, min=0) - x * z + torch.log1p(torch.exp(-torch.abs(x)))
    return {"Out": [_sigce_masked(loss, z, attrs)]}


def _sigce_masked(values, z, attrs):
    """``values`` (the loss or its gradient) 0 where Label is ignore_index, and with normalize divided by
    the count of the other labels (at least 1)."""
    ignored = z == attrs["ignore_index"]
    values = torch.where(ignored, torch.zeros_like(values), values)
    if attrs["normalize"]:
        values = values / torch.clamp((~ignored).sum(), min=1)
    return values


def _sigce_grad(ins, attrs):
    """fluid's: (sigmoid(X) - Label) * dOut, 0 where Label is ignore_index (and / the count of the others
    with normalize); a VJP through max(X, 0) and |X| would give 1 - Label at X = 0, not 0.5 - Label."""
    x, z, g = ins["X"][0], ins["Label"][0], ins["Out@GRAD"][0]
    return {"X@GRAD": [_sigce_masked((torch.sigmoid(x) - z) * g, z, attrs)]}


register(
    OpDef(
        "sigmoid_cross_entropy_with_logits",
        ("X", "Label"),
        ("Out",),
        {"ignore_index": -100, "normalize": False},
        _sigce_infer,
        _sigce_kernel,
        grad=GradDef(("X", "Label"), in_grads=("X",), kernel=lambda i, a: _sigce_grad(i, a)),
    )
)


# -- nll_loss, bce_loss, hinge_loss, modified_huber_loss -------------------------------------------------
def _nll_infer(ins, attrs):
    x, label, w = first(ins, "X"), first(ins, "Label"), first(ins, "Weight")
    if len(x.shape) not in (2, 4):
        raise ValueError(f"The tensor rank of Input(X) must be 2 or 4. Received: X.shape={tuple(x.shape)}")
    if not dims_agree(label.shape, (x.shape[0],) + tuple(x.shape[2:])):
        raise ValueError(
            "Label must have X's shape without the class dim (X's dim 1). "
            f"Received: X.shape={tuple(x.shape)}, Label.shape={tuple(label.shape)}"
        )
    if w is not None and not dims_agree(w.shape, x.shape[1:2]):
        raise ValueError(f"Weight must hold one value per class. Received: {tuple(w.shape)}, X.shape={tuple(x.shape)}")
    shape = tuple(label.shape) if attrs["reduction"] == "none" else (1,)
    return {"Out": [(shape, x.dtype)], "Total_weight": [((1,), x.dtype)]}


def _nll_kernel(ins, attrs):
    """-X[label] * Weight[label] per sample (0 for ignore_index), summed, averaged over the weights
    taken (Total_weight; 0 when it is 0) or not reduced (Total_weight 0)."""
    x, w = ins["X"][0], first(ins, "Weight")
    lab, ignore = ins["Label"][0].long(), attrs["ignore_index"]
    classes = x.shape[1]
    try:
        loss = F.nll_loss(x, lab, w, ignore_index=ignore, reduction="none")
    except (RuntimeError, IndexError):
        bad = lab[((lab < 0) | (lab >= classes)) & (lab != ignore)]
        if bad.numel() == 0:
            raise
        first_bad = int(bad.reshape(-1)[0])
        raise ValueError(f"label should not be out of bounds: {first_bad} not in [0, {classes})") from None
    reduction = attrs["reduction"]
    if reduction == "none":
        return {"Out": [loss], "Total_weight": [x.new_zeros(1)]}
    kept = lab != ignore
    if w is None:
        total_weight = kept.sum().to(x.dtype)
    else:
        total_weight = (w[torch.where(kept, lab, 0)] * kept).sum()
    total = loss.sum()
    if reduction == "mean":  # 0 when every label is ignore_index, as fluid's
        total = total / torch.where(total_weight == 0, torch.ones_like(total_weight), total_weight)
    result = total
    return {"Out": [result.reshape(1)], "Total_weight": [total_weight.reshape(1)]}


register(
    OpDef(
        "nll_loss",
        ("X", "Label", "Weight"),
        ("Out", "Total_weight"),
        {"ignore_index": -100, "reduction": "mean"},
        _nll_infer,
        _nll_kernel,
        grad=GradDef(("X", "Label", "Weight"), out_grads=("Out",), in_grads=("X",)),
    )
)


def _same_shape_infer(a, b, result):
    def infer(ins, attrs):
        x, y = first(ins, a), first(ins, b)
        if not dims_agree(x.shape, y.shape):
            raise ValueError(
                f"{a} and {b} must have the same shape. Received: {a}.shape={tuple(x.shape)}, "
                f"{b}.shape={tuple(y.shape)}"
            )
        return {s: [(tuple(x.shape), x.dtype)] for s in result}

    return infer


register(
    OpDef(
        "bce_loss",
        ("X", "Label"),
        ("Out",),
        {},
        _same_shape_infer("X", "Label", ("Out",)),
        # -(Label * log X + (1 - Label) * log(1 - X)), each log at least -100, as fluid's
        lambda ins, a: {"Out": [F.binary_cross_entropy(ins["X"][0], ins["Label"][0], reduction="none")]},
        grad=GradDef(("X", "Label"), in_grads=("X",)),
    )
)

register(
    OpDef(
        "hinge_loss",
        ("Logits", "Labels"),
        ("Loss",),
        {},
        _same_shape_infer("Logits", "Labels", ("Loss",)),
        # max(0, 1 - (2 * Labels - 1) * Logits), Labels 0 or 1
        lambda ins, a: {"Loss": [torch.relu(1 - (2 * ins["Labels"][0] - 1) * ins["Logits"][0])]},
        grad=GradDef(("Logits", "Labels"), out_grads=("Loss",), in_grads=("Logits",)),
    )
)


def _modified_huber(ins, attrs):
    """v = X * (2Y - 1) (IntermediateVal); Out = -4v for v < -1, (1 - v)^2 for v < 1, else 0."""
    v = ins["X"][0] * (2 * ins["Y"][0] - 1)
    loss = torch.where(v < -1, -4 * v, torch.where(v < 1, (1 - v) * (1 - v), torch.zeros_like(v)))
    return {"IntermediateVal": [v], "Out": [loss]}


register(
    OpDef(
        "modified_huber_loss",
        ("X", "Y"),
        ("IntermediateVal", "Out"),
        {},
        _same_shape_infer("X", "Y", ("IntermediateVal", "Out")),
        _modified_huber,
        grad=GradDef(("X", "Y"), in_grads=("X",)),
    )
)


# -- label_smooth, log_loss, smooth_l1, kldiv, huber, margin_rank, rank, bpr, teacher_student ------
def _label_smooth(ins, a):
    x, prior = _x(ins), first(ins, "PriorDist")
    eps = a["epsilon"]
    if prior is not None:
        return {"Out": [(1 - eps) * x + eps * prior.reshape(1, -1)]}
    return {"Out": [(1 - eps) * x + eps / x.shape[-1]]}


_op("label_smooth", ("X", "PriorDist"), ("Out",), {"epsilon": 0.0}, same_as(), _label_smooth)


def _log_loss(ins, a):
    p, y, eps = ins["Predicted"][0], ins["Labels"][0], a["epsilon"]
    return {"Loss": [-y * torch.log(p + eps) - (1 - y) * torch.log(1 - p + eps)]}


def _log_loss_infer(ins, a):
    p, y = first(ins, "Predicted"), first(ins, "Labels")
    if len(p.shape) != 2 or p.shape[1] not in (1, -1):
        raise ValueError(
            "Each row of Input(Predicted) contains a real value, so the 2nd dimension of Input(X) must be 1, "
            f"but got Predicted.shape={tuple(p.shape)}"
        )
    if not dims_agree(p.shape, y.shape):
        raise ValueError(
            "The dimensions of Input(Predicted) must be equal to the dimensions of Input(Labels). "
            f"Received: Predicted.shape={tuple(p.shape)}, Labels.shape={tuple(y.shape)}"
        )
    return out("Loss", p.shape, p.dtype)


_op(
    "log_loss",
    ("Predicted", "Labels"),
    ("Loss",),
    {"epsilon": 1e-4},
    _log_loss_infer,
    _log_loss,
    grad=GradDef(out_grads=("Loss",), in_grads=("Predicted",)),  # fluid 1.8 gave the labels no gradient
)


def _smooth_l1(ins, a):
    x, y = ins["X"][0], ins["Y"][0]
    iw, ow = first(ins, "InsideWeight"), first(ins, "OutsideWeight")
    s2 = a["sigma"] ** 2
    d = x - y
    if iw is not None:
        d = d * iw
    ad = d.abs()
    v = torch.where(ad < 1.0 / s2, 0.5 * d * d * s2, ad - 0.5 / s2)
    if ow is not None:
        v = v * ow
    return {"Out": [v.reshape(v.shape[0], -1).sum(1, keepdim=True)], "Diff": [d]}


def _smooth_l1_infer(ins, a):
    x = first(ins, "X")
    return {"Out": [((x.shape[0], 1), x.dtype)], "Diff": [(x.shape, x.dtype)]}


register(
    OpDef(
        "smooth_l1_loss",
        ("X", "Y", "InsideWeight", "OutsideWeight"),
        ("Diff", "Out"),
        {"sigma": 1.0},
        _smooth_l1_infer,
        _smooth_l1,
        grad=GradDef(),
    )
)


def _kldiv(ins, a):
    x, t = ins["X"][0], ins["Target"][0]
    v = torch.where(t > 0, t * (torch.log(torch.clamp(t, min=1e-38)) - x), torch.zeros_like(t))
    r = a["reduction"]
    if r == "mean":
        v = v.mean().reshape(1)
    elif r == "sum":
        v = v.sum().reshape(1)
    elif r == "batchmean":
        v = (v.sum() / x.shape[0]).reshape(1)
    return {"Loss": [v]}


def _kldiv_infer(ins, a):
    x = first(ins, "X")
    return out("Loss", x.shape if a["reduction"] == "none" else (1,), x.dtype)


register(
    OpDef(
        "kldiv_loss",
        ("X", "Target"),
        ("Loss",),
        {"reduction": "mean"},
        _kldiv_infer,
        _kldiv,
        grad=GradDef(out_grads=("Loss",), in_grads=("X",)),  # fluid 1.8.5: no gradient for Target
    )
)


def _huber(ins, a):
    x, y, d = ins["X"][0], ins["Y"][0], a["delta"]
    r = y - x
    ar = r.abs()
    return {"Out": [torch.where(ar <= d, 0.5 * r * r, d * (ar - 0.5 * d))], "Residual": [r]}


register(
    OpDef(
        "huber_loss",
        ("X", "Y"),
        ("Out", "Residual"),
        {"delta": 1.0},
        same_as("X", "Out", "Residual"),
        _huber,
        grad=GradDef(),
    )
)


def _margin_rank(ins, a):
    label, x1, x2 = ins["Label"][0], ins["X1"][0], ins["X2"][0]
    act = -label * (x1 - x2) + a["margin"]
    return {"Out": [torch.relu(act)], "Activated": [(act > 0).to(x1.dtype)]}


def _same_shapes(a, b, a_slot: str, b_slot: str) -> None:
    """fluid 1.8.5's check that two inputs have one shape (dims unknown when built compare as -1)."""
    if list(a.shape) != list(b.shape):
        raise ValueError(
            f"The shape of Input({a_slot}) shape should equals the shape of Input({b_slot}). Received: "
            f"Input({a_slot})'s shape: {list(a.shape)}, Input({b_slot})'s shape: {list(b.shape)}. "
            f"({a_slot}: '{a.name}', {b_slot}: '{b.name}')"
        )


def _margin_rank_infer(ins, a):
    x1, x2, label = first(ins, "X1"), first(ins, "X2"), first(ins, "Label")
    _same_shapes(x1, x2, "X1", "X2")
    _same_shapes(label, x1, "Label", "X1")
    return same_as("X1", "Out", "Activated")(ins, a)


register(
    OpDef(
        "margin_rank_loss",
        ("X1", "X2", "Label"),
        ("Out", "Activated"),
        {"margin": 0.0},
        _margin_rank_infer,
        _margin_rank,
        grad=GradDef(in_grads=("X1", "X2")),  # fluid 1.8 gave the label no gradient
    )
)


def _rank_loss(ins, a):
    """Out (of Label's shape) = log(1 + exp(Left - Right)) - Label * (Left - Right); each input [N] or
    [N, 1], as fluid 1.8.5 took them."""
    label, left, right = ins["Label"][0], ins["Left"][0], ins["Right"][0]
    d = left.reshape(-1) - right.reshape(-1)
    return {"Out": [(torch.log1p(torch.exp(d)) - label.reshape(-1) * d).reshape(label.shape)]}


def _rank_loss_grad(ins, a):
    """fluid's: dLeft = dOut * (sigmoid(Left - Right) - Label), dRight its negative (finite where a
    VJP through log(1 + exp(d)) gives inf * 0)."""
    label, left, right, g = ins["Label"][0], ins["Left"][0], ins["Right"][0], ins["Out@GRAD"][0]
    d = g.reshape(-1) * (torch.sigmoid(left.reshape(-1) - right.reshape(-1)) - label.reshape(-1))
    return {"Left@GRAD": [d.reshape(left.shape)], "Right@GRAD": [(-d).reshape(right.shape)]}


def _rank_loss_infer(ins, a):
    label, left, right = first(ins, "Label"), first(ins, "Left"), first(ins, "Right")
    for slot, v in (("Label", label), ("Left", left), ("Right", right)):
        if len(v.shape) == 2 and v.shape[-1] != 1 or len(v.shape) > 2:  # ([N] or [N, 1], as fluid 1.8.5)
            raise ValueError(
                f"The last dimension of Input({slot}) must be 1, but received {v.shape[-1]}. ('{v.name}' of "
                f"shape {list(v.shape)})"
            )
    for slot, v in (("Left", left), ("Right", right)):
        if label.shape[0] >= 0 and v.shape[0] >= 0 and label.shape[0] != v.shape[0]:
            raise ValueError(
                f"The first dimension of Input(Label) and Input({slot}) must have the same value. But received "
                f"Label.dims[0]={label.shape[0]}, {slot}.dims[0]={v.shape[0]}."
            )
    return same_as("Label")(ins, a)


register(
    OpDef(
        "rank_loss",
        ("Label", "Left", "Right"),
        ("Out",),
        {},
        _rank_loss_infer,
        _rank_loss,
        grad=GradDef(("Label", "Left", "Right"), in_grads=("Left", "Right"), kernel=_rank_loss_grad),
    )
)


def _bpr(ins, a):
    x, label = ins["X"][0], ins["Label"][0].reshape(-1).long()
    n, c = x.shape
    pos = x[torch.arange(n, device=x.device), label].reshape(n, 1)
    mask = torch.ones_like(x, dtype=torch.bool)
    mask[torch.arange(n, device=x.device), label] = False
    v = -torch.log(torch.sigmoid(pos - x)) * mask
    return {"Y": [v.sum(1, keepdim=True) / (c - 1)]}


_op(
    "bpr_loss",
    ("X", "Label"),
    ("Y",),
    {},
    lambda ins, a: out("Y", (first(ins, "X").shape[0], 1), first(ins, "X").dtype),
    _bpr,
)


def _teacher_student(ins, a):
    """fluid's encoding of Label: < -1: no click, no teacher; [-1, 0): click, no teacher; [0, 1): no
    click, teacher score Label; >= 1: click, teacher score Label - 1. The loss is the click's sigmoid
    cross entropy plus the teacher score's; outside [lower, up] bound X gets no gradient (fluid 1.8.5)."""
    x, label = ins["X"][0], ins["Label"][0]
    click, teacher, score = _teacher_student_targets(label)

    def ce(t):
        return torch.relu(x) - x * t + torch.log1p(torch.exp(-x.abs()))

    loss = ce(click.to(x.dtype)) + torch.where(teacher, ce(score), torch.zeros_like(x))
    return {"Y": [loss]}


def _teacher_student_targets(label):
    click = ((label >= -1.0) & (label < 0.0)) | (label >= 1.0)
    return click, label >= 0.0, torch.where(label >= 1.0, label - 1.0, label)


def _teacher_student_grad(ins, a):
    """fluid's: (sigmoid(X) - click) + (sigmoid(X) - score) where there is a teacher score, times dY;
    0 outside [lower, up] bound."""
    x, label, g = ins["X"][0], ins["Label"][0], ins["Y@GRAD"][0]
    click, teacher, score = _teacher_student_targets(label)
    s = torch.sigmoid(x)
    d = (s - click.to(x.dtype)) + torch.where(teacher, s - score, torch.zeros_like(x))
    inside = (x >= a["soft_max_lower_bound"]) & (x <= a["soft_max_up_bound"])
    return {"X@GRAD": [d * g * inside]}


register(
    OpDef(
        "teacher_student_sigmoid_loss",
        ("X", "Label"),
        ("Y",),
        {"soft_max_up_bound": 15.0, "soft_max_lower_bound": -15.0},
        same_as("X", "Y"),
        _teacher_student,
        grad=GradDef(("X", "Label"), out_grads=("Y",), in_grads=("X",), kernel=_teacher_student_grad),
    )
)


# -- center_loss -----------------------------------------------------------------------------------
def _center_loss(ins, a):
    x, label, centers = ins["X"][0], ins["Label"][0].reshape(-1).long(), ins["Centers"][0]
    diff = x - centers[label]
    loss = 0.5 * (diff * diff).sum(1, keepdim=True)
    new = centers
    if a["need_update"]:
        rate = ins["CenterUpdateRate"][0].reshape(()).to(centers.dtype)
        acc = torch.zeros_like(centers).index_add(0, label, diff.detach())
        count = torch.bincount(label, minlength=centers.shape[0]).to(centers.dtype)
        new = centers + rate * acc / (1 + count)[:, None]
    return {"SampleCenterDiff": [diff], "Loss": [loss], "CentersOut": [new]}


def _center_loss_infer(ins, a):
    x, c = first(ins, "X"), first(ins, "Centers")
    return {
        "SampleCenterDiff": [(x.shape, x.dtype)],
        "Loss": [((x.shape[0], 1), x.dtype)],
        "CentersOut": [(c.shape, c.dtype)],
    }


register(
    OpDef(
        "center_loss",
        ("X", "Label", "Centers", "CenterUpdateRate"),
        ("SampleCenterDiff", "Loss", "CentersOut"),
        {"cluster_num": 0, "need_update": False},
        _center_loss_infer,
        _center_loss,
        grad=GradDef(("X", "Label", "Centers", "CenterUpdateRate"), out_grads=("Loss",), in_grads=("X",)),
    )
)


# -- hierarchical_sigmoid: the default complete binary tree over num_classes ------------------------
def _hsigmoid(ins, a):
    """fluid's default code: class c is node c + num_classes; step j of its path uses weight row
    ((c + C) >> (j + 1)) - 1 with target bit ((c + C) >> j) & 1; loss = sum softplus(pre) - bit * pre."""
    x, w, label = ins["X"][0], ins["W"][0], ins["Label"][0].reshape(-1).long()
    b = first(ins, "Bias")
    table, codes = first(ins, "PathTable"), first(ins, "PathCode")
    if table is not None:  # a custom tree: each sample's node ids (-1 past its path) and bits
        node, valid = table.long(), table >= 0
        bit = (codes.clamp(min=0) * valid).to(x.dtype)
    else:
        num_classes = a["num_classes"]
        code = label + num_classes
        length = int(math.floor(math.log2(2 * num_classes - 1)))
        j = torch.arange(length, device=x.device)
        node = (code[:, None] >> (j[None, :] + 1)) - 1  # [N, L]
        valid = node >= 0
        bit = ((code[:, None] >> j[None, :]) & 1).to(x.dtype)
    idx = node.clamp(min=0)
    pre = (w[idx] * x[:, None, :]).sum(-1)
    if b is not None:
        pre = pre + b.reshape(-1)[idx]
    pre = pre.clamp(-40.0, 40.0) * valid.to(x.dtype)
    # fluid 1.8 sums softplus over every step, so a path shorter than the longest adds log(2) per
    # missing step; kept for the same values
    soft = torch.log1p(torch.exp(pre))  # PreOut, as fluid kept it: after its soft relu
    return {"Out": [(soft - bit * pre).sum(1, keepdim=True)], "PreOut": [soft]}


def _hsigmoid_infer(ins, a):
    x = first(ins, "X")
    table = first(ins, "PathTable")
    length = table.shape[1] if table is not None else int(math.floor(math.log2(2 * a["num_classes"] - 1)))
    return {"Out": [((x.shape[0], 1), x.dtype)], "PreOut": [((x.shape[0], length), x.dtype)]}


register(
    OpDef(
        "hierarchical_sigmoid",
        ("X", "W", "Label", "PathTable", "PathCode", "Bias"),
        ("Out", "PreOut", "W_Out"),
        {"num_classes": 2, "is_sparse": False},
        _hsigmoid_infer,
        _hsigmoid,
        grad=GradDef(
            ("X", "W", "Label", "PathTable", "PathCode", "Bias"), out_grads=("Out",), in_grads=("X", "W", "Bias")
        ),
    )
)


# -- sample_logits: the logits of the true and sampled classes, for sampled softmax ----------------
def _sample_logits(ins, a):
    logits, labels = ins["Logits"][0], ins["Labels"][0].long()
    n, num_true = labels.shape[0], labels.shape[1]
    if a["use_customized_samples"]:
        samples = ins["CustomizedSamples"][0].long()
        probs = ins["CustomizedProbabilities"][0].to(logits.dtype)
    else:
        from fluidcompat_ops import fluid_random

        # fluid's sampler (NOTE: [Seeded draws]); without a seed, seeded from torch's generator
        seed = a["seed"] or int(torch.randint(1, 2**31 - 1, ()))
        samples, probs = fluid_random.sampled_classes(
            seed, labels.cpu().numpy(), a["num_samples"], logits.shape[1], a.get("uniq", True)
        )
        samples = torch.from_numpy(samples).to(logits.device)
        probs = torch.from_numpy(probs).to(device=logits.device, dtype=logits.dtype)
    picked = torch.gather(logits, 1, samples) - torch.log(probs)
    if a["remove_accidental_hits"]:
        hits = (samples[:, num_true:, None] == labels[:, None, :]).any(-1)
        picked = torch.cat([picked[:, :num_true], picked[:, num_true:] - hits.to(picked.dtype) * 1e20], 1)
    sampled_labels = torch.arange(num_true, device=logits.device).expand(n, num_true).contiguous()
    return {
        "Samples": [samples],
        "Probabilities": [probs],
        "SampledLogits": [picked],
        "SampledLabels": [sampled_labels],
        "LogitsDim": [torch.zeros(logits.shape, dtype=logits.dtype, device=logits.device)[:0]],
        "LabelsDim": [torch.zeros(labels.shape, dtype=logits.dtype, device=logits.device)[:0]],
    }


def _sample_logits_infer(ins, a):
    logits, labels = first(ins, "Logits"), first(ins, "Labels")
    width = labels.shape[1] + a["num_samples"]
    rows = logits.shape[0]
    return {
        "Samples": [((rows, width), "int64")],
        "Probabilities": [((rows, width), logits.dtype)],
        "SampledLogits": [((rows, width), logits.dtype)],
        "SampledLabels": [((rows, labels.shape[1]), "int64")],
        "LogitsDim": [((0,), logits.dtype)],
        "LabelsDim": [((0,), logits.dtype)],
    }


register(
    OpDef(
        "sample_logits",
        ("Logits", "Labels", "CustomizedSamples", "CustomizedProbabilities"),
        ("Samples", "Probabilities", "SampledLogits", "SampledLabels", "LogitsDim", "LabelsDim"),
        {"use_customized_samples": False, "uniq": True, "remove_accidental_hits": True, "num_samples": 1, "seed": 0},
        _sample_logits_infer,
        _sample_logits,
        grad=GradDef(
            ("Logits", "Samples"),
            out_grads=("SampledLogits",),
            in_grads=("Logits",),
            kernel=lambda ins, a: _sample_logits_grad(ins),
        ),
    )
)


def _sample_logits_grad(ins):
    """Each sampled logit's gradient goes back to the class it was taken from (the samples the forward
    op drew, which a re-run would draw anew)."""
    logits, samples, g = ins["Logits"][0], ins["Samples"][0], ins["SampledLogits@GRAD"][0]
    return {"Logits@GRAD": [torch.zeros_like(logits).scatter_add_(1, samples, g.to(logits.dtype))]}


# -- nce: noise-contrastive estimation over the true labels and sampled negatives --------------------
def _nce_q(ins, a, classes, dtype, device):
    """The sampler's probability of each class id in ``classes``."""
    n = a["num_total_classes"]
    if a["sampler"] == 1:  # log-uniform
        c = classes.to(torch.float64)
        return (torch.log((c + 2.0) / (c + 1.0)) / math.log(n)).to(dtype)  # fluid's log range: log(classes)
    if a["sampler"] == 2:  # custom distribution
        return _nce_custom_probs(ins, a).to(dtype=dtype, device=device)[classes]
    return torch.full(classes.shape, 1.0 / n, dtype=dtype, device=device)


def _nce_cost(ins, a, samples):
    x, w, label = ins["Input"][0], ins["Weight"][0], ins["Label"][0]
    b, sw = first(ins, "Bias"), first(ins, "SampleWeight")
    num_true = label.shape[1]
    logits = (x[:, None, :] * w[samples]).sum(-1)
    if b is not None:
        logits = logits + b.reshape(-1)[samples]
    o = torch.sigmoid(logits)
    noise = a["num_neg_samples"] * _nce_q(ins, a, samples, x.dtype, x.device)
    true_part = -torch.log(o[:, :num_true] / (o[:, :num_true] + noise[:, :num_true]))
    neg_part = -torch.log(noise[:, num_true:] / (o[:, num_true:] + noise[:, num_true:]))
    cost = true_part.sum(1, keepdim=True) + neg_part.sum(1, keepdim=True)
    if sw is not None:
        cost = cost * sw.reshape(-1, 1)
    return cost, logits


def _nce_samples(ins, a):
    label = ins["Label"][0].long()
    n_rows, k, total = label.shape[0], a["num_neg_samples"], a["num_total_classes"]
    alias, alias_probs = first(ins, "CustomDistAlias"), first(ins, "CustomDistAliasProbs")
    if a["seed"] and (a["sampler"] != 2 or alias is not None):  # fluid's negatives (NOTE: [Seeded draws])
        from fluidcompat_ops import fluid_random

        tables = (alias.reshape(-1).tolist(), alias_probs.reshape(-1).cpu().numpy()) if alias is not None else ()
        neg = torch.from_numpy(fluid_random.nce_negatives(a["sampler"], a["seed"], n_rows, k, total, *tables))
    elif a["sampler"] == 2:
        neg = torch.multinomial(_nce_custom_probs(ins, a).to(torch.float64), n_rows * k, replacement=True)
        neg = neg.reshape(n_rows, k)
    elif a["sampler"] == 1:  # fluid's log-uniform sampler: exp(u * log(total)) - 1, modulo total - 1
        u = torch.rand((n_rows, k), dtype=torch.float64)
        neg = (torch.exp(u * math.log(total)) - 1).long() % max(total - 1, 1)
    else:
        neg = torch.randint(0, total, (n_rows, k))
    return torch.cat([label, neg.to(label.device)], 1)


def _nce_custom_probs(ins, a):
    """The custom distribution: the CustomDistProbs input (fluid's), or the attribute earlier
    fluidcompat programs kept it in."""
    probs = first(ins, "CustomDistProbs")
    return probs.reshape(-1) if probs is not None else torch.tensor(a.get("custom_neg_classes_probs", []))


def _nce(ins, a):
    samples = _nce_samples(ins, a)
    cost, logits = _nce_cost(ins, a, samples)
    return {"Cost": [cost], "SampleLogits": [logits], "SampleLabels": [samples]}


def _nce_grad(ins, a):
    """The cost recomputed on the forward op's samples (a re-run would draw new ones), differentiated."""
    wanted = a["_wanted"]
    leaves = {
        s: ins[s][0].detach().requires_grad_(True)
        for s in ("Input", "Weight", "Bias")
        if s in wanted and first(ins, s) is not None
    }
    with torch.enable_grad():
        cost, _ = _nce_cost(dict(ins, **{s: [v] for s, v in leaves.items()}), a, ins["SampleLabels"][0].long())
        grads = torch.autograd.grad(
            cost, list(leaves.values()), ins["Cost@GRAD"][0].reshape(cost.shape), allow_unused=True
        )
    return {s + "@GRAD": [g if g is not None else torch.zeros_like(leaves[s])] for s, g in zip(leaves, grads)}


def _nce_infer(ins, a):
    x, label = first(ins, "Input"), first(ins, "Label")
    width = label.shape[1] + a["num_neg_samples"]
    return {
        "Cost": [((x.shape[0], 1), x.dtype)],
        "SampleLogits": [((x.shape[0], width), x.dtype)],
        "SampleLabels": [((x.shape[0], width), "int64")],
    }


register(
    OpDef(
        "nce",
        (
            "Input",
            "Label",
            "Weight",
            "Bias",
            "SampleWeight",
            "CustomDistProbs",
            "CustomDistAlias",
            "CustomDistAliasProbs",
        ),
        ("Cost", "SampleLogits", "SampleLabels"),
        {
            "num_total_classes": 0,
            "num_neg_samples": 10,
            "sampler": 0,
            "seed": 0,
            "is_sparse": False,
            "custom_neg_classes": [],
            "remote_prefetch": False,
        },
        _nce_infer,
        _nce,
        grad=GradDef(
            (
                "Input",
                "Label",
                "Weight",
                "Bias",
                "SampleWeight",
                "SampleLabels",
                "CustomDistProbs",
                "CustomDistAlias",
                "CustomDistAliasProbs",
            ),
            out_grads=("Cost",),
            in_grads=("Input", "Weight", "Bias"),
            kernel=_nce_grad,
        ),
    )
)
