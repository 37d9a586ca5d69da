"""Detection losses and the target assignment that feeds them: yolov3_loss, sigmoid_focal_loss;
bipartite_match, target_assign and mine_hard_examples (SSD), rpn_target_assign and
retinanet_target_assign, generate_proposal_labels (Fast R-CNN) and generate_mask_labels (Mask R-CNN),
host algorithms as fluid 1.8 ran them on the CPU."""

from __future__ import annotations

import math

from fluidcompat_ops.detection_boxes import _iou_matrix, _rows_per_image
from fluidcompat_ops.registry import GradDef, OpDef, register
from fluidcompat_ops.sequence import lengths_of, lod_of, offsets_of, with_lod
from fluidcompat_ops.shapes import first, out

torch = None  # NOTE: [Lazy torch] in registry.py
F = None


# -- sigmoid_focal_loss ----------------------------------------------------------------------------
def _sigmoid_focal_loss(ins, a):
    """Focal loss of each class's sigmoid: label l (1..C; 0 background, -1 ignored) is positive for
    class l - 1 and negative for the others, divided by the number of foreground rows (at least 1)."""
    x, label, fg = ins["X"][0], ins["Label"][0], ins["FgNum"][0]
    gamma, alpha = a["gamma"], a["alpha"]
    classes = torch.arange(1, x.shape[1] + 1, device=x.device).reshape(1, -1)
    label = label.reshape(-1, 1).to(torch.int64)
    pos = (label == classes).to(x.dtype)
    neg = ((label != classes) & (label != -1)).to(x.dtype)
    fg_num = fg.reshape(-1)[0].to(x.dtype).clamp(min=1.0)
    p = torch.sigmoid(x)
    tiny = torch.finfo(x.dtype).tiny
    term_pos = (1 - p) ** gamma * torch.log(p.clamp(min=tiny))
    term_neg = p**gamma * (-x * (x >= 0) - torch.log1p(torch.exp(x - 2 * x * (x >= 0))))
    return {"Out": [-pos * term_pos * (alpha / fg_num) - neg * term_neg * ((1 - alpha) / fg_num)]}


register(
    OpDef(
        "sigmoid_focal_loss",
        ("X", "Label", "FgNum"),
        ("Out",),
        {"gamma": 2.0, "alpha": 0.25},
        lambda ins, a: out("Out", first(ins, "X").shape, first(ins, "X").dtype),
        _sigmoid_focal_loss,
        grad=GradDef(("X", "Label", "FgNum"), out_grads=("Out",), in_grads=("X",)),
    )
)


# -- bipartite_match, target_assign, mine_hard_examples (SSD) --------------------------------------
def _bipartite_match(ins, a):
    """Per instance (the rows of DistMat its LoD gives it), each column's matched row: greedily the
    largest remaining distance matches its row and column, then (per_prediction) each unmatched
    column takes its best row at or over dist_threshold. -1 and 0 where unmatched."""
    dist = ins["DistMat"][0]
    lod = lod_of(dist)
    offsets = lod[-1] if lod else [0, dist.shape[0]]
    values = dist.tolist()
    cols = dist.shape[1]
    eps = 1e-6
    indices, distances = [], []
    for start, end in zip(offsets, offsets[1:]):
        match, best = [-1] * cols, [0.0] * cols
        pool = list(range(end - start))
        while pool:
            top, top_col, top_row = -1.0, -1, -1
            for j in range(cols):
                if match[j] != -1:
                    continue
                for r in pool:
                    d = values[start + r][j]
                    if d >= eps and d > top:
                        top, top_col, top_row = d, j, r
            if top_col == -1:
                break
            match[top_col], best[top_col] = top_row, top
            pool.remove(top_row)
        if a["match_type"] == "per_prediction":
            for j in range(cols):
                if match[j] != -1:
                    continue
                top, top_row = -1.0, -1
                for r in range(end - start):
                    d = values[start + r][j]
                    if d >= eps and d >= a["dist_threshold"] and d > top:
                        top, top_row = d, r
                if top_row != -1:
                    match[j], best[j] = top_row, top
        indices.append(match)
        distances.append(best)
    dev = a["_device"]
    return {
        "ColToRowMatchIndices": [torch.tensor(indices, dtype=torch.int32, device=dev).reshape(-1, cols)],
        "ColToRowMatchDist": [torch.tensor(distances, dtype=dist.dtype, device=dev).reshape(-1, cols)],
    }


register(
    OpDef(
        "bipartite_match",
        ("DistMat",),
        ("ColToRowMatchIndices", "ColToRowMatchDist"),
        {"match_type": "bipartite", "dist_threshold": 0.5},
        lambda ins, a: {
            "ColToRowMatchIndices": [((-1, first(ins, "DistMat").shape[1]), "int32")],
            "ColToRowMatchDist": [((-1, first(ins, "DistMat").shape[1]), first(ins, "DistMat").dtype)],
        },
        _bipartite_match,
        host_inputs=frozenset({"DistMat"}),
    )
)


