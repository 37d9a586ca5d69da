"""The rest of fluid 1.x's hand-written dynamic RNN: lod_tensor_to_array (each step's rows of the
sequences still running, longest first), array_to_lod_tensor (back to the sequences in their
order, with their LoD), shrink_memory (a memory cut to the sequences still running at step i), and
a While loop over them (a running sum), and the gradient through the array and back. (fluid 1.8.5
could not differentiate the loop: its backward summed gradients of the shrinking memory's shapes,
"The input tensor X of SumOp must have same shape".) Prints JSON; run under fluid 1.8.5
(tools/fluid18) it wrote lod_tensor_array.json."""

import json

import numpy as np
import paddle.fluid as fluid
from _golden import flat
from paddle.fluid.layers import control_flow as cf

L = fluid.layers
place = fluid.CPUPlace()
results = {}


main, startup = fluid.Program(), fluid.Program()
with fluid.program_guard(main, startup):
    x = fluid.data("x", [None, 2], "float32", lod_level=1)
    x.stop_gradient = False
    table = cf.lod_rank_table(x)
    arr = cf.lod_tensor_to_array(x, table)
    back = cf.array_to_lod_tensor(arr, table)
    first = L.array_read(arr, L.zeros([1], "int64"))
    third = L.array_read(arr, L.fill_constant([1], "int64", 2))
    # a running sum over the steps, the memory shrinking with the sequences still running
    steps = cf.max_sequence_len(table)
    i = L.zeros([1], "int64")
    mem = L.fill_constant_batch_size_like(first, [-1, 2], "float32", 0.0)
    outs = L.create_array("float32")
    cond = L.less_than(i, steps)
    loop = L.While(cond)
    with loop.block():
        step = L.array_read(arr, i)
        prev = cf.shrink_memory(mem, i, table)
        new = L.elementwise_add(prev, step)
        L.assign(new, mem)
        L.array_write(new, i, array=outs)
        L.increment(i, 1, in_place=True)
        L.less_than(i, steps, cond=cond)
    summed = cf.array_to_lod_tensor(outs, table)
    fluid.backward.append_backward(L.reduce_sum(back * back * L.assign(np.arange(18, dtype="float32").reshape(9, 2))))
xv = np.arange(18, dtype="float32").reshape(9, 2) / 10
feed = {"x": fluid.create_lod_tensor(xv, [[2, 4, 1, 2]], place)}
rs = fluid.Executor(place).run(main, feed=feed, fetch_list=[back, first, third, summed, "x@GRAD"], return_numpy=False)
results["arrays"] = [flat(r) for r in rs]
print(json.dumps(results, sort_keys=True))
