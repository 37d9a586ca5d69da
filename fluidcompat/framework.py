"""The Program IR: Program, Block and the default programs (Variable and Parameter in variable.py,
Operator and OpRole in operator.py; fluid-era code finds all of them here).

Torch-free. Shapes and dtypes are inferred when an op is appended, from the op's ``OpDef`` in
``fluidcompat_ops``; a failed layer call is rolled back by ``program_transaction``.
"""

from __future__ import annotations

import contextlib
import weakref
from collections import OrderedDict
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

from fluidcompat import collector, desc_order, descs, places, transaction
from fluidcompat.callsite import user_callsite as _user_callsite
from fluidcompat.callsite import warn_at_user as _warn_at_user
from fluidcompat.dtypes import VarType, to_vartype
from fluidcompat.lod_levels import share_lod_level
from fluidcompat.operator import _NO_ROLE_VAR, Operator, OpProtoHolder, OpRole  # noqa: F401  (fluid's names)
from fluidcompat.variable import (  # noqa: F401  (fluid's framework.Variable, framework.Parameter)
    GRAD_VAR_SUFFIX,
    Parameter,
    Variable,
    _check_recreated,
    _shape_tuple,
)
from fluidcompat_ops import registry
from fluidcompat_ops.protos import get_op_proto, has_proto

TEMP_VAR_NAME = "@TEMP@"
EMPTY_VAR_NAME = "@EMPTY@"


# each Block's C++-side variable log (Block._desc_log), kept beside the block
_DESC_LOGS: "weakref.WeakKeyDictionary[Block, List[Tuple[str, bool]]]" = weakref.WeakKeyDictionary()


