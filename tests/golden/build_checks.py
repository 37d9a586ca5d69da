"""Issue 41 point 6: fluid 1.8.5's error types for bad layer arguments, a ragged feed and a truncated
dygraph checkpoint (build_checks.json, recorded with tools/fluid18; tests/test_build_checks.py runs it
under fluidcompat too). Prints one JSON object: case -> [error type name, its first message line
that says what is wrong] or ["ok", result shape]."""

import json
import os
import pickle
import re
import sys
import tempfile

import numpy as np
import paddle.fluid as fluid


def summary(e):
    lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
    for ln in lines:  # fluid's C++ errors: the line after "Error Message Summary"
        if re.match(r"^[A-Za-z]+Error: ", ln):
            return ln
    return lines[0] if lines else ""


def case(build):
    main, startup = fluid.Program(), fluid.Program()
    try:
        with fluid.program_guard(main, startup):
            got = build(main, startup)
    except Exception as e:  # noqa: BLE001
        return [type(e).__name__, summary(e), len(main.global_block().ops)]
    return ["ok", got, len(main.global_block().ops)]


def x():
    return fluid.data("x", [None, 2], "float32")


out = {}
for label, size in [("float", 3.5), ("bool", True), ("numpy_int", np.int64(3))]:
    out["fc_size_" + label] = case(lambda m, s, size=size: list(fluid.layers.fc(x(), size=size).shape))
for label, shape in [("minus2", [-2, 3]), ("minus1", [-1, 3]), ("zero", [0, 3])]:
    out["fill_constant_" + label] = case(
        lambda m, s, shape=shape: list(fluid.layers.fill_constant(shape, "float32", 1.0).shape)
    )


def ragged(main, startup):
    v = x()
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    return exe.run(main, feed={"x": [[1, 2], [3]]}, fetch_list=[v * 2])[0].tolist()


out["ragged_feed"] = case(ragged)

tmp = tempfile.mkdtemp()
with fluid.dygraph.guard():
    layer = fluid.dygraph.Linear(4, 3)
    fluid.save_dygraph(layer.state_dict(), os.path.join(tmp, "m"))
    path = os.path.join(tmp, "m.pdparams")
    with open(path, "rb") as f:
        data = f.read()
    with open(path, "wb") as f:
        f.write(data[: len(data) // 2])
    try:
        fluid.load_dygraph(os.path.join(tmp, "m"))
        out["load_dygraph_truncated"] = ["ok"]
    except (Exception, EOFError) as e:  # noqa: BLE001
        out["load_dygraph_truncated"] = [type(e).__name__, isinstance(e, pickle.UnpicklingError), path in str(e)]
json.dump(out, sys.stdout, indent=1, sort_keys=True)
print()
