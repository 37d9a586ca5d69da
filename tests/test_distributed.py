"""Data parallelism on torch.distributed: `fluidcompat launch` (torchrun underneath) with Gloo CPU
workers, paddle.DataParallel, CompiledProgram.with_data_parallel across processes, and the launcher's
plan, environment, logs and failure handling."""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

import fluidcompat as fluid
from fluidcompat import launch, places
from fluidcompat.executor import collective
from fluidcompat.framework import OpRole

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPTS = os.path.join(ROOT, "tests", "dist_scripts")


def fluidcompat(*args, cwd, timeout=120):
    proc = subprocess.run([sys.executable, "-m", "fluidcompat", *args], capture_output=True, text=True, cwd=cwd,
                          timeout=timeout)  # fmt: skip
    return proc


def launched(nproc, script, *args, cwd, log_dir="logs"):
    proc = fluidcompat("launch", "--device", "cpu", "--nproc_per_node", str(nproc), "--log_dir", log_dir,
                       os.path.join(SCRIPTS, script), *args, cwd=cwd)  # fmt: skip
    logs = {name: open(os.path.join(cwd, log_dir, name)).read() for name in os.listdir(os.path.join(cwd, log_dir))}
    assert proc.returncode == 0, (proc.stderr, logs)
    return proc, logs


@pytest.mark.parametrize(
    "mode,opt",
    [
        ("dygraph", "sgd"),
        ("dygraph", "adam"),
        ("static", "sgd"),
        ("static", "adam"),
        ("nccl2", "adam"),
        ("fleet", "adam"),
    ],
)
def test_two_workers_reach_the_one_process_full_batch_parameters(tmp_path, mode, opt):
    """Each worker trains on half of every batch; with gradients averaged (DataParallel) or summed after
    a 1/2 loss scale (with_data_parallel's all-reduce ops) the parameters equal one process's on the
    full batch. The workers start from different random values: rank 0's are broadcast."""
    script = os.path.join(SCRIPTS, "mlp_data_parallel.py")
    one = fluidcompat("run", "--device", "cpu", script, mode, "one.npz", "--optimizer", opt, cwd=tmp_path)
    assert one.returncode == 0, one.stderr
    _, logs = launched(2, "mlp_data_parallel.py", mode, "two.npz", "--optimizer", opt, cwd=tmp_path)
    assert "rank 1 of 2 trained 4 parameters" in logs["workerlog.1"]
    a, b = np.load(tmp_path / "one.npz"), np.load(tmp_path / "two.npz")
    assert sorted(a.files) == sorted(b.files) and len(a.files) == 4
    for k in a.files:
        np.testing.assert_allclose(b[k], a[k], atol=1e-6, rtol=0, err_msg=k)
    start = np.load(tmp_path / "one.npz")
    assert any(np.abs(start[k]).max() > 0 for k in start.files)
    if mode == "fleet":  # worker 0 saved the persistables of the program before it was compiled
        saved = sorted(os.listdir(tmp_path / "two.npz.persistables"))
        assert set(a.files) <= set(saved) and any(n.endswith("_moment1_0") for n in saved), saved


