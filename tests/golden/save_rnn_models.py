# Saves inference models fluid 1.8.5 built with StaticRNN (a recurrent op) and DynamicRNN (a while
# loop over a LoD rank table) to OUT/static_rnn and OUT/dynamic_rnn, and prints their outputs.
import json
import os
import sys

import numpy as np
import paddle.fluid as fluid
import paddle.fluid.layers as layers

OUT = sys.argv[1]
place = fluid.CPUPlace()
exe = fluid.Executor(place)
out = {}
x_np = np.random.RandomState(0).uniform(-1, 1, (4, 3, 5)).astype("float32")  # [time, batch, feature]

main, startup = fluid.Program(), fluid.Program()
with fluid.program_guard(main, startup):
    x = fluid.data("x", [4, 3, 5], "float32")
    boot = fluid.data("boot", [3, 6], "float32")
    rnn = layers.StaticRNN()
    with rnn.step():
        word = rnn.step_input(x)
        prev = rnn.memory(init=boot)
        prev2 = rnn.memory(shape=[-1, 2], batch_ref=word, init_value=0.5)
        hidden = layers.fc([word, prev], size=6, act="tanh")
        h2 = layers.elementwise_add(layers.fc(hidden, size=2), prev2)
        rnn.update_memory(prev, hidden)
        rnn.update_memory(prev2, h2)
        rnn.step_output(hidden)
        rnn.step_output(h2)
    hs, h2s = rnn()
    result = layers.reduce_sum(hs, dim=0) + layers.reduce_mean(h2s)
exe.run(startup)
for k, p in enumerate(sorted(p.name for p in main.global_block().all_parameters())):
    shape = np.array(fluid.global_scope().find_var(p).get_tensor()).shape
    fluid.global_scope().find_var(p).get_tensor().set(
        np.random.RandomState(k).uniform(-0.5, 0.5, shape).astype("float32"), place
    )
boot_np = np.random.RandomState(1).uniform(-1, 1, (3, 6)).astype("float32")
fluid.io.save_inference_model(os.path.join(OUT, "static_rnn"), ["x", "boot"], [result, h2s], exe, main_program=main)
r, h = exe.run(main, feed={"x": x_np, "boot": boot_np}, fetch_list=[result, h2s])
out["static_rnn"] = [np.round(r, 5).tolist(), np.round(h, 5).tolist()]
out["static_rnn_ops"] = [op.type for op in main.global_block().ops]
main, startup = fluid.Program(), fluid.Program()
with fluid.program_guard(main, startup):
    words = fluid.data("words", [None, 1], "int64", lod_level=1)
    emb = layers.embedding(words, size=[10, 4])
    start = fluid.data("start", [None, 3], "float32")
    drnn = layers.DynamicRNN()
    with drnn.block():
        w = drnn.step_input(emb)
        mem = drnn.memory(init=start, need_reorder=True)
        h = layers.fc([w, mem], size=3, act="tanh")
        drnn.update_memory(mem, h)
        drnn.output(h)
    seq = drnn()
    last = layers.sequence_last_step(seq)
exe.run(startup)
for k, p in enumerate(sorted(p.name for p in main.global_block().all_parameters())):
    shape = np.array(fluid.global_scope().find_var(p).get_tensor()).shape
    fluid.global_scope().find_var(p).get_tensor().set(
        np.random.RandomState(k + 10).uniform(-0.5, 0.5, shape).astype("float32"), place
    )
fluid.io.save_inference_model(os.path.join(OUT, "dynamic_rnn"), ["words", "start"], [seq, last], exe, main_program=main)
feed = {
    "words": fluid.create_lod_tensor(np.array([1, 2, 3, 4, 5, 6], "int64").reshape(-1, 1), [[2, 3, 1]], place),
    "start": np.random.RandomState(2).uniform(-1, 1, (3, 3)).astype("float32"),
}
s_, l_ = exe.run(main, feed=feed, fetch_list=[seq, last], return_numpy=False)
out["dynamic_rnn"] = [s_.lod(), np.round(np.array(s_), 5).tolist(), np.round(np.array(l_), 5).tolist()]
print(json.dumps(out, sort_keys=True))
