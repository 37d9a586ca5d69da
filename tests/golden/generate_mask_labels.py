"""generate_mask_labels as Mask R-CNN training scripts used it: the foreground rois of
generate_proposal_labels' output matched to the ground-truth polygons (two images, one at scale 1.5,
a crowd box, a box of two polygons), rasterized at 7 x 7 and 14 x 14 in each roi's frame, as class
slots of -1 except the roi's class; and an image with no foreground roi. Prints JSON; run under
fluid 1.8.5 (tools/fluid18) it wrote generate_mask_labels.json."""
# ruff: noqa: E501  (each case on a line or two, as the layer calls read)

import json

import numpy as np
import paddle.fluid as fluid

L = fluid.layers
place = fluid.CPUPlace()
results = {}

POLYS = [  # per image, per ground truth, its polygons (x, y points)
    [[[2, 3, 14, 3, 14, 12, 2, 12]], [[20, 10, 34, 12, 30, 30, 22, 28]], [[5, 18, 16, 18, 10, 29]]],
    [[[4, 4, 12, 4, 12, 14], [6, 16, 12, 16, 12, 26, 6, 26]], [[20, 6, 30, 6, 30, 20, 20, 20]]],
]
CLASSES = np.array([[1], [3], [2], [2], [1]], "int32")
CROWD = np.array([[0], [0], [1], [0], [0]], "int32")
IM_INFO = np.array([[40, 48, 1.0], [45, 54, 1.5]], "float32")
ROIS = np.array(
    [[1, 2, 15, 13], [19, 9, 35, 31], [3, 3, 13, 15], [0, 0, 5, 5], [4, 3, 13, 27], [18, 5, 31, 22], [40, 40, 44, 44]],
    "float32",
)
ROIS[4:] *= 1.5
LABELS = np.array([[1], [3], [1], [0], [2], [1], [0]], "int32")


def segms():
    flat, gts_per_image, polys_per_gt, points_per_poly = [], [], [], []
    for image in POLYS:
        gts_per_image.append(len(image))
        for gt in image:
            polys_per_gt.append(len(gt))
            for poly in gt:
                points_per_poly.append(len(poly) // 2)
                flat += poly
    data = np.array(flat, "float32").reshape(-1, 2)
    return fluid.create_lod_tensor(data, [gts_per_image, polys_per_gt, points_per_poly], place)


for name, resolution, rois_lod, labels in (
    ("res7", 7, [[4, 3]], LABELS),
    ("res14", 14, [[4, 3]], LABELS),
    ("no_fg_in_image_1", 7, [[4, 3]], np.array([[1], [3], [1], [0], [0], [0], [0]], "int32")),
):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        outs = L.generate_mask_labels(
            fluid.data("im", [None, 3], "float32"),
            fluid.data("cls", [None, 1], "int32", lod_level=1),
            fluid.data("crowd", [None, 1], "int32", lod_level=1),
            fluid.data("segms", [None, 2], "float32", lod_level=3),
            fluid.data("rois", [None, 4], "float32", lod_level=1),
            fluid.data("labels", [None, 1], "int32", lod_level=1),
            num_classes=4,
            resolution=resolution,
        )
    feed = {
        "im": IM_INFO,
        "cls": fluid.create_lod_tensor(CLASSES, [[3, 2]], place),
        "crowd": fluid.create_lod_tensor(CROWD, [[3, 2]], place),
        "segms": segms(),
        "rois": fluid.create_lod_tensor(ROIS, rois_lod, place),
        "labels": fluid.create_lod_tensor(labels, rois_lod, place),
    }
    rs = fluid.Executor(place).run(main, feed=feed, fetch_list=list(outs), return_numpy=False)
    results[name] = [
        [r.lod(), list(np.array(r).shape)] + np.round(np.array(r).reshape(-1).astype("float64"), 4).tolist() for r in rs
    ]
print(json.dumps(results, sort_keys=True))
