# Golden: a small CNN (conv2d, batch_norm, relu, pool2d, fc) with Momentum, 20 steps.
import numpy as np
import paddle.fluid as fluid
from train_common import init, train

rng = np.random.RandomState(3)
IMG = rng.uniform(-1, 1, (16, 1, 8, 8)).astype("float32")
LAB = rng.randint(0, 10, (16, 1)).astype("int64")
img = fluid.data(name="img", shape=[None, 1, 8, 8], dtype="float32")
label = fluid.data(name="label", shape=[None, 1], dtype="int64")
conv = fluid.layers.conv2d(
    img, num_filters=4, filter_size=3, padding=1, param_attr=init(rng.uniform(-0.5, 0.5, (4, 1, 3, 3)))
)
bn = fluid.layers.batch_norm(conv, act="relu")
pool = fluid.layers.pool2d(bn, pool_size=2, pool_type="max", pool_stride=2)
logits = fluid.layers.fc(pool, 10, param_attr=init(rng.uniform(-0.3, 0.3, (64, 10))))
loss = fluid.layers.mean(fluid.layers.softmax_with_cross_entropy(logits, label))
fluid.optimizer.Momentum(learning_rate=0.05, momentum=0.9).minimize(loss)
train(loss, lambda i: {"img": IMG, "label": LAB}, extra=["batch_norm_0.w_1", "batch_norm_0.w_2"])
