"""yolov3_loss as a YOLOv3 training script used it: the loss per image and its gradient for the head,
with label smoothing and gt scores, without smoothing and with scale_x_y, a box whose best anchor is
not this head's, an empty (zero-size) box, two boxes in one cell, and predictions overlapping a box
by more than ignore_thresh. fluid 1.8.5's gradient kept only the last box of a cell where two
boxes fall to the same cell and anchor (here image 0, cell (1, 1) in two cases), though its loss
counts both: tests compare the gradient elsewhere and check that cell by finite differences.
Prints JSON; run under fluid 1.8.5 (tools/fluid18) it wrote
yolov3_loss.json."""

import json

import numpy as np
import paddle.fluid as fluid

L = fluid.layers
results = {}
ANCHORS = [10, 13, 16, 30, 33, 23, 30, 61]
GT_BOX = np.array(
    [
        [[0.3, 0.4, 0.2, 0.35], [0.7, 0.2, 0.5, 0.4], [0.31, 0.42, 0.25, 0.3], [0.0, 0.0, 0.0, 0.0]],
        [[0.55, 0.65, 0.08, 0.1], [0.2, 0.8, 0.9, 0.6], [0.5, 0.5, 0.4, 0.45], [0.9, 0.1, 0.1, 0.2]],
    ],
    "float32",
)
GT_LABEL = np.array([[1, 0, 2, 0], [2, 1, 0, 1]], "int32")
GT_SCORE = np.array([[1.0, 0.8, 0.6, 1.0], [0.9, 1.0, 0.7, 0.5]], "float32")
for name, mask, kw, with_score in (
    ("smooth_score", [1, 2], dict(ignore_thresh=0.3), True),
    ("plain_scale_xy", [0, 1, 3], dict(ignore_thresh=0.6, use_label_smooth=False, scale_x_y=1.1), False),
    ("high_anchors", [2, 3], dict(ignore_thresh=0.05), True),
):
    rng = np.random.RandomState(len(name))
    xv = rng.uniform(-1.5, 1.5, (2, len(mask) * 8, 4, 4)).astype("float32")
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [None, len(mask) * 8, 4, 4], "float32")
        x.stop_gradient = False
        gb = fluid.data("gb", [None, 4, 4], "float32")
        gl = fluid.data("gl", [None, 4], "int32")
        gs = fluid.data("gs", [None, 4], "float32") if with_score else None
        loss = L.yolov3_loss(x, gb, gl, ANCHORS, mask, 3, downsample_ratio=32, gt_score=gs, **kw)
        fluid.backward.append_backward(L.reduce_sum(loss))
    exe = fluid.Executor(fluid.CPUPlace())
    feed = {"x": xv, "gb": GT_BOX, "gl": GT_LABEL, "gs": GT_SCORE}
    op = main.global_block().ops[0]
    outs = [loss, op.output("ObjectnessMask")[0], op.output("GTMatchMask")[0], "x@GRAD"]
    rs = exe.run(main, feed=feed, fetch_list=outs)
    results[name] = [[list(r.shape)] + np.round(r.reshape(-1).astype("float64"), 5).tolist() for r in rs]
print(json.dumps(results, sort_keys=True))
