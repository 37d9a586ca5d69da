"""linear_chain_crf, crf_decoding and chunk_eval over LoD sequences (as fluid's label_semantic_roles
chapter uses them): the negative log likelihoods, the gradients of their sum for the emissions and
the transition, the Viterbi path (and its agreement with the labels), and chunk_eval's counts.
Prints JSON; run under fluid 1.8.5 (tools/fluid18) it wrote crf_lod.json."""

import json

import numpy as np
import paddle.fluid as fluid

L = fluid.layers
TAGS = 5
rng = np.random.RandomState(4)
trans = rng.uniform(-1, 1, (TAGS + 2, TAGS)).astype("float32")
emission_rows = rng.uniform(-1, 1, (9, TAGS)).astype("float32")
labels = rng.randint(0, TAGS, (9, 1)).astype("int64")
lens = [[3, 1, 5]]

main, start = fluid.Program(), fluid.Program()
with fluid.program_guard(main, start):
    em = fluid.data(name="em", shape=[None, TAGS], dtype="float32", lod_level=1)
    em.stop_gradient = False
    label = fluid.data(name="label", shape=[None, 1], dtype="int64", lod_level=1)
    crf_attr = fluid.ParamAttr(name="crfw", initializer=fluid.initializer.NumpyArrayInitializer(trans))
    cost = L.linear_chain_crf(input=em, label=label, param_attr=crf_attr)
    loss = L.reduce_sum(cost)
    fluid.backward.append_backward(loss)
    path = L.crf_decoding(input=em, param_attr=fluid.ParamAttr(name="crfw"))
    agree = L.crf_decoding(input=em, param_attr=fluid.ParamAttr(name="crfw"), label=label)
    chunk = L.chunk_eval(input=path, label=label, chunk_scheme="IOB", num_chunk_types=2)
exe = fluid.Executor(fluid.CPUPlace())
exe.run(start)
feed = {
    "em": fluid.create_lod_tensor(emission_rows, lens, fluid.CPUPlace()),
    "label": fluid.create_lod_tensor(labels, lens, fluid.CPUPlace()),
}
fetch = [cost, "em@GRAD", "crfw@GRAD", path, agree] + list(chunk)
results = {}
for var, value in zip(["cost", "em_grad", "trans_grad", "path", "agree", "p", "r", "f1", "ni", "nl", "nc"],
                      exe.run(main, feed=feed, fetch_list=fetch, return_numpy=False)):  # fmt: skip
    results[var] = [value.lod(), np.array(value).reshape(-1).tolist()]
print(json.dumps(results))
