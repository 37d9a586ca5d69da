# fluid.contrib.layers.rank_attention as fluid 1.8.5 builds it (its kernel is CUDA-only, so values
# are checked against numpy in tests/test_contrib_layers.py): names, shapes, dtypes, the op's and
# its grad op's slots and attributes, the parameter's initializer, and the errors.
import json
import os
import sys

import paddle.fluid as fluid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _golden import errors_of  # noqa: E402

out = {}
for dim, rank, cols in ((4, 3, 2), (2, 2, 5)):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [None, dim], "float32")
        x.stop_gradient = False
        ro = fluid.data("ro", [None, 2 * rank + 1], "int32")
        o = fluid.contrib.layers.rank_attention(x, ro, [dim * rank * rank, cols], fluid.ParamAttr(name="rp"), rank)
        fluid.backward.append_backward(fluid.layers.mean(o))
    out["%d_%d_%d" % (dim, rank, cols)] = {
        "ops": [
            [
                op.type,
                {k: op.input(k) for k in sorted(op.input_names)},
                {k: op.output(k) for k in sorted(op.output_names)},
                {k: op.attr(k) for k in sorted(op.attr_names) if not k.startswith("op_")},
            ]
            for op in main.global_block().ops
            if op.type.startswith("rank_attention")
        ],
        "vars": {n: [list(v.shape), str(v.dtype), v.persistable] for n, v in sorted(main.global_block().vars.items())},
        "startup": [
            [
                op.type,
                {
                    k: round(op.attr(k), 6) if isinstance(op.attr(k), float) else op.attr(k)
                    for k in ("shape", "min", "max")
                    if op.has_attr(k)
                },
            ]
            for op in startup.global_block().ops
        ],
    }


def bad():
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        x = fluid.data("x", [None, 4], "float32")
        ro = fluid.data("ro", [None, 7], "int32")
        fluid.contrib.layers.rank_attention(x, ro, [35, 2], None, 3)


out["errors"] = [e[0] if e else None for e in errors_of([bad])]
print(json.dumps(out, sort_keys=True))
