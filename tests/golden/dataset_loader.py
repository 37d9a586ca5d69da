# fluid.io.DataLoader.from_dataset over QueueDataset and InMemoryDataset files: the batches (values
# and LoDs, dense slots included) per epoch, drop_last, two places for an InMemoryDataset, training a
# small CTR-style model on the loader's feeds, and the errors.
import json
import os
import sys
import tempfile

import numpy as np
import paddle.fluid as fluid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _golden import errors_of  # noqa: E402

tmp = tempfile.mkdtemp()
files = []
rs = np.random.RandomState(0)
for name, rows in (("a.txt", 5), ("b.txt", 6)):
    path = os.path.join(tmp, name)
    with open(path, "w") as f:
        for _ in range(rows):
            n = rs.randint(1, 4)
            ids = " ".join(str(i) for i in rs.randint(0, 10, n))
            f.write("%d %s 1 %.3f 1 %d\n" % (n, ids, rs.rand(), rs.randint(0, 2)))
    files.append(path)


def show(data):
    return [[[k, np.array(v).reshape(-1).round(4).tolist(), v.lod()] for k, v in sorted(d.items())] for d in data]


out = {}
main, startup = fluid.Program(), fluid.Program()
with fluid.program_guard(main, startup):
    ids = fluid.data("ids", [None, 1], "int64", lod_level=1)
    dense = fluid.data("dense", [None, 1], "float32")
    label = fluid.data("label", [None, 1], "int64")
    emb = fluid.layers.embedding(ids, [10, 4], param_attr=fluid.ParamAttr(initializer=fluid.initializer.Constant(0.1)))
    pooled = fluid.layers.sequence_pool(emb, "sum")
    feat = fluid.layers.concat([pooled, dense], axis=1)
    logits = fluid.layers.fc(feat, 2, param_attr=fluid.ParamAttr(initializer=fluid.initializer.Constant(0.05)))
    loss = fluid.layers.mean(fluid.layers.softmax_with_cross_entropy(logits, label))
    fluid.optimizer.SGD(0.5).minimize(loss)


def make(kind, batch_size):
    dataset = fluid.DatasetFactory().create_dataset(kind)
    dataset.set_batch_size(batch_size)
    dataset.set_filelist(files)
    dataset.set_use_var([ids, dense, label])
    dataset.set_pipe_command("cat")
    if kind == "InMemoryDataset":
        dataset.load_into_memory()
    return dataset


for kind in ("QueueDataset", "InMemoryDataset"):
    for drop_last in (True, False):
        loader = fluid.io.DataLoader.from_dataset(make(kind, 3), fluid.cpu_places(1), drop_last=drop_last)
        out["%s_%s" % (kind, drop_last)] = [[show(data) for data in loader] for epoch in range(2)]
loader = fluid.io.DataLoader.from_dataset(make("InMemoryDataset", 2), fluid.cpu_places(2), drop_last=False)
out["two_places"] = [show(data) for data in loader()]

exe = fluid.Executor(fluid.CPUPlace())
exe.run(startup)
loader = fluid.io.DataLoader.from_dataset(make("QueueDataset", 4), fluid.cpu_places(1), drop_last=False)
losses = []
for _epoch in range(3):
    for data in loader:
        losses.append(round(float(exe.run(main, feed=data, fetch_list=[loss])[0][0]), 5))
out["losses"] = losses
out["errors"] = errors_of(
    [
        lambda: fluid.io.DataLoader.from_dataset([1, 2], fluid.cpu_places(1)),
        lambda: fluid.io.DataLoader.from_dataset(make("QueueDataset", 2), fluid.cpu_places(3)),
    ]
)
print(json.dumps(out, sort_keys=True))
