# fluid 1.8's map-style loader: fluid.io.Dataset / BatchSampler / DataLoader(dataset, ...) in static
# mode (feed dicts, return_list, a given batch_sampler, collate_fn, shuffle under a numpy seed) and in
# dygraph mode, training a small fc. Prints lines.
import numpy as np
import paddle.fluid as fluid
from paddle.fluid.io import BatchSampler, DataLoader, Dataset


class RandomDataset(Dataset):
    def __init__(self, n):
        self.n = n

    def __getitem__(self, idx):
        return np.full([4], idx, "float32"), np.array([idx % 3], "int64")

    def __len__(self):
        return self.n


print([b for b in BatchSampler(dataset=RandomDataset(10), batch_size=4)])
print(len(BatchSampler(indices=list(range(10)), batch_size=4, drop_last=True)))
print(len(BatchSampler(indices=list(range(10)), batch_size=4)))
np.random.seed(3)
shuffled = BatchSampler(dataset=RandomDataset(7), batch_size=3, shuffle=True)
print([b for b in shuffled], [b for b in shuffled])
image = fluid.data(name="image", shape=[None, 4], dtype="float32")
label = fluid.data(name="label", shape=[None, 1], dtype="int64")
fc = fluid.layers.fc(image, 3, param_attr=fluid.ParamAttr(initializer=fluid.initializer.Constant(0.1)))
loss = fluid.layers.reduce_mean(fluid.layers.softmax_with_cross_entropy(fc, label))
fluid.optimizer.SGD(learning_rate=1e-1).minimize(loss)
exe = fluid.Executor(fluid.CPUPlace())
exe.run(fluid.default_startup_program())
places = fluid.cpu_places(1)
loader = DataLoader(RandomDataset(10), feed_list=[image, label], places=places, batch_size=4)
print(len(loader))
for e in range(2):
    for i, data in enumerate(loader()):
        print(type(data).__name__, len(data), type(data[0]).__name__, sorted(data[0]))
        out = exe.run(fluid.default_main_program(), feed=data, fetch_list=[loss])
        print(e, i, np.round(out[0], 5).tolist())
np.random.seed(5)
loader = DataLoader(
    RandomDataset(5), feed_list=[image, label], places=places, batch_size=2, shuffle=True, drop_last=True
)
print(len(loader), [np.array(d[0]["label"]).ravel().tolist() for d in loader()])
sampler = BatchSampler(indices=[4, 0, 2], batch_size=2)
loader = DataLoader(RandomDataset(5), feed_list=[image, label], places=places, batch_sampler=sampler, num_workers=2)
print([np.array(d[0]["image"])[:, 0].tolist() for d in loader()])


def collate(samples):
    images = np.stack([s[0] for s in samples]) * 10
    labels = np.stack([s[1] for s in samples])
    return [images, labels]


loader = DataLoader(RandomDataset(3), feed_list=[image, label], places=places, batch_size=3, collate_fn=collate)
print([np.array(d[0]["image"]).tolist() for d in loader()])
loader = DataLoader(RandomDataset(3), feed_list=[image, label], places=places, batch_size=2, return_list=True)
for d in loader():
    print(type(d).__name__, len(d), type(d[0]).__name__, [np.array(t).shape for t in d[0]])
with fluid.dygraph.guard():
    dl = DataLoader(RandomDataset(5), places=fluid.CPUPlace(), batch_size=2, return_list=True)
    for x, y in dl():
        print(type(x).__name__, x.shape, y.numpy().ravel().tolist())
    linear = fluid.dygraph.Linear(4, 3, param_attr=fluid.ParamAttr(initializer=fluid.initializer.Constant(0.1)))
    opt = fluid.optimizer.SGD(learning_rate=0.1, parameter_list=linear.parameters())
    for x, y in DataLoader(RandomDataset(6), places=fluid.CPUPlace(), batch_size=3)():
        avg = fluid.layers.reduce_mean(fluid.layers.softmax_with_cross_entropy(linear(x), y))
        avg.backward()
        opt.minimize(avg)
        linear.clear_gradients()
        print("dygraph", np.round(avg.numpy(), 5).tolist())
