"""The label-semantic-roles chapter of the fluid 1.8 book (eight embeddings, a stack of four
dynamic_lstm alternating direction, fcs over [hidden, cell] tuples as the chapter builds them,
linear_chain_crf, crf_decoding, chunk_eval, SGD with exponential_decay) trained four steps on random
sentences: losses, decoded tags, chunk metrics, the transition weights and the frozen embedding."""

import json

import numpy as np
import paddle.fluid as fluid
from _golden import flat, set_params

word_dict_len, label_dict_len, pred_dict_len = 30, 7, 10
mark_dict_len = 2
word_dim = 8
mark_dim = 4
hidden_dim = 16
depth = 4
mix_hidden_lr = 1e-3
IS_SPARSE = True
embedding_name = "emb"
out = {}


def db_lstm(word, predicate, ctx_n2, ctx_n1, ctx_0, ctx_p1, ctx_p2, mark, **ignored):
    predicate_embedding = fluid.embedding(
        input=predicate, size=[pred_dict_len, word_dim], dtype="float32", is_sparse=IS_SPARSE, param_attr="vemb"
    )
    mark_embedding = fluid.embedding(input=mark, size=[mark_dict_len, mark_dim], dtype="float32", is_sparse=IS_SPARSE)
    word_input = [word, ctx_n2, ctx_n1, ctx_0, ctx_p1, ctx_p2]
    emb_layers = [
        fluid.embedding(
            size=[word_dict_len, word_dim], input=x, param_attr=fluid.ParamAttr(name=embedding_name, trainable=False)
        )
        for x in word_input
    ]
    emb_layers.append(predicate_embedding)
    emb_layers.append(mark_embedding)
    hidden_0_layers = [fluid.layers.fc(input=emb, size=hidden_dim, act="tanh") for emb in emb_layers]
    hidden_0 = fluid.layers.sums(input=hidden_0_layers)
    lstm_0 = fluid.layers.dynamic_lstm(
        input=hidden_0,
        size=hidden_dim,
        candidate_activation="relu",
        gate_activation="sigmoid",
        cell_activation="sigmoid",
    )
    input_tmp = [hidden_0, lstm_0]
    for i in range(1, depth):
        mix_hidden = fluid.layers.sums(
            input=[
                fluid.layers.fc(input=input_tmp[0], size=hidden_dim, act="tanh"),
                fluid.layers.fc(input=input_tmp[1], size=hidden_dim, act="tanh"),
            ]
        )
        lstm = fluid.layers.dynamic_lstm(
            input=mix_hidden,
            size=hidden_dim,
            candidate_activation="relu",
            gate_activation="sigmoid",
            cell_activation="sigmoid",
            is_reverse=((i % 2) == 1),
        )
        input_tmp = [mix_hidden, lstm]
    feature_out = fluid.layers.sums(
        input=[
            fluid.layers.fc(input=input_tmp[0], size=label_dict_len, act="tanh"),
            fluid.layers.fc(input=input_tmp[1], size=label_dict_len, act="tanh"),
        ]
    )
    return feature_out


main, startup = fluid.Program(), fluid.Program()
with fluid.program_guard(main, startup):
    word = fluid.data(name="word_data", shape=[None, 1], dtype="int64", lod_level=1)
    predicate = fluid.data(name="verb_data", shape=[None, 1], dtype="int64", lod_level=1)
    ctx_n2 = fluid.data(name="ctx_n2_data", shape=[None, 1], dtype="int64", lod_level=1)
    ctx_n1 = fluid.data(name="ctx_n1_data", shape=[None, 1], dtype="int64", lod_level=1)
    ctx_0 = fluid.data(name="ctx_0_data", shape=[None, 1], dtype="int64", lod_level=1)
    ctx_p1 = fluid.data(name="ctx_p1_data", shape=[None, 1], dtype="int64", lod_level=1)
    ctx_p2 = fluid.data(name="ctx_p2_data", shape=[None, 1], dtype="int64", lod_level=1)
    mark = fluid.data(name="mark_data", shape=[None, 1], dtype="int64", lod_level=1)
    feature_out = db_lstm(**locals())
    target = fluid.layers.data(name="target", shape=[1], dtype="int64", lod_level=1)
    crf_cost = fluid.layers.linear_chain_crf(
        input=feature_out, label=target, param_attr=fluid.ParamAttr(name="crfw", learning_rate=mix_hidden_lr)
    )
    avg_cost = fluid.layers.mean(crf_cost)
    sgd_optimizer = fluid.optimizer.SGD(
        learning_rate=fluid.layers.exponential_decay(learning_rate=0.5, decay_steps=2, decay_rate=0.5, staircase=True)
    )
    sgd_optimizer.minimize(avg_cost)
    crf_decode = fluid.layers.crf_decoding(input=feature_out, param_attr=fluid.ParamAttr(name="crfw"))
    (precision, recall, f1_score, num_infer_chunks, num_label_chunks, num_correct_chunks) = fluid.layers.chunk_eval(
        input=crf_decode, label=target, chunk_scheme="IOB", num_chunk_types=3
    )
out["ops"] = [op.type for op in main.global_block().ops]
place = fluid.CPUPlace()
exe = fluid.Executor(place)
scope = fluid.Scope()
feed_order = [
    "word_data",
    "ctx_n2_data",
    "ctx_n1_data",
    "ctx_0_data",
    "ctx_p1_data",
    "ctx_p2_data",
    "verb_data",
    "mark_data",
    "target",
]
rng = np.random.RandomState(5)


def sample():
    n = int(rng.randint(2, 6))
    ws = lambda hi: [int(v) for v in rng.randint(0, hi, n)]
    return [ws(word_dict_len) for _ in range(6)] + [ws(pred_dict_len), ws(2), ws(label_dict_len)]


with fluid.scope_guard(scope):
    exe.run(startup)
    set_params(main, scope)
    feeder = fluid.DataFeeder(feed_list=feed_order, place=place, program=main)
    res = []
    for _step in range(4):
        batch = [sample() for _ in range(3)]
        got = exe.run(
            main,
            feed=feeder.feed(batch),
            fetch_list=[avg_cost, crf_decode, precision, recall, f1_score, num_infer_chunks],
            return_numpy=False,
        )
        res.append([flat(t) for t in got])
    out["steps"] = res
    out["crfw"] = flat(scope.find_var("crfw").get_tensor())
    out["emb"] = flat(scope.find_var("emb").get_tensor())[:12]
    out["lr"] = [v.name for v in main.global_block().all_parameters()][:3]
print(json.dumps(out))
