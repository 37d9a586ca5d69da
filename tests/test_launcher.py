"""`fluidcompat run`: the paddle alias, argv, __main__, tracebacks and exit codes as with python."""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import textwrap
import time
import types

import pytest

from fluidcompat import places
from tests.terminal import as_from_a_terminal

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def launch(tmp_path, body: str, *args: str, device="cpu", module=True, env=None):
    script = tmp_path / "script.py"
    script.write_text(textwrap.dedent(body))
    dev = ["--device", device] if device else []
    if module:
        cmd = [sys.executable, "-m", "fluidcompat", "run", *dev, str(script), *args]
    else:
        cmd = [
            shutil.which("fluidcompat") or os.path.join(os.path.dirname(sys.executable), "fluidcompat"),
            "run",
            *dev,
            str(script),
            *args,
        ]
    full_env = dict(os.environ)
    full_env.pop(places.ENV_DEVICE, None)
    full_env.update(env or {})
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=full_env, cwd=tmp_path)


def test_modules_resolve_to_fluidcompat(tmp_path):
    proc = launch(
        tmp_path,
        """
        import paddle
        import paddle.fluid as fluid
        import paddle.fluid.layers as layers
        import paddle.fluid.compiler as compiler
        import paddle.fluid.core as core
        import paddle.fluid.framework as framework
        import paddle.fluid.executor as executor
        import paddle.fluid.initializer as initializer
        import paddle.fluid.param_attr as param_attr
        import paddle.fluid.unique_name as unique_name
        from paddle.fluid import core as core2
        import fluidcompat
        assert fluid is fluidcompat and paddle.fluid is fluidcompat
        assert layers is fluidcompat.layers and core is core2
        assert compiler.CompiledProgram is fluid.CompiledProgram
        assert executor.Executor is fluid.Executor and framework.Program is fluid.Program
        assert initializer.Xavier is fluid.initializer.Xavier and param_attr.ParamAttr is fluid.ParamAttr
        assert unique_name.generate("a") == "a_0"
        assert core.is_compiled_with_cuda() is False
        assert isinstance(core.Scope(), fluid.Scope) and core.LoDTensor is fluid.LoDTensor
        assert str(core.CPUPlace()) == "CPUPlace"
        print(paddle.__version__)
    """,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "1.8.5"


def test_argv_and_main(tmp_path):
    proc = launch(
        tmp_path,
        """
        import sys
        print(__name__, sys.argv[1:], sys.argv[0].endswith("script.py"))
    """,
        "--lr",
        "0.1",
        "pos",
        module=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "__main__ ['--lr', '0.1', 'pos'] True"


def test_exit_codes(tmp_path):
    assert launch(tmp_path, "import sys\nsys.exit(3)\n").returncode == 3
    proc = launch(
        tmp_path,
        """
        def inner():
            raise KeyError("boom")
        inner()
    """,
    )
    assert proc.returncode == 1
    assert proc.stderr.startswith("Traceback (most recent call last):")
    assert 'script.py", line 4, in <module>' in proc.stderr and "KeyError: 'boom'" in proc.stderr
    assert "runpy" not in proc.stderr and "__main__.py" not in proc.stderr


def test_a_module_exiting_with_a_message_prints_it(tmp_path):
    """`fluidcompat run -m MODULE` as `python -m MODULE`: sys.exit("message") prints the message to
    stderr and exits 1 (the launcher's own errors are such messages)."""
    (tmp_path / "leaves.py").write_text("import sys\nsys.exit('leaves: no GPU for worker 1')\n")
    (tmp_path / "quiet.py").write_text("import sys\nsys.exit(4)\n")
    for module, code, err in (("leaves", 1, "leaves: no GPU for worker 1\n"), ("quiet", 4, "")):
        proc = subprocess.run(
            [sys.executable, "-m", "fluidcompat", "run", "--device", "cpu", "-m", module],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            env=dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), ROOT])),
        )
        assert (proc.returncode, proc.stderr.replace("fluidcompat: device cpu requested: GPU places and "
                "device_guard('gpu') run on the CPU\n", "")) == (code, err)  # fmt: skip


def test_missing_script(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "fluidcompat", "run", str(tmp_path / "nope.py")], capture_output=True, text=True
    )
    assert proc.returncode == 2 and "can't open file" in proc.stderr


