# Runs c_allreduce_{sum,max,min,prod} on a rank-dependent input and saves the results (rank R: OUT.R.npz).
# usage: collective_ops.py OUT
import sys

import numpy as np
import paddle.distributed as dist
import paddle.fluid as fluid

dist.init_parallel_env()
rank = dist.get_rank()
main = fluid.Program()
with fluid.program_guard(main, fluid.Program()):
    x = fluid.data("x", [2, 3], "float32")
    outs = []
    for kind in ("sum", "max", "min", "prod"):
        out = main.global_block().create_var(name=f"out_{kind}", dtype="float32", shape=[2, 3])
        main.global_block().append_op(f"c_allreduce_{kind}", {"X": [x]}, {"Out": [out]}, {"ring_id": 0})
        outs.append(out)
value = np.arange(6, dtype="float32").reshape(2, 3) * (rank + 1) - rank
got = fluid.Executor(fluid.CPUPlace()).run(main, feed={"x": value}, fetch_list=outs)
np.savez(f"{sys.argv[1]}.{rank}", x=value, **{k: v for k, v in zip(("sum", "max", "min", "prod"), got)})
