"""``fluid.layers.detection``: priors and anchors, box coding, clipping, IoU, YOLOv3 boxes, focal
loss, NMS and SSD's matching and target assignment (ops in fluidcompat_ops/detection.py)."""

from __future__ import annotations

from fluidcompat.framework import Variable, layer
from fluidcompat.layer_helper import LayerHelper, check_dtype, check_variable

__all__ = [
    "prior_box",
    "density_prior_box",
    "bipartite_match",
    "target_assign",
    "detection_output",
    "sigmoid_focal_loss",
    "anchor_generator",
    "iou_similarity",
    "box_coder",
    "polygon_box_transform",
    "yolo_box",
    "box_clip",
    "multiclass_nms",
    "ssd_loss",
    "multi_box_head",
    "yolov3_loss",
    "generate_proposals",
    "distribute_fpn_proposals",
    "collect_fpn_proposals",
    "box_decoder_and_assign",
    "matrix_nms",
    "rpn_target_assign",
    "retinanet_target_assign",
    "retinanet_detection_output",
    "generate_proposal_labels",
    "roi_perspective_transform",
    "locality_aware_nms",
    "generate_mask_labels",
]

_VARIANCE = [0.1, 0.1, 0.2, 0.2]


def _as_list(v):
    return list(v) if isinstance(v, (list, tuple)) else [v]


def _append(op_type, inputs, outputs, attrs, name=None, dtype=None, stop_gradient=False, helper_name=None):
    """Append ``op_type`` with one new variable per output slot (dtype: ``dtype`` or the first
    input's, per slot when a dict; names from ``helper_name`` or the op type); returns them in
    ``outputs``' order."""
    helper = LayerHelper(helper_name or op_type, name=name)
    first_in = next(v[0] for v in inputs.values() if v)
    made = []
    for slot in outputs:
        d = dtype.get(slot, first_in.dtype) if isinstance(dtype, dict) else (dtype or first_in.dtype)
        v = helper.create_variable_for_type_inference(dtype=d)
        v.stop_gradient = stop_gradient
        made.append(v)
    helper.append_op(type=op_type, inputs=inputs, outputs={s: [v] for s, v in zip(outputs, made)}, attrs=attrs)
    return made


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


def _steps(steps):
    if not isinstance(steps, (list, tuple)) or len(steps) != 2:
        raise ValueError(
            f"steps should be a list or tuple with length 2, (step_width, step_height). Received: {steps!r}"
        )
    return float(steps[0]), float(steps[1])


@layer
def prior_box(
    input,
    image,
    min_sizes,
    max_sizes=None,
    aspect_ratios=[1.0],  # noqa: B006  (fluid's signature)
    variance=_VARIANCE,
    flip=False,
    clip=False,
    steps=[0.0, 0.0],  # noqa: B006
    offset=0.5,
    name=None,
    min_max_aspect_ratios_order=False,
):
    """SSD prior boxes of each cell of ``input`` (a feature map of ``image``): returns (boxes,
    variances), each [H, W, priors per cell, 4] in image-relative coordinates."""
    check_variable(input, "input", "prior_box")
    check_variable(image, "image", "prior_box")
    step_w, step_h = _steps(steps)
    attrs = {
        "min_sizes": [float(v) for v in _as_list(min_sizes)],
        "aspect_ratios": [float(v) for v in _as_list(aspect_ratios)],
        "variances": [float(v) for v in variance],
        "flip": flip,
        "clip": clip,
        "step_w": step_w,
        "step_h": step_h,
        "offset": offset,
        "min_max_aspect_ratios_order": min_max_aspect_ratios_order,
    }
    if max_sizes is not None and _as_list(max_sizes):
        attrs["max_sizes"] = [float(v) for v in _as_list(max_sizes)]
        if len(attrs["max_sizes"]) != len(attrs["min_sizes"]):
            raise ValueError(
                f"prior_box: max_sizes must have as many values as min_sizes. Received: {attrs['max_sizes']} and "
                f"{attrs['min_sizes']}"
            )
    boxes, var = _append("prior_box", {"Input": [input], "Image": [image]}, ("Boxes", "Variances"), attrs, name)
    boxes.stop_gradient = var.stop_gradient = True
    return boxes, var


