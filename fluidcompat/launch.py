"""``fluidcompat launch``: start one worker process per GPU (or ``--nproc_per_node`` CPU workers) running
a Paddle/fluid script under ``fluidcompat run``, as ``python -m paddle.distributed.launch`` did.

Built on torch.distributed.run (torchrun): its elastic agent starts the workers, sets torch's
``RANK`` / ``LOCAL_RANK`` / ``WORLD_SIZE`` / ``MASTER_ADDR`` / ``MASTER_PORT``, rendezvouses across
nodes (``--nnodes``, ``--node_rank``, ``--master_addr``/``--master_port`` or ``--rdzv_endpoint``), and
stops every worker when one fails. Each worker adds Paddle's variables (``PADDLE_TRAINER_ID``,
``PADDLE_TRAINERS_NUM``, ``PADDLE_CURRENT_ENDPOINT``, ``PADDLE_TRAINER_ENDPOINTS``,
``PADDLE_RANK_IN_NODE``, ``FLAGS_selected_gpus``) and, with ``--log_dir``, writes its output to
``DIR/workerlog.RANK``.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import sys
from typing import List, Optional

WORKER_FLAG = "--fluidcompat-worker"


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

    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError
    from torch.distributed.run import parse_args, run

    try:
        run(parse_args(_torchrun_args(ns, p)))
    except ChildFailedError as e:
        rank, failure = min(e.failures.items(), key=lambda kv: kv[1].timestamp)
        if failure.exitcode < 0:
            how = f"was killed by signal {-failure.exitcode} ({signal.Signals(-failure.exitcode).name})"
        else:
            how = f"exited with code {failure.exitcode}"
        where = f"; its log: {os.path.join(ns.log_dir, f'workerlog.{rank}')}" if ns.log_dir else ""
        sys.stderr.write(
            f"fluidcompat launch: worker {rank} (pid {failure.pid}) {how}; the other workers were stopped{where}\n"
        )
        return 1
    return 0


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


def worker_main(argv: List[str]) -> int:
    device, log_dir, script, args = argv[0], argv[1], argv[2], argv[3:]
    os.environ.update(paddle_env(os.environ))
    if log_dir:
        fd = os.open(os.path.join(log_dir, f"workerlog.{os.environ['RANK']}"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        os.close(fd)
    from fluidcompat.__main__ import run_script

    return run_script(script, args, device)


if __name__ == "__main__":
    sys.exit(main())
