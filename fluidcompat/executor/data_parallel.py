"""``CompiledProgram.with_data_parallel`` on several places of one process (``CPU_NUM=2``, or
``places=``), as fluid's parallel executor ran it: the fed batch split across the devices, the
forward and backward pass run per device, the parameter gradients summed (the loss gradient scaled
by 1/devices, so their mean), the optimizer run once, and each fetched variable returned per device,
concatenated along dim 0 (``return_merged=False``: the per-device values).

The devices run one after the other on the executor's place, in order (a ``read`` op of a
non-iterable DataLoader gives device 0 the first batch). Every device works in a scope of its own
below the run's scope, as fluid's local scopes: what the forward pass writes there (batch_norm's
moving statistics, a learning-rate counter) is the device's own, and the parameters, which only the
optimizer writes, are read from the run's scope. Device 1 and on keep theirs (with the
CompiledProgram); device 0's writes go to the run's scope once every device has run, so that all of
them read the scope as it was before the step.

NOTE: [One-process data parallelism]: the program is cut where fluid's collective mode puts its
all-reduce ops (``collective.collective_program``): ``forward`` is every op before them (with the
scaled loss gradient), ``update`` every op after (clipping, regularization, the optimizer). The
update runs once in the run's scope, fed the summed gradients and device 0's other values it reads.
"""

from __future__ import annotations

import contextlib
import functools
from typing import Dict, List, Optional, Tuple

import numpy as np

from fluidcompat.executor.scope import Scope
from fluidcompat.framework import OpRole, Program

_NOT_ALLOWED = (
    "The number({n}) of samples[{name}] of current batch is less than the count({devices}) of devices({kind}), "
    "currently, it is not allowed. "
)


class Split:
    """A program cut for running on ``devices`` places (NOTE: [One-process data parallelism])."""

    def __init__(self, program: Program, loss_name: Optional[str], devices: int, scale_loss: bool) -> None:
        from fluidcompat.executor import collective

        self.devices = devices
        self.version = program._version
        block = program.global_block()
        # a backward pass with parameter gradients to all-reduce (else every place runs the whole program)
        backward = any(op.attrs.get("op_role", 0) & OpRole.Backward for op in block.ops)
        trains = backward and bool(collective._grads(block))
        self.grads: Tuple[str, ...] = ()
        self.update: Optional[Program] = None
        self.reads: Tuple[str, ...] = ()  # what the update reads from device 0's forward pass
        self.writes: frozenset = frozenset()
        if not trains:
            self.forward = program
            return
        cut = collective.collective_program(program, loss_name, devices, scale_loss=False)
        ops = cut.global_block().ops
        for op in ops:  # the loss gradient filled with 1/devices, as fluid's ScaleLossGradOpHandle
            role = op.attrs.get("op_role", 0)
            if scale_loss and op.type == "fill_constant" and role & OpRole.Backward and role & OpRole.Loss:
                op.attrs["value"], op.attrs["str_value"] = 1.0 / devices, ""
        at = next(i for i, op in enumerate(ops) if op.type == "c_allreduce_sum")
        self.grads = tuple(op.input("X")[0] for op in ops[at:] if op.type == "c_allreduce_sum")
        end = at + len(self.grads)
        self.forward = _with_ops(cut, ops[:at])
        self.update = _with_ops(cut, ops[end:])
        written, reads = set(self.grads), []
        ublock = self.update.global_block()
        for op in ublock.ops:
            for n in op.input_arg_names:
                var = ublock._find_var_recursive(n)
                if n not in written and n not in reads and var is not None and not var.persistable:
                    reads.append(n)
            written.update(op.output_arg_names)
        self.reads = tuple(reads)
        self.writes = frozenset(written)


def _with_ops(program: Program, ops) -> Program:
    """A copy of ``program`` whose global block holds ``ops`` (copies of them) only."""
    p = program.clone()
    block = p.global_block()
    keep = {id(op) for op in ops}
    block.ops = [c for c, o in zip(block.ops, program.global_block().ops) if id(o) in keep]
    p._bump()
    return p


def device_count(compiled, place) -> int:
    """How many places the CompiledProgram runs on: its ``places``, else ``CPU_NUM`` for a CPU
    executor, the visible GPUs for a GPU one (fluid's ``cpu_places()`` / ``cuda_places()``)."""
    from fluidcompat import places

    if compiled._places is not None:
        listed = compiled._places
        return len(listed) if isinstance(listed, (list, tuple)) else 1
    return places.default_place_count(place)


