"""The parameter-server runtime behind ``DistributeTranspiler``'s programs: a TCP client in each
trainer (used by the ``send``, ``recv`` and barrier ops) and the server that ``Executor.run`` starts
for a program holding ``listen_and_serv``.

Messages are ``(kind, name, trainer_id, value)``, sent as a JSON header and the raw bytes of the
numpy arrays in it (no pickle: a message can hold only strings, numbers, lists, tuples and arrays
of plain dtypes). Synchronous training (fluid 1.8's RunSyncLoop): the server first serves every trainer's
startup ``recv``, then per batch waits for every trainer's gradients and send barrier, runs its
learning-rate block and optimize blocks, and serves the new parameters until every trainer has
passed its fetch barrier. Asynchronous training: each gradient runs its optimize block as it arrives.

Beyond fluid: a trainer whose connection closes (its process ended without ``exe.close()``) leaves
the job, where fluid's servers waited for it for ever; a server stops once every trainer has left.
A trainer waits at most ``FLAGS_rpc_deadline`` ms (fluid's flag, 180000 by default) for a server to
start, then fails naming it.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import struct
import sys
import tempfile
import threading
import time
from typing import Dict, Optional

import numpy as np


def _encode(obj) -> bytes:
    """``obj`` as bytes: the JSON of its structure (arrays as references), then the arrays' bytes."""
    arrays = []

    def walk(x):
        if isinstance(x, np.ndarray):
            if x.dtype.hasobject:
                raise TypeError("an array of Python objects cannot be sent")
            arrays.append(np.ascontiguousarray(x))
            return {"array": len(arrays) - 1, "dtype": x.dtype.str, "shape": list(x.shape)}
        if isinstance(x, tuple):
            return {"tuple": [walk(v) for v in x]}
        if isinstance(x, list):
            return [walk(v) for v in x]
        if x is None or isinstance(x, (str, int, float, bool)):
            return x
        raise TypeError(f"a {type(x).__name__} cannot be sent")

    head = json.dumps(walk(obj)).encode()
    return b"".join([struct.pack("!Q", len(head)), head] + [a.tobytes() for a in arrays])


