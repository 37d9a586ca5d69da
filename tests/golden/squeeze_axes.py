# Golden script: squeeze of axes of size 1 (known and unknown when built) and its refusal of an axis
# whose size is not 1, known when built (fluid 1.8.5 refuses when it runs) or only when run.
import json

import numpy as np
import paddle.fluid as fluid

L = fluid.layers
exe = fluid.Executor(fluid.CPUPlace())
out = {}


def attempt(name, build, feed):
    try:
        main = fluid.Program()
        with fluid.program_guard(main, fluid.Program()):
            y = build()
        value = exe.run(main, feed=feed, fetch_list=[y])[0]
        out[name] = [list(y.shape), list(value.shape)]
    except Exception as e:  # noqa: BLE001
        lines = [line.strip() for line in str(e).splitlines() if "should be equal to 1" in line]
        out[name] = ["error", lines[:1]]


ones = {"x": np.zeros((2, 1, 4, 1), "float32")}
attempt("known ones", lambda: L.squeeze(fluid.data("x", [2, 1, 4, 1], "float32"), [1, -1]), ones)
attempt("all ones", lambda: L.squeeze(fluid.data("x", [2, 1, 4, 1], "float32"), []), ones)
attempt("unknown one", lambda: L.squeeze(fluid.data("x", [2, -1, 4, 1], "float32"), [1]), ones)
attempt(
    "known three", lambda: L.squeeze(fluid.data("x", [2, 3, 4], "float32"), [1]), {"x": np.zeros((2, 3, 4), "float32")}
)
attempt(
    "unknown three",
    lambda: L.squeeze(fluid.data("x", [2, -1, 4], "float32"), [1]),
    {"x": np.zeros((2, 3, 4), "float32")},
)
print(json.dumps(out))