@layer
def density_prior_box(
    input,
    image,
    densities=None,
    fixed_sizes=None,
    fixed_ratios=None,
    variance=_VARIANCE,
    clip=False,
    steps=[0.0, 0.0],  # noqa: B006  (fluid's signature)
    offset=0.5,
    flatten_to_2d=False,
    name=None,
):
    """Density priors: per cell, each fixed size at each fixed ratio repeated on a density x density
    grid over the cell. Returns (boxes, variances): [H, W, priors per cell, 4], or [H * W * priors, 4]
    with ``flatten_to_2d``."""
    check_variable(input, "input", "density_prior_box")
    check_variable(image, "image", "density_prior_box")
    for value, what in ((densities, "densities"), (fixed_sizes, "fixed_sizes"), (fixed_ratios, "fixed_ratios")):
        if not isinstance(value, (list, tuple)):
            raise TypeError(f"{what} should be a list or a tuple. Received: {value!r}")
    if len(densities) != len(fixed_sizes):
        raise ValueError(
            f"density_prior_box: densities and fixed_sizes must have as many values. Received: {list(densities)} and "
            f"{list(fixed_sizes)}"
        )
    step_w, step_h = _steps(steps)
    attrs = {
        "variances": [float(v) for v in variance],
        "clip": clip,
        "step_w": step_w,
        "step_h": step_h,
        "offset": offset,
        "densities": [int(v) for v in densities],
        "fixed_sizes": [float(v) for v in fixed_sizes],
        "fixed_ratios": [float(v) for v in fixed_ratios],
        "flatten_to_2d": flatten_to_2d,
    }
    boxes, var = _append("density_prior_box", {"Input": [input], "Image": [image]}, ("Boxes", "Variances"), attrs, name)
    boxes.stop_gradient = var.stop_gradient = True
    return boxes, var


@layer
def anchor_generator(
    input, anchor_sizes=None, aspect_ratios=None, variance=_VARIANCE, stride=None, offset=0.5, name=None
):
    """Faster R-CNN anchors of each cell of ``input``: for each aspect ratio, each anchor size.
    Returns (anchors, variances), each [H, W, anchors per cell, 4] in the image's pixels."""
    check_variable(input, "input", "anchor_generator")
    if not isinstance(stride, (list, tuple)) or len(stride) != 2:
        raise ValueError(
            f"stride should be a list or tuple ,with length two, (stride_width, stride_height). Received: {stride!r}"
        )
    attrs = {
        "anchor_sizes": [float(v) for v in _as_list(anchor_sizes)],
        "aspect_ratios": [float(v) for v in _as_list(aspect_ratios)],
        "variances": [float(v) for v in variance],
        "stride": [float(v) for v in stride],
        "offset": offset,
    }
    anchors, var = _append("anchor_generator", {"Input": [input]}, ("Anchors", "Variances"), attrs, name)
    anchors.stop_gradient = var.stop_gradient = True
    return anchors, var


@layer
def box_clip(input, im_info, name=None):
    """Boxes clipped to their image, whose (height, width, scale) ``im_info`` gives: x to [0, width /
    scale - 1], y to [0, height / scale - 1]. ``input``: LoD boxes [rows, 4] (the boxes of each
    image), or [N, M, 4]."""
    check_variable(input, "input", "box_clip")
    check_variable(im_info, "im_info", "box_clip")
    return _append("box_clip", {"Input": [input], "ImInfo": [im_info]}, ("Output",), {}, name)[0]


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
def polygon_box_transform(input, name=None):
    """EAST's geometry map [N, 2k, H, W] to quad corners: 4 * column - x on even channels, 4 * row - x
    on odd ones."""
    check_variable(input, "input", "polygon_box_transform")
    return _append("polygon_box_transform", {"Input": [input]}, ("Output",), {}, name)[0]


def _nms(op_type, bboxes, scores, name, **attrs):
    """Append multiclass_nms (or multiclass_nms2, with Index) with ``attrs``: background_label,
    score_threshold, nms_top_k, nms_threshold, nms_eta, keep_top_k and normalized."""
    check_variable(bboxes, "bboxes", op_type)
    check_variable(scores, "scores", op_type)
    outs = ("Out", "Index") if op_type == "multiclass_nms2" else ("Out",)  # or locality_aware_nms
    return _append(op_type, {"BBoxes": [bboxes], "Scores": [scores]}, outs, attrs, name,
                   dtype={"Index": "int32"}, stop_gradient=True)  # fmt: skip


