"""Metric ops of fluid 1.8 with no gradient: ``accuracy`` (top-k), ``precision_recall`` (per-class
TP/FP/TN/FN states and macro/micro precision, recall and F1) and ``positive_negative_pair`` (ranking
pairs within a query).

precision_recall and positive_negative_pair add up weights in float64; precision_recall's metrics are
float64 (as fluid's), the other outputs the input's float type.
"""

from __future__ import annotations

from fluidcompat.dtypes import VarType
from fluidcompat_ops.registry import OpDef, register
from fluidcompat_ops.shapes import first, require_attrs

torch = None  # NOTE: [Lazy torch] in registry.py
F = None


# -- accuracy --------------------------------------------------------------------------------------
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


# -- precision_recall ------------------------------------------------------------------------------------
def _pr_infer(ins, attrs):
    require_attrs(attrs, "class_number")
    probs, idx, labels = first(ins, "MaxProbs"), first(ins, "Indices"), first(ins, "Labels")
    for name, v in (("MaxProbs", probs), ("Indices", idx), ("Labels", labels)):
        if len(v.shape) != 2 or v.shape[1] not in (1, -1):
            raise ValueError(f"Input({name}) of precision_recall must be [N, 1]. Received: {tuple(v.shape)}")
    states = first(ins, "StatesInfo")
    cls = attrs["class_number"]
    if states is not None and tuple(states.shape) not in ((cls, 4), (-1, 4)):
        raise ValueError(f"StatesInfo must be [class_number, 4] = [{cls}, 4]. Received: {tuple(states.shape)}")
    return {
        "BatchMetrics": [((6,), VarType.FP64)],
        "AccumMetrics": [((6,), VarType.FP64)],
        "AccumStatesInfo": [((cls, 4), probs.dtype)],
    }


def _ratio(num, den):
    """num / den, 1 where both are 0 (fluid's precision and recall of a class never predicted)."""
    return torch.where(den > 0, num / torch.where(den > 0, den, torch.ones_like(den)), torch.ones_like(den))


def _f1(p, r):
    s = p + r
    return torch.where(s > 0, 2 * p * r / torch.where(s > 0, s, torch.ones_like(s)), torch.zeros_like(s))


def _pr_metrics(states):
    """[macro precision, macro recall, macro F1, micro precision, micro recall, micro F1] of [C, 4]
    states (TP, FP, TN, FN per class)."""
    tp, fp, fn = states[:, 0], states[:, 1], states[:, 3]
    macro_p = _ratio(tp, tp + fp).mean()
    macro_r = _ratio(tp, tp + fn).mean()
    ttp, tfp, tfn = tp.sum(), fp.sum(), fn.sum()
    micro_p, micro_r = _ratio(ttp, ttp + tfp), _ratio(ttp, ttp + tfn)
    return torch.stack([macro_p, macro_r, _f1(macro_p, macro_r), micro_p, micro_r, _f1(micro_p, micro_r)])


def _precision_recall(ins, attrs):
    """Each sample adds its weight to TP of its class when Indices is right, else to FP of the predicted
    and FN of the true class; TN of every other class. StatesInfo (the running states) is added on."""
    probs = ins["MaxProbs"][0]
    idx, labels = ins["Indices"][0].reshape(-1).long(), ins["Labels"][0].reshape(-1).long()
    cls = attrs["class_number"]
    for name, v in (("Indices", idx), ("Labels", labels)):
        if v.numel() and (int(v.min()) < 0 or int(v.max()) >= cls):
            raise ValueError(f"Class index of each instance ({name}) must be in [0, {cls}). Received: {v.tolist()}")
    w = first(ins, "Weights")
    w = torch.ones(idx.shape, dtype=torch.float64, device=idx.device) if w is None else w.reshape(-1).double()
    wrong = w * (idx != labels)
    zeros = torch.zeros(cls, dtype=torch.float64, device=idx.device)
    tp = zeros.index_add(0, idx, w - wrong)
    fp = zeros.index_add(0, idx, wrong)
    fn = zeros.index_add(0, labels, wrong)
    tn = w.sum() - zeros.index_add(0, idx, w) - fn
    batch = torch.stack([tp, fp, tn, fn], dim=1)
    accum = batch
    prior = first(ins, "StatesInfo")
    if prior is not None:
        accum = batch + prior.double().reshape(cls, 4)
    dtype = probs.dtype
    return {
        "BatchMetrics": [_pr_metrics(batch)],
        "AccumMetrics": [_pr_metrics(accum)],
        "AccumStatesInfo": [accum.to(dtype)],
    }


