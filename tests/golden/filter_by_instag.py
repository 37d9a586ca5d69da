"""filter_by_instag (PaddleRec): instances kept by their tags, as LoD sequences (is_lod) and as rows,
and the case where none is kept (one row of out_val_if_empty, loss weight 0): output and LoD, loss
weight, and the input's gradient. Prints JSON; run under fluid 1.8.5 (tools/fluid18) it wrote
filter_by_instag.json."""

import json

import numpy as np
import paddle.fluid as fluid

L = fluid.layers
place = fluid.CPUPlace()
results = {}
X = np.arange(14, dtype="float32").reshape(7, 2)
TAGS = np.array([[1], [3], [4], [2], [5]], "int64")
for name, is_lod, tags_lod, filt, rows, x_lod, empty in (
    ("lod", True, [[2, 1, 2]], [3, 5], 7, [[3, 2, 2]], 0),
    ("rows", False, [[1, 2, 1, 1]], [2, 4], 4, None, 0),
    ("none_kept", False, [[1, 2, 1, 1]], [7], 4, None, -1),
):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        ins = fluid.data("ins", [None, 2], "float32", lod_level=1 if is_lod else 0)
        ins.stop_gradient = False
        out, weight = L.filter_by_instag(
            ins, fluid.data("it", [None, 1], "int64", lod_level=1), fluid.data("ft", [None], "int64"), is_lod, empty
        )
        fluid.backward.append_backward(L.reduce_sum(out * out))
    x = fluid.create_lod_tensor(X[:rows], x_lod, place) if is_lod else X[:rows]
    feed = {"ins": x, "it": fluid.create_lod_tensor(TAGS, tags_lod, place), "ft": np.array(filt, "int64")}
    rs = fluid.Executor(place).run(main, feed=feed, fetch_list=[out, weight, "ins@GRAD"], return_numpy=False)
    results[name] = [
        [r.lod(), list(np.array(r).shape)] + np.array(r).reshape(-1).astype("float64").tolist() for r in rs
    ]
print(json.dumps(results, sort_keys=True))
