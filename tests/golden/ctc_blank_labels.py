# Golden script: warpctc over labels that hold the blank class itself (fluid's docs example draws
# its labels from [0, class_num) with blank 0): costs and gradients with respect to the logits, for
# padded labels (with norm_by_times too) and LoD labels, including labels no path finishes in time
# (cost inf) and ones longer than their logits (cost 0). Prints a JSON report.
import json

import numpy as np
import paddle.fluid as fluid


def padded(steps, labels, seed, blank=0, classes=4, norm=False):
    batch, width = len(labels), max(len(l) for l in labels)
    main, start = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, start):
        logits = fluid.data("logits", [steps, batch, classes], "float32")
        logits.stop_gradient = False
        label_len = fluid.data("label_len", [None], "int64")
        logit_len = fluid.data("logit_len", [None], "int64")
        label = fluid.data("label", [batch, width], "int32")
        cost = fluid.layers.warpctc(
            logits, label, blank=blank, norm_by_times=norm, input_length=logit_len, label_length=label_len
        )
        grad = fluid.gradients([fluid.layers.reduce_sum(cost)], [logits])[0]
    exe = fluid.Executor(fluid.CPUPlace())
    rng = np.random.RandomState(seed)
    feed = {
        "logits": rng.randn(steps, batch, classes).astype("float32"),
        "label": np.array([l + [1] * (width - len(l)) for l in labels], "int32"),
        "label_len": np.array([len(l) for l in labels], "int64"),
        "logit_len": np.array([steps - (i % 2) for i in range(batch)], "int64"),
    }
    c, g = exe.run(main, feed=feed, fetch_list=[cost, grad])
    return {"cost": c.ravel().tolist(), "grad": g.ravel().tolist()}


def lod(seed):
    main, start = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, start):
        logits = fluid.data("logits", [None, 5], "float32", lod_level=1)
        logits.stop_gradient = False
        label = fluid.data("label", [None, 1], "int32", lod_level=1)
        cost = fluid.layers.warpctc(logits, label, blank=0)
        grad = fluid.gradients([fluid.layers.reduce_sum(cost)], [logits])[0]
    exe = fluid.Executor(fluid.CPUPlace())
    rng = np.random.RandomState(seed)
    place = fluid.CPUPlace()
    x = fluid.create_lod_tensor(rng.randn(13, 5).astype("float32"), [[4, 6, 3]], place)
    y = fluid.create_lod_tensor(np.array([[0], [2], [3], [3], [0], [4], [1], [0]], "int32"), [[2, 4, 2]], place)
    c, g = exe.run(main, feed={"logits": x, "label": y}, fetch_list=[cost, grad], return_numpy=False)
    return {"cost": np.array(c).ravel().tolist(), "grad": np.array(g).ravel().tolist()}


report = {
    "mixed": padded(6, [[1, 0, 2], [0], [0, 0], [2, 0, 0, 3], [1, 2, 3], [3, 0, 3]], 0),
    "tight": padded(3, [[1, 0, 1], [0, 1], [1, 0], [1, 1, 1]], 1),
    "tight4": padded(4, [[1, 0, 1], [0, 0, 1]], 2, norm=True),
    "blank2": padded(6, [[2, 1, 2], [0, 2, 2], [1, 1]], 3, blank=2),
    "docs": padded(5, np.random.RandomState(4).randint(0, 5, [16, 3]).tolist(), 5, classes=6),
    "lod": lod(6),
}
print(json.dumps(report))
