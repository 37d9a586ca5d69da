"""fluid 1.8's hand-built parameter-server layers (``fluid.layers.io.ListenAndServ``, ``Send``,
``Recv``) on fluidcompat's parameter server: the server's block runs once per batch in one scope, a
server on port 0 writes ``/tmp/paddle.<pid>.port``, SIGINT stops it and ``Executor.run`` returns (as
fluid 1.8.5's did: exit status 0, port file gone); a distributed ``save_persistables`` of a hand-made
``VarsDistributed`` record fetches the slices, and ``load`` with ``seek`` / ``shape`` reads one back."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import fluidcompat as fluid
from fluidcompat.framework import OpRole
from fluidcompat.layers import ops
from fluidcompat.layers.io import ListenAndServ, Recv, Send
from fluidcompat.transpiler.details import VarsDistributed, VarStruct

L = fluid.layers
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _port_file(pid: int) -> str:
    return f"/tmp/paddle.{pid}.port"


def _wait_port(pid: int, proc=None, timeout: float = 60.0) -> int:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"the server exited ({proc.returncode}): {proc.stderr.read()}")
        try:
            with open(_port_file(pid)) as f:
                return int(f.read())
        except (OSError, ValueError):
            time.sleep(0.05)
    raise AssertionError(f"no {_port_file(pid)} within {timeout} s")


def _scale_server(endpoint: str, init: float = 1.0):
    """fluid's test_dist_train server: X (1.0 until a trainer sends it) scaled by 10 each batch."""
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        serv = ListenAndServ(endpoint, ["X"], optimizer_mode=False)
        with serv.do():
            out = main.global_block().create_var(name="scale_0.tmp_0", dtype="float32", shape=[4, 4])
            x = L.data(shape=[4, 4], dtype="float32", name="X", append_batch_size=False)
            fluid.initializer.Constant(value=init)(x, main.global_block())  # a global-block op before the server
            ops._scale(x=x, scale=10.0, out=out)
    return main


def _client(port: int, value: float, first: bool):
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        if first:  # the trainer's startup receive is over (the server's first phase)
            main.global_block().append_op(
                type="fetch_barrier",
                outputs={"Out": []},
                attrs={"endpoints": [f"127.0.0.1:{port}"], "op_role": OpRole.RPC},
            )
        x = L.data(shape=[4, 4], dtype="float32", name="X", append_batch_size=False)
        x.persistable = True
        fluid.initializer.Constant(value=value)(x, main.global_block())
        got = main.global_block().create_var(name="scale_0.tmp_0", dtype="float32", shape=[4, 4])
        Send(f"127.0.0.1:{port}", [x])
        return main, Recv(f"127.0.0.1:{port}", [got])


def test_the_server_block_runs_once_per_batch_in_one_scope():
    server = _scale_server("127.0.0.1:0")
    before = {n: v.persistable for n, v in server.global_block().vars.items()}
    scope, failures = fluid.Scope(), []

    def serve():
        try:
            fluid.Executor(fluid.CPUPlace()).run(server, scope=scope)
        except BaseException as e:  # noqa: BLE001  (reported by the test)
            failures.append(e)

    th = threading.Thread(target=serve, daemon=True)
    th.start()
    port = _wait_port(os.getpid())
    exe = fluid.Executor(fluid.CPUPlace())
    try:
        for i, value in enumerate([2.5, 4.0]):
            prog, outs = _client(port, value, first=i == 0)
            (got,) = exe.run(prog, fetch_list=outs)
            np.testing.assert_allclose(got, np.full((4, 4), value * 10.0, "float32"), rtol=1e-6)
    finally:
        exe.close()  # the trainer leaves: the server stops
    th.join(30)
    assert not th.is_alive() and not failures, failures
    assert not os.path.exists(_port_file(os.getpid()))
    np.testing.assert_allclose(np.array(scope.find_var("X").get_tensor()), 4.0)  # the last one sent
    assert {n: v.persistable for n, v in server.global_block().vars.items()} == before  # the program unchanged


SERVER_SCRIPT = """
import sys
sys.path.insert(0, {root!r})
import numpy as np
import fluidcompat as fluid
pserver_id = int(sys.argv[1])
scope = fluid.Scope()
with fluid.scope_guard(scope):
    table = np.array([[i + 10 * pserver_id + 1] * 8 for i in range(5)], "float32")
    scope.var("table").get_tensor().set(table, fluid.CPUPlace())
    prog = fluid.Program()
    with fluid.program_guard(prog, fluid.Program()):
        block = prog._create_block(0)
        prog._rollback()
        prog.global_block().append_op(type="listen_and_serv", inputs={{"X": []}}, outputs={{}},
            attrs={{"optimize_blocks": [block], "endpoint": "127.0.0.1:0", "Fanin": 1, "distributed_mode": 0,
                   "grad_to_block_id": []}})
    fluid.Executor(fluid.CPUPlace()).run(prog)
print("server returned")
"""


