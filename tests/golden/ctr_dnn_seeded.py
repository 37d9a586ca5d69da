"""PaddleRec's CTR-DNN as fluid 1.8 scripts built it (sparse embeddings of four LoD slots summed by
sequence_pool, dense features, fcs with Normal initializers, softmax, auc with a sliding window,
lazy-mode Adam) from Program.random_seed = 2020 alone: five steps' loss, auc and batch auc."""

import json

import numpy as np
import paddle.fluid as fluid

out = {}
sparse_feature_dim, embedding_size, dense_feature_dim = 1000, 8, 13
main, startup = fluid.Program(), fluid.Program()
main.random_seed = startup.random_seed = 2020
with fluid.program_guard(main, startup):
    dense_input = fluid.data(name="dense_input", shape=[None, dense_feature_dim], dtype="float32")
    sparse_inputs = [fluid.data(name="C" + str(i), shape=[None, 1], lod_level=1, dtype="int64") for i in range(1, 5)]
    label = fluid.data(name="label", shape=[None, 1], dtype="int64")

    def embedding_layer(input):
        emb = fluid.layers.embedding(
            input=input,
            is_sparse=True,
            is_distributed=False,
            size=[sparse_feature_dim, embedding_size],
            param_attr=fluid.ParamAttr(name="SparseFeatFactors", initializer=fluid.initializer.Uniform()),
        )
        return fluid.layers.sequence_pool(input=emb, pool_type="sum")

    sparse_embed_seq = list(map(embedding_layer, sparse_inputs))
    concated = fluid.layers.concat(sparse_embed_seq + [dense_input], axis=1)
    fc = concated
    for size in (16, 8):
        fc = fluid.layers.fc(
            input=fc,
            size=size,
            act="relu",
            param_attr=fluid.ParamAttr(initializer=fluid.initializer.Normal(scale=1 / np.sqrt(fc.shape[1]))),
        )
    predict = fluid.layers.fc(
        input=fc,
        size=2,
        act="softmax",
        param_attr=fluid.ParamAttr(initializer=fluid.initializer.Normal(scale=1 / np.sqrt(fc.shape[1]))),
    )
    cost = fluid.layers.cross_entropy(input=predict, label=label)
    avg_cost = fluid.layers.reduce_sum(cost)
    auc_var, batch_auc_var, _ = fluid.layers.auc(input=predict, label=label, num_thresholds=2**12, slide_steps=20)
    fluid.optimizer.Adam(learning_rate=1e-3, lazy_mode=True).minimize(avg_cost)
exe = fluid.Executor(fluid.CPUPlace())
exe.run(startup)
rng = np.random.RandomState(0)
place = fluid.CPUPlace()
res = []
for _ in range(5):
    feed = {
        "dense_input": rng.uniform(0, 1, (8, 13)).astype("float32"),
        "label": rng.randint(0, 2, (8, 1)).astype("int64"),
    }
    for i in range(1, 5):
        lens = [int(v) for v in rng.randint(1, 3, 8)]
        feed["C%d" % i] = fluid.create_lod_tensor(
            rng.randint(0, sparse_feature_dim, (sum(lens), 1)).astype("int64"), [lens], place
        )
    res.append(
        [
            round(float(np.asarray(v).reshape(-1)[0]), 5)
            for v in exe.run(main, feed=feed, fetch_list=[avg_cost, auc_var, batch_auc_var])
        ]
    )
out["steps"] = res
print(json.dumps(out))
