# Golden script: dygraph sentiment models in the shape of PaddlePaddle models' dygraph/sentiment (fluid 1.8): BOW and
# GRU (GRUUnit loop) over an is_sparse Embedding, Adagrad; seeded; small sizes.
import json

import numpy as np
import paddle.fluid as fluid
from paddle.fluid.dygraph import Embedding, GRUUnit, Linear, to_variable


class BOW(fluid.dygraph.Layer):
    def __init__(self, dict_dim, emb_dim=16, hid_dim=16, class_dim=2, seq_len=6):
        super(BOW, self).__init__()
        self.seq_len = seq_len
        self.emb_dim = emb_dim
        self.embedding = Embedding(size=[dict_dim + 1, emb_dim], dtype="float32", is_sparse=True, padding_idx=0)
        self._fc1 = Linear(input_dim=hid_dim, output_dim=hid_dim, act="tanh")
        self._fc2 = Linear(input_dim=hid_dim, output_dim=hid_dim // 2, act="tanh")
        self._fc_prediction = Linear(input_dim=hid_dim // 2, output_dim=class_dim, act="softmax")

    def forward(self, inputs, label=None):
        emb = fluid.layers.reshape(self.embedding(inputs), [-1, self.emb_dim])
        o_np_mask = (inputs.numpy().reshape(-1, 1) != 0).astype("float32")
        mask_emb = fluid.layers.expand(to_variable(o_np_mask), [1, self.emb_dim])
        emb = emb * mask_emb
        emb = fluid.layers.reshape(emb, shape=[-1, self.seq_len, self.emb_dim])
        bow_1 = fluid.layers.reduce_sum(emb, dim=1)
        bow_1 = fluid.layers.tanh(bow_1)
        fc_1 = self._fc1(bow_1)
        fc_2 = self._fc2(fc_1)
        prediction = self._fc_prediction(fc_2)
        cost = fluid.layers.cross_entropy(input=prediction, label=label)
        avg_cost = fluid.layers.mean(x=cost)
        acc = fluid.layers.accuracy(input=prediction, label=label)
        return avg_cost, prediction, acc


class DynamicGRU(fluid.dygraph.Layer):
    def __init__(
        self,
        size,
        param_attr=None,
        bias_attr=None,
        is_reverse=False,
        gate_activation="sigmoid",
        candidate_activation="tanh",
        h_0=None,
        origin_mode=False,
    ):
        super(DynamicGRU, self).__init__()
        self.gru_unit = GRUUnit(
            size * 3,
            param_attr=param_attr,
            bias_attr=bias_attr,
            activation=candidate_activation,
            gate_activation=gate_activation,
            origin_mode=origin_mode,
        )
        self.size = size
        self.h_0 = h_0
        self.is_reverse = is_reverse

    def forward(self, inputs):
        hidden = self.h_0
        res = []
        for i in range(inputs.shape[1]):
            if self.is_reverse:
                i = inputs.shape[1] - 1 - i
            input_ = inputs[:, i : i + 1, :]
            input_ = fluid.layers.reshape(input_, [-1, input_.shape[2]], inplace=False)
            hidden, reset, gate = self.gru_unit(input_, hidden)
            hidden_ = fluid.layers.reshape(hidden, [-1, 1, hidden.shape[1]], inplace=False)
            res.append(hidden_)
        if self.is_reverse:
            res = res[::-1]
        res = fluid.layers.concat(res, axis=1)
        return res


class GRU(fluid.dygraph.Layer):
    def __init__(self, dict_dim, emb_dim=16, hid_dim=16, class_dim=2, seq_len=6, batch_size=4):
        super(GRU, self).__init__()
        self.emb_dim, self.hid_dim, self.seq_len = emb_dim, hid_dim, seq_len
        self.embedding = Embedding(
            size=[dict_dim + 1, emb_dim], dtype="float32", param_attr=fluid.ParamAttr(learning_rate=30), is_sparse=True
        )
        h_0 = np.zeros((batch_size, hid_dim), dtype="float32")
        h_0 = to_variable(h_0)
        self._fc1 = Linear(input_dim=hid_dim, output_dim=hid_dim * 3)
        self._fc2 = Linear(input_dim=hid_dim, output_dim=hid_dim, act="tanh")
        self._fc_prediction = Linear(input_dim=hid_dim, output_dim=class_dim, act="softmax")
        self._gru = DynamicGRU(size=hid_dim, h_0=h_0)

    def forward(self, inputs, label=None):
        emb = fluid.layers.reshape(self.embedding(inputs), [-1, self.emb_dim])
        o_np_mask = to_variable(inputs.numpy().reshape(-1, 1) != 0).astype("float32")
        mask_emb = fluid.layers.expand(to_variable(o_np_mask), [1, self.hid_dim])
        emb = emb * mask_emb
        emb = fluid.layers.reshape(emb, shape=[-1, self.seq_len, self.hid_dim])
        fc_1 = self._fc1(emb)
        gru_hidden = self._gru(fc_1)
        gru_hidden = fluid.layers.reduce_max(gru_hidden, dim=1)
        tanh_1 = fluid.layers.tanh(gru_hidden)
        fc_2 = self._fc2(tanh_1)
        prediction = self._fc_prediction(fc_2)
        cost = fluid.layers.cross_entropy(input=prediction, label=label)
        avg_cost = fluid.layers.mean(x=cost)
        acc = fluid.layers.accuracy(input=prediction, label=label)
        return avg_cost, prediction, acc


out = {}
for name, cls in (("bow", BOW), ("gru", GRU)):
    with fluid.dygraph.guard(fluid.CPUPlace()):
        fluid.default_startup_program().random_seed = 90
        fluid.default_main_program().random_seed = 90
        model = cls(30)
        opt = fluid.optimizer.Adagrad(learning_rate=0.01, parameter_list=model.parameters())
        rng = np.random.RandomState(1)
        losses = []
        for _ in range(6):
            words = rng.randint(0, 31, (4, 6)).astype("int64")
            words[:, -2:] = 0
            label = rng.randint(0, 2, (4, 1)).astype("int64")
            avg_cost, pred, acc = model(to_variable(words.reshape(-1, 1)), to_variable(label))
            avg_cost.backward()
            opt.minimize(avg_cost)
            model.clear_gradients()
            losses.append([round(float(avg_cost.numpy()), 5), round(float(acc.numpy()), 4)])
        out[name] = losses
        out[name + "_params"] = {k: round(float(np.abs(v.numpy()).sum()), 4) for k, v in model.state_dict().items()}
print(json.dumps(out))
