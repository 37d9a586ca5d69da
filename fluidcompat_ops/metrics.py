"""Metric ops of fluid 1.8 with no gradient: ``accuracy`` (top-k), ``precision_recall`` (per-class
TP/FP/TN/FN states and macro/micro precision, recall and F1), ``positive_negative_pair`` (ranking
pairs within a query), ``mean_iou``, ``edit_distance``, ``auc``, ``chunk_eval`` and ``detection_map``.

precision_recall and positive_negative_pair add up weights in float64; precision_recall's metrics are
float64 (as fluid's), the other outputs the input's float type.
"""

from __future__ import annotations

from fluidcompat.dtypes import VarType
from fluidcompat_ops.detection_boxes import _rows_per_image, jaccard
from fluidcompat_ops.registry import OpDef, _op, register
from fluidcompat_ops.sequence import _lod_sequences, lod_of, offsets_of, with_lod
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


# -- mean_iou --------------------------------------------------------------------------------------
def _mean_iou(ins, a):
    pred, label, c = ins["Predictions"][0].reshape(-1).long(), ins["Labels"][0].reshape(-1).long(), a["num_classes"]

    def count(values):  # per class; a value outside [0, c) counts nowhere (an ignored label such as 255:
        # fluid 1.8 wrote past its arrays there and kept the in-range counts, these)
        return torch.bincount(values[(values >= 0) & (values < c)], minlength=c)

    correct = count(pred[pred == label])
    wrong = count(pred[pred != label]) + count(label[pred != label])
    denom = correct + wrong
    valid = denom > 0
    iou = torch.where(
        valid, correct.double() / denom.clamp(min=1).double(), torch.zeros_like(correct, dtype=torch.float64)
    )
    mean = iou.sum() / valid.sum().clamp(min=1)
    return {
        "OutMeanIou": [mean.to(torch.float32).reshape(1)],
        "OutWrong": [wrong.to(torch.int32)],
        "OutCorrect": [correct.to(torch.int32)],
    }


def _mean_iou_infer(ins, a):
    c = a["num_classes"]
    return {"OutMeanIou": [((1,), "float32")], "OutWrong": [((c,), "int32")], "OutCorrect": [((c,), "int32")]}


_op(
    "mean_iou",
    ("Predictions", "Labels"),
    ("OutMeanIou", "OutWrong", "OutCorrect"),
    {"num_classes": 0},
    _mean_iou_infer,
    _mean_iou,
    grad=False,
)


# -- edit_distance ---------------------------------------------------------------------------------
def _levenshtein(a_seq, b_seq) -> int:
    prev = list(range(len(b_seq) + 1))
    for i, x in enumerate(a_seq, 1):
        cur = [i] + [0] * len(b_seq)
        for j, y in enumerate(b_seq, 1):
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (x != y))
        prev = cur
    return prev[-1]


def _edit_distance(ins, a):
    hyp, ref = ins["Hyps"][0], ins["Refs"][0]
    hl, rl = first(ins, "HypsLength"), first(ins, "RefsLength")
    if hl is None and (lod_of(hyp) or lod_of(ref)):  # LoD sequences, one id per row
        hyps = _lod_sequences(hyp, "edit_distance", "Input(Hyps)")
        refs = _lod_sequences(ref, "edit_distance", "Input(Refs)")
        if len(hyps) != len(refs):
            raise ValueError(
                f"edit_distance: Input(Hyps) holds {len(hyps)} sequences and Input(Refs) {len(refs)}; "
                "they must hold the same number"
            )
        for i, r in enumerate(refs, 1):  # fluid 1.8.5 counted from 1
            if not r:
                raise ValueError(f"Reference string {i} is empty.")
        n = len(hyps)
        hl, rl = [len(h) for h in hyps], [len(r) for r in refs]
    else:
        n = hyp.shape[0]
        hyps = hyp.reshape(n, -1).tolist()
        refs = ref.reshape(n, -1).tolist()
        hl = hl.reshape(-1).tolist() if hl is not None else [len(h) for h in hyps]
        rl = rl.reshape(-1).tolist() if rl is not None else [len(r) for r in refs]
    dists = []
    for h, r, lh, lr in zip(hyps, refs, hl, rl):
        d = float(_levenshtein(h[: int(lh)], r[: int(lr)]))
        if a["normalized"]:
            d = d / lr if lr else d
        dists.append([d])
    dev = a["_device"]  # read on the host, written where the op runs
    return {
        "Out": [torch.tensor(dists, dtype=torch.float32, device=dev)],
        "SequenceNum": [torch.tensor([n], dtype=torch.int64, device=dev)],
    }


