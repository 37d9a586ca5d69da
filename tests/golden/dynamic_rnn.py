"""DynamicRNN over LoD sequences as fluid's docs use it: a step input, a memory from a shape and one
from an initial tensor (rows in length order, or reordered), fc steps, update_memory, two outputs;
the outputs with their LoD and the gradients of their sum of squares for the input, the initial
state and the fc parameters. Prints JSON; run under fluid 1.8.5 (tools/fluid18) it wrote
dynamic_rnn.json."""

import json

import numpy as np
import paddle.fluid as fluid

L = fluid.layers
C = fluid.initializer.Constant
results = {}


def run(name, lens, with_init, need_reorder=False):
    main, start = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, start):
        x = fluid.data(name="x", shape=[None, 3], dtype="float32", lod_level=1)
        x.stop_gradient = False
        h0 = fluid.data(name="h0", shape=[None, 2], dtype="float32")
        h0.stop_gradient = False
        drnn = L.DynamicRNN()
        with drnn.block():
            word = drnn.step_input(x)
            prev = drnn.memory(shape=[4], value=0.1)
            other = drnn.memory(init=h0, need_reorder=need_reorder) if with_init else drnn.memory(shape=[2])
            hidden = L.fc(input=[word, prev], size=4, act="tanh",
                          param_attr=[fluid.ParamAttr(initializer=C(0.3)), fluid.ParamAttr(initializer=C(-0.2))],
                          bias_attr=fluid.ParamAttr(initializer=C(0.05)))  # fmt: skip
            second = L.fc(input=[hidden, other], size=2, act="sigmoid",
                          param_attr=[fluid.ParamAttr(initializer=C(0.25)), fluid.ParamAttr(initializer=C(0.4))],
                          bias_attr=False)  # fmt: skip
            drnn.update_memory(prev, hidden)
            drnn.update_memory(other, second)
            drnn.output(hidden, second)
        out_h, out_s = drnn()
        loss = L.reduce_sum(out_h * out_h) + L.reduce_sum(out_s * out_s)
        fluid.backward.append_backward(loss)
        params = sorted(p.name for p in main.global_block().all_parameters())
        fetch = [out_h, out_s, "x@GRAD"] + (["h0@GRAD"] if with_init else []) + [p + "@GRAD" for p in params]
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(start)
    rows = sum(lens)
    xv = np.sin(np.arange(rows * 3).reshape(rows, 3)).astype("float32")
    feed = {"x": fluid.create_lod_tensor(xv, [lens], fluid.CPUPlace()),
            "h0": np.cos(np.arange(len(lens) * 2).reshape(len(lens), 2)).astype("float32")}  # fmt: skip
    rs = exe.run(main, feed=feed, fetch_list=fetch, return_numpy=False)
    results[name] = [[r.lod(), list(np.array(r).shape)] + np.array(r).reshape(-1).tolist() for r in rs]


run("memory_from_shape", [2, 4, 1], False)
run("memory_from_init", [3, 1, 2], True)
run("memory_from_init_reordered", [1, 3, 3, 2], True, need_reorder=True)
print(json.dumps(results, sort_keys=True))
