"""Fluid 1.8 model programs as the fluid book and the 1.8 model zoo built them, for `bench/models.py`.

This one file runs unchanged under the real fluid 1.8.5 (Python 3.7) and under `fluidcompat run`:

    python fluid_models.py MODEL --steps 20 --warmup 3

It builds the model's training program, runs its startup program, then overwrites every parameter
with values drawn from a numpy generator seeded by the parameter's name and shape (so both engines
start from the same point), feeds batches generated the same way, and prints one JSON line: the
seconds of each timed step and the losses of the first steps.
"""

from __future__ import print_function

import argparse
import json
import sys
import time
import zlib

import numpy as np
import paddle.fluid as fluid

MODELS = {}


def model(name):
    def register(build):
        MODELS[name] = build
        return build

    return register


def _rng(*keys):
    return np.random.RandomState(zlib.crc32(repr(keys).encode()) & 0x7FFFFFFF)


def _lod_batch(rng, batch, vocab, min_len, max_len):
    """A LoD batch of word ids: (flat int64 column, [lengths])."""
    lens = rng.randint(min_len, max_len + 1, size=batch)
    flat = rng.randint(0, vocab, size=(int(lens.sum()), 1)).astype("int64")
    return flat, [lens.tolist()]


def _lod(place, flat, lengths):
    return fluid.create_lod_tensor(flat, lengths, place)


# ---------------------------------------------------------------- dense models


@model("fit_a_line")
def fit_a_line(place):
    x = fluid.layers.data(name="x", shape=[13], dtype="float32")
    y = fluid.layers.data(name="y", shape=[1], dtype="float32")
    pred = fluid.layers.fc(input=x, size=1, act=None)
    loss = fluid.layers.mean(fluid.layers.square_error_cost(input=pred, label=y))
    fluid.optimizer.SGD(learning_rate=0.001).minimize(loss)

    def feed(step):
        rng = _rng("fit_a_line", step)
        return {"x": rng.randn(20, 13).astype("float32"), "y": rng.randn(20, 1).astype("float32")}

    return loss, feed


@model("mnist_mlp")
def mnist_mlp(place):
    img = fluid.layers.data(name="img", shape=[1, 28, 28], dtype="float32")
    label = fluid.layers.data(name="label", shape=[1], dtype="int64")
    h = fluid.layers.fc(input=img, size=200, act="relu")
    h = fluid.layers.fc(input=h, size=200, act="relu")
    pred = fluid.layers.fc(input=h, size=10, act="softmax")
    loss = fluid.layers.mean(fluid.layers.cross_entropy(input=pred, label=label))
    fluid.optimizer.Adam(learning_rate=0.001).minimize(loss)
    return loss, _image_feed("mnist_mlp", 64, (1, 28, 28), 10)


def _image_feed(name, batch, shape, classes, image="img"):
    def feed(step):
        rng = _rng(name, step)
        return {
            image: rng.rand(batch, *shape).astype("float32"),
            "label": rng.randint(0, classes, size=(batch, 1)).astype("int64"),
        }

    return feed


@model("lenet")
def lenet(place):
    img = fluid.layers.data(name="img", shape=[1, 28, 28], dtype="float32")
    label = fluid.layers.data(name="label", shape=[1], dtype="int64")
    h = fluid.nets.simple_img_conv_pool(
        input=img, filter_size=5, num_filters=20, pool_size=2, pool_stride=2, act="relu"
    )
    h = fluid.layers.batch_norm(h)
    h = fluid.nets.simple_img_conv_pool(input=h, filter_size=5, num_filters=50, pool_size=2, pool_stride=2, act="relu")
    pred = fluid.layers.fc(input=h, size=10, act="softmax")
    loss = fluid.layers.mean(fluid.layers.cross_entropy(input=pred, label=label))
    fluid.optimizer.Adam(learning_rate=0.001).minimize(loss)
    return loss, _image_feed("lenet", 64, (1, 28, 28), 10)


