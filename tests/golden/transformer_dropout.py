"""A one-layer transformer as fluid 1.8's model zoo built it (pre-norm attention with bias inputs,
fc heads split by reshape/transpose, matmul with alpha, seeded upscale_in_train dropout everywhere,
position encoding tables, label_smooth over one_hot, soft-label softmax_with_cross_entropy weighted
by a token mask, noam_decay, Adam) trained four steps: losses, learning rates and token counts. The
dropout masks are fluid's for their seeds (NOTE: [Seeded draws])."""

import json

import numpy as np
import paddle.fluid as fluid
import paddle.fluid.layers as layers
from _golden import flat, set_params

d_model, n_head, d_key, d_value, d_inner = 8, 2, 4, 4, 16
vocab, max_len = 12, 6
dropout = 0.1
eps = 0.1
out = {}


def position_encoding_init(n_position, d_pos_vec):
    channels = d_pos_vec
    position = np.arange(n_position)
    num_timescales = channels // 2
    log_timescale_increment = np.log(float(1e4) / float(1)) / (num_timescales - 1)
    inv_timescales = np.exp(np.arange(num_timescales)) * -log_timescale_increment
    scaled_time = np.expand_dims(position, 1) * np.expand_dims(inv_timescales, 0)
    signal = np.concatenate([np.sin(scaled_time), np.cos(scaled_time)], axis=1)
    signal = np.pad(signal, [[0, 0], [0, np.mod(channels, 2)]], "constant")
    return signal.astype("float32")


def multi_head_attention(queries, keys, values, attn_bias, name):
    keys = queries if keys is None else keys
    values = keys if values is None else values
    q = layers.fc(input=queries, size=d_key * n_head, bias_attr=False, num_flatten_dims=2, param_attr=name + "_q")
    k = layers.fc(input=keys, size=d_key * n_head, bias_attr=False, num_flatten_dims=2, param_attr=name + "_k")
    v = layers.fc(input=values, size=d_value * n_head, bias_attr=False, num_flatten_dims=2, param_attr=name + "_v")

    def split_heads(x, d):
        reshaped = layers.reshape(x=x, shape=[0, 0, n_head, d], inplace=True)
        return layers.transpose(x=reshaped, perm=[0, 2, 1, 3])

    q, k, v = split_heads(q, d_key), split_heads(k, d_key), split_heads(v, d_value)
    product = layers.matmul(x=q, y=k, transpose_y=True, alpha=d_key**-0.5)
    if attn_bias is not None:
        product += attn_bias
    weights = layers.softmax(product)
    weights = layers.dropout(
        weights, dropout_prob=dropout, seed=1, is_test=False, dropout_implementation="upscale_in_train"
    )
    ctx = layers.matmul(weights, v)
    ctx = layers.transpose(ctx, perm=[0, 2, 1, 3])
    ctx = layers.reshape(x=ctx, shape=[0, 0, ctx.shape[2] * ctx.shape[3]], inplace=True)
    return layers.fc(input=ctx, size=d_model, bias_attr=False, num_flatten_dims=2, param_attr=name + "_o")


def ffn(x, name):
    hidden = layers.fc(input=x, size=d_inner, num_flatten_dims=2, act="relu", param_attr=name + "_fc1")
    return layers.fc(input=hidden, size=d_model, num_flatten_dims=2, param_attr=name + "_fc2")


def pre_post(prev, out_, cmd):
    for c in cmd:
        if c == "a":
            out_ = out_ + prev if prev is not None else out_
        elif c == "n":
            out_ = layers.layer_norm(
                out_,
                begin_norm_axis=len(out_.shape) - 1,
                param_attr=fluid.initializer.Constant(1.0),
                bias_attr=fluid.initializer.Constant(0.0),
            )
        elif c == "d":
            out_ = layers.dropout(
                out_, dropout_prob=dropout, seed=2, is_test=False, dropout_implementation="upscale_in_train"
            )
    return out_


def embed(word, pos, name):
    emb = layers.embedding(
        word,
        size=[vocab, d_model],
        padding_idx=0,
        param_attr=fluid.ParamAttr(name=name, initializer=fluid.initializer.Normal(0.0, d_model**-0.5)),
    )
    emb = layers.scale(x=emb, scale=d_model**0.5)
    pos_enc = layers.embedding(
        pos,
        size=[max_len, d_model],
        param_attr=fluid.ParamAttr(
            name=name + "_pos",
            trainable=False,
            initializer=fluid.initializer.NumpyArrayInitializer(position_encoding_init(max_len, d_model)),
        ),
    )
    pos_enc.stop_gradient = True
    return layers.dropout(
        emb + pos_enc, dropout_prob=dropout, seed=3, is_test=False, dropout_implementation="upscale_in_train"
    )


