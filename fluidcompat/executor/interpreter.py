"""The interpreter: turns a BlockPlan into prepared steps once, then runs them. The only caller of kernels."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

import torch

from fluidcompat import collector, places
from fluidcompat.executor.control_flow import run_sub_block
from fluidcompat.executor.errors import (  # noqa: F401  (EnforceNotMet ... are this module's API too)
    EnforceNotMet,
    PreconditionNotMetError,
    ResourceExhaustedError,
    UninitializedVariableError,
    _check_nan_inf,
    _op_error,
    _print_nan_inf,
)
from fluidcompat.executor.lod_sharing import _sharing_lod, uses_lod
from fluidcompat.executor.placement import BlockPlan, Copy, OpPlan
from fluidcompat.framework import EMPTY_VAR_NAME, OpRole
from fluidcompat_ops.array import add_values
from fluidcompat_ops.optim import ADAM_GROUP_OUTS, ADAM_GROUP_SLOTS, adam_group, adam_groupable
from fluidcompat_ops.python import EOFException
from fluidcompat_ops.registry import bind_torch
from fluidcompat_ops.sequence import lod_of, with_lod

bind_torch()


def _tensor_device(device: str) -> torch.device:
    """The torch device a tensor planned for ``device`` is allocated on (host memory when the GPU
    is emulated: places.tensor_device)."""
    return torch.device(places.tensor_device(device))


@dataclass
class Step:
    """One op, resolved: kernel, attributes with its device, slots as name tuples, copies, deletions."""

    plan: OpPlan
    kernel: Any
    attrs: Dict[str, Any]
    # (slot, names, per-name target device or None when no copy is planned)
    ins: Tuple[Tuple[str, Tuple[str, ...], Optional[Tuple[Optional[torch.device], ...]]], ...]
    outs: Tuple[Tuple[str, Tuple[str, ...]], ...]
    dels: Tuple[str, ...] = ()
    # values whose later readers need their shape only: made shape-only stubs after this op (fluid's
    # "no need buffer" variables), so that their memory goes now
    stubs: Tuple[str, ...] = ()
    # for the profiler: the AllOpDetail instance name, and the copies' event names
    unique: str = ""
    host_copies: frozenset = frozenset()
    copies: Dict[Tuple[str, str], Copy] = field(default_factory=dict)
    # slots whose variables may hold no value (read as None)
    optional: Tuple[Tuple[str, Tuple[str, ...]], ...] = ()
    # a control op's sub-block
    sub: Optional["PreparedBlock"] = None
    # a while op: the name of its Condition, read again before each pass over the sub-block
    loop_cond: str = ""
    # ... and, when the body writes it on a GPU, the name of each pass's read of it to the host
    cond_read: str = ""
    # a while op whose while_grad runs later: where its steps are recorded, and what each step writes
    record: str = ""
    written: Tuple[str, ...] = ()
    # (variable, key): before the op overwrites the variable, its value is kept under key for a grad
    # op that needs it (see _keep_overwritten_values)
    saves: Tuple[Tuple[str, str], ...] = ()
    # gradients of arrays this op writes: added to what they hold (NOTE: [Array values])
    adds: Tuple[str, ...] = ()
    # the profiler's event names for this op, per (name prefix, AllOpDetail)
    event_names: Dict[Tuple[str, bool], tuple] = field(default_factory=dict)
    # the kernel is one copy on a GPU (OpDef.copies_on_device): its event nests in compute
    device_copy: bool = False
    # the fill of the loss gradient (backward's first op): recorded as fluid's parallel executor
    # recorded its ScaleLossGradOpHandle, one 'Scale LossGrad' event without phases
    loss_grad: bool = False
    # the index of the GPU the kernel runs on (its GPU time is then taken with CUDA events), or None;
    # per planned copy between host and GPU, the GPU's index (NOTE: [Timing GPU ops])
    gpu: Optional[int] = None
    copy_gpus: Dict[Tuple[str, str], int] = field(default_factory=dict)


class PreparedBlock:
    """A block planned for one executor place and one set of feed/fetch names."""

    def __init__(
        self, plan: BlockPlan, keep: Sequence[str], free: bool = True, block_idx: int = -1, lod: Optional[bool] = None
    ) -> None:
        self.plan = plan
        # whether values may carry a LoD (NOTE: [LoD values] in fluidcompat_ops/sequence.py)
        self.lod = lod = uses_lod(plan.ops[0].op.block.program) if lod is None and plan.ops else bool(lod)
        self.block_idx = block_idx if block_idx >= 0 else (plan.ops[0].op.block.idx if plan.ops else 0)
        self.externals = {n: (_tensor_device(d) if d else None) for n, d in plan.externals.items()}
        self.optional_externals = plan.optional_externals
        steps: List[Step] = []
        for p in plan.ops:
            op = p.op
            d = op._def
            attrs = dict(op.attrs)
            attrs["_device"] = _tensor_device(p.device)
            attrs["_op"] = op  # for kernels that name their variables (print, py_func, assert)
            if op._def.forward:
                # the forward input slots whose gradients this grad op is asked for
                attrs["_wanted"] = frozenset(s[: -len("@GRAD")] for s, names in op.outputs.items() if names)
            copy_to = {(c.slot, c.var): _tensor_device(c.dst) for c in p.copies}
            ins, optional = [], []
            for slot, names in op.inputs.items():
                if slot in d.optional_inputs:
                    optional.append((slot, tuple(names)))
                    continue
                targets = tuple(copy_to.get((slot, n)) for n in names)
                ins.append((slot, tuple(names), targets if any(t is not None for t in targets) else None))
            optional.extend((slot, tuple(op.outputs[slot])) for slot in d.reads_outputs if op.outputs.get(slot))
            outs = tuple((slot, tuple(names)) for slot, names in op.outputs.items() if names)
            kernel = d.kernel
            if d.specialize is not None:
                kernel = d.specialize(attrs, frozenset(s for s, names in op.inputs.items() if names)) or kernel
            if lod and not d.control:
                kernel = _sharing_lod(kernel, op, d)
            step = Step(p, kernel, attrs, tuple(ins), outs)
            if attrs["_device"].type == "cuda":
                step.gpu = attrs["_device"].index or 0
            for c in p.copies:
                on_gpu = c.dst if c.dst.startswith("cuda") else c.src if c.src.startswith("cuda") else ""
                if on_gpu:
                    step.copy_gpus[(c.slot, c.var)] = int(on_gpu.partition(":")[2] or 0)
            step.optional = tuple(optional)
            if not d.control and not d.reads_outputs:
                step.adds = _array_grads(op)
            if d.control:
                # sub-block values stay in the run's variables until the run ends
                step.sub = PreparedBlock(
                    plan.subplans[p.index], keep=(), free=False, block_idx=op.attrs["sub_block"], lod=lod
                )
                if op.type == "while":
                    step.loop_cond = op.inputs["Condition"][0]
                    where = plan.subplans[p.index].locations.get(step.loop_cond, "cpu")
                    if where != "cpu":
                        step.cond_read = Copy(step.loop_cond, "Condition", where, "cpu", on_stream=True).kind
            role = op.attrs.get("op_role", 0)
            step.loss_grad = op.type == "fill_constant" and bool(role & OpRole.Backward) and bool(role & OpRole.Loss)
            first = next((names[0] for _, names in sorted(outs) if names), "")
            step.unique = f"{op.type}/{op.type}%{first}%"
            step.host_copies = frozenset((c.slot, c.var) for c in p.copies if c.slot in op._def.host_inputs)
            step.copies = {(c.slot, c.var): c for c in p.copies}
            step.device_copy = d.copies_on_device and p.device.startswith("cuda") and not _reads_an_array(op)
            steps.append(step)
        self.steps = steps
        # whether an op runs on a GPU (its kernel's GPU time is then taken with CUDA events)
        self.on_cuda = any(s.gpu is not None for s in steps)
        if self.on_cuda:  # (making a CUDAPlace does it too; this covers every way onto a GPU)
            places._float32_as_fluid()
        self._compiled = None  # the generated function run() calls (see _compile)
        self._profiled: Dict[Tuple[str, bool, bool, bool], Any] = {}  # ... that also records profiler events
        self.accelerators: Dict[Any, Any] = {}  # torch.compile / CUDA graph runners (executor._accelerator)
        self.fetch_names: Tuple[str, ...] = ()  # the run's fetch list (set by the executor)
        self.persist_outputs: Tuple[str, ...] = ()  # the persistables it writes (set by the executor)
        if free:  # the top block of a run
            _keep_overwritten_values(self)
            self._plan_deletions(set(keep))
            self._mark_recorded_loops(set(self.reads()))

    def _mark_recorded_loops(self, reads: set) -> None:
        """While ops whose StepScopes a while_grad reads record each step's values for it."""
        for s in self.steps:
            if s.sub is None:
                continue
            if s.loop_cond:
                name = s.plan.op.outputs.get("StepScopes", [""])[0]
                if name in reads:
                    s.record = name
                    s.written = tuple(dict.fromkeys(s.sub.writes()))
            s.sub._mark_recorded_loops(reads)

    def _plan_deletions(self, keep: set) -> None:
        """Free each temporary after its last reader (fluid's eager deletion); one that later readers
        need the shape of only is made a shape-only stub after its last other use."""
        last: Dict[str, int] = {}
        last_buffer: Dict[str, int] = {}
        for i, s in enumerate(self.steps):
            # a grad op's shape-only reads (a forward op's, such as shape's, would cost more than they free)
            d = s.plan.op._def
            shape_only = d.no_buffer_inputs if s.sub is None and d.forward else frozenset()
            reads = [names for slot, names, _ in s.ins if slot not in shape_only]
            reads += [names for _, names in s.optional]
            if s.sub is not None:
                reads.append(s.sub.reads())
            for names in reads:
                for n in names:
                    last[n] = i
                    last_buffer[n] = i
            for slot, names, _ in s.ins:
                if slot in shape_only:
                    for n in names:
                        last[n] = i
            for _, key in s.saves:
                last.setdefault(key, i)
            for _, names in s.outs:
                for n in names:
                    last.setdefault(n, i)
                    last[n] = max(last[n], i)
                    last_buffer[n] = max(last_buffer.get(n, i), i)
        per_step: Dict[int, List[str]] = {}
        stubs: Dict[int, List[str]] = {}
        for n, i in last.items():
            if n not in keep and n != EMPTY_VAR_NAME:
                per_step.setdefault(i, []).append(n)
                if n in last_buffer and last_buffer[n] < i:
                    stubs.setdefault(last_buffer[n], []).append(n)
        for i, s in enumerate(self.steps):
            s.dels = tuple(per_step.get(i, ()))
            s.stubs = tuple(stubs.get(i, ()))

    def run_instrumented(
        self,
        env: Dict[str, torch.Tensor],
        recorder=None,
        vlog=None,
        prefix: str = "",
        deletions: bool = False,
        check_nan_inf: bool = False,
    ) -> None:
        """``run`` that also records profiler events (per op: its span, its prepare_data /
        infer_shape / compute phases, the copies; AllOpDetail adds the ``type%first_output%``
        instance) and/or writes fluid's VLOG lines for each op and copy. ``deletions``: the freeing of
        each op's dead temporaries is its own ``eager_deletion`` event after the op (as fluid's
        parallel executor recorded it for a CompiledProgram) instead of part of the op's span.
        ``check_nan_inf``: FLAGS_check_nan_inf, each op's outputs checked (NOTE: [Checking for NaN
        and Inf]). Returns, when GPU times are taken and the last op's span ended on a GPU, (the CUDA
        event that ended it, the device index), for a fetch's span to start from (NOTE: [Timing GPU
        ops] in fluidcompat/profiler/events.py); else None."""
        gpu_timing = recorder is not None and recorder.wants_gpu_time and self.on_cuda
        if recorder is not None and vlog is None and not check_nan_inf:
            # a block without sub-blocks: its generated function that records the events
            key = (prefix, recorder.tracer == "AllOpDetail", deletions, gpu_timing)
            fn = self._profiled.get(key)
            if fn is None and all(s.sub is None for s in self.steps):
                fn = self._profiled[key] = _compile(self, profiled=key)
            if fn is not None:
                events = recorder.thread_events().events
                if gpu_timing:
                    return fn(env, events.append, recorder.gpu_timing(events))
                return fn(env, events.append)
        from fluidcompat.executor.scope import vartype_of
        from fluidcompat.logging import place_text, var_debug
        from fluidcompat.profiler.events import INNER_OP, ORDINARY, UNIQUE_OP, now_ns, span_end, span_start

        events = recorder.thread_events().events if recorder else []
        add = events.append
        Ev = _event_type()
        instance = recorder is not None and recorder.tracer == "AllOpDetail"
        if gpu_timing:  # NOTE: [Timing GPU ops] in fluidcompat/profiler/events.py
            gpu = recorder.gpu_timing(events)
            pend = gpu[2]
        chain = None  # (the CUDA event that ended the last timed span, its device) while spans follow
        env[EMPTY_VAR_NAME] = None
        for s in self.steps:
            op_type, base, ev_prepare, ev_infer, ev_compute, ev_unique = _event_names(s, prefix, instance)
            place = place_text(s.plan.device) if vlog else ""
            mark = len(recorder.pending_gpu) if gpu_timing else 0
            copies = []  # (indices the GPU time goes to, in compute) of this op's timed copies (_timed_copy)
            try:
                t0 = now_ns()
                for v, key in s.saves:
                    if v in env:
                        env[key] = env[v]
                if vlog:
                    vlog("operator", 1066, f"expected_kernel_key:{_kernel_key(s, env, place, vartype_of)}")
                ins = {}
                for slot, names, targets in s.ins:
                    if targets is None:
                        ins[slot] = [env[n] for n in names]
                        continue
                    vals = []
                    for n, t in zip(names, targets):
                        if t is None:
                            vals.append(env[n])
                            continue
                        c0 = now_ns()
                        c = s.copies[(slot, n)]
                        if vlog:
                            transform = (slot, n) not in s.host_copies
                            _log_copy(vlog, n, env[n], place_text(c.src), place_text(c.dst), transform)
                        phase = _copy_phase(s, slot, n)
                        dev = s.copy_gpus.get((slot, n)) if gpu_timing else None
                        if dev is None:
                            vals.append(_lod_to(env[n], t) if self.lod else env[n].to(t))
                            add(Ev(base + phase + c.kind, ORDINARY, c0, now_ns()))
                            chain = None
                        else:
                            move = (
                                functools.partial(_lod_to, env[n], t) if self.lod else functools.partial(env[n].to, t)
                            )
                            value, end = _timed_copy(
                                add, base + phase + c.kind, move, gpu, dev, copies, phase == "compute/", chain
                            )
                            vals.append(value)
                            chain = (end, dev)
                    ins[slot] = vals
                for slot, names in s.optional:
                    ins[slot] = [env.get(n) for n in names]
                t1 = now_ns()
                if s.sub is not None:  # a control op: no kernel phases; its sub-block's ops nest under it
                    chain = None
                    run_sub_block(
                        s,
                        ins,
                        env,
                        lambda: s.sub.run_instrumented(env, recorder, vlog, op_type + "/", False, check_nan_inf),
                        functools.partial(_recorded, add, base + s.cond_read) if s.cond_read else None,
                    )
                    t4 = now_ns()
                    if vlog:
                        vlog("operator", 180, f"{place} {_debug_string(s.plan.op, env, var_debug, vartype_of)}")
                    if instance:
                        add(Ev(ev_unique, UNIQUE_OP, t0, t4))
                    add(Ev(op_type, ORDINARY, t0, t4))
                    if gpu_timing:  # the GPU time of its copies and of the ops in its sub-block
                        up = [len(events) - 2, len(events) - 1] if instance else [len(events) - 1]
                        for p in recorder.pending_gpu[mark:]:
                            if p[0] is events:
                                p[1].extend(up)
                    if deletions:
                        _free(s, env, add, vlog, place)
                    else:
                        _free(s, env)
                    continue
                if deletions and s.loss_grad:  # as fluid's parallel executor: one event, no phases
                    chain = None
                    result = s.kernel(ins, s.attrs)
                    for slot, names in s.outs:
                        env[names[0]] = result[slot][0]
                    if check_nan_inf:
                        _check_nan_inf(s, env)
                    add(Ev(prefix + _SCALE_LOSS_GRAD, ORDINARY, t0, now_ns()))
                    _free(s, env, add, vlog, place)
                    continue
                add(Ev(ev_prepare, INNER_OP, t0, t1))
                prepare_at = len(events) - 1
                add(Ev(ev_infer, INNER_OP, t1, now_ns()))
                cuda = gpu_timing and s.gpu is not None
                if cuda:  # the kernel's GPU time, read when the profiler stops
                    g0 = span_start(gpu, s.gpu, chain)
                t2 = now_ns()
                result = s.kernel(ins, s.attrs) if not s.adds else _adding(s, ins, env)
                if cuda:
                    g1 = span_end(gpu, s.gpu)
                    chain = (g1, s.gpu)
                else:
                    chain = None
                for slot, names in s.outs:
                    vals = result.get(slot)
                    if vals is not None:
                        for n, v in zip(names, vals):
                            if n != EMPTY_VAR_NAME:
                                env[n] = v
                if check_nan_inf:
                    _check_nan_inf(s, env)
                t3 = now_ns()
                if s.device_copy:
                    add(Ev(ev_compute + _SAME_GPU, ORDINARY, t2, t3))
                add(Ev(ev_compute, INNER_OP, t2, t3))
                compute_at = len(events) - 1
                if vlog:
                    vlog("operator", 180, f"{place} {_debug_string(s.plan.op, env, var_debug, vartype_of)}")
                if not deletions:
                    _free(s, env)
                t4 = now_ns()
                if instance:
                    add(Ev(ev_unique, UNIQUE_OP, t0, t4))
                add(Ev(op_type, ORDINARY, t0, t4))
                if cuda or copies:  # the GPU times go to the timed events and to those enclosing them
                    up = [len(events) - 2, len(events) - 1] if instance else [len(events) - 1]
                    if cuda:
                        inner = [compute_at - 1, compute_at] if s.device_copy else [compute_at]
                        pend((events, inner + up, g0, g1, s.gpu))
                    for indices, in_compute in copies:
                        indices.extend([compute_at if in_compute else prepare_at] + up)
                if deletions:
                    _free(s, env, add, vlog, place)
            except EOFException:  # the end of a reader's pass, for the script to catch
                raise
            except Exception as e:  # noqa: BLE001  (re-raised with the op attached)
                raise _op_error(s, e, env) from e
        return chain

    def writes(self) -> List[str]:
        """Every variable the block's ops write, sub-blocks included."""
        names = []
        for s in self.steps:
            for _, ns in s.outs:
                names.extend(ns)
            names.extend(key for _, key in s.saves)
            if s.sub is not None:
                names.extend(s.sub.writes())
        return names

    def reads(self) -> List[str]:
        """Every variable the block's ops read, sub-blocks included."""
        names = []
        for s in self.steps:
            for _, ns, _ in s.ins:
                names.extend(ns)
            for _, ns in s.optional:
                names.extend(ns)
            if s.sub is not None:
                names.extend(s.sub.reads())
        return names

    def run(self, env: Dict[str, torch.Tensor]) -> None:
        """Run every step over ``env`` (name -> tensor), which holds the externals on entry.

        The first run turns the steps into one generated Python function (``_compile``): per op a
        kernel call with its slot dict spelled out, no loops over slots or per-step look-ups."""
        (self._compiled or self.compiled_function())(env)

    def compiled_function(self):
        """The generated function ``run`` calls (what torch.compile is given)."""
        if self._compiled is None:
            with collector.paused():
                self._compiled = _compile(self)
        return self._compiled


