# fluid.contrib.layers.tdm_sampler: positives along each leaf's travel path and negatives drawn per
# layer with a fixed seed (the same draws as fluid 1.8.5), padding in the path, output_positive
# off, int64 trees and outputs, the output_list slices, the program, and the errors.
import json
import os
import sys

import numpy as np
import paddle.fluid as fluid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _golden import errors_of  # noqa: E402

TRAVEL = np.array([[1, 3, 7], [1, 3, 8], [1, 4, 9], [1, 4, 10], [2, 5, 11], [2, 5, 12], [2, 6, 13], [2, 6, 0]], "int32")
LAYER = np.arange(1, 15, dtype="int32").reshape(-1, 1)
BIG = 300  # a wide second layer: draws over a larger range


def sampler(x, negs, nodes, leaves, travel, layer, **kw):
    TREES[:] = [travel, layer]
    return fluid.contrib.layers.tdm_sampler(
        x,
        negs,
        nodes,
        leaves,
        tree_travel_attr=fluid.ParamAttr(name="travel"),
        tree_layer_attr=fluid.ParamAttr(name="layer"),
        **kw,
    )


TREES = []


def start(exe, startup):
    """The startup program, then the tree (fluid 1.8.5's NumpyArrayInitializer has no int64)."""
    scope = fluid.global_scope()
    exe.run(startup)
    for name, value in zip(("travel", "layer"), TREES):
        scope.find_var(name).get_tensor().set(value, fluid.CPUPlace())


out = {}
cases = {
    "list": dict(negs=[1, 2, 3], output_list=True, seed=7),
    "flat": dict(negs=[1, 2, 3], output_list=False, seed=7),
    "no_positive": dict(negs=[1, 3, 5], output_list=False, output_positive=False, seed=11),
    "int64": dict(negs=[1, 2, 2], output_list=True, seed=3, tree_dtype="int64", dtype="int64"),
}
for name, kw in cases.items():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [None, 1], kw.get("tree_dtype", "int32"))
        negs = kw.pop("negs")
        travel = TRAVEL.astype(kw.get("tree_dtype", "int32"))
        layer = LAYER.astype(kw.get("tree_dtype", "int32"))
        got = sampler(x, negs, [2, 4, 8], 8, travel, layer, **kw)
    exe = fluid.Executor(fluid.CPUPlace())
    start(exe, startup)
    fetch = [v for part in got for v in part] if kw["output_list"] else list(got)
    ids = np.array([[0], [5], [7], [3], [0]], kw.get("tree_dtype", "int32"))
    runs = [[np.array(v).tolist() for v in exe.run(main, feed={"x": ids}, fetch_list=fetch)] for _ in range(2)]
    out[name] = {
        "runs": runs,
        "shapes": [list(v.shape) for v in fetch],
        "dtypes": [str(v.dtype) for v in fetch],
        "ops": [op.type for op in main.global_block().ops],
        "attrs": {
            k: main.global_block().ops[0].attr(k)
            for k in ("neg_samples_num_list", "layer_offset_lod", "seed", "output_positive", "dtype")
        },
        "params": [[p.name, list(p.shape), str(p.dtype)] for p in main.global_block().all_parameters()],
    }

main, startup = fluid.Program(), fluid.Program()
with fluid.program_guard(main, startup):
    x = fluid.data("x", [None, 1], "int32")
    travel = np.array([[1 + (i % 2), 3 + i] for i in range(BIG)], "int32")
    layer = np.arange(1, 3 + BIG, dtype="int32").reshape(-1, 1)
    got = sampler(x, [1, 9], [2, BIG], BIG, travel, layer, output_list=False, seed=123456789)
exe = fluid.Executor(fluid.CPUPlace())
start(exe, startup)
out["wide"] = np.array(
    exe.run(main, feed={"x": np.arange(0, BIG, 37, dtype="int32").reshape(-1, 1)}, fetch_list=[got[0]])[0]
).tolist()


def bad(negs, nodes, leaves, **kw):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [None, 1], "int32")
        sampler(x, negs, nodes, leaves, TRAVEL, LAYER, **kw)


out["errors"] = errors_of(
    [
        lambda: bad([1, 2], [2, 4, 8], 8),
        lambda: bad([2, 2, 3], [2, 4, 8], 8),
        lambda: bad([1, 2, 3], [2, 4, 8], 14),
        lambda: bad([1, 2, 3], [2, 4, 8], 8, dtype="float32"),
    ]
)
print(json.dumps(out, sort_keys=True))
