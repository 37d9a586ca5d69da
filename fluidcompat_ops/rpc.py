"""The ops of fluid's parameter-server mode (``DistributeTranspiler``): ``send``, ``recv``,
``send_barrier``, ``fetch_barrier`` and ``split_byref`` in a trainer's program, ``listen_and_serv``
in a server's (run by ``Executor.run`` itself). Their messages go through
fluidcompat/transpiler/rpc.py; their ``Out`` variables that only order ops hold empty tensors."""

from __future__ import annotations

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


def _send_kernel(ins, attrs):
    from fluidcompat.transpiler.rpc import _wire

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
    c = _client(attrs)
    names, epmap = attrs["_op"].outputs["Out"], attrs["epmap"]
    if len(epmap) != len(names):
        raise ValueError(f"recv: {len(names)} variables {names} for {len(epmap)} endpoints {epmap}")
    return {"Out": [torch.from_numpy(c.call(ep, "get", n)).to(attrs["_device"]) for n, ep in zip(names, epmap)]}


def _barrier(kind):
    def kernel(ins, attrs):
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
            "pserver_id": 0,
            "dc_asgd": False,
            "rpc_get_thread_num": 12,
            "rpc_send_thread_num": 12,
            "rpc_prefetch_thread_num": 12,
        },  # fmt: skip
        None,
        _listen_and_serv_kernel,
        no_buffer_inputs=frozenset({"X"}),
        doc="serve the trainers of a parameter-server job (run by Executor.run)",
    )
)