def _compile(block: "PreparedBlock", profiled: Optional[Tuple[str, bool, bool, bool]] = None):
    """One Python function running ``block``'s steps in order over ``env``: each step's kernel,
    attributes and slot names are constants of the generated code: per step, the values it saves
    for grad ops, its slot dict (planned copies included), the kernel (or the sub-block runner, or
    the array-gradient adder), its outputs into ``env`` and the deletions after it. An error is
    reported for the step that raised it.

    ``profiled=(prefix, all_op_detail, deletions, gpu_timing)``: the function also takes ``add`` (an
    event list's append) and records what ``run_instrumented`` records for ops without sub-blocks:
    per op its span and its prepare_data / infer_shape / compute phases, each copy, with AllOpDetail
    its instance, with ``deletions`` an ``eager_deletion`` event after each op that frees
    temporaries, and with ``gpu_timing`` the GPU time of each GPU op's kernel (a third argument,
    ``Recorder.gpu_timing``'s tuple: NOTE: [Timing GPU ops] in fluidcompat/profiler/events.py)."""
    from fluidcompat.profiler.events import INNER_OP, ORDINARY, UNIQUE_OP, now_ns

    consts: Dict[str, Any] = {
        "_EMPTY": EMPTY_VAR_NAME,
        "_EOF": EOFException,
        "_op_error": _op_error,
        "_adding": _adding,
        "_run_sub_block": run_sub_block,
        "_STEPS": block.steps,
        "_now": now_ns,
        "_mk": tuple.__new__,
        "_Ev": _event_type(),
        "_ORD": ORDINARY,
        "_INNER": INNER_OP,
        "_UNIQUE": UNIQUE_OP,
        "_adam_group": adam_group,
    }
    gpu = bool(profiled and profiled[3])
    head = "def run(env, add, gpu):" if gpu else "def run(env, add):" if profiled else "def run(env):"
    lines = [head, "    _mark, _streams, _pend, _events = gpu"] if gpu else [head]
    lines += ["    env[_EMPTY] = None", "    i = 0", "    try:"]

    emitter = _StepEmitter(block, profiled, consts)
    step_lines = emitter.lines

    groups = {} if profiled else _adam_groups(block)
    emit = lines.append
    i = 0
    while i < len(block.steps):
        end = groups.get(i)
        if end is None:
            lines.extend(step_lines(i, block.steps[i]))
            i += 1
            continue
        # NOTE: [Grouped adam]: the group at once, or (a sparse gradient, mixed dtypes) one by one
        members = tuple(
            tuple(block.steps[j].plan.op.inputs[slot][0] for slot in ADAM_GROUP_SLOTS)
            + tuple(block.steps[j].plan.op.outputs[slot][0] for slot in ADAM_GROUP_OUTS)
            for j in range(i, end)
        )
        consts[f"_G{i}"], consts[f"_A{i}"] = members, block.steps[i].attrs
        emit(f"        i = {i}")
        emit(f"        if _adam_group(env, _G{i}, _A{i}):")
        dels = [n for j in range(i, end) for n in block.steps[j].dels]
        emit(f"            for n in {tuple(dels)!r}: env.pop(n, None)" if dels else "            pass")
        emit("        else:")
        for j in range(i, end):
            lines.extend("    " + ln for ln in step_lines(j, block.steps[j]))
        i = end
    if emitter.chain is not None:  # the span a fetch's may start from (NOTE: [Timing GPU ops])
        emit(f"        return gN, {emitter.chain}")
    emit("        pass")
    emit("    except _EOF:")
    emit("        raise")
    emit("    except Exception as e:  # the step that raised, with the op attached")
    emit("        raise _op_error(_STEPS[i], e, env) from e")
    source = "\n".join(lines) + "\n"
    namespace = dict(consts)
    namespace["_recorded"] = _recorded
    namespace["_timed_copy"] = _timed_copy
    namespace["_lod_to"] = _lod_to
    namespace["_stub"] = _stub
    exec(compile(source, f"<fluidcompat block {block.block_idx}>", "exec"), namespace)  # noqa: S102
    run = namespace["run"]
    run.source = source
    return run


