"""``fluid.communicator.Communicator``: the trainer side of the parameter-server fleet's strategies.
Built from a trainer program that ``DistributeTranspiler`` made with ``runtime_split_send_recv`` (or
``GeoSgdTranspiler``), it takes over the program's ``send`` and ``recv`` ops and talks to the
servers through fluidcompat's RPC client (fluidcompat/transpiler/rpc/):

* ASYNC: each ``send`` queues its gradient (at most ``communicator_send_queue_size`` a variable);
  a thread merges up to ``communicator_max_merge_var_num`` of them (their mean; their sum for a
  ``merge_add`` send), cuts the result into the blocks the servers hold and sends them; the
  parameters are received on another thread once ``communicator_min_send_grad_num_before_recv``
  gradients went (``communicator_independent_recv_thread`` 0: after each sending round).
* HALF_ASYNC: the program's ``send_barrier`` (``half_async``) sends the queued gradients, merged,
  and receives the parameters.
* SYNC: the same, with the servers' batch barrier before receiving and their fetch barrier after
  (the servers average the trainers' gradients each step, as in synchronous training).
* GEO (GEO-SGD): the trainer runs its optimizer itself; every ``push_nums`` steps each parameter's
  change since the last exchange, divided by the number of trainers, is sent to the servers (which
  add it to theirs) and the servers' value comes back: local += server - last exchanged.

The parameters received enter the program through its ``recv`` ops, which the communicator marks
``do_not_run`` (fluid's communicator wrote them into the scope from its own threads; here a run
that had read the old values would write them back over the new ones).

Compat: GEO sends a sparse table's change as a dense one (fluid sent the rows the step touched).
"""

from __future__ import annotations

import os
import sys
import threading
from typing import Dict, List, Optional

from fluidcompat.framework import Program
from fluidcompat.transpiler.distribute_transpiler import DistributedMode

__all__ = ["Communicator", "DistributedMode"]

_MODES = {
    DistributedMode.SYNC: "SYNC",
    DistributedMode.ASYNC: "ASYNC",
    DistributedMode.HALF_ASYNC: "HALF_ASYNC",
    DistributedMode.GEO: "GEO",
}
_FLAG_DEFAULTS = {
    "communicator_max_merge_var_num": None,  # CPU_NUM
    "communicator_send_queue_size": None,  # CPU_NUM
    "communicator_independent_recv_thread": "1",
    "communicator_min_send_grad_num_before_recv": None,  # CPU_NUM
    "communicator_thread_pool_size": "5",
    "communicator_send_wait_times": "5",
    "communicator_is_sgd_optimizer": "1",
}

_current: Optional["Communicator"] = None  # the process's communicator (fluid's was a singleton too)
_geo_initial: Dict[str, object] = {}  # the parameters' values the trainer startup program ended with (GEO)


def _flag(envs: dict, key: str) -> int:
    default = _FLAG_DEFAULTS[key]
    if default is None:
        default = os.getenv("CPU_NUM", "1")
    value = envs.get(key, os.getenv("FLAGS_" + key, default))
    try:
        return int(value)
    except (TypeError, ValueError):
        raise ValueError(f"Communicator: {key} must be an integer. Received: {value!r}") from None


class _SendContext:
    """Where one gradient goes: its blocks' names on the servers, their rows and endpoints."""

    def __init__(self, names, sections, epmap, merge_add) -> None:
        if len(epmap) != len(names) or (len(names) > 1 and len(sections) != len(names)):
            raise ValueError(
                f"send: {len(names)} block names {list(names)}, {len(sections)} sections and {len(epmap)} "
                "endpoints do not match"
            )
        self.names, self.sections, self.epmap, self.merge_add = list(names), list(sections), list(epmap), merge_add


def _recv_contexts(program) -> Dict[str, tuple]:
    """variable -> (block names, endpoints) of every recv op in ``program``'s global block."""
    ctx = {}
    for op in program.block(0).ops:
        if op.type != "recv":
            continue
        outs, eps = op.output("Out"), list(op.attrs.get("epmap") or [])
        names = list(op.attrs.get("recv_varnames") or [])
        if names:
            ctx[outs[0]] = (names, eps)
        else:
            for out, ep in zip(outs, eps):
                ctx[out] = ([out], [ep])
    return ctx


