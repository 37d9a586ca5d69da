"""The parameter-server fleet's fluid 1.8 modules: the strategies (distributed_strategy), the
communicator (fluid.communicator) and the programs it runs, GEO-SGD (GeoSgdTranspiler), the PSLib
module, the role makers with collectives, collective checkpoints (TrainStatus, fs_wrapper) and the
fleet utils. Golden fleet_ps_modules: facts of fluid 1.8.5 (tests/golden/fleet_ps_modules.py); the
communicator's jobs run in this process (the servers in threads) against local training."""

from __future__ import annotations

import os
import subprocess
import sys
import threading

import numpy as np
import pytest

import fluidcompat as fluid
from fluidcompat.communicator import Communicator
from fluidcompat.incubate.fleet.base import role_maker
from fluidcompat.transpiler import rpc
from fluidcompat.transpiler.distribute_transpiler import DistributedMode
from tests.test_distribute_transpiler import _free_ports
from tests.test_goldens import load, run_fluidcompat


# -- fluid 1.8.5's facts -----------------------------------------------------------------------------
def _rpc_ops_alike(want, got):
    """The programs' ops; a server's grad_to_block_id as a set (fluid's came out of a Python set)."""
    assert len(want) == len(got)
    for w, g in zip(want, got):
        if w[0] == "listen_and_serv":
            w, g = [w[0], w[1], w[2], dict(w[3])], [g[0], g[1], g[2], dict(g[3])]
            w[3]["grad_to_block_id"] = sorted(w[3]["grad_to_block_id"])
            g[3]["grad_to_block_id"] = sorted(g[3]["grad_to_block_id"])
        assert w == g


def test_fleet_modules_match_fluid():
    """Strategies (program configs, communicator flags, debug options, errors), the trainer and
    server programs of the sync / async / half_async strategies, the strategy each
    DistributeTranspilerConfig stands for, GEO-SGD's server program and vars info, fleet_embedding's
    pull_sparse ops and checks, TrainStatus, FleetUtil and the role makers' checks."""
    want, got = load("fleet_ps_modules.json"), run_fluidcompat("fleet_ps_modules.py")
    assert sorted(want) == sorted(got)
    for key in want:
        if key == "programs":
            assert sorted(want[key]) == sorted(got[key])
            for name in want[key]:
                _rpc_ops_alike(want[key][name], got[key][name])
        elif key == "prepare_errors":  # fluid's words begin ours
            assert [w[0] for w in want[key]] == [g[0] for g in got[key]]
            assert all(g[1].startswith(w[1]) for w, g in zip(want[key], got[key]))
        elif key == "geo_trainer":  # beyond fluid: a do_not_run recv per parameter after the step's send
            assert got[key][: len(want[key])] == want[key]
            assert got[key][len(want[key]) :] == ["recv"] * 4
        else:
            assert want[key] == got[key], key


# -- the communicator's jobs: a server thread and this process's trainer ------------------------------
def _net(lr=0.1):
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 3
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data("x", [None, 64], "float32")
        y = fluid.data("y", [None, 1], "float32")
        # a weight of 16384 elements: two blocks; constants (a server draws a block's random values alone)
        h = fluid.layers.fc(x, 256, act="tanh", param_attr=fluid.initializer.Constant(0.02))
        pred = fluid.layers.fc(h, 1, param_attr=fluid.initializer.Constant(-0.05))
        loss = fluid.layers.mean(fluid.layers.square_error_cost(pred, y))
        fluid.optimizer.SGD(lr).minimize(loss)
    return main, startup, loss


def _batches(n):
    rs = np.random.RandomState(7)
    return [(rs.uniform(-1, 1, (8, 64)).astype("float32"), rs.uniform(-1, 1, (8, 1)).astype("float32"))
            for _ in range(n)]  # fmt: skip


def _local(n):
    main, startup, loss = _net()
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    losses = [float(exe.run(main, feed={"x": x, "y": y}, fetch_list=[loss], scope=scope)[0][0]) for x, y in _batches(n)]
    return losses, {p.name: np.array(scope.find_var(p.name).get_tensor()) for p in main.all_parameters()}


class _Server(threading.Thread):
    def __init__(self, prog, startup):
        super().__init__(daemon=True)
        self.exe, self.scope, self.prog, self.error = fluid.Executor(fluid.CPUPlace()), fluid.Scope(), prog, None
        self.exe.run(startup, scope=self.scope)
        self.start()

    def run(self):
        try:
            self.exe.run(self.prog, scope=self.scope)
        except Exception as e:  # reported by the test
            self.error = e

    def value(self, name):
        return np.array(self.scope.find_var(name).get_tensor())