class _StepEmitter:
    """The lines ``_compile`` writes for one step, in named pieces: its start (clock, saved values),
    its slot dict (planned copies), the phases before the kernel, the call, the outputs into ``env``,
    and what comes after (phase and op events, stubs, deletions). Each piece puts the constants it
    names into ``consts``."""

    def __init__(self, block: "PreparedBlock", profiled, consts: Dict[str, Any]) -> None:
        self.block, self.profiled, self.consts = block, profiled, consts
        self.gpu = bool(profiled and profiled[3])
        # GPU times: the device whose CUDA event ``gN`` ended the last timed span, while the next span
        # may start from it (None after host work: NOTE: [Timing GPU ops] in profiler/events.py)
        self.chain: Optional[int] = None

    def lines(self, i: int, s: Step) -> List[str]:
        out: List[str] = []
        emit = out.append
        consts, profiled = self.consts, self.profiled
        consts[f"_K{i}"], consts[f"_A{i}"], consts[f"_S{i}"] = s.kernel, s.attrs, s
        scale = bool(profiled and profiled[2] and s.loss_grad)  # one 'Scale LossGrad' event (see Step)
        emit(f"        i = {i}")
        events = None
        if profiled:
            events = consts[f"_N{i}"] = _event_names(s, *profiled[:2])  # op, base, prepare, infer, compute, unique
            emit("        t0 = _now()")
        for v, key in s.saves:
            emit(f"        if {v!r} in env: env[{key!r}] = env[{v!r}]")
        timed_copies = self._inputs(i, s, events, emit)
        timed = self.gpu and not scale and s.sub is None and s.gpu is not None
        self._before_kernel(i, s, scale, timed, timed_copies, emit)
        self._call(i, s, timed, emit)
        self._outputs(s, emit)
        self._after(i, s, scale, timed, timed_copies, events, emit)
        self.chain = s.gpu if timed else None
        return out

    def _inputs(self, i: int, s: Step, events, emit) -> bool:
        """The ``ins`` dict of the step, each planned copy in it (recorded when profiled); whether a
        copy's GPU time is read."""
        consts, profiled = self.consts, self.profiled
        parts = []
        copies = []  # GPU times: each copy a statement before the dict, in order (spans follow one another)
        timed_copies = False
        for slot, names, targets in s.ins:
            vals = []
            for j, n in enumerate(names):
                if targets is not None and targets[j] is not None:
                    consts[f"_T{i}_{len(consts)}"] = targets[j]
                    copy = f"env[{n!r}].to(_T{i}_{len(consts) - 1})"
                    if self.block.lod:  # the copy keeps the value's LoD
                        copy = f"_lod_to(env[{n!r}], _T{i}_{len(consts) - 1})"
                    if profiled:  # the copy's own event, nested in the op's phase
                        phase = _copy_phase(s, slot, n)
                        consts[f"_C{i}_{j}_{slot}"] = events[1] + phase + s.copies[(slot, n)].kind
                        dev = s.copy_gpus.get((slot, n)) if self.gpu else None
                        if dev is None:
                            copy = f"_recorded(add, _C{i}_{j}_{slot}, lambda: {copy})"
                            self.chain = None
                        else:  # ... and its GPU time (NOTE: [Timing GPU ops])
                            timed_copies = True
                            in_compute = phase == "compute/"
                            start = f"(gN, {dev})" if self.chain == dev else "None"
                            args = f"gpu, {dev}, cp, {in_compute}, {start}"
                            copy = f"_timed_copy(add, _C{i}_{j}_{slot}, lambda: {copy}, {args})"
                            self.chain = dev
                        if self.gpu:
                            name = f"c{len(copies)}"
                            copies.append(f"        {name}{', gN' if dev is not None else ''} = {copy}")
                            copy = name
                    vals.append(copy)
                else:
                    vals.append(f"env[{n!r}]")
            parts.append(f"{slot!r}: [{', '.join(vals)}]")
        for slot, names in s.optional:
            parts.append(f"{slot!r}: [{', '.join(f'env.get({n!r})' for n in names)}]")
        if timed_copies:
            emit("        cp = []")
        for line in copies:
            emit(line)
        emit(f"        ins = {{{', '.join(parts)}}}")
        return timed_copies

    def _before_kernel(self, i: int, s: Step, scale: bool, timed: bool, timed_copies: bool, emit) -> None:
        """Profiled: the prepare_data and infer_shape phases' events, and the GPU start mark."""
        if self.profiled and not scale:  # one clock reading ends a phase and starts the next
            emit("        t1 = _now()")
            emit(f"        add(_mk(_Ev, (_N{i}[2], _INNER, t0, t1, 0)))")
            if timed_copies:
                emit("        prepare_at = len(_events) - 1")
            emit("        t2 = _now()")
            emit(f"        add(_mk(_Ev, (_N{i}[3], _INNER, t1, t2, 0)))")
        if timed:  # the kernel's GPU time, read when the profiler stops
            if self.chain == s.gpu:  # from the end of the span before
                emit("        g0 = gN")
            else:
                emit(f"        g0 = _mark({s.gpu})")
                emit(f"        g0.record(_streams[{s.gpu}])")

    @staticmethod
    def _call(i: int, s: Step, timed: bool, emit) -> None:
        """The kernel (or the sub-block runner, or the array-gradient adder)."""
        if s.sub is not None:
            emit(f"        _run_sub_block(_S{i}, ins, env, lambda: _S{i}.sub.run(env))")
            emit("        r = {}")
        elif s.adds:
            emit(f"        r = _adding(_S{i}, ins, env)")
        else:
            emit(f"        r = _K{i}(ins, _A{i})")
        if timed:
            emit(f"        gN = _mark({s.gpu})")
            emit(f"        gN.record(_streams[{s.gpu}])")

    @staticmethod
    def _outputs(s: Step, emit) -> None:
        """The kernel's outputs into ``env`` (a kernel may leave an output out, or give [])."""
        for slot, names in s.outs:
            if s.sub is not None:
                break
            if names == (EMPTY_VAR_NAME,):
                continue
            emit(f"        v = r.get({slot!r})")
            if len(names) == 1:
                emit(f"        if v: env[{names[0]!r}] = v[0]")
            else:
                emit("        if v:")
                emit(f"            for n, x in zip({names!r}, v):")
                emit("                if n != _EMPTY: env[n] = x")

    def _after(self, i: int, s: Step, scale: bool, timed: bool, timed_copies: bool, events, emit) -> None:
        """The compute phase's and the op's events, stubs and deletions, and the GPU times pending."""
        consts, profiled = self.consts, self.profiled
        if scale:
            consts["_SLG"] = profiled[0] + _SCALE_LOSS_GRAD
            emit("        t4 = _now()")
            emit("        add(_mk(_Ev, (_SLG, _ORD, t0, t4, 0)))")
        elif profiled:
            emit("        t3 = _now()")
            if s.device_copy:  # the kernel's copy on the GPU, nested in compute
                consts[f"_D{i}"] = events[4] + _SAME_GPU
                emit(f"        add(_mk(_Ev, (_D{i}, _ORD, t2, t3, 0)))")
            emit(f"        add(_mk(_Ev, (_N{i}[4], _INNER, t2, t3, 0)))")
            if timed or timed_copies:
                emit("        compute_at = len(_events) - 1")
        for n in s.stubs:
            emit(f"        if {n!r} in env: env[{n!r}] = _stub(env[{n!r}])")
        deletion_event = profiled and profiled[2] and s.dels
        if not deletion_event:
            for n in s.dels:
                emit(f"        env.pop({n!r}, None)")
        if profiled and not scale:
            emit("        t4 = _now()" if s.dels and not deletion_event else "        t4 = t3")
            if profiled[1]:
                emit(f"        add(_mk(_Ev, (_N{i}[5], _UNIQUE, t0, t4, 0)))")
            emit(f"        add(_mk(_Ev, (_N{i}[0], _ORD, t0, t4, 0)))")
            if timed or timed_copies:  # the GPU times go to the timed events and to those enclosing them
                n_up = 2 if profiled[1] else 1
                emit(
                    f"        up = [len(_events) - {n_up}, len(_events) - 1]"
                    if n_up == 2
                    else "        up = [len(_events) - 1]"
                )
            if timed:
                inner = "[compute_at - 1, compute_at]" if s.device_copy else "[compute_at]"
                emit(f"        _pend((_events, {inner} + up, g0, gN, {s.gpu}))")
            if timed_copies:
                emit("        for at, in_compute in cp: at.extend([compute_at if in_compute else prepare_at] + up)")
        if deletion_event:  # its own event after the op's, as fluid's parallel executor recorded it
            for n in s.dels:
                emit(f"        env.pop({n!r}, None)")
            emit("        add(_mk(_Ev, ('eager_deletion', _ORD, t4, _now(), 0)))")


