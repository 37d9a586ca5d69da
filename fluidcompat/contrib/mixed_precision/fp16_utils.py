"""The program rewrites behind automatic mixed precision, as fluid 1.8.5 made them.

``rewrite_program`` sorts the global block's ops into float16 and float32 ones and inserts the
``cast`` ops between them; ``update_role_var_grad`` moves the casts of parameter gradients back to
float32 after the backward pass; ``update_loss_scaling`` appends the dynamic loss-scaling rule.
"""

from __future__ import annotations

from typing import Dict, List, Optional

from fluidcompat.dtypes import VarType
from fluidcompat.framework import Block, Operator, OpRole, Program
from fluidcompat.layer_helper import fluid_layers as layers

__all__ = ["rewrite_program", "update_role_var_grad", "update_loss_scaling"]

# the variable kinds a cast applies to
_CASTABLE = (VarType.LOD_TENSOR, VarType.SELECTED_ROWS, VarType.LOD_TENSOR_ARRAY)
_SUFFIX = {VarType.FP16: "fp16", VarType.FP32: "fp32"}


def _producer_before(ops: List[Operator], upto: int, name: str) -> Optional[Operator]:
    """The last op before ``ops[upto]`` that writes ``name``."""
    for op in reversed(ops[:upto]):
        if name in op.output_arg_names:
            return op
    return None


def _classify(block: Block, amp_lists) -> Dict[int, str]:
    """id(op) -> "white" (float16) or "black" (float32); gray ops with no typed producer are left out."""
    kind: Dict[int, str] = {}
    black_names = set(amp_lists.black_varnames or ())
    producer: Dict[str, Operator] = {}  # each name's last writer among the ops before this one
    for op in block.ops:
        if black_names and black_names & set(op.input_arg_names + op.output_arg_names):
            kind[id(op)] = "black"
        elif op.type in amp_lists.black_list:
            kind[id(op)] = "black"
        elif op.type in amp_lists.white_list:
            kind[id(op)] = "white"
        elif op.type in amp_lists.gray_list:
            # a gray op follows its inputs: float32 if any comes from a float32 op, else float16 if
            # any comes from a float16 op, else it is left as built
            seen = set()
            for name in op.input_arg_names:
                prev = producer.get(name)
                if prev is None:
                    continue
                if kind.get(id(prev)) == "black" or prev.type in amp_lists.black_list:
                    seen.add("black")
                elif kind.get(id(prev)) == "white" or prev.type in amp_lists.white_list:
                    seen.add("white")
            if "black" in seen:
                kind[id(op)] = "black"
            elif "white" in seen:
                kind[id(op)] = "white"
        else:
            kind[id(op)] = "black"  # ops in no list stay in float32, for numerical safety
        producer.update(dict.fromkeys(op.output_arg_names, op))
    return kind


def _insert_casts(block: Block, op: Operator, idx: int, src: VarType, dest: VarType) -> int:
    """Cast ``op``'s ``src`` inputs to ``dest`` with cast ops inserted at ``idx`` (an input already cast
    earlier reuses that cast), and, going to float16, mark its float32 outputs float16. Returns the
    number of ops inserted."""
    inserted = 0
    to_half = src == VarType.FP32
    for slot in sorted(op.input_names):  # fluid's op desc lists its slots sorted
        if to_half and op.type == "batch_norm" and slot != "X":
            continue  # batch_norm keeps its scale, bias and statistics in float32
        for name in op.input(slot):
            var = block._find_var_recursive(name)
            if var is None or var.type not in _CASTABLE:
                continue
            if var.dtype == src:
                cast_name = f"{var.name}.cast_{_SUFFIX[dest]}"
                cast_var = block.vars.get(cast_name)
                if cast_var is None or cast_var.dtype != dest:
                    cast_var = block.create_var(name=cast_name, dtype=dest, persistable=False, stop_gradient=False)
                    block._insert_op(
                        idx,
                        type="cast",
                        inputs={"X": [var]},
                        outputs={"Out": [cast_var]},
                        attrs={"in_dtype": int(var.dtype), "out_dtype": int(dest)},
                    )
                    inserted += 1
                op._rename_input(var.name, cast_var.name)
                op._rename_output(var.name, cast_var.name)
            elif op.has_attr("in_dtype"):
                op._set_attr("in_dtype", int(dest))
    if to_half:
        for slot in sorted(op.output_names):
            if op.type == "batch_norm" and slot != "Y":
                continue
            for name in op.output(slot):
                var = block._find_var_recursive(name)
                if var is None or var.type not in _CASTABLE or var.dtype != VarType.FP32:
                    continue
                var._dtype = VarType.FP16
                if op.has_attr("out_dtype"):
                    op._set_attr("out_dtype", int(VarType.FP16))
    return inserted