@layer
def multiclass_nms(
    bboxes,
    scores,
    score_threshold,
    nms_top_k,
    keep_top_k,
    nms_threshold=0.3,
    normalized=True,
    nms_eta=1.0,
    background_label=0,
    name=None,
):
    """Per image, NMS within each class but the background, then the ``keep_top_k`` best: LoD rows
    [label, score, x1, y1, x2, y2] (each image's rows; with none in any image one row [-1]).
    ``bboxes`` [N, M, 4], ``scores`` [N, C, M]; or R-CNN's LoD form, ``bboxes`` [R, C, 4] (a box per
    class) with ``scores`` [R, C], the LoD giving each image's rows."""
    return _nms("multiclass_nms", bboxes, scores, name, background_label=background_label,
                score_threshold=score_threshold, nms_top_k=nms_top_k, nms_threshold=nms_threshold, nms_eta=nms_eta,
                keep_top_k=keep_top_k, normalized=normalized)[0]  # fmt: skip


@layer
def detection_output(
    loc,
    scores,
    prior_box,
    prior_box_var,
    background_label=0,
    nms_threshold=0.3,
    nms_top_k=400,
    keep_top_k=200,
    score_threshold=0.01,
    nms_eta=1.0,
    return_index=False,
):
    """SSD's detections: ``loc`` [N, M, 4] decoded against the priors, ``scores`` [N, M, C] through
    softmax, then multiclass NMS. With ``return_index`` also each detection's box index in the
    flattened [N * M] boxes."""
    from fluidcompat.layers import nn, tensor

    decoded = box_coder(prior_box, prior_box_var, loc, code_type="decode_center_size")
    probs = tensor.transpose(nn.softmax(scores), perm=[0, 2, 1])
    probs.stop_gradient = True
    outs = _nms("multiclass_nms2" if return_index else "multiclass_nms", decoded, probs, None,
                background_label=background_label, score_threshold=score_threshold, nms_top_k=nms_top_k,
                nms_threshold=nms_threshold, nms_eta=nms_eta, keep_top_k=keep_top_k, normalized=True)  # fmt: skip
    return tuple(outs) if return_index else outs[0]


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
    from fluidcompat.layers import extra, loss, nn, tensor

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
    loc_loss = extra.smooth_l1(to_2d(location), to_2d(target_bbox))
    target_loc_weight = to_2d(target_loc_weight)
    loc_loss = loc_loss * target_loc_weight
    target_bbox.stop_gradient = target_loc_weight.stop_gradient = True
    total = conf_loss_weight * conf_loss + loc_loss_weight * loc_loss
    total = tensor.reshape(total, (-1, 0), actual_shape=actual_shape)
    total = nn.reduce_sum(total, dim=1, keep_dim=True)
    if normalize:
        total = total / nn.reduce_sum(target_loc_weight)
    return total


def _per_layer(values, n, what):
    if values is not None and not (isinstance(values, (list, tuple)) and len(values) == n):
        raise ValueError(f"{what} should be list or tuple, and the length of inputs and {what} should be the same.")
    return values