def split_feed(exe, program: Program, feed, devices: int, trains: bool) -> List[dict]:
    """The feed of each device that gets a share of the batch: a dict's values split along their
    batch (sequences for a LoDTensor with LoD) as fluid split them (ceil(batch / devices) each, the last
    device the rest), persistable variables given whole to every device; a list: one dict per device."""
    if isinstance(feed, (list, tuple)):
        if not all(isinstance(f, dict) for f in feed):
            raise TypeError("Each element of feed list should be a dict")
        if len(feed) != devices:
            raise ValueError(
                f"The feed data number {len(feed)} does not match the device number {devices}. If you are using "
                "DataLoader to feed data, this may be because you set drop_last=False in training network. Currently, "
                "drop_last=False for DataLoader is not supported for training network. Please set drop_last=True when "
                "defining DataLoader."
            )
        return list(feed)
    block = program.global_block()
    parts: Dict[str, list] = {}
    for name, value in feed.items():
        var = block.vars.get(name)
        if var is not None and var.persistable:
            parts[name] = [value] * devices
            continue
        parts[name] = _split(value, devices)
        if trains and len(parts[name]) != devices:
            from fluidcompat import places

            kind = "GPU" if places.torch_device(exe.place).startswith("cuda") else "CPU"
            message = _NOT_ALLOWED.format(n=len(parts[name]), name=name, devices=devices, kind=kind)
            if kind == "CPU":
                message += (
                    "You should set the environment variable CPU_NUM in the system to determine the number of "
                    "devices you need."
                )
            raise ValueError(message)
    count = min((len(p) for p in parts.values()), default=devices)
    return [{name: p[i] for name, p in parts.items()} for i in range(count)]


