"""multiclass_nms in R-CNN's LoD form (BBoxes [R, C, 4], a box per class, Scores [R, C], each
image's rows by the LoD), as Faster R-CNN inference used it: with and without keep_top_k cutting,
pixel and normalized boxes, and multiclass_nms2's Index. Prints JSON; run under fluid 1.8.5
(tools/fluid18) it wrote multiclass_nms_lod.json."""

import json

import numpy as np
import paddle.fluid as fluid
from paddle.fluid.layer_helper import LayerHelper

L = fluid.layers
place = fluid.CPUPlace()
rng = np.random.RandomState(8)
results = {}
n, C = 7, 3
xy = rng.uniform(0, 20, (n, C, 2))
B = np.concatenate([xy, xy + rng.uniform(3, 12, (n, C, 2))], -1).astype("float32")
B[1] = B[0] + 0.5
S = rng.uniform(0, 1, (n, C)).astype("float32")
for name, keep, normalized, scale in (("cut_pixels", 6, False, 1.0), ("all_normalized", -1, True, 0.04)):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        b = fluid.data("b", [None, C, 4], "float32", lod_level=1)
        s = fluid.data("s", [None, C], "float32", lod_level=1)
        attrs = dict(
            background_label=0,
            score_threshold=0.1,
            nms_top_k=5,
            nms_threshold=0.4,
            nms_eta=1.0,
            keep_top_k=keep,
            normalized=normalized,
        )
        out = L.multiclass_nms(b, s, 0.1, 5, keep, nms_threshold=0.4, normalized=normalized)
        helper = LayerHelper("multiclass_nms2")
        out2, index = (
            helper.create_variable_for_type_inference("float32"),
            helper.create_variable_for_type_inference("int32"),
        )
        helper.append_op(
            type="multiclass_nms2",
            inputs={"BBoxes": b, "Scores": s},
            outputs={"Out": out2, "Index": index},
            attrs=attrs,
        )
    feed = {"b": fluid.create_lod_tensor(B * scale, [[4, 3]], place), "s": fluid.create_lod_tensor(S, [[4, 3]], place)}
    rs = fluid.Executor(place).run(main, feed=feed, fetch_list=[out, out2, index], return_numpy=False)
    results[name] = [
        [r.lod(), list(np.array(r).shape)] + np.round(np.array(r).reshape(-1).astype("float64"), 4).tolist() for r in rs
    ]
print(json.dumps(results, sort_keys=True))