class Block:
    """A list of ops over a table of variables; block 0 is the global block."""

    def __init__(self, program: "Program", idx: int, parent_idx: int = -1) -> None:
        self.program = program
        self.idx = idx
        self.parent_idx = parent_idx
        self.forward_block_idx = -1
        self.backward_block_idx = -1
        self.vars: Dict[str, Variable] = OrderedDict()  # fluid's type (scripts compare blocks by it)
        self.ops: List[Operator] = []

    @property
    def _desc_log(self) -> List[Tuple[str, bool]]:
        """The variables as fluid's C++ block would have taken them in: (name, added) in turn (NOTE:
        [Variable order] in fluidcompat/desc_order.py). It stands for the C++ block's state, so it is
        kept beside the block, not among its Python attributes (which fluid-era code compares)."""
        log = _DESC_LOGS.get(self)
        if log is None:
            log = _DESC_LOGS[self] = []
        return log

    @_desc_log.setter
    def _desc_log(self, log: List[Tuple[str, bool]]) -> None:
        _DESC_LOGS[self] = log

    def _desc_order(self) -> List[str]:
        """This block's variable names in the order of fluid's C++ block (a saved program's order)."""
        table = desc_order.replay(self._desc_log)
        for name in table.order():
            if name not in self.vars:
                table.erase(name)
        for name in self.vars:  # ones put in ``vars`` directly: as if added last
            table.insert(name)
        return table.order()

    def _set_desc_order(self, filled: Sequence[str]) -> None:
        """fluid rebuilt this block from a C++ block filled in ``filled``'s order: the variables now
        come in that block's order."""
        self._desc_log = [(n, True) for n in filled if n in self.vars]
        order = desc_order.replay(self._desc_log).order()
        self.vars = OrderedDict((n, self.vars[n]) for n in [*order, *self.vars])

    @property
    def desc(self) -> "descs.BlockDesc":
        return descs.BlockDesc(self)

    @property
    def parent_block(self) -> Optional["Block"]:
        return None if self.parent_idx < 0 else self.program.block(self.parent_idx)

    # -- variables -------------------------------------------------------------------------
    def create_var(self, **kwargs: Any) -> Variable:
        if _dygraph_tracer_ is not None:
            return _dygraph_tracer_.create_var(self, kwargs)
        name = kwargs.get("name")
        if name is not None and name in self.vars:
            var = self.vars[name]
            _check_recreated(var, kwargs)
            return var
        var = Variable(self, **kwargs)
        self.vars[var.name] = var
        self._desc_log.append((var.name, True))
        self.program._bump()
        return var

    def _reuse_or_create_var(self, **kwargs: Any) -> Variable:
        """The block's variable of this name as it is, else a new one: for the library's own
        variables, whose shapes inference may have refined since they were made."""
        var = self.vars.get(kwargs["name"])
        return var if var is not None and _dygraph_tracer_ is None else self.create_var(**kwargs)

    def create_parameter(self, **kwargs: Any) -> Parameter:
        if _dygraph_tracer_ is not None:
            return _dygraph_tracer_.create_parameter(self, kwargs)
        glob = self.program.global_block()
        name = kwargs.get("name")
        if name is not None and name in glob.vars:
            _check_recreated(glob.vars[name], dict(kwargs, persistable=True))
            if isinstance(glob.vars[name], Parameter):
                return glob.vars[name]
        kwargs.pop("initializer", None)
        param = Parameter(glob, **kwargs)
        glob.vars[param.name] = param
        glob._desc_log.append((param.name, True))
        self.program._bump()
        return param

    def has_var(self, name: str) -> bool:
        return name in self.vars

    def var(self, name: str) -> Variable:
        if not isinstance(name, str):
            raise TypeError(f"var require string as parameter, but get {type(name)} instead.")
        v = self.vars.get(name)
        if v is None and _dygraph_tracer_ is not None:
            v = _dygraph_tracer_.find_var(name)
        if v is None:
            raise ValueError(f"var {name} not in this block")
        return v

    def _find_var_recursive(self, name: str) -> Optional[Variable]:
        """This block's variable, else its forward block's (a grad block reads the forward values of
        the sub-block it differentiates), else its parent's, and so on."""
        frontier: List[Block] = [self]
        seen = set()
        while frontier:
            block = frontier.pop(0)
            if block.idx in seen:
                continue
            seen.add(block.idx)
            v = block.vars.get(name)
            if v is not None:
                return v
            if block.forward_block_idx >= 0:
                frontier.append(self.program.block(block.forward_block_idx))
            if block.parent_idx >= 0:
                frontier.append(self.program.block(block.parent_idx))
        if _dygraph_tracer_ is not None:
            return _dygraph_tracer_.find_var(name)
        return None

    def _var_recursive(self, name: str) -> Variable:
        v = self._find_var_recursive(name)
        if v is None:
            raise ValueError(f"Var {name} is not found recursively")
        return v

    def all_parameters(self) -> List[Parameter]:
        return [v for v in self.vars.values() if isinstance(v, Parameter)]

    def iter_parameters(self) -> Iterator[Parameter]:
        return iter(self.all_parameters())

    def _remove_var(self, name: str) -> None:
        transaction.before_structure_edit(self)
        if self.vars.pop(name, None) is not None:
            self._desc_log.append((name, False))
        self.program._bump()

    def _rename_var(self, name: str, new_name: str) -> Variable:
        """Rename a variable of this block, and every use of it by this block's ops."""
        transaction.before_structure_edit(self)
        var = self.vars.get(name)
        if var is None:
            raise ValueError(f"_rename_var: variable '{name}' is not in block {self.idx}")
        if new_name in self.vars:
            raise ValueError(f"_rename_var: block {self.idx} already has a variable '{new_name}'")
        del self.vars[name]
        var.name = new_name
        self.vars[new_name] = var
        self._desc_log += [(new_name, True), (name, False)]
        for op in self.ops:
            op._rename_input(name, new_name)
            op._rename_output(name, new_name)
            role_var = op.attrs.get("op_role_var")
            if role_var and name in role_var:  # fluid renamed it there too
                op.attrs["op_role_var"] = [new_name if n == name else n for n in role_var]
        self.program._bump()
        return var

    def _clone_variable(self, var: Variable, force_persistable: bool = True) -> Variable:
        """A variable of this block like ``var`` (persistable unless told otherwise), as fluid's."""
        new = var._copy_to(self)
        if isinstance(new, Parameter):
            new.__class__ = Variable
        if force_persistable:
            new.persistable = True
        self.vars[new.name] = new
        self._desc_log.append((new.name, True))
        self.program._bump()
        return new

    # -- ops -------------------------------------------------------------------------------
    def _adopt_foreign_inputs(self, inputs) -> None:
        """Declare here the input Variables that belong to another Program.

        Compat: fluid 1.8 appended such ops without declaring the variable, so the program later
        failed to feed or run; declaring a copy keeps the program valid.
        """
        for value in (inputs or {}).values():
            for v in value if isinstance(value, (list, tuple)) else [value]:
                if isinstance(v, Variable) and v.block.program is not self.program:
                    if self._find_var_recursive(v.name) is None:
                        glob = self.program.global_block()
                        glob.vars[v.name] = v._copy_to(glob)

    def _make_op(self, type: str, inputs, outputs, attrs) -> Operator:
        if type is None:  # fluid 1.8.5's texts, for a type fluid did not know either
            raise ValueError("`type` to initialized an Operator can not be None.")
        if not registry.has(type) and not has_proto(type):
            raise ValueError(f'Operator "{type}" has not been registered.')
        opdef = registry.lookup(type)
        self._adopt_foreign_inputs(inputs)
        ins = _normalize_slots(type, "input", opdef.inputs, inputs)
        outs = _normalize_slots(type, "output", opdef.outputs, outputs)
        full_attrs = dict(opdef.attrs)
        if attrs:
            for k, v in attrs.items():
                if isinstance(v, VarType):
                    v = int(v)
                full_attrs[k] = v
        prog = self.program
        full_attrs.setdefault("op_role", prog._op_role)
        full_attrs.setdefault("op_role_var", list(prog._op_role_var) if prog._op_role_var else _NO_ROLE_VAR)
        full_attrs.setdefault("op_namescope", _full_name_scope())
        device = places.current_device()
        if "op_device" not in full_attrs or not full_attrs["op_device"]:
            full_attrs["op_device"] = ""
            if device:
                if opdef.kernel is not None:
                    full_attrs["op_device"] = device
                else:
                    _warn_at_user(f"The Op({type}) is not support to set device.")
                if full_attrs.get("force_cpu"):
                    _warn_at_user(
                        f"The Attr(force_cpu) of Op({type}) will be deprecated in the future, please use "
                        "'device_guard' instead. 'device_guard' has higher priority when they are used at "
                        "the same time."
                    )
        op = Operator(self, type, ins, outs, full_attrs, opdef)
        op._callsite = _user_callsite()
        self._infer(op)
        return op

    def _infer(self, op: Operator) -> None:
        """Run the op's shape function and set its outputs' shapes and dtypes."""
        infer = op._def.infer_shape
        if infer is None:
            return
        ins = {}
        for slot, names in op.inputs.items():
            found = []
            for n in names:
                v = self._find_var_recursive(n)
                if v is None:
                    raise ValueError(
                        f"Op '{op.type}': input variable '{n}' (slot {slot}) is not declared in the program."
                    )
                found.append(v)
            ins[slot] = found
        try:
            result = infer(ins, op.attrs)
        except (ValueError, TypeError, IndexError) as e:
            raise type(e)(f"Op '{op.type}' cannot be built: {e}") from None
        for slot, specs in (result or {}).items():
            for name, spec in zip(op.outputs.get(slot, []), specs):
                if spec is None:
                    continue
                v = self._find_var_recursive(name)
                if v is None:
                    continue
                shape, dtype = spec
                if shape is not None:
                    v._shape = _shape_tuple(shape)
                if dtype is not None:
                    v._dtype = to_vartype(dtype)
        share_lod_level(op, self._find_var_recursive)

    def _link_outputs(self, op: Operator) -> None:
        for name in op.output_arg_names:
            v = self._find_var_recursive(name)
            if v is not None:
                v.op = op

    def append_op(
        self, type: str = None, inputs=None, outputs=None, attrs=None, stop_gradient: bool = False
    ) -> Operator:
        if _dygraph_tracer_ is not None:
            return _dygraph_tracer_.trace_op(type, inputs, outputs, attrs, stop_gradient)
        op = self._make_op(type, inputs, outputs, attrs)
        self.ops.append(op)
        self._link_outputs(op)
        self.program._bump()
        return op

    def _prepend_op(self, type: str, inputs=None, outputs=None, attrs=None) -> Operator:
        if _dygraph_tracer_ is not None:
            return _dygraph_tracer_.trace_op(type, inputs, outputs, attrs)
        op = self._make_op(type, inputs, outputs, attrs)
        transaction.before_prepend(self)
        self.ops.insert(0, op)
        self._link_outputs(op)
        self.program._bump()
        return op

    def _insert_op(self, index: int, type: str, inputs=None, outputs=None, attrs=None) -> Operator:
        if _dygraph_tracer_ is not None:
            return _dygraph_tracer_.trace_op(type, inputs, outputs, attrs)
        op = self._make_op(type, inputs, outputs, attrs)
        index = len(self.ops) if index > len(self.ops) else index if index >= 0 else max(0, len(self.ops) + index)
        transaction.before_structure_edit(self)
        self.ops.insert(index, op)
        self._shift_forward_links(index, 1)
        self._link_outputs(op)
        self.program._bump()
        return op

    def _remove_op(self, index: int) -> None:
        index = index if index >= 0 else len(self.ops) + index
        transaction.before_structure_edit(self)
        del self.ops[index]
        self._shift_forward_links(index, -1)
        self.program._bump()

    def _shift_forward_links(self, index: int, delta: int) -> None:
        """Keep each grad op's link to its forward op (block, position) right after an op of this
        block was inserted at (delta 1) or removed from (delta -1) ``index``."""
        for block in self.program.blocks:
            for op in block.ops:
                at = op._fwd_at
                if at is None or at[0] != self.idx or at[1] < index:
                    continue
                if delta < 0 and at[1] == index:
                    op._fwd_at = None  # its forward op is gone
                elif delta > 0 or at[1] > index:
                    op._fwd_at = (at[0], at[1] + delta)

    def to_string(self, throw_on_error: bool = True, with_details: bool = False) -> str:
        lines = [f"{{ // block {self.idx}"]
        for v in self.vars.values():
            lines.append("    " + v.to_string())
        lines.append("")
        for op in self.ops:
            lines.append("    " + op.to_string())
        lines.append("}")
        return "\n".join(lines)

    __str__ = to_string
    __repr__ = to_string


