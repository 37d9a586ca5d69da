# Golden script: Program.clone(for_test=True) before and after minimize: its ops, is_test attributes,
# variables (once backward and optimizer ops are gone, so is every variable no op uses: gradients,
# optimizer state, the learning rate, an unused data variable) and the files save_persistables
# writes for it; the test program's results. Prints a JSON report.
import json
import os
import shutil
import sys
import tempfile

import numpy as np
import paddle.fluid as fluid
import paddle.fluid.layers as L

main, start = fluid.Program(), fluid.Program()
start.random_seed = main.random_seed = 7
with fluid.program_guard(main, start):
    x = fluid.data("x", [None, 3], "float32")
    lab = fluid.data("lab", [None, 1], "int64")
    fluid.data("unused", [None, 3], "float32")
    L.create_global_var([1], 0.5, "float32", persistable=True, name="gvar")
    h = L.fc(x, 4, act="relu")
    b = L.batch_norm(L.dropout(h, 0.5))
    p = L.fc(b, 2, act="softmax")
    loss = L.mean(L.cross_entropy(p, lab))
    acc = L.accuracy(p, lab)
    before = main.clone(for_test=True)
    fluid.optimizer.Adam(0.01).minimize(loss)
    after = main.clone(for_test=True)
    plain = main.clone()
report = {}
for name, prog in [("before", before), ("after", after), ("plain", plain)]:
    block = prog.global_block()
    report[name] = {
        "ops": [op.type for op in block.ops],
        "is_test": [[op.type, op.attr("is_test")] for op in block.ops if op.has_attr("is_test")],
        "vars": sorted(block.vars),
        "persistables": sorted(v.name for v in prog.list_vars() if v.persistable),
    }
exe = fluid.Executor(fluid.CPUPlace())
exe.run(start)
for k, name in enumerate(sorted(v.name for v in main.global_block().all_parameters())):
    t = fluid.global_scope().find_var(name).get_tensor()
    t.set(
        0.5 + 0.4 * np.cos(np.arange(np.array(t).size) + k).reshape(np.array(t).shape).astype("float32"),
        fluid.CPUPlace(),
    )
X = np.linspace(-1, 1, 12).reshape(4, 3).astype("float32")
Y = np.array([[0], [1], [1], [0]], "int64")
report["test_run"] = [np.round(v, 5).tolist() for v in exe.run(after, feed={"x": X, "lab": Y}, fetch_list=[loss, acc])]
tmp = tempfile.mkdtemp()
fluid.io.save_persistables(exe, tmp, after)
report["saved_files"] = sorted(n for n in os.listdir(tmp) if n[0] != ".")
shutil.rmtree(tmp)
json.dump(report, sys.stdout, indent=1, sort_keys=True)