def _target_assign(ins, a):
    """Out[i, j] = X[(first row of instance i) + match, j % P] where column j of instance i matched a
    row, else mismatch_value; OutWeight 1 where matched. NegIndices (LoD per instance) set those
    columns to mismatch_value with weight 1."""
    x, match = ins["X"][0], ins["MatchIndices"][0]
    lod = lod_of(x)
    if not lod:
        raise ValueError("target_assign: Input(X) must carry a LoD (the rows of each instance)")
    n, cols = match.shape
    starts = torch.tensor(lod[-1][:-1], dtype=torch.int64, device=x.device).reshape(n, 1)
    m = match.to(torch.int64)
    hit = m > -1
    rows = torch.where(hit, starts + m, torch.zeros_like(m))
    p = x.shape[1]
    picked = x[rows, torch.arange(cols, device=x.device).reshape(1, cols) % p]  # [N, cols, K]
    fill = torch.full_like(picked, a["mismatch_value"])
    result = torch.where(hit.unsqueeze(-1), picked, fill)
    weight = hit.to(torch.float32).unsqueeze(-1)
    neg = first(ins, "NegIndices")
    if neg is not None:
        neg_lod = lod_of(neg)
        if not neg_lod:
            raise ValueError("target_assign: Input(NegIndices) must carry a LoD (the negatives of each instance)")
        owner = torch.repeat_interleave(
            torch.arange(len(neg_lod[-1]) - 1, device=x.device),
            torch.tensor(lengths_of(neg_lod[-1]), device=x.device),
            output_size=neg.shape[0],
        )
        at = (owner, neg.reshape(-1).to(torch.int64))
        result = result.index_put(at, torch.full_like(result[at], a["mismatch_value"]))
        weight = weight.index_put(at, torch.ones_like(weight[at]))
    return {"Out": [result], "OutWeight": [weight]}


register(
    OpDef(
        "target_assign",
        ("X", "MatchIndices", "NegIndices"),
        ("Out", "OutWeight"),
        {"mismatch_value": 0},
        lambda ins, a: {
            "Out": [
                (
                    (
                        first(ins, "MatchIndices").shape[0],
                        first(ins, "MatchIndices").shape[1],
                        first(ins, "X").shape[2],
                    ),
                    first(ins, "X").dtype,
                )
            ],
            "OutWeight": [((first(ins, "MatchIndices").shape[0], first(ins, "MatchIndices").shape[1], 1), "float32")],
        },
        _target_assign,
    )
)


def _mine_hard_examples(ins, a):
    """SSD's hard negative mining, per image: of the priors left unmatched with a match distance under
    neg_dist_threshold (max_negative), the ones of highest classification loss, neg_pos_ratio times
    as many as the matched priors; NegIndices lists them (ascending, LoD per image).
    hard_example: of all priors, the sample_size of highest loss (plus LocLoss); matched priors not
    among them are unmatched in UpdatedMatchIndices, the unmatched among them are the negatives."""
    cls_loss, match, dist = ins["ClsLoss"][0], ins["MatchIndices"][0], ins["MatchDist"][0]
    loc_loss = first(ins, "LocLoss")
    hard = a["mining_type"] == "hard_example"
    if a["mining_type"] not in ("max_negative", "hard_example"):
        raise ValueError(
            f"mine_hard_examples: mining_type must be max_negative or hard_example. Received: {a['mining_type']!r}"
        )
    loss = cls_loss + loc_loss if hard and loc_loss is not None else cls_loss
    losses, matches, dists = loss.tolist(), match.tolist(), dist.tolist()
    updated = [list(row) for row in matches]
    negatives, counts = [], []
    for n, (row_loss, row_match, row_dist) in enumerate(zip(losses, matches, dists)):
        eligible = [
            m for m in range(len(row_match)) if hard or (row_match[m] == -1 and row_dist[m] < a["neg_dist_threshold"])
        ]
        if hard:
            count = min(a["sample_size"], len(eligible))
        else:
            positives = sum(1 for v in row_match if v != -1)
            count = min(int(positives * a["neg_pos_ratio"]), len(eligible))
        chosen = sorted(sorted(eligible, key=lambda m: -row_loss[m])[:count])
        if hard:
            picked = set(chosen)
            for m, v in enumerate(row_match):
                if v > -1 and m not in picked:
                    updated[n][m] = -1
            chosen = [m for m in chosen if row_match[m] == -1]
        negatives += chosen
        counts.append(len(chosen))
    dev = a["_device"]
    neg = torch.tensor(negatives, dtype=torch.int32, device=dev).reshape(-1, 1)
    return {
        "NegIndices": [with_lod(neg, [offsets_of(counts)])],
        "UpdatedMatchIndices": [torch.tensor(updated, dtype=match.dtype, device=dev).reshape(match.shape)],
    }


register(
    OpDef(
        "mine_hard_examples",
        ("ClsLoss", "LocLoss", "MatchIndices", "MatchDist"),
        ("NegIndices", "UpdatedMatchIndices"),
        {"neg_pos_ratio": 1.0, "neg_dist_threshold": 0.5, "sample_size": 0, "mining_type": "max_negative"},
        lambda ins, a: {
            "NegIndices": [((-1, 1), "int32")],
            "UpdatedMatchIndices": [(first(ins, "MatchIndices").shape, first(ins, "MatchIndices").dtype)],
        },
        _mine_hard_examples,
        host_inputs=frozenset({"ClsLoss", "LocLoss", "MatchIndices", "MatchDist"}),
    )
)


