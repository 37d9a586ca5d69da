"""The recognize-digits chapter of the fluid 1.8 book (simple_img_conv_pool x2 with batch_norm, fc
softmax, Adam) with Program.random_seed = 90 and no parameters set by hand: five training steps'
loss and accuracy and the for_test clone's predictions, from fluid's own initialization."""

import json

import numpy as np
import paddle.fluid as fluid

out = {}


def convolutional_neural_network(img):
    conv_pool_1 = fluid.nets.simple_img_conv_pool(
        input=img, filter_size=5, num_filters=20, pool_size=2, pool_stride=2, act="relu"
    )
    conv_pool_1 = fluid.layers.batch_norm(conv_pool_1)
    conv_pool_2 = fluid.nets.simple_img_conv_pool(
        input=conv_pool_1, filter_size=5, num_filters=50, pool_size=2, pool_stride=2, act="relu"
    )
    prediction = fluid.layers.fc(input=conv_pool_2, size=10, act="softmax")
    return prediction


main, startup = fluid.Program(), fluid.Program()
main.random_seed = startup.random_seed = 90
with fluid.program_guard(main, startup):
    img = fluid.data(name="img", shape=[None, 1, 28, 28], dtype="float32")
    label = fluid.data(name="label", shape=[None, 1], dtype="int64")
    prediction = convolutional_neural_network(img)
    loss = fluid.layers.cross_entropy(input=prediction, label=label)
    avg_loss = fluid.layers.mean(loss)
    acc = fluid.layers.accuracy(input=prediction, label=label)
    test_program = main.clone(for_test=True)
    fluid.optimizer.Adam(learning_rate=0.001).minimize(avg_loss)
exe = fluid.Executor(fluid.CPUPlace())
exe.run(startup)
rng = np.random.RandomState(0)
res = []
for _ in range(5):
    feed = {
        "img": rng.uniform(-1, 1, (16, 1, 28, 28)).astype("float32"),
        "label": rng.randint(0, 10, (16, 1)).astype("int64"),
    }
    res.append(
        [round(float(np.asarray(v).reshape(-1)[0]), 5) for v in exe.run(main, feed=feed, fetch_list=[avg_loss, acc])]
    )
out["train"] = res
feed = {
    "img": rng.uniform(-1, 1, (4, 1, 28, 28)).astype("float32"),
    "label": rng.randint(0, 10, (4, 1)).astype("int64"),
}
out["test"] = np.round(exe.run(test_program, feed=feed, fetch_list=[prediction])[0], 5).tolist()
print(json.dumps(out))