@pytest.fixture
def fresh_client():
    import fluidcompat.communicator as comm

    rpc._CLIENT = None
    yield
    rpc.close_client()
    rpc._CLIENT = None
    comm._current = None
    comm._geo_initial.clear()


def _config(mode, push_nums=2):
    c = fluid.DistributeTranspilerConfig()
    c.sync_mode = False
    c.runtime_split_send_recv = True
    c.half_async = mode in (DistributedMode.HALF_ASYNC, DistributedMode.SYNC)
    c.completely_not_async = mode == DistributedMode.SYNC
    c.geo_sgd_mode = mode == DistributedMode.GEO
    c.geo_sgd_need_push_nums = push_nums
    return c


class _Servers:
    def __init__(self, t, endpoints):
        self.threads = [_Server(*t.get_pserver_programs(ep)) for ep in endpoints]

    def join(self, timeout):
        for s in self.threads:
            s.join(timeout)
            assert not s.is_alive() and s.error is None, s.error

    def value(self, name):
        return next(s.value(name) for s in self.threads if s.scope.find_var(name) is not None)


def _job(mode, steps, envs=None, push_nums=2):
    """One trainer and two servers (threads): the trainer's losses and scope, the servers, the
    trainer program."""
    from fluidcompat.transpiler.geo_sgd_transpiler import GeoSgdTranspiler

    endpoints = [f"127.0.0.1:{p}" for p in _free_ports(2)]
    main, startup, loss = _net()
    make = GeoSgdTranspiler if mode == DistributedMode.GEO else fluid.DistributeTranspiler
    t = make(_config(mode, push_nums))
    t.transpile(0, program=main, pservers=",".join(endpoints), trainers=1, sync_mode=False, startup_program=startup)
    server = _Servers(t, endpoints)
    prog = t.get_trainer_program(wait_port=False)
    trainer_startup = t.trainer_startup_program if mode == DistributedMode.GEO else startup
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    kwargs = {"pserver_endpoints": endpoints, "trainer_id": 0}
    if mode == DistributedMode.GEO:
        kwargs = {"push_vars": t._get_vars_info(), "trainers": 1, "push_nums": push_nums}
    with fluid.scope_guard(scope):
        exe.run(trainer_startup)
        comm = Communicator(prog, mode, kwargs, envs or {})
        comm.start()
        losses = [float(exe.run(prog, feed={"x": x, "y": y}, fetch_list=[loss])[0][0]) for x, y in _batches(steps)]
        comm.stop()
        assert not comm.is_running()
    exe.close()
    server.join(30)
    return losses, scope, server, main


@pytest.mark.parametrize("mode", [DistributedMode.HALF_ASYNC, DistributedMode.SYNC])
def test_half_async_and_sync_communicators_train_as_one_process(fresh_client, mode):
    """One trainer: each step's gradients go at the barrier (the weight in two blocks, cut by the
    communicator) and the parameters come back before the next step: local training's losses and
    parameters."""
    losses, scope, server, main = _job(mode, 5)
    want_losses, want_params = _local(5)
    np.testing.assert_allclose(losses, want_losses, rtol=1e-5, atol=1e-6)
    for name, value in want_params.items():
        np.testing.assert_allclose(np.array(scope.find_var(name).get_tensor()), value, rtol=1e-5, atol=1e-6)
    whole = np.concatenate([server.value("fc_0.w_0.block0"), server.value("fc_0.w_0.block1")])
    np.testing.assert_allclose(whole, want_params["fc_0.w_0"], rtol=1e-5, atol=1e-6)
    ops = main.global_block().ops
    assert [op.attrs["do_not_run"] for op in ops if op.type == "recv"] == [True] * 4
    assert "split_byref" not in [op.type for op in ops] and "concat" not in [op.type for op in ops]


def test_async_communicator_sends_on_its_threads(fresh_client):
    """ASYNC: the gradients are merged and sent by the communicator's thread, the parameters received
    by another; after stop() the trainer's scope holds the servers' last values."""
    losses, scope, server, _ = _job(DistributedMode.ASYNC, 6, {"communicator_min_send_grad_num_before_recv": "1"})
    assert np.isfinite(losses).all()
    start = _local(0)[1]
    moved = np.abs(server.value("fc_1.w_0") - start["fc_1.w_0"]).max()
    assert moved > 0
    np.testing.assert_allclose(np.array(scope.find_var("fc_1.b_0").get_tensor()), server.value("fc_1.b_0"), atol=1e-6)