def _adam_groups(block: "PreparedBlock") -> Dict[int, int]:
    """Runs of two or more consecutive adam ops that ``adam_group`` may run at once: start -> end
    (exclusive). Members: same attributes and device, no copies planned, nothing kept for a grad op,
    no stubs; a block without LoD values (NOTE: [Grouped adam] in fluidcompat_ops/optim.py)."""
    if block.lod:
        return {}

    def key(s: Step):
        if s.sub is not None or s.saves or s.stubs or s.adds or s.copies or not adam_groupable(s.plan.op):
            return None
        a = s.attrs
        return (a["_device"], a["beta1"], a["beta2"], a["epsilon"])

    groups: Dict[int, int] = {}
    keys = [key(s) for s in block.steps]
    i = 0
    while i < len(keys):
        j = i + 1
        while keys[i] is not None and j < len(keys) and keys[j] == keys[i]:
            j += 1
        if j - i > 1:
            groups[i] = j
        i = j
    return groups


_STUB_BYTES = 1 << 16  # smaller values stay: a stub would cost more time than it frees memory


def _stub(value):
    """A value's shape, dtype and LoD without its memory (for readers of its shape only)."""
    if not torch.is_tensor(value) or value.device.type == "meta":
        return value
    if value.numel() * value.element_size() < _STUB_BYTES:
        return value
    return with_lod(torch.empty(value.shape, dtype=value.dtype, device="meta"), lod_of(value))


