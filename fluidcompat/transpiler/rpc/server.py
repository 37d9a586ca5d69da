"""The parameter server that ``Executor.run`` starts for a program holding ``listen_and_serv``.

Synchronous training (fluid 1.8's RunSyncLoop): the server first serves every trainer's startup
``recv``, then per batch waits for every trainer's gradients and send barrier, runs its
learning-rate block and optimize blocks, and serves the new parameters until every trainer has
passed its fetch barrier. Asynchronous training: each gradient runs its optimize block as it arrives.

Beyond fluid: a trainer whose session ends without ``exe.close()`` (its process killed, or its
machine gone) stops a synchronous job with an error naming it (fluid's servers waited for it for
ever); in an asynchronous job it leaves, and the server stops once every trainer has left.
"""

from __future__ import annotations

import os
import signal
import tempfile
import threading
import time
from typing import Optional

from fluidcompat.transpiler.rpc import transport
from fluidcompat.transpiler.rpc.wire import MalformedMessage, _decode, _encode, _unwire

FAILED_GRACE_S = 10.0  # how long a failed server answers its trainers with the failure
KINDS = ("send", "get", "get_no_barrier", "prefetch", "batch_barrier", "fetch_barrier", "complete")


class _Gone(Exception):
    """The trainer that asked no longer waits for the answer (its deadline passed or it closed)."""


