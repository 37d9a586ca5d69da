"""``fluid.layers.detection``: boxes (ops in fluidcompat_ops/detection_boxes.py): IoU, box coding, clipping,
box_decoder_and_assign, polygon_box_transform, YOLOv3's box decoding, roi_perspective_transform."""

from __future__ import annotations

from fluidcompat.framework import Variable, layer
from fluidcompat.layer_helper import check_dtype, check_variable
from fluidcompat.layers._common import _append

__all__ = [
    "iou_similarity",
    "box_coder",
    "box_clip",
    "box_decoder_and_assign",
    "polygon_box_transform",
    "yolo_box",
    "roi_perspective_transform",
]


_FLOATS = ["float32", "float64"]


@layer
def iou_similarity(x, y, box_normalized=True, name=None):
    """[N, M] intersection over union of boxes ``x`` [N, 4] and ``y`` [M, 4] (x1, y1, x2, y2);
    unnormalized (pixel) boxes count both end pixels."""
    check_variable(x, "x", "iou_similarity")
    check_variable(y, "y", "iou_similarity")
    return _append("iou_similarity", {"X": [x], "Y": [y]}, ("Out",), {"box_normalized": box_normalized}, name)[0]


@layer
def box_coder(
    prior_box, prior_box_var, target_box, code_type="encode_center_size", box_normalized=True, name=None, axis=0
):
    """Encode target boxes as offsets from the priors (``encode_center_size``: [N, M, 4]) or decode
    offsets [N, M, 4] back into boxes (``decode_center_size``; the prior of column j with axis 0, of
    row i with axis 1). ``prior_box_var``: a [M, 4] variable or a list of 4 variances."""
    check_variable(prior_box, "prior_box", "box_coder")
    check_variable(target_box, "target_box", "box_coder")
    if code_type not in ("encode_center_size", "decode_center_size"):
        raise ValueError(
            f"box_coder: code_type must be encode_center_size or decode_center_size. Received: {code_type!r}"
        )
    inputs = {"PriorBox": [prior_box], "TargetBox": [target_box]}
    attrs = {"code_type": code_type, "box_normalized": box_normalized, "axis": axis}
    if isinstance(prior_box_var, Variable):
        inputs["PriorBoxVar"] = [prior_box_var]
    elif isinstance(prior_box_var, (list, tuple)) and len(prior_box_var) == 4:
        attrs["variance"] = [float(v) for v in prior_box_var]
    else:
        raise TypeError(
            f"Input variance of box_coder must be Variable or a list of 4 numbers. Received: {prior_box_var!r}"
        )
    return _append("box_coder", inputs, ("OutputBox",), attrs, name)[0]


@layer
def box_clip(input, im_info, name=None):
    """Boxes clipped to their image, whose (height, width, scale) ``im_info`` gives: x to [0, width /
    scale - 1], y to [0, height / scale - 1]. ``input``: LoD boxes [rows, 4] (the boxes of each
    image), or [N, M, 4]."""
    check_variable(input, "input", "box_clip")
    check_variable(im_info, "im_info", "box_clip")
    return _append("box_clip", {"Input": [input], "ImInfo": [im_info]}, ("Output",), {}, name)[0]


@layer
def box_decoder_and_assign(prior_box, prior_box_var, target_box, box_score, box_clip, name=None):
    """Cascade R-CNN's decoding: each roi's box per class from ``target_box`` [R, 4C] deltas
    (variances ``prior_box_var`` [4]; log size ratios capped at ``box_clip``) and the box of its
    best non-background class by ``box_score`` [R, C]. Returns (decoded [R, 4C], assigned [R, 4])."""
    for value, what in ((prior_box, "prior_box"), (prior_box_var, "prior_box_var"), (target_box, "target_box"),
                        (box_score, "box_score")):  # fmt: skip
        check_variable(value, what, "box_decoder_and_assign")
    inputs = {
        "PriorBox": [prior_box],
        "PriorBoxVar": [prior_box_var],
        "TargetBox": [target_box],
        "BoxScore": [box_score],
    }
    return tuple(
        _append("box_decoder_and_assign", inputs, ("DecodeBox", "OutputAssignBox"), {"box_clip": box_clip}, name)
    )


