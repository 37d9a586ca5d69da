"""Collective ops of fluid's collective (NCCL2) mode on torch.distributed: ``c_allreduce_sum`` (and
max/min/prod), which CompiledProgram.with_data_parallel inserts after backward in launched workers,
and ``gen_nccl_id``, which DistributeTranspiler's nccl2 mode puts in the startup program."""

from __future__ import annotations

from fluidcompat_ops.registry import OpDef, register
from fluidcompat_ops.shapes import same_as

torch = None  # NOTE: [Lazy torch] in registry.py


def _group_check(op_type: str):
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()):
        raise RuntimeError(
            f"{op_type}: no process group: run the program in workers started by `fluidcompat launch` "
            "(CompiledProgram.with_data_parallel joins the group)"
        )
    return dist


def _allreduce(kind):
    def kernel(ins, attrs):
        dist = _group_check(f"c_allreduce_{kind}")
        x = ins["X"][0].clone()
        dist.all_reduce(x, op=getattr(dist.ReduceOp, kind.upper() if kind != "prod" else "PRODUCT"))
        return {"Out": [x]}

    return kernel


for _kind in ("sum", "max", "min", "prod"):
    register(
        OpDef(
            f"c_allreduce_{_kind}",
            ("X",),
            ("Out",),
            {"ring_id": 0, "use_calc_stream": False},
            same_as("X"),
            _allreduce(_kind),
            doc=f"Out = X reduced ({_kind}) over every worker of the job",
        )
    )


def _gen_nccl_id_kernel(ins, attrs):
    """Join the workers' process group: the one `fluidcompat launch` made, which must be the
    trainers the op names, this worker being ``trainer_id`` (fluid exchanged NCCL ids over TCP)."""
    from fluidcompat import process_group

    trainers, tid = list(attrs["trainers"]), int(attrs["trainer_id"])
    world, rank = process_group.get_world_size(), process_group.get_rank()
    if (world, rank) != (len(trainers), tid):
        raise RuntimeError(
            f"gen_nccl_id: the program is transpiled for trainer {tid} of {len(trainers)} ({trainers}), but this "
            f"process is worker {rank} of {world}: start the trainers with `fluidcompat launch --nproc_per_node "
            f"{len(trainers)}` (or --gpus), which gives each its PADDLE_TRAINER_ID and PADDLE_TRAINER_ENDPOINTS"
        )
    process_group.init_parallel_env()
    return {"NCCLID": [torch.zeros(0)]}


register(
    OpDef(
        "gen_nccl_id",
        (),
        ("NCCLID",),
        {
            "trainers": [],
            "trainer_id": 0,
            "nccl_comm_num": 1,
            "use_hierarchical_allreduce": False,
            "hierarchical_allreduce_inter_nranks": 0,
        },  # fmt: skip
        None,
        _gen_nccl_id_kernel,
        doc="join the trainers' process group (DistributeTranspiler's nccl2 mode)",
    )
)
