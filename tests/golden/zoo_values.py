"""The values of ~170 layers of the layer zoo run on LoD sequences, each from its own pruned program,
with every float parameter set from numpy (seeded by its rank in name order): shape, the first 40
values and the sum. (Unseeded random layers draw afresh: the test leaves their values out.)"""

import json
import sys

import numpy as np
import paddle.fluid as fluid
from _layer_zoo import STOPS_FLUID, build, lod_feed, run_pruned, set_float_params

place = fluid.CPUPlace()
outs, startup = build(startup_too=True)
outs = {k: v for k, v in outs.items() if v is not None}
main = next(iter(outs.values())).block.program
feed = lod_feed(np.random.RandomState(0), place)
exe = fluid.Executor(place)
scope = fluid.Scope()
exe.run(startup, scope=scope)
set_float_params(main, scope, place)
found = {}
for k, v in sorted(outs.items()):
    if k in STOPS_FLUID:
        continue
    try:
        got = run_pruned(exe, main, [v], feed, scope)[0]
        a = np.array(got).astype("float64")
        found[k] = [list(a.shape), np.round(a.reshape(-1)[:40], 4).tolist(), round(float(np.nansum(a)), 3)]
    except Exception as e:
        found[k] = ["error", type(e).__name__]
json.dump(found, sys.stdout, indent=0, sort_keys=True)
