# Golden: fc net with Momentum, L2Decay, a per-parameter L1Decay, GradientClipByGlobalNorm, a
# per-parameter learning rate and exponential_decay, 20 steps.
import numpy as np
import paddle.fluid as fluid
from train_common import train

rng = np.random.RandomState(5)
X = rng.uniform(-1, 1, (16, 6)).astype("float32")
Y = rng.uniform(-1, 1, (16, 2)).astype("float32")
x = fluid.data(name="x", shape=[None, 6], dtype="float32")
y = fluid.data(name="y", shape=[None, 2], dtype="float32")
w1 = fluid.ParamAttr(
    initializer=fluid.initializer.NumpyArrayInitializer(rng.uniform(-1, 1, (6, 5)).astype("float32")),
    regularizer=fluid.regularizer.L1Decay(0.01),
    learning_rate=0.5,
)
h = fluid.layers.fc(x, 5, act="tanh", param_attr=w1)
w2 = fluid.ParamAttr(initializer=fluid.initializer.NumpyArrayInitializer(rng.uniform(-1, 1, (5, 2)).astype("float32")))
pred = fluid.layers.fc(h, 2, param_attr=w2)
loss = fluid.layers.mean(fluid.layers.square_error_cost(pred, y))
lr = fluid.layers.exponential_decay(learning_rate=0.2, decay_steps=5, decay_rate=0.5, staircase=True)
opt = fluid.optimizer.Momentum(
    learning_rate=lr,
    momentum=0.9,
    regularization=fluid.regularizer.L2Decay(0.05),
    grad_clip=fluid.clip.GradientClipByGlobalNorm(0.5),
)
opt.minimize(loss)
train(loss, lambda i: {"x": X, "y": Y}, extra=[lr])