def _lod_to(value, device):
    """A planned copy of ``value`` to ``device`` that keeps its LoD (NOTE: [LoD values])."""
    moved = value.to(device)
    return moved if moved is value else with_lod(moved, lod_of(value))


def _event_names(s: Step, prefix: str, instance: bool) -> tuple:
    """The profiler's names for step ``s`` (made once per prefix and tracer): the op's event, the
    base of its phases (``mul/`` or with AllOpDetail ``mul/mul%out%/``), its prepare_data /
    infer_shape / compute phases and its AllOpDetail instance."""
    names = s.event_names.get((prefix, instance))
    if names is None:
        op_type = prefix + s.plan.op.type
        base = prefix + s.unique + "/" if instance else op_type + "/"
        names = (op_type, base, base + "prepare_data", base + "infer_shape", base + "compute", prefix + s.unique)
        s.event_names[(prefix, instance)] = names
    return names


_SAME_GPU = "/GpuMemcpyAsync(same_gpu):GPU->GPU"
_SCALE_LOSS_GRAD = "Scale LossGrad"


def _reads_an_array(op) -> bool:
    from fluidcompat.dtypes import VarType

    return any(
        (v := op.block._find_var_recursive(n)) is not None and v.type == VarType.LOD_TENSOR_ARRAY
        for n in op.input_arg_names
    )


