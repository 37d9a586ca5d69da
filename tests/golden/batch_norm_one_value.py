# Golden: batch_norm in training with one value per channel (a batch of 1 on an fc output, and on
# [1, C, 1, 1]): fluid 1.8 passed X through; its moving statistics, saved statistics and gradients.
import json

import numpy as np
import paddle.fluid as fluid

out = {}
for shape in ([None, 3], [None, 3, 1, 1]):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", shape, "float32")
        x.stop_gradient = False
        bn = fluid.layers.batch_norm(
            x,
            param_attr=fluid.ParamAttr(name="sc", initializer=fluid.initializer.Constant(2.0)),
            bias_attr=fluid.ParamAttr(name="bi", initializer=fluid.initializer.Constant(0.5)),
            moving_mean_name="mm",
            moving_variance_name="mv",
        )
        weights = fluid.layers.assign(np.array([1.0, 2.0, 3.0], "float32").reshape([1, 3] + [1] * (len(shape) - 2)))
        loss = fluid.layers.reduce_sum(bn * weights)
        fluid.backward.append_backward(loss)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    saved = [n for n in main.global_block().ops[0].output_arg_names if n.startswith("batch_norm")]
    runs = []
    for rows in (1, 2, 1):
        feed = np.arange(3 * rows, dtype="float32").reshape([rows, 3] + [1] * (len(shape) - 2)) + 1
        got = exe.run(
            main, feed={"x": feed}, fetch_list=[bn, "mm", "mv", x.name + "@GRAD", "sc@GRAD", "bi@GRAD"] + saved
        )
        runs.append([np.round(np.array(v).astype("float64").reshape(-1), 5).tolist() for v in got])
    out[str(len(shape))] = runs
print(json.dumps(out))
