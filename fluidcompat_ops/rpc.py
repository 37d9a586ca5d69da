"""The ops of fluid's parameter-server mode (``DistributeTranspiler``): ``send``, ``recv``,
``send_barrier``, ``fetch_barrier``, ``split_byref``, ``split_selected_rows``,
``distributed_lookup_table`` and ``fake_init`` in a trainer's program, ``listen_and_serv`` in a
server's (run by ``Executor.run`` itself). Their messages go through fluidcompat/transpiler/rpc/;
their ``Out`` variables that only order ops hold empty tensors. In a communicator's program
(``send_varnames``, ``do_not_run``, a ``half_async`` barrier) they hand over to
fluidcompat/communicator.py."""

from __future__ import annotations

from fluidcompat_ops.nn import check_lookup_ids
from fluidcompat_ops.registry import OpDef, register

torch = None  # NOTE: [Lazy torch] in registry.py


def _client(attrs, names_trainer=True):
    """This process's RPC client; the ops but ``send`` carry the trainer's id (fluid left send's unset)."""
    from fluidcompat.transpiler import rpc

    c = rpc.client()
    if names_trainer:
        c.trainer_id = int(attrs["trainer_id"])
    return c


def _marker():
    return torch.zeros(0)


def _through_communicator(ins, attrs) -> bool:
    """A send op of a communicator's program (fluidcompat/communicator.py): hand it over; False for
    one that sends itself."""
    from fluidcompat import communicator
    from fluidcompat.transpiler.distribute_transpiler import DistributedMode

    names, comm = list(attrs["send_varnames"]), communicator.current()
    xs = attrs["_op"].inputs.get("X", [])
    geo = comm is not None and comm.mode == DistributedMode.GEO
    if names == ["param_init"]:  # the GEO trainer startup: the parameters it ends with
        communicator.geo_initial_values(dict(zip(xs, ins.get("X") or [])))
        return True
    if not names and not (geo and not attrs["epmap"]):
        return False
    if comm is None:
        raise RuntimeError(
            f"send: {xs} go through the communicator (send_varnames {names}), and none was made: call "
            "fleet.init_worker() (or fluid.communicator.Communicator(program, mode).start()) before training"
        )
    if geo:
        comm.geo_step()
    elif len(xs) != 1 or ins["X"][0] is None:
        raise ValueError(f"send: a communicator's send takes one variable that holds a value. Received: {xs}")
    else:
        comm.push(xs[0], ins["X"][0], attrs)
    return True


def _send_kernel(ins, attrs):
    from fluidcompat.transpiler.rpc import _wire

    if _through_communicator(ins, attrs):
        return {"Out": [_marker() for _ in attrs["_op"].outputs.get("Out", ())]}
    c = _client(attrs, names_trainer=False)
    names, epmap = attrs["_op"].inputs["X"], attrs["epmap"]
    if len(epmap) != len(names):
        raise ValueError(f"send: {len(names)} variables {names} for {len(epmap)} endpoints {epmap}")
    for name, t, ep in zip(names, ins["X"], epmap):
        if t is None:
            raise ValueError(f"send: '{name}' holds no value (no op of the trainer program computes it)")
        c.call(ep, "send", name, _wire(t))
    return {"Out": [_marker() for _ in attrs["_op"].outputs.get("Out", ())]}


def _recv_kernel(ins, attrs):
    names, epmap, dev = attrs["_op"].outputs["Out"], attrs["epmap"], attrs["_device"]
    if attrs.get("do_not_run"):  # the communicator receives: its latest values, when it has some
        from fluidcompat import communicator

        comm = communicator.current()
        current = ins.get("Out") or [None] * len(names)
        got = [comm.received(n, t) if comm is not None else None for n, t in zip(names, current)]
        if all(g is None for g in got):
            return {}
        return {"Out": [t if g is None else g.to(dev) for g, t in zip(got, current)]}
    c = _client(attrs)
    blocks = list(attrs.get("recv_varnames") or [])
    if blocks:  # one variable, received in the blocks the servers hold
        if len(names) != 1 or len(blocks) != len(epmap):
            raise ValueError(f"recv: {names} received as blocks {blocks} from endpoints {epmap}")
        parts = [torch.from_numpy(c.call(ep, "get", b)) for b, ep in zip(blocks, epmap)]
        return {"Out": [torch.cat(parts, dim=0).to(dev)]}
    if len(epmap) != len(names):
        raise ValueError(f"recv: {len(names)} variables {names} for {len(epmap)} endpoints {epmap}")
    return {"Out": [torch.from_numpy(c.call(ep, "get", n)).to(dev) for n, ep in zip(names, epmap)]}