def _fluid_slots(op_type: str, kind: str) -> set:
    """The input or output slot names of fluid 1.8.5's proto of ``op_type`` (none for a type it lacked)."""
    if not has_proto(op_type):
        return set()
    proto = get_op_proto(op_type)
    return {v.name for v in (proto.inputs if kind == "input" else proto.outputs)}


def _normalize_slots(op_type: str, kind: str, known: Sequence[str], given) -> Dict[str, List[str]]:
    result: Dict[str, List[str]] = {slot: [] for slot in known}
    for slot, value in (given or {}).items():
        if slot not in result and slot in _fluid_slots(op_type, kind):
            result[slot] = []  # a slot fluid's op declared that fluidcompat's never fills (batch_norm's ReserveSpace)
        if slot not in result:
            raise ValueError(
                f"Op '{op_type}' has no {kind} slot '{slot}'. Expected one of {list(known)}, received: {slot!r}"
            )
        if value is None:
            continue
        if not isinstance(value, (list, tuple)):
            value = [value]
        names = []
        for v in value:
            if isinstance(v, Variable):
                names.append(v.name)
            elif isinstance(v, str):
                names.append(v)
            else:
                # None: an input the layer was not given, or a parameter it did not make (attr False)
                hint = " (an input of the layer left out, or its param_attr / bias_attr False?)" if v is None else ""
                raise TypeError(
                    f"Op '{op_type}' {kind} slot '{slot}' expects Variables or names, received: "
                    f"{type(v).__name__}{hint}"
                )
        result[slot] = names
    return result