def _copy_phase(s: Step, slot: str, name: str) -> str:
    """Where a copy's event nests in its op: a kernel's host read in ``compute``, a data transform in
    ``prepare_data``; a control op (no phases) has it directly under the op."""
    if s.sub is not None:
        return ""
    return "compute/" if (slot, name) in s.host_copies else "prepare_data/"


def _free(s: Step, env, add=None, vlog=None, place: str = "") -> None:
    """Drop the temporaries whose last reader is step ``s``; with ``add``, as one ``eager_deletion``
    event (fluid's parallel executor ran them as an op of their own after the op)."""
    from fluidcompat.profiler.events import ORDINARY, now_ns

    if not vlog:  # (with the operator log on, values keep their buffers: the log shows their places)
        for n in s.stubs:
            if n in env:
                env[n] = _stub(env[n])
    if not s.dels:
        return
    t0 = now_ns()
    for n in s.dels:
        if vlog:
            vlog("eager_deletion_op_handle", 107, f"Erase variable {n} on {place}")
        env.pop(n, None)
    if add is not None:
        add(_event_type()("eager_deletion", ORDINARY, t0, now_ns()))


def _timed_copy(add, name: str, fn, gpu, device: int, timed: list, in_compute: bool, chain=None):
    """``_recorded`` for a planned copy between host and GPU with the profiler taking GPU times: the
    copy also between two CUDA events on the GPU's current stream (``gpu``: Recorder.gpu_timing's
    tuple), the first ``chain``'s when given (the event that ended the span before, its device);
    ``timed`` gets (the list of event indices its GPU time goes to, ``in_compute``), for the op to add
    the events enclosing it. Returns the copy and the CUDA event that ended its span (NOTE: [Timing
    GPU ops] in fluidcompat/profiler/events.py)."""
    from fluidcompat.profiler.events import ORDINARY, now_ns, span_end, span_start

    c0 = now_ns()
    start = span_start(gpu, device, chain)
    value = fn()
    end = span_end(gpu, device)
    add(_event_type()(name, ORDINARY, c0, now_ns()))
    events = gpu[3]
    at = [len(events) - 1]
    gpu[2]((events, at, start, end, device))
    timed.append((at, in_compute))
    return value, end


