"""How the executor runs fluid's control ops over their sub-blocks: ``while`` (recording each pass for
``while_grad``), ``conditional_block``, ``recurrent`` (a saved StaticRNN) and the grads of the loops and
branches. Each runner gets the control op's step (``interpreter.Step``: its op, attributes and what
it records), its inputs, the values by name and ``run_once``, one pass over the sub-block.
"""

from __future__ import annotations

from typing import Dict

import torch

from fluidcompat.framework import EMPTY_VAR_NAME
from fluidcompat_ops.array import add_values, zeros_like

__all__ = ["run_sub_block"]


def run_sub_block(s, ins, env, run_once, read=None) -> None:
    """A control op; ``run_once`` is one pass over its sub-block. ``read(fn)``: how a while op reads
    its Condition again after each pass (the profiler times it as a copy to the host)."""
    op_type = s.plan.op.type
    if op_type == "while":
        _run_while(s, ins, env, run_once, read)
    elif op_type == "conditional_block":
        if _branch_taken(ins, s.attrs):
            run_once()
    elif op_type == "conditional_block_grad":
        _run_conditional_block_grad(s, ins, env, run_once)
    elif op_type == "while_grad":
        _run_while_grad(s, ins, env, run_once)
    elif op_type == "recurrent":
        _run_recurrent(s, ins, env, run_once)
    else:
        raise ValueError(f"no runner for the control op {op_type}")


def _run_while(s, ins, env, run_once, read=None) -> None:
    """Pass over the body while Condition holds: first as the op read it (``ins``, planned copy
    included), then as each pass leaves it in ``env`` (a read from the GPU when the body writes it
    there: through ``read`` when given). Recording (for a while_grad): per step, the values of what
    the body wrote (fluid's step scopes), old values it kept included."""
    name = s.loop_cond

    def again() -> bool:
        return _holds(env[name], name) if read is None else read(lambda: _holds(env[name], name))

    holds = _holds(ins["Condition"][0], name)
    if not s.record:
        while holds:
            run_once()
            holds = again()
        return
    steps = []
    while holds:
        run_once()
        steps.append({n: env[n] for n in s.written if n in env})
        holds = again()
    env[s.record] = steps


def _run_recurrent(s, ins, env, run_once) -> None:
    """fluid 1.8's recurrent op (a saved StaticRNN): one pass of the step block per time step (last
    first with ``reverse``). In a pass each input sequence's name holds its row for the step and each
    ``ex_states`` name the previous pass's ``states`` value (``initial_states`` at the first); after
    the loop each output name holds its per-step values stacked, and the sequences' names their
    whole values again."""
    op = s.plan.op
    seq_names, seqs = op.inputs.get("inputs", []), ins.get("inputs", [])
    if not seqs:
        raise ValueError(f"recurrent op: no input sequence (inputs: {seq_names})")
    steps = int(seqs[0].shape[0])
    for name, value in zip(seq_names, seqs):
        if value.dim() == 0 or int(value.shape[0]) != steps:
            raise ValueError(
                f"recurrent op: input '{name}' has {list(value.shape)[:1]} time steps, '{seq_names[0]}' {steps}"
            )
    if steps == 0:
        raise ValueError(f"recurrent op: input '{seq_names[0]}' has no time steps")
    ex_states, new_states = s.attrs["ex_states"], s.attrs["states"]
    state = list(ins.get("initial_states", []))
    if len(state) != len(ex_states) or len(new_states) != len(ex_states):
        raise ValueError(f"recurrent op: {len(state)} initial_states for ex_states {ex_states} and states {new_states}")
    out_names = op.outputs.get("outputs", [])
    per_step: Dict[str, list] = {n: [None] * steps for n in out_names}
    for t in range(steps - 1, -1, -1) if s.attrs["reverse"] else range(steps):
        for name, value in zip(seq_names, seqs):
            env[name] = value[t]
        env.update(zip(ex_states, state))
        run_once()
        state = [env[n] for n in new_states]
        for name in out_names:
            per_step[name][t] = env[name]
    env.update(zip(seq_names, seqs))
    for name, values in per_step.items():
        env[name] = torch.stack(values)


