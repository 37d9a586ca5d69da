"""A fluid Program's forward part (feeds -> fetches) as a ``torch.fx.GraphModule``.

Each fluid op becomes one ``call_module`` node: a ``FluidOp`` submodule holding the op's attributes
that calls the op's torch kernel (``fluidcompat_ops.registry``), so ``module.code`` reads as the
program did, one line per op::

    def forward(self, img):
        conv2d_0_tmp_0 = self.conv2d_0(img, self.conv2d_0_w_0)
        ...

Parameters and other persistables from the scope are registered on the module under fluid's names
made into attribute names (``fc_0.w_0`` -> ``fc_0_w_0``); ``module.fluid_names`` maps them back.

Control flow: fluid's ``cond`` / ``case`` / ``switch_case`` (two conditional_block ops whose outputs
select_input ops merge on one Mask) become ``torch.ops.higher_order.cond`` over two sub-GraphModules,
a ``while`` op (``while_loop``) ``torch.ops.higher_order.while_loop``; ONNX gets If and Loop.

# NOTE: [What exports]
# The module runs whatever the executor runs on dense tensors. torch.export (and ONNX, which starts
# from it) also needs each kernel to trace: a kernel that reads a tensor's value on the host (a shape
# from a ShapeTensor input, a LoD, fluid's tie order in top_k) makes a data-dependent shape or branch
# that the trace cannot follow. Such an op fails the export with an ``ExportError`` naming it
# (``formats.py``; a value read only for a check is kept as a run-time assertion: NOTE: [Checks on
# values]). Ops that can never export are refused here, before anything is built: LoD inputs, Python
# callbacks, readers, LoDTensorArrays, other control flow (recurrent, a lone conditional_block).
"""

from __future__ import annotations

import keyword
import operator
import re
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

import torch
import torch.fx
from torch._subclasses.fake_tensor import is_fake

from fluidcompat.dtypes import VarType
from fluidcompat.framework import Parameter, Program
from fluidcompat_ops import registry

# the feed and fetch ops of a saved inference model: the module's inputs and outputs replace them
_IO_OPS = ("feed", "fetch")
# attributes every fluid op carries that mean nothing to its kernel's result
_BOOKKEEPING = ("op_role", "op_role_var", "op_namescope", "op_callstack", "op_device", "with_quant_attr")
# variable types a dense tensor kernel cannot take
_NOT_DENSE = {
    VarType.READER: "reads from a reader (feed the model's inputs instead)",
    VarType.LOD_TENSOR_ARRAY: "uses a LoDTensorArray",
    VarType.SELECTED_ROWS: "uses SelectedRows",
    VarType.STEP_SCOPES: "uses step scopes (control flow)",
    VarType.LOD_RANK_TABLE: "uses a LoD rank table",
    VarType.RAW: "uses a raw variable",
}


class ExportError(ValueError):
    """A program (or one of its ops) that cannot be exported; the message is one line naming the op."""


@dataclass(frozen=True)
class TensorSpec:
    """A module input or output: fluid's variable name, the module's name for it, shape (-1 where the
    program left a dimension free) and torch dtype."""

    fluid_name: str
    name: str
    shape: Tuple[int, ...]
    dtype: torch.dtype


class FluidOp(torch.nn.Module):
    """One fluid op: calls its kernel on its input tensors (in slot order) with its attributes.

    Returns the op's output tensors: one tensor when it has one output, else a tuple in slot order.
    """

    def __init__(self, op, in_layout: Sequence[Tuple[str, int]], out_layout: Sequence[Tuple[str, int]]):
        super().__init__()
        self.type = op.type
        self.in_layout = tuple(in_layout)
        self.out_layout = tuple(out_layout)
        self.attrs = {k: v for k, v in op.attrs.items() if k not in _BOOKKEEPING}
        self._op = op  # read by a few kernels (elementwise_mul with a SelectedRows input, ...)
        self._kernel = op._def.kernel
        if not in_layout:  # an op with no tensor input makes its outputs on the module's device
            self.register_buffer("_where", torch.empty(0), persistent=False)

    def extra_repr(self) -> str:
        attrs = ", ".join(f"{k}={v!r}" for k, v in sorted(self.attrs.items()))
        return f"type={self.type!r}" + (f", {attrs}" if attrs else "")

    def forward(self, *tensors):
        ins: Dict[str, list] = {}
        at = 0
        for slot, n in self.in_layout:
            ins[slot] = list(tensors[at : at + n])
            at += n
        attrs = dict(self.attrs)
        attrs["_device"] = tensors[0].device if tensors else self._where.device
        attrs["_op"] = self._op
        try:
            result = self._kernel(ins, attrs)
        except ExportError:
            raise
        except Exception as e:
            if not any(is_fake(t) for t in tensors):
                raise  # (run eagerly: the kernel's own error, as the executor gives it)
            raise ExportError(_op_failure(self._op, e)) from e
        outs = []
        for slot, n in self.out_layout:
            got = result.get(slot) or []
            if len(got) < n:
                where = f"op {self.type} (#{self._op.idx}, output {_first_output(self._op)!r})"
                raise ExportError(f"{where} cannot export: its kernel gives no value for output {slot} in test mode")
            outs.extend(got[:n])
        return outs[0] if len(outs) == 1 else tuple(outs)


