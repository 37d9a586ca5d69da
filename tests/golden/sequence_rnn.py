"""dynamic_lstm (with and without peepholes, reversed, other activations, initial states) and
dynamic_gru (both origin modes, reversed, initial state): outputs with their LoD, and the gradients
of sum(out * out) for the input, the initial state and the parameters. Prints JSON; run under
fluid 1.8.5 (tools/fluid18) it wrote sequence_rnn.json."""

import json

import numpy as np
import paddle.fluid as fluid

L = fluid.layers
NI = fluid.initializer.NumpyArrayInitializer
D = 2
H0 = np.array([[0.1, -0.2], [0.3, 0.4], [-0.5, 0.2]], "float32")
C0 = np.array([[0.2, 0.1], [-0.3, 0.1], [0.5, -0.2]], "float32")
results = {}


def run(name, build, width=4 * D, extra=None):
    main, start = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, start):
        x = fluid.data(name="x", shape=[None, width], dtype="float32", lod_level=1)
        x.stop_gradient = False
        outs = build(x)
        loss = L.reduce_sum(outs[0] * outs[0])
        fluid.backward.append_backward(loss)
        params = sorted(p.name for p in main.global_block().all_parameters())
        fetch = list(outs) + ["x@GRAD"] + (["h0@GRAD"] if "h0" in main.global_block().vars else [])
        fetch += [p + "@GRAD" for p in params]
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(start)
    xv = np.sin(np.arange(6 * width).reshape(6, width)).astype("float32")
    feed = {"x": fluid.create_lod_tensor(xv, [[2, 3, 1]], fluid.CPUPlace())}
    feed.update(extra or {})
    rs = exe.run(main, feed=feed, fetch_list=fetch, return_numpy=False)
    results[name] = {
        "params": [[p, list(main.global_block().var(p).shape)] for p in params],
        "values": [[r.lod(), list(np.array(r).shape)] + np.array(r).reshape(-1).tolist() for r in rs],
    }


wl = np.linspace(-0.5, 0.6, D * 4 * D).reshape(D, 4 * D).astype("float32")
bl = np.linspace(-0.3, 0.3, 7 * D).reshape(1, 7 * D).astype("float32")
for peep in [True, False]:
    for rev in [False, True]:
        bias = bl if peep else bl[:, : 4 * D].copy()
        run(
            "lstm_peepholes%d_reverse%d" % (peep, rev),
            lambda x: list(
                L.dynamic_lstm(x, 4 * D, param_attr=NI(wl), bias_attr=NI(bias), use_peepholes=peep, is_reverse=rev)
            ),
        )
run(
    "lstm_activations",
    lambda x: list(
        L.dynamic_lstm(
            x,
            4 * D,
            param_attr=NI(wl),
            bias_attr=NI(bl),
            gate_activation="tanh",
            cell_activation="relu",
            candidate_activation="sigmoid",
        )
    ),
)


def lstm_h0(x):
    h0 = fluid.data(name="h0", shape=[None, D], dtype="float32")
    h0.stop_gradient = False
    c0 = fluid.data(name="c0", shape=[None, D], dtype="float32")
    return list(L.dynamic_lstm(x, 4 * D + 1, h_0=h0, c_0=c0, param_attr=NI(wl), bias_attr=NI(bl)))


run("lstm_initial_states", lstm_h0, extra={"h0": H0, "c0": C0})
wg = np.linspace(-0.5, 0.6, D * 3 * D).reshape(D, 3 * D).astype("float32")
bg = np.linspace(-0.3, 0.3, 3 * D).reshape(1, 3 * D).astype("float32")
for om in [False, True]:
    for rev in [False, True]:
        run(
            "gru_origin%d_reverse%d" % (om, rev),
            lambda x: [L.dynamic_gru(x, D, param_attr=NI(wg), bias_attr=NI(bg), origin_mode=om, is_reverse=rev)],
            width=3 * D,
        )


def gru_h0(x):
    h0 = fluid.data(name="h0", shape=[None, D], dtype="float32")
    h0.stop_gradient = False
    return [
        L.dynamic_gru(
            x, D, h_0=h0, param_attr=NI(wg), bias_attr=NI(bg), candidate_activation="relu", gate_activation="tanh"
        )
    ]


run("gru_initial_state", gru_h0, width=3 * D, extra={"h0": H0})
print(json.dumps(results, sort_keys=True))