@pytest.mark.cuda
@pytest.mark.parametrize("mode", ["dygraph", "static"])
def test_two_gpu_workers_over_nccl_reach_the_one_process_parameters(tmp_path, mode):
    import torch

    if torch.cuda.device_count() < 2:
        pytest.skip("needs two CUDA devices")
    script = os.path.join(SCRIPTS, "mlp_data_parallel.py")
    one = fluidcompat("run", "--device", "gpu", script, mode, "one.npz", cwd=tmp_path)
    assert one.returncode == 0, one.stderr
    proc = fluidcompat("launch", "--gpus", "0,1", "--log_dir", "logs", script, mode, "two.npz", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    a, b = np.load(tmp_path / "one.npz"), np.load(tmp_path / "two.npz")
    for k in a.files:
        np.testing.assert_allclose(b[k], a[k], atol=1e-5, rtol=0, err_msg=k)


def test_collective_ops_reduce_over_the_workers(tmp_path):
    launched(2, "collective_ops.py", str(tmp_path / "out"), cwd=tmp_path)
    r0, r1 = np.load(tmp_path / "out.0.npz"), np.load(tmp_path / "out.1.npz")
    xs = np.stack([r0["x"], r1["x"]])
    for kind, fn in (("sum", np.sum), ("max", np.max), ("min", np.min), ("prod", np.prod)):
        for r in (r0, r1):
            np.testing.assert_allclose(r[kind], fn(xs, axis=0), rtol=1e-6, err_msg=kind)


def test_data_parallel_sample_trains_the_same_with_one_or_two_workers(tmp_path):
    sample = os.path.join(ROOT, "samples", "paddle2_data_parallel.py")
    one = fluidcompat("run", "--device", "cpu", sample, cwd=tmp_path)
    assert one.returncode == 0, one.stderr
    _, logs = launched(2, os.path.join(ROOT, "samples", "paddle2_data_parallel.py"), cwd=tmp_path)
    final = [ln for ln in one.stdout.splitlines() if "final weight sum" in ln]
    assert len(final) == 1
    want = final[0].split("sum ")[1]
    for r in (0, 1):
        assert f"worker {r} final weight sum {want}\n" in logs[f"workerlog.{r}"], logs


def test_launcher_sets_paddles_variables_and_stops_everyone_when_a_worker_dies(tmp_path):
    """`fluidcompat run -m paddle.distributed.launch`: the workers see PADDLE_TRAINER_ID etc.; killing
    worker 1 mid-run stops worker 0 and the launcher exits 1 naming worker 1's log."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "fluidcompat", "run", "--device", "cpu", "-m", "paddle.distributed.launch",
         "--nproc_per_node", "2", "--log_dir", "mylog", os.path.join(SCRIPTS, "worker_waits.py"), str(tmp_path)],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.time() + 60
        while not all((tmp_path / f"pid.{r}").exists() for r in (0, 1)):
            assert proc.poll() is None and time.time() < deadline, proc.communicate()
            time.sleep(0.1)
        time.sleep(0.3)
        pids = [int((tmp_path / f"pid.{r}").read_text()) for r in (0, 1)]
        os.kill(pids[1], signal.SIGKILL)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 1, err
    assert "worker 1 (pid %d) was killed by signal 9 (SIGKILL); the other workers were stopped" % pids[1] in err
    assert "its log: mylog/workerlog.1" in err
    with pytest.raises(ProcessLookupError):
        os.kill(pids[0], 0)  # worker 0 is gone too
    assert "worker 0 ready" in (tmp_path / "mylog" / "workerlog.0").read_text()
    envs = [json.loads((tmp_path / f"env.{r}.json").read_text()) for r in (0, 1)]
    for r, env in enumerate(envs):
        assert env["PADDLE_TRAINER_ID"] == env["RANK"] == env["PADDLE_RANK_IN_NODE"] == str(r)
        assert env["PADDLE_TRAINERS_NUM"] == env["WORLD_SIZE"] == "2"
        assert env["PADDLE_TRAINER_ENDPOINTS"].split(",")[r] == env["PADDLE_CURRENT_ENDPOINT"]
    assert envs[0]["PADDLE_TRAINER_ENDPOINTS"] == envs[1]["PADDLE_TRAINER_ENDPOINTS"]


def test_a_failing_script_fails_the_launch(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text(
        "import paddle.distributed as dist\nif dist.get_rank() == 1:\n    raise ValueError('rank 1 fails')\n"
    )
    proc = fluidcompat("launch", "--device", "cpu", "--nproc_per_node", "2", "--log_dir", "L", str(bad), cwd=tmp_path)
    assert proc.returncode == 1
    assert "worker 1 (pid" in proc.stderr and "exited with code 1" in proc.stderr and "L/workerlog.1" in proc.stderr
    assert "ValueError: rank 1 fails" in (tmp_path / "L" / "workerlog.1").read_text()
    missing = fluidcompat("launch", "--nproc_per_node", "2", "nope.py", cwd=tmp_path)
    assert missing.returncode == 2 and "can't open file 'nope.py'" in missing.stderr


# -- the launch plan (pure) -----------------------------------------------------------------------
def ns(**kw):
    base = dict(gpus=None, nproc_per_node=None, device=None)
    base.update(kw)
    return argparse.Namespace(**base)


@pytest.fixture
def gpus(monkeypatch):
    """Pretend torch sees ``n`` GPUs."""
    import torch

    def set_gpus(n, visible=None):
        monkeypatch.setattr(torch.cuda, "is_available", lambda: n > 0)
        monkeypatch.setattr(torch.cuda, "device_count", lambda: n)
        if visible is None:
            monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
        else:
            monkeypatch.setenv("CUDA_VISIBLE_DEVICES", visible)

    return set_gpus


def test_plan_one_worker_per_gpu(gpus):
    gpus(4)
    assert launch.plan(ns()) == {"nproc": 4, "device": "gpu", "visible": "0,1,2,3"}
    assert launch.plan(ns(gpus="1,3")) == {"nproc": 2, "device": "gpu", "visible": "1,3"}
    gpus(2, visible="4,6")  # --gpus counts within CUDA_VISIBLE_DEVICES
    assert launch.plan(ns(gpus="1")) == {"nproc": 1, "device": "gpu", "visible": "6"}
    with pytest.raises(SystemExit, match=r"--gpus 0,2: 2 not among the 2 visible GPUs \(CUDA_VISIBLE_DEVICES=4,6\)"):
        launch.plan(ns(gpus="0,2"))
    with pytest.raises(SystemExit, match="3 workers per node but only 2 GPUs"):
        launch.plan(ns(nproc_per_node=3))


def test_plan_on_the_cpu(gpus):
    gpus(0)
    assert launch.plan(ns()) == {"nproc": 1, "device": "cpu", "visible": None}
    assert launch.plan(ns(nproc_per_node=3)) == {"nproc": 3, "device": "cpu", "visible": None}
    with pytest.raises(SystemExit, match="--gpus 0,1 was asked for, but torch finds no CUDA device"):
        launch.plan(ns(gpus="0,1"))  # as `run --device gpu` refuses (it started CPU workers)
    assert launch.plan(ns(gpus="0,1", device="cpu")) == {"nproc": 2, "device": "cpu", "visible": None}
    with pytest.raises(SystemExit, match="--device gpu was asked for, but torch finds no CUDA device"):
        launch.plan(ns(device="gpu"))
    gpus(2)
    assert launch.plan(ns(device="cpu", nproc_per_node=2))["device"] == "cpu"


def test_plan_under_fluidcompat_run_device_cpu(gpus, monkeypatch):
    """`fluidcompat run --device cpu -m paddle.distributed.launch` on a machine with one GPU: two CPU
    workers, not an error for want of GPUs (seen on an H200 machine)."""
    gpus(1)
    monkeypatch.setenv(places.ENV_DEVICE, "cpu")
    assert launch.plan(ns(nproc_per_node=2)) == {"nproc": 2, "device": "cpu", "visible": None}
    monkeypatch.delenv(places.ENV_DEVICE)
    with pytest.raises(SystemExit, match="2 workers per node but only 1 GPUs"):
        launch.plan(ns(nproc_per_node=2))


def test_torchrun_arguments():
    args = launch._torchrun_args(
        argparse.Namespace(nnodes="2", node_rank=1, master_addr="10.0.0.1", master_port=6170, rdzv_endpoint=None,
                           rdzv_backend=None, rdzv_id=None, log_dir=None, script="t.py", args=["--lr", "1"]),
        {"nproc": 4, "device": "gpu", "visible": "0,1,2,3"},
    )  # fmt: skip
    assert args[:6] == ["--nproc-per-node", "4", "--nnodes", "2", "--max-restarts", "0"]
    assert "--node-rank" in args and args[args.index("--master-addr") + 1] == "10.0.0.1"
    assert args[args.index("--module") :] == ["--module", "fluidcompat.launch", launch.WORKER_FLAG, "gpu", "", "t.py",
                                              "--lr", "1"]  # fmt: skip


# -- with_data_parallel's program (pure) ----------------------------------------------------------
def build_mlp():
    x = fluid.data("x", [None, 3], "float32")
    y = fluid.data("y", [None, 1], "float32")
    loss = fluid.layers.mean(fluid.layers.square_error_cost(fluid.layers.fc(x, 1), y))
    fluid.optimizer.SGD(0.1).minimize(loss)
    return loss


def test_collective_program_scales_the_loss_grad_and_all_reduces_each_grad():
    loss = build_mlp()
    main = fluid.default_main_program()
    before = [op.type for op in main.global_block().ops]
    p = collective.collective_program(main, loss.name, 4)
    assert [op.type for op in main.global_block().ops] == before  # the user's program is left as it was
    ops = p.global_block().ops
    types = [op.type for op in ops]
    i = next(k for k, op in enumerate(ops) if op.attrs.get("op_role", 0) & OpRole.Loss and op.type == "fill_constant")
    assert types[i + 1] == "scale" and ops[i + 1].attrs["scale"] == 0.25
    assert ops[i + 1].inputs["X"] == ops[i + 1].outputs["Out"] == [loss.name + "@GRAD"]
    first_sgd = types.index("sgd")
    reduced = [op.inputs["X"][0] for op in ops[first_sgd - 2 : first_sgd]]
    assert types[first_sgd - 2 : first_sgd] == ["c_allreduce_sum"] * 2
    assert sorted(reduced) == sorted(op.inputs["Grad"][0] for op in ops if op.type == "sgd")
    assert types.count("c_allreduce_sum") == 2


def test_collective_program_without_backward_says_what_to_do():
    x = fluid.data("x", [None, 3], "float32")
    loss = fluid.layers.mean(fluid.layers.fc(x, 1))
    with pytest.raises(ValueError, match=r"no backward pass for the loss '.*': call optimizer.minimize\(loss\)"):
        collective.collective_program(fluid.default_main_program(), loss.name, 2)


def test_init_parallel_env_outside_a_launcher_says_how_to_launch(monkeypatch):
    from fluidcompat.compat import distributed

    for k in ("MASTER_ADDR", "PADDLE_TRAINER_ENDPOINTS", "PADDLE_TRAINERS_NUM"):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("WORLD_SIZE", "2")
    with pytest.raises(RuntimeError, match=r"not started by a launcher: run it with `fluidcompat launch"):
        distributed.init_parallel_env()
    monkeypatch.setenv("WORLD_SIZE", "1")
    assert distributed.init_parallel_env() is None and distributed.get_world_size() == 1
