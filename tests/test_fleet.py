"""fluid.incubate.fleet: role makers read the job from the environment (or the script), and the
collective fleet trains as fluid 1.8's did. Two launched workers: tests/test_distributed.py."""

from __future__ import annotations

import numpy as np
import pytest

import fluidcompat as fluid
from fluidcompat.incubate.fleet.base import role_maker
from fluidcompat.incubate.fleet.base.role_maker import Role
from fluidcompat.incubate.fleet.collective import DistributedStrategy, fleet

_JOB_VARS = (
    "PADDLE_TRAINER_ID", "PADDLE_TRAINER_ENDPOINTS", "PADDLE_CURRENT_ENDPOINT", "PADDLE_TRAINERS_NUM",
    "PADDLE_PSERVERS_IP_PORT_LIST", "TRAINING_ROLE", "POD_IP", "PADDLE_PORT", "PADDLE_TRAINING_ROLE",
)  # fmt: skip


@pytest.fixture
def env(monkeypatch):
    for name in _JOB_VARS:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_collective_role_from_the_environment(env):
    env.setenv("PADDLE_TRAINER_ID", "1")
    env.setenv("PADDLE_TRAINER_ENDPOINTS", "10.0.0.1:6170,10.0.0.2:6170")
    fleet.init(role_maker.PaddleCloudRoleMaker(is_collective=True))
    assert (fleet.worker_index(), fleet.worker_num(), fleet.is_first_worker(), fleet.is_worker()) == (1, 2, False, True)
    assert fleet.worker_endpoints(to_string=True) == "10.0.0.1:6170,10.0.0.2:6170" and not fleet.is_server()
    assert fleet.split_files(["a", "b", "c", "d", "e"]) == ["d", "e"]
    env.setenv("PADDLE_TRAINER_ID", "0")
    fleet.init()  # the collective fleet's default role maker
    assert fleet.is_first_worker() and fleet.split_files(["a", "b", "c", "d", "e"]) == ["a", "b", "c"]


def test_a_process_started_without_a_launcher_is_the_only_worker(env):
    """fluid 1.8 asserted ("can't find PADDLE_TRAINER_ENDPOINTS"); one process is a job of one."""
    fleet.init(role_maker.PaddleCloudRoleMaker(is_collective=True))
    assert (fleet.worker_index(), fleet.worker_num(), fleet.is_first_worker()) == (0, 1, True)


def test_parameter_server_roles_from_the_environment(env):
    env.setenv("PADDLE_PSERVERS_IP_PORT_LIST", "127.0.0.1:6001,127.0.0.1:6002")
    env.setenv("PADDLE_TRAINERS_NUM", "3")
    env.setenv("TRAINING_ROLE", "PSERVER")
    env.setenv("POD_IP", "127.0.0.1")
    env.setenv("PADDLE_PORT", "6002")
    server = role_maker.PaddleCloudRoleMaker()
    assert server.is_server() and server.server_index() == 1 and server.worker_num() == 3
    env.setenv("TRAINING_ROLE", "TRAINER")
    env.setenv("PADDLE_TRAINER_ID", "2")
    trainer = role_maker.PaddleCloudRoleMaker()
    assert trainer.is_worker() and trainer.worker_index() == 2
    assert trainer.get_pserver_endpoints() == ["127.0.0.1:6001", "127.0.0.1:6002"]
    env.setenv("TRAINING_ROLE", "WORKER")
    with pytest.raises(ValueError, match="TRAINING_ROLE must be PSERVER or TRAINER. Received: 'WORKER'"):
        role_maker.PaddleCloudRoleMaker().generate_role()
    env.delenv("PADDLE_TRAINERS_NUM")
    with pytest.raises(ValueError, match="please check environment: PADDLE_TRAINERS_NUM not set"):
        role_maker.PaddleCloudRoleMaker().generate_role()


def test_user_defined_roles_and_their_checks():
    r = role_maker.UserDefinedRoleMaker(current_id=1, role=Role.SERVER, worker_num=2, server_endpoints=["a:1", "b:2"])
    assert r.is_server() and r.server_index() == 1 and r.worker_num() == 2
    c = role_maker.UserDefinedCollectiveRoleMaker(current_id=0, worker_endpoints=["a:1", "b:2"])
    assert c.is_first_worker() and c.worker_num() == 2
    with pytest.raises(ValueError, match="worker_num must be greater than 0. Received: 0"):
        role_maker.UserDefinedRoleMaker(worker_num=0, server_endpoints=["a:1"])
    with pytest.raises(ValueError, match=r"current_id must be less than len\(worker_endpoints\) \(2\). Received: 2"):
        role_maker.UserDefinedCollectiveRoleMaker(current_id=2, worker_endpoints=["a:1", "b:2"])
    with pytest.raises(TypeError, match="role_maker must be a RoleMakerBase. Received: str"):
        fleet.init("worker")


