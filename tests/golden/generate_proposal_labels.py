"""generate_proposal_labels as Faster R-CNN training scripts used it, with use_random=False (fluid's
sampling draws are its own): RPN rois of two images (one at scale 1.5) with the ground truth added
to them, crowd boxes, foreground/background thresholds, the foreground fraction, class-specific and
class-agnostic box targets with regression weights; and is_cascade_rcnn, whose rois start with each
image's ground truth (at the original scale) and hold a box with no area. Prints JSON; run under fluid 1.8.5
(tools/fluid18) it wrote generate_proposal_labels.json."""
# ruff: noqa: E501  (each case on a line or two, as the layer calls read)

import json

import numpy as np
import paddle.fluid as fluid

L = fluid.layers
place = fluid.CPUPlace()
rng = np.random.RandomState(6)
results = {}

xy = rng.uniform(0, 30, (14, 2))
ROIS = np.concatenate([xy, xy + rng.uniform(4, 20, (14, 2))], 1).astype("float32")
ROI_LOD = [[8, 6]]
GT = np.array([[2, 3, 14, 12], [20, 10, 34, 30], [5, 18, 16, 29], [10, 8, 24, 22], [4, 4, 12, 30]], "float32")
GT_LOD = [[3, 2]]
CLASSES = np.array([[1], [3], [2], [2], [1]], "int32")
CROWD = np.array([[0], [0], [1], [0], [0]], "int32")
IM_INFO = np.array([[40, 48, 1.0], [45, 54, 1.5]], "float32")
feed = {
    "rois": fluid.create_lod_tensor(ROIS * np.array([1.0] * 8 + [1.5] * 6, "float32")[:, None], ROI_LOD, place),
    "cls": fluid.create_lod_tensor(CLASSES, GT_LOD, place),
    "crowd": fluid.create_lod_tensor(CROWD, GT_LOD, place),
    "gt": fluid.create_lod_tensor(GT, GT_LOD, place),
    "im": IM_INFO,
}
for name, kw in (
    (
        "default",
        dict(batch_size_per_im=12, fg_fraction=0.25, fg_thresh=0.5, bg_thresh_hi=0.5, bg_thresh_lo=0.0, class_nums=4),
    ),
    (
        "thresholds",
        dict(
            batch_size_per_im=8,
            fg_fraction=0.5,
            fg_thresh=0.4,
            bg_thresh_hi=0.3,
            bg_thresh_lo=0.05,
            class_nums=4,
            bbox_reg_weights=[1.0, 1.0, 1.0, 1.0],
        ),
    ),
    ("class_agnostic", dict(batch_size_per_im=16, fg_fraction=0.5, class_nums=4, is_cls_agnostic=True)),
    # fluid 1.8.5 sized its outputs by batch_size_per_im but kept every roi here: keep it above their number
    ("cascade", dict(batch_size_per_im=16, fg_thresh=0.4, bg_thresh_lo=0.0, class_nums=4, is_cascade_rcnn=True)),
    (
        "cascade_agnostic",
        dict(batch_size_per_im=16, class_nums=4, is_cls_agnostic=True, is_cascade_rcnn=True, bg_thresh_lo=0.1),
    ),
):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        outs = L.generate_proposal_labels(
            fluid.data("rois", [None, 4], "float32", lod_level=1),
            fluid.data("cls", [None, 1], "int32", lod_level=1),
            fluid.data("crowd", [None, 1], "int32", lod_level=1),
            fluid.data("gt", [None, 4], "float32", lod_level=1),
            fluid.data("im", [None, 3], "float32"),
            use_random=False,
            **kw,
        )
    run_feed = dict(feed)
    if kw.get("is_cascade_rcnn"):
        cascade_rois = np.concatenate([GT[:3], ROIS[:8], GT[3:] * 1.0, ROIS[8:] * 1.5]).astype("float32")
        cascade_rois[5] = [20, 20, 12, 30]  # no area: left out
        run_feed["rois"] = fluid.create_lod_tensor(cascade_rois, [[11, 8]], place)
    rs = fluid.Executor(place).run(main, feed=run_feed, fetch_list=list(outs), return_numpy=False)
    results[name] = [
        [r.lod(), list(np.array(r).shape)] + np.round(np.array(r).reshape(-1).astype("float64"), 4).tolist() for r in rs
    ]
print(json.dumps(results, sort_keys=True))
