"""Collective ops of fluid's collective (NCCL2) mode on torch.distributed: ``c_allreduce_sum`` (and
max/min/prod), which CompiledProgram.with_data_parallel inserts after backward in launched workers."""

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
