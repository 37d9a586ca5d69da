"""Recomputation (``RecomputeOptimizer``, ``append_backward(checkpoints=...)``), as fluid 1.8.5 built it.

The forward ops are cut into segments at the checkpoints. The backward pass keeps the checkpoints and
what crosses a segment's border; before a segment's grad ops it computes the segment's forward ops
again, their outputs renamed ``NAME.subprog_N`` (the last segment is N = 0), and the grad ops read
those. The forward values inside a segment are then free after the forward pass (the executor frees
a value after its last reader), which is where the memory goes down. Each dropout gets a ``seed`` op
so that its recomputation draws the mask it drew the first time.
"""

from __future__ import annotations

from typing import Dict, List, Sequence, Set, Tuple

from fluidcompat import unique_name
from fluidcompat.dtypes import VarType
from fluidcompat.framework import Block, Operator

__all__ = ["plan_segments", "seed_dropouts", "recompute_grad_ops"]


def seed_dropouts(block: Block, upto: int) -> int:
    """Give each dropout among the first ``upto`` ops a ``seed`` op (its Seed input), as fluid did;
    returns the new number of forward ops."""
    i = 0
    while i < upto:
        op = block.ops[i]
        if op.type != "dropout" or op.inputs.get("Seed"):
            i += 1
            continue
        name = unique_name.generate_with_ignorable_key(unique_name.generate("seed") + ".tmp")
        block.create_var(name=name, dtype=VarType.INT32, type=VarType.LOD_TENSOR, persistable=False)
        seed = int(op.attrs.get("seed", 0)) if op.attrs.get("fix_seed") else 0
        seed_op = block._insert_op(i, type="seed", outputs={"Out": [name]}, attrs={"seed": seed})
        seed_op._callsite = op._callsite
        op.inputs["Seed"] = [name]
        op.attrs["fix_seed"] = False
        op.attrs["seed"] = 0
        upto += 1
        i += 2
    return upto


def _deps(ops: Sequence[Operator]) -> Dict[str, Tuple[List[int], List[int]]]:
    """name -> (indices of the ops reading it, indices of the ops writing it)."""
    deps: Dict[str, Tuple[List[int], List[int]]] = {}
    for i, op in enumerate(ops):
        for n in op.input_arg_names:
            deps.setdefault(n, ([], []))[0].append(i)
        for n in op.output_arg_names:
            deps.setdefault(n, ([], []))[1].append(i)
    return deps


def plan_segments(block: Block, ops: Sequence[Operator], checkpoints: Sequence[str]):
    """(segments [(begin, end)], names kept in memory: the checkpoints, what crosses a segment's border,
    the program's inputs and the seeds). Segments run from the first reader of a checkpoint to the
    writer of the next; the ops before the first segment make one more."""
    deps = _deps(ops)
    known = [c for c in dict.fromkeys(checkpoints) if c in deps]
    ordered = sorted(known, key=lambda c: max(deps[c][1]) if deps[c][1] else -1)
    segments: List[Tuple[int, int]] = []
    if len(ordered) == 1:
        last = max(deps[ordered[0]][1], default=-1)
        if last > 0:
            segments.append((0, last + 1))
    else:
        for a, b in zip(ordered, ordered[1:]):
            lo = min(deps[a][0], default=len(ops))
            hi = max(deps[b][1], default=-1)
            if lo < hi:
                segments.append((lo, hi + 1))
    if segments and segments[0][0] != 0:
        segments.insert(0, (0, segments[0][0]))
    kept: Set[str] = set(ordered)
    for begin, end in segments:
        for op in ops[begin:end]:
            kept.update(n for n in op.output_arg_names if any(j >= end for j in deps[n][0]))
            kept.update(n for n in op.input_arg_names if any(j < begin for j in deps[n][1]))
    for n, (readers, writers) in deps.items():
        var = block._find_var_recursive(n)
        if readers and not writers and not (var is not None and var.persistable):
            kept.add(n)  # fed or made before the program
    kept.update(n for op in ops if op.type == "seed" for n in op.output_arg_names)
    return segments, kept


def recompute_grad_ops(block: Block, ops: Sequence[Operator], grad_ops: list, checkpoints: Sequence[str], make):
    """``grad_ops`` (last forward op's first) with each segment's recomputation before its grad ops and
    those reading the recomputed values. ``make(type, inputs, outputs, attrs, fwd)`` builds one."""
    segments, kept = plan_segments(block, ops, checkpoints)
    if not segments:
        return grad_ops
    index = {id(op): i for i, op in enumerate(ops)}

    def segment_of(g):
        i = index.get(id(g.fwd), -1) if g.fwd is not None else -1
        return next((k for k, (b, e) in enumerate(segments) if b <= i < e), None)

    def persistable(n):
        var = block._find_var_recursive(n)
        return var is not None and var.persistable

    renames: Dict[int, Dict[str, str]] = {}
    for number, k in enumerate(reversed(range(len(segments)))):
        begin, end = segments[k]
        renames[k] = {
            n: f"{n}.subprog_{number}"
            for op in ops[begin:end]
            for n in op.input_arg_names + op.output_arg_names
            if n not in kept and not persistable(n)
        }
    result, started = [], set()
    for g in grad_ops:
        k = segment_of(g)
        if k is not None and k not in started:
            started.add(k)
            begin, end = segments[k]
            rename = renames[k]
            for op in ops[begin:end]:
                if not any(n in rename for n in op.output_arg_names):
                    continue  # all its outputs are kept
                ins = {s: [rename.get(n, n) for n in names] for s, names in op.inputs.items()}
                outs = {s: [rename.get(n, n) for n in names] for s, names in op.outputs.items()}
                for old in op.output_arg_names:
                    if old in rename and not block.has_var(rename[old]):
                        v = block._find_var_recursive(old)
                        block.create_var(name=rename[old], shape=v.shape, dtype=v.dtype, type=v.type,
                                         lod_level=v.lod_level, persistable=False)  # fmt: skip
                result.append(make(op.type, ins, outs, dict(op.attrs), None))
        if k is not None:
            for old, new in renames[k].items():
                g.rename_input(old, new)
        result.append(g)
    return result
