# Golden: the device_guard tutorial's embedding program (seed 000) trained by SGD for 20 steps, with
# a 1,000 x 150 table set from numpy (argv[1] == "sparse" for is_sparse=True).
import sys

import numpy as np
import paddle.fluid as fluid
from train_common import init, train

sparse = len(sys.argv) > 1 and sys.argv[1] == "sparse"
rng = np.random.RandomState(4)
table = rng.uniform(-0.1, 0.1, (1000, 150))
data = fluid.layers.fill_constant(shape=[1], value=128, dtype="int64")
label = fluid.layers.fill_constant(shape=[1, 150], value=0.5, dtype="float32")
with fluid.device_guard("cpu"):
    emb = fluid.embedding(input=data, size=(1000, 150), dtype="float32", is_sparse=sparse, param_attr=init(table))
out = fluid.layers.l2_normalize(x=emb, axis=-1)
cost = fluid.layers.square_error_cost(input=out, label=label)
avg_cost = fluid.layers.mean(cost)
sgd_optimizer = fluid.optimizer.SGD(learning_rate=0.5)
sgd_optimizer.minimize(avg_cost)
train(avg_cost, lambda i: {}, extra=[emb])
