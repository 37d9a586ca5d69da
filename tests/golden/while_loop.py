# Golden script: while_loop summing a counter, a cond nested in a while_loop, a while_loop summing the
# rows of a tensor read with gather, and a While block updating its own condition; prints values,
# dtypes and each block's op types.
import json
import sys

import numpy as np
import paddle.fluid as fluid
import paddle.fluid.layers as L

main_program, startup_program = fluid.Program(), fluid.Program()
with fluid.program_guard(main_program, startup_program):

    def cond(i, ten, s):
        return L.less_than(i, ten)

    def body(i, ten, s):
        s = L.elementwise_add(s, L.cast(i, "float32"))
        i = L.increment(i, 1, in_place=False)
        return [i, ten, s]

    i = L.fill_constant([1], "int64", 0)
    ten = L.fill_constant([1], "int64", 10)
    s = L.fill_constant([1], "float32", 0.0)
    i, ten, s = L.while_loop(cond, body, [i, ten, s])

    def c2(j, acc):
        return L.less_than(j, L.fill_constant([1], "int32", 6))

    def b2(j, acc):
        even = L.equal(L.elementwise_mod(j, L.fill_constant([1], "int32", 2)), L.fill_constant([1], "int32", 0))
        acc = L.cond(even, lambda: acc * 2.0, lambda: acc + 1.0)
        return [L.increment(j, 1, in_place=False), acc]

    j = L.fill_constant([1], "int32", 0)
    acc = L.fill_constant([2, 2], "float32", 1.0)
    j, acc = L.while_loop(c2, b2, [j, acc])

    rows = L.assign(np.arange(12, dtype="float32").reshape(4, 3))
    n = L.fill_constant([1], "int64", 4)

    def c3(r, total):
        return L.less_than(r, n)

    def b3(r, total):
        return [L.increment(r, 1, in_place=False), total + L.gather(rows, r)]

    r = L.fill_constant([1], "int64", 0)
    total = L.fill_constant([1, 3], "float32", 0.0)
    r, total = L.while_loop(c3, b3, [r, total])

    k = L.fill_constant([1], "int64", 0)
    lim = L.fill_constant([1], "int64", 4)
    x = L.fill_constant([3], "float32", 1.0)
    c = L.less_than(k, lim)
    w = L.While(c)
    with w.block():
        L.assign(x * 3.0, x)
        L.increment(k, 1, in_place=True)
        L.less_than(k, lim, cond=c)

outs = [i, s, j, acc, r, total, k, x]
exe = fluid.Executor(fluid.CPUPlace())
exe.run(startup_program)
res = exe.run(main_program, fetch_list=outs)
json.dump(
    {
        "values": [r.tolist() for r in res],
        "dtypes": [str(r.dtype) for r in res],
        "blocks": [[b.parent_idx, [op.type for op in b.ops]] for b in main_program.blocks],
        "names": [o.name for o in outs],
    },
    sys.stdout,
    indent=0,
)