def _split(value, devices: int) -> list:
    from fluidcompat.executor.scope import LoDTensor

    lod = value.lod() if isinstance(value, LoDTensor) else []
    if isinstance(value, LoDTensor):
        rows = value.torch()
    elif isinstance(value, (list, tuple)) or np.isscalar(value):
        rows = np.asarray(value)
        rows = rows.reshape(1) if rows.ndim == 0 else rows
    else:
        rows = value
    batch = len(lod[0]) - 1 if lod else (rows.shape[0] if len(rows.shape) else 1)
    if batch == 0:
        return [value]
    step = -(-batch // devices)
    out = []
    for begin in range(0, batch, step):
        end = min(begin + step, batch)
        if not lod:
            out.append(rows[begin:end])
            continue
        levels, lo, hi = [], begin, end
        for level in lod:  # each level's offsets for the sequences [lo, hi), then the range below them
            levels.append([o - level[lo] for o in level[lo : hi + 1]])
            lo, hi = level[lo], level[hi]
        out.append(LoDTensor(rows[lo:hi], made_lod=levels))
    return out


def run(exe, compiled, devices: int, feed, fetch_names: List[str], scope, return_numpy: bool, merged: bool):
    """One step of ``compiled`` on ``devices`` places (see the module's docstring)."""
    split = compiled._split
    program = compiled._program
    if split is None or split.devices != devices or split.version != program._version:
        strategy = compiled._build_strategy  # None: BuildStrategy()'s, CoeffNumDevice
        scale = strategy is None or strategy.gradient_scale_strategy == strategy.GradientScaleStrategy.CoeffNumDevice
        split = compiled._split = Split(program, compiled._loss_name, devices, scale)
    feeds = split_feed(exe, program, feed, devices, split.update is not None)
    scopes = compiled._device_scopes_in(scope, devices)
    keep = list(dict.fromkeys([*fetch_names, *split.grads, *split.reads]))
    rec = _Recording(compiled, scope)
    first = Scope(scope)
    envs = []
    for d, f in enumerate(feeds):  # each place's ops on its own worker list, as fluid's threads
        with rec.place(d):
            envs.append(exe._run_env(split.forward, f, keep, first if d == 0 else scopes[d]))
    for name, var in first._vars.items():  # device 0's writes, now that every device has read the scope
        held = scope.var(name).tensor
        held._t, held._lod = var.tensor._t, var.tensor._lod
    after: Dict[str, object] = {}
    if split.update is not None:
        with rec.place(0, "fused_all_reduce" if len(split.grads) > 1 else "all_reduce"):
            summed = {g: _summed([env.get(g) for env in envs]) for g in split.grads}
        fed = dict(summed)
        fed.update({n: envs[0][n] for n in split.reads if envs[0].get(n) is not None})
        with rec.place(0):
            after = exe._run_env(split.update, fed, fetch_names, scope)
        after.update(summed)
    results = []
    fetched = functools.partial(exe._fetched_value, return_numpy=return_numpy)
    for n in fetch_names:
        with rec.place(0, "Fetch"):
            results.append(_fetch(n, split, envs, after, scopes, fetched, merged))
    rec.done()
    return results


class _Recording:
    """The profiler's events of a data-parallel run, as fluid's parallel executor recorded them: its own
    spans on the calling thread, each place's ops (and the all-reduce, the fetch) on a worker list."""

    def __init__(self, compiled, scope) -> None:
        from fluidcompat.profiler.events import RECORDER, now_ns

        self.rec = RECORDER if RECORDER.enabled else None
        self.now = now_ns
        if self.rec is not None:
            t0 = now_ns()
            self.main = self.rec.thread_events().events
            self._span("FastThreadedSSAGraphExecutorPrepare", t0)
            if compiled._first_run_in(scope):
                self._span("InitLocalVars", now_ns())
            self._span("ScopeBufferedMonitor::pre_local_exec_scopes_process", now_ns())

    def _span(self, name: str, t0: int, events=None) -> None:
        from fluidcompat.profiler.events import ORDINARY
        from fluidcompat.profiler.report import Event

        (self.main if events is None else events).append(Event(name, ORDINARY, t0, self.now(), 0))

    @contextlib.contextmanager
    def place(self, d: int, event: str = ""):
        if self.rec is None:
            yield
            return
        events = self.rec.to_worker(True, d)
        t0 = self.now()
        try:
            yield
        finally:
            if event:
                self._span(event, t0, events)
            self.rec.to_worker(False)

    def done(self) -> None:
        if self.rec is not None:
            self._span("ScopeBufferedMonitor::post_local_exec_scopes_process", self.now())


def _fetch(n: str, split, envs, after, scopes, fetched, merged: bool):
    """A fetched variable per place: the update's value (the same on every place) where the update
    wrote it, else the place's own; concatenated unless ``merged`` is False."""
    values = []
    for d, env in enumerate(envs):
        if n in split.writes and after.get(n) is not None:
            values.append(after[n])
        elif env.get(n) is not None:
            values.append(env[n])
        else:
            sv = scopes[d].find_var(n)
            values.append(sv.tensor._t if sv is not None else None)
    return _merged(values, fetched) if merged else [_one(v, fetched) for v in values]


def _summed(grads):
    """The devices' gradients of one parameter added up in device order (fluid's all-reduce sum);
    sparse ones (SelectedRows) put together row by row."""
    import torch

    from fluidcompat_ops.grad import SelectedRows

    present = [g for g in grads if g is not None]
    if not present:
        return None
    if isinstance(present[0], SelectedRows):
        return SelectedRows(
            torch.cat([g.rows for g in present]), torch.cat([g.values for g in present]), present[0].height
        )
    total = present[0].clone()
    for g in present[1:]:
        total += g
    return total


def _one(value, fetched):
    """``value`` as the run returns it: ``fetched`` (the Executor's ``_fetched_value``) of it, of each
    element of a tensor array."""
    if isinstance(value, list):  # a tensor array: its elements
        return [fetched(v) for v in value]
    return fetched(value)


def _merged(values, fetched):
    """The devices' values of one fetched variable as one, concatenated along dim 0 (LoDs joined)."""
    import torch

    from fluidcompat_ops.grad import SelectedRows
    from fluidcompat_ops.sequence import lod_of, with_lod

    values = [v.to_dense() if isinstance(v, SelectedRows) else v for v in values]
    if any(v is None for v in values):
        return None
    if all(isinstance(v, list) for v in values) and len({len(v) for v in values}) == 1:
        # tensor arrays: each element merged across the devices, as fluid's merged fetch
        return [_merged([v[k] for v in values], fetched) for k in range(len(values[0]))]
    if not all(torch.is_tensor(v) for v in values):
        return _one(values[0], fetched)
    lods = [lod_of(v) for v in values]
    joined = torch.cat([v.reshape(1) if v.dim() == 0 else v for v in values])
    if any(lods):
        levels = []
        for k in range(len(lods[0])):
            level = [0]
            for lod in lods:
                base = level[-1]
                level.extend(base + o for o in lod[k][1:])
            levels.append(level)
        joined = with_lod(joined, levels)
    return _one(joined, fetched)