def _conv_bn(x, ch_out, filter_size, stride, padding, act="relu"):
    h = fluid.layers.conv2d(
        input=x, num_filters=ch_out, filter_size=filter_size, stride=stride, padding=padding, bias_attr=False
    )
    return fluid.layers.batch_norm(input=h, act=act)


def _basicblock(x, ch_in, ch_out, stride):
    h = _conv_bn(x, ch_out, 3, stride, 1)
    h = _conv_bn(h, ch_out, 3, 1, 1, act=None)
    short = _conv_bn(x, ch_out, 1, stride, 0, act=None) if ch_in != ch_out else x
    return fluid.layers.elementwise_add(x=h, y=short, act="relu")


@model("resnet_cifar")
def resnet_cifar(place):
    # the book's resnet_cifar10 with depth 8 (one basic block a stage)
    img = fluid.layers.data(name="img", shape=[3, 32, 32], dtype="float32")
    label = fluid.layers.data(name="label", shape=[1], dtype="int64")
    h = _conv_bn(img, 16, 3, 1, 1)
    h = _basicblock(h, 16, 16, 1)
    h = _basicblock(h, 16, 32, 2)
    h = _basicblock(h, 32, 64, 2)
    h = fluid.layers.pool2d(input=h, pool_size=8, pool_type="avg", pool_stride=1)
    pred = fluid.layers.fc(input=h, size=10, act="softmax")
    loss = fluid.layers.mean(fluid.layers.cross_entropy(input=pred, label=label))
    fluid.optimizer.Momentum(learning_rate=0.01, momentum=0.9).minimize(loss)
    return loss, _image_feed("resnet_cifar", 32, (3, 32, 32), 10)


@model("vgg_cifar")
def vgg_cifar(place):
    # the book's vgg_bn_drop, two conv groups fewer, without dropout (its masks are random)
    img = fluid.layers.data(name="img", shape=[3, 32, 32], dtype="float32")
    label = fluid.layers.data(name="label", shape=[1], dtype="int64")
    h = img
    for filters, groups in ((32, 2), (64, 2), (128, 3)):
        h = fluid.nets.img_conv_group(
            input=h,
            pool_size=2,
            pool_stride=2,
            conv_num_filter=[filters] * groups,
            conv_filter_size=3,
            conv_act="relu",
            conv_with_batchnorm=True,
            pool_type="max",
        )
    h = fluid.layers.fc(input=h, size=256, act=None)
    h = fluid.layers.batch_norm(input=h, act="relu")
    pred = fluid.layers.fc(input=h, size=10, act="softmax")
    loss = fluid.layers.mean(fluid.layers.cross_entropy(input=pred, label=label))
    fluid.optimizer.Adam(learning_rate=0.001).minimize(loss)
    return loss, _image_feed("vgg_cifar", 32, (3, 32, 32), 10)


@model("word2vec")
def word2vec(place):
    dict_size, emb, batch = 2000, 32, 100
    words = [fluid.layers.data(name="w%d" % i, shape=[1], dtype="int64") for i in range(5)]
    embs = [
        fluid.layers.embedding(input=w, size=[dict_size, emb], dtype="float32", is_sparse=True, param_attr="shared_w")
        for w in words[:4]
    ]
    h = fluid.layers.concat(input=embs, axis=1)
    h = fluid.layers.fc(input=h, size=256, act="sigmoid")
    pred = fluid.layers.fc(input=h, size=dict_size, act="softmax")
    loss = fluid.layers.mean(fluid.layers.cross_entropy(input=pred, label=words[4]))
    fluid.optimizer.SGD(learning_rate=0.001).minimize(loss)

    def feed(step):
        rng = _rng("word2vec", step)
        return {"w%d" % i: rng.randint(0, dict_size, size=(batch, 1)).astype("int64") for i in range(5)}

    return loss, feed


# ---------------------------------------------------------------- LoD sequence models