def _op_failure(op, e: Exception) -> str:
    """The one line saying why an op's kernel failed while tracing or running."""
    where = f"op {op.type} (#{op.idx}, output {_first_output(op)!r})"
    name = type(e).__name__
    text = str(e).strip().splitlines()[0] if str(e).strip() else name
    if "DataDependent" in name or "data-dependent" in str(e) or "data dependent" in str(e):
        return f"{where} cannot export: its kernel reads a tensor's value on the host, which torch.export cannot trace"
    return f"{where} failed: {name}: {text}"


def _first_output(op) -> str:
    for names in op.outputs.values():
        if names:
            return names[0]
    return ""


def attr_name(fluid_name: str, taken: set) -> str:
    """A valid, unused Python attribute name for a fluid variable name (``fc_0.w_0`` -> ``fc_0_w_0``)."""
    name = re.sub(r"\W", "_", fluid_name) or "_"
    if name[0].isdigit() or keyword.iskeyword(name):
        name = "_" + name
    base, k = name, 1
    while name in taken:
        name = f"{base}_{k}"
        k += 1
    taken.add(name)
    return name


def forward_program(program: Program, feed_names: Sequence[str], fetch_names: Sequence[str]) -> Program:
    """The ops computing ``fetch_names`` from ``feed_names`` (test mode, no feed and fetch ops).

    Compat: every op writing a value that is needed stays, as the executor runs them all (fluid's
    ``_prune_with_input`` keeps a value's first writer only: a while op updating its loop variables in
    place, or an op writing a value again, would fall out).
    """
    fwd = program.clone(for_test=True)
    block = fwd.global_block()
    fed = set(feed_names)
    needed = set(fetch_names) - fed
    keep = set()
    for op in reversed(block.ops):
        if op.type in _IO_OPS or not needed & {n for ns in op.outputs.values() for n in ns}:
            continue
        keep.add(op.idx)
        reads = {n for ns in op.inputs.values() for n in ns}
        if "sub_block" in op.attrs:
            reads.update(_reads(fwd.block(op.attrs["sub_block"])))
        needed |= reads - fed
    for k in reversed(range(len(block.ops))):
        if k not in keep:
            block._remove_op(k)
    return fwd


def _check_pruning(program: Program, fwd: Program, fetch_names: Sequence[str]) -> None:
    """Pruning keeps the ops a value needs by its name: an op that updates a value in place (a
    while op's loop variables) can fall out, and the module would return the value before it."""
    block = fwd.global_block()
    used = set(fetch_names) | {n for op in block.ops for ns in op.inputs.values() for n in ns}
    kept: Dict[str, int] = {}
    for op in block.ops:
        for n in {n for ns in op.outputs.values() for n in ns}:
            kept[n] = kept.get(n, 0) + 1
    writers: Dict[str, list] = {}
    for op in program.global_block().ops:
        if op.type in _IO_OPS:
            continue
        for n in {n for ns in op.outputs.values() for n in ns}:
            writers.setdefault(n, []).append(op)
    for n in sorted(used):
        v = block._find_var_recursive(n)
        ops = writers.get(n, [])
        if v is not None and not v.persistable and len(ops) > kept.get(n, 0):
            op = ops[-1]
            raise ExportError(
                f"op {op.type} (#{op.idx}, output {n!r}) cannot export: it updates {n!r} in place, and the "
                "forward part from the feeds keeps its first writer only (fetch a value computed from it)"
            )


