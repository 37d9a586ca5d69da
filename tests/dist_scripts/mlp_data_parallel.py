# Trains a small MLP for a few steps, on one worker's share of a fixed batch when launched with
# several workers, and saves the final parameters (rank 0) to OUT.npz.
# usage: mlp_data_parallel.py dygraph|static|nccl2|fleet OUT [--optimizer sgd|adam]
# (nccl2: DistributeTranspiler's nccl2 mode and ParallelExecutor(num_trainers, trainer_id);
#  fleet: fluid.incubate.fleet.collective's fleet.distributed_optimizer and fleet.main_program)
import sys

import numpy as np
import paddle

MODE, OUT = sys.argv[1], sys.argv[2]
OPT = sys.argv[4] if len(sys.argv) > 4 else "sgd"
STEPS, BATCH = 4, 8

rng = np.random.RandomState(7)
X = rng.rand(STEPS, BATCH, 12).astype("float32")
Y = rng.randint(0, 4, (STEPS, BATCH, 1)).astype("int64")


def shard(a):
    import paddle.distributed as dist

    n, r = dist.get_world_size(), dist.get_rank()
    per = a.shape[0] // n
    return a[r * per : (r + 1) * per]


def dygraph():
    import paddle.distributed as dist
    import paddle.nn.functional as F

    dist.init_parallel_env()
    paddle.seed(dist.get_rank() + 1)  # different per worker: DataParallel starts them from rank 0's values

    class MLP(paddle.nn.Layer):
        def __init__(self):
            super(MLP, self).__init__()
            self.fc1 = paddle.nn.Linear(12, 16)
            self.fc2 = paddle.nn.Linear(16, 4)

        def forward(self, x):
            return self.fc2(F.relu(self.fc1(x)))

    model = MLP()
    if dist.get_world_size() > 1:
        model = paddle.DataParallel(model)
    if OPT == "adam":
        opt = paddle.optimizer.Adam(learning_rate=0.05, parameters=model.parameters())
    else:
        opt = paddle.optimizer.SGD(learning_rate=0.5, parameters=model.parameters())
    for step in range(STEPS):
        x, y = paddle.to_tensor(shard(X[step])), paddle.to_tensor(shard(Y[step]))
        loss = paddle.mean(F.cross_entropy(model(x), y))
        loss.backward()
        opt.step()
        opt.clear_grad()
    return {k: v.numpy() for k, v in model.state_dict().items()}


def static(nccl2=False, use_fleet=False):
    import os

    import paddle.distributed as dist
    import paddle.fluid as fluid
    from paddle.fluid.incubate.fleet.base import role_maker
    from paddle.fluid.incubate.fleet.collective import DistributedStrategy, fleet

    if use_fleet:
        fleet.init(role_maker.PaddleCloudRoleMaker(is_collective=True))
        assert (fleet.worker_index(), fleet.worker_num()) == (dist.get_rank(), dist.get_world_size())

    main, startup = fluid.Program(), fluid.Program()
    startup.random_seed = 11 + dist.get_rank()  # different per worker: rank 0's values are broadcast
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [None, 12], "float32")
        y = fluid.data("y", [None, 1], "int64")
        h = fluid.layers.fc(x, 16, act="relu")
        logits = fluid.layers.fc(h, 4)
        loss = fluid.layers.mean(fluid.layers.softmax_with_cross_entropy(logits, y))
        opt = fluid.optimizer.Adam(learning_rate=0.05) if OPT == "adam" else fluid.optimizer.SGD(learning_rate=0.5)
        if use_fleet:
            opt = fleet.distributed_optimizer(opt, strategy=DistributedStrategy())
        opt.minimize(loss)
    if nccl2:
        config = fluid.DistributeTranspilerConfig()
        config.mode = "nccl2"
        endpoints = os.environ.get("PADDLE_TRAINER_ENDPOINTS", "127.0.0.1:6170")
        current = os.environ.get("PADDLE_CURRENT_ENDPOINT", endpoints)
        t = fluid.DistributeTranspiler(config=config)
        t.transpile(
            dist.get_rank(), program=main, startup_program=startup, trainers=endpoints, current_endpoint=current
        )
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(fleet.startup_program if use_fleet else startup)
    if use_fleet:
        for step in range(STEPS):
            exe.run(fleet.main_program, feed={"x": shard(X[step]), "y": shard(Y[step])}, fetch_list=[loss])
        if fleet.is_first_worker():
            fleet.save_persistables(exe, OUT + ".persistables")
    elif nccl2:
        pe = fluid.ParallelExecutor(False, loss_name=loss.name, main_program=main, num_trainers=dist.get_world_size(),
                                    trainer_id=dist.get_rank())  # fmt: skip
        for step in range(STEPS):
            pe.run(fetch_list=[loss.name], feed={"x": shard(X[step]), "y": shard(Y[step])})
    else:
        compiled = fluid.CompiledProgram(main).with_data_parallel(loss_name=loss.name)
        for step in range(STEPS):
            exe.run(compiled, feed={"x": shard(X[step]), "y": shard(Y[step])}, fetch_list=[loss])
    scope = fluid.global_scope()
    return {p.name: np.array(scope.find_var(p.name).get_tensor()) for p in main.all_parameters()}


params = dygraph() if MODE == "dygraph" else static(nccl2=MODE == "nccl2", use_fleet=MODE == "fleet")
import paddle.distributed as dist  # noqa: E402

print("rank", dist.get_rank(), "of", dist.get_world_size(), "trained", len(params), "parameters")
if dist.get_rank() == 0:
    np.savez(OUT, **params)
