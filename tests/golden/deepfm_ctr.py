# A DeepFM click-through model (first-order and factorised embeddings with padding_idx, an L1-regularised
# table, fc tower, log_loss, auc) trained six steps with dense and sparse embeddings under Adam, lazy
# Adam, SGD and Adagrad: losses, auc, a test clone's predictions, then per parameter the sum of all
# but row 0 and row 0 itself (the padding row).
import json
import math

import numpy as np
import paddle.fluid as fluid
from _golden import set_params

num_field, num_feat, emb = 6, 50, 4
out = {}


def model(is_sparse):
    feat_idx = fluid.data(name="feat_idx", shape=[None, num_field], dtype="int64")
    feat_value = fluid.data(name="feat_value", shape=[None, num_field], dtype="float32")
    label = fluid.data(name="label", shape=[None, 1], dtype="float32")
    idx = fluid.layers.reshape(feat_idx, [-1, 1])
    val = fluid.layers.reshape(feat_value, [-1, num_field, 1])
    first_w = fluid.embedding(
        input=idx,
        is_sparse=is_sparse,
        size=[num_feat + 1, 1],
        padding_idx=0,
        param_attr=fluid.ParamAttr(
            initializer=fluid.initializer.TruncatedNormalInitializer(0.0, 0.1 / math.sqrt(10)),
            regularizer=fluid.regularizer.L1DecayRegularizer(1e-4),
        ),
    )
    first_w = fluid.layers.reshape(first_w, [-1, num_field, 1])
    y_first = fluid.layers.reduce_sum(first_w * val, 1)
    feat_emb = fluid.embedding(
        input=idx,
        is_sparse=is_sparse,
        size=[num_feat + 1, emb],
        padding_idx=0,
        param_attr=fluid.ParamAttr(initializer=fluid.initializer.TruncatedNormalInitializer(0.0, 0.1 / math.sqrt(10))),
    )
    feat_emb = fluid.layers.reshape(feat_emb, [-1, num_field, emb])
    feat_emb = fluid.layers.elementwise_mul(feat_emb, val)
    summed_sq = fluid.layers.square(fluid.layers.reduce_sum(feat_emb, 1))
    sq_summed = fluid.layers.reduce_sum(fluid.layers.square(feat_emb), 1)
    y_second = 0.5 * fluid.layers.reduce_sum(summed_sq - sq_summed, 1, keep_dim=True)
    y_dnn = fluid.layers.reshape(feat_emb, [-1, num_field * emb])
    for s in (16, 8):
        y_dnn = fluid.layers.fc(
            input=y_dnn,
            size=s,
            act="relu",
            param_attr=fluid.ParamAttr(initializer=fluid.initializer.TruncatedNormalInitializer(0.0, 0.1)),
            bias_attr=fluid.ParamAttr(initializer=fluid.initializer.TruncatedNormalInitializer(0.0, 0.1)),
        )
    y_dnn = fluid.layers.fc(input=y_dnn, size=1)
    predict = fluid.layers.sigmoid(y_first + y_second + y_dnn)
    cost = fluid.layers.log_loss(input=predict, label=label, epsilon=1e-7)
    avg_cost = fluid.layers.reduce_sum(cost)
    predict_2d = fluid.layers.concat([1 - predict, predict], 1)
    label_int = fluid.layers.cast(label, "int64")
    auc_var, batch_auc, auc_states = fluid.layers.auc(input=predict_2d, label=label_int, slide_steps=0)
    return avg_cost, auc_var, batch_auc, predict


rng = np.random.RandomState(0)
batches = []
for _ in range(6):
    idx = rng.randint(0, num_feat + 1, size=(8, num_field)).astype("int64")
    val = rng.rand(8, num_field).astype("float32")
    lab = (rng.rand(8, 1) > 0.5).astype("float32")
    batches.append({"feat_idx": idx, "feat_value": val, "label": lab})

for is_sparse in (False, True):
    for opt_name in ("adam", "lazy_adam", "sgd", "adagrad"):
        main, startup = fluid.Program(), fluid.Program()
        with fluid.program_guard(main, startup):
            with fluid.unique_name.guard():
                avg_cost, auc_var, batch_auc, predict = model(is_sparse)
                test_prog = main.clone(for_test=True)
                opt = {
                    "adam": lambda: fluid.optimizer.Adam(learning_rate=1e-2),
                    "lazy_adam": lambda: fluid.optimizer.Adam(learning_rate=1e-2, lazy_mode=True),
                    "sgd": lambda: fluid.optimizer.SGD(learning_rate=0.1),
                    "adagrad": lambda: fluid.optimizer.Adagrad(learning_rate=0.1),
                }[opt_name]()
                opt.minimize(avg_cost)
        exe = fluid.Executor(fluid.CPUPlace())
        scope = fluid.Scope()
        with fluid.scope_guard(scope):
            exe.run(startup)
            set_params(main, scope)
            rows = []
            for b in batches:
                l, a, ba = exe.run(main, feed=b, fetch_list=[avg_cost, auc_var, batch_auc])
                rows.append(
                    [
                        round(float(np.array(l).reshape(-1)[0]), 5),
                        round(float(np.array(a).reshape(-1)[0]), 5),
                        round(float(np.array(ba).reshape(-1)[0]), 5),
                    ]
                )
            (p,) = exe.run(test_prog, feed=batches[0], fetch_list=[predict])
            rows.append(np.round(np.array(p).reshape(-1), 5).tolist())
            params = sorted(p.name for p in main.global_block().all_parameters())
            rows.append(
                {
                    n: [
                        round(float(np.array(scope.find_var(n).get_tensor()).astype("float64")[1:].sum()), 4),
                        np.round(np.array(scope.find_var(n).get_tensor())[0].astype("float64"), 4).tolist(),
                    ]
                    for n in params
                }
            )
        out["%s_%s" % (is_sparse, opt_name)] = rows
print(json.dumps(out, sort_keys=True))
