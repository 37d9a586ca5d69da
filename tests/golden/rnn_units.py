# Golden script: layers.lstm_unit and layers.gru_unit (origin_mode off and on; a relu activation, which
# fluid 1.8.5 ignored): parameters, op attributes, outputs and the gradients of all inputs and parameters.
import json
import warnings

import numpy as np
import paddle.fluid as fluid

L = fluid.layers
D = 3
x = fluid.data("x", [2, 4], "float32")
x.stop_gradient = False
h = fluid.data("h", [2, D], "float32")
h.stop_gradient = False
c = fluid.data("c", [2, D], "float32")
c.stop_gradient = False
hn, cn = L.lstm_unit(x, h, c, forget_bias=0.5)
g = fluid.data("g", [2, 3 * D], "float32")
g.stop_gradient = False
gh, rh, gate = L.gru_unit(g, h, 3 * D)
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    gh2, _, _ = L.gru_unit(g, h, 3 * D, origin_mode=True, activation="relu")
prog = fluid.default_main_program()
print([(p.name, p.shape) for p in prog.global_block().all_parameters()])
print([op.type for op in prog.global_block().ops])
KEYS = ("activation", "gate_activation", "origin_mode", "forget_bias")
for op in prog.global_block().ops:
    if op.type in ("gru_unit", "lstm_unit"):
        print(op.type, sorted((k, op.attr(k)) for k in op.attr_names if k in KEYS))
outs = [hn, cn, gh, rh, gate, gh2]
loss = L.sums([L.reduce_sum(o * L.cos(o)) for o in outs])
params = prog.global_block().all_parameters()
grads = fluid.gradients([loss], [x, h, c, g] + params)
exe = fluid.Executor(fluid.CPUPlace())
exe.run(fluid.default_startup_program())
for i, p in enumerate(sorted(params, key=lambda p: p.name)):
    fluid.global_scope().find_var(p.name).get_tensor().set(
        np.random.RandomState(i).uniform(-0.5, 0.5, [int(d) for d in p.shape]).astype("float32"), fluid.CPUPlace()
    )
rng = np.random.RandomState(5)
feed = {
    "x": rng.rand(2, 4).astype("float32"),
    "h": rng.rand(2, D).astype("float32") - 0.5,
    "c": rng.rand(2, D).astype("float32"),
    "g": rng.rand(2, 3 * D).astype("float32") - 0.5,
}
r = exe.run(feed=feed, fetch_list=outs + [gr for gr in grads if gr is not None])
print(json.dumps([np.round(v, 5).tolist() for v in r]))