def check_exportable(program: Program, feed_names: Sequence[str]) -> List[str]:
    """One line per op (or feed) of a forward program that cannot export; empty when all can."""
    block = program.global_block()
    problems = []
    for n in feed_names:
        v = block.var(n)
        if v.lod_level:
            problems.append(
                f"feed {n!r} is a LoDTensor (lod_level {v.lod_level}): LoD does not export; "
                "feed padded dense tensors instead"
            )
    _check_block(block, problems)
    return problems


def _check_block(block, problems: List[str]) -> None:
    merged = _merged_blocks(block)
    for op in block.ops:
        if op.idx in merged or op.type == "while":
            _check_block(block.program.block(op.attrs["sub_block"]), problems)
            continue
        why = _why_not(op, block)
        if why:
            where = f"#{op.idx}" if block.idx == 0 else f"#{op.idx} of block {block.idx}"
            problems.append(f"op {op.type} ({where}, output {_first_output(op)!r}) cannot export: {why}")


def _merged_blocks(block) -> set:
    """Indices of the conditional_block ops that export as a torch.cond branch: every output is read
    only by select_input ops of one cond group (``_cond_groups``)."""
    grouped = _cond_groups(block)
    readers: Dict[str, List[int]] = {}
    for op in block.ops:
        for ns in op.inputs.values():
            for n in ns:
                readers.setdefault(n, []).append(op.idx)
    found = set()
    for op in block.ops:
        if op.type == "conditional_block":
            outs = op.output("Out")
            if outs and all(readers.get(n) and all(k in grouped for k in readers[n]) for n in outs):
                found.add(op.idx)
    return found


def _why_not(op, block) -> Optional[str]:
    d = op._def
    if op.type == "conditional_block":
        return "its outputs are not merged by select_input as fluid's cond merges them (torch.cond needs two branches)"
    if (d.control or "sub_block" in op.attrs) and op.type != "while":
        return (
            "it runs a sub-block (control flow) that torch.cond does not take (only fluid's cond, case, switch_case do)"
        )
    if op.type == "py_func":
        return "it runs Python code of the script, which an exported model cannot hold"
    if d.kernel is None:
        return "it has no kernel"
    if d.reads_outputs:
        return "it updates its output in place"
    for slot, names in op.inputs.items():  # (an output nothing reads may be anything)
        if slot in d.optional_inputs:
            continue  # (build_module passes only its dense values: cudnn_lstm's Cache is none)
        for n in names:
            v = block._find_var_recursive(n)
            if v is None:
                continue
            why = _NOT_DENSE.get(v.type)
            if why:
                return f"it {why} ({n!r})"
            if v.lod_level and op.type.startswith(("sequence_", "lod_")):
                return f"it reads the LoD of {n!r}, which does not export"
    return None


def _not_dense(block, scope, name: str) -> bool:
    """An optional input's variable that holds no dense tensor for the module to take."""
    v = block._find_var_recursive(name)
    if v is None or v.type in _NOT_DENSE:
        return True
    if not v.persistable:
        return False
    sv = scope.find_var(name)
    return sv is None or not sv.is_initialized() or not torch.is_tensor(sv.get_tensor()._t)


def _learned(block) -> set:
    """Variables some op takes in a slot its grad op differentiates: the learned ones of a loaded model,
    whose variables are not Parameters (batch_norm's Mean and Variance are not learned: buffers)."""
    found = set()
    for op in block.ops:
        if op._def.grad is None or op._def.grad.maker is not None:
            continue
        _, _, in_grads = registry.grad_slots(op._def)
        for slot in in_grads:
            found.update(op.inputs.get(slot, ()))
    return found


