"""The parameter server's transport: gRPC (as fluid 1.8's was), two methods of one generic service
whose messages are bytes of ``wire.py`` (no protoc code, no pickle).

- ``Call`` (unary): one request of a trainer, ``(kind, name, trainer_id, value)``, and its reply.
- ``Session`` (server streaming, never answered): opened by a trainer on its first request to a
  server and held until it closes its client. The server learns from it that the trainer's
  process is gone (killed, or its machine lost: keepalive pings), which a synchronous job cannot
  outlive.

Every request carries the job's token in its metadata (``FLUIDCOMPAT_PS_TOKEN``: set by ``fluidcompat
launch_ps`` for its processes; without it, the token of the user's ``~/.fluidcompat/pserver_token``,
made on first use, so that the processes of one user on one machine share one); a request without it
is refused (UNAUTHENTICATED, before its body is read) and logged. Messages are capped at
``FLUIDCOMPAT_RPC_MAX_MESSAGE_BYTES`` (default 2 GiB - 1, fluid 1.8's gRPC limit); connections at
``MAX_CONNECTIONS``; the requests answered at once at a pool of threads sized by the job (idle
connections hold no thread); a connection that does not finish its handshake is dropped after
``HANDSHAKE_TIMEOUT_MS``.
"""

from __future__ import annotations

import errno
import hmac
import os
import secrets
import socket
import sys
import tempfile
import threading
from concurrent import futures
from typing import Callable, Optional

SERVICE = "/fluidcompat.ParameterServer/"
CALL, SESSION = SERVICE + "Call", SERVICE + "Session"
TOKEN_ENV = "FLUIDCOMPAT_PS_TOKEN"
TOKEN_KEY = "fluidcompat-job-token"
MAX_MESSAGE_ENV = "FLUIDCOMPAT_RPC_MAX_MESSAGE_BYTES"
MAX_CONNECTIONS = 1024
HANDSHAKE_TIMEOUT_MS = 10_000
KEEPALIVE_MS = 10_000
REFUSALS_LOGGED = 20  # then one line per 1000 (a flood of refused requests does not flood the log)


def max_message_bytes() -> int:
    raw = os.environ.get(MAX_MESSAGE_ENV, "")
    if not raw:
        return 2**31 - 1
    try:
        n = int(raw)
    except ValueError:
        raise ValueError(f"{MAX_MESSAGE_ENV} must be a number of bytes. Received: {raw!r}") from None
    if not 1024 <= n <= 2**31 - 1:
        raise ValueError(f"{MAX_MESSAGE_ENV} must be in [1024, 2147483647]. Received: {n}")
    return n


def rpc_deadline_s() -> float:
    """fluid's ``FLAGS_rpc_deadline`` (ms; 180000 by default): the longest a request waits."""
    raw = os.environ.get("FLAGS_rpc_deadline", "180000")
    try:
        ms = float(raw)
    except ValueError:
        raise ValueError(f"FLAGS_rpc_deadline must be a number of milliseconds. Received: {raw!r}") from None
    if ms <= 0:
        raise ValueError(f"FLAGS_rpc_deadline must be > 0. Received: {raw}")
    return ms / 1000.0


# -- the job token ----------------------------------------------------------------------------------
_token_lock = threading.Lock()
_user_tokens: dict = {}  # token file -> its token (read once)


def token_path() -> str:
    return os.path.join(os.path.expanduser("~"), ".fluidcompat", "pserver_token")


def job_token() -> str:
    """The job's token: ``FLUIDCOMPAT_PS_TOKEN``, else the user's token file (made on first use, 0600),
    else one for this process and its children (put in the environment)."""
    with _token_lock:
        token = os.environ.get(TOKEN_ENV, "")
        if token:
            return token
        path = token_path()
        if path not in _user_tokens:
            _user_tokens[path] = _user_token(path)
        token = _user_tokens[path]
        if token is None:  # no home to keep it: this process and the processes it starts
            token = secrets.token_hex(32)
            os.environ[TOKEN_ENV] = token
        return token


class TokenFileError(PermissionError):
    """The user's token file is not the user's alone."""


def _user_token(path: str) -> Optional[str]:
    """The token of the user's token file, made whole (a link of a written file) when absent; None when
    there is no home to keep it in."""
    try:
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        if not os.path.exists(path):
            fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".pserver_token.")  # (0600)
            try:
                with os.fdopen(fd, "w") as f:
                    f.write(secrets.token_hex(32))
                os.link(tmp, path)  # (fails if another process made it first: then its token is read)
            except FileExistsError:
                pass
            finally:
                os.unlink(tmp)
        st = os.stat(path)
        if st.st_uid != os.getuid() or st.st_mode & 0o077:
            raise TokenFileError(
                f"{path} (the parameter servers' job token) must belong to you and be readable by you "
                f"alone (chmod 600 {path}), or set {TOKEN_ENV}"
            )
        with open(path) as f:
            token = f.read().strip()
        return token or None
    except TokenFileError:
        raise
    except OSError:
        return None


def _metadata():
    return ((TOKEN_KEY, job_token()),)


