# Golden script: a dygraph PTB language model in the shape of PaddlePaddle models' dygraph/ptb_lm (fluid 1.8): a
# hand-written multi-layer LSTM over Embedding, dropout, softmax_with_cross_entropy, global-norm
# clipping and piecewise decay; seeded; small sizes.
import json

import numpy as np
import paddle.fluid as fluid
from paddle.fluid.dygraph.base import to_variable
from paddle.fluid.dygraph.nn import Embedding


class SimpleLSTMRNN(fluid.Layer):
    def __init__(self, hidden_size, num_steps, num_layers=2, init_scale=0.1, dropout=None):
        super(SimpleLSTMRNN, self).__init__()
        self._hidden_size = hidden_size
        self._num_layers = num_layers
        self._init_scale = init_scale
        self._dropout = dropout
        self._num_steps = num_steps
        self.cell_array = []
        self.hidden_array = []
        self.weight_1_arr = []
        self.weight_2_arr = []
        self.bias_arr = []
        self.mask_array = []
        for i in range(self._num_layers):
            weight_1 = self.create_parameter(
                attr=fluid.ParamAttr(
                    initializer=fluid.initializer.UniformInitializer(low=-self._init_scale, high=self._init_scale)
                ),
                shape=[self._hidden_size * 2, self._hidden_size * 4],
                dtype="float32",
                default_initializer=fluid.initializer.UniformInitializer(low=-self._init_scale, high=self._init_scale),
            )
            self.weight_1_arr.append(self.add_parameter("w_%d" % i, weight_1))
            bias_1 = self.create_parameter(
                attr=fluid.ParamAttr(
                    initializer=fluid.initializer.UniformInitializer(low=-self._init_scale, high=self._init_scale)
                ),
                shape=[self._hidden_size * 4],
                dtype="float32",
                default_initializer=fluid.initializer.Constant(0.0),
            )
            self.bias_arr.append(self.add_parameter("b_%d" % i, bias_1))

    def forward(self, input_embedding, init_hidden=None, init_cell=None):
        cell_array = []
        hidden_array = []
        for i in range(self._num_layers):
            hidden_array.append(init_hidden[i])
            cell_array.append(init_cell[i])
        res = []
        for index in range(self._num_steps):
            step_input = input_embedding[:, index, :]
            for k in range(self._num_layers):
                pre_hidden = hidden_array[k]
                pre_cell = cell_array[k]
                weight_1 = self.weight_1_arr[k]
                bias = self.bias_arr[k]
                nn = fluid.layers.concat([step_input, pre_hidden], 1)
                gate_input = fluid.layers.matmul(x=nn, y=weight_1)
                gate_input = fluid.layers.elementwise_add(gate_input, bias)
                i, j, f, o = fluid.layers.split(gate_input, num_or_sections=4, dim=-1)
                c = pre_cell * fluid.layers.sigmoid(f) + fluid.layers.sigmoid(i) * fluid.layers.tanh(j)
                m = fluid.layers.tanh(c) * fluid.layers.sigmoid(o)
                hidden_array[k] = m
                cell_array[k] = c
                step_input = m
                if self._dropout is not None and self._dropout > 0.0:
                    step_input = fluid.layers.dropout(
                        step_input, dropout_prob=self._dropout, dropout_implementation="upscale_in_train"
                    )
            res.append(step_input)
        real_res = fluid.layers.concat(res, 1)
        real_res = fluid.layers.reshape(real_res, [-1, self._num_steps, self._hidden_size])
        last_hidden = fluid.layers.concat(hidden_array, 1)
        last_hidden = fluid.layers.reshape(last_hidden, shape=[-1, self._num_layers, self._hidden_size])
        last_hidden = fluid.layers.transpose(x=last_hidden, perm=[1, 0, 2])
        last_cell = fluid.layers.concat(cell_array, 1)
        last_cell = fluid.layers.reshape(last_cell, shape=[-1, self._num_layers, self._hidden_size])
        last_cell = fluid.layers.transpose(x=last_cell, perm=[1, 0, 2])
        return real_res, last_hidden, last_cell


