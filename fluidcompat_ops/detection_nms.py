"""Non-maximum suppression (host algorithms, as fluid 1.8 ran them on the CPU): multiclass_nms,
multiclass_nms2, matrix_nms, locality_aware_nms (EAST's, over polygons) and retinanet_detection_output."""

from __future__ import annotations

import math

from fluidcompat_ops.detection_boxes import _decode_pixel_boxes, _side_extra, jaccard
from fluidcompat_ops.registry import OpDef, register
from fluidcompat_ops.sequence import lod_of, offsets_of, with_lod
from fluidcompat_ops.shapes import _round_half_away, first, out

torch = None  # NOTE: [Lazy torch] in registry.py
F = None


# -- multiclass_nms, multiclass_nms2 ---------------------------------------------------------------
def _candidates(scores, a, among=None) -> list:
    """Indices (of ``among``, default all) scoring over score_threshold, best first (stable order
    for ties), the nms_top_k best."""
    order = sorted((i for i in (range(len(scores)) if among is None else among) if scores[i] > a["score_threshold"]),
                   key=lambda i: -scores[i])  # fmt: skip
    return order[: a["nms_top_k"]] if a["nms_top_k"] > -1 else order


def _greedy_nms(boxes, order, threshold, eta, overlap) -> list:
    """Greedy NMS in ``order`` (best first): each box kept unless it overlaps a kept one by more than
    the threshold, which an ``eta`` under 1 lowers after each box kept while it is over 0.5."""
    kept = []
    for i in order:
        if all(overlap(boxes[i], boxes[k]) <= threshold for k in kept):
            kept.append(i)
            if eta < 1 and threshold > 0.5:
                threshold *= eta
    return kept


def _nms_one_class(boxes, scores, a, extra) -> list:
    """Indices kept for one class: the candidates (``_candidates``) through greedy NMS."""
    return _greedy_nms(
        boxes, _candidates(scores, a), a["nms_threshold"], a["nms_eta"], lambda p, q: jaccard(p, q, extra)
    )


def _multiclass_nms(ins, a):
    """Per image, NMS within each class but the background; then the keep_top_k best of all classes.
    Rows [label, score, x1, y1, x2, y2] by class, best first; the LoD counts each image's rows.
    With no detection in any image: one row [-1] (fluid 1.8's form). Two forms, as fluid 1.8:
    BBoxes [N, M, 4] with Scores [N, C, M] (Index: image * M + box), or R-CNN's LoD form, BBoxes
    [R, C, 4] (a box per class) with Scores [R, C], the LoD giving each image's rows (Index: row * C
    + class; a class's rows come in row order)."""
    bboxes, scores = ins["BBoxes"][0], ins["Scores"][0]
    extra = _side_extra(a["normalized"])
    lod_form = scores.dim() == 2
    if lod_form:
        if bboxes.dim() != 3 or bboxes.shape[:2] != scores.shape:
            raise ValueError(
                "multiclass_nms: with Scores [R, C] (LoD form) BBoxes must be [R, C, 4]. "
                f"Received: Scores {list(scores.shape)}, BBoxes {list(bboxes.shape)}"
            )
        offsets = (lod_of(scores) or lod_of(bboxes) or [[0, scores.shape[0]]])[-1]
        images = [
            (s, bboxes[s:e].permute(1, 0, 2).tolist(), scores[s:e].t().tolist()) for s, e in zip(offsets, offsets[1:])
        ]
    elif scores.dim() == 3:
        images = [(n * bboxes.shape[1], b, s) for n, (b, s) in enumerate(zip(bboxes.tolist(), scores.tolist()))]
    else:
        raise ValueError(f"multiclass_nms: Scores must be [N, C, M] or [R, C] (LoD). Received: {list(scores.shape)}")
    classes = scores.shape[1]
    rows, counts, index = [], [], []
    for start, boxes, per_class in images:
        box_of = (lambda c, i: boxes[c][i]) if lod_form else (lambda c, i: boxes[i])
        picked = []  # (class, box index)
        for c, class_scores in enumerate(per_class):
            if c != a["background_label"]:
                class_boxes = boxes[c] if lod_form else boxes
                picked += [(c, i) for i in _nms_one_class(class_boxes, class_scores, a, extra)]
        if a["keep_top_k"] > -1 and len(picked) > a["keep_top_k"]:
            best = sorted(picked, key=lambda ci: -per_class[ci[0]][ci[1]])[: a["keep_top_k"]]
            picked = sorted(best, key=lambda ci: (ci[0], -per_class[ci[0]][ci[1]]))
        if lod_form:  # as fluid 1.8: a class's rows in row order
            picked.sort(key=lambda ci: ci)
        for c, i in picked:
            rows.append([float(c), per_class[c][i]] + box_of(c, i))
            index.append((start + i) * classes + c if lod_form else start + i)
        counts.append(len(picked))
    dev = a["_device"]
    if not rows:
        return {
            "Out": [with_lod(torch.full((1, 1), -1.0, dtype=bboxes.dtype, device=dev), [[0, 1]])],
            "Index": [torch.zeros((0, 1), dtype=torch.int32, device=dev)],
        }
    lod = [offsets_of(counts)]
    return {
        "Out": [with_lod(torch.tensor(rows, dtype=bboxes.dtype, device=dev), lod)],
        "Index": [with_lod(torch.tensor(index, dtype=torch.int32, device=dev).reshape(-1, 1), lod)],
    }


