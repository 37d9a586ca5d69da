# Golden script: dygraph Transformer encoder-decoder step in the shape of PaddlePaddle models' dygraph/transformer
# (fluid 1.8): multi-head attention (matmul with alpha, softmax, dropout), pre/post process layers
# (layer_norm, dropout, residual), position-wise FFN, label smoothing with one_hot and soft-label
# softmax_with_cross_entropy, NoamDecay and Adam; seeded; small sizes.
import json

import numpy as np
import paddle.fluid as fluid
import paddle.fluid.layers as layers
from paddle.fluid.dygraph import Embedding, Layer, LayerNorm, Linear, to_variable


class PrePostProcessLayer(Layer):
    def __init__(self, process_cmd, d_model, dropout_rate):
        super(PrePostProcessLayer, self).__init__()
        self.process_cmd = process_cmd
        self.functors = []
        for cmd in self.process_cmd:
            if cmd == "a":
                self.functors.append(lambda x, y: x + y if y is not None else x)
            elif cmd == "n":
                self.functors.append(
                    self.add_sublayer(
                        "layer_norm_%d" % len(self.sublayers(include_sublayers=False)),
                        LayerNorm(
                            normalized_shape=d_model,
                            param_attr=fluid.ParamAttr(initializer=fluid.initializer.Constant(1.0)),
                            bias_attr=fluid.ParamAttr(initializer=fluid.initializer.Constant(0.0)),
                        ),
                    )
                )
            elif cmd == "d":
                self.functors.append(
                    lambda x: layers.dropout(x, dropout_prob=dropout_rate, is_test=False) if dropout_rate else x
                )

    def forward(self, x, residual=None):
        for i, cmd in enumerate(self.process_cmd):
            if cmd == "a":
                x = self.functors[i](x, residual)
            else:
                x = self.functors[i](x)
        return x


class MultiHeadAttention(Layer):
    def __init__(self, d_key, d_value, d_model, n_head=1, dropout_rate=0.0):
        super(MultiHeadAttention, self).__init__()
        self.n_head, self.d_key, self.d_value, self.d_model = n_head, d_key, d_value, d_model
        self.dropout_rate = dropout_rate
        self.q_fc = Linear(input_dim=d_model, output_dim=d_key * n_head, bias_attr=False)
        self.k_fc = Linear(input_dim=d_model, output_dim=d_key * n_head, bias_attr=False)
        self.v_fc = Linear(input_dim=d_model, output_dim=d_value * n_head, bias_attr=False)
        self.proj_fc = Linear(input_dim=d_value * n_head, output_dim=d_model, bias_attr=False)

    def forward(self, queries, keys, values, attn_bias):
        keys = queries if keys is None else keys
        values = keys if values is None else values
        q, k, v = self.q_fc(queries), self.k_fc(keys), self.v_fc(values)
        q = layers.transpose(layers.reshape(q, shape=[0, 0, self.n_head, self.d_key]), perm=[0, 2, 1, 3])
        k = layers.transpose(layers.reshape(k, shape=[0, 0, self.n_head, self.d_key]), perm=[0, 2, 1, 3])
        v = layers.transpose(layers.reshape(v, shape=[0, 0, self.n_head, self.d_value]), perm=[0, 2, 1, 3])
        product = layers.matmul(x=q, y=k, transpose_y=True, alpha=self.d_model**-0.5)
        if attn_bias is not None:
            product += attn_bias
        weights = layers.softmax(product)
        if self.dropout_rate:
            weights = layers.dropout(weights, dropout_prob=self.dropout_rate, is_test=False)
        out = layers.matmul(weights, v)
        out = layers.transpose(out, perm=[0, 2, 1, 3])
        out = layers.reshape(x=out, shape=[0, 0, out.shape[2] * out.shape[3]])
        return self.proj_fc(out)


class FFN(Layer):
    def __init__(self, d_inner_hid, d_model, dropout_rate):
        super(FFN, self).__init__()
        self.dropout_rate = dropout_rate
        self.fc1 = Linear(input_dim=d_model, output_dim=d_inner_hid, act="relu")
        self.fc2 = Linear(input_dim=d_inner_hid, output_dim=d_model)

    def forward(self, x):
        hidden = self.fc1(x)
        if self.dropout_rate:
            hidden = layers.dropout(hidden, dropout_prob=self.dropout_rate, is_test=False)
        return self.fc2(hidden)