class ParameterServer:
    """Serves one ``listen_and_serv`` op of ``program`` with ``executor`` in ``scope``."""

    def __init__(self, executor, program, op, scope) -> None:
        import torch

        from fluidcompat.transpiler.rpc.programs import block_ids, block_program

        self._torch = torch
        self.executor, self.scope = executor, scope
        attrs = op.attrs
        self.endpoint = attrs["endpoint"]
        self.sync = attrs.get("distributed_mode", 0) == 0
        self.fanin = int(attrs.get("Fanin", 1))
        self.live = set(range(self.fanin))
        blocks = [b for b in block_ids(attrs.get("optimize_blocks", [])) if program.block(b).ops]
        self.programs = {b: block_program(program, b) for b in blocks}  # run in this order
        self.inputs = set(op.inputs.get("X", ()))
        self.declared = {n: program.global_block()._find_var_recursive(n) for n in self.inputs}
        self.grad_block = {}
        self.lr_block = int(attrs.get("lr_decay_block_id", -1))
        for entry in attrs.get("grad_to_block_id", []):
            if not entry:  # fluid's ListenAndServ layer gives [""]
                continue
            name, _, b = entry.rpartition(":")
            self.grad_block[name] = int(b)
        self.port: Optional[int] = None  # the port listened on (the endpoint's, or the one chosen for port 0)
        self.port_file: Optional[str] = None
        self.cond = threading.Condition()
        self.lock = threading.Lock()  # one update at a time (asynchronous training)
        self.phase = "get"
        self.arrived: set = set()
        self.failed: Optional[str] = None  # why the server loop stopped, told to waiting trainers
        self.lost: Optional[str] = None  # a trainer gone from a synchronous job
        self.completed: set = set()  # trainers that said they are done
        self.seen: set = set()  # trainers that reached the server (a session, or a request naming them)
        self.anonymous = False  # a request named no trainer (then who never came cannot be told)
        self.first_contact_s = transport.rpc_deadline_s()  # how long a trainer may take to come
        self.started = time.time()
        self.sessions = 0  # trainers' sessions open
        self.busy = 0  # requests being answered
        self.stopping = False

    # -- the trainers' requests ---------------------------------------------------------------------
    def _wait_phase(self, phase: str, context=None) -> None:
        with self.cond:
            while self.phase != phase:
                if self.failed is not None:
                    raise RuntimeError(f"the parameter server failed: {self.failed}")
                if context is not None and not context.is_active():
                    raise _Gone()
                self.cond.wait(0.5)

    def _store(self, name: str, value) -> None:
        self.scope.var(name).tensor._t = _unwire(value, self.executor._device)

    def _check(self, name: str, value) -> None:
        """A received gradient has its variable's shape and dtype (else the trainer is told, and the
        server goes on)."""
        import numpy as np

        from fluidcompat.dtypes import np_name

        sparse = isinstance(value, tuple) and len(value) == 4 and value[0] == "selected_rows"
        if sparse:
            ok = all(isinstance(v, np.ndarray) for v in value[1:3]) and isinstance(value[3], int)
            ok = ok and value[1].ndim == 1 and value[2].ndim >= 1 and len(value[1]) == len(value[2])
        else:
            ok = isinstance(value, np.ndarray)
        if not ok:
            raise ValueError(f"'{name}' sent to {self.endpoint} is not a tensor or a SelectedRows")
        var = self.declared.get(name)
        if var is None:
            return
        if sparse:  # its height and row width
            got, dtype = [value[3]] + list(value[2].shape[1:]), value[2].dtype
        else:
            got, dtype = list(value.shape), value.dtype
        want = list(var.shape)
        if len(got) != len(want) or any(w >= 0 and w != g for w, g in zip(want, got)):
            raise ValueError(f"'{name}' sent to {self.endpoint} has shape {got}, but the server declares {want}")
        if dtype.name != np_name(var.dtype):
            raise ValueError(
                f"'{name}' sent to {self.endpoint} is {dtype.name}, but the server declares {np_name(var.dtype)}"
            )

    def _tensor(self, name: str, what: str = "variable"):
        var = self.scope.find_var(name)
        t = var.tensor._t if var is not None else None
        if t is None:
            raise ValueError(f"the {what} '{name}' is not on the parameter server {self.endpoint}")
        return t

    def _value(self, name: str):
        return self._tensor(name).detach().cpu().numpy()

    def _arrive(self, phase: str, tid: int, context) -> None:
        self._wait_phase(phase, context)
        with self.cond:
            self.arrived.add(tid)
            self.cond.notify_all()

    def _leave(self, tid: int) -> None:
        with self.cond:
            self.live.discard(tid)
            self.cond.notify_all()

    def _request(self, kind: str, name: str, tid: int, value, context=None):
        if kind == "send":
            if name not in self.inputs and f"{name}.trainer_{tid}" in self.inputs:
                # a lone trainer's gradient carries no trainer suffix (fluid 1.8.5's server then failed:
                # "Sum operator should have at least one tensor")
                name = f"{name}.trainer_{tid}"
            if name not in self.inputs:
                raise ValueError(f"the parameter server {self.endpoint} takes no variable '{name}'")
            self._check(name, value)
            if self.sync:
                self._wait_phase("send", context)
                self._store(name, value)
            else:
                with self.lock:
                    self._store(name, value)
                    block = self.grad_block.get(name)
                    if block in self.programs:
                        if self.lr_block in self.programs:  # the learning rates the update reads
                            self._run(self.lr_block)
                        self._run(block)
            return None
        if kind == "get":
            if self.sync:
                self._wait_phase("get", context)
                return self._value(name)
            with self.lock:
                return self._value(name)
        if kind == "get_no_barrier":  # a checkpoint's read: at any time
            with self.lock:
                return self._value(name)
        if kind == "prefetch":  # rows of a sparse table's block, by their numbers in the block
            import numpy as np

            if not isinstance(value, np.ndarray) or value.dtype.kind not in "iu" or value.ndim != 1:
                raise ValueError(f"prefetch of '{name}' takes a 1-D array of row numbers")
            with self.lock:
                table = self._tensor(name, "table")
                if value.size and (value.min() < 0 or value.max() >= table.shape[0]):
                    raise ValueError(f"row {int(value.max())} is not in '{name}' ({table.shape[0]} rows)")
                index = self._torch.from_numpy(value.astype("int64")).to(table.device)
                return table.index_select(0, index).cpu().numpy()
        if kind in ("batch_barrier", "fetch_barrier"):
            if self.sync:
                self._arrive("send" if kind == "batch_barrier" else "get", tid, context)
            return None
        if kind == "complete":
            with self.cond:
                self.completed.add(tid)
            self._leave(tid)
            return None
        raise ValueError(f"unknown request '{kind}'")

    def _answer(self, request: bytes, context) -> bytes:
        """gRPC's ``Call``: the reply to one request; a malformed one is told so (INVALID_ARGUMENT)."""
        import grpc

        try:
            msg = _decode(request)
            if not (isinstance(msg, tuple) and len(msg) == 4):
                raise MalformedMessage("a request is (kind, name, trainer_id, value)")
            kind, name, tid, value = msg
            if kind not in KINDS or not isinstance(name, str) or type(tid) is not int:
                raise MalformedMessage(f"a request of kind {kind!r}, name {name!r}, trainer {tid!r}")
            if kind != "send" and tid >= self.fanin:
                raise MalformedMessage(f"trainer {tid} is not one of the job's {self.fanin} trainers")
            with self.cond:
                if 0 <= tid < self.fanin:
                    self.seen.add(tid)
                else:
                    self.anonymous = True
        except MalformedMessage as e:
            context.set_code(grpc.StatusCode.INVALID_ARGUMENT)
            context.set_details(f"a malformed request: {e}")
            return b""
        with self.cond:
            self.busy += 1
        try:
            try:
                reply = ("ok", self._request(kind, name, tid, value, context))
            except _Gone:
                reply = ("error", "the trainer no longer waits")
            except Exception as e:  # noqa: BLE001  (the trainer's op reports it)
                reply = ("error", f"{type(e).__name__}: {e}")
            try:
                return _encode(reply)
            except TypeError as e:
                return _encode(("error", f"the reply cannot be sent: {e}"))
        finally:
            with self.cond:
                self.busy -= 1
                self.cond.notify_all()

    def _session(self, request: bytes, context):
        """gRPC's ``Session``: held until the trainer closes it or is gone (then, in a synchronous job
        the trainer did not complete, the server fails naming it)."""
        try:
            tid = _decode(request)
        except MalformedMessage:
            return
        if type(tid) is not int or not 0 <= tid < self.fanin:
            return
        ended = threading.Event()
        context.add_callback(ended.set)
        with self.cond:
            self.sessions += 1
            self.seen.add(tid)
        try:
            while not ended.wait(0.5) and context.is_active():
                if self.stopping:
                    return
        finally:
            with self.cond:
                self.sessions -= 1
                self.cond.notify_all()
        self._session_lost(tid, context.peer())
        return
        yield  # (a generator: gRPC streams what it yields, here nothing)

    def _session_lost(self, tid: int, peer: str) -> None:
        with self.cond:
            if self.stopping or tid in self.completed or tid not in self.live:
                return
            if self.sync:
                if self.lost is None:
                    self.lost = (
                        f"trainer {tid} ({peer}) is gone from the synchronous job of the parameter server "
                        f"{self.endpoint}: its process ended or was killed before exe.close(), and the job cannot "
                        "go on without it"
                    )
                self.cond.notify_all()
                return
        self._leave(tid)  # an asynchronous job goes on without it

    # -- the loop -----------------------------------------------------------------------------------
    def _run(self, block: int) -> None:
        self.executor.run(self.programs[block], scope=self.scope)

    def _all_arrived(self) -> bool:
        """Wait until every trainer still in the job has arrived; False once none is left."""
        with self.cond:
            while not self.live <= self.arrived:
                self._check_trainers()
                self.cond.wait(1.0)
            return bool(self.live)

    def _check_trainers(self) -> None:
        """Under ``cond``: the error of a trainer gone from a synchronous job, or of trainers that never
        reached the server within FLAGS_rpc_deadline of its start (fluid's server waited for ever)."""
        if self.lost is not None:
            raise RuntimeError(self.lost)
        never = sorted(self.live - self.seen)
        if never and not self.anonymous and time.time() - self.started > self.first_contact_s:
            raise RuntimeError(
                f"trainer{'s' if len(never) > 1 else ''} {', '.join(map(str, never))} of {self.fanin} never reached "
                f"the parameter server {self.endpoint} within FLAGS_rpc_deadline ({self.first_contact_s * 1000:.0f} "
                "ms) of its start: start every trainer of the job (Fanin), or raise FLAGS_rpc_deadline"
            )

    def _enter(self, phase: str) -> None:
        with self.cond:
            self.phase, self.arrived = phase, set()
            self.cond.notify_all()

    def serve(self) -> None:
        # each trainer holds a session and asks one request at a time; a few more threads answer the
        # rest (a checkpoint's reads, refusals)
        workers = 2 * self.fanin + 4
        server, port, self.refusals = transport.start_server(self.endpoint, workers, self._answer, self._session)
        self.started = time.time()
        try:
            self._save_port(port)
        except BaseException:
            server.stop(None)
            raise
        handlers = _stop_on_signals()
        try:
            if self.sync:
                self._sync_loop()
            else:
                with self.cond:
                    while self.live:
                        self._check_trainers()
                        self.cond.wait(1.0)
        except _Stopped:  # SIGINT / SIGTERM: the server stops and Executor.run returns, as fluid's did
            pass
        except BaseException as e:
            with self.cond:
                self.failed = f"{type(e).__name__}: {e}"
                self.phase = "failed"
                self.cond.notify_all()
            raise
        finally:
            # the requests being answered get their replies; after a failure the trainers get a while
            # to ask and be told it (then end, closing their sessions); then every thread ends before
            # the server returns (a thread that ran torch kernels and is still there when the
            # interpreter exits can abort it)
            deadline = time.time() + (FAILED_GRACE_S if self.failed else 5)
            with self.cond:
                while (self.busy or (self.failed and self.sessions)) and time.time() < deadline:
                    self.cond.wait(0.05)
                self.stopping = True
                self.cond.notify_all()
            server.stop(1.0).wait(10)
            _restore_signals(handlers)
            self._remove_port_file()

    def _save_port(self, port: int) -> None:
        """Write the port listened on to ``/tmp/paddle.<pid>.port`` (fluid's file: how a test finds a
        server started on port 0, and knows it is ready)."""
        self.port = port
        path = f"/tmp/paddle.{os.getpid()}.port"
        # (a temporary file of its own: servers in threads of one process write the same port file)
        fd, tmp = tempfile.mkstemp(prefix=f"paddle.{os.getpid()}.", suffix=".port.tmp", dir="/tmp")
        with os.fdopen(fd, "w") as f:
            f.write(str(port))
        os.replace(tmp, path)  # whole, or not there
        self.port_file = path

    def _remove_port_file(self) -> None:
        if self.port_file is not None:
            try:
                os.remove(self.port_file)
            except OSError:
                pass
            self.port_file = None

    def _sync_loop(self) -> None:
        # The first phase, "get" (the trainers' startup programs receive the initial parameters), was
        # entered when the server was made: a trainer that connects as soon as the server listens can
        # arrive before this loop starts, and entering it again here would forget it (the job hung).
        if not self._all_arrived():
            return
        while True:
            self._enter("send")
            if not self._all_arrived():
                return
            for block in self.programs:
                self._run(block)
            self._enter("get")
            if not self._all_arrived():
                return