_global_seed = 0  # Program.global_seed's: the random_seed of new programs


class Program:
    """A fluid Program: a list of Blocks, block 0 global.

    Compat: ``str(program)`` prints one line per variable and op (the readable form of later Paddle
    releases); fluid 1.8 printed protobuf text.
    """

    def __init__(self) -> None:
        self.blocks: List[Block] = [Block(self, 0)]
        self.current_block_idx = 0
        self.random_seed = _global_seed
        self._version = 0
        self._op_role = OpRole.Forward
        self._op_role_var: List[str] = []
        self._is_test = False
        self._pipeline_opt: Optional[dict] = None  # PipelineOptimizer's sections
        self._desc_dirty = False  # ops made or changed through the desc API wait for _sync_with_cpp
        self._appending_grad_times = 0  # backward passes made (their gradients' @RENAME@ suffixes)

    def _sync_with_cpp(self) -> None:
        """Complete the ops made or changed through the desc API (``block.desc.append_op()``, ``set_type``,
        ``copy_from``): their op definitions, and their outputs' links."""
        for block in self.blocks:
            for op in block.ops:
                if op._def is None and op.type and registry.has(op.type):
                    op._def = registry.lookup(op.type)
                    block._link_outputs(op)
        self._desc_dirty = False
        self._bump()

    def _bump(self) -> None:
        self._version += 1

    def _desc_state(self) -> Dict[int, Tuple[int, int, set]]:
        """Per block: how much of its variable log, how many ops and which variables it has now."""
        return {b.idx: (len(b._desc_log), len(b.ops), set(b.vars)) for b in self.blocks}

    def _take_backward_vars(self, before: Dict[int, Tuple[int, int, set]]) -> None:
        """Order the variables a backward pass added since ``before`` as fluid's did (NOTE:
        [Variable order]): its C++ blocks took them op by op (each new op's outputs, by slot name),
        and each Python block then appended its new ones in its C++ block's order."""
        for b in self.blocks:
            logged, n_ops, names = before.get(b.idx, (0, 0, set()))
            new = [n for n in b.vars if n not in names]
            if not new:
                continue
            fresh = set(new)
            created = dict.fromkeys(
                n for op in b.ops[n_ops:] for slot in sorted(op.outputs) for n in op.outputs[slot] if n in fresh
            )
            created.update(dict.fromkeys(new))
            del b._desc_log[logged:]
            b._desc_log += [(n, True) for n in created]
            rank = {n: i for i, n in enumerate(b._desc_order())}
            kept = [n for n in b.vars if n in names]
            b.vars = OrderedDict((n, b.vars[n]) for n in kept + sorted(new, key=rank.__getitem__))

    def global_seed(self, seed: int = 0) -> None:
        """This program's random seed, and that of every Program made after (fluid 1.8)."""
        global _global_seed
        _global_seed = self.random_seed = seed

    def global_block(self) -> Block:
        return self.blocks[0]

    def block(self, index: int) -> Block:
        return self.blocks[index]

    def current_block(self) -> Block:
        return self.blocks[self.current_block_idx]

    @property
    def num_blocks(self) -> int:
        return len(self.blocks)

    def _create_block(self, parent_idx: Optional[int] = None) -> Block:
        parent = self.current_block_idx if parent_idx is None else parent_idx
        block = Block(self, len(self.blocks), parent)
        self.blocks.append(block)
        self.current_block_idx = block.idx
        self._bump()
        return block

    def _rollback(self) -> None:
        self.current_block_idx = self.current_block().parent_idx

    def list_vars(self) -> Iterator[Variable]:
        for b in self.blocks:
            yield from b.vars.values()

    def all_parameters(self) -> List[Parameter]:
        return [p for b in self.blocks for p in b.all_parameters()]

    @contextlib.contextmanager
    def _optimized_guard(self, param_and_grads) -> Iterator[None]:
        old_role, old_var = self._op_role, self._op_role_var
        self._op_role = OpRole.Optimize
        self._op_role_var = [v.name if isinstance(v, Variable) else v for v in param_and_grads]
        try:
            yield
        finally:
            self._op_role, self._op_role_var = old_role, old_var

    @contextlib.contextmanager
    def _lr_schedule_guard(self, is_with_opt: bool = False) -> Iterator[None]:
        old_role, old_var = self._op_role, self._op_role_var
        self._op_role = OpRole.LRSched | (OpRole.Optimize if is_with_opt else 0)
        self._op_role_var = []
        try:
            yield
        finally:
            self._op_role, self._op_role_var = old_role, old_var

    @contextlib.contextmanager
    def _backward_role_guard(self) -> Iterator[None]:
        old = self._op_role
        self._op_role = OpRole.Backward
        try:
            yield
        finally:
            self._op_role = old

    @staticmethod
    def parse_from_string(binary_str) -> "Program":
        """A Program from the bytes of a serialized ProgramDesc (``program.desc.serialize_to_string()``
        here or in fluid 1.8, or a ``__model__`` file)."""
        from fluidcompat import proto

        return _program_from_records(proto.parse_program(bytes(binary_str)))

    @property
    def desc(self) -> "descs.ProgramDesc":
        """The program as fluid's ``core.ProgramDesc`` (``block(i)``, ``serialize_to_string()``, ...)."""
        return descs.ProgramDesc(self)

    def _names_used(self) -> set:
        """The names of the variables the program's ops read or write."""
        return {n for b in self.blocks for op in b.ops for n in op.input_arg_names + op.output_arg_names}

    def _prune(self, targets) -> "Program":
        """A copy holding only the ops ``targets`` (Variables, names or Operators) need."""
        return self._prune_with_input([], targets)

    def _prune_with_input(self, feeded_var_names, targets) -> "Program":
        """A copy holding only the ops of the global block needed to compute ``targets`` (Variables,
        variable names or Operators) when ``feeded_var_names`` are fed (the ops computing those go),
        and the variables those ops use. A variable target stands for the first op writing it, an
        optimizer op only when it is a target itself, as in fluid 1.8."""
        feeds = feeded_var_names if isinstance(feeded_var_names, list) else [feeded_var_names]
        targets = targets if isinstance(targets, list) else [targets]
        for name in feeds:
            if not isinstance(name, str):
                raise ValueError(
                    f"All feeded_var_names of Program._prune_with_input() can only be str, but received {type(name)}."
                )
        ops = self.global_block().ops
        fed = set(feeds)
        target_ops = {id(t) for t in targets if isinstance(t, Operator)}
        wanted = set()
        for t in targets:
            if isinstance(t, Operator):
                found = [i for i, op in enumerate(ops) if op is t]
                if not found:
                    raise ValueError(f"Program._prune_with_input: op {t.type} is not in the program's global block")
                wanted.add(found[0])
                continue
            if not isinstance(t, (Variable, str)):
                raise ValueError(
                    "All targets of Program._prune_with_input() can only be Variable or Operator, but received "
                    f"{type(t)}."
                )
            name = t.name if isinstance(t, Variable) else t
            if name in feeds:
                continue
            writer = next(
                (
                    i
                    for i, op in enumerate(ops)
                    if name in op.output_arg_names
                    and (not op.attrs.get("op_role", 0) & OpRole.Optimize or id(op) in target_ops)
                ),
                None,
            )
            if writer is None:
                raise ValueError(
                    "The target variable used for pruning should have an associated operator that generates it. "
                    f"Received: '{name}'"
                )
            wanted.add(writer)
        keep, needed = set(), set()
        for i in range(len(ops) - 1, -1, -1):
            outputs = set(ops[i].output_arg_names) - fed
            if i in wanted or needed & outputs:
                keep.add(i)
                needed.update(n for n in ops[i].input_arg_names if n not in fed)
        pruned = self.clone()
        block = pruned.global_block()
        block.ops = [op for i, op in enumerate(block.ops) if i in keep]
        used = pruned._names_used()
        block.vars = OrderedDict((n, v) for n, v in block.vars.items() if n in used or n in fed)
        # fluid's prune listed the variables by name, and the result was copied twice over
        block._set_desc_order(desc_order.copied(sorted(block.vars), 2))
        pruned._bump()
        return pruned

    @collector.pausing
    def clone(self, for_test: bool = False) -> "Program":
        """Copy the program; ``for_test=True`` drops backward and optimizer ops and sets ``is_test``."""
        p = Program()
        p.random_seed = self.random_seed
        if not for_test:  # the copy's next backward pass renames what earlier ones made (fluid 1.8.5's)
            p._appending_grad_times = getattr(self, "_appending_grad_times", 0)
        p.blocks = []
        for b in self.blocks:
            nb = Block(p, b.idx, b.parent_idx)
            nb.forward_block_idx = b.forward_block_idx
            nb.vars = OrderedDict((n, v._copy_to(nb)) for n, v in b.vars.items())
            nb.ops = [op._copy_to(nb) for op in b.ops]
            p.blocks.append(nb)
        # the order of fluid's copies (NOTE: [Variable order]): clone copied the C++ program once;
        # clone(for_test=True) five times when there was no backward, else rebuilt each block from
        # the variables its forward ops use (as a hash set holds them) and copied that three times
        trained = for_test and any(
            op.attrs.get("op_role", 0) == int(OpRole.Backward) | int(OpRole.Loss) for b in self.blocks for op in b.ops
        )
        fills = [
            b._desc_order()
            if not for_test
            else desc_order.copied(_forward_var_set(b) if trained else b._desc_order(), 3 if trained else 4)
            for b in self.blocks
        ]
        if for_test:
            p._is_test = True
            pruned = False
            for b in p.blocks:
                kept = [op for op in b.ops if not (op.attrs.get("op_role", 0) & (OpRole.Backward | OpRole.Optimize))]
                pruned = pruned or len(kept) < len(b.ops)
                b.ops = kept
                for op in b.ops:
                    if "is_test" in op.attrs:
                        op.attrs["is_test"] = True
            # as fluid 1.8, once backward or optimizer ops went, so did every variable no op left uses
            # (gradients, optimizer state, learning rate): save/load_persistables of the test program
            # then read and write the files fluid's would
            used = p._names_used()
            for b in p.blocks if pruned else ():
                for name in [n for n in b.vars if n not in used]:
                    del b.vars[name]
        for b in p.blocks:
            for op in b.ops:
                b._link_outputs(op)
        for b, fill in zip(p.blocks, fills):
            b._set_desc_order(fill)
        p._version = self._version  # a copy as changed as its original (programs equal as fluid's)
        return p

    def _copy_data_info_from(self, other: "Program", pruned_origin_block_id_map=None) -> None:
        """Mark this program's variables as ``other``'s (the program it was cloned or pruned from):
        data, checked feed, stop_gradient; ``pruned_origin_block_id_map``: this block -> ``other``'s."""
        if not isinstance(other, Program):
            raise TypeError(f"_copy_data_info_from is only used to copy Program, but received {type(other)}")
        origin = pruned_origin_block_id_map or {i: i for i in range(len(self.blocks))}
        for i, block in enumerate(self.blocks):
            if origin[i] >= len(other.blocks):
                raise ValueError(f"_copy_data_info_from: block {origin[i]} is not in the other program")
            other_block = other.blocks[origin[i]]
            for var in list(block.vars.values()):
                theirs = other_block.var(var.name)  # ValueError: not a variable of the other program
                var.is_data = var.is_data or theirs.is_data
                var.need_check_feed = var.need_check_feed or theirs.need_check_feed
                var.stop_gradient = var.stop_gradient or theirs.stop_gradient

    def validate(self) -> None:
        """Raise ValueError listing dangling inputs/outputs, unknown slots and unregistered ops."""
        problems = []
        for b in self.blocks:
            for i, op in enumerate(b.ops):
                if not registry.has(op.type):
                    problems.append(f"block {b.idx} op {i}: op type '{op.type}' is not registered")
                    continue
                for kind, slots, known in (
                    ("input", op.inputs, op._def.inputs),
                    ("output", op.outputs, op._def.outputs),
                ):
                    for slot, names in slots.items():
                        if slot not in known:
                            problems.append(f"block {b.idx} op {i} ({op.type}): unknown {kind} slot '{slot}'")
                        for n in names:
                            if b._find_var_recursive(n) is None:
                                problems.append(
                                    f"block {b.idx} op {i} ({op.type}): {kind} '{n}' (slot {slot}) is not declared"
                                )
                for attr in ("sub_block",):
                    sb = op.attrs.get(attr)
                    if isinstance(sb, int) and not 0 <= sb < len(self.blocks):
                        problems.append(f"block {b.idx} op {i} ({op.type}): sub_block {sb} does not exist")
        if problems:
            raise ValueError("Program is not valid:\n  " + "\n  ".join(problems))

    def to_string(self, throw_on_error: bool = True, with_details: bool = False) -> str:
        """The program, block by block: each variable, then one op per line with its inputs,
        outputs, attributes and ``op_device``.

        Compat: fluid 1.8.5 printed the ProgramDesc protobuf as text (a message per variable and
        attribute, variables in its hash table's order); the readable form is this project's.
        ``program.desc.serialize_to_string()`` gives fluid's bytes."""
        return "\n".join(b.to_string() for b in self.blocks)

    __str__ = to_string

    def __repr__(self) -> str:
        return self.to_string()


