"""matrix_nms (SOLOv2's NMS, fluid 1.8): linear decay with score/post thresholds, top-k and keep-top-k;
gaussian decay over pixel boxes with every class kept (background_label -1); an image with no
detection. Rows, LoD and the box index. Prints JSON; run under fluid 1.8.5 (tools/fluid18) it wrote
matrix_nms.json."""

import json

import numpy as np
import paddle.fluid as fluid

L = fluid.layers
place = fluid.CPUPlace()
rng = np.random.RandomState(3)
results = {}


def boxes(n):
    xy = rng.uniform(0, 0.7, (n, 2))
    return np.concatenate([xy, xy + rng.uniform(0.05, 0.4, (n, 2))], 1).astype("float32")


B = np.stack([boxes(8), boxes(8)])
B[0, 1] = B[0, 0] + 0.02
B[0, 2] = B[0, 0] - 0.01
S = rng.uniform(0, 1, (2, 3, 8)).astype("float32")
ONE = np.full((2, 3, 8), 0.05, "float32")
ONE[1, 1, 2] = 0.9
CASES = (
    ("linear", B, S, dict(score_threshold=0.1, post_threshold=0.2, nms_top_k=6, keep_top_k=5)),
    ("gaussian_pixels", B * 10, S, dict(score_threshold=0.05, post_threshold=0.0, nms_top_k=-1, keep_top_k=-1,
                                        use_gaussian=True, gaussian_sigma=1.5, background_label=-1, normalized=False)),
    ("one_image_empty", B, ONE, dict(score_threshold=0.5, post_threshold=0.0, nms_top_k=-1, keep_top_k=-1)),
)  # fmt: skip
for name, bv, sv, kw in CASES:
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        out, index = L.matrix_nms(fluid.data("b", [None, 8, 4], "float32"), fluid.data("s", [None, 3, 8], "float32"),
                                  return_index=True, **kw)  # fmt: skip
    rs = fluid.Executor(place).run(main, feed={"b": bv, "s": sv}, fetch_list=[out, index], return_numpy=False)
    results[name] = [
        [r.lod(), list(np.array(r).shape)] + np.round(np.array(r).reshape(-1).astype("float64"), 5).tolist() for r in rs
    ]
print(json.dumps(results, sort_keys=True))
