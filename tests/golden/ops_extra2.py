# Golden script: im2sequence, ctc_greedy_decoder (padded, with lengths), auc (global and batch) over two
# runs, and inplace_abn with leaky_relu, as fluid 1.8.5 computed them; prints dtype and values of each.
import json

import numpy as np
import paddle.fluid as fluid
import paddle.fluid.layers as L

rng = np.random.RandomState(5)
img = L.assign(rng.uniform(-1, 1, (2, 2, 4, 5)).astype("float32"))
seq = L.im2sequence(img, filter_size=[2, 3], stride=[2, 1], padding=[1, 0, 0, 1])
probs = L.assign(rng.uniform(0, 1, (2, 6, 4)).astype("float32"))
dec, dec_len = L.ctc_greedy_decoder(
    probs, blank=0, input_length=L.assign(np.array([[6], [4]], "int64")), padding_value=-1
)
pred = L.assign(np.array([[0.3, 0.7], [0.8, 0.2], [0.4, 0.6], [0.1, 0.9], [0.65, 0.35]], "float32"))
lab = L.assign(np.array([[1], [0], [0], [1], [1]], "int64"))
a, b, stats = L.auc(pred, lab, num_thresholds=200)
abn = L.inplace_abn(img, act="leaky_relu", act_alpha=0.1)
exe = fluid.Executor(fluid.CPUPlace())
exe.run(fluid.default_startup_program())
res = [np.array(t) for t in exe.run(fetch_list=[seq, dec, dec_len, a, b, abn], return_numpy=False)]
res2 = exe.run(fetch_list=[a, b])
print(
    json.dumps([[str(np.asarray(r).dtype), np.round(np.asarray(r).astype("float64"), 5).tolist()] for r in res + res2])
)
