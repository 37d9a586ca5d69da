# One process of a parameter-server job built by fluid.DistributeTranspiler, started by
# paddle.distributed.launch_ps (fluid 1.8.5) or `fluidcompat launch_ps`, which set TRAINING_ROLE,
# PADDLE_PSERVERS_IP_PORT_LIST, PADDLE_TRAINERS_NUM, PADDLE_TRAINER_ID, POD_IP and PADDLE_PORT.
# DIST_KIND is the model ("sgd": SGD, two fc layers; "adam": Adam with a decayed learning rate and a
# weight cut into blocks over the pservers; "sparse": an is_sparse embedding table cut over the
# pservers, whose rows the trainers fetch as they look them up, SGD), DIST_SYNC 0 for async training.
# A trainer prints its losses and the parameters it holds at the end, as JSON (not the sparse table,
# which only the pservers hold). With DIST_CKPT=DIR trainer 0 then saves the job's persistables there
# (fluid.io.save_persistables of its program: its own, and what only the pservers hold) and prints
# each file's values; with DIST_RESUME=DIR the pservers start from DIR (fluid.io.load_persistables).
# With DIST_FLEET=1 the job is built and run through fluid.incubate.fleet's parameter-server fleet
# (fleet.distributed_optimizer with a DistributeTranspilerConfig, init_server / run_server,
# fleet.main_program, stop_worker) instead of DistributeTranspiler itself.
import json
import os

import numpy as np
import paddle.fluid as fluid

role = os.environ["TRAINING_ROLE"]
endpoints = os.environ["PADDLE_PSERVERS_IP_PORT_LIST"]
trainers = int(os.environ["PADDLE_TRAINERS_NUM"])
index = int(os.environ.get("PADDLE_TRAINER_ID", "0"))
kind = os.environ.get("DIST_KIND", "sgd")
sync = os.environ.get("DIST_SYNC", "1") == "1"

main, startup = fluid.Program(), fluid.Program()
with fluid.program_guard(main, startup):
    y = fluid.data("y", [None, 1], "float32")
    if kind == "sparse":
        ids = fluid.data("ids", [None, 1], "int64")
        x = fluid.layers.embedding(ids, [2000, 100], is_sparse=True, param_attr=fluid.initializer.Constant(0.03))
    else:
        x = fluid.data("x", [None, 100], "float32")
    size = 200 if kind == "adam" else 8
    w0 = np.random.RandomState(1).uniform(-0.1, 0.1, (size, 1)).astype("float32")
    h = fluid.layers.fc(x, size, act="tanh", param_attr=fluid.initializer.Constant(0.01))
    p = fluid.layers.fc(h, 1, param_attr=fluid.initializer.NumpyArrayInitializer(w0))
    loss = fluid.layers.reduce_mean(fluid.layers.square(p - y))
    if kind == "adam":
        lr = fluid.layers.exponential_decay(0.01, decay_steps=2, decay_rate=0.5, staircase=True)
        opt = fluid.optimizer.Adam(lr)
    else:
        opt = fluid.optimizer.SGD(0.1)
    config = fluid.DistributeTranspilerConfig()
    config.sync_mode = sync
    if os.environ.get("DIST_FLEET"):
        from paddle.fluid.incubate.fleet.base import role_maker
        from paddle.fluid.incubate.fleet.parameter_server.distribute_transpiler import fleet

        fleet.init(role_maker.PaddleCloudRoleMaker())
        fleet.distributed_optimizer(opt, config).minimize(loss)
    else:
        opt.minimize(loss)
        origin = main.clone()

ep = os.environ.get("POD_IP", "127.0.0.1") + ":" + os.environ.get("PADDLE_PORT", "0")
exe = fluid.Executor(fluid.CPUPlace())
if os.environ.get("DIST_FLEET"):
    origin = fleet._origin_program
    if fleet.is_server():
        fleet.init_server(os.environ.get("DIST_RESUME"))
        fleet.run_server()
    else:
        fleet.init_worker()
        prog = fleet.main_program
        exe.run(fleet.startup_program)
else:
    t = fluid.DistributeTranspiler(config=config)
    t.transpile(
        index,
        program=main,
        pservers=endpoints,
        trainers=trainers,
        sync_mode=sync,
        startup_program=startup,
        current_endpoint=ep,
    )
    if role == "PSERVER":
        prog, pstartup = t.get_pserver_programs(ep)
        exe.run(pstartup)
        if os.environ.get("DIST_RESUME"):
            fluid.io.load_persistables(exe, os.environ["DIST_RESUME"], prog)
        exe.run(prog)
    else:
        prog = t.get_trainer_program()
        exe.run(startup)
if role == "TRAINER":
    rs = np.random.RandomState(100 + index)
    losses = []
    for _ in range(4):
        xv = rs.uniform(-1, 1, (6, 100)).astype("float32")
        yv = rs.uniform(-1, 1, (6, 1)).astype("float32")
        feed = {"x": xv, "y": yv}
        if kind == "sparse":  # ids in both halves of the table, a repeated one
            feed = {"ids": np.array([[3], [1500], [999], [1000], [3], [rs.randint(0, 2000)]], "int64"), "y": yv}
        (l,) = exe.run(prog, feed=feed, fetch_list=[loss])
        losses.append(round(float(np.array(l).reshape(-1)[0]), 6))
    scope = fluid.global_scope()
    params = {}
    for name in sorted(v.name for v in main.global_block().all_parameters() if "embedding" not in v.name):
        a = np.array(scope.find_var(name).get_tensor()).astype("float64")
        params[name] = [list(a.shape), round(float(a.sum()), 5), np.round(a.reshape(-1)[:3], 6).tolist()]
    record = {"losses": losses, "params": params}
    ckpt = os.environ.get("DIST_CKPT")
    if ckpt and index == 0:
        fluid.io.save_persistables(exe, ckpt, prog)
        record["saved"] = {}
        for name in sorted(n for n in os.listdir(ckpt) if n[0] != "."):
            if not origin.global_block().has_var(name):
                record["saved"][name] = None
                continue
            with fluid.scope_guard(fluid.Scope()):
                fluid.io.load_vars(exe, ckpt, main_program=origin, vars=[origin.global_block().var(name)])
                a = np.array(fluid.global_scope().find_var(name).get_tensor()).astype("float64")
            record["saved"][name] = [list(a.shape), round(float(a.sum()), 4), np.round(a.reshape(-1)[:3], 6).tolist()]
    if os.environ.get("DIST_FLEET"):
        fleet.stop_worker()
    exe.close()
    print(json.dumps(record, sort_keys=True))
