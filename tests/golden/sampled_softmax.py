# Golden script: sampled_softmax_with_cross_entropy with customized samples and probabilities (sample_logits +
# softmax_with_cross_entropy): loss and the logits' gradient as fluid 1.8.5 computed them.
import json

import numpy as np
import paddle.fluid as fluid
import paddle.fluid.layers as L

rng = np.random.RandomState(6)
logits = fluid.data("logits", [3, 6], "float32")
logits.stop_gradient = False
label = L.assign(np.array([[2], [0], [5]], "int64"))
samples = L.assign(np.array([[2, 1, 4, 0], [0, 3, 5, 1], [5, 0, 2, 2]], "int64"))
probs = L.assign(rng.uniform(0.1, 0.9, (3, 4)).astype("float32"))
out = L.sampled_softmax_with_cross_entropy(
    logits,
    label,
    num_samples=3,
    use_customized_samples=True,
    customized_samples=samples,
    customized_probabilities=probs,
)
g = fluid.gradients([L.reduce_sum(out)], [logits])[0]
exe = fluid.Executor(fluid.CPUPlace())
exe.run(fluid.default_startup_program())
res = exe.run(feed={"logits": rng.uniform(-1, 1, (3, 6)).astype("float32")}, fetch_list=[out, g], return_numpy=False)
print(json.dumps([[np.array(r).dtype.name, np.round(np.array(r).astype("float64"), 5).tolist()] for r in res]))
