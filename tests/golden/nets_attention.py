# Golden script: fluid.nets.scaled_dot_product_attention with one and two heads (two: each input
# projected by an fc first) and glu: parameters, ops and values from the same weights.
# Prints a JSON report.
import json
import sys

import numpy as np
import paddle.fluid as fluid

report = {}
for heads in (1, 2):
    main, start = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, start), fluid.unique_name.guard():
        q = fluid.data("q", [None, 5, 8], "float32")
        k = fluid.data("k", [None, 3, 8], "float32")
        v = fluid.data("v", [None, 3, 6], "float32")
        out = fluid.nets.scaled_dot_product_attention(q, k, v, num_heads=heads)
        glu = fluid.nets.glu(q, dim=-1)
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    with fluid.scope_guard(scope):
        exe.run(start)
        names = sorted(p.name for p in main.all_parameters())
        for i, name in enumerate(names):
            t = scope.find_var(name).get_tensor()
            shape = np.array(t).shape
            t.set(
                (np.sin(np.arange(int(np.prod(shape))) * 0.3 + i) * 0.5).reshape(shape).astype("float32"),
                fluid.CPUPlace(),
            )
        feed = {
            "q": np.cos(np.arange(80) * 0.1).reshape(2, 5, 8).astype("float32"),
            "k": np.sin(np.arange(48) * 0.2).reshape(2, 3, 8).astype("float32"),
            "v": np.cos(np.arange(36) * 0.3).reshape(2, 3, 6).astype("float32"),
        }
        o, g = exe.run(main, feed=feed, fetch_list=[out, glu])
    report[f"heads_{heads}"] = {
        "params": [[n, list(np.array(scope.find_var(n).get_tensor()).shape)] for n in names],
        "ops": [op.type for op in main.global_block().ops],
        "shape": list(out.shape),
        "out": np.round(o, 5).tolist(),
        "glu": np.round(g, 5).reshape(-1).tolist(),
    }
json.dump(report, sys.stdout, indent=1, sort_keys=True)
