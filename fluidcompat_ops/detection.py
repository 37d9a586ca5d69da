"""Detection-model ops of fluid 1.8 that sample a feature map at fractional positions or over
roi bins: ``deformable_conv`` (DCN v2: offsets and a modulation mask), ``deformable_conv_v1``
(offsets only), ``psroi_pool`` (R-FCN) and ``deformable_psroi_pooling`` (deformable R-FCN).

Their gradients are per-op VJPs (NOTE in registry.py GradDef): the sampling and pooling below are
differentiable in the map, the offsets (through the interpolation weights) and the mask.
"""

from __future__ import annotations

import math

from fluidcompat_ops.registry import GradDef, OpDef, register
from fluidcompat_ops.sequence import lengths_of, lod_of, offsets_of, with_lod
from fluidcompat_ops.shapes import first, out
from fluidcompat_ops.vision import _image_of_rows, _round_half_away

torch = None  # NOTE: [Lazy torch] in registry.py
F = None


# -- fluid.layers.detection: boxes, priors and anchors ---------------------------------------------
# Boxes are [x1, y1, x2, y2]. "Normalized" boxes have sides x2 - x1; unnormalized (pixel) boxes
# count both end pixels, x2 - x1 + 1, as fluid 1.8 did.
def _side_extra(normalized: bool) -> float:
    return 0.0 if normalized else 1.0


def _iou_matrix(a, b, normalized: bool):
    """[N, M] intersection over union of boxes ``a`` [N, 4] and ``b`` [M, 4]."""
    extra = _side_extra(normalized)
    area_a = (a[:, 2] - a[:, 0] + extra) * (a[:, 3] - a[:, 1] + extra)
    area_b = (b[:, 2] - b[:, 0] + extra) * (b[:, 3] - b[:, 1] + extra)
    w = (torch.minimum(a[:, None, 2], b[None, :, 2]) - torch.maximum(a[:, None, 0], b[None, :, 0]) + extra).clamp(min=0)
    h = (torch.minimum(a[:, None, 3], b[None, :, 3]) - torch.maximum(a[:, None, 1], b[None, :, 1]) + extra).clamp(min=0)
    inter = w * h
    return inter / (area_a[:, None] + area_b[None, :] - inter)


register(
    OpDef(
        "iou_similarity",
        ("X", "Y"),
        ("Out",),
        {"box_normalized": True},
        lambda ins, a: out("Out", (first(ins, "X").shape[0], first(ins, "Y").shape[0]), first(ins, "X").dtype),
        lambda ins, a: {"Out": [_iou_matrix(ins["X"][0], ins["Y"][0], a["box_normalized"])]},
    )
)


def _center_size(boxes, extra, centre_extra):
    """(centre x, centre y, width, height); the centre counts ``centre_extra`` in the sides, as fluid
    1.8 did (a prior's centre x1 + width / 2, an encoded target's the corners' midpoint)."""
    w = boxes[..., 2] - boxes[..., 0] + extra
    h = boxes[..., 3] - boxes[..., 1] + extra
    return boxes[..., 0] + (w - extra + centre_extra) / 2, boxes[..., 1] + (h - extra + centre_extra) / 2, w, h


def _box_coder(ins, a):
    """encode_center_size: each target box [N, 4] against each prior [M, 4] -> [N, M, 4] offsets
    ((dx, dy) / prior size, log of the size ratios), divided by the variance. decode_center_size:
    offsets [N, M, 4] back to boxes, the prior of column j (axis 0) or of row i (axis 1)."""
    prior, target = ins["PriorBox"][0], ins["TargetBox"][0]
    extra = _side_extra(a["box_normalized"])
    var = first(ins, "PriorBoxVar")
    if var is None and a["variance"]:
        var = torch.tensor(a["variance"], dtype=prior.dtype, device=prior.device).expand(prior.shape[0], 4)
    pcx, pcy, pw, ph = _center_size(prior, extra, extra)  # a prior's centre: x1 + width / 2
    if a["code_type"].lower() == "encode_center_size":  # a target's: its corners' midpoint
        tcx, tcy, tw, th = _center_size(target, extra, 0.0)
        coded = torch.stack(
            [
                (tcx[:, None] - pcx[None]) / pw[None],
                (tcy[:, None] - pcy[None]) / ph[None],
                torch.log(torch.abs(tw[:, None] / pw[None])),
                torch.log(torch.abs(th[:, None] / ph[None])),
            ],
            -1,
        )
        return {"OutputBox": [with_lod(coded / var[None] if var is not None else coded, lod_of(target))]}
    if target.dim() != 3:
        raise ValueError(f"box_coder: decode_center_size needs TargetBox [N, M, 4]. Received: {list(target.shape)}")
    at = (lambda v: v[None, :]) if a["axis"] == 0 else (lambda v: v[:, None])
    pcx, pcy, pw, ph = at(pcx), at(pcy), at(pw), at(ph)
    t = target if var is None else target * (var[None] if a["axis"] == 0 else var[:, None])
    cx, cy = t[..., 0] * pw + pcx, t[..., 1] * ph + pcy
    w, h = torch.exp(t[..., 2]) * pw, torch.exp(t[..., 3]) * ph
    decoded = torch.stack([cx - w / 2, cy - h / 2, cx + w / 2 - extra, cy + h / 2 - extra], -1)
    return {"OutputBox": [decoded]}