# -- default programs and guards ---------------------------------------------------------------
_main_program_ = Program()
_startup_program_ = Program()


def _forward_var_set(block: Block) -> List[str]:
    """The variables of ``block`` its forward ops use, in the order fluid's prune for a test program
    listed them: the inputs and the outputs each gathered into a hash set, op by op, and both sets
    poured into a third."""
    skip = int(OpRole.Backward) | int(OpRole.Optimize) | int(OpRole.LRSched)
    ins, outs = desc_order.HashOrder(), desc_order.HashOrder()
    for op in block.ops:
        if op.attrs.get("op_role", 0) & skip:
            continue
        for table, slots in ((ins, op.inputs), (outs, op.outputs)):
            for slot in sorted(slots):
                for name in slots[slot]:
                    table.insert(name)
    both = desc_order.HashOrder()
    both.insert_range(ins.order())
    both.insert_range(outs.order())
    return [n for n in both.order() if n in block.vars]


def variables_of(program: Program, items, missing, not_a_variable) -> List[Variable]:
    """``items`` (Variables or names of the global block's variables) as Variables; ``missing(name)``
    and ``not_a_variable(item)`` give the message of the error for a name not there and for an item
    that is neither."""
    found = []
    for v in items:
        if isinstance(v, str):
            var = program.global_block()._find_var_recursive(v)
            if var is None:
                raise ValueError(missing(v))
            v = var
        if not isinstance(v, Variable):
            raise TypeError(not_a_variable(v))
        found.append(v)
    return found


