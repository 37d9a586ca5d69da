# Golden script: tensor arrays (create_array, array_write, array_read, array_length,
# tensor_array_to_tensor in its four modes), a while_loop summing an array, and fluid's While over
# arrays with gradients (the step-by-step memory pattern); prints values, dtypes, names and each
# block's op types.
import json

import numpy as np
import paddle.fluid as fluid
import paddle.fluid.layers as L

out = {}
exe = fluid.Executor(fluid.CPUPlace())


def blocks(program):
    return [[b.idx, b.parent_idx, b.forward_block_idx, [op.type for op in b.ops]] for b in program.blocks]


def values(vals):
    return [[str(np.asarray(v).dtype), np.round(np.asarray(v).astype("float64"), 6).tolist()] for v in vals]


# 1. the array ops, names and shapes
main, startup = fluid.Program(), fluid.Program()
with fluid.program_guard(main, startup):
    arr = L.create_array("float32")
    x = L.assign(np.arange(6, dtype="float32").reshape(2, 3))
    i0 = L.fill_constant([1], "int64", 0)
    i1 = L.fill_constant([1], "int64", 1)
    same = L.array_write(x, i0, array=arr) is arr
    L.array_write(x * 2.0, i1, array=arr)
    n = L.array_length(arr)
    r = L.array_read(arr, i1)
    fetch = [n, r]
    shapes = {"arr": [arr.name, list(arr.shape), same], "n": [n.name, list(n.shape)], "r": [r.name, list(r.shape)]}
    for axis, stack in ((0, False), (1, False), (0, True), (1, True)):
        t, idx = L.tensor_array_to_tensor(arr, axis=axis, use_stack=stack)
        fetch += [t, idx]
        shapes[f"t{axis}{int(stack)}"] = [t.name, list(t.shape), idx.name, list(idx.shape)]
    fresh = L.array_write(x, i0)
    shapes["fresh"] = [fresh.name, list(fresh.shape)]
out["ops"] = {"values": values(exe.run(main, fetch_list=fetch)), "shapes": shapes, "blocks": blocks(main)}

# 2. a while_loop summing an array filled outside the loop
main, startup = fluid.Program(), fluid.Program()
with fluid.program_guard(main, startup):
    arr = L.create_array("float32")
    for k in range(4):
        L.array_write(L.fill_constant([2], "float32", float(k + 1)), L.fill_constant([1], "int64", k), array=arr)
    n = L.array_length(arr)
    i = L.fill_constant([1], "int64", 0)
    s = L.fill_constant([2], "float32", 0.0)
    i, s = L.while_loop(lambda i, s: L.less_than(i, n), lambda i, s: [i + 1, s + L.array_read(arr, i)], [i, s])
out["sum"] = {"values": values(exe.run(main, fetch_list=[i, s, n])), "blocks": blocks(main)}

# 3. While over arrays with gradients: mem[i + 1] = data[i] + mem[i]
main, startup = fluid.Program(), fluid.Program()
with fluid.program_guard(main, startup):
    d = [fluid.data(f"d{k}", [2, 3], "float32") for k in range(3)]
    for v in d:
        v.stop_gradient = False
    i = L.zeros([1], "int64")
    i.stop_gradient = True
    init = L.zeros([2, 3], "float32")
    mem_array = L.array_write(init, i)
    data_array = L.array_write(d[0], i)
    i = L.increment(i)
    L.array_write(d[1], i, array=data_array)
    i = L.increment(i)
    L.array_write(d[2], i, array=data_array)
    i = L.zeros([1], "int64")
    i.stop_gradient = True
    array_len = L.fill_constant([1], "int64", 3)
    array_len.stop_gradient = True
    cond = L.less_than(i, array_len)
    loop = L.While(cond)
    with loop.block():
        di = L.array_read(data_array, i)
        prev = L.array_read(mem_array, i)
        result = L.sums([L.tanh(di), prev * 0.5])
        i = L.increment(i, in_place=True)
        L.array_write(result, i, array=mem_array)
        L.less_than(i, array_len, cond=cond)
    last = L.array_read(mem_array, i)
    loss = L.mean(last * last)
    fluid.backward.append_backward(loss)
feed = {f"d{k}": (np.arange(6, dtype="float32").reshape(2, 3) / 10.0 - 0.2 * k).astype("float32") for k in range(3)}
got = exe.run(main, feed=feed, fetch_list=[loss, "d0@GRAD", "d1@GRAD", "d2@GRAD"])
out["while_grad"] = {"values": values(got), "blocks": blocks(main)}
print(json.dumps(out, sort_keys=True))
