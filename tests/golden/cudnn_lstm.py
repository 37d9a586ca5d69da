# fluid.layers.lstm (op cudnn_lstm) as fluid 1.8.5 builds it: names, shapes and dtypes, attributes,
# the flat weight's size and initializer, the grad op's slots (init states with and without
# gradients), and the errors for bad arguments. fluid 1.8.5 has no CPU kernel for cudnn_lstm, so
# the values are checked against numpy in tests/test_rnn_lstm.py.
import json
import os
import sys

import paddle.fluid as fluid
import paddle.fluid.layers as layers

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _golden import errors_of  # noqa: E402


def describe(main, startup):
    ops = []
    for op in main.global_block().ops:
        if op.type.startswith("cudnn_lstm"):
            ops.append(
                {
                    "type": op.type,
                    "inputs": {k: op.input(k) for k in sorted(op.input_names)},
                    "outputs": {k: op.output(k) for k in sorted(op.output_names)},
                    "attrs": {k: op.attr(k) for k in sorted(op.attr_names) if not k.startswith("op_")},
                }
            )
    init = [
        [op.type, op.output_arg_names, {k: op.attr(k) for k in ("shape", "min", "max", "value") if op.has_attr(k)}]
        for op in startup.global_block().ops
    ]
    lstm_vars = {
        n: [list(v.shape), str(v.dtype), v.persistable, v.stop_gradient]
        for n, v in main.global_block().vars.items()
        if n.startswith(("cudnn_lstm", "enc"))
    }
    for n, v in main.global_block().vars.items():
        if n.startswith("_generated_var"):  # the RAW cache: no shape or dtype
            lstm_vars[n] = [str(v.type), v.persistable, v.stop_gradient]
    return {"ops": ops, "startup": init, "vars": lstm_vars}


def build(layers_, bidi, dtype="float32", state_grads=False, **kw):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [7, 3, 4], dtype)
        x.stop_gradient = False
        dirs = 2 if bidi else 1
        if state_grads:
            h0 = fluid.data("h0", [layers_ * dirs, 3, 5], dtype)
            c0 = fluid.data("c0", [layers_ * dirs, 3, 5], dtype)
            h0.stop_gradient = c0.stop_gradient = False
        else:
            h0 = layers.fill_constant([layers_ * dirs, 3, 5], dtype, 0.0)
            c0 = layers.fill_constant([layers_ * dirs, 3, 5], dtype, 0.0)
        out, h, c = layers.lstm(x, h0, c0, 7, 5, layers_, is_bidirec=bidi, **kw)
        loss = layers.mean(h) if state_grads else layers.mean(out)
        fluid.backward.append_backward(loss)
    return main, startup, out


out = {}
main, startup, o = build(1, False)
out["one_layer"] = describe(main, startup)
main, startup, o = build(2, True, state_grads=True, dropout_prob=0.25, seed=3, is_test=True, name="enc")
out["two_layers_bidirectional"] = describe(main, startup)
main, startup, o = build(3, False, dtype="float64", default_initializer=fluid.initializer.Constant(0.5))
out["three_layers_float64"] = describe(main, startup)


def bad(**kw):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [7, 3, 4], kw.pop("dtype", "float32"))
        h0 = layers.fill_constant([1, 3, 5], "float32", 0.0)
        args = dict(input=x, init_h=h0, init_c=h0, max_len=7, hidden_size=5, num_layers=1)
        args.update(kw)
        layers.lstm(**args)


out["errors"] = errors_of(
    [
        lambda: bad(max_len=7.0),
        lambda: bad(hidden_size="5"),
        lambda: bad(dtype="int64"),
        lambda: bad(init_h=[1, 2]),
    ]
)
print(json.dumps(out, sort_keys=True))