def default_main_program() -> Program:
    """The program layers append their ops to unless ``program_guard`` names another."""
    return _main_program_


def default_startup_program() -> Program:
    """The program that holds the initializers of the parameters layers create."""
    return _startup_program_


def switch_main_program(program: Program) -> Program:
    global _main_program_
    prev = _main_program_
    _main_program_ = program
    return prev


def switch_startup_program(program: Program) -> Program:
    global _startup_program_
    prev = _startup_program_
    _startup_program_ = program
    return prev


def _check_program_type(value, arg: str) -> None:
    if not isinstance(value, Program):
        raise TypeError(
            f"The type of '{arg}' in fluid.program_guard must be {Program!r}, but received {type(value)!r}. "
        )


@contextlib.contextmanager
def program_guard(main_program: Program, startup_program: Optional[Program] = None) -> Iterator[None]:
    """Make ``main_program`` (and ``startup_program``) the defaults inside the block."""
    _check_program_type(main_program, "main_program")
    if startup_program is not None:
        _check_program_type(startup_program, "startup_program")
    main = switch_main_program(main_program)
    startup = switch_startup_program(startup_program) if startup_program is not None else None
    try:
        yield
    finally:
        switch_main_program(main)
        if startup is not None:
            switch_startup_program(startup)


class _NameScope:
    """A node of fluid's name-scope tree: a prefix used again under the same parent gets ``_1``,
    ``_2``, ... for as long as the process runs (fluid never reset the tree)."""

    __slots__ = ("name", "parent", "children")

    def __init__(self, name: str = "", parent: Optional["_NameScope"] = None) -> None:
        self.name, self.parent = name, parent
        self.children: Dict[str, int] = {}

    def child(self, prefix: str) -> "_NameScope":
        used = self.children.get(prefix, 0)
        self.children[prefix] = used + 1
        return _NameScope(prefix if not used else f"{prefix}_{used}", self)


