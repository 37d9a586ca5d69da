"""``fluid.layers.detection``: losses and their training targets: ssd_loss with bipartite_match and
target_assign, yolov3_loss, sigmoid_focal_loss, the RPN / RetinaNet target assignment, and R-CNN's
proposal and mask labels."""

from __future__ import annotations

from fluidcompat.framework import Variable, layer
from fluidcompat.layer_helper import check_dtype, check_variable
from fluidcompat.layers._common import _append
from fluidcompat.layers.detection_boxes import _FLOATS, box_coder, iou_similarity

__all__ = [
    "bipartite_match",
    "target_assign",
    "ssd_loss",
    "sigmoid_focal_loss",
    "yolov3_loss",
    "rpn_target_assign",
    "retinanet_target_assign",
    "generate_proposal_labels",
    "generate_mask_labels",
]


@layer
def bipartite_match(dist_matrix, match_type=None, dist_threshold=None, name=None):
    """Match the columns of ``dist_matrix`` (a LoD tensor: rows of each instance) to its rows:
    greedy bipartite matching, then with ``per_prediction`` each unmatched column's best row at or
    over ``dist_threshold`` (0.5). Returns (indices [N, cols] int32, -1 unmatched; distances)."""
    check_variable(dist_matrix, "dist_matrix", "bipartite_match")
    attrs = {}
    if match_type is not None:
        if match_type not in ("bipartite", "per_prediction"):
            raise ValueError(
                f"bipartite_match: match_type must be bipartite or per_prediction. Received: {match_type!r}"
            )
        attrs["match_type"] = match_type
    if dist_threshold is not None:
        attrs["dist_threshold"] = dist_threshold
    return tuple(
        _append(
            "bipartite_match",
            {"DistMat": [dist_matrix]},
            ("ColToRowMatchIndices", "ColToRowMatchDist"),
            attrs,
            name,
            dtype={"ColToRowMatchIndices": "int32"},
        )
    )


@layer
def target_assign(input, matched_indices, negative_indices=None, mismatch_value=None, name=None):
    """Each instance's targets per column: the row of ``input`` (LoD [rows, P, K]) that
    ``matched_indices`` [N, cols] names, or ``mismatch_value``; weights 1 where matched and at the
    ``negative_indices`` (LoD, per instance). Returns (out [N, cols, K], out_weight [N, cols, 1])."""
    check_variable(input, "input", "target_assign")
    check_variable(matched_indices, "matched_indices", "target_assign")
    inputs = {"X": [input], "MatchIndices": [matched_indices]}
    if negative_indices is not None:
        inputs["NegIndices"] = [negative_indices]
    attrs = {"mismatch_value": mismatch_value} if mismatch_value is not None else {}
    return tuple(_append("target_assign", inputs, ("Out", "OutWeight"), attrs, name, dtype={"OutWeight": "float32"}))


