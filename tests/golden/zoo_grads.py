"""Gradients of ~160 layers of the layer zoo run on LoD sequences with the same parameters (a loss of
sin and square of each output, differentiated by fluid.gradients in a clone of the zoo's program,
run pruned): each input's gradient (shape, leading values, sum) and the grad ops with the gradient
slots they write."""

import json
import sys

import numpy as np
import paddle.fluid as fluid
from _layer_zoo import (
    FAIL_ON_LOD_FEED,
    STOPS_FLUID,
    build,
    differentiate,
    float_outputs,
    lod_feed,
    run_pruned,
    set_float_params,
)

place = fluid.CPUPlace()
L = fluid.layers
outs, startup = build(startup_too=True)
outs = float_outputs(outs)
base = next(iter(outs.values())).block.program
feed = lod_feed(np.random.RandomState(0), place)
exe = fluid.Executor(place)
scope = fluid.Scope()
exe.run(startup, scope=scope)
set_float_params(base, scope, place)
found = {}
# (the random layers draw afresh, unseeded)
SKIP = STOPS_FLUID | FAIL_ON_LOD_FEED | {"dropout", "dropout_ui", "urbsl", "grbsl", "sampling_id", "sampled", "nce"}
for k, v in sorted(outs.items()):
    if k in SKIP:
        continue
    try:
        main, targets = differentiate(base, startup, v, lambda o: L.reduce_sum(L.sin(o) * 0.5 + o * o * 0.25))
        block = main.global_block()
        slots = sorted(
            {
                (op.type, tuple(sorted(s for s in op.output_names if op.output(s))))
                for op in block.ops
                if op.type.endswith("_grad")
            }
        )
        if not targets:
            found[k] = {"grad ops": [[t, list(s)] for t, s in slots]}
            continue
        got = run_pruned(exe, main, [g for _, g in targets], feed, scope)
        found[k] = {
            n: [
                list(np.array(t).shape),
                np.round(np.array(t).astype("float64").reshape(-1)[:24], 4).tolist(),
                round(float(np.nansum(np.array(t))), 3),
            ]
            for (n, _), t in zip(targets, got)
        }
        found[k]["grad ops"] = [[t, list(s)] for t, s in slots]
    except Exception as e:
        found[k] = ["error", type(e).__name__]
json.dump(found, sys.stdout, indent=0, sort_keys=True)