@layer
def polygon_box_transform(input, name=None):
    """EAST's geometry map [N, 2k, H, W] to quad corners: 4 * column - x on even channels, 4 * row - x
    on odd ones."""
    check_variable(input, "input", "polygon_box_transform")
    return _append("polygon_box_transform", {"Input": [input]}, ("Output",), {}, name)[0]


@layer
def yolo_box(x, img_size, anchors, class_num, conf_thresh, downsample_ratio, clip_bbox=True, name=None, scale_x_y=1.0):
    """YOLOv3 detections of one head: (boxes [N, anchors * H * W, 4] in the pixels of each image,
    whose (height, width) ``img_size`` gives, scores [N, anchors * H * W, class_num]); entries under
    ``conf_thresh`` objectness are zeros."""
    check_variable(x, "x", "yolo_box")
    check_variable(img_size, "img_size", "yolo_box")
    if not isinstance(anchors, (list, tuple)):
        raise TypeError("Attr anchors of yolo_box must be list or tuple")
    if not isinstance(class_num, int):
        raise TypeError("Attr class_num of yolo_box must be an integer")
    if not isinstance(conf_thresh, float):
        raise TypeError("Attr ignore_thresh of yolo_box must be a float number")
    if len(anchors) % 2 or (x.shape[1] >= 0 and x.shape[1] != len(anchors) // 2 * (5 + class_num)):
        raise ValueError(
            f"yolo_box: X must have (number of anchors) * (5 + class_num) = {len(anchors) // 2} * {5 + class_num} "
            f"channels, the anchors given as (width, height) pairs. Received: X.shape={x.shape}, "
            f"anchors={list(anchors)}"
        )
    attrs = {
        "anchors": [int(v) for v in anchors],
        "class_num": class_num,
        "conf_thresh": conf_thresh,
        "downsample_ratio": downsample_ratio,
        "clip_bbox": clip_bbox,
        "scale_x_y": scale_x_y,
    }
    return tuple(_append("yolo_box", {"X": [x], "ImgSize": [img_size]}, ("Boxes", "Scores"), attrs, name))


@layer
def roi_perspective_transform(input, rois, transformed_height, transformed_width, spatial_scale=1.0, name=None):
    """Each quadrilateral roi (LoD rows of 8 coordinates: the corners clockwise from the top-left)
    warped to ``transformed_height`` x ``transformed_width`` of ``input``'s channels, as text
    recognizers read a slanted line. Returns (out [R, C, h, w], mask [R, 1, h, w] int32: 1 where
    the point lies in the roi and on the map, the transform matrices [R, 9])."""
    check_variable(input, "input", "roi_perspective_transform")
    check_dtype(input.dtype, "input", _FLOATS, "roi_perspective_transform")
    check_variable(rois, "rois", "roi_perspective_transform")
    check_dtype(rois.dtype, "rois", _FLOATS, "roi_perspective_transform")
    for value, what in ((transformed_height, "transformed_height"), (transformed_width, "transformed_width")):
        if not isinstance(value, int):
            raise TypeError(f"The type of '{what}' in roi_perspective_transform must be int. Received: {value!r}")
    attrs = {
        "transformed_height": transformed_height,
        "transformed_width": transformed_width,
        "spatial_scale": float(spatial_scale),
    }
    return tuple(
        _append(
            "roi_perspective_transform",
            {"X": [input], "ROIs": [rois]},
            ("Out", "Mask", "TransformMatrix"),
            attrs,
            name,
            dtype={"Mask": "int32"},
        )  # fmt: skip
    )