_NMS_ATTRS = {
    "background_label": 0,
    "score_threshold": 0.0,
    "nms_top_k": -1,
    "nms_threshold": 0.3,
    "nms_eta": 1.0,
    "keep_top_k": -1,
    "normalized": True,
}
for _name, _outs in (("multiclass_nms", ("Out",)), ("multiclass_nms2", ("Out", "Index"))):
    register(
        OpDef(
            _name,
            ("BBoxes", "Scores"),
            _outs,
            _NMS_ATTRS,
            lambda ins, a: {
                "Out": [((-1, 6), first(ins, "BBoxes").dtype)],
                "Index": [((-1, 1), "int32")],
            },
            (lambda kernel, outs: lambda ins, a: {k: v for k, v in kernel(ins, a).items() if k in outs})(
                _multiclass_nms, _outs
            ),
            host_inputs=frozenset({"BBoxes", "Scores"}),
        )
    )


def _nms_sorted(boxes, threshold, eta, extra) -> list:
    """Greedy NMS over boxes already in score order: the indices kept."""
    values = boxes.tolist()
    return _greedy_nms(values, range(len(values)), threshold, eta, lambda p, q: jaccard(p, q, extra))


# -- matrix_nms ------------------------------------------------------------------------------------
def _matrix_nms_one_class(boxes, scores, a, extra) -> list:
    """(index, decayed score) kept for one class: the nms_top_k best candidates over score_threshold,
    each score decayed by its overlaps with the better ones (linear: (1 - iou) / (1 - that one's own
    largest overlap); gaussian: exp((that overlap^2 - iou^2) * sigma)), kept over post_threshold."""
    order = _candidates(scores, a)
    iou = [[jaccard(boxes[i], boxes[j], extra) for j in order[:k]] for k, i in enumerate(order)]
    own_max = [max(row, default=0.0) for row in iou]
    kept = []
    for k, i in enumerate(order):
        decay = 1.0
        for j in range(k):
            if a["use_gaussian"]:
                d = math.exp((own_max[j] ** 2 - iou[k][j] ** 2) * a["gaussian_sigma"])
            else:
                d = (1 - iou[k][j]) / (1 - own_max[j])
            decay = min(decay, d)
        score = decay * scores[i]
        if score > a["post_threshold"]:
            kept.append((i, score))
    return kept


def _matrix_nms(ins, a):
    """Matrix NMS (SOLOv2) per image: every class but the background decayed at once, then the
    keep_top_k best of all classes, best first: rows [label, decayed score, x1, y1, x2, y2], LoD per
    image; Index: each row's box in the [N * M] boxes."""
    bboxes, scores = ins["BBoxes"][0], ins["Scores"][0]
    extra = _side_extra(a["normalized"])
    all_boxes, all_scores = bboxes.tolist(), scores.tolist()
    rows, index, counts = [], [], []
    for n, (boxes, per_class) in enumerate(zip(all_boxes, all_scores)):
        found = []
        for c, class_scores in enumerate(per_class):
            if c != a["background_label"]:
                found += [(score, c, i) for i, score in _matrix_nms_one_class(boxes, class_scores, a, extra)]
        found.sort(key=lambda f: -f[0])
        if a["keep_top_k"] > -1:
            found = found[: a["keep_top_k"]]
        rows += [[float(c), score] + boxes[i] for score, c, i in found]
        index += [n * len(boxes) + i for _, _, i in found]
        counts.append(len(found))
    dev = a["_device"]
    lod = [offsets_of(counts)]
    out_rows = torch.tensor(rows, dtype=bboxes.dtype, device=dev).reshape(-1, 6)
    return {
        "Out": [with_lod(out_rows, lod)],
        "Index": [with_lod(torch.tensor(index, dtype=torch.int32, device=dev).reshape(-1, 1), lod)],
    }


