# Golden script: the order in which a program lists its variables where fluid 1.8.5 rebuilt its
# Python blocks from the C++ ones: the gradients minimize and fluid.gradients add, clone,
# clone(for_test=True) before and after minimize (and with a while loop's blocks), _prune,
# _prune_with_input, the __model__ save_inference_model writes and the program
# load_inference_model / parse_from_string read back, a startup program's clone, a block past
# the hash table's growth points (11, 23, 47, 97, 199, 409 variables), _remove_var and
# _rename_var. Prints a JSON report of name lists.
import json
import os
import shutil
import tempfile

import paddle.fluid as fluid
import paddle.fluid.layers as L


def names(prog, block=0):
    return [v.name for v in prog.block(block).vars.values()]


report = {}
main, start = fluid.Program(), fluid.Program()
with fluid.program_guard(main, start):
    words = fluid.data("words", [None, 4, 1], "int64")
    x = fluid.data("x", [None, 6], "float32")
    lab = fluid.data("lab", [None, 1], "int64")
    emb = L.embedding(words, size=[50, 8])
    pooled = L.reduce_sum(emb, dim=1)
    h = L.concat([pooled, x], axis=1)
    h = L.fc(h, 16, act="tanh")
    h = L.dropout(L.layer_norm(h), 0.2)
    p = L.fc(h, 3, act="softmax")
    loss = L.mean(L.cross_entropy(p, lab))
    acc = L.accuracy(p, lab)
    report["forward"] = names(main)
    report["clone_forward"] = names(main.clone())
    report["test_before"] = names(main.clone(for_test=True))
    fluid.optimizer.Adam(0.01).minimize(loss)
    report["trained"] = names(main)
    report["clone_trained"] = names(main.clone())
    report["test_after"] = names(main.clone(for_test=True))
    report["pruned"] = names(main._prune(targets=[loss]))
    report["pruned_with_input"] = names(main._prune_with_input(["x", "words"], [p]))
report["startup"] = names(start)
report["startup_clone"] = names(start.clone())

exe = fluid.Executor(fluid.CPUPlace())
exe.run(start)
tmp = tempfile.mkdtemp()
try:
    fluid.io.save_inference_model(tmp, ["words", "x"], [p, acc], exe, main_program=main.clone())
    with open(os.path.join(tmp, "__model__"), "rb") as f:
        report["parsed"] = names(fluid.Program.parse_from_string(f.read()))
    prog, feeds, fetches = fluid.io.load_inference_model(tmp, exe)
    report["loaded"] = names(prog)
finally:
    shutil.rmtree(tmp)

# fluid.gradients, and a while loop's blocks
g_main, g_start = fluid.Program(), fluid.Program()
with fluid.program_guard(g_main, g_start):
    a = fluid.data("a", [None, 5], "float32")
    a.stop_gradient = False
    b = L.fc(a, 5, act="sigmoid")
    c = L.reduce_mean(L.square(b))
    fluid.gradients([c], [a, b])
    report["gradients"] = names(g_main)

w_main, w_start = fluid.Program(), fluid.Program()
with fluid.program_guard(w_main, w_start):
    d = fluid.data("d", [None, 3], "float32")
    d.stop_gradient = False
    i = L.fill_constant([1], "int64", 0)
    n = L.fill_constant([1], "int64", 3)
    acc_v = L.fill_constant([1], "float32", 0.0)
    cond = L.less_than(i, n)
    loop = L.While(cond)
    with loop.block():
        s = L.reduce_sum(L.fc(d, 3, act="relu"))
        L.assign(L.elementwise_add(acc_v, s), acc_v)
        L.increment(i, in_place=True)
        L.less_than(i, n, cond=cond)
    w_loss = L.mean(acc_v)
    report["while_test_before"] = [names(w_main.clone(for_test=True), k) for k in range(w_main.num_blocks)]
    fluid.optimizer.SGD(0.1).minimize(w_loss)
    report["while_trained"] = [names(w_main, k) for k in range(w_main.num_blocks)]
    report["while_clone"] = [names(w_main.clone(), k) for k in range(w_main.num_blocks)]

# a deep stack: the table grows past 11, 23, ..., 409 variables
big_main, big_start = fluid.Program(), fluid.Program()
with fluid.program_guard(big_main, big_start):
    z = fluid.data("z", [None, 4], "float32")
    for k in range(90):
        z = L.fc(z, 4, act="relu" if k % 2 else None)
    big_loss = L.mean(z)
    report["big_clone_forward"] = names(big_main.clone())
    fluid.optimizer.Momentum(0.1, 0.9).minimize(big_loss)
    report["big_trained"] = names(big_main)
    report["big_test"] = names(big_main.clone(for_test=True))
    report["big_clone"] = names(big_main.clone())

# variables removed and renamed before a copy
r_main = fluid.Program()
blk = r_main.global_block()
for k in range(30):
    blk.create_var(name="v%d" % k, shape=[1], dtype="float32")
for k in range(0, 30, 4):
    blk._remove_var("v%d" % k)
blk._rename_var("v1", "renamed_v1")
blk.create_var(name="late", shape=[1], dtype="float32")
report["edited"] = names(r_main)
report["edited_clone"] = names(r_main.clone())
print(json.dumps(report))