def _box_coder_infer(ins, a):
    prior, target = first(ins, "PriorBox"), first(ins, "TargetBox")
    encode = a["code_type"].lower() == "encode_center_size"
    if len(target.shape) != (2 if encode else 3):
        raise ValueError(
            f"box_coder: {a['code_type']} needs TargetBox '{getattr(target, 'name', '?')}' of rank "
            f"{2 if encode else 3} ({'[N, 4]' if encode else '[N, M, 4]'}). Received: shape {list(target.shape)}"
        )
    if encode:
        return out("OutputBox", (target.shape[0], prior.shape[0], 4), target.dtype)
    return out("OutputBox", target.shape, target.dtype)


register(
    OpDef(
        "box_coder",
        ("PriorBox", "PriorBoxVar", "TargetBox"),
        ("OutputBox",),
        {"code_type": "encode_center_size", "box_normalized": True, "axis": 0, "variance": []},
        _box_coder_infer,
        _box_coder,
        grad=GradDef(("PriorBox", "PriorBoxVar", "TargetBox"), out_grads=("OutputBox",), in_grads=("TargetBox",)),
    )
)


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


def _box_clip(ins, a):
    """Boxes kept inside their image: x in [0, w / scale - 1], y in [0, h / scale - 1] (rounded) with
    ImInfo's (h, w, scale) of each image; the image of a row from the LoD of Input, or the first
    dimension of a [N, M, 4] Input."""
    boxes, info = ins["Input"][0], ins["ImInfo"][0]
    h = torch.round(info[:, 0] / info[:, 2]) - 1
    w = torch.round(info[:, 1] / info[:, 2]) - 1
    lod = lod_of(boxes)
    if lod:
        counts = torch.tensor(lengths_of(lod[-1]), device=boxes.device)
        if len(counts) != info.shape[0]:
            raise ValueError(f"box_clip: the LoD of Input has {len(counts)} images but ImInfo {info.shape[0]}")
        image = torch.repeat_interleave(
            torch.arange(len(counts), device=boxes.device), counts, output_size=boxes.shape[0]
        )
        h, w = h[image], w[image]
    elif boxes.dim() == 3:
        h, w = h[:, None], w[:, None]
    else:
        raise ValueError("box_clip: Input must carry a LoD (the boxes of each image) or be [N, M, 4]")
    zero = torch.zeros_like(w)
    clipped = torch.stack(
        [
            torch.minimum(torch.maximum(boxes[..., 0], zero), w),
            torch.minimum(torch.maximum(boxes[..., 1], zero), h),
            torch.minimum(torch.maximum(boxes[..., 2], zero), w),
            torch.minimum(torch.maximum(boxes[..., 3], zero), h),
        ],
        -1,
    )
    return {"Output": [with_lod(clipped, lod)]}


register(
    OpDef(
        "box_clip",
        ("Input", "ImInfo"),
        ("Output",),
        {},
        lambda ins, a: out("Output", first(ins, "Input").shape, first(ins, "Input").dtype),
        _box_clip,
    )
)