register(
    OpDef(
        "matrix_nms",
        ("BBoxes", "Scores"),
        ("Out", "Index"),
        {
            "background_label": 0,
            "score_threshold": 0.0,
            "post_threshold": 0.0,
            "nms_top_k": -1,
            "keep_top_k": -1,
            "normalized": True,
            "use_gaussian": False,
            "gaussian_sigma": 2.0,
        },
        lambda ins, a: {"Out": [((-1, 6), first(ins, "BBoxes").dtype)], "Index": [((-1, 1), "int32")]},
        _matrix_nms,
        host_inputs=frozenset({"BBoxes", "Scores"}),
    )
)


# -- retinanet_detection_output --------------------------------------------------------------------
def _retinanet_detection_output(ins, a):
    """RetinaNet's detections per image: on each FPN level the (anchor, class) pairs scoring over
    score_threshold (on the last level over 0, as fluid 1.8), the nms_top_k best of the level,
    decoded from their anchors at the image's scale and clipped to it; NMS per class over all
    levels; the keep_top_k best, best first. Rows [class + 1, score, x1, y1, x2, y2], LoD per image."""
    levels = list(zip(ins["BBoxes"], ins["Scores"], ins["Anchors"]))
    info = ins["ImInfo"][0]
    rows, counts = [], []
    for n in range(info.shape[0]):
        im_h, im_w, scale = (float(v) for v in info[n].tolist())
        max_x, max_y = _round_half_away(im_w / scale) - 1, _round_half_away(im_h / scale) - 1
        per_class = {}
        for lv, (deltas, scores, anchors) in enumerate(levels):
            s = scores[n]
            classes = s.shape[1]
            threshold = a["score_threshold"] if lv < len(levels) - 1 else 0.0
            flat = s.reshape(-1)
            picked = torch.nonzero(flat > threshold).reshape(-1)
            picked = picked[torch.sort(flat[picked], descending=True, stable=True).indices][: a["nms_top_k"]]
            anchor_index = picked // classes
            boxes = _decode_pixel_boxes(anchors.reshape(-1, 4)[anchor_index], deltas[n][anchor_index], None) / scale
            limit = torch.tensor([max_x, max_y, max_x, max_y], dtype=boxes.dtype, device=boxes.device)
            boxes = torch.minimum(torch.clamp(boxes, min=0.0), limit)
            for c, score, box in zip((picked % classes).tolist(), flat[picked].tolist(), boxes.tolist()):
                per_class.setdefault(c, []).append((score, box))
        found = []
        for c, cands in sorted(per_class.items()):
            cands.sort(key=lambda sb: -sb[0])
            kept = _nms_sorted(
                torch.tensor([b for _, b in cands]).reshape(-1, 4), a["nms_threshold"], a["nms_eta"], 1.0
            )
            found += [(cands[k][0], c, cands[k][1]) for k in kept]
        found.sort(key=lambda f: -f[0])
        if a["keep_top_k"] > -1:
            found = found[: a["keep_top_k"]]
        rows += [[float(c + 1), score] + box for score, c, box in found]
        counts.append(len(found))
    dev = a["_device"]
    out_rows = torch.tensor(rows, dtype=ins["Scores"][0].dtype, device=dev).reshape(-1, 6)
    return {"Out": [with_lod(out_rows, [offsets_of(counts)])]}


register(
    OpDef(
        "retinanet_detection_output",
        ("BBoxes", "Scores", "Anchors", "ImInfo"),
        ("Out",),
        {"score_threshold": 0.05, "nms_top_k": 1000, "nms_threshold": 0.3, "nms_eta": 1.0, "keep_top_k": 100},
        lambda ins, a: out("Out", (-1, 6), first(ins, "Scores").dtype),
        _retinanet_detection_output,
        host_inputs=frozenset({"BBoxes", "Scores", "Anchors", "ImInfo"}),
    )
)


# -- locality_aware_nms (EAST) -----------------------------------------------------------------------
def _poly_area(points) -> float:
    return abs(sum(x0 * y1 - x1 * y0 for (x0, y0), (x1, y1) in zip(points, points[1:] + points[:1]))) / 2.0


