"""An attention decoder in a DynamicRNN (as fluid 1.x machine-translation scripts wrote it): static_input of
the encoder states, a memory from the last encoder state (need_reorder), sequence_expand, sequence_softmax and
sequence_pool in each step. Prints the outputs (with their LoD) and the source gradient as JSON; run under fluid
1.8.5 (tools/fluid18) it wrote dynamic_rnn_attention.json."""

import json

import numpy as np
import paddle.fluid as fluid

L = fluid.layers
C = fluid.initializer.Constant
src = fluid.data(name="src", shape=[None, 3], dtype="float32", lod_level=1)
trg = fluid.data(name="trg", shape=[None, 3], dtype="float32", lod_level=1)
src.stop_gradient = False
enc = L.fc(src, 4, act="tanh", param_attr=fluid.ParamAttr(initializer=C(0.2)), bias_attr=False)
enc_last = L.sequence_last_step(enc)
rnn = L.DynamicRNN()
with rnn.block():
    word = rnn.step_input(trg)
    enc_vec = rnn.static_input(enc)
    state = rnn.memory(init=enc_last, need_reorder=True)
    expanded = L.sequence_expand(state, enc_vec)
    scores = L.reduce_sum(L.elementwise_mul(enc_vec, expanded), dim=1, keep_dim=True)
    weights = L.sequence_softmax(scores)
    context = L.sequence_pool(L.elementwise_mul(enc_vec, weights, axis=0), "sum")
    new_state = L.fc(
        [word, context, state],
        4,
        act="tanh",
        param_attr=[
            fluid.ParamAttr(initializer=C(0.1)),
            fluid.ParamAttr(initializer=C(-0.15)),
            fluid.ParamAttr(initializer=C(0.05)),
        ],
        bias_attr=False,
    )
    rnn.update_memory(state, new_state)
    rnn.output(new_state)
out = rnn()
loss = L.reduce_sum(out * out)
fluid.backward.append_backward(loss)
exe = fluid.Executor(fluid.CPUPlace())
exe.run(fluid.default_startup_program())
sv = np.sin(np.arange(21).reshape(7, 3)).astype("float32")
tv = np.cos(np.arange(18).reshape(6, 3)).astype("float32")
r = exe.run(
    feed={
        "src": fluid.create_lod_tensor(sv, [[3, 1, 3]], fluid.CPUPlace()),
        "trg": fluid.create_lod_tensor(tv, [[2, 3, 1]], fluid.CPUPlace()),
    },
    fetch_list=[out, "src@GRAD"],
    return_numpy=False,
)
print(json.dumps([[x.lod(), np.array(x).round(5).reshape(-1).tolist()] for x in r]))
