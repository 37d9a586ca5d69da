"""Detection ops on boxes (fluid.layers.detection): iou_similarity, box_coder, box_clip,
box_decoder_and_assign, yolo_box and polygon_box_transform; and the box helpers the other detection
modules share (``jaccard``, ``_iou_matrix``, ``_decode_pixel_boxes``, ``_rows_per_image``)."""

from __future__ import annotations

import math

from fluidcompat_ops.registry import GradDef, OpDef, register
from fluidcompat_ops.sequence import lengths_of, lod_of, with_lod
from fluidcompat_ops.shapes import first, out

torch = None  # NOTE: [Lazy torch] in registry.py
F = None


# -- iou_similarity --------------------------------------------------------------------------------
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


# -- box_coder -------------------------------------------------------------------------------------
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


# -- box_clip --------------------------------------------------------------------------------------
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


# -- yolo_box --------------------------------------------------------------------------------------
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


# -- polygon_box_transform -------------------------------------------------------------------------
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


# -- box areas and overlaps ------------------------------------------------------------------------
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


# -- deltas decoded to pixel boxes (generate_proposals, box_decoder_and_assign, retinanet) ---------
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


def _rows_per_image(rois, op, slot):
    lod = lod_of(rois)
    if not lod:
        raise ValueError(f"{op}: Input({slot}) must carry a LoD (the rois of each image)")
    return lod[-1]


# -- box_decoder_and_assign ------------------------------------------------------------------------
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
