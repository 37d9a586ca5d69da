"""fluid.metrics.DetectionMAP as detection scripts used it: the mAP of each batch and the mAP
accumulated over batches (two batches, then reset and one more), integral and 11point, with
difficult ground truth evaluated or not, a class never detected, a detection of a class with no
ground truth, and duplicate detections of one box. Prints JSON; run under fluid 1.8.5
(tools/fluid18) it wrote detection_map.json."""

import json

import numpy as np
import paddle.fluid as fluid

place = fluid.CPUPlace()
rng = np.random.RandomState(5)
results = {}


def batch(n_images):
    dets, det_lens, labels, boxes, difficult, gt_lens = [], [], [], [], [], []
    for _ in range(n_images):
        k = rng.randint(1, 4)
        xy = rng.uniform(0, 0.6, (k, 2))
        gt = np.concatenate([xy, xy + rng.uniform(0.1, 0.4, (k, 2))], 1)
        cls = rng.randint(1, 4, (k, 1))
        labels.append(cls)
        boxes.append(gt)
        difficult.append((rng.uniform(size=(k, 1)) < 0.3).astype("float32"))
        gt_lens.append(k)
        rows = []
        for j in range(k):  # a near detection of each box, sometimes twice, sometimes the wrong class
            for _ in range(rng.randint(1, 3)):
                c = cls[j, 0] if rng.uniform() < 0.8 else rng.randint(1, 4)
                rows.append([c, rng.uniform(0.1, 1.0)] + list(gt[j] + rng.uniform(-0.08, 0.08, 4)))
        for _ in range(rng.randint(0, 3)):  # false alarms
            xy = rng.uniform(0, 0.6, 2)
            rows.append([rng.randint(1, 5), rng.uniform(0.1, 1.0)] + list(xy) + list(xy + 0.2))
        dets.append(np.array(rows))
        det_lens.append(len(rows))
    lod = lambda parts, lens, dt: fluid.create_lod_tensor(np.concatenate(parts).astype(dt), [lens], place)  # noqa: E731
    return {
        "det": lod(dets, det_lens, "float32"),
        "gl": lod(labels, gt_lens, "float32"),
        "gb": lod(boxes, gt_lens, "float32"),
        "gd": lod(difficult, gt_lens, "float32"),
    }


BATCHES = [batch(3), batch(2), batch(3)]
for name, kw in (
    ("integral", dict(class_num=5)),
    ("11point_no_difficult", dict(class_num=5, ap_version="11point", evaluate_difficult=False, overlap_threshold=0.4)),
    ("integral_no_difficult_input", dict(class_num=5, overlap_threshold=0.6)),
):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        det = fluid.data("det", [None, 6], "float32", lod_level=1)
        gl = fluid.data("gl", [None, 1], "float32", lod_level=1)
        gb = fluid.data("gb", [None, 4], "float32", lod_level=1)
        gd = fluid.data("gd", [None, 1], "float32", lod_level=1) if "input" not in name else None
        evaluator = fluid.metrics.DetectionMAP(det, gl, gb, gd, **kw)
        cur, accum = evaluator.get_map_var()
    exe = fluid.Executor(place)
    exe.run(startup)
    values = []
    for i, feed in enumerate(BATCHES):
        if i == 2:
            evaluator.reset(exe)
        feed = dict(feed) if gd is not None else {k: v for k, v in feed.items() if k != "gd"}
        values += [float(v) for v in np.array(exe.run(main, feed=feed, fetch_list=[cur, accum])).reshape(-1)]
    results[name] = [round(v, 5) for v in values]
print(json.dumps(results, sort_keys=True))