def _seq_feed(name, place, batch, vocab, min_len, max_len, label_classes, word="words"):
    def feed(step):
        rng = _rng(name, step)
        flat, lens = _lod_batch(rng, batch, vocab, min_len, max_len)
        return {
            word: _lod(place, flat, lens),
            "label": rng.randint(0, label_classes, size=(batch, 1)).astype("int64"),
        }

    return feed


@model("movielens")
def movielens(place):
    batch = 256
    usr = fluid.layers.data(name="user_id", shape=[1], dtype="int64")
    gender = fluid.layers.data(name="gender_id", shape=[1], dtype="int64")
    age = fluid.layers.data(name="age_id", shape=[1], dtype="int64")
    job = fluid.layers.data(name="job_id", shape=[1], dtype="int64")
    usr_feats = []
    for var, size, dim in ((usr, 6041, 32), (gender, 2, 16), (age, 7, 16), (job, 21, 16)):
        e = fluid.layers.embedding(input=var, size=[size, dim], is_sparse=True)
        usr_feats.append(fluid.layers.fc(input=e, size=dim))
    usr_vec = fluid.layers.fc(input=fluid.layers.concat(input=usr_feats, axis=1), size=200, act="tanh")
    mov = fluid.layers.data(name="movie_id", shape=[1], dtype="int64")
    mov_fc = fluid.layers.fc(input=fluid.layers.embedding(input=mov, size=[3953, 32], is_sparse=True), size=32)
    cat = fluid.layers.data(name="category_id", shape=[1], dtype="int64", lod_level=1)
    cat_emb = fluid.layers.embedding(input=cat, size=[19, 32], is_sparse=True)
    cat_pool = fluid.layers.sequence_pool(input=cat_emb, pool_type="sum")
    title = fluid.layers.data(name="movie_title", shape=[1], dtype="int64", lod_level=1)
    title_emb = fluid.layers.embedding(input=title, size=[5175, 32], is_sparse=True)
    title_conv = fluid.nets.sequence_conv_pool(
        input=title_emb, num_filters=32, filter_size=3, act="tanh", pool_type="sum"
    )
    mov_vec = fluid.layers.fc(
        input=fluid.layers.concat(input=[mov_fc, cat_pool, title_conv], axis=1), size=200, act="tanh"
    )
    score = fluid.layers.scale(fluid.layers.cos_sim(X=usr_vec, Y=mov_vec), scale=5.0)
    label = fluid.layers.data(name="score", shape=[1], dtype="float32")
    loss = fluid.layers.mean(fluid.layers.square_error_cost(input=score, label=label))
    fluid.optimizer.SGD(learning_rate=0.2).minimize(loss)

    def feed(step):
        rng = _rng("movielens", step)
        cat_flat, cat_lens = _lod_batch(rng, batch, 19, 1, 4)
        title_flat, title_lens = _lod_batch(rng, batch, 5175, 1, 8)
        out = {
            "user_id": rng.randint(0, 6041, size=(batch, 1)),
            "gender_id": rng.randint(0, 2, size=(batch, 1)),
            "age_id": rng.randint(0, 7, size=(batch, 1)),
            "job_id": rng.randint(0, 21, size=(batch, 1)),
            "movie_id": rng.randint(0, 3953, size=(batch, 1)),
        }
        out = {k: v.astype("int64") for k, v in out.items()}
        out["category_id"] = _lod(place, cat_flat, cat_lens)
        out["movie_title"] = _lod(place, title_flat, title_lens)
        out["score"] = rng.randint(1, 6, size=(batch, 1)).astype("float32")
        return out

    return loss, feed


@model("text_cnn")
def text_cnn(place):
    # the book's understand_sentiment convolution_net
    vocab = 5000
    data = fluid.layers.data(name="words", shape=[1], dtype="int64", lod_level=1)
    label = fluid.layers.data(name="label", shape=[1], dtype="int64")
    emb = fluid.layers.embedding(input=data, size=[vocab, 128], is_sparse=True)
    conv3 = fluid.nets.sequence_conv_pool(input=emb, num_filters=128, filter_size=3, act="tanh", pool_type="sqrt")
    conv4 = fluid.nets.sequence_conv_pool(input=emb, num_filters=128, filter_size=4, act="tanh", pool_type="sqrt")
    pred = fluid.layers.fc(input=[conv3, conv4], size=2, act="softmax")
    loss = fluid.layers.mean(fluid.layers.cross_entropy(input=pred, label=label))
    fluid.optimizer.Adagrad(learning_rate=0.002).minimize(loss)
    return loss, _seq_feed("text_cnn", place, 64, vocab, 10, 100, 2)


