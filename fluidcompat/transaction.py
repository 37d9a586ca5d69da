"""Rollback of failed layer calls: a transaction over programs puts their blocks back as they were
(and the name counters) when the code inside it raises, so that an error while building leaves
every program as it was. ``framework.program_transaction`` opens one over the default programs.

Floor 2, below ``framework``: it reads Programs, Blocks, Operators and Variables by their
attributes and imports none of them.
"""

from __future__ import annotations

import contextlib
from typing import Dict, Iterator

from fluidcompat import unique_name

_transaction_depth = 0


# NOTE: [Light snapshots]
# A layer call opens a transaction, and a program of N ops is built by N layer calls: copying every
# block's op and variable lists each time made building quadratic. A transaction keeps, per block, its
# op list and variable dict objects and their lengths: while ops and variables are only appended,
# the state to go back to is the first n of each. The few edits that insert, remove or rename in
# place call ``before_structure_edit`` first, which takes the full copy then (once per transaction);
# code that replaces ``block.ops`` / ``block.vars`` leaves the kept objects as they were. Ops put first
# (initializers into the startup program, one a parameter) are counted: the state is then n ops from
# the count on.
_LIGHT: Dict[int, list] = {}  # id(block) -> [ops, vars, n ops, n vars, full copy or None, n prepended]


def before_structure_edit(block) -> None:
    """Call before inserting, removing or renaming an op or variable of ``block`` other than by
    appending (NOTE: [Light snapshots])."""
    entry = _LIGHT.get(id(block))
    if entry is not None and entry[4] is None:
        ops, names, n_ops, n_vars, _, pre = entry
        entry[4] = (list(names)[:n_vars], ops[pre : pre + n_ops])


def before_prepend(block) -> None:
    """Call before putting an op first in ``block`` (NOTE: [Light snapshots])."""
    entry = _LIGHT.get(id(block))
    if entry is not None and entry[4] is None:
        entry[5] += 1


def _snapshot(program, deep: bool = False):
    """The blocks' variable and op lists (NOTE: [Light snapshots]); ``deep``: also each op's slots
    and attributes and each variable's shape and dtype, for a change that rewrites ops in place."""
    edits = None
    if deep:
        edits = (
            [
                (
                    op,
                    {k: list(v) for k, v in op.inputs.items()},
                    {k: list(v) for k, v in op.outputs.items()},
                    dict(op.attrs),
                )
                for b in program.blocks
                for op in b.ops
            ],  # fmt: skip
            [(v, v.shape, v.dtype, v.op) for b in program.blocks for v in b.vars.values()],
        )
    blocks = []
    for b in program.blocks:
        entry = _LIGHT.get(id(b))
        if entry is None:  # (a program named twice shares the entry)
            entry = _LIGHT[id(b)] = [b.ops, b.vars, len(b.ops), len(b.vars), None, 0]
        blocks.append((b, entry, len(b._desc_log)))
    return (program._version, program.current_block_idx, blocks, edits)


def _restore(program, snap) -> None:
    version, cur, blocks, edits = snap
    program.blocks = [b for b, _, _ in blocks]
    for b, entry, logged in blocks:
        ops_obj, vars_obj, n_ops, n_vars, full, pre = entry
        var_names, ops = full if full is not None else (list(vars_obj)[:n_vars], ops_obj[pre : pre + n_ops])
        keep = set(var_names)
        for name in [n for n in b.vars if n not in keep]:
            del b.vars[name]
        del b._desc_log[logged:]
        b.ops[:] = ops
    if edits is not None:
        for op, ins, outs, attrs in edits[0]:
            op.inputs, op.outputs, op.attrs = ins, outs, attrs
        for v, shape, dtype, producer in edits[1]:
            v._shape, v._dtype, v.op = shape, dtype, producer
    program.current_block_idx = cur
    program._version = version + 1  # anything cached against the failed state is stale


@contextlib.contextmanager
def program_transaction(*programs, deep: bool = False) -> Iterator[None]:
    """Undo every change to ``programs`` and to the name counters if the block raises. Ops and
    variables changed in place are put back too with ``deep`` (it costs a copy of every op's slots).
    Nested transactions are part of the outermost one."""
    global _transaction_depth
    if _transaction_depth:
        _transaction_depth += 1
        try:
            yield
        finally:
            _transaction_depth -= 1
        return
    snaps = [(p, _snapshot(p, deep)) for p in dict.fromkeys(programs)]
    names = unique_name.generator
    names._undo = undo = {}
    _transaction_depth = 1
    try:
        yield
    except BaseException:
        for prog, snap in snaps:
            _restore(prog, snap)
        names._rollback(undo)
        raise
    finally:
        _transaction_depth = 0
        _LIGHT.clear()
        names._undo = None
