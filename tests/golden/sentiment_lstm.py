"""The fluid book's stacked-LSTM sentiment classifier (understand_sentiment) over variable-length
word sequences, with fixed initial parameters: embedding (is_sparse=True), fc, dynamic_lstm stacked
three deep with alternating directions, max sequence_pool, softmax, Adagrad. Prints the loss and
accuracy of 8 training steps and the test program's predictions as JSON; run under fluid 1.8.5
(tools/fluid18) it wrote sentiment_lstm.json."""

import json

import numpy as np
import paddle.fluid as fluid

rng = np.random.RandomState(11)
DICT, EMB, HID, CLASSES, STACKED = 30, 8, 12, 2, 3


def init(*shape):
    values = rng.uniform(-0.3, 0.3, shape).astype("float32")
    return fluid.ParamAttr(initializer=fluid.initializer.NumpyArrayInitializer(values))


def stacked_lstm_net(data, label):
    emb = fluid.layers.embedding(input=data, size=[DICT, EMB], is_sparse=True, param_attr=init(DICT, EMB))
    fc1 = fluid.layers.fc(input=emb, size=HID, param_attr=init(EMB, HID), bias_attr=init(HID))
    lstm1, cell1 = fluid.layers.dynamic_lstm(
        input=fc1, size=HID, param_attr=init(HID // 4, HID), bias_attr=init(1, 7 * HID // 4)
    )
    inputs = [fc1, lstm1]
    for i in range(2, STACKED + 1):
        fc = fluid.layers.fc(
            input=inputs, size=HID, param_attr=[init(HID, HID), init(HID // 4, HID)], bias_attr=init(HID)
        )
        lstm, cell = fluid.layers.dynamic_lstm(
            input=fc,
            size=HID,
            is_reverse=(i % 2) == 0,
            param_attr=init(HID // 4, HID),
            bias_attr=init(1, 7 * HID // 4),
        )
        inputs = [fc, lstm]
    fc_last = fluid.layers.sequence_pool(input=inputs[0], pool_type="max")
    lstm_last = fluid.layers.sequence_pool(input=inputs[1], pool_type="max")
    prediction = fluid.layers.fc(
        input=[fc_last, lstm_last],
        size=CLASSES,
        act="softmax",
        param_attr=[init(HID, CLASSES), init(HID // 4, CLASSES)],
        bias_attr=init(CLASSES),
    )
    cost = fluid.layers.cross_entropy(input=prediction, label=label)
    avg_cost = fluid.layers.mean(cost)
    accuracy = fluid.layers.accuracy(input=prediction, label=label)
    return avg_cost, accuracy, prediction


main, start = fluid.Program(), fluid.Program()
with fluid.program_guard(main, start):
    data = fluid.data(name="words", shape=[None, 1], dtype="int64", lod_level=1)
    label = fluid.data(name="label", shape=[None, 1], dtype="int64")
    avg_cost, accuracy, prediction = stacked_lstm_net(data, label)
    test_program = main.clone(for_test=True)
    fluid.optimizer.Adagrad(learning_rate=0.05).minimize(avg_cost)

samples = []
for i in range(12):
    words = list(rng.randint(2, DICT, size=rng.randint(1, 7)))
    if i % 2:
        words[rng.randint(len(words))] = 1
    samples.append((words, [i % 2]))
feeder = fluid.DataFeeder(feed_list=[data, label], place=fluid.CPUPlace())
exe = fluid.Executor(fluid.CPUPlace())
exe.run(start)
results = {"train": []}
for step in range(8):
    batch = samples[(step % 2) * 6 : (step % 2) * 6 + 6]
    loss, acc = exe.run(main, feed=feeder.feed(batch), fetch_list=[avg_cost, accuracy])
    results["train"].append([float(np.array(loss).reshape(-1)[0]), float(np.array(acc).reshape(-1)[0])])
(pred,) = exe.run(test_program, feed=feeder.feed(samples), fetch_list=[prediction])
results["test"] = np.array(pred).reshape(-1).tolist()
print(json.dumps(results))
