"""The programs a parameter server runs: its optimize blocks, and the ops of its program around
``listen_and_serv``, each as a program of its own over the server's one scope."""

from __future__ import annotations


def block_program(program, idx: int):
    """A program whose global block runs block ``idx`` of ``program`` (its variables and those of
    the blocks between it and the global block declared there; its sub-blocks kept)."""
    prog = program.clone()
    g = prog.global_block()
    block = prog.block(idx)
    walk = block
    while walk.idx != 0:
        for name, v in walk.vars.items():
            if name not in g.vars:
                g.vars[name] = v._copy_to(g)
        walk = prog.block(walk.parent_idx)
    g.ops = [op._copy_to(g) for op in block.ops]
    for op in g.ops:
        g._link_outputs(op)
    return _kept_in_scope(prog)


def ops_program(program, start: int, stop: int):
    """A program running ops ``start:stop`` of ``program``'s global block (those around its
    ``listen_and_serv``, run before the server starts and after it stops)."""
    prog = program.clone()
    g = prog.global_block()
    g.ops = g.ops[start:stop]
    return _kept_in_scope(prog)


def _kept_in_scope(prog):
    """``prog`` with every variable of its global block persistable: fluid's server ran the ops of its
    program in one scope for its whole life, so what one block writes (a temporary too) is there for
    the next block and for the trainers' ``recv``."""
    for v in prog.global_block().vars.values():
        v.persistable = True
    prog._bump()
    return prog


def block_ids(blocks) -> list:
    """``optimize_blocks`` as block indices (a program built by hand may hold the Blocks themselves)."""
    return [b.idx if hasattr(b, "idx") else int(b) for b in blocks]
