"""fluid.contrib.layers.ctr_metric_bundle as fluid 1.8.5 had it: the six accumulators (squared error,
absolute error, predicted probability sum, sigmoid sum, positives, instances) over three batches,
their names and shapes, and the squared_l2_norm / l1_norm ops with their gradients. Prints JSON; run
under fluid 1.8.5 (tools/fluid18) it wrote ctr_metric_bundle.json."""

import json

import numpy as np
import paddle.fluid as fluid
from paddle.fluid.contrib.layers import ctr_metric_bundle

L = fluid.layers
main, startup = fluid.Program(), fluid.Program()
with fluid.program_guard(main, startup):
    prob = fluid.data("prob", [None, 1], "float32")
    label = fluid.data("label", [None, 1], "float32")
    metrics = ctr_metric_bundle(prob, label)
    x = fluid.data("x", [2, 3], "float32")
    x.stop_gradient = False
    block = main.global_block()
    sq = block.create_var(name="sq", dtype="float32")
    l1 = block.create_var(name="l1", dtype="float32")
    block.append_op(type="squared_l2_norm", inputs={"X": [x]}, outputs={"Out": [sq]})
    block.append_op(type="l1_norm", inputs={"X": [x]}, outputs={"Out": [l1]})
    fluid.backward.append_backward(L.elementwise_add(sq, l1 * 3.0))
exe = fluid.Executor(fluid.CPUPlace())
exe.run(startup)
rng = np.random.RandomState(0)
xv = np.array([[0.5, -1.0, 2.0], [-0.25, 1.5, -3.0]], "float32")
runs = []
for n in (4, 3, 5):
    feed = {"prob": rng.rand(n, 1).astype("float32"), "label": rng.randint(0, 2, (n, 1)).astype("float32"), "x": xv}
    got = exe.run(main, feed=feed, fetch_list=list(metrics) + [sq, l1, "x@GRAD"])
    runs.append([np.round(np.array(g).astype("float64").ravel(), 5).tolist() for g in got])
print(
    json.dumps(
        {"names": [m.name for m in metrics], "shapes": [list(m.shape) for m in metrics], "runs": runs}, sort_keys=True
    )
)