def _clip_polygon(subject, clip):
    """``subject`` clipped by the convex polygon ``clip`` (Sutherland-Hodgman)."""
    orient = 1.0 if sum(x0 * y1 - x1 * y0 for (x0, y0), (x1, y1) in zip(clip, clip[1:] + clip[:1])) >= 0 else -1.0
    out_pts = subject
    for (ax, ay), (bx, by) in zip(clip, clip[1:] + clip[:1]):
        if not out_pts:
            break

        def side(p):
            return orient * ((bx - ax) * (p[1] - ay) - (by - ay) * (p[0] - ax))

        def cross(p, q):
            sp, sq = side(p), side(q)
            t = sp / (sp - sq)
            return (p[0] + t * (q[0] - p[0]), p[1] + t * (q[1] - p[1]))

        pts, out_pts = out_pts, []
        for p, q in zip(pts, pts[1:] + pts[:1]):
            if side(q) >= 0:
                if side(p) < 0:
                    out_pts.append(cross(p, q))
                out_pts.append(q)
            elif side(p) >= 0:
                out_pts.append(cross(p, q))
    return out_pts


def _poly_iou(a, b) -> float:
    """IoU of two convex quadrilaterals given as 8 coordinates."""
    pa, pb = list(zip(a[0::2], a[1::2])), list(zip(b[0::2], b[1::2]))
    inter = _poly_area(_clip_polygon(pa, pb)) if _poly_area(pb) > 0 else 0.0
    union = _poly_area(pa) + _poly_area(pb) - inter
    return inter / union if union > 0 else 0.0


def _lanms_one_class(boxes, scores, a, extra):
    """EAST's locality-aware NMS of one class: walking the boxes in order, a box overlapping the
    current one by more than nms_threshold is merged into it (coordinates averaged by score, scores
    added); the merged boxes over score_threshold (the nms_top_k best) then go through NMS.
    Returns [(merged box, merged score)] kept, best first."""
    boxes, scores = [list(b) for b in boxes], list(scores)
    overlap = (lambda p, q: jaccard(p, q, extra)) if len(boxes[0]) == 4 else _poly_iou
    current, ends = -1, []
    for i in range(len(boxes)):
        if current > -1 and overlap(boxes[i], boxes[current]) > a["nms_threshold"]:
            total = scores[i] + scores[current]
            boxes[current] = [(u * scores[i] + v * scores[current]) / total for u, v in zip(boxes[i], boxes[current])]
            scores[current] = total
            continue
        if current > -1:
            ends.append(current)
        current = i
    if current > -1:
        ends.append(current)
    kept = _greedy_nms(boxes, _candidates(scores, a, among=ends), a["nms_threshold"], a["nms_eta"], overlap)
    return [(boxes[i], scores[i]) for i in kept]


def _locality_aware_nms(ins, a):
    """Per image and class (but the background), locality-aware NMS; then the keep_top_k best of all
    classes, by class and best first. Rows [label, score, box coordinates], LoD per image."""
    bboxes, scores = ins["BBoxes"][0], ins["Scores"][0]
    extra = _side_extra(a["normalized"])
    width = bboxes.shape[2]
    rows, counts = [], []
    for boxes, per_class in zip(bboxes.tolist(), scores.tolist()):
        found = []
        for c, class_scores in enumerate(per_class):
            if c != a["background_label"]:
                found += [(c, s, b) for b, s in _lanms_one_class(boxes, class_scores, a, extra)]
        if a["keep_top_k"] > -1 and len(found) > a["keep_top_k"]:
            found = sorted(sorted(found, key=lambda f: -f[1])[: a["keep_top_k"]], key=lambda f: (f[0], -f[1]))
        rows += [[float(c), s] + b for c, s, b in found]
        counts.append(len(found))
    dev = a["_device"]
    if not rows:
        return {"Out": [with_lod(torch.full((1, 1), -1.0, dtype=bboxes.dtype, device=dev), [[0, 1]])]}
    return {
        "Out": [
            with_lod(torch.tensor(rows, dtype=bboxes.dtype, device=dev).reshape(-1, width + 2), [offsets_of(counts)])
        ]
    }


register(
    OpDef(
        "locality_aware_nms",
        ("BBoxes", "Scores"),
        ("Out",),
        dict(_NMS_ATTRS, background_label=-1),
        lambda ins, a: out("Out", (-1, first(ins, "BBoxes").shape[2] + 2), first(ins, "BBoxes").dtype),
        _locality_aware_nms,
        host_inputs=frozenset({"BBoxes", "Scores"}),
    )
)