def _start_server(pserver_id: int):
    proc = subprocess.Popen(
        [sys.executable, "-c", SERVER_SCRIPT.format(root=ROOT), str(pserver_id)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    return proc, _wait_port(proc.pid, proc)


def _stop(proc) -> str:
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert not os.path.exists(_port_file(proc.pid))
    return out


def test_port_zero_then_sigint_stops_the_server_and_run_returns():
    proc, port = _start_server(0)
    assert port > 0
    assert "server returned" in _stop(proc)


def test_save_persistables_of_a_vars_distributed_record_and_load_with_seek(tmp_path):
    servers = [_start_server(i) for i in range(2)]
    try:
        lod = fluid.core.VarDesc.VarType.LOD_TENSOR
        origin = VarStruct("table", [10, 8], "float32", lod, 0, True)
        piece = VarStruct("table", [5, 8], "float32", lod, 0, True)
        record = VarsDistributed()
        for block_id, (_, port) in reversed(list(enumerate(servers))):  # recorded out of order: block_id orders
            record.add_distributed_var(origin, piece, is_slice=True, block_id=block_id, offset=40 * block_id,
                                       vtype="RemotePrefetch", endpoint=f"127.0.0.1:{port}")  # fmt: skip
        prog = fluid.Program()
        prog._is_distributed, prog._is_chief, prog._parameters_on_pservers = True, True, record
        exe = fluid.Executor(fluid.CPUPlace())
        fluid.io.save_persistables(exe, str(tmp_path), prog)
    finally:
        for proc, _ in servers:
            _stop(proc)
    want = np.array([[i + 10 * s + 1] * 8 for s in range(2) for i in range(5)], "float32")
    load = fluid.Program()
    with fluid.program_guard(load, fluid.Program()):
        block = load.global_block()
        whole = block.create_var(name="whole", dtype="float32", shape=[10, 8], persistable=True)
        part = block.create_var(name="part", dtype="float32", shape=[3, 8], persistable=True)
        block.append_op(type="load", outputs={"Out": [whole]}, attrs={"file_path": str(tmp_path / "table")})
        block.append_op(type="load", outputs={"Out": [part]},
                        attrs={"file_path": str(tmp_path / "table"), "seek": 2 * 8, "shape": [3, 8]})  # fmt: skip
    scope = fluid.Scope()
    exe.run(load, scope=scope)
    np.testing.assert_array_equal(np.array(scope.find_var("whole").get_tensor()), want)
    np.testing.assert_array_equal(np.array(scope.find_var("part").get_tensor()), want[2:5])


@pytest.mark.parametrize("seek,shape,text", [(75, [1, 8], "holds 80 elements"), (-2, [1], "seek must be >= 0"),
                                             (0, [], "shape gives the block's dims")])  # fmt: skip
def test_load_with_seek_refuses_a_block_outside_the_tensor(tmp_path, seek, shape, text):
    fluid.io.save_vars(fluid.Executor(fluid.CPUPlace()), str(tmp_path), vars=[_saved_var(tmp_path)])
    prog = fluid.Program()
    with fluid.program_guard(prog, fluid.Program()):
        out = prog.global_block().create_var(name="o", dtype="float32", shape=shape)
        prog.global_block().append_op(
            type="load", outputs={"Out": [out]}, attrs={"file_path": str(tmp_path / "v"), "seek": seek, "shape": shape}
        )
    with pytest.raises(Exception, match=text):
        fluid.Executor(fluid.CPUPlace()).run(prog, scope=fluid.Scope())


def _saved_var(tmp_path):
    prog, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(prog, startup):
        v = L.create_global_var([10, 8], 1.5, "float32", persistable=True, name="v")
    fluid.Executor(fluid.CPUPlace()).run(startup)
    return v


def test_send_and_recv_check_their_arguments():
    x = L.data(shape=[2], dtype="float32", name="x", append_batch_size=False)
    with pytest.raises(AssertionError, match="send_vars must be a list"):
        Send("127.0.0.1:1", x)
    with pytest.raises(AssertionError, match="get_vars must be a list"):
        Recv("127.0.0.1:1", (x,))
    with pytest.raises(TypeError, match="comma-separated"):
        Send(["127.0.0.1:1"], [x])
    with pytest.raises(TypeError, match="BlockGuardServ takes a ListenAndServ"):
        from fluidcompat.layers.distributed import BlockGuardServ

        BlockGuardServ(object())


def test_listen_and_serv_params_and_grads():
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        serv = ListenAndServ("127.0.0.1:0", ["X"], optimizer_mode=False)
        with serv.do():
            x = L.data(shape=[2], dtype="float32", name="X", append_batch_size=False)
            L.scale(x, 2.0)
            params, grads = serv.get_params_and_grads()
    assert [p.name for p in params] == ["X"] and [g.name for g in grads] == ["X"]
    op = main.global_block().ops[-1]
    assert op.type == "listen_and_serv" and op.attr("optimize_blocks") == [1] and op.attr("Fanin") == 1
