"""``fluidcompat launch``: start one worker process per GPU (or ``--nproc_per_node`` CPU workers) running
a Paddle/fluid script under ``fluidcompat run``, as ``python -m paddle.distributed.launch`` did.

Built on torch.distributed.run (torchrun): its elastic agent starts the workers, sets torch's
``RANK`` / ``LOCAL_RANK`` / ``WORLD_SIZE`` / ``MASTER_ADDR`` / ``MASTER_PORT``, rendezvouses across
nodes (``--nnodes``, ``--node_rank``, ``--master_addr``/``--master_port`` or ``--rdzv_endpoint``), and
stops every worker when one fails. Each worker adds Paddle's variables (``PADDLE_TRAINER_ID``,
``PADDLE_TRAINERS_NUM``, ``PADDLE_CURRENT_ENDPOINT``, ``PADDLE_TRAINER_ENDPOINTS``,
``PADDLE_RANK_IN_NODE``, ``FLAGS_selected_gpus``) and, with ``--log_dir``, writes its output to
``DIR/workerlog.RANK``.

Beyond torchrun: the launcher names the worker that failed first by the order the workers exited
(each writes its exit, with a monotonic time, to the job's directory); SIGTERM / SIGINT stop every
worker's process group, wait for them and end the launcher by the same signal, with one line and no
traceback; ``--timeout SECONDS`` ends a job still running then, naming the workers that had not
finished, and bounds each collective (torch.distributed's timeout, 30 minutes by default) by it.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import sys
import tempfile
import threading
import time
from typing import Dict, List, Optional

from fluidcompat.launch_watch import seconds_arg

WORKER_FLAG = "--fluidcompat-worker"
EXITS_ENV = "FLUIDCOMPAT_LAUNCH_EXITS"  # the directory where each worker writes its exit
COLLECTIVE_TIMEOUT_ENV = "FLUIDCOMPAT_COLLECTIVE_TIMEOUT"  # seconds (read by init_parallel_env)
TIMED_OUT = 124  # the exit status of a job ended by --timeout (as timeout(1))
_HANDLED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT)  # torchrun's


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="fluidcompat launch",
        description="Run SCRIPT in several worker processes for data-parallel training (torch.distributed).",
    )
    p.add_argument("--gpus", "--selected_gpus", dest="gpus", default=None,
                   help="GPUs to use, e.g. '0,1' (one worker each); default: every visible GPU")  # fmt: skip
    p.add_argument("--nproc_per_node", "--nproc-per-node", type=int, default=None,
                   help="workers on this node (default: one per GPU, or 1 on the CPU)")  # fmt: skip
    p.add_argument("--log_dir", "--log-dir", default=None,
                   help="write worker N's output to LOG_DIR/workerlog.N (default: all to this console)")  # fmt: skip
    p.add_argument("--device", choices=["cpu", "gpu"], default=None,
                   help="cpu: workers run GPU places on the CPU and talk over Gloo (default: gpu when CUDA is "
                        "there, else cpu)")  # fmt: skip
    p.add_argument("--timeout", type=seconds_arg, default=None, metavar="SECONDS",
                   help="end the job if it is still running after SECONDS, naming the workers that had not "
                        "finished; also each collective's timeout (default: none, collectives 30 minutes)")  # fmt: skip
    p.add_argument("--nnodes", default="1", help="number of nodes, or MIN:MAX (torchrun)")
    p.add_argument("--node_rank", "--node-rank", type=int, default=0)
    p.add_argument("--master_addr", "--master-addr", default=None)
    p.add_argument("--master_port", "--master-port", type=int, default=None)
    p.add_argument("--rdzv_backend", "--rdzv-backend", default=None)
    p.add_argument("--rdzv_endpoint", "--rdzv-endpoint", default=None)
    p.add_argument("--rdzv_id", "--rdzv-id", default=None)
    p.add_argument("script", help="the training script")
    p.add_argument("args", nargs=argparse.REMAINDER)
    return p


def _visible_gpus() -> List[str]:
    import torch

    env = os.environ.get("CUDA_VISIBLE_DEVICES")
    if env is not None:
        return [g.strip() for g in env.split(",") if g.strip()]
    return [str(i) for i in range(torch.cuda.device_count())]


def plan(ns) -> dict:
    """What the launch will do, from the parsed options: workers per node, the worker device flag,
    and the CUDA_VISIBLE_DEVICES workers see (None: leave it)."""
    import torch

    from fluidcompat import places

    # `fluidcompat run --device cpu -m paddle.distributed.launch` (FLUIDCOMPAT_DEVICE=cpu) asks for the CPU too
    on_cpu = ns.device == "cpu" or (ns.device is None and places.cpu_mode())
    cuda = torch.cuda.is_available() and not on_cpu
    if ns.device == "gpu" and not torch.cuda.is_available():
        raise SystemExit("fluidcompat launch: error: --device gpu was asked for, but torch finds no CUDA device here")
    asked = [g.strip() for g in ns.gpus.split(",") if g.strip()] if ns.gpus else None
    if asked and not on_cpu and not torch.cuda.is_available():  # as `fluidcompat run --device gpu` refuses
        raise SystemExit(
            f"fluidcompat launch: error: --gpus {ns.gpus} was asked for, but torch finds no CUDA device here "
            "(--device cpu runs the workers on the CPU)"
        )
    visible = None
    if cuda:
        have = _visible_gpus()
        if asked is not None:
            bad = [g for g in asked if not g.isdigit() or int(g) >= len(have)]
            if bad:
                raise SystemExit(
                    f"fluidcompat launch: error: --gpus {ns.gpus}: {', '.join(bad)} not among the {len(have)} visible "
                    f"GPUs (CUDA_VISIBLE_DEVICES={','.join(have)})"
                )
            have = [have[int(g)] for g in asked]
        visible = ",".join(have)
        nproc = ns.nproc_per_node or len(have)
        if nproc > len(have):
            raise SystemExit(
                f"fluidcompat launch: error: {nproc} workers per node but only {len(have)} GPUs: {visible}"
            )
    else:
        nproc = ns.nproc_per_node or (len(asked) if asked else 1)
    if nproc < 1:
        raise SystemExit(f"fluidcompat launch: error: --nproc_per_node must be at least 1. Received: {nproc}")
    return {"nproc": nproc, "device": "gpu" if cuda else "cpu", "visible": visible}


def _torchrun_args(ns, p) -> List[str]:
    args = ["--nproc-per-node", str(p["nproc"]), "--nnodes", str(ns.nnodes), "--max-restarts", "0",
            "--monitor-interval", "0.1"]  # fmt: skip
    if ns.rdzv_endpoint or ns.rdzv_backend:
        args += ["--rdzv-backend", ns.rdzv_backend or "c10d", "--rdzv-endpoint", ns.rdzv_endpoint or ""]
        if ns.rdzv_id:
            args += ["--rdzv-id", ns.rdzv_id]
    elif str(ns.nnodes) == "1" and ns.master_addr is None and ns.master_port is None:
        args += ["--standalone"]
    else:
        args += ["--node-rank", str(ns.node_rank), "--master-addr", ns.master_addr or "127.0.0.1",
                 "--master-port", str(ns.master_port or 29500)]  # fmt: skip
    worker = [WORKER_FLAG, p["device"], os.path.abspath(ns.log_dir) if ns.log_dir else "", ns.script, *ns.args]
    return args + ["--module", "fluidcompat.launch", *worker]


def main(argv: Optional[List[str]] = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] == WORKER_FLAG:
        return worker_main(argv[1:])
    ns = _parser().parse_args(argv)
    if not os.path.isfile(ns.script):
        sys.stderr.write(f"fluidcompat launch: error: can't open file '{ns.script}': no such file\n")
        return 2
    p = plan(ns)
    if p["visible"] is not None:
        os.environ["CUDA_VISIBLE_DEVICES"] = p["visible"]
    if ns.log_dir:
        os.makedirs(ns.log_dir, exist_ok=True)
    os.environ.setdefault("OMP_NUM_THREADS", "1")  # as torchrun would, without its warning
    if ns.timeout is not None:
        os.environ[COLLECTIVE_TIMEOUT_ENV] = repr(ns.timeout)
    exits = os.environ[EXITS_ENV] = tempfile.mkdtemp(prefix="fluidcompat-launch-")
    job = _Job(ns, p, exits)
    try:
        code = job.run()
    finally:
        shutil.rmtree(exits, ignore_errors=True)
    if job.stopping:  # stopped by a signal: end as it would have ended this process
        from fluidcompat.launch_watch import die_by

        return die_by(job.stopping)
    return code


class _Job:
    """torchrun's agent in this process, with the workers' exit order watched, signals turned into a
    clean stop, and the --timeout timer."""

    def __init__(self, ns, plan: dict, exits: str) -> None:
        from fluidcompat.launch_watch import ExitOrder

        self.ns, self.plan, self.exits = ns, plan, exits
        self.order = ExitOrder(self._announced)
        self.stopping: Optional[int] = None  # the signal that stops the job (0: the job has ended)
        self.timed_out = False
        self.late: List[int] = []  # the workers still running when the time was up

    def _announced(self) -> List[tuple]:
        """(rank, pid) of the workers that wrote their file (worker_main), for the exit order."""
        found = []
        for name in os.listdir(self.exits):
            if name.startswith("worker."):
                try:
                    with open(os.path.join(self.exits, name)) as f:
                        rank, pid = f.read().split()
                    found.append((int(rank), int(pid)))
                except (OSError, ValueError):  # (being written)
                    continue
        return found

    def _failed_at(self) -> Dict[int, tuple]:
        """rank -> (when its script failed (time.monotonic_ns), its exit code), written by worker_main."""
        out = {}
        for name in os.listdir(self.exits):
            if name.startswith("failed.") and not name.endswith(".tmp"):
                try:
                    with open(os.path.join(self.exits, name)) as f:
                        t, code = f.read().split()
                    out[int(name.split(".")[1])] = (int(t), int(code))
                except (OSError, ValueError):
                    continue
        return out

    def _on_signal(self, signum, frame) -> None:
        from torch.distributed.elastic.multiprocessing.api import SignalException

        if self.stopping is not None:
            return  # the workers are being stopped already: let that finish
        self.stopping = signum
        raise SignalException(f"fluidcompat launch got {signal.Signals(signum).name}", sigval=signal.Signals(signum))

    def _time_up(self) -> None:
        # the workers still running, before the shutdown ends them (all of this node's, where known)
        expected = set(range(self.plan["nproc"])) if str(self.ns.nnodes) == "1" else set()
        self.late = sorted(r for r in expected | {r for r, _ in self._announced()} if not self.order.ended(r))
        self.timed_out = True
        os.kill(os.getpid(), signal.SIGTERM)

    def run(self) -> int:
        from torch.distributed.elastic.multiprocessing import api as mp_api
        from torch.distributed.elastic.multiprocessing.errors import ChildFailedError
        from torch.distributed.run import parse_args, run

        # torchrun installs its handler (raise SignalException, every time) when it starts the workers;
        # this one raises once, so that a second Ctrl-C does not cut the workers' shutdown short.
        torch_handler = getattr(mp_api, "_terminate_process_handler", None)
        if torch_handler is not None:
            mp_api._terminate_process_handler = self._on_signal
        # (a signal this process was started ignoring, as a shell's background job ignores SIGINT, stays
        # ignored, as python leaves it: its workers would ignore it too)
        handled = [s for s in _HANDLED if signal.getsignal(s) is not signal.SIG_IGN]
        os.environ.setdefault("TORCHELASTIC_SIGNALS_TO_HANDLE", ",".join(s.name for s in handled))
        previous = {sig: signal.signal(sig, self._on_signal) for sig in handled}
        timer = threading.Timer(self.ns.timeout, self._time_up) if self.ns.timeout is not None else None
        self.order.start()
        if timer is not None:
            timer.daemon = True
            timer.start()
        try:
            run(parse_args(_torchrun_args(self.ns, self.plan)))
            self.stopping = 0  # (a signal from now on is ignored: the job has ended)
        except ChildFailedError as e:
            self.stopping = 0
            return self._failed(e.failures)
        except mp_api.SignalException as e:
            return self._stopped(int(e.sigval))
        finally:
            if timer is not None:
                timer.cancel()
            if torch_handler is not None:
                mp_api._terminate_process_handler = torch_handler
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            self._leftovers()
            self.order.stop()
        return 0

    def _leftovers(self) -> None:
        """Stop what is left of the workers' process groups: a worker torchrun did not stop, and the
        processes a worker started (torchrun signals the worker alone; a worker that ended at once
        leaves its children running)."""
        from fluidcompat.launch_watch import stop_groups

        groups = [pid for _, pid in self._announced()]
        if groups:
            stop_groups(groups, grace_s=2.0)

    def _failed(self, failures: Dict[int, object]) -> int:
        self._leftovers()
        failed_at = self._failed_at()
        rank = first_failure(failures, self.order.exits, {r: t for r, (t, _) in failed_at.items()})
        failure = failures[rank]
        if rank in failed_at:  # (its script failed; it may then have been stopped while it exited)
            how = f"exited with code {failed_at[rank][1]}"
        elif failure.exitcode < 0:
            how = f"was killed by signal {-failure.exitcode} ({signal.Signals(-failure.exitcode).name})"
        else:
            how = f"exited with code {failure.exitcode}"
        where = f"; its log: {os.path.join(self.ns.log_dir, f'workerlog.{rank}')}" if self.ns.log_dir else ""
        sys.stderr.write(
            f"fluidcompat launch: worker {rank} (pid {failure.pid}) {how}; the other workers were stopped{where}\n"
        )
        return 1

    def _stopped(self, sig: int) -> int:
        if self.timed_out:
            self.stopping = 0
            ranks = self.late
            late = ", ".join(str(r) for r in ranks) if ranks else "none"
            sys.stderr.write(
                f"fluidcompat launch: the job was still running after --timeout {self.ns.timeout:g} s; "
                f"worker{'s' if len(ranks) != 1 else ''} {late} had not finished; every worker was stopped\n"
            )
            return TIMED_OUT
        self._leftovers()
        sys.stderr.write(f"fluidcompat launch: {signal.Signals(sig).name} received; every worker was stopped\n")
        sys.stderr.flush()
        return 128 + sig  # (main ends the process by the signal, once the job's directory is removed)


def first_failure(failures: Dict[int, object], exits: List[tuple], failed_at: Dict[int, int]) -> int:
    """The rank of the worker that failed first. Each failed worker's time is when its script failed
    (``failed_at``: written by the worker before it leaves its process group, so before the others can
    see it gone) or else when it ended (``exits``: (wake, time, rank), see launch_watch.ExitOrder);
    at equal times, a worker not stopped by a signal of the shutdown. Without either, the earliest
    failure's timestamp (whole seconds)."""
    teardown = (-signal.SIGTERM, -signal.SIGKILL)
    ended = {rank: t for _, t, rank in exits}
    known = [
        (min(failed_at.get(rank, ended.get(rank, 0)), ended.get(rank, failed_at.get(rank, 0))),
         failures[rank].exitcode in teardown, rank)
        for rank in failures if rank in failed_at or rank in ended
    ]  # fmt: skip
    if known:
        return min(known)[2]
    return min(failures, key=lambda r: (failures[r].timestamp, failures[r].exitcode in teardown, r))


