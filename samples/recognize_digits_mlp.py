# A fluid 1.8 "recognize digits" training script with a multi-layer perceptron, as legacy users
# wrote them, on paddle.dataset.mnist. Needs the data in ~/.cache/paddle/dataset/mnist/ (generated
# stand-in: python -m fluidcompat.dataset.synthetic). Prints the test accuracy after each pass.
import numpy as np
import paddle
import paddle.fluid as fluid

BATCH_SIZE = 64
PASS_NUM = 3

img = fluid.data(name='img', shape=[None, 1, 28, 28], dtype='float32')
label = fluid.data(name='label', shape=[None, 1], dtype='int64')
hidden = fluid.layers.fc(input=img, size=200, act='relu')
hidden = fluid.layers.fc(input=hidden, size=200, act='relu')
prediction = fluid.layers.fc(input=hidden, size=10, act='softmax')
loss = fluid.layers.cross_entropy(input=prediction, label=label)
avg_loss = fluid.layers.mean(loss)
acc = fluid.layers.accuracy(input=prediction, label=label)

test_program = fluid.default_main_program().clone(for_test=True)
optimizer = fluid.optimizer.Adam(learning_rate=0.001)
optimizer.minimize(avg_loss)

train_reader = paddle.batch(paddle.reader.shuffle(paddle.dataset.mnist.train(), buf_size=500), batch_size=BATCH_SIZE)
test_reader = paddle.batch(paddle.dataset.mnist.test(), batch_size=BATCH_SIZE)

place = fluid.CPUPlace()
exe = fluid.Executor(place)
exe.run(fluid.default_startup_program())
feeder = fluid.DataFeeder(feed_list=[img, label], place=place)

for pass_id in range(PASS_NUM):
    for step_id, data in enumerate(train_reader()):
        metrics = exe.run(fluid.default_main_program(), feed=feeder.feed(data), fetch_list=[avg_loss, acc])
        if step_id % 50 == 0:
            print("pass %d, step %d, loss %.4f, acc %.4f" % (pass_id, step_id, metrics[0], metrics[1]))
    accs, weights = [], []
    for data in test_reader():
        acc_np, = exe.run(test_program, feed=feeder.feed(data), fetch_list=[acc])
        accs.append(float(acc_np))
        weights.append(len(data))
    print("pass %d test accuracy %.4f" % (pass_id, np.average(accs, weights=weights)))
