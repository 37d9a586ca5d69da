"""retinanet_detection_output as RetinaNet inference scripts used it: two FPN levels of anchors,
box deltas and sigmoid scores, per-level candidates over score_threshold (top nms_top_k), decoding
at the image's scale and clipping, NMS per class and keep_top_k; an image without detections.
Prints JSON; run under fluid 1.8.5 (tools/fluid18) it wrote retinanet_detection_output.json."""

import json

import numpy as np
import paddle.fluid as fluid

L = fluid.layers
place = fluid.CPUPlace()
rng = np.random.RandomState(4)
results = {}


def level(h, w, stride, size):
    cells = np.stack(np.meshgrid(np.arange(w) * stride, np.arange(h) * stride), -1).reshape(-1, 2)
    return np.concatenate([cells, cells + size - 1], 1).astype("float32")


ANCHORS = [level(4, 5, 8.0, 12.0), level(2, 3, 16.0, 24.0)]
counts = [len(a) for a in ANCHORS]
DELTAS = [rng.uniform(-0.5, 0.5, (2, n, 4)).astype("float32") for n in counts]
SCORES = [rng.uniform(0, 1, (2, n, 3)).astype("float32") ** 3 for n in counts]
SCORES[0][1] *= 0.05
SCORES[1][1] *= 0.05
IM_INFO = np.array([[40, 48, 1.0], [36, 44, 1.5]], "float32")
for name, kw in (
    ("default", dict(score_threshold=0.05, nms_top_k=10, keep_top_k=8, nms_threshold=0.3)),
    ("loose", dict(score_threshold=0.2, nms_top_k=1000, keep_top_k=100, nms_threshold=0.6)),
):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        bboxes = [fluid.data("b%d" % i, [None, n, 4], "float32") for i, n in enumerate(counts)]
        scores = [fluid.data("s%d" % i, [None, n, 3], "float32") for i, n in enumerate(counts)]
        anchors = [fluid.data("a%d" % i, [n, 4], "float32") for i, n in enumerate(counts)]
        out = L.retinanet_detection_output(bboxes, scores, anchors, fluid.data("im", [None, 3], "float32"), **kw)
    feed = {"im": IM_INFO}
    for i in range(2):
        feed.update({"b%d" % i: DELTAS[i], "s%d" % i: SCORES[i], "a%d" % i: ANCHORS[i]})
    r = fluid.Executor(place).run(main, feed=feed, fetch_list=[out], return_numpy=False)[0]
    results[name] = [
        [r.lod(), list(np.array(r).shape)] + np.round(np.array(r).reshape(-1).astype("float64"), 4).tolist()
    ]
print(json.dumps(results, sort_keys=True))
