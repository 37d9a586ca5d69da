# Golden: an MNIST-style MLP (784-64-10, relu, softmax, cross_entropy) trained by Adam, 20 steps.
import numpy as np
import paddle.fluid as fluid
from train_common import init, train

rng = np.random.RandomState(2)
IMG = rng.uniform(0, 1, (32, 784)).astype("float32")
LAB = rng.randint(0, 10, (32, 1)).astype("int64")
img = fluid.data(name="img", shape=[None, 784], dtype="float32")
label = fluid.data(name="label", shape=[None, 1], dtype="int64")
h = fluid.layers.fc(img, 64, act="relu", param_attr=init(rng.uniform(-0.08, 0.08, (784, 64))))
pred = fluid.layers.fc(h, 10, act="softmax", param_attr=init(rng.uniform(-0.3, 0.3, (64, 10))))
loss = fluid.layers.mean(fluid.layers.cross_entropy(input=pred, label=label))
acc = fluid.layers.accuracy(input=pred, label=label)
fluid.optimizer.Adam(learning_rate=0.01).minimize(loss)
train(loss, lambda i: {"img": IMG, "label": LAB}, extra=[acc])