def _recorded(add, name: str, fn):
    """Run ``fn`` (a planned device copy, a while op's read of its Condition) and record its span as
    event ``name``."""
    from fluidcompat.profiler.events import ORDINARY, now_ns

    c0 = now_ns()
    value = fn()
    add(_event_type()(name, ORDINARY, c0, now_ns()))
    return value


def _array_grads(op) -> Tuple[str, ...]:
    from fluidcompat.dtypes import VarType

    names = []
    reads = set(op.input_arg_names)
    for n in op.output_arg_names:
        if n in reads:  # written from its own value (assign x@GRAD -> x@GRAD): already the sum
            continue
        var = op.block._find_var_recursive(n) if "@GRAD" in n else None
        if var is not None and var.type == VarType.LOD_TENSOR_ARRAY:
            names.append(n)
    return tuple(names)


def _adding(s: Step, ins, env):
    """Run the kernel; each array gradient it writes is added to the value already there."""
    result = s.kernel(ins, s.attrs)
    for slot, names in s.outs:
        vals = result.get(slot)
        if vals is not None and any(n in s.adds for n in names):
            result[slot] = [add_values(env.get(n), v) if n in s.adds else v for n, v in zip(names, vals)]
    return result


def _keep_overwritten_values(top: PreparedBlock) -> None:
    """Give every grad op the values its forward op saw. The run keeps one value per name, so when
    an op overwrites a variable (an in-place ``increment``, a loop writing its loop variables, an
    ``assign`` onto a name) after a forward op read it and before that op's grad op reads it, the
    overwriting op first keeps the old value under a new key and the grad op reads that key.

    Versions count writes per block; a variable a sub-block reads but never writes has the version
    its control op saw in the enclosing block. A grad op in the same block as its forward op sees
    the version before it; one in a grad block sees the forward block's last (a while_grad puts each
    step's last values back before running it)."""
    prepared: Dict[int, PreparedBlock] = {}
    runner: Dict[int, Tuple[int, int]] = {}  # sub-block -> (block, step) of the control op running it

    def walk(p: PreparedBlock) -> None:
        prepared[p.block_idx] = p
        for j, s in enumerate(p.steps):
            if s.sub is not None:
                runner[s.sub.block_idx] = (p.block_idx, j)
                walk(s.sub)

    walk(top)
    writers: Dict[int, Dict[str, List[int]]] = {}

    def writes_of(b: int) -> Dict[str, List[int]]:
        if b not in writers:
            w: Dict[str, List[int]] = {}
            for j, s in enumerate(prepared[b].steps):
                for _, names in s.outs:
                    for n in names:
                        w.setdefault(n, []).append(j)
            writers[b] = w
        return writers[b]

    def resolve(v: str, gb: int, gj: int, fb: int, fj: int, written_by_f: bool):
        w = writes_of(fb).get(v)
        if w:
            wanted = sum(1 for j in w if j < fj or (written_by_f and j == fj))
            current = sum(1 for j in w if j < gj) if gb == fb else len(w)
            return (fb, w, wanted) if wanted != current else None
        if gb == fb or fb not in runner or gb not in runner:
            return None
        (pb, pj), (gpb, gpj) = runner[fb], runner[gb]
        return resolve(v, gpb, gpj, pb, pj, False)

    for gb, p in prepared.items():
        for gj, g in enumerate(p.steps):
            op = g.plan.op
            if op._fwd_at is None or g.sub is not None or op._fwd_at[0] not in prepared:
                continue
            fb, fj = op._fwd_at
            f_steps = prepared[fb].steps
            if fj >= len(f_steps):
                continue
            f_op = f_steps[fj].plan.op
            f_ins, f_outs = set(f_op.input_arg_names), set(f_op.output_arg_names)

            def renamed(slot, names):
                if slot.endswith("@GRAD"):
                    return names
                result = []
                for v in names:
                    found = None
                    if v != EMPTY_VAR_NAME and (v in f_ins or v in f_outs):
                        found = resolve(v, gb, gj, fb, fj, v in f_outs and v not in f_ins)
                    if found is None:
                        result.append(v)
                        continue
                    b, w, wanted = found
                    key = f"{v}@VERSION@block{b}@{wanted}"
                    saver = prepared[b].steps[w[wanted]]
                    if (v, key) not in saver.saves:
                        saver.saves = saver.saves + ((v, key),)
                    result.append(key)
                return tuple(result)

            g.ins = tuple((slot, renamed(slot, names), t) for slot, names, t in g.ins)
            g.optional = tuple((slot, renamed(slot, names)) for slot, names in g.optional)


