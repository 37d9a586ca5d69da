"""``fluid.layers.detection``: the names fluid 1.8 defined in ``layers.detection``, defined here in
four modules (detection_boxes, detection_priors, detection_nms, detection_losses; detection_map in
metrics) and handed out from this module as in fluid. Their ops are in fluidcompat_ops/detection_*.py."""

from __future__ import annotations

from fluidcompat.framework import Variable, layer  # noqa: F401  (names the module always had)
from fluidcompat.layer_helper import LayerHelper, check_dtype, check_variable  # noqa: F401
from fluidcompat.layers.detection_boxes import (  # noqa: F401
    box_clip,
    box_coder,
    box_decoder_and_assign,
    iou_similarity,
    polygon_box_transform,
    roi_perspective_transform,
    yolo_box,
)
from fluidcompat.layers.detection_losses import (  # noqa: F401
    bipartite_match,
    generate_mask_labels,
    generate_proposal_labels,
    retinanet_target_assign,
    rpn_target_assign,
    sigmoid_focal_loss,
    ssd_loss,
    target_assign,
    yolov3_loss,
)
from fluidcompat.layers.detection_nms import (  # noqa: F401
    collect_fpn_proposals,
    detection_output,
    distribute_fpn_proposals,
    generate_proposals,
    locality_aware_nms,
    matrix_nms,
    multiclass_nms,
    retinanet_detection_output,
)
from fluidcompat.layers.detection_priors import (  # noqa: F401
    anchor_generator,
    density_prior_box,
    multi_box_head,
    prior_box,
)
from fluidcompat.layers.metrics import detection_map  # noqa: F401

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