CUDA_SCRIPT = """
    import paddle.fluid as fluid
    x = fluid.layers.fill_constant([2], 'float32', 1.5)
    with fluid.device_guard('gpu'):
        y = fluid.layers.relu(x)
    exe = fluid.Executor(fluid.CUDAPlace(0))
    print(exe.run(fetch_list=[y])[0].tolist())
"""


@pytest.mark.skipif(places.cuda_available(), reason="checks the machine without CUDA")
def test_cuda_place_without_cuda_is_one_line(tmp_path):
    proc = launch(tmp_path, CUDA_SCRIPT, device=None)
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("fluidcompat: error: CUDAPlace(0) needs CUDA")


def test_device_cpu_maps_gpu_places(tmp_path):
    proc = launch(tmp_path, CUDA_SCRIPT, device="cpu")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[1.5, 1.5]"
    assert proc.stderr.count("device cpu requested") == 1


def test_env_variable_maps_gpu_places(tmp_path):
    proc = launch(tmp_path, CUDA_SCRIPT, device=None, env={places.ENV_DEVICE: "cpu"})
    assert proc.returncode == 0, proc.stderr


def test_no_top_level_paddle_package():
    proc = subprocess.run([sys.executable, "-c", "import paddle"], capture_output=True, text=True, cwd="/")
    assert proc.returncode != 0 and "No module named 'paddle'" in proc.stderr


