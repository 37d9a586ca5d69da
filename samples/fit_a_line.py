# A fluid 1.8 "fit a line" training script, as legacy users wrote them: linear regression on
# paddle.dataset.uci_housing. Needs the data in ~/.cache/paddle/dataset/uci_housing/ (generated
# stand-in: python -m fluidcompat.dataset.synthetic). Prints the test loss after each pass.
# Seeded (the fc's initial weights and the reader's shuffle), so that each run prints the same numbers.
import random

import numpy as np
import paddle
import paddle.fluid as fluid

BATCH_SIZE = 20
random.seed(90)  # paddle.reader.shuffle shuffles with Python's random
fluid.default_startup_program().random_seed = 90
fluid.default_main_program().random_seed = 90

train_reader = paddle.batch(paddle.reader.shuffle(paddle.dataset.uci_housing.train(), buf_size=500), batch_size=BATCH_SIZE)
test_reader = paddle.batch(paddle.dataset.uci_housing.test(), batch_size=BATCH_SIZE)

x = fluid.data(name='x', shape=[None, 13], dtype='float32')
y = fluid.data(name='y', shape=[None, 1], dtype='float32')
y_predict = fluid.layers.fc(input=x, size=1, act=None)
cost = fluid.layers.square_error_cost(input=y_predict, label=y)
avg_loss = fluid.layers.mean(cost)

main_program = fluid.default_main_program()
test_program = main_program.clone(for_test=True)
sgd_optimizer = fluid.optimizer.SGD(learning_rate=0.001)
sgd_optimizer.minimize(avg_loss)

place = fluid.CPUPlace()
exe = fluid.Executor(place)
exe.run(fluid.default_startup_program())
feeder = fluid.DataFeeder(place=place, feed_list=[x, y])


def test_loss():
    losses = []
    for data in test_reader():
        losses.append(exe.run(test_program, feed=feeder.feed(data), fetch_list=[avg_loss])[0])
    return float(np.mean(losses))


first = test_loss()
print("before training: test loss %.4f" % first)
for pass_id in range(40):
    for data in train_reader():
        exe.run(main_program, feed=feeder.feed(data), fetch_list=[avg_loss])
    if pass_id % 10 == 9:
        print("pass %d: test loss %.4f" % (pass_id, test_loss()))
last = test_loss()
print("test loss went from %.4f to %.4f" % (first, last))
