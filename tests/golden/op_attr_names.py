"""The attribute names of every op the layer zoo builds (with more=True), and of the grad ops
append_backward adds for each float output, as fluid 1.8.5 gave them (op_* bookkeeping left out)."""

import json
import sys

import paddle.fluid as fluid
from _layer_zoo import build

L = fluid.layers
skip = {"op_callstack", "op_device", "op_namescope", "op_role", "op_role_var"}


def forward():
    outs = build(more=True)
    main = next(v for v in outs.values() if v is not None).block.program
    res = {}
    for op in main.global_block().ops:
        res.setdefault(op.type, sorted(a for a in op.attr_names if a not in skip))
    return res


def backward():
    outs, startup = build(startup_too=True)
    floats = (fluid.core.VarDesc.VarType.FP32, fluid.core.VarDesc.VarType.FP64)
    outs = {k: v for k, v in outs.items() if v is not None and v.dtype in floats}
    base = next(iter(outs.values())).block.program
    res = {}
    for _, v in sorted(outs.items()):
        main = base.clone()
        v = main.global_block().var(v.name)
        block = main.global_block()
        n0 = len(block.ops)
        for n in ("s", "s2", "s3", "s4", "d"):
            block.var(n).stop_gradient = False
        try:
            with fluid.program_guard(main, startup):
                fluid.backward.append_backward(L.reduce_sum(v))
        except Exception:
            continue
        for op in block.ops[n0:]:
            res.setdefault(op.type, sorted(a for a in op.attr_names if a not in skip))
    return res


json.dump({"forward": forward(), "backward": backward()}, sys.stdout, indent=0, sort_keys=True)
