# Golden script (tests/test_first_contact.py): which errors a script's run prints with fluid's notice
# "The following exception is not an EOF exception." before them. Each case is a script of its own, run
# by the command given as arguments (fluid 1.8.5: its python; fluidcompat: python -m fluidcompat run
# --device cpu); prints a JSON list of [case, the script failed, the notice was printed].
import json
import os
import subprocess
import sys
import tempfile
import textwrap

CASES = {
    "error in exe.run": """
        import numpy as np
        import paddle.fluid as fluid
        x = fluid.data("x", [None, 3])
        y = fluid.layers.fc(x, 2)
        exe = fluid.Executor(fluid.CPUPlace())
        exe.run(fluid.default_startup_program())
        exe.run(feed={"x": np.ones((2, 4), "float32")}, fetch_list=[y])
    """,
    "error building a layer": """
        import paddle.fluid as fluid
        x = fluid.data("x", [None, 3])
        fluid.layers.reshape(x, [-1, -1])
    """,
    "the script's own error after a run": """
        import paddle.fluid as fluid
        exe = fluid.Executor(fluid.CPUPlace())
        x = fluid.layers.fill_constant([1], "float32", 1.0)
        exe.run(fetch_list=[x])
        raise KeyError("boom")
    """,
}
out = []
with tempfile.TemporaryDirectory() as tmp:
    for i, (name, code) in enumerate(CASES.items()):
        path = os.path.join(tmp, "case%d.py" % i)
        with open(path, "w") as f:
            f.write(textwrap.dedent(code))
        proc = subprocess.run(sys.argv[1:] + [path], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        notice = "The following exception is not an EOF exception." in proc.stderr.decode()
        out.append([name, proc.returncode != 0, notice])
print(json.dumps(out))
