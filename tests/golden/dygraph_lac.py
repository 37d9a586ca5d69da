# Golden script: dygraph lexical analysis in the shape of PaddlePaddle models' dygraph/lac (fluid 1.8): embedding,
# a bidirectional GRU of GRUUnit steps, LinearChainCRF cost, CRFDecoding and chunk_eval; seeded.
import json

import numpy as np
import paddle.fluid as fluid
from paddle.fluid.dygraph import Embedding, GRUUnit, Linear, to_variable


class LinearChainCRF(fluid.dygraph.Layer):
    def __init__(self, param_attr, size=None, is_test=False, dtype="float32"):
        super(LinearChainCRF, self).__init__()
        self._param_attr = param_attr
        self._dtype = dtype
        self._size = size
        self._is_test = is_test
        self._transition = self.create_parameter(
            attr=self._param_attr, shape=[self._size + 2, self._size], dtype=self._dtype
        )

    @property
    def weight(self):
        return self._transition

    @weight.setter
    def weight(self, value):
        self._transition = value

    def forward(self, input, label, length=None):
        alpha = self._helper.create_variable_for_type_inference(dtype=self._dtype)
        emission_exps = self._helper.create_variable_for_type_inference(dtype=self._dtype)
        transition_exps = self._helper.create_variable_for_type_inference(dtype=self._dtype)
        log_likelihood = self._helper.create_variable_for_type_inference(dtype=self._dtype)
        this_inputs = {"Emission": [input], "Transition": self._transition, "Label": [label]}
        if length is not None:
            this_inputs["Length"] = [length]
        self._helper.append_op(
            type="linear_chain_crf",
            inputs=this_inputs,
            outputs={
                "Alpha": [alpha],
                "EmissionExps": [emission_exps],
                "TransitionExps": transition_exps,
                "LogLikelihood": log_likelihood,
            },
            attrs={"is_test": self._is_test},
        )
        return log_likelihood


class CRFDecoding(fluid.dygraph.Layer):
    def __init__(self, param_attr, size=None, is_test=False, dtype="float32"):
        super(CRFDecoding, self).__init__()
        self._dtype = dtype
        self._size = size
        self._is_test = is_test
        self._param_attr = param_attr
        self._transition = self.create_parameter(
            attr=self._param_attr, shape=[self._size + 2, self._size], dtype=self._dtype
        )

    @property
    def weight(self):
        return self._transition

    @weight.setter
    def weight(self, value):
        self._transition = value

    def forward(self, input, label=None, length=None):
        viterbi_path = self._helper.create_variable_for_type_inference(dtype=self._dtype)
        this_inputs = {"Emission": [input], "Transition": self._transition, "Label": label}
        if length is not None:
            this_inputs["Length"] = [length]
        self._helper.append_op(
            type="crf_decoding",
            inputs=this_inputs,
            outputs={"ViterbiPath": [viterbi_path]},
            attrs={"is_test": self._is_test},
        )
        return viterbi_path


class DynamicGRU(fluid.dygraph.Layer):
    def __init__(self, size, h_0, is_reverse=False):
        super(DynamicGRU, self).__init__()
        self.gru_unit = GRUUnit(size * 3)
        self.h_0, self.is_reverse = h_0, is_reverse

    def forward(self, inputs):
        hidden, res = self.h_0, []
        steps = inputs.shape[1]
        for i in range(steps):
            k = steps - 1 - i if self.is_reverse else i
            x = fluid.layers.reshape(inputs[:, k : k + 1, :], [-1, inputs.shape[2]])
            hidden, _, _ = self.gru_unit(x, hidden)
            res.append(fluid.layers.reshape(hidden, [-1, 1, hidden.shape[1]]))
        if self.is_reverse:
            res = res[::-1]
        return fluid.layers.concat(res, axis=1)


class LAC(fluid.dygraph.Layer):
    def __init__(self, vocab, labels, emb=8, hid=8, batch=3):
        super(LAC, self).__init__()
        self.emb = Embedding([vocab, emb])
        h0 = to_variable(np.zeros((batch, hid), "float32"))
        self.pre_fw, self.pre_bw = Linear(emb, hid * 3), Linear(emb, hid * 3)
        self.fw, self.bw = DynamicGRU(hid, h0), DynamicGRU(hid, h0, is_reverse=True)
        self.out = Linear(hid * 2, labels)
        self.crf = LinearChainCRF(param_attr=fluid.ParamAttr(name="crfw"), size=labels)
        self.decode = CRFDecoding(param_attr=fluid.ParamAttr(name="crfw_decode"), size=labels)
        self.decode.weight = self.crf.weight
        self.hid = hid

    def forward(self, words, target, length):
        e = self.emb(words)
        both = fluid.layers.concat([self.fw(self.pre_fw(e)), self.bw(self.pre_bw(e))], axis=2)
        emission = self.out(both)
        cost = self.crf(input=emission, label=target, length=length)
        avg = fluid.layers.mean(cost)
        path = self.decode(input=emission, length=length)
        return avg, path


out = {}
with fluid.dygraph.guard(fluid.CPUPlace()):
    fluid.default_startup_program().random_seed = 7
    fluid.default_main_program().random_seed = 7
    labels = 7  # (3 chunk types, IOB: 2 * 3 + 1)
    model = LAC(20, labels)
    opt = fluid.optimizer.Adam(0.05, parameter_list=model.parameters())
    rng = np.random.RandomState(2)
    res = []
    for _ in range(5):
        words = rng.randint(0, 20, (3, 5)).astype("int64")
        target = rng.randint(0, labels, (3, 5, 1)).astype("int64")
        length = np.array([5, 3, 4], "int64")
        avg, path = model(to_variable(words), to_variable(target), to_variable(length))
        avg.backward()
        opt.minimize(avg)
        model.clear_gradients()
        ev = fluid.layers.chunk_eval(
            input=path,
            label=to_variable(target.reshape(3, 5)),
            chunk_scheme="IOB",
            num_chunk_types=3,
            seq_length=to_variable(length),
        )
        res.append(
            [
                round(float(avg.numpy()), 5),
                path.numpy().reshape(-1).tolist(),
                [round(float(np.array(v.numpy()).reshape(-1)[0]), 5) for v in ev],
            ]
        )
    out["steps"] = res
    out["params"] = {k: round(float(np.abs(v.numpy()).sum()), 4) for k, v in model.state_dict().items()}
print(json.dumps(out))