_name_scope = _NameScope()


CONTROL_DEP_VAR_PREFIX = "__control_var"


def generate_control_dev_var_name() -> str:
    """A fresh name for a variable that only orders ops (a dependency, no value), as fluid named them."""
    import random

    return CONTROL_DEP_VAR_PREFIX + "@" + str(random.random())


def _full_name_scope() -> str:
    names = []
    scope: Optional[_NameScope] = _name_scope
    while scope is not None:
        names.append(scope.name)
        scope = scope.parent
    return "/".join(reversed(names)) + "/"


@contextlib.contextmanager
def name_scope(prefix: Optional[str] = None) -> Iterator[None]:
    """Prefix the ``op_namescope`` attribute of ops appended inside the block: ``/prefix/`` under
    the enclosing scopes, ``/prefix_1/`` the second time the same scope opens it, and so on (as
    fluid 1.8). In dygraph mode it does nothing."""
    global _name_scope
    if in_dygraph_mode():
        yield
        return
    assert prefix, "namescope prefix can not be empty."
    _name_scope = _name_scope.child(prefix)
    try:
        yield
    finally:
        _name_scope = _name_scope.parent


# -- rollback of failed layer calls (fluidcompat/transaction.py) -------------------------------


def program_transaction(*programs: Program, deep: bool = False) -> Iterator[None]:
    """Undo every change to ``programs`` (default: the default main and startup programs) and to
    the name counters if the block raises (``transaction.program_transaction``)."""
    return transaction.program_transaction(*(programs or (_main_program_, _startup_program_)), deep=deep)


