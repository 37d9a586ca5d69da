# Golden script: auc's sliding-window and global counters over four batches (fluid's flat ring layout with
# a batch count; labels other than 0 and 1 ignored) and its error for a prediction above 1.
import json

import numpy as np
import paddle.fluid as fluid

p = fluid.data("p", [None, 2], "float32")
l = fluid.data("l", [None, 1], "int64")
a, b, st = fluid.layers.auc(p, l, num_thresholds=4, slide_steps=2)
exe = fluid.Executor(fluid.CPUPlace())
exe.run(fluid.default_startup_program())
rng = np.random.RandomState(1)
out = []
for _ in range(4):
    pv = rng.rand(5).astype("float32")
    pv = np.stack([1 - pv, pv], 1)
    lv = rng.randint(-1, 2, (5, 1)).astype("int64")
    r = exe.run(feed={"p": pv, "l": lv}, fetch_list=[a, b] + st)
    out.append([x.tolist() for x in r])
try:
    exe.run(feed={"p": np.array([[0.5, 1.5]], "float32"), "l": np.array([[1]], "int64")}, fetch_list=[a])
except Exception as e:  # noqa: BLE001
    out.append([line.split(": ", 1)[1] for line in str(e).splitlines() if "predict data" in line][:1])
print(json.dumps(out))