_op(
    "edit_distance",
    ("Hyps", "Refs", "HypsLength", "RefsLength"),
    ("Out", "SequenceNum"),
    {"normalized": False},
    lambda ins, a: {
        # the declared dtype stays (int64 from the layer, as fluid's); the distances are float32 when run
        "Out": [((first(ins, "Hyps").shape[0] if first(ins, "HypsLength") else -1, 1), None)],
        "SequenceNum": [((1,), "int64")],
    },
    _edit_distance,
    grad=False,
    host_inputs=frozenset({"Hyps", "Refs", "HypsLength", "RefsLength"}),
)


# -- auc -------------------------------------------------------------------------------------------
def _binary_predictions(predict) -> None:
    """auc reads the positive class's probability: the last column of an [N, 1] or [N, 2] Predict."""
    if len(predict.shape) != 2 or predict.shape[1] not in (1, 2, -1):
        raise ValueError(
            "Only support binary classification,prediction dims[1] should be 1 or 2. "
            f"Received: Predict '{predict.name}' with shape {list(predict.shape)}"
        )


def _auc(ins, a):
    predict, label = ins["Predict"][0], ins["Label"][0].reshape(-1)
    stat_pos, stat_neg = ins["StatPos"][0], ins["StatNeg"][0]
    n = a["num_thresholds"]
    positive = predict[:, -1]
    lo, hi = torch.aminmax(positive)
    if hi > 1 or lo < 0:
        bad = float(hi) if hi > 1 else float(lo)
        side = "less or equal 1" if hi > 1 else "great or equal 0"
        raise ValueError(f"The predict data must {side}. Received: {bad} in '{a['_op'].inputs['Predict'][0]}'")
    bucket = (positive * n).long()
    pos = torch.bincount(bucket[label > 0], minlength=n + 1).to(stat_pos.dtype)
    neg = torch.bincount(bucket[label == 0], minlength=n + 1).to(stat_neg.dtype)  # other labels: ignored
    steps = a["slide_steps"]

    def updated(stat, batch):
        if steps == 0:  # all batches so far
            new = stat.reshape(-1) + batch
            return new.reshape(stat.shape), new
        # fluid's layout: `steps` batch slots used as a ring, their sum, then the count of batches seen
        flat = stat.reshape(-1).clone()
        slots = flat[: (steps + 1) * (n + 1)].view(steps + 1, n + 1)
        cur = int(flat[-1]) % steps
        slots[steps] += batch - slots[cur]
        slots[cur] = batch
        flat[-1] += 1
        return flat.reshape(stat.shape), slots[steps]

    new_pos, sum_pos = updated(stat_pos, pos)
    new_neg, sum_neg = updated(stat_neg, neg)

    def area(sp, sn):
        sp, sn = sp.reshape(-1).double().flip(0), sn.reshape(-1).double().flip(0)
        tp, fp = torch.cumsum(sp, 0), torch.cumsum(sn, 0)
        tp_prev, fp_prev = torch.cat([tp.new_zeros(1), tp[:-1]]), torch.cat([fp.new_zeros(1), fp[:-1]])
        total = ((fp - fp_prev) * (tp + tp_prev) / 2.0).sum()
        denom = tp[-1] * fp[-1]
        return (total / denom if denom > 0 else total * 0).reshape(1)

    return {"AUC": [area(sum_pos, sum_neg)], "StatPosOut": [new_pos], "StatNegOut": [new_neg]}


_op(
    "auc",
    ("Predict", "Label", "StatPos", "StatNeg"),
    ("AUC", "StatPosOut", "StatNegOut"),
    {"curve": "ROC", "num_thresholds": 4095, "slide_steps": 1},
    lambda ins, a: (
        _binary_predictions(first(ins, "Predict"))
        or {
            "AUC": [((1,), "float64")],
            "StatPosOut": [(first(ins, "StatPos").shape, "int64")],
            "StatNegOut": [(first(ins, "StatNeg").shape, "int64")],
        }
    ),
    _auc,
    grad=False,
)