def _barrier(kind):
    def kernel(ins, attrs):
        if attrs.get("half_async"):  # the communicator's barrier: it sends, then receives
            from fluidcompat import communicator

            comm = communicator.current()
            if comm is None:
                raise RuntimeError(
                    "send_barrier (half_async): the communicator sends this program's gradients, and none was "
                    "made: call fleet.init_worker() before training"
                )
            comm.barrier()
            return {"Out": [_marker() for _ in attrs["_op"].outputs.get("Out", ())]}
        c = _client(attrs)
        for ep in attrs["endpoints"]:
            c.call(ep, kind)
        if kind == "fetch_barrier":  # its Out are the parameters just received (an ordering)
            return {"Out": [_marker() if t is None else t for t in ins.get("Out") or ()]}
        return {"Out": [_marker() for _ in attrs["_op"].outputs.get("Out", ())]}

    return kernel


def _split_byref_kernel(ins, attrs):
    x = ins["X"][0]
    sections = list(attrs["sections"])
    if sum(sections) != x.shape[0]:
        raise ValueError(f"split_byref: sections {sections} do not add up to the {x.shape[0]} rows of X")
    return {"Out": list(torch.split(x, sections, dim=0))}


def _listen_and_serv_kernel(ins, attrs):
    raise RuntimeError("listen_and_serv runs through Executor.run(pserver_program), not inside another program")


register(
    OpDef(
        "send",
        ("X",),
        ("Out",),
        {
            "epmap": [],
            "sections": [],
            "send_varnames": [],
            "merge_add": False,
            "use_send_handler": True,
            "num": 0,
            "trainer_id": 0,
        },  # fmt: skip
        None,
        _send_kernel,
        optional_inputs=frozenset({"X"}),
        doc="send each X to its parameter server (epmap)",
    )
)
register(
    OpDef(
        "recv",
        ("X",),
        ("Out",),
        {"epmap": [], "recv_varnames": [], "trainer_id": 0, "varnames": [], "with_barrier": True, "do_not_run": 0},
        None,
        _recv_kernel,
        no_buffer_inputs=frozenset({"X"}),
        reads_outputs=frozenset({"Out"}),  # a communicator's recv (do_not_run) may leave them
        doc="Out = each variable's value on its parameter server (epmap)",
    )
)
register(
    OpDef(
        "send_barrier",
        ("X",),
        ("Out",),
        {"endpoints": [], "trainer_id": 0, "half_async": False},
        None,
        _barrier("batch_barrier"),
        no_buffer_inputs=frozenset({"X"}),
        doc="tell every parameter server this trainer sent its gradients for the batch",
    )
)
register(
    OpDef(
        "fetch_barrier",
        ("X",),
        ("Out",),
        {"endpoints": [], "trainer_id": 0},
        None,
        _barrier("fetch_barrier"),
        no_buffer_inputs=frozenset({"X"}),
        reads_outputs=frozenset({"Out"}),
        doc="tell every parameter server this trainer received its parameters for the batch",
    )
)
register(
    OpDef(
        "split_byref",
        ("X",),
        ("Out",),
        {"sections": [], "num": 0},
        None,
        _split_byref_kernel,
        doc="Out = X cut into row blocks of the given sections",
    )
)
register(
    OpDef(
        "listen_and_serv",
        ("X",),
        (),
        {
            "endpoint": "127.0.0.1:6164",
            "Fanin": 1,
            "distributed_mode": 0,
            "optimize_blocks": [],
            "grad_to_block_id": [],
            "sparse_grad_to_param": [],
            "prefetch_var_name_to_block_id": [],
            "lr_decay_block_id": -1,
            "checkpint_block_id": -1,
            "pserver_id": -1,
            "dc_asgd": False,
            "rpc_get_thread_num": 1,
            "rpc_send_thread_num": 1,
            "rpc_prefetch_thread_num": 1,
        },  # fmt: skip  (fluid 1.8.5's defaults)
        None,
        _listen_and_serv_kernel,
        no_buffer_inputs=frozenset({"X"}),
        doc="serve the trainers of a parameter-server job (run by Executor.run)",
    )
)