main, startup = fluid.Program(), fluid.Program()
main.random_seed = startup.random_seed = 9
with fluid.program_guard(main, startup):
    src = fluid.data("src", [None, None, 1], "int64")
    src_pos = fluid.data("src_pos", [None, None, 1], "int64")
    src_bias = fluid.data("src_bias", [None, n_head, None, None], "float32")
    trg = fluid.data("trg", [None, None, 1], "int64")
    trg_pos = fluid.data("trg_pos", [None, None, 1], "int64")
    trg_bias = fluid.data("trg_bias", [None, n_head, None, None], "float32")
    cross_bias = fluid.data("cross_bias", [None, n_head, None, None], "float32")
    lbl = fluid.data("lbl", [None, 1], "int64")
    w = fluid.data("w", [None, 1], "float32")
    enc_in = embed(src, src_pos, "src_emb")
    attn = multi_head_attention(pre_post(None, enc_in, "n"), None, None, src_bias, "enc")
    enc = pre_post(enc_in, attn, "da")
    enc = pre_post(enc, ffn(pre_post(None, enc, "n"), "enc"), "da")
    enc = pre_post(None, enc, "n")
    dec_in = embed(trg, trg_pos, "trg_emb")
    s_attn = multi_head_attention(pre_post(None, dec_in, "n"), None, None, trg_bias, "dec_s")
    dec = pre_post(dec_in, s_attn, "da")
    c_attn = multi_head_attention(pre_post(None, dec, "n"), enc, enc, cross_bias, "dec_c")
    dec = pre_post(dec, c_attn, "da")
    dec = pre_post(dec, ffn(pre_post(None, dec, "n"), "dec"), "da")
    dec = pre_post(None, dec, "n")
    dec = layers.reshape(dec, shape=[-1, dec.shape[-1]], inplace=True)
    logits = layers.fc(input=dec, size=vocab, bias_attr=False)
    label = layers.label_smooth(label=layers.one_hot(input=lbl, depth=vocab), epsilon=eps)
    cost = layers.softmax_with_cross_entropy(logits=logits, label=label, soft_label=True)
    weighted = cost * w
    sum_cost = layers.reduce_sum(weighted)
    token_num = layers.reduce_sum(w)
    token_num.stop_gradient = True
    avg_cost = sum_cost / token_num
    lr = layers.learning_rate_scheduler.noam_decay(d_model, 4, 2.0)
    opt = fluid.optimizer.Adam(learning_rate=lr, beta1=0.9, beta2=0.997, epsilon=1e-9)
    opt.minimize(avg_cost)
exe = fluid.Executor(fluid.CPUPlace())
scope = fluid.Scope()
rng = np.random.RandomState(11)


def batch():
    b, ls, lt = 2, 5, 4
    s = rng.randint(1, vocab, (b, ls, 1))
    s[1, 3:] = 0
    t = rng.randint(1, vocab, (b, lt, 1))
    t[0, 3:] = 0
    sb = np.zeros((b, n_head, ls, ls), "float32")
    sb[1, :, :, 3:] = -1e9
    tb = np.triu(np.ones((lt, lt), "float32"), 1)[None, None] * -1e9 + np.zeros((b, n_head, lt, lt), "float32")
    cb = np.zeros((b, n_head, lt, ls), "float32")
    cb[1, :, :, 3:] = -1e9
    lab = rng.randint(1, vocab, (b * lt, 1))
    wt = (t.reshape(-1, 1) != 0).astype("float32")
    pos = lambda n: np.tile(np.arange(n).reshape(1, n, 1), (b, 1, 1)).astype("int64")
    return {
        "src": s.astype("int64"),
        "src_pos": pos(ls),
        "src_bias": sb,
        "trg": t.astype("int64"),
        "trg_pos": pos(lt),
        "trg_bias": tb.astype("float32"),
        "lbl": lab.astype("int64"),
        "w": wt,
        "cross_bias": cb,
    }


with fluid.scope_guard(scope):
    exe.run(startup)
    set_params(main, scope)
    res = []
    for _step in range(4):
        res.append([flat(v) for v in exe.run(main, feed=batch(), fetch_list=[avg_cost, lr, token_num])])
    out["steps"] = res
    out["n_ops"] = len(main.global_block().ops)
    out["ops"] = sorted(set(op.type for op in main.global_block().ops))
print(json.dumps(out))
