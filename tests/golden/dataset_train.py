"""fluid.DatasetFactory datasets and Executor.train_from_dataset / infer_from_dataset as fluid 1.8.5 ran
them: slot files (a sparse id slot, a dense slot, a label) written here, a QueueDataset (every batch
printed) and an InMemoryDataset (0 ids dropped when loaded; a pipe command rewriting labels),
and the errors. The trainer's prints, then a JSON line; run under fluid 1.8.5 (tools/fluid18) it wrote
dataset_train.txt."""

import json
import os
import sys
import tempfile

import numpy as np
import paddle.fluid as fluid
from _golden import errors_of

L = fluid.layers
folder = tempfile.mkdtemp()
rng = np.random.RandomState(0)
files = []
for f in range(2):
    files.append(os.path.join(folder, f"part-{f}.txt"))
    with open(files[-1], "w") as fh:
        for _ in range(7):
            n = rng.randint(1, 4)
            ids = rng.randint(0, 10, n)
            dense = rng.rand(3)
            fh.write(f"{n} " + " ".join(map(str, ids)) + " 3 " + " ".join(f"{v:.4f}" for v in dense))
            fh.write(f" 1 {rng.randint(0, 2)}\n")


def build():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        ids = fluid.data("ids", [None, 1], "int64", lod_level=1)
        dense = fluid.data("dense", [None, 3], "float32")
        label = fluid.data("label", [None, 1], "int64")
        table = fluid.ParamAttr(name="emb", initializer=fluid.initializer.Constant(0.1))
        emb = L.embedding(ids, [10, 4], param_attr=table)
        h = L.fc([L.sequence_pool(emb, "sum"), dense], 2, act="softmax", param_attr=fluid.initializer.Constant(0.2))
        loss = L.mean(L.cross_entropy(h, label))
        acc = L.accuracy(h, label)
        fluid.optimizer.SGD(0.1).minimize(loss)
    return main, startup, [ids, dense, label], loss, acc


results = {}
# print_period 1: with a longer period fluid 1.8.5 printed different batches from run to run
for kind, pipe in (("InMemoryDataset", "sed 's/ 1 1$/ 1 0/'"), ("QueueDataset", "cat")):
    main, startup, slots, loss, acc = build()
    scope = fluid.Scope()
    exe = fluid.Executor(fluid.CPUPlace())
    with fluid.scope_guard(scope):
        exe.run(startup)
        dataset = fluid.DatasetFactory().create_dataset(kind)
        dataset.set_use_var(slots)
        dataset.set_batch_size(4)
        dataset.set_thread(1)
        dataset.set_pipe_command(pipe)
        dataset.set_filelist(files)
        if kind == "InMemoryDataset":
            dataset.load_into_memory()
            results["memory_size"] = int(dataset.get_memory_data_size())
        sys.stdout.flush()
        exe.train_from_dataset(
            main, dataset, fetch_list=[slots[0], loss, acc], fetch_info=["ids", "loss", "acc"], print_period=1
        )
        if kind == "InMemoryDataset":
            exe.infer_from_dataset(main, dataset, fetch_list=[slots[1]], fetch_info=["dense"], print_period=1)
        sys.stdout.flush()
        results[kind] = [
            np.round(np.array(scope.find_var(n).get_tensor()).astype("float64").ravel(), 6).tolist()
            for n in ("emb", "fc_0.w_0", "fc_0.w_1", "fc_0.b_0")
        ]
results["errors"] = errors_of(
    (
        lambda: fluid.DatasetFactory().create_dataset("SlotDataset"),
        lambda: fluid.DatasetFactory().create_dataset("QueueDataset").local_shuffle(),
        lambda: fluid.DatasetFactory().create_dataset("QueueDataset").global_shuffle(),
        lambda: fluid.Executor(fluid.CPUPlace()).train_from_dataset(fluid.Program(), None),
    )
)
print(json.dumps(results, sort_keys=True))