def _decode(data: bytes):
    n = struct.unpack("!Q", data[:8])[0]
    at = 8 + n

    def build(x):
        nonlocal at
        if isinstance(x, dict) and "array" in x:
            dtype = np.dtype(x["dtype"])
            if dtype.hasobject:
                raise ValueError("a message holds an array of Python objects")
            size = dtype.itemsize * int(np.prod(x["shape"], dtype=np.int64))
            a = np.frombuffer(data, dtype, count=size // dtype.itemsize if dtype.itemsize else 0, offset=at)
            at += size
            return a.reshape(x["shape"]).copy()
        if isinstance(x, dict):
            return tuple(build(v) for v in x["tuple"])
        if isinstance(x, list):
            return [build(v) for v in x]
        return x

    return build(json.loads(data[8:at].decode()))


def _send_msg(sock: socket.socket, obj) -> None:
    data = _encode(obj)
    sock.sendall(struct.pack("!Q", len(data)) + data)


def _recv_exact(sock: socket.socket, n: int) -> Optional[bytes]:
    chunks, left = [], n
    while left:
        chunk = sock.recv(min(left, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _recv_msg(sock: socket.socket):
    header = _recv_exact(sock, 8)
    if header is None:
        return None
    body = _recv_exact(sock, struct.unpack("!Q", header)[0])
    return None if body is None else _decode(body)


def _address(endpoint: str):
    host, _, port = endpoint.rpartition(":")
    return host, int(port)


class Client:
    """A trainer's connections, one per server, opened on first use."""

    def __init__(self) -> None:
        self._conns: Dict[str, socket.socket] = {}
        self.trainer_id = -1
        self._lock = threading.RLock()  # one request at a time (the communicator's threads share it)

    def _connect(self, endpoint: str) -> socket.socket:
        deadline = time.time() + float(os.environ.get("FLAGS_rpc_deadline", "180000")) / 1000.0
        told = 0.0
        while True:
            try:
                sock = socket.create_connection(_address(endpoint), timeout=5)
                break
            except OSError as e:
                if time.time() > deadline:
                    raise RuntimeError(
                        f"parameter server {endpoint} did not answer within FLAGS_rpc_deadline: start it "
                        f"(exe.run of its pserver program) or check the endpoint ({e})"
                    ) from None
                if time.time() - told > 3:
                    sys.stderr.write(f"server not ready, wait 3 sec to retry...\nnot ready endpoints:['{endpoint}']\n")
                    told = time.time()
                time.sleep(0.1)
        sock.settimeout(None)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._conns[endpoint] = sock
        return sock

    def call(self, endpoint: str, kind: str, name: str = "", value=None):
        with self._lock:
            sock = self._conns.get(endpoint) or self._connect(endpoint)
            try:
                _send_msg(sock, (kind, name, self.trainer_id, value))
                reply = _recv_msg(sock)
            except OSError:
                reply = None
        if reply is None:
            self._conns.pop(endpoint, None)
            raise RuntimeError(f"parameter server {endpoint} closed the connection ({kind} '{name}')")
        status, payload = reply
        if status != "ok":
            raise RuntimeError(f"parameter server {endpoint}: {payload}")
        return payload

    def complete(self) -> None:
        """Tell every server this trainer is done (``Executor.close``)."""
        with self._lock:
            self._complete()

    def _complete(self) -> None:
        for sock in list(self._conns.values()):
            try:
                _send_msg(sock, ("complete", "", self.trainer_id, None))
                _recv_msg(sock)
            except OSError:
                pass
            sock.close()
        self._conns.clear()


_CLIENT: Optional[Client] = None


def client() -> Client:
    global _CLIENT
    if _CLIENT is None:
        _CLIENT = Client()
    return _CLIENT


def close_client() -> None:
    if _CLIENT is not None:
        _CLIENT.complete()


def _block_program(program, idx: int):
    """A program whose global block runs block ``idx`` of ``program`` (its variables and those of
    the blocks between it and the global block declared there; its sub-blocks kept)."""
    prog = program.clone()
    g = prog.global_block()
    block = prog.block(idx)
    walk = block
    while walk.idx != 0:
        for name, v in walk.vars.items():
            if name not in g.vars:
                g.vars[name] = v._copy_to(g)
        walk = prog.block(walk.parent_idx)
    g.ops = [op._copy_to(g) for op in block.ops]
    for op in g.ops:
        g._link_outputs(op)
    return _kept_in_scope(prog)


def _ops_program(program, start: int, stop: int):
    """A program running ops ``start:stop`` of ``program``'s global block (those around its
    ``listen_and_serv``, run before the server starts and after it stops)."""
    prog = program.clone()
    g = prog.global_block()
    g.ops = g.ops[start:stop]
    return _kept_in_scope(prog)


def _kept_in_scope(prog):
    """``prog`` with every variable of its global block persistable: fluid's server ran the ops of its
    program in one scope for its whole life, so what one block writes (a temporary too) is there for
    the next block and for the trainers' ``recv``."""
    for v in prog.global_block().vars.values():
        v.persistable = True
    prog._bump()
    return prog


def _block_ids(blocks) -> list:
    """``optimize_blocks`` as block indices (a program built by hand may hold the Blocks themselves)."""
    return [b.idx if hasattr(b, "idx") else int(b) for b in blocks]


FAILED_GRACE_S = 10.0  # how long a failed server answers its trainers with the failure


class ParameterServer:
    """Serves one ``listen_and_serv`` op of ``program`` with ``executor`` in ``scope``."""

    def __init__(self, executor, program, op, scope) -> None:
        import torch

        self._torch = torch
        self.executor, self.scope = executor, scope
        attrs = op.attrs
        self.endpoint = attrs["endpoint"]
        self.sync = attrs.get("distributed_mode", 0) == 0
        self.live = set(range(int(attrs.get("Fanin", 1))))
        blocks = [b for b in _block_ids(attrs.get("optimize_blocks", [])) if program.block(b).ops]
        self.programs = {b: _block_program(program, b) for b in blocks}  # run in this order
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
        self.busy = 0  # requests being answered

    # -- the trainers' requests ---------------------------------------------------------------------
    def _wait_phase(self, phase: str) -> None:
        with self.cond:
            while self.phase != phase:
                if self.failed is not None:
                    raise RuntimeError(f"the parameter server failed: {self.failed}")
                self.cond.wait()

    def _store(self, name: str, value) -> None:
        self.scope.var(name).tensor._t = _unwire(value, self.executor._device)

    def _check(self, name: str, value) -> None:
        """A received gradient has its variable's shape and dtype (else the trainer is told, and the
        server goes on)."""
        from fluidcompat.dtypes import np_name

        var = self.declared.get(name)
        if var is None:
            return
        if isinstance(value, tuple):  # a SelectedRows: its height and row width
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

    def _arrive(self, phase: str, tid: int) -> None:
        self._wait_phase(phase)
        with self.cond:
            self.arrived.add(tid)
            self.cond.notify_all()

    def _leave(self, tid: int) -> None:
        with self.cond:
            self.live.discard(tid)
            self.cond.notify_all()

    def _request(self, kind: str, name: str, tid: int, value):
        if kind == "send":
            if name not in self.inputs and f"{name}.trainer_{tid}" in self.inputs:
                # a lone trainer's gradient carries no trainer suffix (fluid 1.8.5's server then failed:
                # "Sum operator should have at least one tensor")
                name = f"{name}.trainer_{tid}"
            if name not in self.inputs:
                raise ValueError(f"the parameter server {self.endpoint} takes no variable '{name}'")
            self._check(name, value)
            if self.sync:
                self._wait_phase("send")
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
                self._wait_phase("get")
                return self._value(name)
            with self.lock:
                return self._value(name)
        if kind == "get_no_barrier":  # a checkpoint's read: at any time
            with self.lock:
                return self._value(name)
        if kind == "prefetch":  # rows of a sparse table's block, by their numbers in the block
            with self.lock:
                table = self._tensor(name, "table")
                if value.size and (value.min() < 0 or value.max() >= table.shape[0]):
                    raise ValueError(f"row {int(value.max())} is not in '{name}' ({table.shape[0]} rows)")
                return table.index_select(0, self._torch.from_numpy(value).to(table.device)).cpu().numpy()
        if kind in ("batch_barrier", "fetch_barrier"):
            if self.sync:
                self._arrive("send" if kind == "batch_barrier" else "get", tid)
            return None
        if kind == "complete":
            self._leave(tid)
            return None
        raise ValueError(f"unknown request '{kind}'")

    def _handle(self, conn: socket.socket) -> None:
        tid = None
        try:
            while True:
                msg = _recv_msg(conn)
                if msg is None:
                    break
                kind, name, msg_tid, value = msg
                if msg_tid >= 0:
                    tid = msg_tid
                with self.cond:
                    self.busy += 1
                try:
                    try:
                        reply = ("ok", self._request(kind, name, msg_tid, value))
                    except Exception as e:  # the trainer's op reports it
                        reply = ("error", f"{type(e).__name__}: {e}")
                    _send_msg(conn, reply)
                finally:
                    with self.cond:
                        self.busy -= 1
                        self.cond.notify_all()
                if kind == "complete":
                    break
        except OSError:
            pass
        finally:
            conn.close()
            if tid is not None:
                self._leave(tid)

    # -- the loop -----------------------------------------------------------------------------------
    def _run(self, block: int) -> None:
        self.executor.run(self.programs[block], scope=self.scope)

    def _all_arrived(self) -> bool:
        """Wait until every trainer still in the job has arrived; False once none is left."""
        with self.cond:
            while not self.live <= self.arrived:
                self.cond.wait()
            return bool(self.live)

    def _enter(self, phase: str) -> None:
        with self.cond:
            self.phase, self.arrived = phase, set()
            self.cond.notify_all()

    def serve(self) -> None:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        host, port = _address(self.endpoint)
        try:
            listener.bind((host, port))
        except OSError:
            try:
                listener.bind(("0.0.0.0", port))
            except OSError as e:
                listener.close()
                raise RuntimeError(f"listen_and_serv cannot listen on {self.endpoint}: {e}") from None
        listener.listen(64)
        try:
            self._save_port(listener.getsockname()[1])
        except BaseException:
            listener.close()  # (a trainer connecting to a listener nobody accepts on would wait for ever)
            raise
        conns, threads = [], []

        def accept():
            while True:
                try:
                    conn, _ = listener.accept()
                except OSError:
                    return
                conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                conns.append(conn)
                threads.append(threading.Thread(target=self._handle, args=(conn,), daemon=True))
                threads[-1].start()

        acceptor = threading.Thread(target=accept, daemon=True)
        acceptor.start()
        handlers = _stop_on_signals()
        try:
            if self.sync:
                self._sync_loop()
            else:
                with self.cond:
                    while self.live:
                        self.cond.wait()
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
            # to ask and be told it (then end, closing their connections); then every thread ends
            # before the server returns (a thread that ran torch kernels and is still there when the
            # interpreter exits can abort it)
            deadline = time.time() + (FAILED_GRACE_S if self.failed else 5)
            with self.cond:
                while (self.busy or (self.failed and any(th.is_alive() for th in threads))) and (
                    time.time() < deadline
                ):
                    self.cond.wait(0.05)
            for sock in [listener] + conns:
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
            listener.close()
            for th in [acceptor] + threads:
                th.join(10)
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
    ops = program.global_block().ops
    at = [i for i, op in enumerate(ops) if op.type == "listen_and_serv"]
    if len(at) != 1:
        raise ValueError(
            f"a parameter-server program holds one listen_and_serv op; this one holds {len(at)}: run the "
            "program of DistributeTranspiler.get_pserver_program(endpoint) or of one ListenAndServ"
        )
    if at[0] > 0:
        executor.run(_ops_program(program, 0, at[0]), scope=scope)
    ParameterServer(executor, program, ops[at[0]], scope).serve()
    if at[0] + 1 < len(ops):
        executor.run(_ops_program(program, at[0] + 1, len(ops)), scope=scope)


def _wire(t):
    """A tensor (or a SelectedRows: its rows, values and height) as it travels."""
    from fluidcompat_ops.grad import SelectedRows

    if isinstance(t, SelectedRows):
        return ("selected_rows", _wire(t.rows), _wire(t.values), int(t.height))
    return np.ascontiguousarray(t.detach().cpu().numpy())


def _unwire(value, device):
    import torch

    from fluidcompat_ops.grad import SelectedRows

    if isinstance(value, tuple) and value[:1] == ("selected_rows",):
        _, rows, values, height = value
        return SelectedRows(torch.from_numpy(rows).to(device), torch.from_numpy(values).to(device), height)
    return torch.from_numpy(value).to(device)