@layer
def ssd_loss(
    location,
    confidence,
    gt_box,
    gt_label,
    prior_box,
    prior_box_var=None,
    background_label=0,
    overlap_threshold=0.5,
    neg_pos_ratio=3.0,
    neg_overlap=0.5,
    loc_loss_weight=1.0,
    conf_loss_weight=1.0,
    match_type="per_prediction",
    mining_type="max_negative",
    normalize=True,
    sample_size=None,
):
    """SSD's multibox loss [N, 1]: priors matched to the ground truth (LoD ``gt_box``, ``gt_label``)
    by IoU, hard negatives mined by their confidence loss (neg_pos_ratio per positive), then the
    softmax loss of the positives and negatives plus the smooth-L1 loss of the positives' encoded
    boxes, divided by the number of positives with ``normalize``."""
    from fluidcompat.layers import loss, losses, nn, tensor

    if mining_type == "hard_example":
        raise ValueError("Only support mining_type == max_negative now.")
    for value, what in ((location, "location"), (confidence, "confidence"), (gt_box, "gt_box"), (gt_label, "gt_label")):
        check_variable(value, what, "ssd_loss")
    conf_shape = tensor.shape(confidence)

    def to_2d(v):
        return tensor.flatten(v, axis=2)

    iou = iou_similarity(gt_box, prior_box)
    matched_indices, matched_dist = bipartite_match(iou, match_type, overlap_threshold)
    gt_label = tensor.reshape(gt_label, (len(gt_label.shape) - 1) * (0,) + (-1, 1))
    gt_label.stop_gradient = True
    target_label, _ = target_assign(gt_label, matched_indices, mismatch_value=background_label)
    confidence = to_2d(confidence)
    target_label = to_2d(tensor.cast(target_label, "int64"))
    target_label.stop_gradient = True
    conf_loss = loss.softmax_with_cross_entropy(confidence, target_label)
    actual_shape = tensor.slice(conf_shape, axes=[0], starts=[0], ends=[2])
    actual_shape.stop_gradient = True
    conf_loss = tensor.reshape(conf_loss, (-1, 0), actual_shape=actual_shape)
    conf_loss.stop_gradient = True
    neg_indices, updated_matched_indices = _append(
        "mine_hard_examples",
        {"ClsLoss": [conf_loss], "MatchIndices": [matched_indices], "MatchDist": [matched_dist]},
        ("NegIndices", "UpdatedMatchIndices"),
        {
            "neg_pos_ratio": neg_pos_ratio,
            "neg_dist_threshold": neg_overlap,
            "mining_type": mining_type,
            "sample_size": sample_size or 0,
        },
        helper_name="ssd_loss",
        dtype={"NegIndices": "int32", "UpdatedMatchIndices": matched_indices.dtype},
    )
    encoded = box_coder(prior_box, prior_box_var, gt_box, code_type="encode_center_size")
    target_bbox, target_loc_weight = target_assign(encoded, updated_matched_indices, mismatch_value=background_label)
    target_label, target_conf_weight = target_assign(
        gt_label, updated_matched_indices, negative_indices=neg_indices, mismatch_value=background_label
    )
    target_label = tensor.cast(to_2d(target_label), "int64")
    conf_loss = loss.softmax_with_cross_entropy(confidence, target_label)
    target_conf_weight = to_2d(target_conf_weight)
    conf_loss = conf_loss * target_conf_weight
    target_label.stop_gradient = target_conf_weight.stop_gradient = True
    loc_loss = losses.smooth_l1(to_2d(location), to_2d(target_bbox))
    target_loc_weight = to_2d(target_loc_weight)
    loc_loss = loc_loss * target_loc_weight
    target_bbox.stop_gradient = target_loc_weight.stop_gradient = True
    total = conf_loss_weight * conf_loss + loc_loss_weight * loc_loss
    total = tensor.reshape(total, (-1, 0), actual_shape=actual_shape)
    total = nn.reduce_sum(total, dim=1, keep_dim=True)
    if normalize:
        total = total / nn.reduce_sum(target_loc_weight)
    return total


@layer
def sigmoid_focal_loss(x, label, fg_num, gamma=2.0, alpha=0.25):
    """Focal loss [N, C] of each class's sigmoid: ``label`` [N, 1] int32 (1..C; 0 background, -1
    ignored), ``fg_num`` [1] int32 the number of foreground rows."""
    check_variable(x, "x", "sigmoid_focal_loss")
    check_dtype(x.dtype, "x", ["float32", "float64"], "sigmoid_focal_loss")
    check_variable(label, "label", "sigmoid_focal_loss")
    check_dtype(label.dtype, "label", ["int32"], "sigmoid_focal_loss")
    check_variable(fg_num, "fg_num", "sigmoid_focal_loss")
    check_dtype(fg_num.dtype, "fg_num", ["int32"], "sigmoid_focal_loss")
    inputs = {"X": [x], "Label": [label], "FgNum": [fg_num]}
    return _append("sigmoid_focal_loss", inputs, ("Out",), {"gamma": gamma, "alpha": alpha})[0]