def _trained(use_fleet, strategy=None):
    main, start = fluid.Program(), fluid.Program()
    main.random_seed = start.random_seed = 5
    with fluid.program_guard(main, start), fluid.unique_name.guard():
        x = fluid.data("x", [None, 4], "float32")
        h = fluid.layers.fc(x, 3, act="relu", name="h")
        loss = fluid.layers.mean(fluid.layers.fc(h, 1, name="o"))
        opt = fluid.optimizer.Adam(0.1)
        if use_fleet:
            fleet.init(role_maker.PaddleCloudRoleMaker(is_collective=True))
            opt = fleet.distributed_optimizer(opt, strategy)
        ops, params_grads = opt.minimize(loss)
    exe = fluid.Executor(fluid.CPUPlace())
    with fluid.scope_guard(fluid.Scope()):
        exe.run(fleet.startup_program if use_fleet else start)
        program = fleet.main_program if use_fleet else main
        for k in range(3):
            exe.run(program, feed={"x": np.full((2, 4), k + 1.0, "float32")}, fetch_list=[loss])
        scope = fluid.global_scope()
        return {p.name: np.array(scope.find_var(p.name).get_tensor()) for p in main.all_parameters()}, params_grads


def test_one_worker_fleet_trains_as_the_plain_program(env):
    plain, _ = _trained(False)
    with_fleet, params_grads = _trained(True)
    assert sorted(plain) == sorted(with_fleet) and len(params_grads) == 4
    for k in plain:
        np.testing.assert_allclose(with_fleet[k], plain[k], rtol=1e-6, err_msg=k)
    assert isinstance(fleet.main_program, fluid.CompiledProgram)
    assert isinstance(fleet._origin_program, fluid.Program)


def test_strategy_options_it_cannot_honour_are_refused(env):
    strategy = DistributedStrategy()
    strategy.use_local_sgd = True
    with pytest.raises(NotImplementedError, match="use_local_sgd is not supported"):
        fleet.distributed_optimizer(fluid.optimizer.SGD(0.1), strategy)
    strategy = DistributedStrategy()
    strategy.forward_recompute = True
    with pytest.raises(ValueError, match="please set strategy.recompute_checkpoints"):
        _trained(True, strategy)
    with pytest.raises(TypeError, match="strategy must be a DistributedStrategy. Received: BuildStrategy"):
        fleet.distributed_optimizer(fluid.optimizer.SGD(0.1), fluid.BuildStrategy())


def test_saving_before_minimize_names_the_missing_program(tmp_path):
    from fluidcompat.incubate.fleet.collective import Collective

    fresh = Collective()
    with pytest.raises(TypeError, match="main_program must be as Program type .*Received: NoneType"):
        fresh.save_persistables(fluid.Executor(fluid.CPUPlace()), str(tmp_path))
    with pytest.raises(TypeError, match="executor must be as Executor type"):
        fresh.save_persistables("exe", str(tmp_path))


def test_parameter_server_fleet_checks(env, tmp_path):
    """Jobs: tests/test_distribute_transpiler.py. Here what is refused, with fluid's words where it
    had them, and the strategies: synchronous by default, asynchronous, a DistributeTranspilerConfig."""
    from fluidcompat.incubate.fleet.parameter_server.distribute_transpiler import (
        DistributedTranspiler,
        StrategyFactory,
        TranspilerOptimizer,
    )

    ps = DistributedTranspiler()
    with pytest.raises(ValueError, match=r"use fleet.init\(role\) to initialize the role"):
        ps.distributed_optimizer(fluid.optimizer.SGD(0.1))
    ps.init(role_maker.UserDefinedRoleMaker(0, Role.WORKER, 2, ["127.0.0.1:6001"]))
    default = ps.distributed_optimizer(fluid.optimizer.SGD(0.1))._strategy.get_program_config()
    assert (default.sync_mode, default.runtime_split_send_recv, default.completely_not_async) == (False, True, True)
    assert not StrategyFactory.create_async_strategy().get_program_config().sync_mode
    with pytest.raises(TypeError, match="strategy must be an instance of DistributeTranspilerConfig"):
        TranspilerOptimizer(fluid.optimizer.SGD(0.1), DistributedStrategy())
    with pytest.raises(ValueError, match="startup_program is None, need invoke DistributedOptimizer.minimize first"):
        ps.init_server()
    with pytest.raises(ValueError, match="main_program is None, need invoke DistributedOptimizer.minimize first"):
        ps.run_server()
    exe = fluid.Executor(fluid.CPUPlace())
    with pytest.raises(TypeError, match="CompiledProgram is not allowed"):
        ps.save_persistables(exe, str(tmp_path), fluid.CompiledProgram(fluid.Program()))
    with pytest.raises(ValueError, match="main_program is for local, may not use fleet.save_persistables"):
        ps.save_persistables(exe, str(tmp_path), fluid.Program())