def _yolo_box(ins, a):
    """YOLOv3 boxes and scores of each anchor at each cell, in the image's pixels; boxes whose
    objectness is under conf_thresh are zeros, as are their scores. As in fluid 1.8 (and its
    yolov3_loss, which trained the models this decodes) the grid's height scales both directions:
    the map is taken to be square."""
    x, size = ins["X"][0], ins["ImgSize"][0]
    n, _, gh, gw = x.shape
    anchors = a["anchors"]
    na, classes, scale = len(anchors) // 2, a["class_num"], a["scale_x_y"]
    p = x.reshape(n, na, 5 + classes, gh, gw)
    img_h = size[:, 0].to(x.dtype).reshape(n, 1, 1, 1)
    img_w = size[:, 1].to(x.dtype).reshape(n, 1, 1, 1)
    aw = torch.tensor(anchors[0::2], dtype=x.dtype, device=x.device).reshape(1, na, 1, 1)
    ah = torch.tensor(anchors[1::2], dtype=x.dtype, device=x.device).reshape(1, na, 1, 1)
    col = torch.arange(gw, dtype=x.dtype, device=x.device).reshape(1, 1, 1, gw)
    row = torch.arange(gh, dtype=x.dtype, device=x.device).reshape(1, 1, gh, 1)
    bias = -0.5 * (scale - 1.0)
    cx = (col + torch.sigmoid(p[:, :, 0]) * scale + bias) * img_w / gh
    cy = (row + torch.sigmoid(p[:, :, 1]) * scale + bias) * img_h / gh
    bw = torch.exp(p[:, :, 2]) * aw * img_w / (a["downsample_ratio"] * gh)
    bh = torch.exp(p[:, :, 3]) * ah * img_h / (a["downsample_ratio"] * gh)
    boxes = torch.stack([cx - bw / 2, cy - bh / 2, cx + bw / 2, cy + bh / 2], -1)
    if a["clip_bbox"]:  # as fluid 1.8: the top-left corner kept >= 0, the bottom-right <= the last pixel
        boxes = torch.stack(
            [
                boxes[..., 0].clamp(min=0.0),
                boxes[..., 1].clamp(min=0.0),
                torch.minimum(boxes[..., 2], img_w - 1),
                torch.minimum(boxes[..., 3], img_h - 1),
            ],
            -1,
        )
    obj = torch.sigmoid(p[:, :, 4])
    keep = (obj >= a["conf_thresh"]).unsqueeze(-1)
    scores = obj.unsqueeze(-1) * torch.sigmoid(p[:, :, 5:].permute(0, 1, 3, 4, 2))
    boxes = torch.where(keep, boxes, torch.zeros_like(boxes)).reshape(n, -1, 4)
    scores = torch.where(keep, scores, torch.zeros_like(scores)).reshape(n, -1, classes)
    return {"Boxes": [boxes], "Scores": [scores]}


def _yolo_box_infer(ins, a):
    x = first(ins, "X")
    na = len(a["anchors"]) // 2
    count = na * x.shape[2] * x.shape[3] if min(x.shape[2:]) >= 0 else -1
    return {"Boxes": [((x.shape[0], count, 4), x.dtype)], "Scores": [((x.shape[0], count, a["class_num"]), x.dtype)]}


register(
    OpDef(
        "yolo_box",
        ("X", "ImgSize"),
        ("Boxes", "Scores"),
        {
            "anchors": [],
            "class_num": 1,
            "conf_thresh": 0.01,
            "downsample_ratio": 32,
            "clip_bbox": True,
            "scale_x_y": 1.0,
        },
        _yolo_box_infer,
        _yolo_box,
    )
)


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