class Communicator:
    """``Communicator(program, mode, kwargs=None, envs=None)``: ``program`` is the trainer program,
    ``mode`` a ``DistributedMode``; SYNC needs ``kwargs`` ``pserver_endpoints`` and ``trainer_id``,
    GEO ``push_vars`` (GeoSgdTranspiler's vars info), ``trainers`` and ``push_nums``; ``envs`` the
    ``communicator_*`` flags (TrainerRuntimeConfig.get_communicator_flags()). ``start()`` before
    training, ``stop()`` after."""

    def __init__(self, program, mode, kwargs=None, envs=None) -> None:
        global _current
        if not isinstance(program, Program):
            raise TypeError(
                "Communicator: program must be a fluid Program (the trainer program a DistributeTranspiler "
                f"built). Received: {type(program).__name__}"
            )
        if mode not in _MODES:
            raise ValueError(f"Communicator: mode must be one of DistributedMode {sorted(_MODES)}. Received: {mode!r}")
        kwargs = dict(kwargs or {})
        need = {DistributedMode.SYNC: ("pserver_endpoints", "trainer_id"),
                DistributedMode.GEO: ("push_vars", "trainers", "push_nums")}.get(mode, ())  # fmt: skip
        missing = [k for k in need if k not in kwargs]
        if missing:
            raise ValueError(f"Communicator: {_MODES[mode]} mode needs kwargs {list(need)}; missing {missing}")
        envs = dict(envs or {})
        for op in program.block(0).ops:
            if op.type == "recv":
                op._set_attr("do_not_run", True)
        self.mode = mode
        self.mode_str = _MODES[mode]
        self._program = program
        self._scope = None
        self._max_merge = max(1, _flag(envs, "communicator_max_merge_var_num"))
        self._queue_size = max(1, _flag(envs, "communicator_send_queue_size"))
        self._independent_recv = _flag(envs, "communicator_independent_recv_thread") != 0
        self._min_send_before_recv = _flag(envs, "communicator_min_send_grad_num_before_recv")
        self._recv_ctx = _recv_contexts(program)
        self._trainer_id = int(kwargs.get("trainer_id", self._program_trainer_id(program)))
        self._endpoints = list(kwargs.get("pserver_endpoints") or [])
        self._send_ctx: Dict[str, _SendContext] = {}
        self._queues: Dict[str, list] = {}
        self._received: Dict[str, object] = {}
        self._cond = threading.Condition()
        self._threads: List[threading.Thread] = []
        self._running = False
        self._error: Optional[str] = None
        self._sent = 0  # gradients sent since the last receive (ASYNC)
        self._sent_any = False
        if mode == DistributedMode.GEO:
            self._geo_vars = {name: info for name, info in kwargs["push_vars"].items()}
            self._trainers = int(kwargs["trainers"])
            self._push_nums = int(kwargs["push_nums"])
            if self._trainers < 1 or self._push_nums < 1:
                raise ValueError(
                    f"Communicator: GEO needs trainers >= 1 and push_nums >= 1. Received: {self._trainers}, "
                    f"{self._push_nums}"
                )
            self._steps = 0
            self._due: set = set()
            self._old: Dict[str, object] = {}
        _current = self

    @staticmethod
    def _program_trainer_id(program) -> int:
        return next((int(op.attrs.get("trainer_id", 0)) for op in program.block(0).ops if op.type == "recv"), 0)

    # -- the user's calls ---------------------------------------------------------------------------
    def start(self) -> None:
        """Start the communicator (its threads in ASYNC mode)."""
        from fluidcompat.executor.scope import global_scope

        if self._running:
            return
        self._scope = global_scope()
        self._error = None
        self._running = True
        if self.mode == DistributedMode.GEO:
            for name in self._geo_vars:
                value = _geo_initial.get(name)
                if value is None:
                    var = self._scope.find_var(name)
                    value = var.tensor._t if var is not None else None
                if value is not None:
                    self._old[name] = value.detach().cpu().clone()
        if self.mode == DistributedMode.ASYNC:
            self._threads = [threading.Thread(target=self._send_loop, name="communicator-send", daemon=True)]
            if self._independent_recv:
                self._threads.append(threading.Thread(target=self._recv_loop, name="communicator-recv", daemon=True))
            for t in self._threads:
                t.start()

    def stop(self) -> None:
        """Stop the communicator. ASYNC: what is still queued is sent and the parameters received
        once more (fluid's communicator dropped them); the parameters last received go into the
        scope."""
        with self._cond:
            if not self._running:
                return
            self._running = False
            self._cond.notify_all()
        for t in self._threads:
            t.join(30)
        self._threads = []
        if self.mode == DistributedMode.ASYNC and self._error is None:
            taken = self._take_all()
            self._send_queued(taken)
            if taken or self._sent_any:
                self._recv_all()
        if self._scope is not None:
            for name, value in self._received.items():
                self._scope.var(name).tensor._t = value

    def is_running(self) -> bool:
        return self._running

    # -- from the program's ops (fluidcompat_ops/rpc.py) --------------------------------------------
    def _check(self, what: str) -> None:
        if self._error is not None:
            raise RuntimeError(f"the communicator's {self.mode_str} send/recv failed: {self._error}")
        if not self._running:
            raise RuntimeError(f"{what}: the communicator is not running: call fleet.init_worker() (or start()) first")

    def push(self, name: str, value, attrs) -> None:
        """A ``send`` op's gradient: queued (ASYNC: a full queue waits for the sending thread)."""
        self._check("send")
        ctx = _SendContext(attrs["send_varnames"], attrs.get("sections") or [], attrs["epmap"],
                           bool(attrs.get("merge_add")))  # fmt: skip
        value = _detached(value)
        with self._cond:
            self._send_ctx[name] = ctx
            queue = self._queues.setdefault(name, [])
            while self.mode == DistributedMode.ASYNC and len(queue) >= self._queue_size and self._running:
                self._cond.wait(0.1)
                if self._error is not None:
                    self._check("send")
            queue.append(value)
            self._cond.notify_all()

    def barrier(self) -> None:
        """A ``send_barrier`` op (half_async): send what is queued, then receive (SYNC: between the
        servers' barriers)."""
        self._check("send_barrier")
        self._send_queued(self._take_all())
        client = self._client()
        if self.mode == DistributedMode.SYNC:
            for ep in self._endpoints:
                client.call(ep, "batch_barrier")
        if self.mode in (DistributedMode.SYNC, DistributedMode.HALF_ASYNC):
            self._recv_all()
        if self.mode == DistributedMode.SYNC:
            for ep in self._endpoints:
                client.call(ep, "fetch_barrier")

    def geo_step(self) -> None:
        """The GEO trainer program's ``send``: one more step; every ``push_nums`` the parameters are
        exchanged (by the program's recv ops, which follow)."""
        self._check("send")
        with self._cond:
            self._steps += 1
            if self._steps % self._push_nums == 0:
                self._due = set(self._geo_vars)

    def received(self, name: str, current):
        """A ``recv`` op's value for ``name`` (None: leave the variable as it is)."""
        if not self._running:
            return None
        if self.mode == DistributedMode.GEO:
            return self._geo_exchange(name, current)
        with self._cond:
            return self._received.get(name)

    # -- sending and receiving ----------------------------------------------------------------------
    def _client(self):
        from fluidcompat.transpiler import rpc

        client = rpc.client()
        if client.trainer_id < 0:
            client.trainer_id = self._trainer_id
        return client

    def _take_all(self, limit: Optional[int] = None) -> Dict[str, list]:
        with self._cond:
            taken = {}
            for name, queue in self._queues.items():
                if queue:
                    n = len(queue) if limit is None else min(limit, len(queue))
                    taken[name], queue[:] = queue[:n], queue[n:]
            self._cond.notify_all()
            return taken

    def _send_queued(self, taken: Dict[str, list]) -> None:
        from fluidcompat.transpiler.rpc import _wire

        client = self._client()
        for name, values in taken.items():
            ctx = self._send_ctx[name]
            merged = _merge(values, ctx.merge_add)
            for block, part, ep in zip(ctx.names, _split(merged, ctx.sections, len(ctx.names)), ctx.epmap):
                client.call(ep, "send", block, _wire(part))

    def _recv_all(self) -> None:
        import numpy as np
        import torch

        client = self._client()
        got = {}
        for name, (blocks, eps) in self._recv_ctx.items():
            parts = [client.call(ep, "get", block) for block, ep in zip(blocks, eps)]
            got[name] = torch.from_numpy(parts[0] if len(parts) == 1 else np.concatenate(parts, axis=0))
        with self._cond:
            self._received.update(got)

    def _fail(self, e: BaseException) -> None:
        with self._cond:
            self._error = f"{type(e).__name__}: {e}"
            self._cond.notify_all()
        sys.stderr.write(f"fluidcompat communicator: {self._error}\n")

    def _send_loop(self) -> None:
        try:
            while True:
                with self._cond:
                    while self._running and not any(self._queues.values()):
                        self._cond.wait(0.1)
                    if not self._running:
                        return
                taken = self._take_all(self._max_merge)
                self._send_queued(taken)
                with self._cond:
                    self._sent += len(taken)
                    self._sent_any = True
                if not self._independent_recv:
                    self._recv_all()
        except Exception as e:  # noqa: BLE001  (told to the trainer at its next send)
            self._fail(e)

    def _recv_loop(self) -> None:
        try:
            while True:
                with self._cond:
                    while self._running and self._sent < max(1, self._min_send_before_recv):
                        self._cond.wait(0.01)
                    if not self._running:
                        return
                    self._sent = 0
                self._recv_all()
        except Exception as e:  # noqa: BLE001
            self._fail(e)

    # -- GEO-SGD ------------------------------------------------------------------------------------
    def _geo_exchange(self, name: str, current):
        """When an exchange is due: send (current - last) / trainers, receive the servers' value and
        return current + servers' - last (last: the value after the delta, then the servers')."""
        import numpy as np
        import torch

        from fluidcompat.transpiler.rpc import _wire

        with self._cond:
            if name not in self._due or current is None:
                return None
            self._due.discard(name)
        local = current.detach().cpu()
        old = self._old.get(name)
        if old is None:  # no start value known: this exchange only sets it
            self._old[name] = local.clone()
            return None
        info = self._geo_vars[name]
        blocks, eps = list(info["var_names"]), list(info["epmap"])
        sections = [int(s) for s in info["sections"]]
        delta = (local - old) / float(self._trainers)
        old = old + delta
        client = self._client()
        for block, part, ep in zip(blocks, _split(delta, sections, len(blocks)), eps):
            client.call(ep, "send", block + ".delta", _wire(part))
        parts = [client.call(ep, "get", block) for block, ep in zip(blocks, eps)]
        server = torch.from_numpy(parts[0] if len(parts) == 1 else np.concatenate(parts, axis=0))
        self._old[name] = server.clone()
        return local + (server.to(local.dtype) - old)


