"""Priors, anchors and proposals (fluid.layers.detection): prior_box, density_prior_box and
anchor_generator; generate_proposals (RPN), distribute_fpn_proposals and collect_fpn_proposals (FPN
levels), host algorithms as fluid 1.8 ran them on the CPU."""

from __future__ import annotations

import math

from fluidcompat_ops.detection_boxes import _decode_pixel_boxes, _rows_per_image
from fluidcompat_ops.detection_nms import _nms_sorted
from fluidcompat_ops.registry import OpDef, register
from fluidcompat_ops.sequence import _image_of_rows, offsets_of, with_lod
from fluidcompat_ops.shapes import _round_half_away, first, out

torch = None  # NOTE: [Lazy torch] in registry.py
F = None


# -- prior_box -------------------------------------------------------------------------------------
def _stack_corners(x1, y1, x2, y2):
    """[..., 4] boxes from corner coordinates broadcast to one shape (cells x priors)."""
    return torch.stack(torch.broadcast_tensors(x1, y1, x2, y2), -1)


def expand_aspect_ratios(ratios, flip: bool) -> list:
    """1.0, then each ratio not yet there (to 1e-6), and with ``flip`` its inverse."""
    out_ratios = [1.0]
    for r in ratios:
        for v in (r, 1.0 / r) if flip else (r,):
            if all(abs(v - e) >= 1e-6 for e in out_ratios):
                out_ratios.append(v)
    return out_ratios


def _cell_centers(feat_h, feat_w, step_h, step_w, offset, like):
    """Cell centres in the precision of ``like`` (fluid 1.8 computed priors in the feature's type:
    ties between priors, which matching breaks by order, stay ties)."""
    cy = (torch.arange(feat_h, dtype=like.dtype, device=like.device) + offset) * step_h
    cx = (torch.arange(feat_w, dtype=like.dtype, device=like.device) + offset) * step_w
    return cy.reshape(-1, 1, 1), cx.reshape(1, -1, 1)


def _steps(ins, a):
    feat, img = ins["Input"][0], ins["Image"][0]
    img_h, img_w = img.shape[2], img.shape[3]
    step_w = a["step_w"] or img_w / feat.shape[3]
    step_h = a["step_h"] or img_h / feat.shape[2]
    return feat, img_h, img_w, step_h, step_w


def _with_variances(boxes, a, dtype):
    var = torch.tensor(a["variances"], dtype=dtype, device=boxes.device).expand(boxes.shape)
    return boxes.to(dtype).contiguous(), var.contiguous()


def _prior_half_sizes(a) -> list:
    """(half width, half height) of each prior of a cell, in fluid's order."""
    ratios = expand_aspect_ratios(a["aspect_ratios"], a["flip"])
    max_sizes = a["max_sizes"]
    sizes = []
    for s, mn in enumerate(a["min_sizes"]):
        big = [(math.sqrt(mn * max_sizes[s]) / 2,) * 2] if max_sizes else []
        shaped = [(mn * math.sqrt(r) / 2, mn / math.sqrt(r) / 2) for r in ratios]
        if a["min_max_aspect_ratios_order"]:
            sizes += [(mn / 2, mn / 2)] + big + [hw for r, hw in zip(ratios, shaped) if abs(r - 1.0) >= 1e-6]
        else:
            sizes += shaped + big
    return sizes


def _prior_box(ins, a):
    """SSD priors: for each feature-map cell, boxes of each min size at each aspect ratio (and of
    sqrt(min * max) size), centred on the cell, in image-relative coordinates."""
    feat, img_h, img_w, step_h, step_w = _steps(ins, a)
    cy, cx = _cell_centers(feat.shape[2], feat.shape[3], step_h, step_w, a["offset"], feat)
    half = torch.tensor(_prior_half_sizes(a), dtype=feat.dtype, device=feat.device)  # [P, 2]
    hw, hh = half[:, 0], half[:, 1]
    boxes = _stack_corners((cx - hw) / img_w, (cy - hh) / img_h, (cx + hw) / img_w, (cy + hh) / img_h)
    if a["clip"]:
        boxes = boxes.clamp(0.0, 1.0)
    b, v = _with_variances(boxes, a, feat.dtype)
    return {"Boxes": [b], "Variances": [v]}


def _prior_infer(count):
    def infer(ins, a):
        feat = first(ins, "Input")
        shape = (feat.shape[2], feat.shape[3], count(a), 4)
        if a.get("flatten_to_2d"):
            shape = (prod_known(shape[:3]), 4)
        return {"Boxes": [(shape, feat.dtype)], "Variances": [(shape, feat.dtype)]}

    return infer