class _Stopped(Exception):
    """Raised in the server's thread by SIGINT / SIGTERM."""


def _stop_on_signals():
    """While a server runs in the main thread, SIGINT and SIGTERM stop it (fluid's listen_and_serv
    handled them so); the handlers it replaced, to restore."""
    if threading.current_thread() is not threading.main_thread():
        return {}

    def stop(signum, frame):
        raise _Stopped()

    return {sig: signal.signal(sig, stop) for sig in (signal.SIGINT, signal.SIGTERM)}


def _restore_signals(handlers) -> None:
    for sig, handler in handlers.items():
        signal.signal(sig, handler)


def serve(executor, program, scope) -> None:
    """Run the parameter server of ``program`` (its ``listen_and_serv`` op) until its trainers are done
    or the process gets SIGINT / SIGTERM. The global block's ops before ``listen_and_serv`` run first,
    those after it once the server stops, all in ``scope`` (as fluid ran them, in one scope)."""
    from fluidcompat.transpiler.rpc.programs import ops_program

    ops = program.global_block().ops
    at = [i for i, op in enumerate(ops) if op.type == "listen_and_serv"]
    if len(at) != 1:
        raise ValueError(
            f"a parameter-server program holds one listen_and_serv op; this one holds {len(at)}: run the "
            "program of DistributeTranspiler.get_pserver_program(endpoint) or of one ListenAndServ"
        )
    if at[0] > 0:
        executor.run(ops_program(program, 0, at[0]), scope=scope)
    ParameterServer(executor, program, ops[at[0]], scope).serve()
    if at[0] + 1 < len(ops):
        executor.run(ops_program(program, at[0] + 1, len(ops)), scope=scope)