def _split_selected_rows_kernel(ins, attrs):
    from fluidcompat_ops.grad import SelectedRows

    x = ins["X"][0]
    if not isinstance(x, SelectedRows):
        raise TypeError(
            f"split_selected_rows: X must be a SelectedRows (sparse gradient). Received: {type(x).__name__}"
        )
    outs, offset = [], 0
    for h in attrs["height_sections"]:
        keep = (x.rows >= offset) & (x.rows < offset + h)
        outs.append(SelectedRows(x.rows[keep] - offset, x.values[keep], int(h)))
        offset += h
    if offset != x.height:
        raise ValueError(f"split_selected_rows: height_sections {attrs['height_sections']} do not add up to {x.height}")
    return {"Out": outs}


def _remote_lookup_kernel(ins, attrs):
    """Each id's row from the server holding its block of the table (each distinct row asked once)."""
    c = _client(attrs)
    sections, eps, tables = attrs["height_sections"], attrs["endpoints"], attrs["table_names"]
    w = ins["W"][0]  # the trainer's table has only its shape (fake_init)
    width, total, p = int(w.shape[1]), sum(sections), attrs["padding_idx"]
    v2 = attrs["lookup_table_version"] == "lookup_table_v2"
    outs = []
    for ids in ins["Ids"]:
        flat = ids.reshape(-1).long()
        check_lookup_ids(flat, total)
        out = torch.zeros((flat.numel(), width), dtype=w.dtype, device=ids.device)
        offset = 0
        for h, ep, table in zip(sections, eps, tables):
            mask = (flat >= offset) & (flat < offset + h)
            if p != -1:
                mask &= flat != p
            if bool(mask.any()):
                local, inverse = torch.unique(flat[mask] - offset, return_inverse=True)
                rows = torch.from_numpy(c.call(ep, "prefetch", table, local.cpu().numpy()))
                out[mask] = rows.to(out.device, out.dtype)[inverse]
            offset += h
        outs.append(out.reshape(list(ids.shape if v2 else ids.shape[:-1]) + [width]))
    return {"Outputs": outs}


def _fake_init_kernel(ins, attrs):
    return {"Out": [torch.zeros([int(d) for d in attrs["shape"]], device=attrs["_device"])]}


register(
    OpDef(
        "split_selected_rows",
        ("X",),
        ("Out",),
        {"height_sections": []},
        None,
        _split_selected_rows_kernel,
        doc="Out = the rows of the SelectedRows X in each height section, numbered from the section's start",
    )
)
register(
    OpDef(
        "distributed_lookup_table",
        ("Ids", "W"),
        ("Outputs",),
        {
            "table_names": [],
            "height_sections": [],
            "endpoints": [],
            "padding_idx": -1,
            "trainer_id": 0,
            "lookup_table_version": "lookup_table",
            "dtype": 5,
        },  # fmt: skip
        None,
        _remote_lookup_kernel,
        no_buffer_inputs=frozenset({"W"}),
        doc="Outputs = the rows of Ids looked up in a table whose blocks are on parameter servers",
    )
)
register(
    OpDef(
        "fake_init",
        (),
        ("Out",),
        {"shape": []},
        None,
        _fake_init_kernel,
        doc="Out = zeros of the shape (a table that lives on the parameter servers)",
    )
)
