# A fluid 1.8 "recognize digits" training script with a LeNet-style convolutional network, as legacy
# users wrote them, on paddle.dataset.mnist. Needs the data in ~/.cache/paddle/dataset/mnist/
# (generated stand-in: python -m fluidcompat.dataset.synthetic). Prints the test accuracy.
import numpy as np
import paddle
import paddle.fluid as fluid

BATCH_SIZE = 64

img = fluid.data(name='img', shape=[None, 1, 28, 28], dtype='float32')
label = fluid.data(name='label', shape=[None, 1], dtype='int64')
conv_pool_1 = fluid.nets.simple_img_conv_pool(
    input=img, filter_size=5, num_filters=20, pool_size=2, pool_stride=2, act="relu")
conv_pool_1 = fluid.layers.batch_norm(conv_pool_1)
conv_pool_2 = fluid.nets.simple_img_conv_pool(
    input=conv_pool_1, filter_size=5, num_filters=50, pool_size=2, pool_stride=2, act="relu")
prediction = fluid.layers.fc(input=conv_pool_2, size=10, act='softmax')
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

for step_id, data in enumerate(train_reader()):
    metrics = exe.run(fluid.default_main_program(), feed=feeder.feed(data), fetch_list=[avg_loss, acc])
    if step_id % 20 == 0:
        print("step %d, loss %.4f, acc %.4f" % (step_id, metrics[0], metrics[1]))
accs, weights = [], []
for data in test_reader():
    acc_np, = exe.run(test_program, feed=feeder.feed(data), fetch_list=[acc])
    accs.append(float(acc_np))
    weights.append(len(data))
print("test accuracy %.4f" % np.average(accs, weights=weights))