def _polygon_box_transform(ins, a):
    """EAST geometry to quad corners: even channels 4 * column - x, odd channels 4 * row - x."""
    x = ins["Input"][0]
    h, w = x.shape[2], x.shape[3]
    cols = torch.arange(w, dtype=x.dtype, device=x.device).reshape(1, 1, w).expand(1, h, w)
    rows = torch.arange(h, dtype=x.dtype, device=x.device).reshape(1, h, 1).expand(1, h, w)
    grid = torch.cat([cols, rows], 0)  # [2, H, W]
    grid = grid.repeat(x.shape[1] // 2 + 1, 1, 1)[: x.shape[1]]
    return {"Output": [4 * grid - x]}


register(
    OpDef(
        "polygon_box_transform",
        ("Input",),
        ("Output",),
        {},
        lambda ins, a: out("Output", first(ins, "Input").shape, first(ins, "Input").dtype),
        _polygon_box_transform,
    )
)


# -- non-maximum suppression and matching (host algorithms, as fluid 1.8 ran them on the CPU) -------
def _box_area(b, extra):
    if b[2] < b[0] or b[3] < b[1]:
        return 0.0
    return (b[2] - b[0] + extra) * (b[3] - b[1] + extra)


def jaccard(a, b, extra) -> float:
    """IoU of two [x1, y1, x2, y2] lists; 0 when they do not meet."""
    if b[0] > a[2] or b[2] < a[0] or b[1] > a[3] or b[3] < a[1]:
        return 0.0
    w = min(a[2], b[2]) - max(a[0], b[0]) + extra
    h = min(a[3], b[3]) - max(a[1], b[1]) + extra
    inter = w * h
    return inter / (_box_area(a, extra) + _box_area(b, extra) - inter)


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


# -- R-CNN proposals and FPN levels (host algorithms, as fluid 1.8 ran them on the CPU) -------------
_BBOX_CLIP = math.log(1000.0 / 16.0)  # the largest log size ratio a box delta may ask for


def _decode_pixel_boxes(anchors, deltas, variances, clip=_BBOX_CLIP):
    """Anchors [K, 4] (pixel boxes, both ends counted) moved by deltas [K, 4] times the variances:
    [K, 4] boxes; log size ratios capped at ``clip``."""
    w = anchors[:, 2] - anchors[:, 0] + 1
    h = anchors[:, 3] - anchors[:, 1] + 1
    cx, cy = anchors[:, 0] + 0.5 * w, anchors[:, 1] + 0.5 * h
    d = deltas * variances if variances is not None else deltas
    ncx, ncy = d[:, 0] * w + cx, d[:, 1] * h + cy
    nw = torch.exp(torch.clamp(d[:, 2], max=clip)) * w
    nh = torch.exp(torch.clamp(d[:, 3], max=clip)) * h
    return torch.stack([ncx - nw / 2, ncy - nh / 2, ncx + nw / 2 - 1, ncy + nh / 2 - 1], -1)


def _nms_sorted(boxes, threshold, eta, extra) -> list:
    """Greedy NMS over boxes already in score order: the indices kept."""
    values = boxes.tolist()
    return _greedy_nms(values, range(len(values)), threshold, eta, lambda p, q: jaccard(p, q, extra))


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


def _rows_per_image(rois, op, slot):
    lod = lod_of(rois)
    if not lod:
        raise ValueError(f"{op}: Input({slot}) must carry a LoD (the rois of each image)")
    return lod[-1]


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


def _box_decoder_and_assign(ins, a):
    """Each roi's box per class decoded from its deltas (pixel boxes, log size ratios capped at
    box_clip); OutputAssignBox: the box of the best-scored class but the background (class 0), or
    the roi itself where there is no other class (or, as in fluid, every other scores -1 or less)."""
    prior, var, target, score = ins["PriorBox"][0], ins["PriorBoxVar"][0], ins["TargetBox"][0], ins["BoxScore"][0]
    r, classes = score.shape
    deltas = target.reshape(r * classes, 4)
    anchors = prior.repeat_interleave(classes, 0)
    decoded = _decode_pixel_boxes(anchors, deltas, var.reshape(1, 4), clip=a["box_clip"]).reshape(r, classes * 4)
    fg = score[:, 1:]
    best = fg.argmax(1) + 1 if classes > 1 else torch.zeros(r, dtype=torch.long, device=score.device)
    has_fg = (fg > -1).any(1) if classes > 1 else torch.zeros(r, dtype=torch.bool, device=score.device)
    chosen = decoded.reshape(r, classes, 4)[torch.arange(r, device=score.device), best]
    assigned = torch.where(has_fg.unsqueeze(1), chosen, prior)
    lod = lod_of(prior) or lod_of(target)
    return {"DecodeBox": [with_lod(decoded, lod)], "OutputAssignBox": [with_lod(assigned, lod)]}


register(
    OpDef(
        "box_decoder_and_assign",
        ("PriorBox", "PriorBoxVar", "TargetBox", "BoxScore"),
        ("DecodeBox", "OutputAssignBox"),
        {"box_clip": _BBOX_CLIP},
        lambda ins, a: {
            "DecodeBox": [(first(ins, "TargetBox").shape, first(ins, "TargetBox").dtype)],
            "OutputAssignBox": [((first(ins, "PriorBox").shape[0], 4), first(ins, "PriorBox").dtype)],
        },
        _box_decoder_and_assign,
    )
)


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
