"""StaticRNN, layers.rnn and fluid.contrib's basic_lstm / basic_gru over inputs whose number of time
steps is known only when the program runs (data shape [None, None, ...]), as seq2seq scripts feed
them: outputs, final states and gradients for two lengths in one program; the parameters' names and
shapes (and a GRUCell with named attributes, its steps known). Parameters are set from numpy by name
so that both runs start alike. Prints JSON; run under fluid 1.8.5 (tools/fluid18) it wrote
rnn_dynamic_length.json."""

import json

import numpy as np
import paddle.fluid as fluid
from _golden import set_params
from paddle.fluid.contrib.layers import basic_gru, basic_lstm

L = fluid.layers
place = fluid.CPUPlace()
results = {}


def r(a):
    a = np.array(a)
    return [list(a.shape)] + np.round(a.reshape(-1).astype("float64"), 5).tolist()


def run(name, build, feeds):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        fetch = build()
    params = sorted((p.name, list(p.shape)) for p in main.global_block().all_parameters())
    scope = fluid.Scope()
    exe = fluid.Executor(place)
    with fluid.scope_guard(scope):
        exe.run(startup)
        set_params(main, scope)
        runs = []
        for feed in feeds:
            runs.append([r(v) for v in exe.run(main, feed=feed, fetch_list=fetch)])
    results[name] = {"params": params, "runs": runs}


def grads_of(loss, extra):
    pg = fluid.backward.append_backward(loss)
    return extra + [g for _, g in sorted(pg, key=lambda x: x[0].name)]


def static_rnn():
    x = fluid.data("x", [None, None, 3], "float32")
    x.stop_gradient = False
    rnn = L.StaticRNN()
    with rnn.step():
        xt = rnn.step_input(x)
        h = rnn.memory(shape=[-1, 4], batch_ref=xt, init_value=0.5)
        nh = L.tanh(L.fc(xt, 4) + L.fc(h, 4, bias_attr=False))
        rnn.update_memory(h, nh)
        rnn.step_output(nh)
        rnn.step_output(L.scale(nh, 2.0))
    out, out2 = rnn()
    loss = L.reduce_mean(out * out2)
    return grads_of(loss, [out, loss, x.name + "@GRAD"])


def lstm_rnn():
    x = fluid.data("x", [None, None, 3], "float32")
    lens = fluid.data("lens", [None], "int64")
    cell = L.LSTMCell(4)
    out, (h, c) = L.rnn(cell, x, sequence_length=lens)
    gcell = L.GRUCell(5)
    rout, rh = L.rnn(gcell, x, is_reverse=True)
    loss = L.reduce_mean(out) + L.reduce_mean(rout * rout)
    return grads_of(loss, [out, h, c, rout, rh, loss])


def basic_lstm_case():
    x = fluid.data("x", [None, None, 3], "float32")
    lens = fluid.data("lens", [None], "int64")
    h0 = fluid.data("h0", [4, None, 4], "float32")
    c0 = fluid.data("c0", [4, None, 4], "float32")
    out, h, c = basic_lstm(
        x,
        h0,
        c0,
        4,
        num_layers=2,
        sequence_length=lens,
        bidirectional=True,
        param_attr=fluid.ParamAttr(name="lw"),
        bias_attr=fluid.ParamAttr(name="lb"),
    )
    loss = L.reduce_mean(out) + L.reduce_mean(h * c)
    return grads_of(loss, [out, h, c, loss])


def named_gru():
    # a named param_attr: the GRU unit's two weights and biases get _gate / _candidate suffixes
    x = fluid.data("x", [None, 3, 3], "float32")
    cell = L.GRUCell(4, param_attr=fluid.ParamAttr(name="gw"), bias_attr=fluid.ParamAttr(name="gb"))
    out, h = L.rnn(cell, x)
    return grads_of(L.reduce_mean(out), [out, h])


def basic_gru_case():
    x = fluid.data("x", [None, None, 3], "float32")
    out, h = basic_gru(x, None, 5, num_layers=1)
    loss = L.reduce_mean(out * out)
    return grads_of(loss, [out, h, loss])


rng = np.random.RandomState(0)
xs = [rng.uniform(-1, 1, (4, 2, 3)).astype("float32"), rng.uniform(-1, 1, (6, 3, 3)).astype("float32")]
run("static_rnn", static_rnn, [{"x": x} for x in xs])
bx = [rng.uniform(-1, 1, (2, 5, 3)).astype("float32"), rng.uniform(-1, 1, (3, 2, 3)).astype("float32")]
blens = [np.array([5, 3], "int64"), np.array([1, 2, 2], "int64")]
run("rnn_cells", lstm_rnn, [{"x": x, "lens": n} for x, n in zip(bx, blens)])
run(
    "basic_lstm",
    basic_lstm_case,
    [
        {
            "x": x,
            "lens": n,
            "h0": rng.uniform(-1, 1, (4, len(n), 4)).astype("float32"),
            "c0": rng.uniform(-1, 1, (4, len(n), 4)).astype("float32"),
        }
        for x, n in zip(bx, blens)
    ],
)
run("basic_gru", basic_gru_case, [{"x": x} for x in bx])
run("named_gru", named_gru, [{"x": rng.uniform(-1, 1, (2, 3, 3)).astype("float32")}])
print(json.dumps(results, sort_keys=True))
