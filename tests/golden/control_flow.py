# Golden script: layers.case (with and without default), switch_case (dict and list, with and without
# default), and cond returning nested structures; prints values, dtypes and each block's op types.
import json
import sys

import paddle.fluid as fluid
import paddle.fluid.layers as layers

main_program, startup_program = fluid.Program(), fluid.Program()
with fluid.program_guard(main_program, startup_program):
    x = layers.fill_constant(shape=[1], dtype="float32", value=0.3)
    y = layers.fill_constant(shape=[1], dtype="float32", value=0.1)
    z = layers.fill_constant(shape=[1], dtype="float32", value=0.2)
    pred_1 = layers.less_than(z, x)
    pred_2 = layers.less_than(x, y)
    pred_3 = layers.equal(x, y)
    fn_1 = lambda: layers.fill_constant(shape=[1, 2], dtype="float32", value=1)  # noqa: E731
    fn_2 = lambda: layers.fill_constant(shape=[2, 2], dtype="int32", value=2)  # noqa: E731
    fn_3 = lambda: layers.fill_constant(shape=[3], dtype="int32", value=3)  # noqa: E731
    outs = [
        layers.case(pred_fn_pairs=[(pred_1, fn_1), (pred_2, fn_2)], default=fn_3),
        layers.case(pred_fn_pairs=[(pred_2, fn_2), (pred_3, fn_3)]),
        layers.switch_case(
            layers.fill_constant([1], "int32", 2),
            {
                1: lambda: layers.fill_constant([1], "float32", 1.0),
                2: lambda: layers.fill_constant([1], "float32", 2.0),
                5: lambda: layers.fill_constant([1], "float32", 5.0),
            },
        ),
        layers.switch_case(
            layers.fill_constant([1], "int64", 7),
            [lambda: layers.fill_constant([1], "float32", 1.0), lambda: layers.fill_constant([1], "float32", 2.0)],
            default=lambda: layers.fill_constant([1], "float32", 9.0),
        ),
        layers.switch_case(
            layers.fill_constant([1], "int64", 7),
            [lambda: layers.fill_constant([1], "float32", 1.0), lambda: layers.fill_constant([1], "float32", 2.0)],
        ),
    ]
    nested = layers.cond(pred_1, lambda: (x + 1.0, [y * 2.0]), lambda: (x - 1.0, [y]))
    outs += [nested[0], nested[1][0], layers.cond(pred_2, lambda: x * 3.0, lambda: z * 3.0)]
exe = fluid.Executor(fluid.CPUPlace())
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