# -- chunk_eval ------------------------------------------------------------------------------------
_CHUNK_SCHEMES = {  # num_tag_types, tag_begin, tag_inside, tag_end, tag_single
    "IOB": (2, 0, 1, -1, -1),
    "IOE": (2, -1, 0, 1, -1),
    "IOBES": (4, 0, 1, 2, 3),
    "plain": (1, -1, -1, -1, -1),
}


def _chunk_end(prev_tag, prev_type, tag, type_, other, begin, inside, end, single):
    if prev_type == other:
        return False
    if type_ == other or type_ != prev_type:
        return True
    if prev_tag == begin or prev_tag == inside:
        return tag == begin
    return prev_tag in (end, single)


def _chunk_begin(prev_tag, prev_type, tag, type_, other, begin, inside, end, single):
    if prev_type == other:
        return type_ != other
    if type_ == other:
        return False
    if type_ != prev_type:
        return True
    if tag == begin or tag == single:
        return True
    return False


def chunk_segments(labels, scheme, num_chunk_types, excluded=()):
    """(start, end, type) of each chunk of one tag sequence, as fluid's chunk_eval reads them."""
    num_tag_types, begin, inside, end, single = _CHUNK_SCHEMES[scheme]
    other = num_chunk_types
    top = next((v for v in labels if v > num_chunk_types * num_tag_types), None)
    if top is not None:  # fluid's check (and text) for Inference and Label alike
        raise ValueError(
            "The value of Input(Label) should be less than the number of chunk types times the number of tag "
            f"types, but received {top} (Label) vs {num_chunk_types} (chunk types) * {num_tag_types} (tag types)."
        )
    segments = []
    in_chunk, start = False, 0
    tag, type_ = -1, other
    for i, label in enumerate(labels):
        prev_tag, prev_type = tag, type_
        tag, type_ = label % num_tag_types, label // num_tag_types
        if type_ >= other:
            type_ = other
        if in_chunk and _chunk_end(prev_tag, prev_type, tag, type_, other, begin, inside, end, single):
            segments.append((start, i - 1, prev_type))
            in_chunk = False
        if _chunk_begin(prev_tag, prev_type, tag, type_, other, begin, inside, end, single):
            start, in_chunk = i, True
    if in_chunk:
        segments.append((start, len(labels) - 1, type_))
    return [s for s in segments if s[2] not in excluded]


def _check_chunk_shapes(ins) -> None:
    """fluid 1.8's check: with SeqLength (padded input) Inference and Label have one shape."""
    inf, lab = first(ins, "Inference"), first(ins, "Label")
    if first(ins, "SeqLength") is not None and tuple(inf.shape) != tuple(lab.shape):
        from fluidcompat.logging import dims_text

        raise ValueError(
            "Input(Inference)'s shape must be the same as Input(Label)'s shape, but received "
            f"[{dims_text(inf.shape)}] (Inference) vs [{dims_text(lab.shape)}] (Label)."
        )


def _chunk_eval_infer(ins, a):
    _check_chunk_shapes(ins)
    return {s: [((1,), "float32" if k < 3 else "int64")] for k, s in enumerate(_CHUNK_OUTS)}


def _chunk_eval(ins, a):
    _check_chunk_shapes(ins)
    inf, lab = ins["Inference"][0], ins["Label"][0]
    n = inf.shape[0]
    inf_rows, lab_rows = inf.reshape(n, -1).tolist(), lab.reshape(n, -1).tolist()
    lengths = first(ins, "SeqLength")
    lengths = lengths.reshape(-1).tolist() if lengths is not None else [len(r) for r in inf_rows]
    offsets = lod_of(inf)[-1] if lod_of(inf) else None
    if first(ins, "SeqLength") is None and offsets:  # LoD sequences of one tag per row
        flat_inf, flat_lab = sum(inf_rows, []), sum(lab_rows, [])
        inf_rows = [flat_inf[a:b] for a, b in zip(offsets, offsets[1:])]
        lab_rows = [flat_lab[a:b] for a, b in zip(offsets, offsets[1:])]
        lengths = [len(r) for r in inf_rows]
    elif first(ins, "SeqLength") is None:  # one sequence: the whole column
        inf_rows, lab_rows, lengths = [sum(inf_rows, [])], [sum(lab_rows, [])], [n * len(inf_rows[0])]
    n_inf = n_lab = n_cor = 0
    excluded = set(a["excluded_chunk_types"])
    for ir, lr, length in zip(inf_rows, lab_rows, lengths):
        si = chunk_segments(ir[: int(length)], a["chunk_scheme"], a["num_chunk_types"], excluded)
        sl = chunk_segments(lr[: int(length)], a["chunk_scheme"], a["num_chunk_types"], excluded)
        n_inf, n_lab, n_cor = n_inf + len(si), n_lab + len(sl), n_cor + len(set(si) & set(sl))
    p = n_cor / n_inf if n_inf else 0.0
    r = n_cor / n_lab if n_lab else 0.0
    f1 = 2 * p * r / (p + r) if n_cor else 0.0

    def f(v):
        return torch.tensor([v], dtype=torch.float32)

    def i(v):
        return torch.tensor([v], dtype=torch.int64)

    return {
        "Precision": [f(p)],
        "Recall": [f(r)],
        "F1-Score": [f(f1)],
        "NumInferChunks": [i(n_inf)],
        "NumLabelChunks": [i(n_lab)],
        "NumCorrectChunks": [i(n_cor)],
    }