def _detached(value):
    from fluidcompat_ops.grad import SelectedRows

    if isinstance(value, SelectedRows):
        return SelectedRows(value.rows.detach().cpu().clone(), value.values.detach().cpu().clone(), value.height)
    return value.detach().cpu().clone()


def _merge(values: list, add: bool):
    """The gradients of one variable as one: their sum when ``add``, else their mean."""
    import torch

    from fluidcompat_ops.grad import SelectedRows

    if len(values) == 1:
        return values[0]
    scale = 1.0 if add else 1.0 / len(values)
    if isinstance(values[0], SelectedRows):
        rows = torch.cat([v.rows for v in values])
        return SelectedRows(rows, torch.cat([v.values for v in values]) * scale, values[0].height)
    total = values[0].clone()
    for v in values[1:]:
        total += v
    return total * scale if not add else total


def _split(value, sections: list, count: int) -> list:
    """``value`` cut into the row blocks ``sections`` (one block: the value itself)."""
    import torch

    from fluidcompat_ops.grad import SelectedRows

    if count == 1:
        return [value]
    if sum(sections) != value.shape[0]:
        raise ValueError(f"send: sections {sections} do not add up to the {value.shape[0]} rows of the value")
    if isinstance(value, SelectedRows):
        parts, offset = [], 0
        for h in sections:
            keep = (value.rows >= offset) & (value.rows < offset + h)
            parts.append(SelectedRows(value.rows[keep] - offset, value.values[keep], int(h)))
            offset += h
        return parts
    return list(torch.split(value, sections, dim=0))


def current() -> Optional[Communicator]:
    """The process's communicator, when one was made."""
    return _current


def geo_initial_values(values: Dict[str, object]) -> None:
    """The GEO trainer startup program's ``param_init``: the parameters it ends with."""
    for name, value in values.items():
        if value is not None:
            _geo_initial[name] = value.detach().cpu().clone()
    comm = _current
    if comm is not None and comm.mode == DistributedMode.GEO and comm.is_running():
        for name, value in values.items():
            if value is not None and name in comm._geo_vars:
                comm._old[name] = value.detach().cpu().clone()
