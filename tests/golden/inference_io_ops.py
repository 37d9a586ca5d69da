# Golden: a model saved by save_inference_model, loaded back (load_inference_model and
# Program.parse_from_string of its __model__): the program's feed / fetch ops and variables, its runs,
# a re-save of the loaded program, and what fluid refused.
import json
import os
import tempfile

import numpy as np
import paddle.fluid as fluid
from _golden import errors_of

x = fluid.data(name="x", shape=[None, 3], dtype="float32")
h = fluid.layers.fc(x, 4, act="relu", param_attr=fluid.ParamAttr(initializer=fluid.initializer.Constant(0.1)))
y = fluid.layers.fc(h, 2, param_attr=fluid.ParamAttr(initializer=fluid.initializer.Constant(0.2)))
exe = fluid.Executor(fluid.CPUPlace())
exe.run(fluid.default_startup_program())
d = tempfile.mkdtemp()
fluid.io.save_inference_model(d, ["x"], [y], exe)
prog, feeds, fetches = fluid.io.load_inference_model(d, exe)
blk = prog.global_block()
X = np.arange(6).reshape(2, 3).astype("float32")
out = {
    "ops": [op.type for op in blk.ops],
    "vars": sorted(blk.vars),
    "io_ops": [
        [op.type, op.input_arg_names, op.output_arg_names, op.attr("col")]
        for op in blk.ops
        if op.type in ("feed", "fetch")
    ],
    "holders": [[str(blk.var(n).type), blk.var(n).persistable] for n in ("feed", "fetch")],
    "feeds": feeds,
    "fetches": [f.name for f in fetches],
    "run": np.round(exe.run(prog, feed={"x": X}, fetch_list=fetches)[0], 5).tolist(),
    "clone_ops": [op.type for op in prog.clone().global_block().ops],
    "test_clone_ops": [op.type for op in prog.clone(for_test=True).global_block().ops],
}
hidden = [op.output_arg_names[0] for op in blk.ops if op.type == "relu"][0]


def fetch(names):
    return lambda: exe.run(prog, feed={"x": X}, fetch_list=names)


refused = errors_of(
    [
        fetch([hidden]),  # a variable the fetch ops do not fetch
        fetch([fetches[0].name]),  # the fetch target by name
        fetch([]),
        lambda: exe.run(prog, feed={}, fetch_list=fetches),
    ]
)
out["refused"] = [e if e is None else e[0] for e in refused]
with open(os.path.join(d, "__model__"), "rb") as f:
    parsed = fluid.Program.parse_from_string(f.read())
target = [op for op in parsed.global_block().ops if op.type == "fetch"][0].input_arg_names[0]
out["parsed_ops"] = [op.type for op in parsed.global_block().ops]
out["parsed_run"] = np.round(
    exe.run(parsed, feed={"x": X}, fetch_list=[parsed.global_block().var(target)])[0], 5
).tolist()
# the loaded program saved again: its own feed and fetch ops give way to the new ones
d2 = tempfile.mkdtemp()
fluid.io.save_inference_model(d2, feeds, fetches, exe, main_program=prog)
prog2, feeds2, fetches2 = fluid.io.load_inference_model(d2, exe)
out["resaved_ops"] = [op.type for op in prog2.global_block().ops]
out["resaved"] = [feeds2, [f.name for f in fetches2]]
out["resaved_run"] = np.round(exe.run(prog2, feed={"x": X}, fetch_list=fetches2)[0], 5).tolist()
print(json.dumps(out))
