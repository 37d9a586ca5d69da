# Golden script: a program of control flow (while, cond), assign_value of each dtype, ops with empty
# and float-list attributes, lookup tables and a training step, serialized by fluid 1.8.5 to
# program_desc.bin with PROGRAM_DESC=write (the bytes fluidcompat must read, and whose attribute types
# it must write back); with PROGRAM_DESC=read the program run is the one parsed from those bytes. Prints
# the fetched values of one run.
import json
import os

import numpy as np
import paddle.fluid as fluid

L = fluid.layers
main, start = fluid.Program(), fluid.Program()
with fluid.program_guard(main, start):
    x = fluid.data("x", [None, 3], "float32")
    ids = fluid.data("ids", [None, 1], "int64")
    emb = L.embedding(ids, size=[10, 3], param_attr=fluid.initializer.Constant(0.1))
    i = L.fill_constant([1], "int64", 0)
    n = L.fill_constant([1], "int64", 3)
    acc = L.assign(x)
    cond = L.less_than(i, n)
    loop = L.While(cond)
    with loop.block():
        L.assign(L.scale(acc, scale=2, bias=1) + emb, acc)
        L.increment(i, 1, in_place=True)
        L.less_than(i, n, cond=cond)
    y = L.cond(L.reduce_sum(acc) > 0.0, lambda: L.relu(acc), lambda: L.tanh(acc))
    big = L.assign(np.array([2**40, -3], "int64"))
    flags = L.assign(np.array([True, False]))
    f32 = L.assign(np.array([0.5, 1.5, -2.0], "float32"))
    i32 = L.assign(np.array([7, 8], "int32"))
    t = L.transpose(L.unsqueeze(y, [0]), [1, 0, 2])
    z = L.fc(L.squeeze(t, [1]) + f32, 2, param_attr=fluid.initializer.Constant(0.2))
    loss = L.mean(z)
    forward = main.clone(for_test=True)
    fluid.optimizer.Momentum(0.1, 0.9).minimize(loss)
here = os.path.dirname(os.path.abspath(__file__))
mode = os.environ.get("PROGRAM_DESC", "")
if mode.startswith("write"):  # "write": record under fluid 1.8.5; "write:DIR": write to DIR instead
    folder = mode.split(":", 1)[1] if ":" in mode else here
    for name, program in (("program_desc.bin", forward), ("program_desc_train.bin", main)):
        with open(os.path.join(folder, name), "wb") as f:
            f.write(program.desc.serialize_to_string())
elif mode == "read":  # run fluid's serialized forward program instead of the one built here
    with open(os.path.join(here, "program_desc.bin"), "rb") as f:
        forward = fluid.Program.parse_from_string(f.read())
exe = fluid.Executor(fluid.CPUPlace())
exe.run(start)
feed = {"x": np.array([[1.0, -2.0, 3.0], [0.5, 0.5, -1.0]], "float32"), "ids": np.array([[1], [4]], "int64")}
r = exe.run(forward, feed=feed, fetch_list=[y.name, loss.name, big.name, flags.name, i32.name])
r += exe.run(main, feed=feed, fetch_list=[loss.name])
print(json.dumps([np.asarray(v).tolist() for v in r]))
