"""``fluid.backward``: append the backward pass to a Program as ordinary ``<type>_grad`` ops.

Names follow fluid 1.8: ``x@GRAD`` for gradients, ``x@GRAD@RENAME@block0@N`` for the separate
contributions to a gradient that several ops produce, added up by a ``sum`` op, and a
``fill_constant`` seeding ``loss@GRAD``. Torch-free.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Dict, List, Optional, Sequence, Set, Tuple

from fluidcompat import collector
from fluidcompat.dtypes import FLOAT_TYPES, VarType
from fluidcompat.framework import (
    EMPTY_VAR_NAME,
    GRAD_VAR_SUFFIX,
    Block,
    Operator,
    OpRole,
    Program,
    Variable,
    program_transaction,
)
from fluidcompat_ops import registry

__all__ = ["append_backward", "gradients", "calc_gradient"]


class _GradOp:
    """A grad op before it is appended: its pieces are renamed by the add-up pass first."""

    def __init__(self, type: str, inputs, outputs, attrs, fwd: Optional[Operator]) -> None:
        self.type = type
        self.inputs: Dict[str, List[str]] = {k: list(v) for k, v in inputs.items()}
        self.outputs: Dict[str, List[str]] = {k: list(v) for k, v in outputs.items()}
        self.attrs = attrs
        self.fwd = fwd

    def input_names(self) -> List[str]:
        return [n for names in self.inputs.values() for n in names]

    def rename_input(self, old: str, new: str) -> None:
        for names in self.inputs.values():
            names[:] = [new if n == old else n for n in names]

    def rename_output(self, old: str, new: str) -> None:
        for names in self.outputs.values():
            names[:] = [new if n == old else n for n in names]


def _grad_name(name: str) -> str:
    return name + GRAD_VAR_SUFFIX


_append_grad_suffix_ = _grad_name  # fluid's name for it


def _as_list(x) -> list:
    """``x`` as a list: None is empty, a list or tuple its items, anything else one item."""
    if x is None:
        return []
    return list(x) if isinstance(x, (list, tuple)) else [x]


def _get_stop_gradients_(program: Program) -> List[Set[str]]:
    """Per block of ``program``, the names of its variables that stop gradients."""
    return [{n for n, v in block.vars.items() if v.stop_gradient} for block in program.blocks]


def _forward_name(grad_name: str) -> str:
    name = grad_name.split(GRAD_VAR_SUFFIX)[0]
    while name.startswith("grad/"):  # a later backward pass's name (_rename_earlier_grads)
        name = name[len("grad/") :]
    return name


def _names(items) -> Set[str]:
    result = set()
    for v in items or ():
        result.add(v.name if isinstance(v, Variable) else v)
    return result


def _differentiable(var: Optional[Variable]) -> bool:
    return var is not None and var.dtype in FLOAT_TYPES and var.type in _GRAD_TYPES


_GRAD_TYPES = (VarType.LOD_TENSOR, VarType.SELECTED_ROWS, VarType.LOD_TENSOR_ARRAY)


def _is_array(block: Block, name: str) -> bool:
    var = block._find_var_recursive(_forward_name(name))
    return var is not None and var.type == VarType.LOD_TENSOR_ARRAY


def _no_grad_names(block: Block, no_grad_set) -> Set[str]:
    names = _names(no_grad_set)
    for b in block.program.blocks:
        names.update(n for n, v in b.vars.items() if v.stop_gradient)
    return names


def _path(block: Block, ops: Sequence[Operator], targets: Set[str], no_grad: Set[str], sources=None):
    """The ops on the way to the targets with an input that takes a gradient, and the variables
    needing grads. As in fluid 1.8, an input takes one unless it stops gradients (``stop_gradient``,
    ``no_grad_set``) or is not floating point, whether or not a parameter lies behind it: ``1.0 -
    cast(terminal)`` gets its scale grad ops though only data lies behind it (fluid's op list).
    With ``sources`` (``fluid.gradients``' inputs) only ops that depend on them count."""
    if sources is not None:
        reached = set(sources)
        kept = []
        for op in ops:
            if op._def.grad is not None and reached.intersection(op.input_arg_names):
                reached.update(n for n in op.output_arg_names if n not in no_grad)
                kept.append(op)
        ops = kept
    need = set(targets)
    on_path = []

    def grad_flows_in(op: Operator, name: str) -> bool:
        if name in no_grad:
            return False
        var = block._find_var_recursive(name)
        # fluid's cast is differentiated whatever its input's type: a mask cast from a comparison gets
        # a cast of its gradient back to bool in fluid's program (one op computing nothing used)
        return _differentiable(var) or (op.type == "cast" and var is not None)

    for op in reversed(ops):
        d = op._def
        if d.grad is None or not need.intersection(op.output_arg_names):
            continue
        _, _, in_slots = registry.grad_slots(d)
        inputs = [n for s in in_slots for n in op.inputs.get(s, ()) if grad_flows_in(op, n)]
        if inputs:
            on_path.append(op)
            need.update(inputs)
    return on_path, need


class _SubBlockGrads:
    """What a control op's grad maker asks of backward: differentiate one of its sub-blocks into a
    new grad block (child of ``dest``, whose forward block is the sub-block)."""

    def __init__(self, dest: Block, no_grad: Set[str]) -> None:
        self.dest = dest
        self.no_grad = no_grad

    @staticmethod
    def grad_name(name: str) -> str:
        return _grad_name(name)

    def differentiable(self, name: str) -> bool:
        return name not in self.no_grad and _differentiable(self.dest._find_var_recursive(name))

    def differentiate(self, sub_idx: int, seeds: Dict[str, str]) -> Tuple[int, Set[str]]:
        """Append the backward of block ``sub_idx`` for targets ``seeds`` (forward name -> the name its
        gradient is read from) to a new block; returns its index and the names its ops write."""
        program = self.dest.program
        for o, g in seeds.items():  # the seeds live where the grad op runs, as its other gradients do
            if self.dest._find_var_recursive(g) is None:
                fwd_var = self.dest._find_var_recursive(o)
                self.dest.create_var(
                    name=g, shape=fwd_var.shape, dtype=fwd_var.dtype, type=fwd_var.type, persistable=False
                )
        current = program.current_block_idx
        grad_block = program._create_block(parent_idx=self.dest.idx)
        program.current_block_idx = current
        grad_block.forward_block_idx = sub_idx
        fwd = program.block(sub_idx)
        _backward(fwd, {o: (g, None) for o, g in seeds.items()}, self.no_grad, dest=grad_block)
        return grad_block.idx, {n for op in grad_block.ops for n in op.output_arg_names}


def _make_grad_ops(
    block: Block, on_path: Sequence[Operator], grad_of: Dict[str, str], need: Set[str], ctx: _SubBlockGrads
):
    """Grad ops for the path (last forward op first), before renaming."""
    result: List[_GradOp] = []
    for op in on_path:
        d = op._def
        fwd_inputs, out_slots, in_slots = registry.grad_slots(d)
        out_grads = {s: [grad_of.get(n, EMPTY_VAR_NAME) for n in op.outputs.get(s, ())] for s in out_slots}
        if all(n == EMPTY_VAR_NAME for names in out_grads.values() for n in names):
            continue
        in_grads = {s: [_grad_name(n) if n in need else "" for n in op.inputs.get(s, ())] for s in in_slots}
        if not any(n for names in in_grads.values() for n in names):
            continue
        attrs = {k: v for k, v in op.attrs.items() if k not in ("op_role", "op_role_var", "op_namescope")}
        attrs["op_role"] = OpRole.Backward
        if d.grad.fill_missing:  # zeros for the outputs whose gradient nothing made, as fluid
            for s, names in out_grads.items():
                for k, n in enumerate(names):
                    if n == EMPTY_VAR_NAME:
                        fwd = op.outputs[s][k]
                        names[k] = _grad_name(fwd)
                        zeros = {"op_role": OpRole.Backward, "op_device": op.attrs.get("op_device", "")}
                        result.append(_GradOp("fill_zeros_like", {"X": [fwd]}, {"Out": [names[k]]}, zeros, op))
        if d.grad.maker is not None:
            made = d.grad.maker(op, out_grads, in_grads, ctx) if d.control else d.grad.maker(op, out_grads, in_grads)
            if not made:  # no gradient flows through this op (a py_func without backward_func)
                continue
            for t, ins, outs, extra in made:
                a = {"op_role": OpRole.Backward, "op_device": op.attrs.get("op_device", "")}
                a.update(extra)
                result.append(_GradOp(t, ins, outs, a, op))
        else:
            ins = {s: list(op.inputs.get(s, op.outputs.get(s, ()))) for s in fwd_inputs}
            ins.update({s + GRAD_VAR_SUFFIX: names for s, names in out_grads.items()})
            outs = {s + GRAD_VAR_SUFFIX: [n for n in names if n] for s, names in in_grads.items()}
            # keep positions of a multi-input slot: a missing grad there is the empty name
            for s, names in in_grads.items():
                if len(names) > 1 and not all(names):
                    outs[s + GRAD_VAR_SUFFIX] = [n or EMPTY_VAR_NAME for n in names]
            if d.grad.slot_names:  # a grad op's grad op: fluid's slot names (NOTE: [Grad of grad])
                rename = d.grad.slot_names
                ins = {rename.get(s, s): names for s, names in ins.items()}
                outs = {rename.get(s, s): names for s, names in outs.items()}
            result.append(_GradOp(d.grad.type or op.type + "_grad", ins, outs, attrs, op))
        for s, names in in_grads.items():
            for fwd_name, n in zip(op.inputs.get(s, ()), names):
                if n:  # (keyed by the variable: the gradient of x@GRAD is x@GRAD@GRAD)
                    grad_of[fwd_name] = n
    return result


def _add_up_repeated_outputs(ops: List[_GradOp], block_idx: int, adds_in_place=lambda name: False) -> List[_GradOp]:
    """Rename each extra contribution to a gradient and insert the ``sum`` that adds them up,
    right before the first op that reads the gradient (or at the end). Gradients of arrays are left
    alone: their writers add to them (NOTE: [Array values] in fluidcompat_ops/array.py)."""
    count: Dict[str, int] = defaultdict(int)
    renamed: Dict[str, List[str]] = {}
    first_writer: Dict[str, _GradOp] = {}
    result: List[_GradOp] = []

    def fresh(name: str) -> str:
        new = f"{name}@RENAME@block{block_idx}@{count[name]}"
        count[name] += 1
        return new

    def sum_op(name: str) -> _GradOp:
        return _GradOp("sum", {"X": renamed[name]}, {"Out": [name]}, {"op_role": OpRole.Backward}, None)

    for op in ops:
        for name in op.input_names():
            if GRAD_VAR_SUFFIX in name and len(renamed.get(name, ())) > 1:
                result.append(sum_op(name))
                renamed[name] = [name]
        for names in op.outputs.values():
            for i, name in enumerate(names):
                if name in ("", EMPTY_VAR_NAME) or adds_in_place(name):
                    continue
                if name in op.input_names():  # read and written (while_grad): from here on a new gradient
                    renamed[name] = [name]
                    first_writer[name] = op
                    continue
                if name not in renamed:
                    renamed[name] = [name]
                    first_writer[name] = op
                    continue
                if len(renamed[name]) == 1 and renamed[name][0] == name:
                    new_first = fresh(name)
                    writer = first_writer[name]
                    for ns in writer.outputs.values():
                        if name in ns:
                            ns[ns.index(name)] = new_first
                            break
                    renamed[name] = [new_first]
                new = fresh(name)
                names[i] = new
                renamed[name].append(new)
        result.append(op)
    for name, parts in renamed.items():
        if len(parts) > 1:
            result.append(sum_op(name))
    return result


def _create_grad_vars(block: Block, ops: Sequence[_GradOp]) -> None:
    for op in ops:
        sparse = op.type in ("lookup_table_grad", "lookup_table_v2_grad") and op.attrs.get("is_sparse")
        for names in op.outputs.values():
            for n in names:
                if n in ("", EMPTY_VAR_NAME) or block.has_var(n):
                    continue
                fwd = block._find_var_recursive(_forward_name(n))
                vtype = VarType.SELECTED_ROWS if sparse else VarType.LOD_TENSOR
                if fwd is not None and fwd.type == VarType.LOD_TENSOR_ARRAY:
                    vtype = VarType.LOD_TENSOR_ARRAY
                block.create_var(
                    name=n,
                    shape=fwd.shape if fwd is not None else None,
                    dtype=fwd.dtype if fwd is not None else VarType.FP32,
                    type=vtype,
                    persistable=False,
                )


def _append(block: Block, ops: Sequence[_GradOp], callbacks) -> None:
    """Append ``ops``; after each, call every callback with the block and fluid's context: the pass's
    gradient -> forward variable names, and the op just appended as ``__current_op_desc__``."""
    positions: Dict[int, Dict[int, int]] = {}  # forward block -> op -> index
    context: Dict[str, object] = {
        n: _forward_name(n)
        for g in ops
        for names in g.outputs.values()
        for n in names
        if GRAD_VAR_SUFFIX in n and "@RENAME@" not in n
    }
    for g in ops:
        attrs = dict(g.attrs)
        if g.fwd is not None:
            attrs.setdefault("op_device", g.fwd.attrs.get("op_device", ""))
        op = block.append_op(type=g.type, inputs=g.inputs, outputs=g.outputs, attrs=attrs)
        if g.fwd is not None:
            op._callsite = g.fwd._callsite
            fwd_block = g.fwd.block
            if id(fwd_block) not in positions:
                positions[id(fwd_block)] = {id(o): i for i, o in enumerate(fwd_block.ops)}
            op._fwd_at = (fwd_block.idx, positions[id(fwd_block)][id(g.fwd)])
        for cb in callbacks or ():
            context["__current_op_desc__"] = op.desc
            cb(block=block, context=context)


def _backward(
    block: Block,
    targets: Dict[str, Tuple[str, Optional[Operator]]],
    no_grad: Set[str],
    callbacks=None,
    stop_at: int = -1,
    dest: Optional[Block] = None,
    grad_times: int = 1,
    checkpoints: Sequence[str] = (),
    sources: Optional[Set[str]] = None,
) -> Dict[str, str]:
    """Append grad ops for ``targets`` (forward name -> (grad name, seed op's forward op)) of
    ``block``'s ops to ``dest`` (``block`` itself unless it is a grad block of a sub-block); with
    ``sources``, only for ops that depend on them. Returns the gradients renamed because an earlier
    backward pass had made them (``grad_times``)."""
    dest = block if dest is None else dest
    ops = block.ops[: stop_at + 1] if stop_at >= 0 else list(block.ops)
    on_path, need = _path(block, ops, set(targets), no_grad, sources)
    grad_of = {name: grad for name, (grad, _) in targets.items()}
    grad_ops = _make_grad_ops(block, on_path, grad_of, need, _SubBlockGrads(dest, no_grad))
    if checkpoints:
        from fluidcompat.recompute import recompute_grad_ops

        for op in ops:
            if "sub_block" in op.attrs:
                raise NotImplementedError(
                    f"Recompute does not support ops with a sub-block: op '{op.type}' "
                    f"({op.callsite_text()}); leave control flow out of the checkpointed part"
                )
        grad_ops = recompute_grad_ops(block, ops, grad_ops, checkpoints, _GradOp)
    grad_ops = _add_up_repeated_outputs(grad_ops, block.idx, lambda name: _is_array(dest, name))
    renamed = _rename_earlier_grads(dest, grad_ops, grad_times) if grad_times > 1 else {}
    _create_grad_vars(dest, grad_ops)
    _append(dest, grad_ops, callbacks)
    return renamed


def _rename_earlier_grads(block: Block, ops: Sequence[_GradOp], grad_times: int) -> Dict[str, str]:
    """A second (third, ...) backward pass names the gradients an earlier pass already made
    ``grad/`` * pass + name, as fluid 1.8 did, so both passes' values stay fetchable."""
    renamed: Dict[str, str] = {}
    for op in ops:
        for old, new in renamed.items():
            op.rename_input(old, new)
        for names in op.outputs.values():
            for i, name in enumerate(names):
                if GRAD_VAR_SUFFIX in name and name not in renamed and block.has_var(name):
                    renamed[name] = "grad/" * grad_times + name
                if name in renamed:
                    names[i] = renamed[name]
    return renamed


def _next_grad_times(program: Program) -> int:
    program._appending_grad_times = getattr(program, "_appending_grad_times", 0) + 1
    return program._appending_grad_times


@collector.pausing
def append_backward(loss: Variable, parameter_list=None, no_grad_set=None, callbacks=None, checkpoints=None):
    """Append the backward pass of ``loss`` and return ``[(param, param@GRAD), ...]``; when it
    raises, the program is left as it was.

    ``checkpoints`` (Variables or names): recompute the forward ops between them in the backward
    pass instead of keeping their outputs (see ``fluidcompat.recompute``).
    """
    if not isinstance(loss, Variable):
        raise TypeError(f"The type of 'loss' in append_backward must be Variable, but received {type(loss)}.")
    names = []
    for c in checkpoints or ():
        if not isinstance(c, (Variable, str)):
            raise TypeError(f"checkpoints must be Variables or names. Received: {type(c).__name__}")
        names.append(c.name if isinstance(c, Variable) else c)
    with program_transaction(loss.block.program, deep=bool(names)):
        return _append_backward(loss, parameter_list, no_grad_set, callbacks, names)


def _append_backward(loss: Variable, parameter_list, no_grad_set, callbacks, checkpoints=()):
    block = loss.block.program.global_block()
    if loss.block is not block:
        raise ValueError("append_backward supports a loss in the global block only")
    loss_op = loss.op
    if loss_op is None or loss_op.block is not block:
        raise ValueError(f"loss '{loss.name}' is not produced by an op of its program")
    numel = 1
    for d in loss.shape:
        numel *= d
    if loss.shape and all(d > 0 for d in loss.shape) and numel != 1:
        raise ValueError(
            "The loss must hold a single value (shape [1]) to seed backward with 1.0. "
            f"Received: {loss.name} with shape {tuple(loss.shape)}; reduce it with fluid.layers.mean first."
        )
    program: Program = block.program
    before = program._desc_state()
    loss_op.attrs["op_role"] = int(OpRole.Forward) | int(OpRole.Loss)
    if checkpoints:
        from fluidcompat.recompute import seed_dropouts

        seed_dropouts(block, loss_op.idx + 1)
    stop_at = loss_op.idx
    no_grad = _no_grad_names(block, no_grad_set)
    no_grad.update(p.name for p in block.all_parameters() if not p.trainable)
    grad = _grad_name(loss.name)
    block.create_var(name=grad, shape=loss.shape, dtype=loss.dtype, persistable=False)
    block.append_op(
        type="fill_constant",
        outputs={"Out": [grad]},
        attrs={
            "shape": [1],
            "value": 1.0,
            "dtype": int(loss.dtype),
            "force_cpu": False,
            "op_role": int(OpRole.Backward) | int(OpRole.Loss),
            "op_device": loss_op.attrs.get("op_device", ""),
        },
    )
    renamed = _backward(
        block, {loss.name: (grad, loss_op)}, no_grad, callbacks, stop_at, None, _next_grad_times(program), checkpoints
    )
    program._take_backward_vars(before)
    program._bump()

    if parameter_list is not None:
        unknown = [p for p in parameter_list if isinstance(p, str) and p not in block.vars]
        if unknown:  # fluid 1.8.5 left them out silently, and a typo trained nothing
            raise ValueError(f"parameter_list names variables the program does not have: {unknown}")
        params = [block.var(p) if isinstance(p, str) else p for p in parameter_list]
    else:
        params = [p for p in block.all_parameters() if p.trainable]
    params_grads = []
    last_writer: Dict[str, Operator] = {}  # each variable's last writing op (one pass, not one a parameter)
    for op in block.ops:
        for names in op.outputs.values():
            for n in names:
                last_writer[n] = op
    for p in params:
        gname = renamed.get(_grad_name(p.name), _grad_name(p.name))
        if p.name in no_grad or not block.has_var(gname):
            continue
        params_grads.append((p, block.var(gname)))
        op = last_writer.get(gname)
        if op is not None:
            role_var = [v for v in op.attrs.get("op_role_var", []) if v not in (p.name, gname)]
            op.attrs["op_role_var"] = role_var + [p.name, gname]
    return params_grads


def calc_gradient(targets, inputs, target_gradients=None, no_grad_set=None):
    """Gradients of ``targets`` with respect to ``inputs``: a list with None for an input the targets do
    not depend on, or for one input its gradient (or None) itself, as fluid 1.8.5; when it raises, the
    program is left as it was."""
    targets = [targets] if isinstance(targets, Variable) else list(targets)
    with program_transaction(targets[0].block.program):
        result = _gradients(targets, inputs, target_gradients, no_grad_set)
    return result[0] if len(result) == 1 else result


def gradients(targets, inputs, target_gradients=None, no_grad_set=None):
    """``fluid.gradients``: calc_gradient's result as a list; for one input the targets do not depend
    on, an empty list (fluid 1.8.5's)."""
    result = calc_gradient(targets, inputs, target_gradients, no_grad_set)
    if result is None:
        return []
    return result if isinstance(result, list) else [result]


def _gradients(targets, inputs, target_gradients, no_grad_set):
    inputs = [inputs] if isinstance(inputs, Variable) else list(inputs)
    if target_gradients is None:
        target_gradients = [None] * len(targets)
    elif isinstance(target_gradients, Variable):
        target_gradients = [target_gradients]
    if len(target_gradients) != len(targets):
        raise ValueError("Should have the same number of target_gradients as targets")
    block = targets[0].block.program.global_block()
    before = block.program._desc_state()
    first_new = len(block.ops)  # the seeds this pass appends count as written by it
    no_grad = _no_grad_names(block, no_grad_set) - {v.name for v in inputs}
    seeds: Dict[str, Tuple[str, Optional[Operator]]] = {}
    last = -1
    for target, tg in zip(targets, target_gradients):
        last = max(last, target.op.idx if target.op is not None else -1)
        if tg is not None:
            if tuple(tg.shape) != tuple(target.shape):
                raise ValueError(
                    f"The shapes of target gradient and target must match. Received: {target.name} "
                    f"{tuple(target.shape)} vs {tg.name} {tuple(tg.shape)}"
                )
            seeds[target.name] = (tg.name, target.op)
            continue
        grad = _grad_name(target.name)
        shape_name = target.name + "_shape"
        # a second backward over the same target reuses its seed's variables, as they are
        block._reuse_or_create_var(name=shape_name, dtype=VarType.INT32, shape=[len(target.shape)])
        block._reuse_or_create_var(name=grad, shape=target.shape, dtype=target.dtype)
        role = {"op_role": OpRole.Backward}
        block.append_op(type="shape", inputs={"Input": [target]}, outputs={"Out": [shape_name]}, attrs=role)
        block.append_op(
            type="fill_constant",
            inputs={"ShapeTensor": [shape_name]},
            outputs={"Out": [grad]},
            attrs=dict(role, shape=list(target.shape), value=1.0, dtype=int(target.dtype)),
        )
        seeds[target.name] = (grad, target.op)
    sources = {v.name for v in inputs}
    renamed = _backward(block, seeds, no_grad, None, last, None, _next_grad_times(block.program), sources=sources)
    block.program._take_backward_vars(before)
    block.program._bump()
    written = {n for op in block.ops[first_new:] for n in op.output_arg_names}
    result = []
    for v in inputs:  # None for an input this pass did not reach (an earlier pass's gradient is not it)
        g = renamed.get(_grad_name(v.name), _grad_name(v.name))
        result.append(block.var(g) if g in written and block.has_var(g) else None)
    return result


def grad_op_descs(op: Operator, no_grad_set=None):
    """fluid's ``core.get_grad_op_desc``: the grad op(s) of one forward op, appended nowhere, as
    ``OpDesc``s, and a map from each gradient variable they name to its forward variable."""
    if op._def.grad is None:
        return [], {}
    no_grad = _names(no_grad_set)
    grad_of = {n: _grad_name(n) for n in op.output_arg_names}
    need = {n for n in op.input_arg_names if n not in no_grad}
    made = _make_grad_ops(op.block, [op], grad_of, need, _SubBlockGrads(op.block, no_grad))
    descs, to_var = [], {}
    for g in made:
        opdef = registry.lookup(g.type) if registry.has(g.type) else None
        descs.append(Operator(None, g.type, g.inputs, g.outputs, dict(g.attrs), opdef).desc)
        for n in g.input_names() + [n for names in g.outputs.values() for n in names]:
            if GRAD_VAR_SUFFIX in n:
                to_var[n] = _forward_name(n)
    return descs, to_var


def __getattr__(name):  # fluid 1.8 names fluidcompat lacks: UnsupportedAPIError
    if name.startswith("__"):
        raise AttributeError(name)
    from fluidcompat.fluid18_names import unsupported

    return unsupported("paddle.fluid.backward")(name)