# -- yolov3_loss -------------------------------------------------------------------------------------
def _sce(x, label):
    """Sigmoid cross entropy with logits, elementwise."""
    return torch.clamp(x, min=0) - x * label + torch.log1p(torch.exp(-torch.abs(x)))


def _center_iou(a, b):
    """IoU of centre-size boxes (x, y, w, h) broadcast against each other."""
    ow = torch.minimum(a[..., 0] + a[..., 2] / 2, b[..., 0] + b[..., 2] / 2) - torch.maximum(
        a[..., 0] - a[..., 2] / 2, b[..., 0] - b[..., 2] / 2
    )
    oh = torch.minimum(a[..., 1] + a[..., 3] / 2, b[..., 1] + b[..., 3] / 2) - torch.maximum(
        a[..., 1] - a[..., 3] / 2, b[..., 1] - b[..., 3] / 2
    )
    inter = ow * oh
    iou = inter / (a[..., 2] * a[..., 3] + b[..., 2] * b[..., 3] - inter)
    return torch.where((ow > 0) & (oh > 0), iou, torch.zeros_like(iou))


def _yolov3_loss(ins, a):
    """YOLOv3's loss per image, as fluid 1.8 computed it: each ground-truth box (centre x, y, w, h,
    relative to the input image; w or h under 1e-6 means none) goes to the anchor of best shape
    IoU; where that anchor is one of this head's (anchor_mask), the cell holding the box's centre
    learns its offsets (sigmoid cross entropy of x, y, L1 of the log sizes, weighted by 2 - w * h),
    its classes (label smoothing with use_label_smooth) and objectness 1, all times the box's score.
    Other predictions learn objectness 0 unless their box overlaps a ground truth by more than
    ignore_thresh. The grid's height scales both directions (fluid takes the map to be square)."""
    x, host_box, gt_label = ins["X"][0], ins["GTBox"][0], ins["GTLabel"][0]
    gt_score = first(ins, "GTScore")  # the ground truth is read on the host, the head stays on its device
    n, _, h, w = x.shape
    anchors, mask = a["anchors"], a["anchor_mask"]
    classes, m = a["class_num"], len(mask)
    input_size = a["downsample_ratio"] * h
    scale, bias = a["scale_x_y"], -0.5 * (a["scale_x_y"] - 1.0)
    dev, dt = x.device, x.dtype
    p = x.reshape(n, m, 5 + classes, h, w)
    b = host_box.shape[1]
    gt_box = host_box.to(device=dev, dtype=dt)
    score = gt_score if gt_score is not None else torch.ones((n, b), dtype=dt)
    # predictions that overlap a ground truth by more than ignore_thresh learn no objectness
    with torch.no_grad():
        col = torch.arange(w, dtype=dt, device=dev).reshape(1, 1, 1, w)
        row = torch.arange(h, dtype=dt, device=dev).reshape(1, 1, h, 1)
        aw = torch.tensor([anchors[2 * k] for k in mask], dtype=dt, device=dev).reshape(1, m, 1, 1)
        ah = torch.tensor([anchors[2 * k + 1] for k in mask], dtype=dt, device=dev).reshape(1, m, 1, 1)
        pred = torch.stack(
            [
                (col + torch.sigmoid(p[:, :, 0]) * scale + bias) / h,
                (row + torch.sigmoid(p[:, :, 1]) * scale + bias) / h,
                torch.exp(p[:, :, 2]) * aw / input_size,
                torch.exp(p[:, :, 3]) * ah / input_size,
            ],
            -1,
        )  # [N, m, h, w, 4]
        valid = (gt_box[..., 2] >= 1e-6) & (gt_box[..., 3] >= 1e-6)  # [N, B]
        ious = _center_iou(pred.reshape(n, -1, 1, 4), gt_box.reshape(n, 1, b, 4))  # [N, m*h*w, B]
        ious = torch.where(valid.unsqueeze(1), ious, torch.zeros_like(ious))
        best = ious.max(-1).values.reshape(n, m, h, w) if b else torch.zeros((n, m, h, w), dtype=dt, device=dev)
        obj_mask = torch.where(best > a["ignore_thresh"], -torch.ones_like(best), torch.zeros_like(best))
    # each ground truth's anchor, from the shapes alone (host: a handful of boxes)
    boxes, valid_l, scores = host_box.tolist(), valid.tolist(), score.tolist()
    labels = gt_label.tolist()
    match = [[-1] * b for _ in range(n)]
    picks = []  # (image, mask index, row, column, box, label, score, anchor)
    for i in range(n):
        for t in range(b):
            if not valid_l[i][t]:
                continue
            gx, gy, gw, gh = boxes[i][t]
            best_iou, best_k = 0.0, 0
            for k in range(len(anchors) // 2):
                ow, oh = min(anchors[2 * k] / input_size, gw), min(anchors[2 * k + 1] / input_size, gh)
                iou = ow * oh / (anchors[2 * k] / input_size * anchors[2 * k + 1] / input_size + gw * gh - ow * oh)
                if iou > best_iou:
                    best_iou, best_k = iou, k
            if best_k in mask:
                j = mask.index(best_k)
                match[i][t] = j
                picks.append((i, j, int(gy * h), int(gx * w), (gx, gy, gw, gh), labels[i][t], scores[i][t], best_k))
            else:
                match[i][t] = -1
    loss = torch.zeros(n, dtype=dt, device=dev)
    if picks:
        ii, jj, rr, cc = (torch.tensor(v, device=dev) for v in list(zip(*picks))[:4])
        target = torch.tensor([pk[4] for pk in picks], dtype=dt, device=dev)
        sc = torch.tensor([pk[6] for pk in picks], dtype=dt, device=dev)
        anchor_wh = torch.tensor([[anchors[2 * pk[7]], anchors[2 * pk[7] + 1]] for pk in picks], dtype=dt, device=dev)
        at = p[ii, jj, :, rr, cc]  # [picks, 5 + classes]
        tx = target[:, 0] * h - cc.to(dt)
        ty = target[:, 1] * h - rr.to(dt)
        tw = torch.log(target[:, 2] * input_size / anchor_wh[:, 0])
        th = torch.log(target[:, 3] * input_size / anchor_wh[:, 1])
        weight = (2.0 - target[:, 2] * target[:, 3]) * sc
        box_loss = (_sce(at[:, 0], tx) + _sce(at[:, 1], ty) + (at[:, 2] - tw).abs() + (at[:, 3] - th).abs()) * weight
        pos, neg = 1.0, 0.0
        if a["use_label_smooth"]:
            smooth = min(1.0 / classes, 1.0 / 40)
            pos, neg = 1.0 - smooth, smooth
        onehot = torch.full((len(picks), classes), neg, dtype=dt, device=dev)
        onehot[torch.arange(len(picks), device=dev), torch.tensor([pk[5] for pk in picks], device=dev)] = pos
        label_loss = _sce(at[:, 5:], onehot).sum(-1) * sc
        loss = loss.index_add(0, ii, box_loss + label_loss)
        obj_mask = obj_mask.index_put((ii, jj, rr, cc), sc)  # the last box of a cell decides, as in fluid
    obj = p[:, :, 4]
    objness = torch.where(
        obj_mask > 1e-5,
        _sce(obj, torch.ones_like(obj)) * obj_mask,
        torch.where(obj_mask > -0.5, _sce(obj, torch.zeros_like(obj)), torch.zeros_like(obj)),
    )
    loss = loss + objness.reshape(n, -1).sum(-1)
    return {
        "Loss": [loss],
        "ObjectnessMask": [obj_mask],
        "GTMatchMask": [torch.tensor(match, dtype=torch.int32, device=dev).reshape(n, b)],
    }


register(
    OpDef(
        "yolov3_loss",
        ("X", "GTBox", "GTLabel", "GTScore"),
        ("Loss", "ObjectnessMask", "GTMatchMask"),
        {
            "anchors": [],
            "anchor_mask": [],
            "class_num": 1,
            "ignore_thresh": 0.7,
            "downsample_ratio": 32,
            "use_label_smooth": True,
            "scale_x_y": 1.0,
        },
        lambda ins, a: {
            "Loss": [((first(ins, "X").shape[0],), first(ins, "X").dtype)],
            "ObjectnessMask": [
                (
                    (
                        first(ins, "X").shape[0],
                        len(a["anchor_mask"]),
                        first(ins, "X").shape[2],
                        first(ins, "X").shape[3],
                    ),
                    first(ins, "X").dtype,
                )
            ],  # fmt: skip
            "GTMatchMask": [(tuple(first(ins, "GTBox").shape[:2]), "int32")],
        },
        _yolov3_loss,
        host_inputs=frozenset({"GTBox", "GTLabel", "GTScore"}),
        grad=GradDef(("X", "GTBox", "GTLabel", "GTScore"), out_grads=("Loss",), in_grads=("X",)),
    )
)


# -- rpn_target_assign / retinanet_target_assign (host algorithms, as fluid 1.8 ran them) ---------
def _box_to_delta(anchors, gts):
    """Faster R-CNN's regression targets from pixel anchors to pixel boxes (no variances)."""
    aw, ah = anchors[:, 2] - anchors[:, 0] + 1, anchors[:, 3] - anchors[:, 1] + 1
    gw, gh = gts[:, 2] - gts[:, 0] + 1, gts[:, 3] - gts[:, 1] + 1
    acx, acy = anchors[:, 0] + 0.5 * aw, anchors[:, 1] + 0.5 * ah
    gcx, gcy = gts[:, 0] + 0.5 * gw, gts[:, 1] + 0.5 * gh
    return torch.stack([(gcx - acx) / aw, (gcy - acy) / ah, torch.log(gw / aw), torch.log(gh / ah)], -1)


def _sample(candidates, limit, random):
    """At most ``limit`` of ``candidates``: the first ones, or with ``random`` a random subset (torch's
    generator; fluid's draws were its own)."""
    if limit is None or len(candidates) <= limit:
        return candidates
    if not random:
        return candidates[:limit]
    picked = torch.randperm(len(candidates))[:limit].tolist()
    return [candidates[i] for i in picked]


def _label_anchors(overlaps, positive, negative, fg_limit=None, batch=None, random=False):
    """Foreground: anchors overlapping a box by >= positive, and each box's best anchors; background:
    anchors overlapping every box by < negative. fg_limit foreground and batch - (that many)
    background candidates are kept (the first ones, or random ones with ``random``);
    a kept background anchor that was foreground becomes background and leaves a zero-weight stand-in
    (the first foreground candidate) among the box targets, as in fluid 1.8.
    Returns (fg anchors, bg anchors, rows of the box targets, their weights, each anchor's box)."""
    count, boxes = overlaps.shape
    best_box = overlaps.argmax(1) if boxes else torch.zeros(count, dtype=torch.long)
    anchor_max = overlaps.max(1).values if boxes else torch.zeros(count)
    box_max = overlaps.max(0).values if boxes else torch.zeros(0)
    is_best = (
        ((overlaps - box_max.reshape(1, -1)).abs() < 1e-5).any(1) if boxes else torch.zeros(count, dtype=torch.bool)
    )
    fg_candidates = torch.nonzero(is_best | (anchor_max >= positive)).reshape(-1).tolist()
    fg_candidates = _sample(fg_candidates, fg_limit, random)
    label = [-1] * count
    for i in fg_candidates:
        label[i] = 1
    bg_candidates = torch.nonzero(anchor_max < negative).reshape(-1).tolist()
    bg_candidates = _sample(bg_candidates, None if batch is None else batch - len(fg_candidates), random)
    stand_ins = 0
    for i in bg_candidates:
        if label[i] == 1:
            stand_ins += 1
        label[i] = 0
    fg = [i for i in range(count) if label[i] == 1]
    bg = [i for i in range(count) if label[i] == 0]
    rows = [fg_candidates[0]] * stand_ins + fg
    weights = [0.0] * stand_ins + [1.0] * len(fg)
    return fg, bg, rows, weights, best_box


def _target_assign_rpn(ins, a, retinanet):
    op = "retinanet_target_assign" if retinanet else "rpn_target_assign"
    anchors = ins["Anchor"][0].reshape(-1, 4)
    gt, crowd, info = ins["GtBoxes"][0], ins["IsCrowd"][0], ins["ImInfo"][0]
    labels = first(ins, "GtLabels")
    offsets = _rows_per_image(gt, op, "GtBoxes")
    total = anchors.shape[0]
    loc, score, tgt_label, tgt_box, weight, fg_counts = [], [], [], [], [], []
    loc_counts, score_counts = [], []
    for n, (s, e) in enumerate(zip(offsets, offsets[1:])):
        im_h, im_w, im_scale = (float(v) for v in info[n].tolist())
        t = -1.0 if retinanet else a["rpn_straddle_thresh"]
        if t >= 0:
            inside_mask = (
                (anchors[:, 0] >= -t) & (anchors[:, 1] >= -t) & (anchors[:, 2] < im_w + t) & (anchors[:, 3] < im_h + t)
            )
            inside = torch.nonzero(inside_mask).reshape(-1)
        else:
            inside = torch.arange(total)
        keep = crowd[s:e].reshape(-1) == 0
        boxes = gt[s:e][keep]
        overlaps = _iou_matrix(anchors[inside], boxes * im_scale, normalized=False)  # boxes at the image's scale
        if retinanet:
            fg, bg, rows, weights, best = _label_anchors(overlaps, a["positive_overlap"], a["negative_overlap"])
        else:
            fg_limit = int(a["rpn_fg_fraction"] * a["rpn_batch_size_per_im"])
            fg, bg, rows, weights, best = _label_anchors(
                overlaps,
                a["rpn_positive_overlap"],
                a["rpn_negative_overlap"],
                fg_limit,
                a["rpn_batch_size_per_im"],
                a["use_random"],
            )
        rows_t = torch.tensor(rows, dtype=torch.long)
        loc += (inside[rows_t] + n * total).tolist()
        score += (inside[torch.tensor(fg + bg, dtype=torch.long)] + n * total).tolist()
        if retinanet:
            box_labels = labels[s:e][keep].reshape(-1)
            tgt_label += box_labels[best[torch.tensor(fg, dtype=torch.long)]].tolist() + [0] * len(bg)
            fg_counts.append(len(rows) + 1)
        else:
            tgt_label += [1] * len(fg) + [0] * len(bg)
        scaled = boxes * im_scale
        tgt_box.append(_box_to_delta(anchors[inside[rows_t]], scaled[best[rows_t]]) if rows else torch.zeros((0, 4)))
        weight += weights
        loc_counts.append(len(rows))
        score_counts.append(len(fg) + len(bg))
    dev, dt = a["_device"], anchors.dtype
    loc_lod, score_lod = [offsets_of(loc_counts)], [offsets_of(score_counts)]
    result = {
        "LocationIndex": [torch.tensor(loc, dtype=torch.int32, device=dev)],
        "ScoreIndex": [torch.tensor(score, dtype=torch.int32, device=dev)],
        "TargetLabel": [with_lod(torch.tensor(tgt_label, dtype=torch.int32, device=dev).reshape(-1, 1), score_lod)],
        "TargetBBox": [with_lod(torch.cat(tgt_box).to(device=dev, dtype=dt).reshape(-1, 4), loc_lod)],
        "BBoxInsideWeight": [
            with_lod(torch.tensor(weight, dtype=dt, device=dev).reshape(-1, 1).expand(-1, 4).contiguous(), loc_lod)
        ],
    }
    if retinanet:
        result["ForegroundNumber"] = [
            with_lod(
                torch.tensor(fg_counts, dtype=torch.int32, device=dev).reshape(-1, 1),
                [offsets_of([1] * len(fg_counts))],
            )
        ]
    return result


_TARGET_OUTS = ("LocationIndex", "ScoreIndex", "TargetLabel", "TargetBBox", "BBoxInsideWeight")


def _target_infer(ins, a):
    dt = first(ins, "Anchor").dtype
    shapes = {
        "LocationIndex": [((-1,), "int32")],
        "ScoreIndex": [((-1,), "int32")],
        "TargetLabel": [((-1, 1), "int32")],
        "TargetBBox": [((-1, 4), dt)],
        "BBoxInsideWeight": [((-1, 4), dt)],
    }
    if "GtLabels" in ins:
        shapes["ForegroundNumber"] = [((-1, 1), "int32")]
    return shapes


register(
    OpDef(
        "rpn_target_assign",
        ("Anchor", "GtBoxes", "IsCrowd", "ImInfo"),
        _TARGET_OUTS,
        {
            "rpn_batch_size_per_im": 256,
            "rpn_straddle_thresh": 0.0,
            "rpn_positive_overlap": 0.7,
            "rpn_negative_overlap": 0.3,
            "rpn_fg_fraction": 0.25,
            "use_random": True,
        },
        _target_infer,
        lambda ins, a: _target_assign_rpn(ins, a, retinanet=False),
        host_inputs=frozenset({"Anchor", "GtBoxes", "IsCrowd", "ImInfo"}),
    )
)
register(
    OpDef(
        "retinanet_target_assign",
        ("Anchor", "GtBoxes", "GtLabels", "IsCrowd", "ImInfo"),
        _TARGET_OUTS + ("ForegroundNumber",),
        {"positive_overlap": 0.5, "negative_overlap": 0.4},
        _target_infer,
        lambda ins, a: _target_assign_rpn(ins, a, retinanet=True),
        host_inputs=frozenset({"Anchor", "GtBoxes", "GtLabels", "IsCrowd", "ImInfo"}),
    )
)


# -- generate_proposal_labels (Fast R-CNN) ---------------------------------------------------------
def _generate_proposal_labels(ins, a):
    """Faster R-CNN's second-stage targets per image: the image's ground truth (crowd boxes too)
    put before its RPN rois (at the original scale), each labelled by its best box: foreground at
    IoU >= fg_thresh (the box's class; a crowd box itself is neither), background in [bg_thresh_lo,
    bg_thresh_hi); batch_size_per_im of them with fg_fraction foreground (the first ones, or random
    with use_random). Box targets (divided by bbox_reg_weights) sit in the label's four columns (or
    column group 1 with is_cls_agnostic), where the weights are 1.

    With is_cascade_rcnn (a later stage of Cascade R-CNN) the rois already start with the image's
    ground truth, at the original scale, and are not joined with it again; rois with no area are
    left out, and every foreground and background roi is kept (no sampling), as fluid 1.8.5 did."""
    cascade = a["is_cascade_rcnn"]
    rois, classes, crowd, gt, info = (ins[s][0] for s in ("RpnRois", "GtClasses", "IsCrowd", "GtBoxes", "ImInfo"))
    roi_lod = _rows_per_image(rois, "generate_proposal_labels", "RpnRois")
    gt_lod = _rows_per_image(gt, "generate_proposal_labels", "GtBoxes")
    weights = torch.tensor(a["bbox_reg_weights"], dtype=rois.dtype)
    width = 4 * a["class_nums"]
    out_rois, out_labels, out_targets, out_inside, counts = [], [], [], [], []
    for n in range(info.shape[0]):
        scale = float(info[n, 2])
        g0, g1 = gt_lod[n], gt_lod[n + 1]
        image_rois = rois[roi_lod[n] : roi_lod[n + 1]]
        if cascade:
            k = min(g1 - g0, image_rois.shape[0])
            boxes = torch.cat([image_rois[:k], image_rois[k:] / scale])
        else:
            boxes = torch.cat([gt[g0:g1], image_rois / scale])
        overlaps = _iou_matrix(boxes, gt[g0:g1], normalized=False)
        best = overlaps.max(1).values if g1 > g0 else torch.full((boxes.shape[0],), -1.0)
        crowd_rows = torch.zeros(boxes.shape[0], dtype=torch.bool)
        k = min(g1 - g0, boxes.shape[0])
        crowd_rows[:k] = crowd[g0 : g0 + k].reshape(-1) != 0
        best = torch.where(crowd_rows, torch.full_like(best, -1.0), best)
        keep = torch.ones(boxes.shape[0], dtype=torch.bool)
        if cascade:
            keep = ((boxes[:, 2] - boxes[:, 0] + 1) > 0) & ((boxes[:, 3] - boxes[:, 1] + 1) > 0)
        fg = torch.nonzero((best >= a["fg_thresh"]) & keep).reshape(-1).tolist()
        is_bg = (best >= a["bg_thresh_lo"]) & (best < a["bg_thresh_hi"]) & (best < a["fg_thresh"]) & keep
        bg = torch.nonzero(is_bg).reshape(-1).tolist()
        if not cascade:
            fg = _sample(fg, int(a["batch_size_per_im"] * a["fg_fraction"]), a["use_random"])
            bg = _sample(bg, a["batch_size_per_im"] - len(fg), a["use_random"])
        picked = torch.tensor(fg + bg, dtype=torch.long)
        matched = overlaps[torch.tensor(fg, dtype=torch.long)].argmax(1) if fg else torch.zeros(0, dtype=torch.long)
        labels = torch.cat([classes[g0:g1].reshape(-1)[matched].long(), torch.zeros(len(bg), dtype=torch.long)])
        deltas = _box_to_delta(boxes[torch.tensor(fg, dtype=torch.long)], gt[g0:g1][matched]) / weights
        targets = torch.zeros((len(picked), width), dtype=rois.dtype)
        inside = torch.zeros_like(targets)
        for r in range(len(fg)):
            slot = 1 if a["is_cls_agnostic"] else int(labels[r])
            targets[r, 4 * slot : 4 * slot + 4] = deltas[r]
            inside[r, 4 * slot : 4 * slot + 4] = 1.0
        out_rois.append(boxes[picked] * scale)
        out_labels.append(labels)
        out_targets.append(targets)
        out_inside.append(inside)
        counts.append(len(picked))
    dev = a["_device"]
    lod = [offsets_of(counts)]

    def put(parts, dtype, cols):
        return with_lod(torch.cat(parts).to(device=dev, dtype=dtype).reshape(-1, cols), lod)

    inside_all = put(out_inside, rois.dtype, width)
    return {
        "Rois": [put(out_rois, rois.dtype, 4)],
        "LabelsInt32": [put(out_labels, torch.int32, 1)],
        "BboxTargets": [put(out_targets, rois.dtype, width)],
        "BboxInsideWeights": [inside_all],
        "BboxOutsideWeights": [with_lod(inside_all.clone(), lod)],
    }


register(
    OpDef(
        "generate_proposal_labels",
        ("RpnRois", "GtClasses", "IsCrowd", "GtBoxes", "ImInfo"),
        ("Rois", "LabelsInt32", "BboxTargets", "BboxInsideWeights", "BboxOutsideWeights"),
        {
            "batch_size_per_im": 256,
            "fg_fraction": 0.25,
            "fg_thresh": 0.25,
            "bg_thresh_hi": 0.5,
            "bg_thresh_lo": 0.0,
            "bbox_reg_weights": [0.1, 0.1, 0.2, 0.2],
            "class_nums": 1,
            "use_random": True,
            "is_cls_agnostic": False,
            "is_cascade_rcnn": False,
        },
        lambda ins, a: {
            "Rois": [((-1, 4), first(ins, "RpnRois").dtype)],
            "LabelsInt32": [((-1, 1), "int32")],
            **{
                s: [((-1, 4 * a["class_nums"]), first(ins, "RpnRois").dtype)]
                for s in ("BboxTargets", "BboxInsideWeights", "BboxOutsideWeights")
            },
        },
        _generate_proposal_labels,
        host_inputs=frozenset({"RpnRois", "GtClasses", "IsCrowd", "GtBoxes", "ImInfo"}),
    )
)


# -- generate_mask_labels (Mask R-CNN) ------------------------------------------------------------
def _poly_to_mask(xy, size) -> list:
    """A polygon (flat x, y list, in mask pixels) rasterized on a size x size grid as COCO's mask API
    did (points upsampled 5x, the boundary's crossings of pixel columns run-length encoded): rows of
    0/1, row-major."""
    scale, k = 5.0, len(xy) // 2
    xs = [int(scale * xy[2 * j] + 0.5) for j in range(k)]
    ys = [int(scale * xy[2 * j + 1] + 0.5) for j in range(k)]
    xs.append(xs[0])
    ys.append(ys[0])
    u, v = [], []
    for j in range(k):
        x0, x1, y0, y1 = xs[j], xs[j + 1], ys[j], ys[j + 1]
        dx, dy = abs(x1 - x0), abs(y0 - y1)
        flip = (dx >= dy and x0 > x1) or (dx < dy and y0 > y1)
        if flip:
            x0, x1, y0, y1 = x1, x0, y1, y0
        if dx >= dy:
            s = 0.0 if dx == 0 else (y1 - y0) / dx
            for d in range(dx + 1):
                t = dx - d if flip else d
                u.append(t + x0)
                v.append(int(y0 + s * t + 0.5))
        else:
            s = 0.0 if dy == 0 else (x1 - x0) / dy
            for d in range(dy + 1):
                t = dy - d if flip else d
                v.append(t + y0)
                u.append(int(x0 + s * t + 0.5))
    bounds = []
    for j in range(1, len(u)):
        if u[j] == u[j - 1]:
            continue
        xd = (float(u[j] if u[j] < u[j - 1] else u[j] - 1) + 0.5) / scale - 0.5
        if math.floor(xd) != xd or xd < 0 or xd > size - 1:
            continue
        yd = (float(v[j] if v[j] < v[j - 1] else v[j - 1]) + 0.5) / scale - 0.5
        yd = math.ceil(min(max(yd, 0.0), float(size)))
        bounds.append(int(xd) * size + int(yd))
    starts = sorted(bounds + [size * size])
    runs, prev = [], 0
    for t in starts:
        runs.append(t - prev)
        prev = t
    counts = [runs[0]]
    j = 1
    while j < len(runs):
        if runs[j] > 0:
            counts.append(runs[j])
            j += 1
        else:
            j += 1
            if j < len(runs):
                counts[-1] += runs[j]
                j += 1
    column_major, value = [], 0
    for c in counts:
        column_major += [value] * c
        value = 1 - value
    return [[column_major[x * size + y] for x in range(size)] for y in range(size)]


def _generate_mask_labels(ins, a):
    """Mask R-CNN's mask targets per image: each foreground roi (label > 0) matched by IoU to the
    box around a (non-crowd, labelled) ground truth's polygons, which are rasterized at resolution x
    resolution in the roi's frame into the roi's class slot (-1 elsewhere). An image without a
    foreground roi gives its first background roi with an all -1 target, as fluid 1.8."""
    info, classes, crowd, segms, rois, labels = (
        ins[s][0] for s in ("ImInfo", "GtClasses", "IsCrowd", "GtSegms", "Rois", "LabelsInt32")
    )
    size, num_classes = a["resolution"], a["num_classes"]
    seg_lod = lod_of(segms)
    if len(seg_lod) != 3:
        raise ValueError(
            f"generate_mask_labels: GtSegms must carry 3 LoD levels (images, boxes, polygons); received {len(seg_lod)}"
        )
    points = segms.reshape(-1).tolist()
    gt_lod = _rows_per_image(classes, "generate_mask_labels", "GtClasses")
    roi_lod = _rows_per_image(rois, "generate_mask_labels", "Rois")
    cls_l, crowd_l, label_l = classes.reshape(-1).tolist(), crowd.reshape(-1).tolist(), labels.reshape(-1).tolist()
    polys_of_gt = []  # per ground truth (all images in order): its polygons as flat x, y lists
    for g in range(len(seg_lod[1]) - 1):
        polys_of_gt.append(
            [points[2 * seg_lod[2][p] : 2 * seg_lod[2][p + 1]] for p in range(seg_lod[1][g], seg_lod[1][g + 1])]
        )
    out_rois, has_mask, targets, counts = [], [], [], []
    for n in range(len(roi_lod) - 1):
        scale = float(info[n, 2])
        gts = [g for g in range(gt_lod[n], gt_lod[n + 1]) if cls_l[g] > 0 and crowd_l[g] == 0]
        r0, r1 = roi_lod[n], roi_lod[n + 1]
        fg = [i for i in range(r0, r1) if label_l[i] > 0]
        if fg and gts:
            boxes = []  # around each ground truth's polygons
            for g in gts:
                xs = [x for p in polys_of_gt[g] for x in p[0::2]]
                ys = [y for p in polys_of_gt[g] for y in p[1::2]]
                boxes.append([min(xs), min(ys), max(xs), max(ys)])
            roi_boxes = rois[torch.tensor(fg, dtype=torch.long)].to(torch.float64) / scale
            best = _iou_matrix(roi_boxes, torch.tensor(boxes, dtype=torch.float64), normalized=False).argmax(1).tolist()
            for i, b, box in zip(fg, best, roi_boxes.tolist()):
                w, h = max(box[2] - box[0], 1.0), max(box[3] - box[1], 1.0)
                mask = [[0] * size for _ in range(size)]
                for poly in polys_of_gt[gts[b]]:
                    frame = [
                        ((c - box[0]) * size / w) if k % 2 == 0 else ((c - box[1]) * size / h)
                        for k, c in enumerate(poly)
                    ]
                    for y, row in enumerate(_poly_to_mask(frame, size)):
                        mask[y] = [m | r for m, r in zip(mask[y], row)]
                target = [-1] * (num_classes * size * size)
                target[label_l[i] * size * size : (label_l[i] + 1) * size * size] = [v for row in mask for v in row]
                targets.append(target)
                out_rois.append(i)
                has_mask.append(i - r0)
            counts.append(len(fg))
        else:
            bg = next((i for i in range(r0, r1) if label_l[i] == 0), r0)
            targets.append([-1] * (num_classes * size * size))
            out_rois.append(bg)
            has_mask.append(bg - r0)
            counts.append(1)
    dev = a["_device"]
    lod = [offsets_of(counts)]
    return {
        "MaskRois": [with_lod(rois[torch.tensor(out_rois, dtype=torch.long)].to(dev), lod)],
        "RoiHasMaskInt32": [with_lod(torch.tensor(has_mask, dtype=torch.int32, device=dev).reshape(-1, 1), lod)],
        "MaskInt32": [with_lod(torch.tensor(targets, dtype=torch.int32, device=dev).reshape(len(targets), -1), lod)],
    }


register(
    OpDef(
        "generate_mask_labels",
        ("ImInfo", "GtClasses", "IsCrowd", "GtSegms", "Rois", "LabelsInt32"),
        ("MaskRois", "RoiHasMaskInt32", "MaskInt32"),
        {"num_classes": 1, "resolution": 14},
        lambda ins, a: {
            "MaskRois": [((-1, 4), first(ins, "Rois").dtype)],
            "RoiHasMaskInt32": [((-1, 1), "int32")],
            "MaskInt32": [((-1, a["num_classes"] * a["resolution"] ** 2), "int32")],
        },
        _generate_mask_labels,
        host_inputs=frozenset({"ImInfo", "GtClasses", "IsCrowd", "GtSegms", "Rois", "LabelsInt32"}),
    )
)
