"""rpn_target_assign and retinanet_target_assign as Faster R-CNN / RetinaNet training scripts used
them, with use_random=False (fluid's sampling draws are its own): anchors straddling the image,
crowd boxes, the best anchor of each box kept as foreground, the foreground fraction and batch size
per image; the gathered predictions, labels, box targets and weights, and RetinaNet's foreground
count. Prints JSON; run under fluid 1.8.5 (tools/fluid18) it wrote target_assign_rpn.json."""
# ruff: noqa: E501  (each case on a line or two, as the layer calls read)

import json

import numpy as np
import paddle.fluid as fluid

L = fluid.layers
place = fluid.CPUPlace()
rng = np.random.RandomState(2)
results = {}

H, W, A = 4, 5, 3
cells = np.stack(np.meshgrid(np.arange(W) * 8.0, np.arange(H) * 8.0), -1)
sizes = np.array([[10, 10], [18, 12], [12, 22]], "float32")
ANCHORS = (
    np.concatenate([cells[:, :, None, :] - sizes / 2 + 4, cells[:, :, None, :] + sizes / 2 + 3], -1)
    .reshape(-1, 4)
    .astype("float32")
)
VAR = np.tile(np.array([0.1, 0.1, 0.2, 0.2], "float32"), (len(ANCHORS), 1))
GT = np.array([[2, 3, 14, 12], [20, 10, 34, 30], [5, 18, 16, 29], [1, 1, 38, 30], [24, 2, 36, 9]], "float32")
GT_LOD = [[3, 2]]
CROWD = np.array([[0], [0], [1], [0], [0]], "int32")
LABELS = np.array([[1], [2], [1], [3], [2]], "int32")
IM_INFO = np.array([[32, 40, 1.0], [30, 36, 1.25]], "float32")
N = 2
feed = {
    "bbox": rng.uniform(-1, 1, (N, len(ANCHORS), 4)).astype("float32"),
    "cls": rng.uniform(-1, 1, (N, len(ANCHORS), 1)).astype("float32"),
    "cls3": rng.uniform(-1, 1, (N, len(ANCHORS), 3)).astype("float32"),
    "anchor": ANCHORS,
    "var": VAR,
    "gt": fluid.create_lod_tensor(GT, GT_LOD, place),
    "crowd": fluid.create_lod_tensor(CROWD, GT_LOD, place),
    "label": fluid.create_lod_tensor(LABELS, GT_LOD, place),
    "im": IM_INFO,
}


def inputs(classes=1):
    return (
        fluid.data("bbox", [None, len(ANCHORS), 4], "float32"),
        fluid.data("cls" if classes == 1 else "cls3", [None, len(ANCHORS), classes], "float32"),
        fluid.data("anchor", [len(ANCHORS), 4], "float32"),
        fluid.data("var", [len(ANCHORS), 4], "float32"),
        fluid.data("gt", [None, 4], "float32", lod_level=1),
    )


def run(name, build):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        outs = list(build())
    rs = fluid.Executor(place).run(main, feed=feed, fetch_list=outs, return_numpy=False)
    results[name] = [
        [r.lod(), list(np.array(r).shape)] + np.round(np.array(r).reshape(-1).astype("float64"), 5).tolist() for r in rs
    ]


crowd = lambda: fluid.data("crowd", [None, 1], "int32", lod_level=1)  # noqa: E731
im = lambda: fluid.data("im", [None, 3], "float32")  # noqa: E731
run("rpn_default", lambda: L.rpn_target_assign(*inputs(), crowd(), im(), rpn_batch_size_per_im=16, use_random=False))
run(
    "rpn_straddle_fraction",
    lambda: L.rpn_target_assign(
        *inputs(),
        crowd(),
        im(),
        rpn_batch_size_per_im=10,
        rpn_straddle_thresh=-1.0,
        rpn_fg_fraction=0.3,
        rpn_positive_overlap=0.5,
        rpn_negative_overlap=0.2,
        use_random=False,
    ),
)
run(
    "rpn_tight_straddle",
    lambda: L.rpn_target_assign(
        *inputs(), crowd(), im(), rpn_batch_size_per_im=256, rpn_straddle_thresh=2.0, use_random=False
    ),
)
run(
    "retinanet",
    lambda: L.retinanet_target_assign(
        *inputs(3), fluid.data("label", [None, 1], "int32", lod_level=1), crowd(), im(), num_classes=3
    ),
)
run(
    "retinanet_overlaps",
    lambda: L.retinanet_target_assign(
        *inputs(3),
        fluid.data("label", [None, 1], "int32", lod_level=1),
        crowd(),
        im(),
        num_classes=3,
        positive_overlap=0.4,
        negative_overlap=0.3,
    ),
)
print(json.dumps(results, sort_keys=True))
