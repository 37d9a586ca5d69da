# fluid.dygraph.TracedLayer: the traced program (ops, slots, names, shapes, attributes), its runs on
# the layer's parameters (before and after an optimizer step), train and eval traces, strategies,
# save_inference_model and loading the saved model back, and error texts.
import json
import os
import shutil
import sys
import tempfile

import numpy as np
import paddle.fluid as fluid
from paddle.fluid.dygraph import BatchNorm, Conv2D, Linear, Pool2D, TracedLayer, to_variable

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _golden import errors_of  # noqa: E402


def r(a):
    return np.round(np.asarray(a, "float64").reshape(-1), 4).tolist()


class Net(fluid.dygraph.Layer):
    def __init__(self):
        super(Net, self).__init__()
        self.conv = Conv2D(2, 3, 3, padding=1, act="relu")
        self.bn = BatchNorm(3)
        self.pool = Pool2D(2, "max", 2)
        self.fc = Linear(3 * 2 * 2, 4)

    def forward(self, img, bias):
        h = self.pool(self.bn(self.conv(img)))
        h = fluid.layers.reshape(h, [-1, 12])
        h = fluid.layers.dropout(h, 0.3)
        logits = self.fc(h) + bias
        return fluid.layers.softmax(logits), fluid.layers.reduce_sum(logits, dim=1)


def set_params(net):
    for k, p in enumerate(sorted(net.parameters(), key=lambda p: p.name)):
        value = np.random.RandomState(k).uniform(-0.5, 0.5, p.shape).astype("float32")
        if p.name.endswith("w_2"):  # a running variance: positive
            value = np.abs(value) + 0.5
        p.set_value(value)


def describe(program):
    block = program.global_block()
    ops = []
    for op in block.ops:
        ops.append(
            [
                op.type,
                {k: op.input(k) for k in op.input_names if op.input(k)},
                {k: op.output(k) for k in op.output_names if op.output(k)},
            ]
        )
    keys = [
        "axis",
        "is_test",
        "dropout_prob",
        "dropout_implementation",
        "pooling_type",
        "ksize",
        "strides",
        "paddings",
        "groups",
        "dilations",
        "epsilon",
        "momentum",
        "data_layout",
        "shape",
        "dim",
        "keep_dim",
        "reduce_all",
        "alpha",
        "transpose_X",
        "transpose_Y",
        "use_global_stats",
    ]
    attrs = [sorted([k, op.attr(k)] for k in keys if op.has_attr(k)) for op in block.ops]
    vars_ = sorted([v.name, list(v.shape), str(v.dtype), v.persistable] for v in block.vars.values())
    return {"ops": ops, "attrs": attrs, "vars": vars_, "blocks": program.num_blocks}


out = {}
tmp = tempfile.mkdtemp()
img_np = np.random.RandomState(7).uniform(-1, 1, (2, 2, 4, 4)).astype("float32")
bias_np = np.random.RandomState(8).uniform(-1, 1, (2, 4)).astype("float32")
with fluid.dygraph.guard(fluid.CPUPlace()):
    net = Net()
    set_params(net)
    img, bias = to_variable(img_np), to_variable(bias_np)
    net.eval()
    outs, traced = TracedLayer.trace(net, inputs=[img, bias])
    out["outs_type"] = [type(outs).__name__, len(outs), [list(o.shape) for o in outs]]
    out["eval_program"] = describe(traced.program)
    out["names"] = [traced._feed_names, traced._fetch_names, sorted(p.name for p in traced._params)]
    static = traced([img, bias])
    out["static_type"] = [type(static).__name__, len(static), [list(np.asarray(a).shape) for a in static]]
    out["eval_dygraph"] = [r(o.numpy()) for o in outs]
    out["eval_static"] = [r(a) for a in static]
    # the static program shares the layer's parameters: an optimizer step shows in the next run
    net.train()
    opt = fluid.optimizer.SGD(0.5, parameter_list=net.parameters())
    loss = fluid.layers.reduce_mean(net.fc(fluid.layers.reshape(net.pool(net.bn(net.conv(img))), [-1, 12])))
    loss.backward()
    opt.minimize(loss)
    net.clear_gradients()
    net.eval()
    after = traced([img, bias])
    out["after_step_static"] = [r(a) for a in after]
    out["after_step_dygraph"] = [r(o.numpy()) for o in net(img, bias)]
    # a train-mode trace: dropout and batch norm as in training
    net.train()
    outs_t, traced_t = TracedLayer.trace(net, inputs=[img, bias])
    out["train_program"] = describe(traced_t.program)
    traced_t._switch(is_test=True)
    ops = traced_t.program.global_block().ops
    out["switched_is_test"] = [op.attr("is_test") for op in ops if op.has_attr("is_test")]
    # strategies
    build = fluid.BuildStrategy()
    build.enable_inplace = True
    exe_strategy = fluid.ExecutionStrategy()
    exe_strategy.num_threads = 2
    net.eval()
    _, traced_s = TracedLayer.trace(net, inputs=[img, bias])
    traced_s.set_strategy(build_strategy=build, exec_strategy=exe_strategy)
    out["strategy_run"] = [r(a) for a in traced_s([img, bias])]
    # save the eval trace for inference: all outputs, and one input/output picked by index
    traced.save_inference_model(os.path.join(tmp, "all"))
    traced.save_inference_model(os.path.join(tmp, "picked"), feed=[0, 1], fetch=[1])
    out["saved_files"] = [sorted(n for n in os.listdir(os.path.join(tmp, d)) if n[0] != ".") for d in ("all", "picked")]
    out["errors"] = errors_of(
        [
            lambda: traced_s.set_strategy(build_strategy=build),
            lambda: traced([img]),
            lambda: traced(img),
        ]
    )
    want_after = [o.numpy() for o in net(img, bias)]

exe = fluid.Executor(fluid.CPUPlace())
for d in ("all", "picked"):
    program, feed_names, fetch_vars = fluid.io.load_inference_model(os.path.join(tmp, d), exe)
    res = exe.run(program, feed={feed_names[0]: img_np, feed_names[1]: bias_np}, fetch_list=fetch_vars)
    out["loaded_" + d] = [feed_names, [v.name for v in fetch_vars], [r(a) for a in res]]
res = exe.run(program, feed={feed_names[0]: img_np, feed_names[1]: bias_np}, fetch_list=fetch_vars)
out["loaded_matches_layer"] = [bool(np.allclose(a, b, atol=1e-5)) for a, b in zip(res, want_after[1:])]
out["errors"] += errors_of([lambda: TracedLayer.trace(net, inputs=[img, bias])])
shutil.rmtree(tmp)
print(json.dumps(out, sort_keys=True))