def test_geo_communicator_exchanges_every_push_nums_steps(fresh_client):
    """GEO-SGD, one trainer: the trainer trains as a local process (its own SGD); every 2 steps its
    change goes to the server, whose parameters then equal the trainer's."""
    losses, scope, server, main = _job(DistributedMode.GEO, 4, push_nums=2)
    want_losses, want_params = _local(4)
    np.testing.assert_allclose(losses, want_losses, rtol=1e-5, atol=1e-6)
    for name, value in want_params.items():
        np.testing.assert_allclose(np.array(scope.find_var(name).get_tensor()), value, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(server.value("fc_1.w_0"), want_params["fc_1.w_0"], rtol=1e-5, atol=1e-6)
    whole = np.concatenate([server.value("fc_0.w_0.block0"), server.value("fc_0.w_0.block1")])
    np.testing.assert_allclose(whole, want_params["fc_0.w_0"], rtol=1e-5, atol=1e-6)


def test_communicator_errors_name_the_problem(fresh_client):
    import fluidcompat.communicator as comm

    with pytest.raises(TypeError, match="program must be a fluid Program .*Received: str"):
        Communicator("prog", DistributedMode.ASYNC)
    with pytest.raises(ValueError, match="mode must be one of DistributedMode"):
        Communicator(fluid.Program(), 9)
    with pytest.raises(ValueError, match=r"GEO mode needs kwargs .*missing \['push_vars', 'trainers', 'push_nums'\]"):
        Communicator(fluid.Program(), DistributedMode.GEO, {})
    with pytest.raises(ValueError, match="communicator_send_queue_size must be an integer. Received: 'x'"):
        Communicator(fluid.Program(), DistributedMode.ASYNC, None, {"communicator_send_queue_size": "x"})
    # a communicator's program run without one
    comm._current = None
    main, startup, loss = _net()
    t = fluid.DistributeTranspiler(_config(DistributedMode.HALF_ASYNC))
    t.transpile(0, program=main, pservers="127.0.0.1:1", trainers=1, sync_mode=False, startup_program=startup)
    prog = t.get_trainer_program(wait_port=False)
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    for p in main.all_parameters():  # (the trainer startup would receive them)
        scope.var(p.name).get_tensor().set(np.zeros(p.shape, "float32"), fluid.CPUPlace())
    x, y = _batches(1)[0]
    with pytest.raises(Exception, match=r"go through the communicator .*call fleet.init_worker\(\)"):
        exe.run(prog, feed={"x": x, "y": y}, scope=scope)
    c = Communicator(prog, DistributedMode.HALF_ASYNC)
    with pytest.raises(Exception, match="the communicator is not running"):
        exe.run(prog, feed={"x": x, "y": y}, scope=scope)
    assert not c.is_running()


def test_fleet_builds_geo_programs_and_refuses_plain_transpiling():
    from fluidcompat.transpiler.geo_sgd_transpiler import GeoSgdTranspiler

    main, startup, _ = _net()
    with pytest.raises(NotImplementedError, match="geo_sgd_mode is built by .*GeoSgdTranspiler"):
        fluid.DistributeTranspiler(_config(DistributedMode.GEO)).transpile(
            0, program=main, pservers="127.0.0.1:1", trainers=1, startup_program=startup
        )
    t = GeoSgdTranspiler(_config(DistributedMode.GEO))
    t.transpile(0, program=main, pservers="127.0.0.1:1,127.0.0.1:2", trainers=2, startup_program=startup)
    info = t._get_vars_info()
    assert info["fc_0.w_0"]["var_names"] == ["fc_0.w_0.block0", "fc_0.w_0.block1"]
    assert info["fc_0.w_0"]["sections"] == ["32", "32"] and info["fc_0.b_0"]["is_sparse"] == ["False"]
    assert [op.type for op in t.trainer_startup_program.global_block().ops][-1] == "send"
    with pytest.raises(ValueError, match="endpoint '127.0.0.1:3' is not one of the pservers"):
        t.get_pserver_program("127.0.0.1:3")


# -- the PSLib module --------------------------------------------------------------------------------
def test_pslib_needs_pslib_and_says_what_to_use(monkeypatch):
    from fluidcompat.incubate.fleet.parameter_server.pslib import PSLib, PSLibUnavailableError, fleet_embedding

    monkeypatch.setitem(sys.modules, "mpi4py", None)  # a machine without mpi4py (some have it)
    ps = PSLib()
    with pytest.raises(ModuleNotFoundError, match="MPISymetricRoleMaker needs mpi4py"):
        ps.init()
    ps.init(role_maker.UserDefinedRoleMaker(0, role_maker.Role.WORKER, 1, ["127.0.0.1:1"]))
    assert ps.worker_num() == 1 and ps.is_worker()
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        ids = fluid.data("ids", [None, 1], "int64")
        with fleet_embedding(click_name="click"):
            emb = fluid.layers.embedding(ids, [-1, 4], is_sparse=True, is_distributed=True,
                                         param_attr=fluid.ParamAttr(name="emb_t"))  # fmt: skip
        assert fluid.layers.embedding.__name__ == "embedding"  # put back
        loss = fluid.layers.mean(emb)
    opt = ps.distributed_optimizer(fluid.optimizer.SGD(0.1))
    with pytest.raises(PSLibUnavailableError, match="needs PSLib.*distribute_transpiler") as e:
        opt.minimize(loss)
    assert isinstance(e.value, ImportError)
    for call in (ps.save_model, ps.load_model, ps.stop_worker):
        with pytest.raises(PSLibUnavailableError, match="needs PSLib"):
            call()
    with pytest.raises(ValueError, match=r"run DistributedOptimizer.minimize\(\) first"):
        ps.init_worker()
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    with pytest.raises(Exception, match=r"op 0 \(pull_sparse\) has no kernel .*a table of PSLib"):
        exe.run(main, feed={"ids": np.array([[1], [2]], "int64")}, fetch_list=[emb])


# -- role makers ---------------------------------------------------------------------------------------
def test_file_collectives_of_three_ranks(tmp_path):
    from fluidcompat.incubate.fleet.base.role_maker import _FileComm

    results = {}

    def rank(r):
        comm = _FileComm(str(tmp_path), r, 3, 30, 30)
        comm.barrier()
        results[r] = (comm.all_gather(r * 10), comm.all_reduce([r, 1.5], "sum"), comm.all_reduce([r], "max"))

    threads = [threading.Thread(target=rank, args=(r,)) for r in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert results == {r: ([0, 10, 20], [3, 4.5], [2]) for r in range(3)}


def test_general_role_maker_reads_the_environment(monkeypatch, tmp_path):
    from fluidcompat.incubate.fleet.base.role_maker import GeneralRoleMaker

    monkeypatch.setenv("TRAINING_ROLE", "WRONG")
    monkeypatch.setenv("PADDLE_PSERVERS_IP_PORT_LIST", "127.0.0.1:1")
    monkeypatch.setenv("PADDLE_TRAINER_ENDPOINTS", "127.0.0.1:2")
    with pytest.raises(ValueError, match="TRAINING_ROLE must be PSERVER or TRAINER. Received: 'WRONG'"):
        GeneralRoleMaker(path=str(tmp_path)).generate_role()
    monkeypatch.setenv("TRAINING_ROLE", "TRAINER")
    with pytest.raises(NotImplementedError, match="not over HDFS"):
        GeneralRoleMaker(path=str(tmp_path), hdfs_name="afs://x").generate_role()


# -- collective checkpoints ----------------------------------------------------------------------------
def test_collective_checkpoints_save_load_and_clean(tmp_path, monkeypatch):
    from fluidcompat.compat.fs_wrapper import LocalFS
    from fluidcompat.incubate.fleet.collective import TrainStatus, fleet

    monkeypatch.setenv("PADDLE_TRAINER_ID", "0")
    monkeypatch.setenv("PADDLE_TRAINER_ENDPOINTS", "127.0.0.1:6070")
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data("x", [None, 3], "float32")
        loss = fluid.layers.mean(fluid.layers.fc(x, 2))
        fleet.init(role_maker.PaddleCloudRoleMaker(is_collective=True))
        fleet.distributed_optimizer(fluid.optimizer.Adam(0.01)).minimize(loss)
    exe, fs, root = fluid.Executor(fluid.CPUPlace()), LocalFS(), str(tmp_path / "ckpt")
    with fluid.scope_guard(fluid.Scope()):
        exe.run(startup)
        w = np.array(fluid.global_scope().find_var("fc_0.w_0").get_tensor())
        assert fleet.load_check_point(exe, root, trainer_id=0, fs=fs) is None
        with pytest.raises(ValueError, match="Can't find checkpoint"):
            fleet.load_check_point(exe, root, trainer_id=0, fs=fs, ignore_empty=False)
        fleet.save_check_point(exe, root, train_status=TrainStatus(2), fs=fs)
        fleet.save_check_point(exe, root, train_status=TrainStatus(3), fs=fs)
        assert fleet._get_last_checkpoint_no(root, fs=fs) == 1
        fluid.global_scope().find_var("fc_0.w_0").get_tensor().set(w * 0, fluid.CPUPlace())
        assert fleet.load_check_point(exe, root, trainer_id=0, fs=fs) == TrainStatus(3)
        np.testing.assert_array_equal(np.array(fluid.global_scope().find_var("fc_0.w_0").get_tensor()), w)
    fleet.clean_redundant_check_points(root, fs=fs)
    assert fs.list_dirs(root) == ["__paddle_fleet_checkpoint__.1"]
    assert sorted(os.listdir(os.path.join(root, "__paddle_fleet_checkpoint__.1"))) == [
        "_paddle_fleet_param__", "fleet_train_status"]  # fmt: skip


def test_bdfs_needs_the_hadoop_command(monkeypatch):
    from fluidcompat.compat.fs_wrapper import BDFS

    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(FileNotFoundError, match="no hadoop command is on PATH"):
        BDFS("afs://x", "u,p").stat("/a")


# -- fleet utils -----------------------------------------------------------------------------------------
def test_fleet_util_metrics_and_pass_intervals():
    from fluidcompat.incubate.fleet.parameter_server.distribute_transpiler import fleet
    from fluidcompat.incubate.fleet.utils.fleet_util import FleetUtil

    fleet.init(role_maker.UserDefinedRoleMaker(0, role_maker.Role.WORKER, 1, ["127.0.0.1:1"]))
    util = FleetUtil("transpiler")
    scope = fluid.Scope()
    # 4 thresholds: positives all in the top bucket, negatives in the bottom one: AUC 1
    for name, value in (("pos", [[0, 0, 0, 5]]), ("neg", [[5, 0, 0, 0]])):
        scope.var(name).get_tensor().set(np.array(value, "int64"), fluid.CPUPlace())
    assert util.get_global_auc(scope, "pos", "neg") == 1.0
    scope.var("neg").get_tensor().set(np.array([[0, 0, 0, 5]], "int64"), fluid.CPUPlace())
    assert util.get_global_auc(scope, "pos", "neg") == 0.5
    assert util.get_global_auc(scope, "missing", "neg") is None
    passes = util.get_online_pass_interval("{20190720..20190721}", "{8..9}", 30, 2, False)
    assert passes[:2] == [["0800", "0830"], ["0900", "0930"]]
    assert util.get_online_pass_interval("20190720", "{0..23}", 60, 3, True)[0] == ["00", "01", "02"]


def test_program_tools_round_trip(tmp_path):
    from fluidcompat.incubate.fleet.utils import utils

    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [None, 3], "float32")
        fluid.layers.fc(x, 2)
    utils.save_program(main, str(tmp_path / "p.pbtxt"), is_text=True)
    assert utils.program_type_trans(str(tmp_path), "p.pbtxt", True) == "p.pbtxt.bin"
    again = utils.load_program(str(tmp_path / "p.pbtxt.bin"))
    assert [op.type for op in again.global_block().ops] == [op.type for op in main.global_block().ops]
    assert utils.check_pruned_program_vars(main, again)
    utils.parse_program(again, str(tmp_path))
    assert "fc_0.w_0" in (tmp_path / "vars_persistable.log").read_text()
    assert "'type': 'mul'" in (tmp_path / "ops.log").read_text()
    utils.graphviz(again.global_block(), str(tmp_path), "g")
    assert "mul" in (tmp_path / "g.dot").read_text()


def test_trainers_ready_barrier_through_a_directory(tmp_path, monkeypatch):
    from fluidcompat.incubate.fleet.parameter_server.distribute_transpiler import fleet
    from fluidcompat.incubate.fleet.utils.fleet_barrier_util import check_all_trainers_ready

    monkeypatch.delenv("HADOOP_HOME", raising=False)
    monkeypatch.chdir(tmp_path)
    fleet.init(role_maker.UserDefinedRoleMaker(0, role_maker.Role.WORKER, 1, ["127.0.0.1"]))
    check_all_trainers_ready(str(tmp_path / "ready"), 3)
    assert os.listdir(tmp_path / "ready") == ["ready.3.0.done"]


# -- fluidcompat run: Python children see paddle ------------------------------------------------------------
def test_python_children_of_a_script_import_paddle(tmp_path):
    script = tmp_path / "parent.py"
    script.write_text(
        "import subprocess, sys\n"
        "out = subprocess.run([sys.executable, '-c', 'import paddle.fluid as f; print(f.__name__)'],\n"
        "                     capture_output=True, text=True)\n"
        "print(out.stdout.strip(), out.returncode)\n"
    )
    proc = subprocess.run([sys.executable, "-m", "fluidcompat", "run", str(script)], capture_output=True, text=True,
                          timeout=120)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "fluidcompat 0"