@model("stacked_lstm")
def stacked_lstm(place):
    # the book's understand_sentiment stacked_lstm_net, stacked three deep
    vocab, hid = 5000, 128
    data = fluid.layers.data(name="words", shape=[1], dtype="int64", lod_level=1)
    label = fluid.layers.data(name="label", shape=[1], dtype="int64")
    emb = fluid.layers.embedding(input=data, size=[vocab, 128], is_sparse=True)
    fc1 = fluid.layers.fc(input=emb, size=hid)
    lstm1, cell1 = fluid.layers.dynamic_lstm(input=fc1, size=hid)
    inputs = [fc1, lstm1]
    for i in range(2, 4):
        fc = fluid.layers.fc(input=inputs, size=hid)
        lstm, cell = fluid.layers.dynamic_lstm(input=fc, size=hid, is_reverse=(i % 2) == 0)
        inputs = [fc, lstm]
    fc_last = fluid.layers.sequence_pool(input=inputs[0], pool_type="max")
    lstm_last = fluid.layers.sequence_pool(input=inputs[1], pool_type="max")
    pred = fluid.layers.fc(input=[fc_last, lstm_last], size=2, act="softmax")
    loss = fluid.layers.mean(fluid.layers.cross_entropy(input=pred, label=label))
    fluid.optimizer.Adagrad(learning_rate=0.002).minimize(loss)
    return loss, _seq_feed("stacked_lstm", place, 32, vocab, 10, 60, 2)


@model("lstm_crf")
def lstm_crf(place):
    # a sequence labeller as the model zoo's NER / the book's label_semantic_roles built it
    vocab, labels, hid = 5000, 9, 128
    word = fluid.layers.data(name="word", shape=[1], dtype="int64", lod_level=1)
    target = fluid.layers.data(name="target", shape=[1], dtype="int64", lod_level=1)
    emb = fluid.layers.embedding(input=word, size=[vocab, 64], is_sparse=True)
    fwd_in = fluid.layers.fc(input=emb, size=hid * 4, act="tanh")
    fwd, _ = fluid.layers.dynamic_lstm(input=fwd_in, size=hid * 4)
    bwd_in = fluid.layers.fc(input=emb, size=hid * 4, act="tanh")
    bwd, _ = fluid.layers.dynamic_lstm(input=bwd_in, size=hid * 4, is_reverse=True)
    emission = fluid.layers.fc(input=[fwd, bwd], size=labels)
    crf_cost = fluid.layers.linear_chain_crf(
        input=emission, label=target, param_attr=fluid.ParamAttr(name="crfw", learning_rate=0.2)
    )
    loss = fluid.layers.mean(crf_cost)
    fluid.layers.crf_decoding(input=emission, param_attr=fluid.ParamAttr(name="crfw"))
    fluid.optimizer.SGD(learning_rate=0.01).minimize(loss)

    def feed(step):
        rng = _rng("lstm_crf", step)
        flat, lens = _lod_batch(rng, 16, vocab, 5, 40)
        tags = rng.randint(0, labels, size=flat.shape).astype("int64")
        return {"word": _lod(place, flat, lens), "target": _lod(place, tags, lens)}

    return loss, feed