def _kernel_key(step, env, place, vartype_of) -> str:
    from fluidcompat.dtypes import CPP_NAMES, VarType

    dtype = "float"
    for _, names, _ in step.ins:
        for n in names:
            v = env.get(n)
            if torch.is_tensor(v) and v.is_floating_point():
                dtype = CPP_NAMES[vartype_of(v)]
                break
        else:
            continue
        break
    else:
        if "dtype" in step.attrs and isinstance(step.attrs["dtype"], int) and step.attrs["dtype"] >= 0:
            dtype = CPP_NAMES.get(VarType(step.attrs["dtype"]), "float")
    return f"data_type[{dtype}]:data_layout[ANY_LAYOUT]:place[{place}]:library_type[PLAIN]"


def _log_copy(vlog, name, value, src, dst, transform: bool) -> None:
    """A copy's log lines: a data transform (before the kernel) logs the transform, the variable it
    creates and the device transform; a kernel's own read of a host slot logs only the copy."""
    from fluidcompat.dtypes import CPP_NAMES
    from fluidcompat.executor.scope import vartype_of
    from fluidcompat.logging import dims_text

    if transform:
        dtype = CPP_NAMES[vartype_of(value)]
        vlog(
            "operator",
            1207,
            f"Transform Variable {name} from data_type[{dtype}]:data_layout[NCHW]:place[{src}]:"
            f"library_type[PLAIN] to data_type[{dtype}]:data_layout[ANY_LAYOUT]:place[{dst}]:"
            f"library_type[PLAIN]",
        )
        vlog("scope", 169, f"Create variable {name}")
        vlog("data_device_transform", 21, f"DeviceTransform in, src_place {src} dst_place: {dst}")
    vlog("tensor_util", 129, f"TensorCopySync {dims_text(value.shape)} from {src} to {dst}")


def _debug_string(op, env, var_debug, vartype_of) -> str:
    """``Op(type), inputs:{Slot[var:float[3, 4]({})], ...}, outputs:{...}.`` (slots sorted by name)."""

    def slots(d):
        return ", ".join(
            f"{slot}[{', '.join(var_debug(n, env.get(n), vartype_of, lod_of) for n in names)}]"
            for slot, names in sorted(d.items())
        )

    return f"Op({op.type}), inputs:{{{slots(op.inputs)}}}, outputs:{{{slots(op.outputs)}}}."


def _event_type():
    from fluidcompat.profiler.report import Event

    return Event
