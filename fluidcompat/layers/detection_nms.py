"""``fluid.layers.detection``: non-maximum suppression (multiclass, matrix, locality-aware), the
detection outputs of SSD and RetinaNet, and R-CNN's proposals with their FPN levels."""

from __future__ import annotations

from fluidcompat.framework import layer
from fluidcompat.layer_helper import LayerHelper, check_dtype, check_variable
from fluidcompat.layers._common import _append
from fluidcompat.layers.detection_boxes import _FLOATS, box_coder

__all__ = [
    "multiclass_nms",
    "matrix_nms",
    "locality_aware_nms",
    "detection_output",
    "retinanet_detection_output",
    "generate_proposals",
    "distribute_fpn_proposals",
    "collect_fpn_proposals",
]


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
