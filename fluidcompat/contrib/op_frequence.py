"""``fluid.contrib.op_freq_statistic``: how often each op type, and each pair of adjacent op types,
occurs in a program's global block (what fluid 1.8.5 computed; its version needed Python 2)."""

from __future__ import annotations

from collections import OrderedDict

from fluidcompat.framework import Program

__all__ = ["op_freq_statistic"]


def op_freq_statistic(program):
    """(ops, pairs): ``[(op_type, count)]`` of the ops that write something other than a parameter, and
    ``[("producer->consumer", count)]`` over the non-parameter variables ops read, each sorted by
    count, most frequent first (ties in order of appearance)."""
    if not isinstance(program, Program):
        raise TypeError(f"The input type should be Porgram.But you passed in {type(program)}")
    block = program.global_block()
    parameters = {p.name for p in program.blocks[0].all_parameters()}
    ops = OrderedDict()
    for op in block.ops:
        if any(n not in parameters for n in op.output_arg_names):
            ops[op.type] = ops.get(op.type, 0) + 1
    producers = {}
    consumers = OrderedDict()
    for op in block.ops:
        for name in op.input_arg_names:
            if name in parameters:
                continue
            if name in producers:
                consumers.setdefault(op.type, []).append(producers[name][-1])
            else:
                print(f"Var's generate op is not found,{name}, {op.type}")
        for name in op.output_arg_names:
            producers.setdefault(name, []).append(op.type)
    pairs = OrderedDict()
    for op_type, ins in consumers.items():
        for producer in ins:
            key = f"{producer}->{op_type}"
            pairs[key] = pairs.get(key, 0) + 1
    by_count = lambda item: item[1]  # noqa: E731
    return sorted(ops.items(), key=by_count, reverse=True), sorted(pairs.items(), key=by_count, reverse=True)