def build_module(
    program: Program,
    feed_names: Sequence[str],
    fetch_names: Sequence[str],
    scope=None,
) -> torch.fx.GraphModule:
    """The forward part of ``program`` from ``feed_names`` to ``fetch_names`` as a GraphModule whose
    ``forward`` takes the feeds (in order) and returns a tuple of the fetches, with the parameters
    and other persistables it reads taken from ``scope`` (the global scope for None).

    Raises ``ExportError`` (one line naming the op) when an op cannot export.
    Compat: runs in test mode (``Program.clone(for_test=True)``: dropout and batch_norm as inference).
    """
    from fluidcompat.executor.scope import global_scope

    registry.bind_torch()
    scope = scope if scope is not None else global_scope()
    feed_names = list(feed_names)
    fetch_names = [f if isinstance(f, str) else f.name for f in fetch_names]
    for op in program.global_block().ops:  # (pruning stops at a feed: its writer would be lost)
        written = [n for ns in op.outputs.values() for n in ns if n in feed_names and op.type not in _IO_OPS]
        if written:
            raise ExportError(
                f"op {op.type} (#{op.idx}, output {written[0]!r}) cannot export: it overwrites the feed {written[0]!r}"
            )
    fwd = forward_program(program, feed_names, fetch_names)
    _check_pruning(program, fwd, fetch_names)
    problems = check_exportable(fwd, feed_names)
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise ExportError(problems[0] + more)
    block = fwd.global_block()
    builder = _Builder(fwd, scope, fetch_names)
    graph = torch.fx.Graph()
    env: Dict[str, torch.fx.Node] = {}
    inputs = []
    for n in feed_names:
        v = block.var(n)
        name = attr_name(n, builder.taken)
        env[n] = graph.placeholder(name)
        inputs.append(TensorSpec(n, name, tuple(v.shape), registry.TORCH_DTYPES[v.dtype]))

    def parameter(n: str) -> torch.fx.Node:
        env[n] = graph.get_attr(builder.parameter(n, block))
        return env[n]

    builder.emit(block, graph, builder.root, env, parameter)
    missing = [n for n in fetch_names if n not in env]
    if missing:
        raise ExportError(f"fetch target {missing[0]!r} is not computed from the feeds {feed_names}")
    graph.output(tuple(env[n] for n in fetch_names))
    module = _finish(builder.root, graph, "FluidProgram")
    module.fluid_names = builder.fluid_names
    module.inputs = tuple(inputs)
    module.outputs = tuple(
        TensorSpec(n, attr_name(n, set()), tuple(block.var(n).shape), registry.TORCH_DTYPES[block.var(n).dtype])
        for n in fetch_names
    )
    module.eval()
    return module


def _finish(root: torch.nn.Module, graph: torch.fx.Graph, class_name: str) -> torch.fx.GraphModule:
    module = torch.fx.GraphModule(root, graph, class_name=class_name)
    module.graph.eliminate_dead_code()  # outputs nothing reads (dropout's Mask, batch_norm's SavedMean)
    module.graph.lint()
    module.recompile()
    # the ops whose outputs nothing reads (fx's delete_all_unused_submodules would also drop the ops of
    # the torch.cond branches, which the graph reaches by get_attr)
    used = {n.target for n in module.graph.nodes if n.op in ("call_module", "get_attr")}
    for name in [n for n, _ in module.named_children()]:
        if name not in used:
            delattr(module, name)
    return module


def _predicate(mask):
    """select_input's Mask (int32 [1]) as torch.cond's predicate."""
    return mask.reshape(()) != 0