register(
    OpDef(
        "precision_recall",
        ("MaxProbs", "Indices", "Labels", "Weights", "StatesInfo"),
        ("BatchMetrics", "AccumMetrics", "AccumStatesInfo"),
        {},  # class_number: required
        _pr_infer,
        _precision_recall,
    )
)


# -- positive_negative_pair ------------------------------------------------------------------------------
def _pnpair_infer(ins, attrs):
    score, label, query = first(ins, "Score"), first(ins, "Label"), first(ins, "QueryID")
    if len(score.shape) != 2:
        raise ValueError(f"Score must be [batch_size, width]. Received: {tuple(score.shape)}")
    for name, v in (("Label", label), ("QueryID", query)):
        if tuple(v.shape)[1:] not in ((1,), (-1,)) or len(v.shape) != 2:
            raise ValueError(f"{name} must be [batch_size, 1]. Received: {tuple(v.shape)}")
    width, column = score.shape[1], attrs["column"]
    if width >= 0 and not -width <= column < width:
        raise ValueError(f"Attr(column) should be in [{-width}, {width}). Received: column={column}")
    one = [((1,), score.dtype)]
    return {"PositivePair": one, "NegativePair": one, "NeutralPair": one}


def _positive_negative_pair(ins, attrs):
    """Over the pairs of samples of one query whose labels differ, with weight (w_i + w_j) / 2: positive
    when the scores order them as the labels do, else negative; also neutral when the scores are equal."""
    score = ins["Score"][0]
    s = score[:, attrs["column"]].double()
    label = ins["Label"][0].reshape(-1).double()
    query = ins["QueryID"][0].reshape(-1)
    w = first(ins, "Weight")
    w = torch.ones_like(s) if w is None else w.reshape(-1).double()
    n = s.shape[0]
    upper = torch.ones(n, n, dtype=torch.bool, device=s.device).triu(1)
    pairs = upper & (query.unsqueeze(1) == query.unsqueeze(0)) & (label.unsqueeze(1) != label.unsqueeze(0))
    weight = (w.unsqueeze(1) + w.unsqueeze(0)) * 0.5 * pairs
    ds = s.unsqueeze(1) - s.unsqueeze(0)
    order = ds * (label.unsqueeze(1) - label.unsqueeze(0))
    neutral = (weight * (ds == 0)).sum()
    positive = (weight * (order > 0)).sum()
    negative = (weight * (order <= 0)).sum()  # fluid counts a tie as neutral and negative
    result = {}
    for slot, acc, value in (
        ("PositivePair", "AccumulatePositivePair", positive),
        ("NegativePair", "AccumulateNegativePair", negative),
        ("NeutralPair", "AccumulateNeutralPair", neutral),
    ):
        prior = first(ins, acc)
        if prior is not None:
            value = value + prior.double().reshape(())
        result[slot] = [value.reshape(1).to(score.dtype)]
    return result


register(
    OpDef(
        "positive_negative_pair",
        (
            "Score",
            "Label",
            "QueryID",
            "AccumulatePositivePair",
            "AccumulateNegativePair",
            "AccumulateNeutralPair",
            "Weight",
        ),
        ("PositivePair", "NegativePair", "NeutralPair"),
        {"column": 0},
        _pnpair_infer,
        _positive_negative_pair,
    )
)