_CHUNK_OUTS = ("Precision", "Recall", "F1-Score", "NumInferChunks", "NumLabelChunks", "NumCorrectChunks")
_op(
    "chunk_eval",
    ("Inference", "Label", "SeqLength"),
    _CHUNK_OUTS,
    {"num_chunk_types": 0, "chunk_scheme": "IOB", "excluded_chunk_types": []},
    _chunk_eval_infer,
    _chunk_eval,
    grad=False,
    host_inputs=frozenset({"Inference", "Label", "SeqLength"}),
    host_outputs=frozenset(_CHUNK_OUTS),
)


# -- detection_map: mean average precision, accumulated over batches ------------------------------
def _clip_unit(box):
    return [min(max(v, 0.0), 1.0) for v in box]


def _map_positions(labels, dets, a, pos_count, true_pos, false_pos):
    """Adds each image's ground-truth counts per class and each detection's (score, true) and
    (score, false) flags: detections best first, each true when it overlaps an unclaimed box of its
    class by more than overlap_threshold (difficult boxes count only with evaluate_difficult)."""
    for gts, image_dets in zip(labels, dets):
        by_class = {}
        for g in gts:
            by_class.setdefault(int(g[0]), []).append(g)
        for c, boxes in by_class.items():
            count = sum(1 for g in boxes if a["evaluate_difficult"] or not g[1])
            if count:
                pos_count[c] = pos_count.get(c, 0) + count
        det_by_class = {}
        for d in image_dets:
            det_by_class.setdefault(int(d[0]), []).append((d[1], _clip_unit(d[2:6])))
        for c, found in det_by_class.items():
            tp, fp = true_pos.setdefault(c, []), false_pos.setdefault(c, [])
            gt = by_class.get(c)
            if gt is None:
                tp += [(s, 0) for s, _ in found]
                fp += [(s, 1) for s, _ in found]
                continue
            claimed = [False] * len(gt)
            for score, box in sorted(found, key=lambda f: -f[0]):
                overlaps = [jaccard(box, g[2:6], 0.0) for g in gt]
                best = max(range(len(gt)), key=lambda j: (overlaps[j], -j))
                if overlaps[best] > a["overlap_threshold"]:
                    if a["evaluate_difficult"] or not gt[best][1]:
                        hit = not claimed[best]
                        claimed[best] = True
                        tp.append((score, int(hit)))
                        fp.append((score, int(not hit)))
                else:
                    tp.append((score, 0))
                    fp.append((score, 1))


def _average_precision(tp, fp, positives, ap_type) -> float:
    def running(pairs):
        total, sums = 0, []
        for _, flag in sorted(pairs, key=lambda p: -p[0]):
            total += flag
            sums.append(total)
        return sums

    tp_sum, fp_sum = running(tp), running(fp)
    precision = [t / (t + f) for t, f in zip(tp_sum, fp_sum)]
    recall = [t / positives for t in tp_sum]
    if ap_type == "11point":
        best = [0.0] * 11
        start = len(recall) - 1
        for j in range(10, -1, -1):
            for i in range(start, -1, -1):
                if recall[i] < j / 10.0:
                    start = i
                    if j > 0:
                        best[j - 1] = best[j]
                    break
                best[j] = max(best[j], precision[i])
        return sum(best) / 11.0
    ap, prev = 0.0, 0.0
    for p, r in zip(precision, recall):
        if abs(r - prev) > 1e-6:
            ap += p * abs(r - prev)
            prev = r
    return ap