@layer
def yolov3_loss(
    x,
    gt_box,
    gt_label,
    anchors,
    anchor_mask,
    class_num,
    ignore_thresh,
    downsample_ratio,
    gt_score=None,
    use_label_smooth=True,
    name=None,
    scale_x_y=1.0,
):
    """YOLOv3's loss [N] for one head ``x`` [N, len(anchor_mask) * (5 + class_num), H, W]: ground
    truth ``gt_box`` [N, B, 4] (centre x, y, w, h relative to the input image; zero size: none),
    ``gt_label`` [N, B] int32, ``gt_score`` [N, B] (default 1): box offsets, classes and objectness
    of the cells and anchors the boxes fall to; objectness 0 elsewhere except where a prediction
    already overlaps a box by more than ``ignore_thresh``."""
    for value, what in ((x, "x"), (gt_box, "gt_box"), (gt_label, "gt_label")):
        check_variable(value, what, "yolov3_loss")
    if gt_score is not None and not isinstance(gt_score, Variable):
        raise TypeError("Input gt_score of yolov3_loss must be Variable")
    if not isinstance(anchors, (list, tuple)):
        raise TypeError("Attr anchors of yolov3_loss must be list or tuple")
    if not isinstance(anchor_mask, (list, tuple)):
        raise TypeError("Attr anchor_mask of yolov3_loss must be list or tuple")
    if not isinstance(class_num, int):
        raise TypeError("Attr class_num of yolov3_loss must be an integer")
    if not isinstance(ignore_thresh, float):
        raise TypeError("Attr ignore_thresh of yolov3_loss must be a float number")
    if not isinstance(use_label_smooth, bool):
        raise TypeError("Attr use_label_smooth of yolov3_loss must be a bool value")
    if x.shape[1] >= 0 and x.shape[1] != len(anchor_mask) * (5 + class_num):
        raise ValueError(
            f"yolov3_loss: X must have len(anchor_mask) * (5 + class_num) = {len(anchor_mask)} * {5 + class_num} "
            f"channels. Received: X.shape={x.shape}"
        )
    if any(not 0 <= k < len(anchors) // 2 for k in anchor_mask):
        raise ValueError(
            f"yolov3_loss: anchor_mask {list(anchor_mask)} names anchors outside the {len(anchors) // 2} given"
        )
    inputs = {"X": [x], "GTBox": [gt_box], "GTLabel": [gt_label]}
    if gt_score is not None:
        inputs["GTScore"] = [gt_score]
    attrs = {
        "anchors": [int(v) for v in anchors],
        "anchor_mask": [int(v) for v in anchor_mask],
        "class_num": class_num,
        "ignore_thresh": ignore_thresh,
        "downsample_ratio": downsample_ratio,
        "use_label_smooth": use_label_smooth,
        "scale_x_y": scale_x_y,
    }
    outs = _append("yolov3_loss", inputs, ("Loss", "ObjectnessMask", "GTMatchMask"), attrs, name,
                   dtype={"GTMatchMask": "int32"})  # fmt: skip
    return outs[0]


def _gather_targets(op_type, cls_logits, bbox_pred, classes, inputs, attrs, extra_outs=()):
    from fluidcompat.layers import tensor

    slots = ("LocationIndex", "ScoreIndex", "TargetLabel", "TargetBBox", "BBoxInsideWeight") + extra_outs
    ints = {"LocationIndex": "int32", "ScoreIndex": "int32", "TargetLabel": "int32", "ForegroundNumber": "int32"}
    outs = _append(op_type, inputs, slots, attrs, dtype=ints, stop_gradient=True)
    loc_index, score_index = outs[:2]
    cls = tensor.gather(tensor.reshape(cls_logits, (-1, classes)), score_index)
    bbox = tensor.gather(tensor.reshape(bbox_pred, (-1, 4)), loc_index)
    return (cls, bbox) + tuple(outs[2:])


def _check_targets(op, values):
    for value, what, dtypes in values:
        check_variable(value, what, op)
        check_dtype(value.dtype, what, dtypes, op)


@layer
def rpn_target_assign(
    bbox_pred,
    cls_logits,
    anchor_box,
    anchor_var,
    gt_boxes,
    is_crowd,
    im_info,
    rpn_batch_size_per_im=256,
    rpn_straddle_thresh=0.0,
    rpn_fg_fraction=0.5,
    rpn_positive_overlap=0.7,
    rpn_negative_overlap=0.3,
    use_random=True,
):
    """RPN training targets: anchors inside each image labelled foreground (overlap >= positive, or
    a box's best anchor) or background (< negative), sampled to ``rpn_batch_size_per_im`` with
    ``rpn_fg_fraction`` foreground (randomly with ``use_random``, else the first ones). Returns
    (the sampled anchors' logits, their box predictions, labels, box targets, box weights)."""
    _check_targets("rpn_target_assign", [
        (bbox_pred, "bbox_pred", _FLOATS), (cls_logits, "cls_logits", _FLOATS), (anchor_box, "anchor_box", _FLOATS),
        (anchor_var, "anchor_var", _FLOATS), (gt_boxes, "gt_boxes", _FLOATS), (is_crowd, "is_crowd", ["int32"]),
        (im_info, "im_info", _FLOATS)])  # fmt: skip
    inputs = {"Anchor": [anchor_box], "GtBoxes": [gt_boxes], "IsCrowd": [is_crowd], "ImInfo": [im_info]}
    attrs = {
        "rpn_batch_size_per_im": rpn_batch_size_per_im,
        "rpn_straddle_thresh": rpn_straddle_thresh,
        "rpn_positive_overlap": rpn_positive_overlap,
        "rpn_negative_overlap": rpn_negative_overlap,
        "rpn_fg_fraction": rpn_fg_fraction,
        "use_random": use_random,
    }
    return _gather_targets("rpn_target_assign", cls_logits, bbox_pred, 1, inputs, attrs)


@layer
def retinanet_target_assign(
    bbox_pred,
    cls_logits,
    anchor_box,
    anchor_var,
    gt_boxes,
    gt_labels,
    is_crowd,
    im_info,
    num_classes=1,
    positive_overlap=0.5,
    negative_overlap=0.4,
):
    """RetinaNet training targets: every anchor labelled with its box's class (overlap >=
    ``positive_overlap``, or a box's best anchor) or background (< ``negative_overlap``), no
    sampling. Returns (their logits [K, num_classes], box predictions, labels, box targets, box
    weights, the number of foreground anchors per image plus one)."""
    _check_targets("retinanet_target_assign", [
        (bbox_pred, "bbox_pred", _FLOATS), (cls_logits, "cls_logits", _FLOATS), (anchor_box, "anchor_box", _FLOATS),
        (anchor_var, "anchor_var", _FLOATS), (gt_boxes, "gt_boxes", _FLOATS), (gt_labels, "gt_labels", ["int32"]),
        (is_crowd, "is_crowd", ["int32"]), (im_info, "im_info", _FLOATS)])  # fmt: skip
    inputs = {
        "Anchor": [anchor_box],
        "GtBoxes": [gt_boxes],
        "GtLabels": [gt_labels],
        "IsCrowd": [is_crowd],
        "ImInfo": [im_info],
    }
    attrs = {"positive_overlap": positive_overlap, "negative_overlap": negative_overlap}
    return _gather_targets(
        "retinanet_target_assign", cls_logits, bbox_pred, num_classes, inputs, attrs, ("ForegroundNumber",)
    )


@layer
def generate_proposal_labels(
    rpn_rois,
    gt_classes,
    is_crowd,
    gt_boxes,
    im_info,
    batch_size_per_im=256,
    fg_fraction=0.25,
    fg_thresh=0.25,
    bg_thresh_hi=0.5,
    bg_thresh_lo=0.0,
    bbox_reg_weights=[0.1, 0.1, 0.2, 0.2],  # noqa: B006  (fluid's signature)
    class_nums=None,
    use_random=True,
    is_cls_agnostic=False,
    is_cascade_rcnn=False,
):
    """Faster R-CNN's second-stage training rois and targets from the RPN rois (LoD per image) and
    the ground truth: returns (rois, labels int32, box targets [R, 4 * class_nums], inside weights,
    outside weights), LoD per image."""
    for value, what, dtypes in ((rpn_rois, "rpn_rois", _FLOATS), (gt_classes, "gt_classes", ["int32"]),
                                (is_crowd, "is_crowd", ["int32"]), (gt_boxes, "gt_boxes", _FLOATS),
                                (im_info, "im_info", _FLOATS)):  # fmt: skip
        check_variable(value, what, "generate_proposal_labels")
        check_dtype(value.dtype, what, dtypes, "generate_proposal_labels")
    if class_nums is None:
        raise ValueError("generate_proposal_labels: give class_nums, the number of classes with the background")
    inputs = {
        "RpnRois": [rpn_rois],
        "GtClasses": [gt_classes],
        "IsCrowd": [is_crowd],
        "GtBoxes": [gt_boxes],
        "ImInfo": [im_info],
    }
    attrs = {
        "batch_size_per_im": batch_size_per_im,
        "fg_fraction": fg_fraction,
        "fg_thresh": fg_thresh,
        "bg_thresh_hi": bg_thresh_hi,
        "bg_thresh_lo": bg_thresh_lo,
        "bbox_reg_weights": [float(w) for w in bbox_reg_weights],
        "class_nums": class_nums,
        "use_random": use_random,
        "is_cls_agnostic": is_cls_agnostic,
        "is_cascade_rcnn": is_cascade_rcnn,
    }
    slots = ("Rois", "LabelsInt32", "BboxTargets", "BboxInsideWeights", "BboxOutsideWeights")
    return tuple(
        _append("generate_proposal_labels", inputs, slots, attrs, dtype={"LabelsInt32": "int32"}, stop_gradient=True)
    )


@layer
def generate_mask_labels(im_info, gt_classes, is_crowd, gt_segms, rois, labels_int32, num_classes, resolution):
    """Mask R-CNN's mask targets from ``generate_proposal_labels``' rois and labels and the
    ground-truth polygons ``gt_segms`` (3 LoD levels: images, boxes, polygons of x, y points):
    returns (the rois with a mask, their index in their image's rois, targets [K, num_classes *
    resolution^2] int32: the rasterized polygons in the roi's class slot, -1 elsewhere)."""
    named = {"im_info": im_info, "gt_classes": gt_classes, "is_crowd": is_crowd, "gt_segms": gt_segms, "rois": rois}
    for what, value in dict(named, labels_int32=labels_int32).items():
        check_variable(value, what, "generate_mask_labels")
    inputs = {"ImInfo": [im_info], "GtClasses": [gt_classes], "IsCrowd": [is_crowd], "GtSegms": [gt_segms],
              "Rois": [rois], "LabelsInt32": [labels_int32]}  # fmt: skip
    return tuple(
        _append(
            "generate_mask_labels",
            inputs,
            ("MaskRois", "RoiHasMaskInt32", "MaskInt32"),
            {"num_classes": num_classes, "resolution": resolution},
            None,
            dtype={"RoiHasMaskInt32": "int32", "MaskInt32": "int32"},
            stop_gradient=True,
        )  # fmt: skip
    )