def _endpoints(local_size: int) -> List[str]:
    base = int(os.environ.get("MASTER_PORT", "29500")) + 1
    host = "127.0.0.1" if os.environ.get("GROUP_WORLD_SIZE", "1") == "1" else socket.gethostbyname(socket.gethostname())
    return [f"{host}:{base + i}" for i in range(local_size)]


def paddle_env(env) -> dict:
    """Paddle's launcher variables for a worker, from torchrun's."""
    rank, local = int(env["RANK"]), int(env["LOCAL_RANK"])
    local_size = int(env.get("LOCAL_WORLD_SIZE", env["WORLD_SIZE"]))
    endpoints = _endpoints(local_size)
    out = {
        "PADDLE_TRAINER_ID": str(rank),
        "PADDLE_TRAINERS_NUM": env["WORLD_SIZE"],
        "PADDLE_RANK_IN_NODE": str(local),
        "PADDLE_LOCAL_SIZE": str(local_size),
        "PADDLE_CURRENT_ENDPOINT": endpoints[local],
        "PADDLE_TRAINER_ENDPOINTS": ",".join(endpoints),
        "FLAGS_selected_gpus": str(local),
    }
    return out


def _tell_launcher(name: str, text: str) -> None:
    """Write ``text`` to the file ``name`` of the launcher's job directory (whole or absent)."""
    exits = os.environ.get(EXITS_ENV)
    if not exits or not os.path.isdir(exits):
        return
    path = os.path.join(exits, name)
    try:
        with open(path + ".tmp", "w") as f:
            f.write(text)
        os.replace(path + ".tmp", path)
    except OSError:
        pass


def worker_main(argv: List[str]) -> int:
    device, log_dir, script, args = argv[0], argv[1], argv[2], argv[3:]
    rank = os.environ["RANK"]
    _tell_launcher(f"worker.{rank}", f"{rank} {os.getpid()}")  # for the exit order
    os.environ.update(paddle_env(os.environ))
    if log_dir:
        fd = os.open(os.path.join(log_dir, f"workerlog.{os.environ['RANK']}"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        os.close(fd)
    from fluidcompat.runner import run_script

    code = 1
    try:
        code = run_script(script, args, device)
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) or e.code is None else 1
        raise
    finally:
        if code:  # when the script failed: before this process leaves the job's process group
            _tell_launcher(f"failed.{rank}", f"{time.monotonic_ns()} {code}")
    return code


if __name__ == "__main__":
    sys.exit(main())
