# fluid.evaluator (fluid 1.x's in-program evaluators): ChunkEvaluator and EditDistance state names,
# per-batch metrics, accumulated eval() over two batches, and reset(). Prints lines.
import warnings

import numpy as np
import paddle.fluid as fluid

warnings.simplefilter("ignore")
main, startup = fluid.Program(), fluid.Program()
with fluid.program_guard(main, startup):
    pred = fluid.data("pred", [None, 1], "int64", lod_level=1)
    lab = fluid.data("lab", [None, 1], "int64", lod_level=1)
    chunk = fluid.evaluator.ChunkEvaluator(pred, lab, "IOB", 2)
    hyp = fluid.data("hyp", [None, 1], "int64", lod_level=1)
    ref = fluid.data("ref", [None, 1], "int64", lod_level=1)
    ed = fluid.evaluator.EditDistance(hyp, ref)
print([s.name for s in chunk.states], [s.name for s in ed.states], len(chunk.metrics), len(ed.metrics))
exe = fluid.Executor(fluid.CPUPlace())
exe.run(startup)
chunk.reset(exe)
ed.reset(exe)
place = fluid.CPUPlace()
batches = [
    ([0, 1, 4, 2, 3, 4], [0, 1, 4, 2, 4, 4], [3, 3], [1, 2, 3, 4, 5], [1, 2, 4, 4], [3, 2], [2, 2]),
    ([2, 3, 0, 4], [2, 3, 0, 1], [2, 2], [7, 7, 7], [7, 7, 7], [1, 2], [1, 2]),
]
for p, l, plod, h, r, hlod, rlod in batches:
    feed = {
        "pred": fluid.create_lod_tensor(np.array(p, "int64").reshape(-1, 1), [plod], place),
        "lab": fluid.create_lod_tensor(np.array(l, "int64").reshape(-1, 1), [plod], place),
        "hyp": fluid.create_lod_tensor(np.array(h, "int64").reshape(-1, 1), [hlod], place),
        "ref": fluid.create_lod_tensor(np.array(r, "int64").reshape(-1, 1), [rlod], place),
    }
    out = exe.run(main, feed=feed, fetch_list=chunk.metrics + ed.metrics)
    print([np.round(np.array(o), 5).tolist() for o in out])
    print(
        [np.round(np.array(v), 5).tolist() for v in chunk.eval(exe)],
        [np.round(np.array(v), 5).tolist() for v in ed.eval(exe)],
    )
chunk.reset(exe)
print([np.round(np.array(v), 5).tolist() for v in chunk.eval(exe)])