class _Builder:
    """Emits a program's ops into fx graphs; holds the module's parameters and names."""

    def __init__(self, program: Program, scope, fetch_names: Sequence[str]) -> None:
        self.program = program
        self.scope = scope
        self.root = torch.nn.Module()
        self.taken: set = {"forward", "training", "fluid_names", "inputs", "outputs"}
        self.fluid_names: Dict[str, str] = {}
        self.attrs: Dict[str, str] = {}  # fluid name -> attribute name
        self.learned = set()
        # the outputs something reads (a later op or the fetch list): the others may not be made at all
        # in test mode (dropout's Mask), so the module neither asks for nor returns them
        self.wanted = set(fetch_names)
        for b in program.blocks:
            self.learned |= _learned(b)
            for op in b.ops:
                self.wanted.update(n for ns in op.inputs.values() for n in ns)

    def parameter(self, n: str, block) -> str:
        """The attribute name of persistable ``n`` on the root module (registered on first use)."""
        if n in self.attrs:
            return self.attrs[n]
        v = block._find_var_recursive(n)
        if v is None or not v.persistable:
            raise ExportError(f"variable {n!r} is read before any op writes it and is not a feed or a parameter")
        sv = self.scope.find_var(n)
        if sv is None or not sv.is_initialized():
            raise ExportError(f"parameter {n!r} holds no value in the scope (run the startup program or load it)")
        t = sv.get_tensor()._t
        if not torch.is_tensor(t):
            raise ExportError(f"persistable {n!r} is not a dense tensor")
        name = attr_name(n, self.taken)
        t = t.detach().clone()
        if t.is_floating_point() and (v.trainable if isinstance(v, Parameter) else n in self.learned):
            self.root.register_parameter(name, torch.nn.Parameter(t))
        else:
            self.root.register_buffer(name, t)
        self.fluid_names[name] = n
        self.attrs[n] = name
        return name

    def emit(self, block, graph: torch.fx.Graph, holder: torch.nn.Module, env: Dict[str, torch.fx.Node], outer) -> None:
        """Append ``block``'s ops to ``graph`` (their FluidOps on ``holder``); ``outer(name)`` gives the
        node of a value the block reads but does not make."""
        conds = _cond_groups(block)
        done = set()
        for op in block.ops:
            if op.type == "conditional_block":
                continue  # emitted with the select_input ops that merge its outputs (_cond_groups)
            if op.type == "select_input" and op.idx in conds:
                group = conds[op.idx]
                if group[0] not in done:
                    done.add(group[0])
                    self._emit_cond(block, graph, holder, env, outer, [block.ops[k] for k in group])
                continue
            if op.type == "while":
                self._emit_while(op, graph, holder, env, outer)
                continue
            self._emit_op(op, block, graph, holder, env, outer)

    def _subgraph(self, block, names: Sequence[str], class_name: str, results) -> torch.fx.GraphModule:
        """``block``'s ops as a GraphModule taking ``names`` and returning ``results(env)``."""
        graph, taken = torch.fx.Graph(), set()
        env = {n: graph.placeholder(attr_name(n, taken)) for n in names}
        holder = torch.nn.Module()

        def missing(n):
            raise ExportError(f"variable {n!r} of block {block.idx} is read before any op writes it")

        self.emit(block, graph, holder, env, missing)
        graph.output(tuple(results(graph, env)))
        return _finish(holder, graph, class_name)

    def _emit_while(self, op, graph, holder, env, outer) -> None:
        """A while op as ``torch.ops.higher_order.while_loop``: its outputs (the loop variables, the
        condition among them) carried from step to step, the other values its block reads passed in."""
        sub = self.program.block(op.attrs["sub_block"])
        carried = list(op.output("Out"))
        cond_name = op.input("Condition")[0]
        if cond_name not in carried:
            raise ExportError(
                f"op while (#{op.idx}, output {cond_name!r}) cannot export: its block does not update its condition"
            )
        extra = [n for n in _reads(sub) if n not in carried]
        names = carried + extra
        at = carried.index(cond_name)
        cond_gm = _finish(torch.nn.Module(), _condition_graph(len(names), at), "FluidLoopCondition")

        def step(g, e):  # a value the body passes on unchanged is copied (while_loop's outputs must not alias)
            return [g.call_method("clone", (e[n],)) if e[n].op == "placeholder" else e[n] for n in carried]

        body_gm = self._subgraph(sub, names, "FluidLoopBody", step)
        cond_attr = attr_name(f"while_{op.idx}_cond", self.taken)
        body_attr = attr_name(f"while_{op.idx}_body", self.taken)
        holder.add_module(cond_attr, cond_gm)
        holder.add_module(body_attr, body_gm)
        args = (
            graph.get_attr(cond_attr),
            graph.get_attr(body_attr),
            tuple(self._value(n, env, outer) for n in carried),
            tuple(self._value(n, env, outer) for n in extra),
        )
        node = graph.create_node("call_function", torch.ops.higher_order.while_loop, args, name=f"while_{op.idx}")
        for k, n in enumerate(carried):
            env[n] = graph.create_node("call_function", operator.getitem, (node, k), name=attr_name(n, self.taken))

    def _value(self, n, env, outer):
        return env[n] if n in env else outer(n)

    def _emit_op(self, op, block, graph, holder, env, outer) -> None:
        in_layout, args = [], []
        for slot in op._def.inputs + tuple(s for s in op.inputs if s not in op._def.inputs):
            names = op.inputs.get(slot) or []
            if slot in op._def.optional_inputs and any(_not_dense(block, self.scope, n) for n in names):
                continue
            if names:
                in_layout.append((slot, len(names)))
                args.extend(self._value(n, env, outer) for n in names)
        # outputs up to the last one wanted, per slot (a slot's values come as a list)
        out_layout, outs = [], []
        for slot, names in op.outputs.items():
            last = max((k + 1 for k, n in enumerate(names) if n in self.wanted), default=0)
            if last:
                out_layout.append((slot, last))
                outs.extend(names[:last])
        if not outs:
            return
        mod_name = attr_name(
            f"{op.type}_{op.idx}" if block.idx == 0 else f"{op.type}_b{block.idx}_{op.idx}", self.taken
        )
        holder.add_module(mod_name, FluidOp(op, in_layout, out_layout))
        one = len(outs) == 1
        name = attr_name(outs[0] if one else f"{op.type}_{op.idx}_out", self.taken)
        node = graph.create_node("call_module", mod_name, tuple(args), name=name)
        if one:
            env[outs[0]] = node
        for k, n in enumerate(outs if not one else ()):
            env[n] = graph.create_node("call_function", operator.getitem, (node, k), name=attr_name(n, self.taken))

    def _emit_cond(self, block, graph, holder, env, outer, selects) -> None:
        """fluid's cond (two conditional_blocks whose outputs select_input ops merge on one Mask) as one
        ``torch.cond``: the Mask's true branch runs the block making X[1], its false branch X[0]."""
        makers = _makers(block)
        first = selects[0]
        blocks = [self.program.block(makers[first.input("X")[k]].attrs["sub_block"]) for k in (0, 1)]
        reads = sorted(set(_reads(blocks[0])) | set(_reads(blocks[1])))
        operands = [self._value(n, env, outer) for n in reads]
        branches = []
        for k, sub in ((1, blocks[1]), (0, blocks[0])):
            sub_graph = torch.fx.Graph()
            sub_env = {n: sub_graph.placeholder(attr_name(n, set())) for n in reads}
            sub_holder = torch.nn.Module()

            def missing(n, sub=sub):
                raise ExportError(f"variable {n!r} of block {sub.idx} is read before any op writes it")

            self.emit(sub, sub_graph, sub_holder, sub_env, missing)
            results = [sub_env.get(op.input("X")[k]) for op in selects]
            if any(r is None for r in results):
                raise ExportError(f"op conditional_block (block {sub.idx}) does not make the value select_input reads")
            sub_graph.output(tuple(results))
            name = attr_name(f"cond_{first.idx}_{'true' if k else 'false'}", self.taken)
            holder.add_module(name, _finish(sub_holder, sub_graph, "FluidBlock"))
            branches.append(graph.get_attr(name))
        pred = graph.call_function(_predicate, (self._value(first.input("Mask")[0], env, outer),))
        # the operator itself, not torch.cond, which would compile the branches with dynamo (the kernels are
        # Python that dynamo breaks on); torch.export traces the operator's branches with make_fx
        cond = torch.ops.higher_order.cond
        node = graph.create_node(
            "call_function", cond, (pred, branches[0], branches[1], tuple(operands)), name=f"cond_{first.idx}"
        )
        for k, op in enumerate(selects):
            out = op.output("Out")[0]
            env[out] = graph.create_node("call_function", operator.getitem, (node, k), name=attr_name(out, self.taken))


