"""``CompiledProgram.with_data_parallel`` across worker processes, as fluid's collective mode did:
the loss gradient is scaled by 1/nranks and every parameter gradient is summed over the workers
(``c_allreduce_sum``) after backward, before clipping, regularization and the optimizer; the
parameters start from rank 0's values."""

from __future__ import annotations

from typing import List

from fluidcompat.framework import OpRole, Program


def _grads(block) -> List[str]:
    """Parameter gradients in the order backward produces them (each once)."""
    out: List[str] = []
    for op in block.ops:
        role = op.attrs.get("op_role", 0)
        if role & OpRole.Backward and not role & OpRole.Optimize:
            pairs = op.attrs.get("op_role_var") or []
            for g in pairs[1::2]:
                if g not in out:
                    out.append(g)
    return out


def collective_program(program: Program, loss_name, nranks: int, scale_loss: bool = True) -> Program:
    """A copy of ``program`` with the all-reduce ops inserted (the user's program is left as it is)."""
    p = program.clone()
    block = p.global_block()
    loss_grad_at = None
    for i, op in enumerate(block.ops):
        role = op.attrs.get("op_role", 0)
        if role & OpRole.Backward and role & OpRole.Loss:
            loss_grad_at = i
            break
    grads = _grads(block)
    if loss_grad_at is None or not grads:
        raise ValueError(
            f"with_data_parallel: the program has no backward pass for the loss '{loss_name}': call "
            "optimizer.minimize(loss) before compiling it for several workers"
        )
    if scale_loss:
        g = block.ops[loss_grad_at].outputs["Out"][0]
        block._insert_op(loss_grad_at + 1, "scale", {"X": [g]}, {"Out": [g]},
                         {"scale": 1.0 / nranks, "op_role": OpRole.Backward | OpRole.Loss})  # fmt: skip
    at = next((i for i, op in enumerate(block.ops) if op.attrs.get("op_role", 0) & OpRole.Optimize), len(block.ops))
    for k, g in enumerate(grads):
        block._insert_op(at + k, "c_allreduce_sum", {"X": [g]}, {"Out": [g]},
                         {"ring_id": 0, "use_calc_stream": True, "op_role": OpRole.Backward})  # fmt: skip
    return p


def broadcast_parameters(program: Program, scope) -> None:
    """Give every worker rank 0's parameter values (those in ``scope``)."""
    import torch.distributed as dist

    for param in program.all_parameters():
        var = scope.find_var(param.name)
        if var is not None and var.get_tensor()._is_initialized():
            t = var.get_tensor().torch()
            dist.broadcast(t, src=0)
