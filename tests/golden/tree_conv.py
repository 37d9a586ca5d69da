# fluid.contrib.layers.tree_conv (static, with its per-node bias and tanh, two stacked as in the
# docs) and fluid.dygraph.TreeConv: outputs, parameter names and shapes, gradients, as fluid 1.8.5.
import json

import numpy as np
import paddle.fluid as fluid


def r(a):
    return np.round(np.asarray(a, "float64").reshape(-1), 5).tolist()


rs = np.random.RandomState(3)
N, F = 7, 3
# the shorter tree first: fluid 1.8.5 left the previous sample's rows in the rows of nodes outside a
# later sample's tree (fluidcompat gives them zeros, as the first sample had)
edges = np.array(
    [[[1, 3], [3, 2], [3, 4], [0, 0], [0, 0], [0, 0]], [[1, 2], [1, 3], [2, 4], [2, 5], [2, 6], [3, 7]]], "int32"
)
nodes = rs.uniform(-1, 1, (2, N, F)).astype("float32")
out = {}
main, startup = fluid.Program(), fluid.Program()
with fluid.program_guard(main, startup):
    nv = fluid.data("nodes", [2, N, F], "float32")
    nv.stop_gradient = False
    es = fluid.data("edges", [2, 6, 2], "int32")
    h = fluid.contrib.layers.tree_conv(nv, es, 4, 2, 3)
    flat = fluid.layers.reshape(h, [-1, N, 8])
    h2 = fluid.contrib.layers.tree_conv(flat, es, 3, 1, 2, act="relu", bias_attr=False)
    loss = fluid.layers.reduce_mean(h2) + fluid.layers.reduce_mean(fluid.layers.reduce_max(h, dim=2))
    fluid.backward.append_backward(loss)
params = sorted(p.name for p in main.global_block().all_parameters())
out["static_params"] = [[n, list(main.global_block().var(n).shape)] for n in params]
out["static_ops"] = [op.type for op in main.global_block().ops if not op.type.endswith("_grad")]
exe = fluid.Executor(fluid.CPUPlace())
exe.run(startup)
scope = fluid.global_scope()
for k, n in enumerate(params):
    shape = np.array(scope.find_var(n).get_tensor()).shape
    scope.find_var(n).get_tensor().set(
        np.random.RandomState(k).uniform(-0.5, 0.5, shape).astype("float32"), fluid.CPUPlace()
    )
fetch = [h, h2, loss, "nodes@GRAD"] + [n + "@GRAD" for n in params]
res = exe.run(main, feed={"nodes": nodes, "edges": edges}, fetch_list=fetch)
out["static"] = [[list(np.asarray(a).shape), r(a)] for a in res]

with fluid.dygraph.guard(fluid.CPUPlace()):
    layers = [
        fluid.dygraph.TreeConv(F, 4, 2, 3),
        fluid.dygraph.TreeConv(F, 4, 1, 2, act=None, bias_attr=fluid.ParamAttr(name="tc_bias")),
    ]
    x = fluid.dygraph.to_variable(nodes)
    x.stop_gradient = False
    e = fluid.dygraph.to_variable(edges)
    rows = []
    for layer in layers:
        for k, p in enumerate(sorted(layer.parameters(), key=lambda p: p.name)):
            p.set_value(np.random.RandomState(k).uniform(-0.5, 0.5, p.shape).astype("float32"))
        y = layer(x, e)
        fluid.layers.reduce_sum(y * y).backward()
        rows.append(
            [
                [[p.name, p.shape] for p in layer.parameters()],
                list(y.shape),
                r(y.numpy()),
                r(x.gradient()),
                [r(p.gradient()) for p in sorted(layer.parameters(), key=lambda p: p.name)],
            ]
        )
        layer.clear_gradients()
    out["dygraph"] = rows
print(json.dumps(out, sort_keys=True))
