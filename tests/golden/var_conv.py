# fluid.contrib.var_conv_2d: per-sequence 2-D convolution of [channels, rows, columns] images whose
# sizes come from the LoDs of row and col: outputs, LoDs, Col, gradients of the input and filter.
import json

import numpy as np
import paddle.fluid as fluid
from paddle.fluid import contrib


def r(a):
    return np.round(np.asarray(a, "float64").reshape(-1), 5).tolist()


rs = np.random.RandomState(5)
out = {}
sizes = [(3, 4), (2, 5), (1, 1)]
for name, cin, cout, ksize, stride, act in (
    ("k3s1", 2, 3, 3, 1, None),
    ("k2x3s2", 2, 2, [2, 3], [2, 1], "relu"),
    ("k1s2", 1, 2, 1, 2, None),
):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [None, 1], "float32", lod_level=1)
        x.stop_gradient = False
        row = fluid.data("row", [None, 1], "float32", lod_level=1)
        col = fluid.data("col", [None, 1], "float32", lod_level=1)
        y = contrib.var_conv_2d(x, row, col, cin, cout, ksize, stride, act=act)
        loss = fluid.layers.reduce_sum(y * y)
        fluid.backward.append_backward(loss)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    w_name = main.global_block().all_parameters()[0].name
    w_shape = list(main.global_block().var(w_name).shape)
    fluid.global_scope().find_var(w_name).get_tensor().set(
        rs.uniform(-1, 1, w_shape).astype("float32"), fluid.CPUPlace()
    )
    lens = [cin * h * w for h, w in sizes]
    place = fluid.CPUPlace()
    feed = {
        "x": fluid.create_lod_tensor(rs.uniform(-1, 1, (sum(lens), 1)).astype("float32"), [lens], place),
        "row": fluid.create_lod_tensor(
            np.zeros((sum(h for h, _ in sizes), 1), "float32"), [[h for h, _ in sizes]], place
        ),
        "col": fluid.create_lod_tensor(
            np.zeros((sum(w for _, w in sizes), 1), "float32"), [[w for _, w in sizes]], place
        ),
    }
    col_name = main.global_block().ops[0].output("Col")[0]
    res = exe.run(main, feed=feed, fetch_list=[y, col_name, loss, "x@GRAD", w_name + "@GRAD"], return_numpy=False)
    out[name] = [w_name, w_shape] + [[list(np.array(t).shape), t.lod(), r(np.array(t))] for t in res]
print(json.dumps(out, sort_keys=True))