def test_legacy_numpy_names_only_under_run(tmp_path):
    """`fluidcompat run` puts back the numpy names numpy 2 removed (np.float, np.NaN, ...) and leaves
    those numpy still has (np.bool is numpy's bool, np.long its C long); a plain `import fluidcompat`
    does not touch numpy (tests/golden/legacy_names checks the values against fluid 1.8.5)."""
    proc = launch(
        tmp_path,
        """
        import numpy as np
        print(np.float is float, np.int is int, np.NaN != np.NaN, np.bool is np.bool_, np.long is np.dtype("long").type)
        """,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["True"] * 5
    plain = subprocess.run(
        [sys.executable, "-c", "import fluidcompat, numpy as np; print('float' in np.__dict__)"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert plain.stdout.strip() == "False", plain.stderr


def test_flags_set_in_os_environ_before_import(tmp_path):
    """A script that sets FLAGS_check_nan_inf in os.environ before `import paddle.fluid` (as fluid read
    its FLAGS_ at import) gets the check, though `fluidcompat run` imported fluidcompat first."""
    proc = launch(
        tmp_path,
        """
        import os
        os.environ["FLAGS_check_nan_inf"] = "1"
        import numpy as np
        import paddle.fluid as fluid
        x = fluid.data("x", [None, 2], "float32")
        y = fluid.layers.log(x)
        exe = fluid.Executor(fluid.CPUPlace())
        try:
            exe.run(feed={"x": np.array([[1, -1]], "float32")}, fetch_list=[y])
        except Exception as e:
            print([ln for ln in str(e).splitlines() if "===ERROR" in ln][0])
        """,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-1] == (
        "PreconditionNotMetError: ===ERROR: in [op=log] [tensor=log_0.tmp_0] find nan or inf==="
    )
    assert "In cpu, there has 1,0,1 nan,inf,num" in proc.stdout


# -- `fluidcompat launch` / `launch_ps`: ending a job (issue 41 point 4, issue 42) --------------------
WAITS = """
    import os, socket, subprocess, sys, time
    rank = os.environ.get("PADDLE_TRAINER_ID") or "s" + os.environ.get("PADDLE_PORT", "")
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    with open(f"ready.{rank}.tmp", "w") as f:
        f.write(f"{os.getpid()} {child.pid} {listener.getsockname()[1]}")
    os.replace(f"ready.{rank}.tmp", f"ready.{rank}")
    time.sleep(120)
"""


def start_job(tmp_path, body, *args):
    (tmp_path / "job.py").write_text(textwrap.dedent(body))
    env = dict(os.environ, TMPDIR=str(tmp_path / "tmp"))  # (where the launcher keeps its job directory)
    (tmp_path / "tmp").mkdir(exist_ok=True)
    env.pop(places.ENV_DEVICE, None)
    cmd = as_from_a_terminal([sys.executable, "-m", "fluidcompat", *args, "job.py"])
    return subprocess.Popen(cmd, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_ready(tmp_path, proc, names, limit=60):
    deadline = time.monotonic() + limit
    while not all((tmp_path / f"ready.{n}").exists() for n in names):
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.05)
    return [tuple(int(v) for v in (tmp_path / f"ready.{n}").read_text().split()) for n in names]


def running(pid: int) -> bool:
    """Whether the process runs (a zombie left to init, not yet reaped, does not)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except FileNotFoundError:
        return False


def assert_all_gone(ready):
    """No process of the job (the script's own children included) and none of its ports listening."""
    for pid, child, port in ready:
        for p in (pid, child):
            assert not running(p), p
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection(("127.0.0.1", port), timeout=2).close()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_to_launch_stops_every_worker_and_its_children(tmp_path, sig):
    proc = start_job(tmp_path, WAITS, "launch", "--device", "cpu", "--nproc_per_node", "2")
    try:
        ready = wait_ready(tmp_path, proc, ["0", "1"])
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == -sig, err  # ended by the signal, as python is by an uncaught one
    assert f"fluidcompat launch: {sig.name} received; every worker was stopped\n" in err
    assert "Traceback" not in err.replace("KeyboardInterrupt", "") or sig == signal.SIGINT
    assert "SignalException" not in err and "launch.py" not in err
    assert_all_gone(ready)
    assert not list((tmp_path / "tmp").glob("fluidcompat-launch-*"))  # its job directory removed


def test_sigterm_to_launch_ps_stops_servers_trainers_and_their_children(tmp_path):
    proc = start_job(tmp_path, WAITS, "launch_ps", "--device", "cpu", "--start_port", str(free_port()), "--log_dir", "")
    try:
        ready = wait_ready(tmp_path, proc, ["0", "1"])
        ready += [tuple(int(v) for v in p.read_text().split()) for p in tmp_path.glob("ready.s*")]
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == -signal.SIGTERM, err
    assert err.endswith("fluidcompat launch_ps: SIGTERM received; every process was stopped\n"), err
    assert_all_gone(ready)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


RAISES = """
    import time
    import paddle
    import paddle.distributed as dist
    dist.init_parallel_env()
    t = paddle.to_tensor([1.0])
    dist.all_reduce(t)
    if dist.get_rank() == 1:
        raise ValueError("worker 1 fails")
    while True:  # worker 0 fails on its broken connection a few milliseconds later
        dist.all_reduce(t)
"""


def test_launch_names_the_worker_that_raised_not_the_one_that_failed_after_it(tmp_path):
    """Issue 41: worker 0 was named in 4 of 8 runs (failure times tie to the second); 10 of 10 runs
    named worker 1 after the fix (measured by hand; two here)."""
    for _ in range(2):
        proc = start_job(tmp_path, RAISES, "launch", "--device", "cpu", "--nproc_per_node", "2", "--log_dir", "L")
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 1
        assert "fluidcompat launch: worker 1 (pid " in err and ") exited with code 1; the other workers" in err, err
        assert "ValueError: worker 1 fails" in (tmp_path / "L" / "workerlog.1").read_text()


def test_launch_first_failure_by_exit_order():
    from fluidcompat.launch import first_failure

    def failure(code, ts):
        return types.SimpleNamespace(exitcode=code, timestamp=ts)

    fails = {0: failure(1, 100), 1: failure(-15, 100)}
    # worker 1's script failed first (its time written before it left), then it was stopped
    assert first_failure(fails, [(1, 50, 0), (2, 60, 1)], {1: 40, 0: 45}) == 1
    # worker 1 killed (SIGKILL) before worker 0 failed on the broken connection
    fails = {0: failure(1, 100), 1: failure(-9, 100)}
    assert first_failure(fails, [(1, 30, 1), (2, 50, 0)], {0: 45}) == 1
    # seen ended together: the one not stopped by the shutdown's SIGTERM
    fails = {0: failure(-15, 100), 1: failure(2, 100)}
    assert first_failure(fails, [(1, 30, 0), (1, 30, 1)], {}) == 1
    # without the order: the timestamps
    assert first_failure({0: failure(1, 101), 1: failure(1, 100)}, [], {}) == 1


HANGS = """
    import os, time
    import paddle.distributed as dist
    import torch
    import torch.distributed as td
    dist.init_parallel_env()
    backend = td.distributed_c10d._get_default_group()._get_backend(torch.device("cpu"))
    print("collective timeout", backend.options._timeout, flush=True)
    if dist.get_rank() == 1:
        time.sleep(120)
"""


def test_launch_timeout_ends_a_hung_job_naming_the_worker(tmp_path):
    start = time.monotonic()
    proc = start_job(tmp_path, HANGS, "launch", "--device", "cpu", "--nproc_per_node", "2", "--log_dir", "L",
                     "--timeout", "6.5")  # fmt: skip
    out, err = proc.communicate(timeout=120)
    took = time.monotonic() - start
    assert proc.returncode == 124, err
    assert (
        "fluidcompat launch: the job was still running after --timeout 6.5 s; worker 1 had not finished; every "
        "worker was stopped\n"
    ) in err
    assert took < 6.5 + 5, took
    assert not list((tmp_path / "tmp").glob("fluidcompat-launch-*"))
    # the collectives' timeout is the job's (torch's default: 30 minutes)
    assert "collective timeout 0:00:06.500000" in (tmp_path / "L" / "workerlog.0").read_text()


def test_launch_ps_timeout_names_the_processes_still_running(tmp_path):
    body = """
        import os, time
        if os.environ["TRAINING_ROLE"] == "PSERVER" or os.environ["PADDLE_TRAINER_ID"] == "1":
            time.sleep(120)
    """
    port = free_port()
    proc = start_job(tmp_path, body, "launch_ps", "--device", "cpu", "--start_port", str(port), "--server_num", "1",
                     "--timeout", "4")  # fmt: skip
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 124, err
    assert re.search(
        r"fluidcompat launch_ps: the job was still running after --timeout 4 s; server 0 \(pid \d+\), worker 1 "
        r"\(pid \d+\) had not finished; every process was stopped\n",
        err,
    ), err


def test_launch_ps_names_the_process_that_ended_first(tmp_path):
    """Trainer 1 fails; server 0 fails the moment trainer 1 is gone (as a synchronous server does): the
    launcher names trainer 1 (it named the first failed process in its list, server 0, whenever one
    0.1 s poll saw both gone)."""
    body = """
        import os, select, sys, time
        if os.environ["TRAINING_ROLE"] == "PSERVER":
            while not os.path.exists("pid.1"):
                time.sleep(0.01)
            fd = os.pidfd_open(int(open("pid.1").read()))
            select.select([fd], [], [])
            os._exit(4)  # (at once)
        if os.environ["PADDLE_TRAINER_ID"] == "1":
            open("pid.1.tmp", "w").write(str(os.getpid()))
            os.replace("pid.1.tmp", "pid.1")
            sys.exit(3)
        time.sleep(120)
    """
    for _ in range(3):
        for p in tmp_path.glob("pid.1*"):
            p.unlink()
        proc = start_job(tmp_path, body, "launch_ps", "--device", "cpu", "--start_port", str(free_port()),
                         "--server_num", "1")  # fmt: skip
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 1, err
        assert re.search(r"fluidcompat launch_ps: worker 1 \(pid \d+\) exited with code 3; the other processes", err), (
            err
        )


@pytest.mark.skipif(places.cuda_available(), reason="checks the machine without CUDA")
def test_launch_gpus_without_cuda_refuses_as_run_does(tmp_path):
    """Issue 42: `launch --gpus 0,1` started CPU workers where `run --device gpu` refuses."""
    (tmp_path / "job.py").write_text("print('ran')\n")
    env = {k: v for k, v in os.environ.items() if k != places.ENV_DEVICE}
    proc = subprocess.run([sys.executable, "-m", "fluidcompat", "launch", "--gpus", "0,1", "job.py"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120, env=env)  # fmt: skip
    assert proc.returncode == 1 and "ran" not in proc.stdout
    assert proc.stderr == (
        "fluidcompat launch: error: --gpus 0,1 was asked for, but torch finds no CUDA device here (--device cpu "
        "runs the workers on the CPU)\n"
    )
    cpu = subprocess.run([sys.executable, "-m", "fluidcompat", "launch", "--device", "cpu", "--gpus", "0,1", "job.py"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=120, env=env)  # fmt: skip
    assert cpu.returncode == 0 and cpu.stdout.count("ran") == 2, cpu.stderr
