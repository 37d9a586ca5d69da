"""``fluidcompat launch_ps``: start a parameter-server job on this machine, as fluid 1.8's
``python -m paddle.distributed.launch_ps`` did: ``--server_num`` server processes and
``--worker_num`` trainer processes, each running SCRIPT under ``fluidcompat run`` with fluid's
variables (``TRAINING_ROLE``, ``PADDLE_PSERVERS_IP_PORT_LIST``, ``PADDLE_TRAINERS_NUM``, and
``PADDLE_PORT`` / ``POD_IP`` for a server, ``PADDLE_TRAINER_ID`` for a trainer); with
``--log_dir`` (default ``logs``) server N writes to ``DIR/serverlog.N`` and trainer N to
``DIR/workerlog.N``.

Beyond fluid: when a process fails, the others are stopped and the launcher exits 1 naming the one
that failed first, by the order the processes ended, and its log (fluid's launcher waited on, and a
failed server left the trainers waiting); the servers end by themselves once every trainer has
closed, and those still running a while later are stopped. Each process runs in its own process
group: SIGTERM / SIGINT to the launcher stop every group (the processes a script started too), wait
for them and end the launcher by the same signal. ``--timeout SECONDS`` ends a job still running
then (exit status 124), naming the processes that had not finished. The processes share a job token
(``FLUIDCOMPAT_PS_TOKEN``, made here unless set) that the servers ask of every request.
"""

from __future__ import annotations

import argparse
import os
import secrets
import signal
import subprocess
import sys
import time
from typing import List, Optional

from fluidcompat.launch_watch import ExitOrder, die_by, seconds_arg, signal_name, stop_groups

SERVER_GRACE_S = 30.0
POLL_S = 0.05
TIMED_OUT = 124  # the exit status of a job ended by --timeout (as timeout(1))


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="fluidcompat launch_ps",
        description="Run SCRIPT as a parameter-server job: server and trainer processes on this machine.",
    )
    p.add_argument("--cluster_node_ips", default="127.0.0.1", help="accepted as fluid's launch_ps did (one node)")
    p.add_argument("--node_ip", default="127.0.0.1", help="accepted as fluid's launch_ps did (one node)")
    p.add_argument("--start_port", type=int, default=6170, help="the first server's port (the next ones follow)")
    p.add_argument("--print_config", type=lambda s: s not in ("False", "false", "0"), default=True)
    p.add_argument("--endpoints", default="", help="the servers' ip:port list (default: from --start_port)")
    p.add_argument("--worker_num", type=int, default=2, help="number of trainers")
    p.add_argument("--server_num", type=int, default=2, help="number of parameter servers")
    p.add_argument("--log_dir", default="logs", help="where serverlog.N and workerlog.N go ('' : this console)")
    p.add_argument("--device", choices=["cpu", "gpu"], default=None,
                   help="cpu: every process runs GPU places on the CPU")  # fmt: skip
    p.add_argument("--timeout", type=seconds_arg, default=None, metavar="SECONDS",
                   help="end the job if it is still running after SECONDS, naming the processes that had not "
                        "finished")  # fmt: skip
    p.add_argument("script", help="the training script")
    p.add_argument("args", nargs=argparse.REMAINDER)
    return p


def endpoints_of(ns) -> List[str]:
    if ns.endpoints:
        eps = [e.strip() for e in ns.endpoints.split(",") if e.strip()]
        if len(eps) != ns.server_num:
            raise ValueError(f"--endpoints names {len(eps)} servers for --server_num {ns.server_num}: {ns.endpoints}")
        return eps
    return [f"127.0.0.1:{ns.start_port + i}" for i in range(ns.server_num)]


def environments(ns) -> List[tuple]:
    """(role, index, environment additions) of every process, the servers first."""
    eps = endpoints_of(ns)
    common = {"PADDLE_PSERVERS_IP_PORT_LIST": ",".join(eps), "PADDLE_TRAINERS_NUM": str(ns.worker_num)}
    procs = []
    for i, ep in enumerate(eps):
        ip, _, port = ep.rpartition(":")
        procs.append(("server", i, dict(common, TRAINING_ROLE="PSERVER", PADDLE_PORT=port, POD_IP=ip)))
    for i in range(ns.worker_num):
        procs.append(("worker", i, dict(common, TRAINING_ROLE="TRAINER", PADDLE_TRAINER_ID=str(i))))
    return procs