# -- the server -------------------------------------------------------------------------------------
def _options(max_message: int, workers: int):
    return [
        ("grpc.max_receive_message_length", max_message),
        ("grpc.max_send_message_length", max_message),
        ("grpc.so_reuseport", 0),  # (gRPC's default shares a port with another server)
        ("grpc.max_allowed_incoming_connections", MAX_CONNECTIONS),
        ("grpc.server_handshake_timeout_ms", HANDSHAKE_TIMEOUT_MS),
        ("grpc.max_concurrent_streams", 4 * workers),
        ("grpc.keepalive_time_ms", KEEPALIVE_MS),
        ("grpc.keepalive_timeout_ms", KEEPALIVE_MS),
        ("grpc.keepalive_permit_without_calls", 1),
        ("grpc.http2.min_ping_interval_without_data_ms", KEEPALIVE_MS // 2),
        ("grpc.http2.max_pings_without_data", 0),
    ]


class _Refusals:
    def __init__(self, endpoint: str) -> None:
        self.endpoint, self.count, self.lock = endpoint, 0, threading.Lock()

    def refuse(self, request_iterator, context):
        import grpc

        with self.lock:
            self.count += 1
            n = self.count
        if n <= REFUSALS_LOGGED or n % 1000 == 0:
            sys.stderr.write(
                f"parameter server {self.endpoint}: refused a request from {context.peer()} without this job's "
                f"token ({n} refused so far)\n"
            )
        context.abort(
            grpc.StatusCode.UNAUTHENTICATED,
            f"the request does not carry this job's token: start every server and trainer with the same "
            f"{TOKEN_ENV} (fluidcompat launch_ps sets it)",
        )


def _generic_handler(endpoint: str, call: Callable, session: Callable):
    import grpc

    token = job_token().encode()
    refusals = _Refusals(endpoint)
    handlers = {
        CALL: grpc.unary_unary_rpc_method_handler(call),
        SESSION: grpc.unary_stream_rpc_method_handler(session),
    }
    # (request streaming: the refusal does not read the request's body)
    refused = grpc.stream_unary_rpc_method_handler(refusals.refuse)

    class Handler(grpc.GenericRpcHandler):
        def service(self, details):
            given = next((v for k, v in details.invocation_metadata if k == TOKEN_KEY), "")
            given = given.encode() if isinstance(given, str) else bytes(given)
            if not hmac.compare_digest(given, token):
                return refused
            return handlers.get(details.method)

    return Handler(), refusals


def _local_address_error(endpoint: str, host: str, port: int) -> str:
    """Why ``host:port`` cannot be bound here (for the error)."""
    try:
        infos = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM)
    except OSError as e:
        return f"{host!r} does not resolve ({e})"
    for family, kind, proto, _, addr in infos:
        s = socket.socket(family, kind, proto)
        try:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind(addr)
        except OSError as e:
            if e.errno == errno.EADDRNOTAVAIL:
                return f"{addr[0]} is not an address of this machine"
            if e.errno == errno.EADDRINUSE:
                return f"port {port} is in use"
            return str(e)
        finally:
            s.close()
    return "gRPC could not listen there"


def start_server(endpoint: str, workers: int, call: Callable, session: Callable):
    """A started gRPC server listening on exactly ``endpoint`` (never another address), its port and its
    refusal counter; a RuntimeError naming the endpoint when it cannot listen there."""
    import grpc

    host, _, port_text = endpoint.rpartition(":")
    try:
        port = int(port_text)
    except ValueError:
        raise ValueError(f"listen_and_serv: endpoint must be 'ip:port'. Received: {endpoint!r}") from None
    if not host:
        raise ValueError(f"listen_and_serv: endpoint must be 'ip:port'. Received: {endpoint!r}")
    max_message = max_message_bytes()
    handler, refusals = _generic_handler(endpoint, call, session)
    pool = futures.ThreadPoolExecutor(max_workers=workers, thread_name_prefix="pserver")
    server = grpc.server(
        pool, handlers=[handler], options=_options(max_message, workers), maximum_concurrent_rpcs=4 * workers
    )
    try:
        bound = server.add_insecure_port(endpoint)
    except RuntimeError:
        bound = 0
    if not bound:
        server.stop(None)
        pool.shutdown(wait=False)
        # (fluid 1.8.5: "can't bind to address:10.255.255.1:6174", and its process aborted)
        raise RuntimeError(
            f"listen_and_serv can't bind to address:{endpoint}: {_local_address_error(endpoint, host, port)} "
            "(a parameter server listens on exactly its endpoint: give one of this machine's addresses)"
        )
    server.start()
    return server, bound, refusals


# -- the client -------------------------------------------------------------------------------------
def channel(endpoint: str):
    import grpc

    max_message = max_message_bytes()
    return grpc.insecure_channel(
        endpoint,
        options=[
            ("grpc.max_receive_message_length", max_message),
            ("grpc.max_send_message_length", max_message),
            ("grpc.initial_reconnect_backoff_ms", 100),
            ("grpc.min_reconnect_backoff_ms", 100),
            ("grpc.max_reconnect_backoff_ms", 1000),
            ("grpc.keepalive_time_ms", KEEPALIVE_MS),
            ("grpc.keepalive_timeout_ms", KEEPALIVE_MS),
            ("grpc.keepalive_permit_without_calls", 1),
            ("grpc.http2.max_pings_without_data", 0),
            ("grpc.enable_retries", 0),
        ],
    )


def metadata():
    return _metadata()
