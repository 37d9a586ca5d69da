# Golden script: top_k and accuracy where predictions tie (uniform outputs, as from zero weights): fluid
# 1.8.5's CPU top_k keeps and orders equal values as libstdc++'s partial_sort does, and accuracy counts
# by those indices. top_k's values stop gradients, so gradients() of them gives [] (one input, none).
import json

import numpy as np
import paddle.fluid as fluid

L = fluid.layers
p = fluid.data("p", [None, 10], "float32")
p.stop_gradient = False
y = fluid.data("y", [None, 1], "int64")
fetch = [L.accuracy(p, y, k=1), L.accuracy(p, y, k=2), L.accuracy(p, y, k=5)]
for k in (1, 2, 3, 5, 10):
    values, indices = L.topk(p, k)
    fetch += [values, indices]
    fetch += fluid.backward.gradients([L.reduce_sum(values * L.assign(np.arange(k, dtype="float32") + 1))], [p])
x3 = fluid.data("x3", [2, 3, 6], "float32")
fetch += list(L.topk(x3, 3))
P = np.full((6, 10), 0.1, "float32")
P[1, 3:] = 0.2
P[2, 7] = 0.05
P[3] = [0.1, 0.3, 0.3, 0.3, 0, 0, 0, 0, 0, 0]
P[4] = np.arange(10) / 10.0  # no ties
P[5] = [1, 3, 3, 0, 3, 0, 2, 2, 3, 1]
Y = np.array([[0], [3], [9], [2], [9], [4]], "int64")
X3 = np.array([[1, 3, 3, 0, 3, 0], [5, 5, 5, 5, 5, 5], [2, 1, 0, -1, -2, -3]] * 2, "float32").reshape(2, 3, 6)
exe = fluid.Executor(fluid.CPUPlace())
print(json.dumps([np.asarray(v).tolist() for v in exe.run(feed={"p": P, "y": Y, "x3": X3}, fetch_list=fetch)]))