class _Job:
    """The processes of the job, each in its own process group, and the order they ended."""

    def __init__(self, plan, cmd: List[str], log_dir: str, env: dict) -> None:
        self.plan, self.cmd, self.log_dir, self.env = plan, cmd, log_dir, env
        self.procs: List[subprocess.Popen] = []
        self.logs: List[Optional[str]] = []
        self.files = []
        self.order = ExitOrder()
        self.stopping: Optional[int] = None

    def start(self) -> None:
        self.order.start()
        for k, (role, i, extra) in enumerate(self.plan):
            log = os.path.join(self.log_dir, f"{role}log.{i}") if self.log_dir else None
            out = open(log, "w") if log else None
            if out:
                self.files.append(out)
            proc = subprocess.Popen(
                self.cmd, env=dict(os.environ, **extra, **self.env), stdout=out, stderr=out, start_new_session=True
            )
            self.procs.append(proc)
            self.logs.append(log)
            self.order.watch(k, proc.pid)

    def name(self, k: int) -> str:
        role, i, _ = self.plan[k]
        return f"{role} {i} (pid {self.procs[k].pid})"

    def first_failed(self) -> Optional[int]:
        """The process that failed first, in the order they ended; None while none has failed. Of
        processes seen ended at one wake of the watcher (a loaded machine can let both a trainer and
        the server that failed because it went end before the watcher runs), a trainer first."""
        failed = [(wake, self.plan[k][0] != "worker", t, k) for wake, t, k in list(self.order.exits)
                  if self.procs[k].poll() not in (None, 0)]  # fmt: skip
        if failed:
            return min(failed)[3]
        if not self.order.available:
            return next((k for k, p in enumerate(self.procs) if p.poll() not in (None, 0)), None)
        return None

    def stop(self, which: Optional[List[int]] = None) -> None:
        procs = self.procs if which is None else [self.procs[k] for k in which]
        by_pid = {p.pid: p for p in procs if p.poll() is None}  # (an ended one's pid may be another's now)
        stop_groups(list(by_pid), grace_s=5.0, is_done=lambda pid: by_pid[pid].poll() is not None)
        for p in by_pid.values():
            p.wait()

    def close(self) -> None:
        self.order.stop()
        for f in self.files:
            f.close()

    def on_signal(self, signum, frame) -> None:
        if self.stopping is None:  # (seen by _supervise's loops within POLL_S)
            self.stopping = signum


def main(argv: Optional[List[str]] = None) -> int:
    ns = _parser().parse_args(argv)
    if ns.worker_num < 1 or ns.server_num < 1:
        sys.stderr.write("fluidcompat launch_ps: --worker_num and --server_num must be at least 1\n")
        return 2
    try:
        plan = environments(ns)
    except ValueError as e:
        sys.stderr.write(f"fluidcompat launch_ps: {e}\n")
        return 2
    cmd = [sys.executable, "-u", "-m", "fluidcompat", "run"] + (["--device", ns.device] if ns.device else [])
    cmd += [ns.script] + list(ns.args)
    if ns.log_dir:
        os.makedirs(ns.log_dir, exist_ok=True)
    # the job's token: its servers refuse requests without it (fluidcompat/transpiler/rpc/transport.py)
    token = {"FLUIDCOMPAT_PS_TOKEN": os.environ.get("FLUIDCOMPAT_PS_TOKEN") or secrets.token_hex(32)}
    job = _Job(plan, cmd, ns.log_dir, token)
    # (a signal this process was started ignoring, as a shell's background job ignores SIGINT, stays
    # ignored, as python leaves it: its processes ignore it too)
    handled = [s for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP) if signal.getsignal(s) is not signal.SIG_IGN]
    previous = {sig: signal.signal(sig, job.on_signal) for sig in handled}
    try:
        job.start()
        code = _supervise(job, ns)
        if code is None:  # a signal
            job.stop()
            sys.stderr.write(
                f"fluidcompat launch_ps: {signal_name(job.stopping)} received; every process was stopped\n"
            )
            sys.stderr.flush()
            job.close()
            return die_by(job.stopping)
        return code
    finally:
        job.stop()  # (none left after a normal end; after an error, none left behind)
        job.close()
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _supervise(job: _Job, ns) -> Optional[int]:
    """Wait for the job's end: its exit status, or None when a signal asked it to stop."""
    n_servers = ns.server_num
    deadline = time.monotonic() + ns.timeout if ns.timeout is not None else None
    while True:
        if job.stopping is not None:
            return None
        failed = job.first_failed()
        if failed is not None:
            job.stop()
            where = f"; its log: {job.logs[failed]}" if job.logs[failed] else ""
            code = job.procs[failed].returncode
            how = f"was killed by signal {-code} ({signal_name(-code)})" if code < 0 else f"exited with code {code}"
            sys.stderr.write(
                f"fluidcompat launch_ps: {job.name(failed)} {how}; the other processes were stopped{where}\n"
            )
            return 1
        if all(p.poll() == 0 for p in job.procs[n_servers:]):
            break
        if deadline is not None and time.monotonic() > deadline:
            return _timed_out(job, ns, range(len(job.procs)))
        time.sleep(POLL_S)
    sys.stderr.write("all workers exit, going to finish parameter server\n")
    grace = time.monotonic() + SERVER_GRACE_S
    while time.monotonic() < grace and any(p.poll() is None for p in job.procs[:n_servers]):
        if job.stopping is not None:
            return None
        if deadline is not None and time.monotonic() > deadline:
            return _timed_out(job, ns, range(n_servers))
        time.sleep(POLL_S)
    job.stop(list(range(n_servers)))
    sys.stderr.write("all parameter server are killed\n")
    return 0


def _timed_out(job: _Job, ns, among) -> int:
    late = [k for k in among if job.procs[k].poll() is None]
    job.stop()
    names = ", ".join(job.name(k) for k in late)
    sys.stderr.write(
        f"fluidcompat launch_ps: the job was still running after --timeout {ns.timeout:g} s; {names} had not "
        "finished; every process was stopped\n"
    )
    return TIMED_OUT


if __name__ == "__main__":
    sys.exit(main())