def rewrite_program(main_prog: Program, amp_lists) -> None:
    """Sort the global block's ops into float16 (white list, and gray ops fed by float16 ops) and
    float32 (black list, gray ops fed by float32 ops, ops in no list) and insert the casts between
    them. Sub-blocks are left as built."""
    block = main_prog.global_block()
    kind = _classify(block, amp_lists)
    idx = 0
    while idx < len(block.ops):
        op = block.ops[idx]
        which = kind.get(id(op))
        n = 0
        if which == "black":
            n = _insert_casts(block, op, idx, VarType.FP16, VarType.FP32)
        elif which == "white":
            n = _insert_casts(block, op, idx, VarType.FP32, VarType.FP16)
        idx += n + 1


def update_role_var_grad(main_prog: Program, params_grads) -> None:
    """A float32 parameter gradient made by casting a float16 one: the cast becomes an optimize op and
    moves to the end of the block (after the whole backward pass), and the op that makes the float16
    gradient carries the parameter in its ``op_role_var``."""
    block = main_prog.global_block()
    for p, g in params_grads:
        op = g.op
        if op is None or op.type != "cast" or g.dtype != VarType.FP32:
            continue
        if not op.attrs.get("op_role", 0) & OpRole.Backward:
            raise ValueError(
                f"The cast op that makes gradient '{g.name}' of parameter '{p.name}' must be a backward op "
                f"(op_role {OpRole.Backward}); received op_role {op.attrs.get('op_role')}"
            )
        op.attrs.pop("op_role_var", None)
        half_name = op.input("X")[0]
        at = op.idx
        maker = _producer_before(block.ops, at, half_name)
        if maker is not None:
            maker._set_attr("op_role_var", [p.name, half_name] + list(maker.attrs.get("op_role_var") or []))
        op._set_attr("op_role", OpRole.Optimize)
        if at == len(block.ops) - 1:
            continue
        readers = [later.type for later in block.ops[at + 1 :] if g.name in later.input_arg_names]
        if readers:
            raise ValueError(
                f"The gradient '{g.name}' cast to float32 must be read by optimize ops only; "
                f"op '{readers[0]}' of the backward pass reads it"
            )
        block.ops.append(block.ops.pop(at))
        block.program._bump()


def update_loss_scaling(
    is_overall_finite,
    prev_loss_scaling,
    num_good_steps,
    num_bad_steps,
    incr_every_n_steps,
    decr_every_n_nan_or_inf,
    incr_ratio,
    decr_ratio,
) -> None:
    """Append the dynamic loss-scaling rule: after more than ``incr_every_n_steps`` finite steps in a row
    the scaling grows by ``incr_ratio`` (if it stays finite); after more than
    ``decr_every_n_nan_or_inf`` steps with a non-finite gradient (counted since the last finite one)
    it shrinks by ``decr_ratio``, never below 1. Either change resets both counters."""
    zero_steps = layers.fill_constant(shape=[1], dtype="int32", value=0)
    with layers.Switch() as switch:
        with switch.case(is_overall_finite):
            should_incr = layers.less_than(incr_every_n_steps, num_good_steps + 1)
            with layers.Switch() as on_finite:
                with on_finite.case(should_incr):
                    grown = prev_loss_scaling * incr_ratio
                    with layers.Switch() as keep_finite:
                        with keep_finite.case(layers.isfinite(grown)):
                            layers.assign(grown, prev_loss_scaling)
                        with keep_finite.default():
                            pass
                    layers.assign(zero_steps, num_good_steps)
                    layers.assign(zero_steps, num_bad_steps)
                with on_finite.default():
                    layers.increment(num_good_steps)
                    layers.assign(zero_steps, num_bad_steps)
        with switch.default():
            should_decr = layers.less_than(decr_every_n_nan_or_inf, num_bad_steps + 1)
            with layers.Switch() as on_bad:
                with on_bad.case(should_decr):
                    shrunk = prev_loss_scaling * decr_ratio
                    one = layers.fill_constant(shape=[1], dtype="float32", value=1.0)
                    with layers.Switch() as floor:
                        with floor.case(layers.less_than(shrunk, one)):
                            layers.assign(one, prev_loss_scaling)
                        with floor.default():
                            layers.assign(shrunk, prev_loss_scaling)
                    layers.assign(zero_steps, num_good_steps)
                    layers.assign(zero_steps, num_bad_steps)
                with on_bad.default():
                    layers.assign(zero_steps, num_good_steps)
                    layers.increment(num_bad_steps)
