"""A trainer's side of the parameter servers: one gRPC channel per server, opened on first use, and
the trainer's session with it (how the server knows the trainer is still there)."""

from __future__ import annotations

import sys
import threading
import time
from typing import Dict

from fluidcompat.transpiler.rpc import transport
from fluidcompat.transpiler.rpc.wire import _decode, _encode

COMPLETE_DEADLINE_S = 5.0


class Client:
    """A trainer's channels, one per server, opened on first use."""

    def __init__(self) -> None:
        self._conns: Dict[str, object] = {}  # endpoint -> grpc.Channel
        self._calls: Dict[str, object] = {}  # endpoint -> its Call method
        self._sessions: Dict[str, object] = {}  # endpoint -> the open Session call
        self.trainer_id = -1
        self._lock = threading.RLock()  # one request at a time (the communicator's threads share it)

    def _connect(self, endpoint: str):
        import grpc

        deadline = time.time() + transport.rpc_deadline_s()
        told = time.time()
        ch = transport.channel(endpoint)
        ready = grpc.channel_ready_future(ch)
        while True:
            try:
                ready.result(timeout=max(0.05, min(3.0, deadline - time.time())))
                break
            except grpc.FutureTimeoutError:
                if time.time() >= deadline:
                    ready.cancel()
                    ch.close()
                    raise RuntimeError(
                        f"parameter server {endpoint} did not answer within FLAGS_rpc_deadline: start it "
                        f"(exe.run of its pserver program) or check the endpoint"
                    ) from None
                if time.time() - told >= 3:
                    sys.stderr.write(f"server not ready, wait 3 sec to retry...\nnot ready endpoints:['{endpoint}']\n")
                    told = time.time()
        self._conns[endpoint] = ch
        self._calls[endpoint] = ch.unary_unary(transport.CALL)
        return ch

    def _open_session(self, endpoint: str) -> None:
        """The trainer's session with the server (once its id is known)."""
        if endpoint in self._sessions or self.trainer_id < 0:
            return
        method = self._conns[endpoint].unary_stream(transport.SESSION)
        self._sessions[endpoint] = method(_encode(self.trainer_id), metadata=transport.metadata())

    def _drop(self, endpoint: str) -> None:
        session = self._sessions.pop(endpoint, None)
        if session is not None:
            session.cancel()
        self._calls.pop(endpoint, None)
        ch = self._conns.pop(endpoint, None)
        if ch is not None:
            ch.close()

    def call(self, endpoint: str, kind: str, name: str = "", value=None):
        import grpc

        data = _encode((kind, name, self.trainer_id, value))
        cap = transport.max_message_bytes()
        if len(data) > cap:
            raise ValueError(
                f"{kind} '{name}' to the parameter server {endpoint} is a message of {len(data)} bytes, more than "
                f"the {cap} a message may hold ({transport.MAX_MESSAGE_ENV})"
            )
        limit = transport.rpc_deadline_s()
        with self._lock:
            if endpoint not in self._conns:
                self._connect(endpoint)
            self._open_session(endpoint)
            deadline = time.time() + limit
            while True:
                try:
                    reply = self._calls[endpoint](
                        data, timeout=max(0.001, deadline - time.time()), metadata=transport.metadata()
                    )
                    break
                except grpc.RpcError as e:
                    code, details = e.code(), e.details() or ""
                if code == grpc.StatusCode.RESOURCE_EXHAUSTED and "Concurrent RPC limit" in details:
                    if time.time() < deadline:  # the server is busy (others' requests): ask again
                        time.sleep(0.05)
                        continue
                    code = grpc.StatusCode.DEADLINE_EXCEEDED
                self._fail(endpoint, kind, name, code, details, limit)
        status, payload = _decode(reply)
        if status != "ok":
            raise RuntimeError(f"parameter server {endpoint}: {payload}")
        return payload

    def _fail(self, endpoint: str, kind: str, name: str, code, details: str, limit: float) -> None:
        import grpc

        if code == grpc.StatusCode.UNAVAILABLE:
            self._drop(endpoint)
            raise RuntimeError(f"parameter server {endpoint} closed the connection ({kind} '{name}'): {details}")
        if code == grpc.StatusCode.DEADLINE_EXCEEDED:
            raise RuntimeError(
                f"parameter server {endpoint} did not answer {kind} '{name}' within FLAGS_rpc_deadline "
                f"({limit * 1000:.0f} ms)"
            )
        if code == grpc.StatusCode.UNAUTHENTICATED:
            raise RuntimeError(f"parameter server {endpoint} refused this trainer: {details}")
        raise RuntimeError(f"parameter server {endpoint}: {code.name}: {details}")

    def complete(self) -> None:
        """Tell every server this trainer is done (``Executor.close``), then close the channels."""
        import grpc

        with self._lock:
            for endpoint in list(self._conns):
                try:
                    self._calls[endpoint](
                        _encode(("complete", "", self.trainer_id, None)),
                        timeout=COMPLETE_DEADLINE_S,
                        metadata=transport.metadata(),
                    )
                except grpc.RpcError:
                    pass
                self._drop(endpoint)