@model("gru4rec")
def gru4rec(place):
    # the model zoo's GRU session-based recommender
    vocab, hid = 2000, 100
    src = fluid.layers.data(name="src_wordseq", shape=[1], dtype="int64", lod_level=1)
    dst = fluid.layers.data(name="dst_wordseq", shape=[1], dtype="int64", lod_level=1)
    emb = fluid.layers.embedding(input=src, size=[vocab, hid], is_sparse=True)
    fc0 = fluid.layers.fc(input=emb, size=hid * 3)
    gru = fluid.layers.dynamic_gru(input=fc0, size=hid)
    pred = fluid.layers.fc(input=gru, size=vocab, act="softmax")
    loss = fluid.layers.mean(fluid.layers.cross_entropy(input=pred, label=dst))
    fluid.optimizer.Adagrad(learning_rate=0.01).minimize(loss)

    def feed(step):
        rng = _rng("gru4rec", step)
        flat, lens = _lod_batch(rng, 50, vocab, 2, 20)
        nxt = rng.randint(0, vocab, size=flat.shape).astype("int64")
        return {"src_wordseq": _lod(place, flat, lens), "dst_wordseq": _lod(place, nxt, lens)}

    return loss, feed


@model("seq2seq")
def seq2seq(place):
    # the book's machine_translation training program: GRU encoder, DynamicRNN decoder
    dict_size, word_dim, hid = 3000, 32, 64
    src = fluid.layers.data(name="src_word_id", shape=[1], dtype="int64", lod_level=1)
    src_emb = fluid.layers.embedding(input=src, size=[dict_size, word_dim], is_sparse=True)
    fc1 = fluid.layers.fc(input=src_emb, size=hid * 3, act="tanh")
    enc = fluid.layers.dynamic_gru(input=fc1, size=hid)
    enc_last = fluid.layers.sequence_last_step(input=enc)
    trg = fluid.layers.data(name="target_language_word", shape=[1], dtype="int64", lod_level=1)
    trg_emb = fluid.layers.embedding(input=trg, size=[dict_size, word_dim], is_sparse=True)
    rnn = fluid.layers.DynamicRNN()
    with rnn.block():
        cur = rnn.step_input(trg_emb)
        mem = rnn.memory(init=enc_last, need_reorder=True)
        state = fluid.layers.fc(input=[cur, mem], size=hid, act="tanh")
        out = fluid.layers.fc(input=state, size=dict_size, act="softmax")
        rnn.update_memory(mem, state)
        rnn.output(out)
    pred = rnn()
    label = fluid.layers.data(name="target_language_next_word", shape=[1], dtype="int64", lod_level=1)
    loss = fluid.layers.mean(fluid.layers.cross_entropy(input=pred, label=label))
    fluid.optimizer.Adagrad(learning_rate=0.001).minimize(loss)

    def feed(step):
        rng = _rng("seq2seq", step)
        s_flat, s_lens = _lod_batch(rng, 16, dict_size, 4, 20)
        t_flat, t_lens = _lod_batch(rng, 16, dict_size, 4, 20)
        nxt = rng.randint(0, dict_size, size=t_flat.shape).astype("int64")
        return {
            "src_word_id": _lod(place, s_flat, s_lens),
            "target_language_word": _lod(place, t_flat, t_lens),
            "target_language_next_word": _lod(place, nxt, t_lens),
        }

    return loss, feed


