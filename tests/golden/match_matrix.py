# fluid.contrib.match_matrix_tensor and sequence_topk_avg_pooling (the text-matching pair of
# fluid's search models): outputs, LoDs, Tmp, pooled features, and the gradients of X, Y and W.
import json

import numpy as np
import paddle.fluid as fluid
from paddle.fluid import contrib


def r(a):
    return np.round(np.asarray(a, "float64").reshape(-1), 5).tolist()


rs = np.random.RandomState(2)
H = 3
x_np, x_lod = rs.uniform(-1, 1, (5, H)).astype("float32"), [[2, 3]]
y_np, y_lod = rs.uniform(-1, 1, (6, H)).astype("float32"), [[4, 2]]
out = {}
for channels, act, topks in ((2, None, [1, 3]), (3, "tanh", [1, 2, 5])):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [None, H], "float32", lod_level=1)
        y = fluid.data("y", [None, H], "float32", lod_level=1)
        x.stop_gradient = y.stop_gradient = False
        mm, tmp = contrib.match_matrix_tensor(x, y, channels, act=act)
        pooled = contrib.sequence_topk_avg_pooling(mm, x, y, topks, channels)
        loss = fluid.layers.reduce_sum(pooled * pooled) + fluid.layers.reduce_mean(mm)
        fluid.backward.append_backward(loss)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    w_name = main.global_block().all_parameters()[0].name
    w_shape = list(main.global_block().var(w_name).shape)
    fluid.global_scope().find_var(w_name).get_tensor().set(
        rs.uniform(-1, 1, w_shape).astype("float32"), fluid.CPUPlace()
    )
    feed = {
        "x": fluid.create_lod_tensor(x_np, x_lod, fluid.CPUPlace()),
        "y": fluid.create_lod_tensor(y_np, y_lod, fluid.CPUPlace()),
    }
    res = exe.run(
        main, feed=feed, fetch_list=[mm, tmp, pooled, loss, "x@GRAD", "y@GRAD", w_name + "@GRAD"], return_numpy=False
    )
    out["c%d" % channels] = [w_name, w_shape] + [[list(np.array(t).shape), t.lod(), r(np.array(t))] for t in res]
print(json.dumps(out, sort_keys=True))