def _run_conditional_block_grad(s, ins, env, run_once) -> None:
    """Run the grad block when the forward branch ran; each wanted input gradient is what the block
    wrote for it, or zeros (branch not taken, or the input does not reach the outputs)."""
    op = s.plan.op
    taken = _branch_taken(ins, s.attrs)
    if taken:
        run_once()
    for value, inner, name in zip(ins["Input"], s.attrs["inner_input_grads"], op.outputs.get("Input@GRAD", ())):
        if name == EMPTY_VAR_NAME:
            continue
        got = env.get(inner) if taken and inner else None
        if got is None and isinstance(env.get(name), list):
            continue  # an array's gradient keeps what other ops added to it (NOTE: [Array values])
        env[name] = got if got is not None else zeros_like(value)


def _run_while_grad(s, ins, env, run_once) -> None:
    """The loop body's grad block once per recorded step, last step first. Before a step, the values
    the step wrote are put back (values it overwrote are under the keys its grad ops read) and each
    seed set: a loop-carried variable's gradient is what the step after wrote for it (at first, the
    outer gradient); any other output's is the outer gradient for the last step and zeros before.
    Inputs the body only reads add up their gradients over the steps (an array's onto what other ops
    added to its gradient before). Afterwards every variable holds its value after the loop again."""
    op = s.plan.op
    xs, outs = op.inputs.get("X", []), op.inputs.get("Out", [])
    out_set = set(outs)
    steps = env.get(op.inputs["StepScopes"][0])
    if steps is None:
        raise ValueError(
            f"while_grad: the while op did not record its steps in '{op.inputs['StepScopes'][0]}' (is_test=True "
            "loops keep none)"
        )
    final = {n: env[n] for n in outs if n in env}
    seeds = dict(zip(outs, s.attrs["inner_output_grads"]))
    inner = dict(zip(xs, s.attrs["inner_input_grads"]))
    state = {o: g for o, g in zip(outs, ins["Out@GRAD"]) if seeds.get(o)}
    read_only = {x: g for x, g in inner.items() if g and x not in out_set}
    # an array the body writes but never reads: every step reads its own entries of the outer gradient
    shared = {o for o, g in state.items() if isinstance(g, list) and not inner.get(o)}
    acc = {x: env.get(g) if isinstance(env.get(g), list) else None for x, g in read_only.items()}
    for after in reversed(steps):
        env.update(after)
        for o, g in state.items():
            env[seeds[o]] = g if g is not None else zeros_like(after[o])
        for g in read_only.values():  # each step's contribution on its own
            env.pop(g, None)
        run_once()
        for o in state:
            if o not in shared:
                state[o] = env.get(inner[o]) if inner.get(o) else None
        for x, g in read_only.items():
            acc[x] = add_values(acc[x], env.get(g))
    for x, value, name in zip(xs, ins["X"], op.outputs.get("X@GRAD", ())):
        if name == EMPTY_VAR_NAME:
            continue
        got = state.get(x) if x in out_set else acc.get(x)
        env[name] = got if got is not None else zeros_like(value)
    env.update(final)


def _holds(cond: torch.Tensor, name: str) -> bool:
    """A while op's Condition: one bool element."""
    if cond.numel() != 1:
        raise ValueError(f"while needs a one-element Condition. Received: {name} with shape {list(cond.shape)}")
    return bool(cond.reshape(-1)[0])


def _branch_taken(ins, attrs) -> bool:
    """Whether a conditional_block runs: its scalar Cond holds, or every Cond tensor has elements."""
    conds = ins["Cond"]
    if attrs.get("is_scalar_condition"):
        c = conds[0]
        if c.numel() != 1:
            raise ValueError(f"conditional_block needs a one-element Cond. Received: shape={list(c.shape)}")
        return bool(c.reshape(-1)[0])
    return all(c.numel() != 0 for c in conds)
