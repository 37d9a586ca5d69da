# From the user's documents (seed 003, devices chapter): single-GPU training of the MNIST model with
# the Paddle 2.x dynamic API. The seed's lines of train() are unchanged; its "..." is filled with the
# chapter's training loop, and the data comes from paddle.dataset.mnist (generated stand-in:
# python -m fluidcompat.dataset.synthetic) instead of the course's ./work/mnist.json.gz. The epoch line
# prints no device: under `fluidcompat run --device cpu` the script still asks for (and
# paddle.device.get_device() names) gpu:0, while the work runs on the CPU.
import time

import numpy as np
import paddle
from paddle.nn import Conv2D, MaxPool2D, Linear

import paddle.nn.functional as F

BATCH_SIZE = 100
EPOCH_NUM = 5
SAMPLES = 5000


class MnistDataset(paddle.io.Dataset):
    def __init__(self, mode):
        reader = paddle.dataset.mnist.train() if mode == 'train' else paddle.dataset.mnist.test()
        self.imgs, self.labels = [], []
        for i, (img, label) in enumerate(reader()):
            if i == SAMPLES:
                break
            self.imgs.append(np.reshape(img, [1, 28, 28]).astype('float32'))
            self.labels.append(np.reshape(label, [1]).astype('int64'))

    def __getitem__(self, idx):
        return self.imgs[idx], self.labels[idx]

    def __len__(self):
        return len(self.imgs)


train_loader = paddle.io.DataLoader(MnistDataset(mode='train'), batch_size=BATCH_SIZE, shuffle=True, drop_last=True)
eval_loader = paddle.io.DataLoader(MnistDataset(mode='test'), batch_size=BATCH_SIZE, drop_last=False)


class MNIST(paddle.nn.Layer):
    def __init__(self):
        super(MNIST, self).__init__()
        self.conv1 = Conv2D(in_channels=1, out_channels=20, kernel_size=5, stride=1, padding=2)
        self.max_pool1 = MaxPool2D(kernel_size=2, stride=2)
        self.conv2 = Conv2D(in_channels=20, out_channels=20, kernel_size=5, stride=1, padding=2)
        self.max_pool2 = MaxPool2D(kernel_size=2, stride=2)
        self.fc = Linear(in_features=980, out_features=10)

    def forward(self, inputs, label=None):
        x = self.conv1(inputs)
        x = F.relu(x)
        x = self.max_pool1(x)
        x = self.conv2(x)
        x = F.relu(x)
        x = self.max_pool2(x)
        x = paddle.reshape(x, [x.shape[0], 980])
        x = self.fc(x)
        if label is not None:
            acc = paddle.metric.accuracy(input=x, label=label)
            return x, acc
        return x


#仅优化算法的设置有所差别
def train(model):
    #开启GPU
    use_gpu = True
    paddle.device.set_device('gpu:0') if use_gpu else paddle.device.set_device('cpu')
    model.train()
    opt = paddle.optimizer.SGD(learning_rate=0.01, parameters=model.parameters())
    for epoch_id in range(EPOCH_NUM):
        start = time.time()
        for batch_id, data in enumerate(train_loader()):
            images, labels = data
            images = paddle.to_tensor(images)
            labels = paddle.to_tensor(labels)
            predicts, acc = model(images, labels)
            loss = F.cross_entropy(predicts, labels)
            avg_loss = paddle.mean(loss)
            if batch_id % 200 == 0:
                print("epoch: {}, batch: {}, loss is: {}, acc is {}".format(epoch_id, batch_id, avg_loss.numpy(), acc.numpy()))
            avg_loss.backward()
            opt.step()
            opt.clear_grad()
        print("epoch {} took {:.2f} s".format(epoch_id, time.time() - start))
    paddle.save(model.state_dict(), 'mnist.pdparams')


def evaluation(model):
    params_dict = paddle.load('mnist.pdparams')
    model.load_dict(params_dict)
    model.eval()
    acc_set = []
    for batch_id, data in enumerate(eval_loader()):
        images, labels = data
        images = paddle.to_tensor(images)
        labels = paddle.to_tensor(labels)
        predicts, acc = model(images, labels)
        acc_set.append(float(acc.numpy()))
    print("test accuracy: {:.4f}".format(np.mean(acc_set)))


paddle.seed(1)
np.random.seed(1)
model = MNIST()
train(model)
evaluation(model)