@layer
def multi_box_head(
    inputs,
    image,
    base_size,
    num_classes,
    aspect_ratios,
    min_ratio=None,
    max_ratio=None,
    min_sizes=None,
    max_sizes=None,
    steps=None,
    step_w=None,
    step_h=None,
    offset=0.5,
    variance=_VARIANCE,
    flip=True,
    clip=False,
    kernel_size=1,
    pad=0,
    stride=1,
    name=None,
    min_max_aspect_ratios_order=False,
):
    """SSD's head over several feature maps: per map its priors (``prior_box``) and two convolutions
    predicting each prior's 4 box offsets and ``num_classes`` scores. Returns (locations [N, priors,
    4], confidences [N, priors, num_classes], boxes [priors, 4], variances [priors, 4]). Without
    ``min_sizes``/``max_sizes`` (three maps or more) the sizes step evenly from ``min_ratio`` to
    ``max_ratio`` percent of ``base_size``, after a first map of 10% and 20%."""
    from fluidcompat.layers import nn, tensor

    if not isinstance(inputs, (list, tuple)):
        raise ValueError("inputs should be a list or tuple.")
    count = len(inputs)
    if count <= 2:
        if min_sizes is None or max_sizes is None or len(min_sizes) != count or len(max_sizes) != count:
            raise ValueError(
                f"multi_box_head: with {count} input(s) give min_sizes and max_sizes, one per input. "
                f"Received: min_sizes={min_sizes!r}, max_sizes={max_sizes!r}"
            )
    elif min_sizes is None and max_sizes is None:
        step = int((max_ratio - min_ratio) // (count - 2))
        ratios = range(min_ratio, max_ratio + 1, step)
        min_sizes = [base_size * 0.10] + [base_size * r / 100.0 for r in ratios]
        max_sizes = [base_size * 0.20] + [base_size * (r + step) / 100.0 for r in ratios]
    if aspect_ratios:
        _per_layer(aspect_ratios, count, "aspect_ratios")
    _per_layer(step_h, count, "step_h")
    _per_layer(step_w, count, "step_w")
    if _per_layer(steps, count, "steps") is not None:
        step_w = step_h = steps
    locs, confs, boxes, variances = [], [], [], []
    for i, feat in enumerate(inputs):
        ratio = aspect_ratios[i] if aspect_ratios is not None else []
        step = [step_w[i] if step_w else 0.0, step_h[i] if step_h else 0.0]
        box, var = prior_box(feat, image, _as_list(min_sizes[i]), _as_list(max_sizes[i]), _as_list(ratio), variance,
                             flip, clip, step, offset, None, min_max_aspect_ratios_order)  # fmt: skip
        boxes.append(box)
        variances.append(var)
        per_cell = box.shape[2]
        for width, into in ((4, locs), (num_classes, confs)):
            conv = nn.conv2d(feat, per_cell * width, kernel_size, padding=pad, stride=stride)
            into.append(tensor.flatten(tensor.transpose(conv, perm=[0, 2, 3, 1]), axis=1))
    if len(boxes) == 1:
        box, var, loc, conf = boxes[0], variances[0], locs[0], confs[0]
    else:
        box = tensor.concat([tensor.flatten(b, axis=3) for b in boxes])
        var = tensor.concat([tensor.flatten(v, axis=3) for v in variances])
        loc = tensor.reshape(tensor.concat(locs, axis=1), shape=[0, -1, 4])
        conf = tensor.reshape(tensor.concat(confs, axis=1), shape=[0, -1, num_classes])
    box.stop_gradient = var.stop_gradient = True
    return loc, conf, box, var


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


@layer
def generate_proposals(
    scores,
    bbox_deltas,
    im_info,
    anchors,
    variances,
    pre_nms_top_n=6000,
    post_nms_top_n=1000,
    nms_thresh=0.5,
    min_size=0.1,
    eta=1.0,
    name=None,
    return_rois_num=False,
):
    """RPN proposals: per image the ``pre_nms_top_n`` best anchors (``scores`` [N, A, H, W]) moved by
    ``bbox_deltas`` [N, 4A, H, W], clipped to the image (``im_info`` rows: height, width, scale),
    small ones dropped, NMS, the ``post_nms_top_n`` best. Returns (rois, probabilities) as LoD
    tensors, and with ``return_rois_num`` the LoD's offsets after 0 (int32)."""
    for value, what in ((scores, "scores"), (bbox_deltas, "bbox_deltas"), (im_info, "im_info"), (anchors, "anchors")):
        check_variable(value, what, "generate_proposals")
    inputs = {"Scores": [scores], "BboxDeltas": [bbox_deltas], "ImInfo": [im_info], "Anchors": [anchors]}
    if variances is not None:
        inputs["Variances"] = [variances]
    attrs = {
        "pre_nms_topN": pre_nms_top_n,
        "post_nms_topN": post_nms_top_n,
        "nms_thresh": nms_thresh,
        "min_size": min_size,
        "eta": eta,
    }
    rois, probs, rois_num = _append("generate_proposals", inputs, ("RpnRois", "RpnRoiProbs", "RpnRoisLod"), attrs,
                                    name, dtype={"RpnRoisLod": "int32"}, stop_gradient=True)  # fmt: skip
    return (rois, probs, rois_num) if return_rois_num else (rois, probs)


@layer
def distribute_fpn_proposals(fpn_rois, min_level, max_level, refer_level, refer_scale, name=None):
    """Each roi (LoD per image) to its FPN level from its scale: returns ([rois of each level from
    ``min_level`` to ``max_level``], the index restoring the original order [R, 1] int32)."""
    check_variable(fpn_rois, "fpn_rois", "distribute_fpn_proposals")
    helper = LayerHelper("distribute_fpn_proposals", name=name)
    levels = [helper.create_variable_for_type_inference(fpn_rois.dtype) for _ in range(max_level - min_level + 1)]
    restore = helper.create_variable_for_type_inference("int32")
    helper.append_op(
        type="distribute_fpn_proposals",
        inputs={"FpnRois": [fpn_rois]},
        outputs={"MultiFpnRois": levels, "RestoreIndex": [restore]},
        attrs={"min_level": min_level, "max_level": max_level, "refer_level": refer_level, "refer_scale": refer_scale},
    )
    return levels, restore


@layer
def collect_fpn_proposals(multi_rois, multi_scores, min_level, max_level, post_nms_top_n, name=None):
    """The ``post_nms_top_n`` best-scored rois over the levels ``min_level`` to ``max_level`` (lists
    of LoD rois and their scores) and all images, grouped by image."""
    count = max_level - min_level + 1
    if len(multi_rois) < count or len(multi_scores) < count:
        raise ValueError(
            f"collect_fpn_proposals: levels {min_level} to {max_level} need {count} rois and scores; "
            f"received {len(multi_rois)} and {len(multi_scores)}"
        )
    helper = LayerHelper("collect_fpn_proposals", name=name)
    out = helper.create_variable_for_type_inference(multi_rois[0].dtype)
    out.stop_gradient = True
    helper.append_op(
        type="collect_fpn_proposals",
        inputs={"MultiLevelRois": list(multi_rois[:count]), "MultiLevelScores": list(multi_scores[:count])},
        outputs={"FpnRois": [out]},
        attrs={"post_nms_topN": post_nms_top_n},
    )
    return out


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
def matrix_nms(
    bboxes,
    scores,
    score_threshold,
    post_threshold,
    nms_top_k,
    keep_top_k,
    use_gaussian=False,
    gaussian_sigma=2.0,
    background_label=0,
    normalized=True,
    return_index=False,
    name=None,
):
    """Matrix NMS (SOLOv2): per image and class the scores decayed by their overlaps with better
    boxes (linear or gaussian) instead of boxes being dropped; those over ``post_threshold``, the
    ``keep_top_k`` best of the image, best first. Rows [label, score, x1, y1, x2, y2] (LoD per
    image); with ``return_index`` also each row's box index in the [N * M] boxes."""
    for value, kind, what in (
        (score_threshold, float, "score_threshold"),
        (post_threshold, float, "post_threshold"),
        (nms_top_k, int, "nums_top_k"),
        (keep_top_k, int, "keep_top_k"),
        (normalized, bool, "normalized"),
        (use_gaussian, bool, "use_gaussian"),
        (gaussian_sigma, float, "gaussian_sigma"),
        (background_label, int, "background_label"),
    ):
        if not isinstance(value, kind):
            raise TypeError(f"The type of '{what}' in matrix_nms must be {kind.__name__}. Received: {value!r}")
    check_variable(bboxes, "bboxes", "matrix_nms")
    check_variable(scores, "scores", "matrix_nms")
    attrs = {
        "background_label": background_label,
        "score_threshold": score_threshold,
        "post_threshold": post_threshold,
        "nms_top_k": nms_top_k,
        "gaussian_sigma": gaussian_sigma,
        "use_gaussian": use_gaussian,
        "keep_top_k": keep_top_k,
        "normalized": normalized,
    }
    out, index = _append("matrix_nms", {"BBoxes": [bboxes], "Scores": [scores]}, ("Out", "Index"), attrs, name,
                         dtype={"Index": "int32"}, stop_gradient=True)  # fmt: skip
    return (out, index) if return_index else out


@layer
def detection_map(
    detect_res,
    label,
    class_num,
    background_label=0,
    overlap_threshold=0.3,
    evaluate_difficult=True,
    has_state=None,
    input_states=None,
    out_states=None,
    ap_version="integral",
):
    """Mean average precision [1] of ``detect_res`` (LoD rows [label, score, box]) against ``label``
    (LoD rows [label, difficult, box] or [label, box]), 'integral' or '11point'. With ``has_state``
    (1) and ``input_states`` (positive counts, true and false positive flags) earlier batches count
    too, and ``out_states`` receive the accumulation (``fluid.metrics.DetectionMAP``)."""
    if ap_version not in ("integral", "11point"):
        raise ValueError(f"detection_map: ap_version must be 'integral' or '11point'. Received: {ap_version!r}")
    helper = LayerHelper("detection_map")
    map_out = helper.create_variable_for_type_inference("float32")
    outs = list(out_states) if out_states is not None else [
        helper.create_variable_for_type_inference(d) for d in ("int32", "float32", "float32")
    ]  # fmt: skip
    inputs = {"Label": [label], "DetectRes": [detect_res]}
    if has_state is not None:
        inputs["HasState"] = [has_state]
    if input_states is not None:
        inputs.update(PosCount=[input_states[0]], TruePos=[input_states[1]], FalsePos=[input_states[2]])
    helper.append_op(
        type="detection_map",
        inputs=inputs,
        outputs={"MAP": [map_out], "AccumPosCount": [outs[0]], "AccumTruePos": [outs[1]], "AccumFalsePos": [outs[2]]},
        attrs={
            "overlap_threshold": overlap_threshold,
            "evaluate_difficult": evaluate_difficult,
            "ap_type": ap_version,
            "class_num": class_num,
            "background_label": background_label,
        },
    )
    return map_out


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


_FLOATS = ["float32", "float64"]


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
def retinanet_detection_output(
    bboxes,
    scores,
    anchors,
    im_info,
    score_threshold=0.05,
    nms_top_k=1000,
    keep_top_k=100,
    nms_threshold=0.3,
    nms_eta=1.0,
):
    """RetinaNet's detections from its FPN levels (lists, one entry per level: box deltas [N, A, 4],
    sigmoid scores [N, A, C], anchors [A, 4]): per level the best candidates over
    ``score_threshold`` (the last level's over 0), decoded at each image's scale (``im_info``) and
    clipped; NMS per class, the ``keep_top_k`` best. Rows [label (1..C), score, x1, y1, x2, y2], LoD
    per image."""
    api = "retinanet_detection_output"
    for values, what, each in ((bboxes, "bboxes", "bbox"), (scores, "scores", "score"), (anchors, "anchors", "anchor")):
        if not isinstance(values, list):
            raise TypeError(f"The type of '{what}' in {api} must be list, but received {type(values)!r}. ")
        for i, v in enumerate(values):
            check_variable(v, f"{each}{i}", api)
            check_dtype(v.dtype, f"{each}{i}", _FLOATS, api)
    if not len(bboxes) == len(scores) == len(anchors):
        raise ValueError(
            f"retinanet_detection_output: bboxes, scores and anchors must have one entry per level; received "
            f"{len(bboxes)}, {len(scores)} and {len(anchors)}"
        )
    check_variable(im_info, "im_info", "retinanet_detection_output")
    attrs = {
        "score_threshold": score_threshold,
        "nms_top_k": nms_top_k,
        "nms_threshold": nms_threshold,
        "keep_top_k": keep_top_k,
        "nms_eta": 1.0,
    }
    helper = LayerHelper("retinanet_detection_output")
    out = helper.create_variable_for_type_inference(scores[0].dtype)
    out.stop_gradient = True
    helper.append_op(
        type="retinanet_detection_output",
        inputs={"BBoxes": list(bboxes), "Scores": list(scores), "Anchors": list(anchors), "ImInfo": [im_info]},
        outputs={"Out": [out]},
        attrs=attrs,
    )
    return out


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


@layer
def locality_aware_nms(
    bboxes,
    scores,
    score_threshold,
    nms_top_k,
    keep_top_k,
    nms_threshold=0.3,
    normalized=True,
    nms_eta=1.0,
    background_label=-1,
    name=None,
):
    """EAST's locality-aware NMS: per image and class, boxes (``bboxes`` [N, M, 4] or quadrilaterals
    [N, M, 8]) overlapping their predecessor in order are merged by score-weighted averaging, then
    NMS; the ``keep_top_k`` best. Rows [label, score, coordinates], LoD per image."""
    check_variable(bboxes, "bboxes", "locality_aware_nms")
    check_dtype(bboxes.dtype, "bboxes", _FLOATS, "locality_aware_nms")
    check_variable(scores, "scores", "locality_aware_nms")
    check_dtype(scores.dtype, "scores", _FLOATS, "locality_aware_nms")
    if bboxes.shape[2] not in (4, 8):
        raise ValueError(
            f"locality_aware_nms: boxes must have 4 or 8 coordinates. Received: bboxes.shape={bboxes.shape}"
        )
    return _nms("locality_aware_nms", bboxes, scores, name, background_label=background_label,
                score_threshold=score_threshold, nms_top_k=nms_top_k, nms_threshold=nms_threshold, nms_eta=nms_eta,
                keep_top_k=keep_top_k, normalized=normalized)[0]  # fmt: skip


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