def layer(fn):
    """Decorator for layer functions: a call that raises leaves the programs as they were."""
    import functools

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if _dygraph_tracer_ is not None:  # nothing is built in dygraph mode
            return fn(*args, **kwargs)
        with program_transaction():
            return fn(*args, **kwargs)

    return wrapper


def grad_var_name(name: str) -> str:
    return name + GRAD_VAR_SUFFIX


# the dygraph Tracer while dygraph mode is on (set by fluidcompat.dygraph.base)
_dygraph_tracer_ = None


def in_dygraph_mode() -> bool:
    """Whether dygraph mode is on (inside ``fluid.dygraph.guard()``)."""
    return _dygraph_tracer_ is not None


def _dygraph_tracer():
    return _dygraph_tracer_


def _current_expected_place():
    return places.CPUPlace()


device_guard = places.device_guard


_REEXPORTS = {  # names fluid 1.8's framework module also offered
    "ComplexVariable": "fluidcompat.complex_variable",
    "cpu_places": "fluidcompat.places",
    "cuda_places": "fluidcompat.places",
    "cuda_pinned_places": "fluidcompat.places",
    "is_compiled_with_cuda": "fluidcompat.places",
    "get_flags": "fluidcompat.flags",
    "set_flags": "fluidcompat.flags",
    "require_version": "fluidcompat.flags",
    "convert_np_dtype_to_dtype_": "fluidcompat.dtypes",
    "dtype_is_floating": "fluidcompat.dtypes",
}
ZERO_VAR_SUFFIX = "@ZERO"


def _program_from_records(blocks) -> Program:
    """A Program from the blocks ``proto.parse_program`` read (a ``__model__`` file, a serialized
    ProgramDesc)."""
    program = Program()
    program.blocks = []
    for idx, parent, forward, vars_, _ in blocks:
        b = Block(program, idx, parent)
        b.forward_block_idx = forward
        for v in vars_:
            b.vars[v["name"]] = Variable(
                b,
                type=v["type"],
                name=v["name"],
                shape=v["shape"],
                dtype=v["dtype"],
                lod_level=v["lod_level"],
                persistable=v["persistable"],
                need_check_feed=v["need_check_feed"],
            )
        b._set_desc_order([v["name"] for v in vars_])
        program.blocks.append(b)
    for (_, _, _, _, ops), b in zip(blocks, program.blocks):
        for o in ops:
            if o["type"] in ("while_grad", "conditional_block_grad") and "inner_input_grads" not in o["attrs"]:
                raise NotImplementedError(
                    f"The program holds fluid's own backward of a control-flow op ({o['type']}, block {b.idx}), "
                    "which fluidcompat does not run: build the training program by running its script "
                    "(forward programs, such as inference models, load and run)."
                )
            opdef = registry.lookup(o["type"])
            inputs = {s: list(o["inputs"].get(s, [])) for s in opdef.inputs}
            inputs.update({s: n for s, n in o["inputs"].items() if s not in inputs})
            outputs = {s: list(o["outputs"].get(s, [])) for s in opdef.outputs}
            outputs.update({s: n for s, n in o["outputs"].items() if s not in outputs})
            attrs = dict(opdef.attrs)
            attrs.update(o["attrs"])
            op = Operator(b, o["type"], inputs, outputs, attrs, opdef)
            b.ops.append(op)
            b._link_outputs(op)
    return program


# the desc views make these (descs.py sits below this module)
descs.Program, descs.Operator = Program, Operator


def _get_var(name: str, program: Optional[Program] = None) -> Variable:
    """The variable ``name`` of ``program``'s global block (the default main program's)."""
    if not isinstance(name, str):
        raise TypeError(f"name should be a str. Received: {type(name).__name__}")
    return (program or default_main_program()).global_block().var(name)


def __getattr__(name):  # fluid 1.8 names fluidcompat lacks: UnsupportedAPIError
    if name.startswith("__"):
        raise AttributeError(name)
    if name in _REEXPORTS:
        import importlib

        return getattr(importlib.import_module(_REEXPORTS[name]), name)
    from fluidcompat.fluid18_names import unsupported

    return unsupported("paddle.fluid.framework")(name)