def prod_known(dims):
    total = 1
    for d in dims:
        if d < 0:
            return -1
        total *= d
    return total


_PRIOR_ATTRS = {"variances": [0.1, 0.1, 0.2, 0.2], "clip": False, "step_w": 0.0, "step_h": 0.0, "offset": 0.5}
register(
    OpDef(
        "prior_box",
        ("Input", "Image"),
        ("Boxes", "Variances"),
        dict(
            _PRIOR_ATTRS,
            min_sizes=[],
            max_sizes=[],
            aspect_ratios=[],
            flip=False,
            min_max_aspect_ratios_order=False,
            use_quantizer=False,
        ),
        _prior_infer(lambda a: len(_prior_half_sizes(a))),
        _prior_box,
        no_buffer_inputs=frozenset({"Input", "Image"}),
    )
)


# -- density_prior_box -----------------------------------------------------------------------------
def _density_boxes(a, step_h, step_w):
    """Per cell: (x offset, y offset, half width, half height) of each density prior, in fluid's
    order (sizes, then ratios, then rows and columns of the density grid)."""
    step_avg = int((step_w + step_h) * 0.5)
    parts = []
    for size, density in zip(a["fixed_sizes"], a["densities"]):
        shift = step_avg // density
        for r in a["fixed_ratios"]:
            bw, bh = size * math.sqrt(r), size / math.sqrt(r)
            start = -step_avg / 2.0 + shift / 2.0
            for di in range(density):
                for dj in range(density):
                    parts.append((start + dj * shift, start + di * shift, bw / 2, bh / 2))
    return parts


def _density_prior_box(ins, a):
    """Priors of fixed sizes and ratios, ``density`` x ``density`` of each per cell spread over the
    cell's step; each side kept inside the image."""
    feat, img_h, img_w, step_h, step_w = _steps(ins, a)
    cy, cx = _cell_centers(feat.shape[2], feat.shape[3], step_h, step_w, a["offset"], feat)
    p = torch.tensor(_density_boxes(a, step_h, step_w), dtype=feat.dtype, device=feat.device)
    x, y = cx + p[:, 0], cy + p[:, 1]
    boxes = _stack_corners(
        ((x - p[:, 2]) / img_w).clamp(min=0.0),
        ((y - p[:, 3]) / img_h).clamp(min=0.0),
        ((x + p[:, 2]) / img_w).clamp(max=1.0),
        ((y + p[:, 3]) / img_h).clamp(max=1.0),
    )
    if a["clip"]:
        boxes = boxes.clamp(0.0, 1.0)
    if a["flatten_to_2d"]:
        boxes = boxes.reshape(-1, 4)
    b, v = _with_variances(boxes, a, feat.dtype)
    return {"Boxes": [b], "Variances": [v]}


register(
    OpDef(
        "density_prior_box",
        ("Input", "Image"),
        ("Boxes", "Variances"),
        dict(_PRIOR_ATTRS, densities=[], fixed_sizes=[], fixed_ratios=[], flatten_to_2d=False),
        _prior_infer(lambda a: sum(d * d for d in a["densities"]) * len(a["fixed_ratios"])),
        _density_prior_box,
        no_buffer_inputs=frozenset({"Input", "Image"}),
    )
)


# -- anchor_generator ------------------------------------------------------------------------------
def _anchor_sizes(a) -> list:
    """(width, height) of each anchor of a cell: per aspect ratio, per anchor size (Faster R-CNN's
    rounding of the stride's area to the ratio)."""
    sw, sh = a["stride"]
    sizes = []
    for ratio in a["aspect_ratios"]:
        base_w = _round_half_away(math.sqrt(sw * sh / ratio))
        base_h = _round_half_away(base_w * ratio)
        for size in a["anchor_sizes"]:
            sizes.append((size / sw * base_w, size / sh * base_h))
    return sizes


def _anchor_generator(ins, a):
    feat = ins["Input"][0]
    sw, sh = a["stride"]
    off = a["offset"]
    dev = feat.device
    cx = (torch.arange(feat.shape[3], dtype=torch.float64, device=dev) * sw + off * (sw - 1)).reshape(1, -1, 1)
    cy = (torch.arange(feat.shape[2], dtype=torch.float64, device=dev) * sh + off * (sh - 1)).reshape(-1, 1, 1)
    wh = torch.tensor(_anchor_sizes(a), dtype=torch.float64, device=dev)
    hw, hh = 0.5 * (wh[:, 0] - 1), 0.5 * (wh[:, 1] - 1)
    anchors = _stack_corners(cx - hw, cy - hh, cx + hw, cy + hh)
    b, v = _with_variances(anchors, a, feat.dtype)
    return {"Anchors": [b], "Variances": [v]}