class DecoderLayer(Layer):
    def __init__(self, n_head, d_key, d_value, d_model, d_inner_hid, p, pre="n", post="da"):
        super(DecoderLayer, self).__init__()
        self.pre1, self.self_attn = (
            PrePostProcessLayer(pre, d_model, p),
            MultiHeadAttention(d_key, d_value, d_model, n_head, p),
        )
        self.post1 = PrePostProcessLayer(post, d_model, p)
        self.pre2, self.cross_attn = (
            PrePostProcessLayer(pre, d_model, p),
            MultiHeadAttention(d_key, d_value, d_model, n_head, p),
        )
        self.post2 = PrePostProcessLayer(post, d_model, p)
        self.pre3, self.ffn = PrePostProcessLayer(pre, d_model, p), FFN(d_inner_hid, d_model, p)
        self.post3 = PrePostProcessLayer(post, d_model, p)

    def forward(self, dec_input, enc_output, self_bias, cross_bias):
        x = self.post1(self.self_attn(self.pre1(dec_input), None, None, self_bias), dec_input)
        y = self.post2(self.cross_attn(self.pre2(x), enc_output, enc_output, cross_bias), x)
        return self.post3(self.ffn(self.pre3(y)), y)


class Model(Layer):
    def __init__(self, vocab, d_model=8, n_head=2, d_inner=16, p=0.1, eps=0.1):
        super(Model, self).__init__()
        self.emb = Embedding(
            [vocab, d_model], param_attr=fluid.ParamAttr(initializer=fluid.initializer.Normal(0.0, d_model**-0.5))
        )
        self.dec = DecoderLayer(n_head, d_model // n_head, d_model // n_head, d_model, d_inner, p)
        self.post = PrePostProcessLayer("n", d_model, p)
        self.vocab, self.eps, self.d_model = vocab, eps, d_model

    def forward(self, src, trg, label, trg_bias):
        enc = self.emb(src)
        dec_in = layers.scale(self.emb(trg), scale=self.d_model**0.5)
        dec = self.post(self.dec(dec_in, enc, trg_bias, None))
        logits = layers.matmul(x=dec, y=self.emb.weight, transpose_y=True)
        smooth = layers.label_smooth(label=layers.one_hot(input=label, depth=self.vocab), epsilon=self.eps)
        cost = layers.softmax_with_cross_entropy(logits=logits, label=smooth, soft_label=True)
        return layers.reduce_sum(cost) / 6.0


out = {}
with fluid.dygraph.guard(fluid.CPUPlace()):
    fluid.default_startup_program().random_seed = 5
    fluid.default_main_program().random_seed = 5
    model = Model(12)
    opt = fluid.optimizer.Adam(
        learning_rate=fluid.dygraph.NoamDecay(8, 4),
        beta1=0.9,
        beta2=0.997,
        epsilon=1e-9,
        parameter_list=model.parameters(),
    )
    rng = np.random.RandomState(6)
    bias = np.triu(np.ones((3, 3), "float32"), 1) * -1e9
    bias = to_variable(np.tile(bias[None, None], (2, 2, 1, 1)))
    losses = []
    for _ in range(6):
        src = to_variable(rng.randint(0, 12, (2, 4)).astype("int64"))
        trg = to_variable(rng.randint(0, 12, (2, 3)).astype("int64"))
        label = to_variable(rng.randint(0, 12, (2, 3, 1)).astype("int64"))
        loss = model(src, trg, label, bias)
        loss.backward()
        opt.minimize(loss)
        model.clear_gradients()
        losses.append(round(float(loss.numpy()), 5))
    out["losses"] = losses
    out["lr"] = round(float(opt.current_step_lr()), 7)
    out["params"] = {k: round(float(np.abs(v.numpy()).sum()), 4) for k, v in model.state_dict().items()}
print(json.dumps(out))
