"""dynamic_decode as fluid 1.8's docs use it: BeamSearchDecoder over a GRUCell and an LSTMCell (with
embedding_fn and output_fn; is_test True and False; return_length; time-major output), and
BasicDecoder with TrainingHelper (two SGD steps through the loop, with and without
impute_finished) and GreedyEmbeddingHelper (max_step_num 6 and 2). Parameters are set by name from
seeded numpy draws. Prints JSON {case: [[fetch, dtype, shape, values...]]}; run under fluid 1.8.5
(tools/fluid18) it wrote dynamic_decode.json."""

import json

import numpy as np
import paddle.fluid as fluid

L = fluid.layers
results = {}


def emb(ids):
    return fluid.embedding(ids, size=[10, 5], param_attr=fluid.ParamAttr(name="trg_emb"))


def out_fn(x):
    attr = fluid.ParamAttr(name="out_w")
    return L.fc(x, size=10, num_flatten_dims=len(x.shape) - 1, param_attr=attr, bias_attr=False)


def run(case, build, feed, steps=1):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        names, fetch = build()
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    with fluid.scope_guard(scope):
        exe.run(startup)
        params = sorted(p.name for p in main.global_block().all_parameters())
        for i, name in enumerate(params):
            value = np.random.RandomState(100 + i).uniform(-1, 1, scope.find_var(name).get_tensor().shape())
            scope.find_var(name).get_tensor().set((value * 1.5).astype("float32"), fluid.CPUPlace())
        rows = [["params"] + params]
        for step in range(steps):
            vals = exe.run(main, feed=feed, fetch_list=fetch)
            for n, v in zip(names, vals):
                rows.append([f"{n}#{step}", str(v.dtype), list(v.shape)] + v.reshape(-1).astype("float64").tolist())
    results[case] = rows


enc_v = np.random.RandomState(7).uniform(-1, 1, (3, 6)).astype("float32")


def beam(max_step_num, beam_size, is_test, return_length, time_major, cell):
    def build():
        enc = fluid.data("enc", [None, 6], "float32")
        if cell == "gru":
            rnn_cell, init = L.GRUCell(hidden_size=6), enc
        else:
            rnn_cell, init = L.LSTMCell(hidden_size=6), [enc, L.scale(enc, 0.5)]
        decoder = L.BeamSearchDecoder(rnn_cell, 0, 1, beam_size, embedding_fn=emb, output_fn=out_fn)
        res = L.dynamic_decode(decoder, inits=init, max_step_num=max_step_num, is_test=is_test,
                               return_length=return_length, output_time_major=time_major)  # fmt: skip
        states = res[1]
        names = ["ids", "log_probs", "finished", "lengths"] + (["sequence_lengths"] if return_length else [])
        return names, [res[0], states.log_probs, states.finished, states.lengths] + list(res[2:])

    return build


run("beam_gru_b3_m5", beam(5, 3, False, True, False, "gru"), {"enc": enc_v})
run("beam_lstm_b4_m6", beam(6, 4, False, False, False, "lstm"), {"enc": enc_v})
run("beam_gru_b2_m8_train", beam(8, 2, False, True, True, "gru"), {"enc": enc_v})
run("beam_gru_b2_m8_test", beam(8, 2, True, True, True, "gru"), {"enc": enc_v})

rng = np.random.RandomState(3)
enc_b = rng.uniform(-1, 1, (3, 6)).astype("float32")
trg_v = rng.randint(0, 10, (3, 4)).astype("int64")
len_v = np.array([4, 2, 3], "int64")


def training(impute, time_major):
    def build():
        enc = fluid.data("enc", [None, 6], "float32")
        trg = fluid.data("trg", [None, 4], "int64")
        ln = fluid.data("len", [None], "int64")
        x = emb(trg)
        if time_major:
            x = L.transpose(x, [1, 0, 2])
        decoder = L.BasicDecoder(L.GRUCell(6), L.TrainingHelper(x, ln, time_major=time_major), output_fn=out_fn)
        outs, states, lens = L.dynamic_decode(decoder, inits=enc, impute_finished=impute, return_length=True,
                                              output_time_major=time_major)  # fmt: skip
        loss = L.reduce_mean(L.square(outs.cell_outputs)) + L.reduce_mean(states)
        fluid.optimizer.SGD(0.5).minimize(loss)
        w = fluid.default_main_program().global_block().var("out_w")
        names = ["logits", "ids", "states", "lens", "loss", "out_w"]
        return names, [outs.cell_outputs, outs.sample_ids, states, lens, loss, w]

    return build


run("train_impute", training(True, False), {"enc": enc_b, "trg": trg_v, "len": len_v}, steps=2)
run("train_time_major", training(False, True), {"enc": enc_b, "trg": trg_v, "len": len_v}, steps=2)


def greedy(max_step_num):
    def build():
        enc = fluid.data("enc", [None, 6], "float32")
        start = L.fill_constant_batch_size_like(enc, [-1], "int64", 0)
        decoder = L.BasicDecoder(L.GRUCell(6), L.GreedyEmbeddingHelper(emb, start, end_token=1), output_fn=out_fn)
        outs, states, lens = L.dynamic_decode(decoder, inits=enc, max_step_num=max_step_num, return_length=True)
        return ["logits", "ids", "states", "lens"], [outs.cell_outputs, outs.sample_ids, states, lens]

    return build


run("greedy_m6", greedy(6), {"enc": enc_b})
run("greedy_m2", greedy(2), {"enc": enc_b})
print(json.dumps(results, sort_keys=True))