register(
    OpDef(
        "anchor_generator",
        ("Input",),
        ("Anchors", "Variances"),
        {
            "anchor_sizes": [],
            "aspect_ratios": [],
            "variances": [0.1, 0.1, 0.2, 0.2],
            "stride": [16.0, 16.0],
            "offset": 0.5,
        },
        lambda ins, a: {
            s: [
                (
                    (first(ins, "Input").shape[2], first(ins, "Input").shape[3], len(_anchor_sizes(a)), 4),
                    first(ins, "Input").dtype,
                )
            ]
            for s in ("Anchors", "Variances")
        },
        _anchor_generator,
        no_buffer_inputs=frozenset({"Input"}),
    )
)


# -- generate_proposals (RPN) ----------------------------------------------------------------------
def _generate_proposals(ins, a):
    """RPN proposals per image: the pre_nms_topN best-scored anchors moved by their deltas, clipped
    to the image, those smaller than min_size (at the original scale) or centred outside dropped,
    NMS, then the post_nms_topN best. Rows of all images with their LoD; RpnRoisLod the LoD's
    offsets after 0."""
    scores, deltas, info = ins["Scores"][0], ins["BboxDeltas"][0], ins["ImInfo"][0]
    anchors = ins["Anchors"][0].reshape(-1, 4)
    variances = first(ins, "Variances")
    variances = variances.reshape(-1, 4) if variances is not None else None
    n = scores.shape[0]
    rois, probs, counts = [], [], []
    for i in range(n):
        s = scores[i].permute(1, 2, 0).reshape(-1)
        d = deltas[i].permute(1, 2, 0).reshape(-1, 4)
        order = torch.sort(s, descending=True, stable=True).indices
        if 0 < a["pre_nms_topN"] < order.numel():
            order = order[: a["pre_nms_topN"]]
        boxes = _decode_pixel_boxes(anchors[order], d[order], variances[order] if variances is not None else None)
        im_h, im_w, im_scale = (float(v) for v in info[i].tolist())
        boxes = torch.stack(
            [boxes[:, 0].clamp(0, im_w - 1), boxes[:, 1].clamp(0, im_h - 1),
             boxes[:, 2].clamp(0, im_w - 1), boxes[:, 3].clamp(0, im_h - 1)], -1,
        )  # fmt: skip
        min_size = max(a["min_size"], 1.0)
        ws, hs = boxes[:, 2] - boxes[:, 0] + 1, boxes[:, 3] - boxes[:, 1] + 1
        keep = (
            ((boxes[:, 2] - boxes[:, 0]) / im_scale + 1 >= min_size)
            & ((boxes[:, 3] - boxes[:, 1]) / im_scale + 1 >= min_size)
            & (boxes[:, 0] + ws / 2 <= im_w)
            & (boxes[:, 1] + hs / 2 <= im_h)
        )
        boxes, kept_scores = boxes[keep], s[order][keep]
        if a["nms_thresh"] > 0 and boxes.shape[0]:
            picked = _nms_sorted(boxes, a["nms_thresh"], a["eta"], 1.0)
            if 0 < a["post_nms_topN"] < len(picked):
                picked = picked[: a["post_nms_topN"]]
            index = torch.tensor(picked, dtype=torch.long, device=boxes.device)
            boxes, kept_scores = boxes[index], kept_scores[index]
        rois.append(boxes)
        probs.append(kept_scores.reshape(-1, 1))
        counts.append(boxes.shape[0])
    lod = [offsets_of(counts)]
    dev = a["_device"]
    return {
        "RpnRois": [with_lod(torch.cat(rois).to(dev), lod)],
        "RpnRoiProbs": [with_lod(torch.cat(probs).to(dev), lod)],
        "RpnRoisLod": [torch.tensor(lod[0][1:], dtype=torch.int32, device=dev)],
    }


