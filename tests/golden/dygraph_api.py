# Dygraph VarBase and Layer API: values, gradients, stop_gradient, containers, hooks, state dicts,
# save/load, optimizer state, printing, and error texts.
import json
import os
import sys
import tempfile

import numpy as np
import paddle.fluid as fluid
from paddle.fluid.dygraph import Linear, to_variable

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _golden import errors_of  # noqa: E402


def r(a):
    return None if a is None else np.round(np.asarray(a, "float64").reshape(-1), 5).tolist()


out = {"mode_before": fluid.in_dygraph_mode()}
a = np.arange(6, dtype="float32").reshape(2, 3) / 4.0
with fluid.dygraph.guard(fluid.CPUPlace()):
    out["mode_in"] = [fluid.in_dygraph_mode(), fluid.dygraph.enabled()]
    x = to_variable(a)
    out["x"] = [x.name, x.shape, str(x.dtype), x.stop_gradient, x.persistable]
    out["dtypes"] = [str(to_variable(np.ones(2, t)).dtype) for t in ["float64", "int32", "int64", "bool"]]
    x.stop_gradient = False
    y = to_variable(np.full((2, 3), 2.0, "float32"))
    ops = [x + y, x - 1.5, 2.0 * x, x / y, x**2, -x, y - x, 1 - x, x * x]
    out["ops"] = [r(v.numpy()) for v in ops]
    out["ops_sg"] = [v.stop_gradient for v in ops]
    out["compare"] = [r((x < y).numpy()), str((x < y).dtype), r((x == x).numpy())]
    out["slice"] = [r(x[1].numpy()), r(x[:, 1:].numpy()), x[:, 1:].shape]
    out["astype"] = [str(x.astype("int32").dtype), r(x.astype("int32").numpy())]
    s = fluid.layers.reduce_sum(fluid.layers.tanh(x * y) + x)
    s.backward()
    out["grad_x"] = r(x.gradient())
    out["grad_y"] = r(y.gradient())
    # gradients add up over backward calls until cleared
    s2 = fluid.layers.reduce_sum(x * 3.0)
    s2.backward()
    out["grad_x_acc"] = r(x.gradient())
    x.clear_gradient()
    out["grad_x_clear"] = r(x.gradient())
    # an intermediate's gradient
    x2 = to_variable(a)
    x2.stop_gradient = False
    h = fluid.layers.relu(x2 - 0.5)
    loss = fluid.layers.reduce_mean(h * h)
    loss.backward()
    out["grad_mid"] = [r(h.gradient()), r(x2.gradient())]
    # detach, no_grad
    d = x2.detach()
    out["detach"] = [d.stop_gradient, r(d.numpy())]
    with fluid.dygraph.no_grad():
        n = x2 * 2.0
    out["no_grad"] = n.stop_gradient

    @fluid.dygraph.no_grad
    def doubled(v):
        return v * 2.0

    out["no_grad_deco"] = doubled(x2).stop_gradient
    # fluid.dygraph.grad
    x3 = to_variable(a)
    x3.stop_gradient = False
    z = fluid.layers.reduce_sum(x3 * x3 * x3)
    (g,) = fluid.dygraph.grad([z], [x3])
    out["dygraph_grad"] = [r(g.numpy()), g.stop_gradient, x3.gradient() is None]
    # retain_graph: backward twice
    x4 = to_variable(a)
    x4.stop_gradient = False
    w = fluid.layers.reduce_sum(fluid.layers.exp(x4))
    w.backward(retain_graph=True)
    w.backward()
    out["twice"] = r(x4.gradient())
    # printing
    out["print"] = str(to_variable(np.array([[1.5, -2.0], [0.25, 3.0]], "float32")))
    out["print_int"] = str(to_variable(np.array([1, 2, 3], "int64")))

    # -- layers ----------------------------------------------------------------------------------
    class Block(fluid.dygraph.Layer):
        def __init__(self, n):
            super(Block, self).__init__()
            self.fcs = fluid.dygraph.LayerList([Linear(3, 3) for _ in range(n)])
            self.extra = fluid.dygraph.ParameterList(
                [self.create_parameter([3], default_initializer=fluid.initializer.Constant(0.5))]
            )
            self.seq = fluid.dygraph.Sequential(("first", Linear(3, 4, act="relu")), ("second", Linear(4, 2)))

        def forward(self, v):
            for fc in self.fcs:
                v = fc(v)
            v = v + self.extra[0]
            return self.seq(v)

    blk = Block(2)
    out["full_names"] = [blk.full_name(), blk.fcs.full_name(), blk.seq.full_name()]
    out["named_params"] = [[k, p.name, p.shape] for k, p in blk.named_parameters()]
    out["sublayers"] = [l.full_name() for l in blk.sublayers()]
    out["state_keys"] = list(blk.state_dict().keys())
    out["len"] = [len(blk.fcs), len(blk.seq), len(blk.extra)]
    for k, p in enumerate(blk.parameters()):
        p.set_value(np.random.RandomState(k).uniform(-1, 1, p.shape).astype("float32"))
    res = blk(to_variable(a))
    out["block_out"] = r(res.numpy())
    calls = []
    pre = blk.register_forward_pre_hook(lambda layer, inputs: calls.append("pre"))
    post = blk.register_forward_post_hook(lambda layer, inputs, outputs: outputs * 2.0)
    out["hooked"] = r(blk(to_variable(a)).numpy())
    pre.remove()
    post.remove()
    blk(to_variable(a))
    out["hook_calls"] = calls

    # save / load
    tmp = tempfile.mkdtemp()
    path = os.path.join(tmp, "blk")
    fluid.save_dygraph(blk.state_dict(), path)
    opt = fluid.optimizer.Adam(0.1, parameter_list=blk.parameters())
    l2 = fluid.layers.reduce_mean(blk(to_variable(a)))
    l2.backward()
    opt.minimize(l2)
    fluid.save_dygraph(opt.state_dict(), path)
    out["files"] = sorted(os.listdir(tmp))
    params, opt_state = fluid.load_dygraph(path)
    out["loaded"] = [sorted(params), sorted(opt_state)[:4], len(opt_state)]
    params_t, _ = fluid.load_dygraph(path + ".pdparams", keep_name_table=True)
    out["name_table"] = sorted(params_t["StructuredToParameterName@@"].items())
    blk.set_dict(params)
    out["reloaded_out"] = r(blk(to_variable(a)).numpy())

    bad_state = dict(params)
    del bad_state["seq.second.bias"]
    wrong_shape = dict(params)
    wrong_shape["seq.second.bias"] = np.zeros([3], "float32")
    before = r(blk.seq.second.bias.numpy())
    out["errors"] = errors_of(
        [
            lambda: to_variable([1, 2]),
            lambda: fluid.optimizer.SGD(0.1),
            lambda: blk.set_dict(bad_state),
            lambda: blk.seq.second.bias.set_value(np.zeros([3], "float32")),
            lambda: fluid.dygraph.Pool2D(2, "min"),
            lambda: fluid.dygraph.Pool2D(),
            lambda: fluid.dygraph.PRelu("row"),
            lambda: fluid.dygraph.LayerNorm(4)(to_variable(a)),
            lambda: fluid.load_dygraph(os.path.join(tmp, "missing")),
        ]
    )
    out["unchanged_after_error"] = before == r(blk.seq.second.bias.numpy())
out["mode_after"] = fluid.in_dygraph_mode()
with fluid.dygraph.guard(fluid.CPUPlace()):  # as a new process would: the same names again
    blk = Block(2)
    blk.set_dict(params)
    opt2 = fluid.optimizer.Adam(0.1, parameter_list=blk.parameters())
    opt2.set_dict(opt_state)
    l3 = fluid.layers.reduce_mean(blk(to_variable(a)))
    l3.backward()
    opt2.minimize(l3)
    out["after_reload_step"] = r(blk.extra[0].numpy())
    out["after_reload_state"] = r(opt2.state_dict()["linear_0.w_0_moment1_0"].numpy())
fluid.enable_dygraph(fluid.CPUPlace())
out["enable"] = [fluid.in_dygraph_mode(), r((to_variable(a) * 2.0).numpy())]
fluid.disable_dygraph()
out["disable"] = fluid.in_dygraph_mode()
print(json.dumps(out, sort_keys=True))