def _condition_graph(count: int, at: int) -> torch.fx.Graph:
    """A while loop's condition: the ``at``-th of ``count`` values as a predicate."""
    graph = torch.fx.Graph()
    values = [graph.placeholder(f"v{k}") for k in range(count)]
    graph.output(graph.call_function(_predicate, (values[at],)))
    return graph


def _makers(block) -> Dict[str, object]:
    """Output name -> the conditional_block op of ``block`` that writes it."""
    return {n: op for op in block.ops if op.type == "conditional_block" for n in op.output("Out")}


def _cond_groups(block) -> Dict[int, Tuple[int, ...]]:
    """select_input op index -> the indices of the select_input ops merging the same two conditional
    blocks on the same Mask (fluid's cond with several outputs); only those whose both inputs come
    from conditional_block ops with a scalar condition."""
    makers = _makers(block)
    groups: Dict[tuple, List[int]] = {}
    for op in block.ops:
        xs = op.input("X") if op.type == "select_input" else []
        if len(xs) != 2 or not all(n in makers and makers[n].attrs.get("is_scalar_condition") for n in xs):
            continue
        key = (op.input("Mask")[0], makers[xs[0]].idx, makers[xs[1]].idx)
        groups.setdefault(key, []).append(op.idx)
    return {k: tuple(g) for g in groups.values() for k in g}


def _reads(block) -> List[str]:
    """Names ``block`` (with the blocks its ops run) reads before writing them, in order."""
    written, found = set(), []
    for op in block.ops:
        names = [n for ns in op.inputs.values() for n in ns]
        if "sub_block" in op.attrs:
            names += _reads(block.program.block(op.attrs["sub_block"]))
        for n in names:
            if n not in written and n not in found:
                found.append(n)
        written.update(n for ns in op.outputs.values() for n in ns)
    return found