class PtbModel(fluid.Layer):
    def __init__(self, hidden_size, vocab_size, num_layers=2, num_steps=20, init_scale=0.1, dropout=None):
        super(PtbModel, self).__init__()
        self.hidden_size = hidden_size
        self.vocab_size = vocab_size
        self.init_scale = init_scale
        self.num_layers = num_layers
        self.num_steps = num_steps
        self.dropout = dropout
        self.simple_lstm_rnn = SimpleLSTMRNN(
            hidden_size, num_steps, num_layers=num_layers, init_scale=init_scale, dropout=dropout
        )
        self.embedding = Embedding(
            size=[vocab_size, hidden_size],
            dtype="float32",
            is_sparse=False,
            param_attr=fluid.ParamAttr(
                name="embedding_para",
                initializer=fluid.initializer.UniformInitializer(low=-init_scale, high=init_scale),
            ),
        )
        self.softmax_weight = self.create_parameter(
            attr=fluid.ParamAttr(),
            shape=[self.hidden_size, self.vocab_size],
            dtype="float32",
            default_initializer=fluid.initializer.UniformInitializer(low=-self.init_scale, high=self.init_scale),
        )
        self.softmax_bias = self.create_parameter(
            attr=fluid.ParamAttr(),
            shape=[self.vocab_size],
            dtype="float32",
            default_initializer=fluid.initializer.UniformInitializer(low=-self.init_scale, high=self.init_scale),
        )

    def forward(self, input, label, init_hidden, init_cell):
        init_h = fluid.layers.reshape(init_hidden, shape=[self.num_layers, -1, self.hidden_size])
        init_c = fluid.layers.reshape(init_cell, shape=[self.num_layers, -1, self.hidden_size])
        x_emb = self.embedding(input)
        x_emb = fluid.layers.reshape(x_emb, shape=[-1, self.num_steps, self.hidden_size])
        if self.dropout is not None and self.dropout > 0.0:
            x_emb = fluid.layers.dropout(x_emb, dropout_prob=self.dropout, dropout_implementation="upscale_in_train")
        rnn_out, last_hidden, last_cell = self.simple_lstm_rnn(x_emb, init_h, init_c)
        projection = fluid.layers.matmul(rnn_out, self.softmax_weight)
        projection = fluid.layers.elementwise_add(projection, self.softmax_bias)
        loss = fluid.layers.softmax_with_cross_entropy(logits=projection, label=label, soft_label=False)
        loss = fluid.layers.reshape(loss, shape=[-1, self.num_steps])
        loss = fluid.layers.reduce_mean(loss, dim=[0])
        loss = fluid.layers.reduce_sum(loss)
        return loss, last_hidden, last_cell


out = {}
with fluid.dygraph.guard(fluid.CPUPlace()):
    fluid.default_startup_program().random_seed = 33
    fluid.default_main_program().random_seed = 33
    vocab, hidden, layers, steps, batch = 50, 16, 2, 5, 4
    model = PtbModel(hidden, vocab, layers, steps, init_scale=0.1, dropout=0.2)
    bd = [3, 6]
    lr = [1.0, 0.5, 0.25]
    clip = fluid.clip.GradientClipByGlobalNorm(5.0)
    opt = fluid.optimizer.SGD(
        learning_rate=fluid.layers.piecewise_decay(boundaries=bd, values=lr),
        parameter_list=model.parameters(),
        grad_clip=clip,
    )
    rng = np.random.RandomState(0)
    h0 = np.zeros((layers, batch, hidden), "float32")
    c0 = np.zeros((layers, batch, hidden), "float32")
    losses = []
    for _ in range(8):
        x = rng.randint(0, vocab, (batch, steps, 1)).astype("int64")
        y = rng.randint(0, vocab, (batch, steps, 1)).astype("int64")
        loss, last_h, last_c = model(to_variable(x), to_variable(y), to_variable(h0), to_variable(c0))
        h0, c0 = last_h.numpy(), last_c.numpy()
        loss.backward()
        opt.minimize(loss)
        model.clear_gradients()
        losses.append(round(float(loss.numpy()), 5))
    out["losses"] = losses
    out["params"] = {k: round(float(np.abs(v.numpy()).sum()), 4) for k, v in model.state_dict().items()}
    out["lr"] = float(opt.current_step_lr())
print(json.dumps(out))
