"""``fluidcompat launch_ps``: start a parameter-server job on this machine, as fluid 1.8's
``python -m paddle.distributed.launch_ps`` did: ``--server_num`` server processes and
``--worker_num`` trainer processes, each running SCRIPT under ``fluidcompat run`` with fluid's
variables (``TRAINING_ROLE``, ``PADDLE_PSERVERS_IP_PORT_LIST``, ``PADDLE_TRAINERS_NUM``, and
``PADDLE_PORT`` / ``POD_IP`` for a server, ``PADDLE_TRAINER_ID`` for a trainer); with
``--log_dir`` (default ``logs``) server N writes to ``DIR/serverlog.N`` and trainer N to
``DIR/workerlog.N``.

Beyond fluid: when a process fails, the others are stopped and the launcher exits 1 naming it and
its log (fluid's launcher waited on, and a failed server left the trainers waiting); the servers end
by themselves once every trainer has closed, and those still running a while later are stopped.
"""

from __future__ import annotations

import argparse
import os
import secrets
import subprocess
import sys
import time
from typing import List, Optional

SERVER_GRACE_S = 30.0


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


def _stop(procs) -> None:
    for p in procs:
        if p.poll() is None:
            p.terminate()
    deadline = time.time() + 5
    for p in procs:
        try:
            p.wait(max(0.1, deadline - time.time()))
        except subprocess.TimeoutExpired:
            p.kill()


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
    procs, logs, files = [], [], []
    for role, i, extra in plan:
        log = os.path.join(ns.log_dir, f"{role}log.{i}") if ns.log_dir else None
        out = open(log, "w") if log else None
        if out:
            files.append(out)
        procs.append(subprocess.Popen(cmd, env=dict(os.environ, **extra, **token), stdout=out, stderr=out))
        logs.append(log)
    n_servers = ns.server_num
    try:
        while True:
            failed = next((k for k, p in enumerate(procs) if p.poll() not in (None, 0)), None)
            if failed is not None:
                role, i, _ = plan[failed]
                _stop(procs)
                where = f"; its log: {logs[failed]}" if logs[failed] else ""
                sys.stderr.write(
                    f"fluidcompat launch_ps: {role} {i} (pid {procs[failed].pid}) exited with code "
                    f"{procs[failed].returncode}; the other processes were stopped{where}\n"
                )
                return 1
            if all(p.poll() == 0 for p in procs[n_servers:]):
                break
            time.sleep(0.1)
        sys.stderr.write("all workers exit, going to finish parameter server\n")
        deadline = time.time() + SERVER_GRACE_S
        while time.time() < deadline and any(p.poll() is None for p in procs[:n_servers]):
            time.sleep(0.1)
        _stop(procs[:n_servers])
        sys.stderr.write("all parameter server are killed\n")
        return 0
    except KeyboardInterrupt:
        _stop(procs)
        return 130
    finally:
        for f in files:
            f.close()


if __name__ == "__main__":
    sys.exit(main())
