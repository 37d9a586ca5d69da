# Golden: linear regression ("fit a line") with SGD, 20 steps on fixed data and weights.
import numpy as np
import paddle.fluid as fluid
from train_common import init, train

rng = np.random.RandomState(1)
X = rng.uniform(-1, 1, (32, 13)).astype("float32")
Y = (X @ rng.uniform(-2, 2, (13, 1)) + 0.3).astype("float32")
x = fluid.data(name="x", shape=[None, 13], dtype="float32")
y = fluid.data(name="y", shape=[None, 1], dtype="float32")
pred = fluid.layers.fc(input=x, size=1, act=None, param_attr=init(rng.uniform(-0.5, 0.5, (13, 1))))
cost = fluid.layers.square_error_cost(input=pred, label=y)
avg_cost = fluid.layers.mean(cost)
fluid.optimizer.SGD(learning_rate=0.05).minimize(avg_cost)
train(avg_cost, lambda i: {"x": X, "y": Y})