def _detection_map(ins, a):
    """mAP of DetectRes (rows [label, score, box], LoD per image) against Label (rows [label,
    difficult, box] or [label, box], LoD per image); with HasState 1 the counts and flags of
    PosCount, TruePos and FalsePos (earlier batches) are added first, and the Accum* outputs carry
    them on. As in fluid 1.8, a class is left out of the mean when its count of positives equals
    background_label (so with background 0: the classes without ground truth)."""
    label, det = ins["Label"][0], ins["DetectRes"][0]
    labels_lod = _rows_per_image(label, "detection_map", "Label")
    det_lod = lod_of(det)[-1] if lod_of(det) else [0, det.shape[0]]
    rows = label.tolist()
    if label.shape[1] == 5:
        rows = [[r[0], 0.0] + r[1:] for r in rows]
    elif label.shape[1] != 6:
        raise ValueError(
            "detection_map: Label rows must be [label, difficult, box] or [label, box]; received "
            f"{label.shape[1]} columns"
        )
    det_rows = det.tolist()
    labels = [rows[s:e] for s, e in zip(labels_lod, labels_lod[1:])]
    if len(det_lod) != len(labels_lod):
        raise ValueError(
            f"detection_map: DetectRes and Label must cover as many images (their LoDs); received "
            f"{len(det_lod) - 1} and {len(labels_lod) - 1}"
        )
    dets = [det_rows[s:e] for s, e in zip(det_lod, det_lod[1:])]
    classes = a["class_num"]
    pos_count, true_pos, false_pos = {}, {}, {}
    has_state = first(ins, "HasState")
    if has_state is not None and int(has_state.reshape(-1)[0]) == 1:
        for c, v in enumerate(ins["PosCount"][0].reshape(-1).tolist()):
            pos_count[c] = int(v)
        for state, into in ((ins["TruePos"][0], true_pos), (ins["FalsePos"][0], false_pos)):
            offsets = lod_of(state)[-1] if lod_of(state) else [0] * (classes + 1)
            values = state.tolist()
            for c, (s, e) in enumerate(zip(offsets, offsets[1:])):
                if e > s:
                    into[c] = [(v[0], int(v[1])) for v in values[s:e]]
    _map_positions(labels, dets, a, pos_count, true_pos, false_pos)
    total, count = 0.0, 0
    for c in sorted(pos_count):
        positives = pos_count[c]
        if positives == a["background_label"]:
            continue
        if c not in true_pos:
            count += 1
            continue
        total += _average_precision(true_pos[c], false_pos[c], positives, a["ap_type"])
        count += 1
    dev = a["_device"]
    result = {"MAP": [torch.tensor([total / count if count else 0.0], dtype=torch.float32, device=dev)]}
    result["AccumPosCount"] = [
        torch.tensor([pos_count.get(c, 0) for c in range(classes)], dtype=torch.int32, device=dev).reshape(-1, 1)
    ]
    for slot, flags in (("AccumTruePos", true_pos), ("AccumFalsePos", false_pos)):
        pairs = [flags.get(c, []) for c in range(classes)]
        flat = [[s, float(f)] for per in pairs for s, f in per]
        t = torch.tensor(flat, dtype=torch.float32, device=dev).reshape(-1, 2)
        result[slot] = [with_lod(t, [offsets_of(len(p) for p in pairs)])]
    return result


register(
    OpDef(
        "detection_map",
        ("DetectRes", "Label", "HasState", "PosCount", "TruePos", "FalsePos"),
        ("MAP", "AccumPosCount", "AccumTruePos", "AccumFalsePos"),
        {
            "class_num": 1,
            "background_label": 0,
            "overlap_threshold": 0.5,
            "evaluate_difficult": True,
            "ap_type": "integral",
        },
        lambda ins, a: {
            "MAP": [((1,), "float32")],
            "AccumPosCount": [((-1, 1), "int32")],
            "AccumTruePos": [((-1, 2), "float32")],
            "AccumFalsePos": [((-1, 2), "float32")],
        },
        _detection_map,
        host_inputs=frozenset({"DetectRes", "Label", "HasState", "PosCount", "TruePos", "FalsePos"}),
        optional_inputs=frozenset({"PosCount", "TruePos", "FalsePos"}),
    )
)