@model("tagspace")
def tagspace(place):
    # the model zoo's TagSpace: a text CNN and a tag embedding ranked by a margin loss
    vocab, tags, emb_dim, hid, margin, neg = 5000, 200, 10, 100, 0.1, 3
    text = fluid.layers.data(name="text", shape=[1], lod_level=1, dtype="int64")
    pos_tag = fluid.layers.data(name="pos_tag", shape=[1], lod_level=1, dtype="int64")
    neg_tag = fluid.layers.data(name="neg_tag", shape=[1], lod_level=1, dtype="int64")
    text_emb = fluid.layers.embedding(input=text, size=[vocab, emb_dim], param_attr="text_emb")
    pos_emb = fluid.layers.embedding(input=pos_tag, size=[tags, emb_dim], param_attr="tag_emb")
    neg_emb = fluid.layers.embedding(input=neg_tag, size=[tags, emb_dim], param_attr="tag_emb")
    conv = fluid.nets.sequence_conv_pool(input=text_emb, num_filters=hid, filter_size=3, act="tanh", pool_type="max")
    text_vec = fluid.layers.fc(input=conv, size=emb_dim, param_attr="text_hid")
    cos_pos = fluid.layers.cos_sim(pos_emb, text_vec)
    neg_seq = fluid.layers.sequence_expand_as(x=text_vec, y=neg_emb)
    cos_neg_all = fluid.layers.sequence_reshape(input=fluid.layers.cos_sim(X=neg_emb, Y=neg_seq), new_dim=neg)
    cos_neg = fluid.layers.reduce_max(cos_neg_all, dim=1, keep_dim=True)
    margin_t = fluid.layers.fill_constant_batch_size_like(input=cos_pos, shape=[-1, 1], value=margin, dtype="float32")
    zero_t = fluid.layers.fill_constant_batch_size_like(input=cos_pos, shape=[-1, 1], value=0.0, dtype="float32")
    loss_part = fluid.layers.elementwise_max(
        zero_t, fluid.layers.elementwise_add(fluid.layers.elementwise_sub(margin_t, cos_pos), cos_neg)
    )
    loss = fluid.layers.mean(loss_part)
    fluid.optimizer.Adagrad(learning_rate=0.01).minimize(loss)

    def feed(step):
        rng = _rng("tagspace", step)
        batch = 64
        flat, lens = _lod_batch(rng, batch, vocab, 5, 50)
        pos = rng.randint(0, tags, size=(batch, 1)).astype("int64")
        negs = rng.randint(0, tags, size=(batch * neg, 1)).astype("int64")
        return {
            "text": _lod(place, flat, lens),
            "pos_tag": _lod(place, pos, [[1] * batch]),
            "neg_tag": _lod(place, negs, [[neg] * batch]),
        }

    return loss, feed


# ---------------------------------------------------------------- the run


def _set_parameters(program, scope, place):
    """Every parameter to values drawn from its name and shape (both engines name them alike)."""
    for param in program.global_block().all_parameters():
        tensor = scope.find_var(param.name).get_tensor()
        shape = tuple(np.array(tensor).shape)
        fan = float(np.prod(shape[1:])) if len(shape) > 1 else float(shape[0])
        bound = 1.0 / np.sqrt(max(fan, 1.0))
        values = _rng("param", param.name, shape).uniform(-bound, bound, size=shape).astype("float32")
        if param.name.endswith(".w_1") or param.name.endswith(".w_2"):
            # batch_norm's moving mean and variance (fluid names them w_1, w_2): keep them sane
            values = np.abs(values) if param.name.endswith(".w_2") else values * 0
        tensor.set(values, place)


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("model", choices=sorted(MODELS))
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--losses", type=int, default=3, help="losses of the first steps to report")
    args = parser.parse_args(argv)

    place = fluid.CPUPlace()
    main_prog, startup = fluid.Program(), fluid.Program()
    main_prog.random_seed = startup.random_seed = 7
    t0 = time.time()
    with fluid.program_guard(main_prog, startup):
        with fluid.unique_name.guard():
            loss, feed = MODELS[args.model](place)
    build_s = time.time() - t0
    exe = fluid.Executor(place)
    scope = fluid.Scope()
    with fluid.scope_guard(scope):
        exe.run(startup)
        _set_parameters(main_prog, scope, place)
        total = args.warmup + args.steps
        feeds = [feed(step) for step in range(total)]
        losses, times = [], []
        for step in range(total):
            start = time.time()
            (value,) = exe.run(main_prog, feed=feeds[step], fetch_list=[loss])
            value = float(np.array(value).reshape(-1)[0])
            if step >= args.warmup:
                times.append(time.time() - start)
            if step < args.losses:
                losses.append(value)
    print(
        "RESULT "
        + json.dumps(
            {
                "model": args.model,
                "build_s": build_s,
                "step_s": times,
                "losses": losses,
                "ops": len(main_prog.global_block().ops),
            }
        )
    )
    sys.stdout.flush()


if __name__ == "__main__":
    main()
