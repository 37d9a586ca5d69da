# Which ops get grad ops: a DQN learner whose target chain (reward + (1 - cast(terminal)) * gamma *
# max Q') has only data behind it (fluid 1.8 still differentiates the non-stop-gradient part), with
# RMSProp, global-norm clipping and a parameter_list, a target network synced by assign; and
# fluid.gradients() differentiating only the ops that depend on its inputs.
import json

import numpy as np
import paddle.fluid as fluid
from _golden import set_params

out = {}
OBS, ACT, GAMMA = 4, 3, 0.9


def q_net(obs, prefix):
    h = fluid.layers.fc(
        obs,
        size=16,
        act="relu",
        param_attr=fluid.ParamAttr(name=prefix + "_w1"),
        bias_attr=fluid.ParamAttr(name=prefix + "_b1"),
    )
    h = fluid.layers.fc(
        h,
        size=16,
        act="tanh",
        param_attr=fluid.ParamAttr(name=prefix + "_w2"),
        bias_attr=fluid.ParamAttr(name=prefix + "_b2"),
    )
    return fluid.layers.fc(
        h, size=ACT, param_attr=fluid.ParamAttr(name=prefix + "_w3"), bias_attr=fluid.ParamAttr(name=prefix + "_b3")
    )


startup = fluid.Program()
pred_program, learn_program, sync_program = fluid.Program(), fluid.Program(), fluid.Program()
with fluid.program_guard(pred_program, startup):
    obs = fluid.layers.data(name="obs", shape=[OBS], dtype="float32")
    value = q_net(obs, "q")
with fluid.program_guard(learn_program, startup):
    obs = fluid.layers.data(name="obs", shape=[OBS], dtype="float32")
    action = fluid.layers.data(name="act", shape=[1], dtype="int32")
    reward = fluid.layers.data(name="reward", shape=[], dtype="float32")
    next_obs = fluid.layers.data(name="next_obs", shape=[OBS], dtype="float32")
    terminal = fluid.layers.data(name="terminal", shape=[], dtype="bool")
    pred_value = q_net(obs, "q")
    next_pred = q_net(next_obs, "target")
    best_v = fluid.layers.reduce_max(next_pred, dim=1)
    best_v.stop_gradient = True
    terminal_f = fluid.layers.cast(terminal, dtype="float32")
    target = reward + (1.0 - terminal_f) * GAMMA * best_v
    action_onehot = fluid.layers.one_hot(action, ACT)
    action_onehot = fluid.layers.cast(action_onehot, dtype="float32")
    pred_action_value = fluid.layers.reduce_sum(fluid.layers.elementwise_mul(action_onehot, pred_value), dim=1)
    cost = fluid.layers.square_error_cost(pred_action_value, target)
    cost = fluid.layers.reduce_mean(cost)
    opt = fluid.optimizer.RMSProp(learning_rate=1e-2, epsilon=1e-3, grad_clip=fluid.clip.GradientClipByGlobalNorm(1.0))
    opt.minimize(cost, parameter_list=["q_w1", "q_b1", "q_w2", "q_b2", "q_w3", "q_b3"])
with fluid.program_guard(sync_program, startup):
    for n in ("w1", "b1", "w2", "b2", "w3", "b3"):
        src = sync_program.global_block().create_var(name="q_" + n, persistable=True)
        dst = sync_program.global_block().create_var(name="target_" + n, persistable=True)
        fluid.layers.assign(src, dst)

out["learn_ops"] = [op.type for op in learn_program.global_block().ops]
exe = fluid.Executor(fluid.CPUPlace())
exe.run(startup)
set_params(learn_program, fluid.global_scope())
exe.run(sync_program)
rng = np.random.RandomState(1)
rows = []
for step in range(6):
    b = {
        "obs": rng.rand(5, OBS).astype("float32"),
        "act": rng.randint(0, ACT, (5, 1)).astype("int32"),
        "reward": rng.rand(5).astype("float32"),
        "next_obs": rng.rand(5, OBS).astype("float32"),
        "terminal": rng.rand(5) > 0.7,
    }
    (c,) = exe.run(learn_program, feed=b, fetch_list=[cost])
    (v,) = exe.run(pred_program, feed={"obs": b["obs"]}, fetch_list=[value])
    rows.append([round(float(np.array(c).reshape(-1)[0]), 5), np.round(np.array(v)[0], 5).tolist()])
    if step % 2 == 1:
        exe.run(sync_program)
out["rows"] = rows
scope = fluid.global_scope()
out["params"] = {
    n: round(float(np.array(scope.find_var(n).get_tensor()).astype("float64").sum()), 4)
    for n in sorted(p.name for p in learn_program.global_block().all_parameters())
}
main, startup = fluid.Program(), fluid.Program()
with fluid.program_guard(main, startup):
    x = fluid.data(name="x", shape=[3, 4], dtype="float32")
    x.stop_gradient = False
    z = fluid.data(name="z", shape=[3, 4], dtype="float32")
    z.stop_gradient = False
    h = fluid.layers.fc(x, size=5, bias_attr=False)
    w2 = fluid.layers.create_parameter(shape=[5], dtype="float32", name="w2")
    reg = fluid.layers.reduce_sum(fluid.layers.square(w2))
    zz = fluid.layers.reduce_sum(z * 2.0)
    loss = fluid.layers.reduce_sum(h) + reg + zz
    n0 = len(main.global_block().ops)
    (gx,) = fluid.gradients([loss], [x])
    out["ops_gx"] = [op.type for op in main.global_block().ops[n0:]]
    n1 = len(main.global_block().ops)
    gw, gz = fluid.gradients([loss], [w2, z])
    out["ops_gw"] = [op.type for op in main.global_block().ops[n1:]]
    out["names"] = [gx.name, gw.name, gz.name]
exe = fluid.Executor(fluid.CPUPlace())
exe.run(startup)
xv = np.arange(12, dtype="float32").reshape(3, 4) / 10
r = exe.run(main, feed={"x": xv, "z": xv}, fetch_list=[gx, gw, gz])
out["shapes"] = [list(np.array(a).shape) for a in r]
print(json.dumps(out, sort_keys=True))
