"""dynamic_lstmp (peepholes or not, reversed, clipped, initial states, other activations): the
parameter names and shapes, the projection and cell with their LoD, and the gradients of
sum(projection^2) for the input, the initial states and the parameters (not of the cell: fluid
1.8.5 dropped the cell's gradient). Prints JSON; run under fluid 1.8.5 (tools/fluid18) it wrote
sequence_lstmp.json."""

import json

import numpy as np
import paddle.fluid as fluid

L = fluid.layers
D, P = 3, 2
results = {}


def run(name, extra=None, **kw):
    main, start = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, start):
        x = fluid.data(name="x", shape=[None, 4 * D], dtype="float32", lod_level=1)
        x.stop_gradient = False
        if extra:
            kw["h_0"] = fluid.data(name="h0", shape=[None, P], dtype="float32")
            kw["h_0"].stop_gradient = False
            kw["c_0"] = fluid.data(name="c0", shape=[None, D], dtype="float32")
        proj, cell = L.dynamic_lstmp(
            x,
            4 * D,
            P,
            param_attr=fluid.initializer.Constant(0.15),
            bias_attr=fluid.initializer.Constant(-0.05),
            **kw,
        )
        fluid.backward.append_backward(L.reduce_sum(proj * proj))
        params = sorted(p.name for p in main.global_block().all_parameters())
        fetch = [proj, cell, "x@GRAD"] + (["h0@GRAD"] if extra else []) + [p + "@GRAD" for p in params]
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(start)
    xv = np.sin(np.arange(6 * 4 * D).reshape(6, 4 * D)).astype("float32")
    feed = {"x": fluid.create_lod_tensor(xv, [[2, 3, 1]], fluid.CPUPlace())}
    feed.update(extra or {})
    rs = exe.run(main, feed=feed, fetch_list=fetch, return_numpy=False)
    results[name] = {
        "params": [[p, list(main.global_block().var(p).shape)] for p in params],
        "vars": sorted(v for v in main.global_block().vars if v.startswith("lstmp")),
        "values": [[r.lod(), list(np.array(r).shape)] + np.array(r).reshape(-1).tolist() for r in rs],
    }


run("default")
run("no_peepholes_reverse", use_peepholes=False, is_reverse=True)
run("clipped", cell_clip=0.3, proj_clip=0.2)
run("activations", gate_activation="tanh", cell_activation="relu", candidate_activation="sigmoid",
    proj_activation="identity")  # fmt: skip
H0 = np.array([[0.1, -0.2], [0.3, 0.4], [-0.5, 0.2]], "float32")
C0 = np.array([[0.2, 0.1, -0.1], [-0.3, 0.1, 0.2], [0.5, -0.2, 0.0]], "float32")
run("initial_states", extra={"h0": H0, "c0": C0})
print(json.dumps(results, sort_keys=True))
