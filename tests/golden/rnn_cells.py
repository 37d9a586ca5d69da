# Golden script: fluid.layers.rnn with LSTMCell and GRUCell (batch-major and time-major, reversed,
# with sequence lengths and initial states): parameter names and shapes, outputs, final states and
# the gradients of a weighted sum of them with respect to the input and the parameters, summarised.
import json

import numpy as np
import paddle.fluid as fluid

L = fluid.layers
rng = np.random.RandomState(0)
X = rng.uniform(-1, 1, (3, 4, 5)).astype("float32")  # batch 3, time 4, input 5
LENS = np.array([4, 2, 3], "int64")
H0 = rng.uniform(-1, 1, (3, 6)).astype("float32")


def summary(v):
    flat = np.asarray(v).ravel().astype("float64")
    return [
        list(np.asarray(v).shape),
        round(float(flat.sum()), 6),
        round(float((flat * np.cos(np.arange(flat.size))).sum()), 6),
    ]


def flat(s):
    return [v for x in s for v in flat(x)] if isinstance(s, (list, tuple)) else [s]


CASES = {
    "lstm": dict(cell="lstm", kw={}),
    "lstm_len_reverse": dict(cell="lstm", kw={"is_reverse": True}, lens=True),
    "lstm_len": dict(cell="lstm", kw={}, lens=True),
    "gru": dict(cell="gru", kw={}),
    "gru_len": dict(cell="gru", kw={}, lens=True, init=True),
    "gru_reverse_forget": dict(cell="gru", kw={"is_reverse": True}),
}
res = {}
for name, c in CASES.items():
    main, start = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, start), fluid.unique_name.guard():
        tm = c["kw"].get("time_major", False)
        x = fluid.data("x", [4, 3, 5] if tm else [3, 4, 5], "float32")
        x.stop_gradient = False
        ln = fluid.data("len", [3], "int64")
        if c["cell"] == "lstm":
            cell = L.LSTMCell(6, forget_bias=0.5)
        else:
            cell = L.GRUCell(6)
        init = None
        if c.get("init"):
            h0 = L.assign(H0)
            init = [h0, h0 * 0.5] if c["cell"] == "lstm" else h0
        out, states = L.rnn(cell, x, initial_states=init, sequence_length=ln if c.get("lens") else None, **c["kw"])
        outs = [out] + flat(states)
        loss = L.sums([L.reduce_sum(o * L.cos(o * 3.0)) for o in outs])
        params = main.global_block().all_parameters()
        grads = fluid.gradients([loss], [x] + params)
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    with fluid.scope_guard(scope):
        exe.run(start)
        for i, p in enumerate(sorted(params, key=lambda p: p.name)):
            shape = [int(d) for d in p.shape]
            scope.find_var(p.name).get_tensor().set(
                np.random.RandomState(i + 10).uniform(-0.5, 0.5, shape).astype("float32"), fluid.CPUPlace()
            )
        xv = np.transpose(X, (1, 0, 2)).copy() if tm else X
        r = exe.run(main, feed={"x": xv, "len": LENS}, fetch_list=outs + grads)
    res[name] = {
        "params": sorted([p.name, list(p.shape)] for p in params),
        "shapes": [list(o.shape) for o in outs],
        "values": [summary(v) for v in r],
    }
print(json.dumps(res))