register(
    OpDef(
        "generate_proposals",
        ("Scores", "BboxDeltas", "ImInfo", "Anchors", "Variances"),
        ("RpnRois", "RpnRoiProbs", "RpnRoisLod"),
        {"pre_nms_topN": 6000, "post_nms_topN": 1000, "nms_thresh": 0.5, "min_size": 0.1, "eta": 1.0},
        lambda ins, a: {
            "RpnRois": [((-1, 4), first(ins, "Scores").dtype)],
            "RpnRoiProbs": [((-1, 1), first(ins, "Scores").dtype)],
            "RpnRoisLod": [((-1,), "int32")],
        },
        _generate_proposals,
        host_inputs=frozenset({"Scores", "BboxDeltas", "ImInfo", "Anchors", "Variances"}),
    )
)


# -- distribute_fpn_proposals, collect_fpn_proposals (FPN levels) ----------------------------------
def _distribute_fpn_proposals(ins, a):
    """Each roi to the FPN level floor(refer_level + log2(sqrt(area) / refer_scale)), clamped to
    [min_level, max_level]; one output per level (rois in image order, LoD per image) and the
    index restoring the original order from the levels' concatenation."""
    rois = ins["FpnRois"][0]
    offsets = _rows_per_image(rois, "distribute_fpn_proposals", "FpnRois")
    lo, hi = a["min_level"], a["max_level"]
    w = rois[:, 2] - rois[:, 0] + 1
    h = rois[:, 3] - rois[:, 1] + 1
    scale = torch.sqrt(torch.clamp(w, min=0) * torch.clamp(h, min=0))
    level = torch.floor(torch.log2(scale / a["refer_scale"] + 1e-6) + a["refer_level"]).clamp(lo, hi).long()
    levels = level.tolist()
    image = _image_of_rows(offsets)
    outs, order = [], []
    for lv in range(lo, hi + 1):
        members = [r for r in range(len(levels)) if levels[r] == lv]
        counts = [sum(1 for r in members if image[r] == b) for b in range(len(offsets) - 1)]
        index = torch.tensor(members, dtype=torch.long, device=rois.device)
        outs.append(with_lod(rois[index].reshape(-1, 4), [offsets_of(counts)]))
        order += members
    restore = [0] * len(order)
    for position, r in enumerate(order):
        restore[r] = position
    return {
        "MultiFpnRois": outs,
        "RestoreIndex": [torch.tensor(restore, dtype=torch.int32, device=rois.device).reshape(-1, 1)],
    }


def _distribute_infer(ins, a):
    rois = first(ins, "FpnRois")
    count = a["max_level"] - a["min_level"] + 1
    return {"MultiFpnRois": [((-1, 4), rois.dtype)] * count, "RestoreIndex": [((-1, 1), "int32")]}


register(
    OpDef(
        "distribute_fpn_proposals",
        ("FpnRois",),
        ("MultiFpnRois", "RestoreIndex"),
        {"min_level": 2, "max_level": 5, "refer_level": 4, "refer_scale": 224},
        _distribute_infer,
        _distribute_fpn_proposals,
        host_inputs=frozenset({"FpnRois"}),
    )
)


def _collect_fpn_proposals(ins, a):
    """The post_nms_topN best-scored rois of all levels and images together (ties in level order),
    then grouped by image (LoD per image)."""
    rois, scores = ins["MultiLevelRois"], ins["MultiLevelScores"]
    entries = []  # (score, image, roi)
    for level_rois, level_scores in zip(rois, scores):
        offsets = _rows_per_image(level_rois, "collect_fpn_proposals", "MultiLevelRois")
        values, boxes = level_scores.reshape(-1).tolist(), level_rois
        for b, (s, e) in enumerate(zip(offsets, offsets[1:])):
            entries += [(values[r], b, boxes[r]) for r in range(s, e)]
    images = max((len(_rows_per_image(r, "collect_fpn_proposals", "MultiLevelRois")) - 1 for r in rois), default=0)
    best = sorted(entries, key=lambda e: -e[0])[: a["post_nms_topN"]]
    best = sorted(best, key=lambda e: e[1])
    counts = [sum(1 for e in best if e[1] == b) for b in range(images)]
    dev = rois[0].device
    out_rois = torch.stack([e[2] for e in best]) if best else torch.zeros((0, 4), dtype=rois[0].dtype, device=dev)
    return {"FpnRois": [with_lod(out_rois, [offsets_of(counts)])]}


register(
    OpDef(
        "collect_fpn_proposals",
        ("MultiLevelRois", "MultiLevelScores"),
        ("FpnRois",),
        {"post_nms_topN": 100},
        lambda ins, a: out("FpnRois", (-1, 4), first(ins, "MultiLevelRois").dtype),
        _collect_fpn_proposals,
        host_inputs=frozenset({"MultiLevelRois", "MultiLevelScores"}),
    )
)
