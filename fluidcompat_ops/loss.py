"""Loss and metric ops: cross_entropy(2), softmax_with_cross_entropy, sigmoid CE, accuracy, nll_loss,
bce_loss, hinge_loss, modified_huber_loss."""

from __future__ import annotations

from fluidcompat.dtypes import VarType
from fluidcompat_ops.activation import clipped_logits
from fluidcompat_ops.registry import GradDef, OpDef, register
from fluidcompat_ops.shapes import dims_agree, first, norm_axis, out

torch = None  # NOTE: [Lazy torch] in registry.py
F = None


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


def _acc_infer(ins, attrs):
    idx, label = first(ins, "Indices"), first(ins, "Label")
    if idx.shape[0] >= 0 and label.shape[0] >= 0 and idx.shape[0] != label.shape[0]:
        raise ValueError(
            f"Indices and Label must have the same batch size. Received: Indices.shape={idx.shape}, "
            f"Label.shape={label.shape}"
        )
    return {"Accuracy": [((1,), VarType.FP32)], "Correct": [((1,), VarType.INT32)], "Total": [((1,), VarType.INT32)]}


def _acc_kernel(ins, attrs):
    idx, label = ins["Indices"][0], ins["Label"][0]
    n = idx.shape[0]
    correct = (idx == label.reshape(n, 1).to(idx.dtype)).any(dim=1).sum().to(torch.int32).reshape(1)
    acc = (correct.to(torch.float32) / max(n, 1)).reshape(1)
    return {"Accuracy": [acc], "Correct": [correct], "Total": [torch.tensor([n], dtype=torch.int32, device=idx.device)]}


register(OpDef("accuracy", ("Out", "Indices", "Label"), ("Accuracy", "Correct", "Total"), {}, _acc_infer, _acc_kernel))


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
