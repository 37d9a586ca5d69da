# fluid 1.8 dygraph data parallelism: each worker trains on its share of a fixed batch with
# DataParallel (scale_loss, apply_collective_grads) and saves the final parameters (rank 0) to OUT.npz;
# an is_sparse embedding's rows differ between the workers.
# usage: fluid_dygraph_data_parallel.py OUT
import sys

import numpy as np
import paddle.fluid as fluid
from paddle.fluid.dygraph import Linear, to_variable

OUT = sys.argv[1]
rng = np.random.RandomState(3)
X = rng.rand(3, 8, 6).astype("float32")
Y = rng.randint(0, 3, (3, 8, 1)).astype("int64")
IDS = rng.randint(0, 10, (3, 8)).astype("int64")


class Net(fluid.dygraph.Layer):
    def __init__(self):
        super().__init__()
        self.emb = fluid.dygraph.Embedding([10, 6], is_sparse=True)
        self.fc1, self.fc2 = Linear(6, 5, act="relu"), Linear(5, 3)

    def forward(self, x, ids):
        return self.fc2(self.fc1(x + self.emb(ids)))


env = fluid.dygraph.ParallelEnv()
with fluid.dygraph.guard(fluid.CPUPlace()):
    strategy = fluid.dygraph.prepare_context()
    model = Net()
    for k, p in enumerate(model.parameters()):
        p.set_value(np.random.RandomState(k).uniform(-1, 1, p.shape).astype("float32"))
    if strategy is not None:
        model = fluid.dygraph.DataParallel(model, strategy)
    opt = fluid.optimizer.Momentum(0.2, 0.9, parameter_list=model.parameters())
    per = 8 // env.nranks
    for step in range(3):
        x = X[step, env.local_rank * per : (env.local_rank + 1) * per]
        y = Y[step, env.local_rank * per : (env.local_rank + 1) * per]
        ids = IDS[step, env.local_rank * per : (env.local_rank + 1) * per]
        logits = model(to_variable(x), to_variable(ids))
        loss = fluid.layers.mean(fluid.layers.softmax_with_cross_entropy(logits, to_variable(y)))
        if strategy is not None:
            loss = model.scale_loss(loss)
            loss.backward()
            model.apply_collective_grads()
        else:
            loss.backward()
        opt.minimize(loss)
        model.clear_gradients()
    if env.local_rank == 0:
        np.savez(OUT, **{k: v.numpy() for k, v in model.state_dict().items()})
    print("rank", env.local_rank, "of", env.nranks, "done")
