"""The LoD rank table of fluid 1.x's hand-written dynamic RNNs: lod_rank_table (sequences by length,
longest first, ties in order), max_sequence_len, reorder_lod_tensor_by_rank on a 1-level and a
2-level LoD tensor and on a plain tensor (a row a sequence), and its gradient. No empty sequence:
fluid 1.8.5 failed on one ("The start row index must be lesser than the end row index"). Prints
JSON; run under fluid 1.8.5 (tools/fluid18) it wrote lod_rank_table.json."""

import json

import numpy as np
import paddle.fluid as fluid
from _golden import flat
from paddle.fluid.layers import control_flow as cf

L = fluid.layers
place = fluid.CPUPlace()
results = {}


main, startup = fluid.Program(), fluid.Program()
with fluid.program_guard(main, startup):
    x = fluid.data("x", [None, 2], "float32", lod_level=1)
    x.stop_gradient = False
    y = fluid.data("y", [None, 1], "float32", lod_level=2)
    plain = fluid.data("p", [4, 3], "float32")
    table = cf.lod_rank_table(x, level=0)
    table_y = cf.lod_rank_table(y, level=0)
    longest = cf.max_sequence_len(table)
    rx = L.reorder_lod_tensor_by_rank(x, table)
    ry = L.reorder_lod_tensor_by_rank(y, table_y)
    rp = L.reorder_lod_tensor_by_rank(plain, table)
    fluid.backward.append_backward(L.reduce_sum(rx * L.assign(np.arange(18, dtype="float32").reshape(9, 2))))
xv = np.arange(18, dtype="float32").reshape(9, 2) / 10
feed = {
    "x": fluid.create_lod_tensor(xv, [[2, 4, 1, 2]], place),
    "y": fluid.create_lod_tensor(np.arange(7, dtype="float32").reshape(7, 1), [[1, 3], [2, 1, 1, 3]], place),
    "p": np.arange(12, dtype="float32").reshape(4, 3),
}
rs = fluid.Executor(place).run(main, feed=feed, fetch_list=[longest, rx, ry, rp, "x@GRAD"], return_numpy=False)
results["rank_table"] = [flat(r) for r in rs]
print(json.dumps(results, sort_keys=True))
