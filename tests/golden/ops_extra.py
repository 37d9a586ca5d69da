# Golden script: add_position_encoding, mean_iou, warpctc (padded, with lengths) and edit_distance
# (normalized and not) as fluid 1.8.5 computed them; prints dtype and values of each.
import json

import numpy as np
import paddle.fluid as fluid
import paddle.fluid.layers as L

rng = np.random.RandomState(3)
X = rng.uniform(-1, 1, (2, 3, 6)).astype("float32")
logits = rng.uniform(-1, 1, (5, 2, 4)).astype("float32")
out = {}
x = L.assign(X)
ape = L.add_position_encoding(x, 0.7, 1.3)
ape2 = L.add_position_encoding(L.assign(X[:, :, :2]), 1.0, 1.0)
pred = L.assign(np.array([0, 1, 2, 2, 1, 0, 3], "int32"))
lab = L.assign(np.array([0, 2, 2, 1, 1, 3, 3], "int32"))
miou, wrong, correct = L.mean_iou(pred, lab, 4)
lg = L.assign(logits)
lab2 = L.assign(np.array([[1, 2], [3, 3]], "int32"))
ctc = L.warpctc(
    lg,
    lab2,
    blank=0,
    input_length=L.assign(np.array([5, 4], "int64")),
    label_length=L.assign(np.array([2, 1], "int64")),
)
hyp = L.assign(np.array([[1, 2, 3, 0], [4, 5, 0, 0]], "int64"))
ref = L.assign(np.array([[1, 3, 3, 0], [4, 5, 6, 7]], "int64"))
ed, n = L.edit_distance(
    hyp,
    ref,
    normalized=True,
    input_length=L.assign(np.array([3, 2], "int64")),
    label_length=L.assign(np.array([3, 4], "int64")),
)
ed2, _ = L.edit_distance(
    hyp,
    ref,
    normalized=False,
    input_length=L.assign(np.array([3, 2], "int64")),
    label_length=L.assign(np.array([3, 4], "int64")),
)
res = fluid.Executor(fluid.CPUPlace()).run(fetch_list=[ape, ape2, miou, wrong, correct, ctc, ed, n, ed2])
print(json.dumps([[str(r.dtype), np.round(r.astype("float64"), 6).tolist()] for r in res]))
