"""locality_aware_nms (EAST text detection, fluid 1.8): neighbouring boxes in input order merged by
score-weighted averaging (scores added) while they overlap, then NMS; 4-coordinate boxes and
8-coordinate quadrilaterals, thresholds, top-k and keep-top-k. Prints JSON; run under fluid 1.8.5
(tools/fluid18) it wrote locality_aware_nms.json."""

import json

import numpy as np
import paddle.fluid as fluid

L = fluid.layers
place = fluid.CPUPlace()
rng = np.random.RandomState(12)
results = {}

# a row of overlapping boxes (as a text line's cells), a separate cluster, and strays
base = np.array(
    [[0, 0, 10, 4], [2, 0, 12, 4], [4, 1, 14, 5], [30, 30, 40, 36], [31, 30, 41, 35], [60, 5, 64, 9], [3, 0, 13, 4]],
    "float32",
)
BOX4 = (base + rng.uniform(-0.3, 0.3, base.shape)).astype("float32")[None]
SC4 = rng.uniform(0.2, 1.0, (1, 1, 7)).astype("float32")
quads = np.concatenate([base[:, [0, 1]], base[:, [2, 1]], base[:, [2, 3]], base[:, [0, 3]]], 1)  # clockwise corners
BOX8 = (quads + rng.uniform(-0.4, 0.4, quads.shape)).astype("float32")[None]
for name, boxes, kw in (
    ("boxes4", BOX4, dict(score_threshold=0.1, nms_top_k=-1, keep_top_k=-1, nms_threshold=0.3, normalized=False)),
    ("boxes4_topk", BOX4, dict(score_threshold=0.5, nms_top_k=3, keep_top_k=2, nms_threshold=0.2, normalized=True)),
    ("quads8", BOX8, dict(score_threshold=0.1, nms_top_k=-1, keep_top_k=-1, nms_threshold=0.3)),
):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        b = fluid.data("b", [None, 7, boxes.shape[2]], "float32")
        s = fluid.data("s", [None, 1, 7], "float32")
        out = L.locality_aware_nms(b, s, **kw)
    r = fluid.Executor(place).run(main, feed={"b": boxes, "s": SC4}, fetch_list=[out], return_numpy=False)[0]
    results[name] = [
        [r.lod(), list(np.array(r).shape)] + np.round(np.array(r).reshape(-1).astype("float64"), 5).tolist()
    ]
print(json.dumps(results, sort_keys=True))
