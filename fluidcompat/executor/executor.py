"""``fluid.Executor`` and ``fluid.CompiledProgram``."""

from __future__ import annotations

import functools
import os
import sys
import warnings
from typing import Any, Dict, List, Optional

import numpy as np
import torch

from fluidcompat import collector, flags, places
from fluidcompat.compiler import BuildStrategy, CompiledProgram, ExecutionStrategy  # noqa: F401  (fluid.executor names)
from fluidcompat.dtypes import VarType, as_long_long, np_dtype, np_name, to_vartype
from fluidcompat.executor.errors import UninitializedVariableError
from fluidcompat.executor.interpreter import PreparedBlock
from fluidcompat.executor.placement import plan_block
from fluidcompat.executor.plan_cache import ProgramCache
from fluidcompat.executor.scope import LoDTensor, Scope, global_scope, vartype_of
from fluidcompat.framework import Operator, OpRole, Program, Variable, default_main_program
from fluidcompat.logging import VLog, any_vlog, dims_text, place_text, var_debug
from fluidcompat.profiler.events import ORDINARY, RECORDER, now_ns, span_end, span_start
from fluidcompat.profiler.report import Event
from fluidcompat_ops.grad import SelectedRows
from fluidcompat_ops.python import EOFException
from fluidcompat_ops.sequence import lod_of, with_lod

ENV_EXPLAIN = "FLUIDCOMPAT_EXPLAIN_PLACEMENT"


class FetchedArray(np.ndarray):
    """A fetched value: a numpy array that, as in numpy before 2.4 (and so in fluid-era scripts),
    converts to a Python number with ``float()``/``int()`` when it holds one element."""

    def __float__(self) -> float:
        if self.size == 1:
            return float(self.reshape(-1)[0])
        return super().__float__()

    def __int__(self) -> int:
        if self.size == 1:
            return int(self.reshape(-1)[0])
        return super().__int__()

    def __repr__(self) -> str:
        return repr(self.view(np.ndarray))


def fetched(a: np.ndarray) -> FetchedArray:
    """``a`` as a fetched value, int64 as the C ``long long`` fluid's tensors handed numpy (so that
    its repr says ``dtype=int64``, as a fetched fluid array's did)."""
    return as_long_long(a).view(FetchedArray)


def _fetch_names(fetch_list) -> List[str]:
    if fetch_list is None:
        return []
    if isinstance(fetch_list, (Variable, str)):
        fetch_list = [fetch_list]
    if not isinstance(fetch_list, (list, tuple)):
        raise TypeError(
            f"Currently , The fetch_list type only should be list or tuple, but the input type is {type(fetch_list)}."
        )
    names = []
    for item in fetch_list:
        if isinstance(item, Variable):
            names.append(item.name)
        elif isinstance(item, str):
            names.append(item)
        elif isinstance(item, Operator):
            continue  # optimize ops: they run as part of the program anyway
        else:
            raise TypeError(
                f"The item in fetch_list should be str, variable or optimize_op, but received {type(item)}."
            )
    return names


def _unknown_feed(name: str) -> None:
    """fluid's warning for a feed name the program has no variable of (the feed is skipped)."""
    warnings.warn(f"The variable {name} is not found in program. It is not declared or is pruned.", stacklevel=3)


def _check_fetch_names(block, scope: Scope, names) -> None:
    for n in names:
        if block._find_var_recursive(n) is None and scope.find_var(n) is None:
            raise ValueError(
                f"Fetch variable '{n}' cannot be found in the program or the scope. Fetch a Variable of the "
                f"program (exe.run(fetch_list=[var])) or the name of one. Received: {n!r}"
            )


def _shape_fits(vshape, shape) -> bool:
    """Whether a fed ``shape`` matches a variable's (-1: any size)."""
    return len(shape) == len(vshape) and all(v < 0 or v == s for v, s in zip(vshape, shape))


def _feed_key_error(key) -> str:
    if isinstance(key, Variable):
        return f"The keys of feed are variable names; received the Variable '{key.name}': feed={{'{key.name}': ...}}"
    return f"The keys of feed are variable names (str); received {type(key).__name__} {key!r}"


def _check_feed(var: Variable, shape, dtype_name: str) -> None:
    vshape = tuple(var.shape)
    if not _shape_fits(vshape, shape):
        raise ValueError(
            "The fed Variable %r should have dimensions = %d, shape = %r, but received fed shape %r on each device"
            % (var.name, len(vshape), vshape, list(shape))
        )
    want = np_name(var.dtype)
    if dtype_name != want:
        raise ValueError("The data type of fed Variable %r must be %r, but received %r" % (var.name, want, dtype_name))


class Executor:
    """Runs Programs on a place (``fluid.Executor``).

    Compat: feeds of ``fluid.data`` variables are also checked for rank; a list feed is taken as an
    array of the variable's dtype (fluid 1.8 refused lists).
    """

    def __init__(self, place=None) -> None:
        if place is None:
            place = places.CUDAPlace(0) if places.is_compiled_with_cuda() else places.CPUPlace()
        if not isinstance(place, places.Place):
            raise TypeError(f"Executor expects a place such as fluid.CPUPlace(). Received: {type(place).__name__}")
        flags.refresh()  # (FLAGS_ a script put in os.environ before importing fluid, as fluid read them)
        self.place = place
        self._where = places.torch_device(place)  # its device as planned ('cuda:0' also when emulated)
        self._device = torch.device(places.tensor_device(self._where))
        self._closed = False
        self._cache = ProgramCache()
        self._runners: Dict[Any, "_Runner"] = {}
        self._prune_cache: Dict[Any, Program] = {}  # use_prune=True: see _pruned

    def close(self) -> None:
        """Close the executor; a trainer of a parameter-server job tells its servers it is done."""
        if not self._closed:
            from fluidcompat.transpiler import rpc

            rpc.close_client()
        self._closed = True

    # -- slot-file datasets (fluid.DatasetFactory) -----------------------------------------------------
    def train_from_dataset(
        self, program=None, dataset=None, scope=None, thread=0, debug=False, fetch_list=None, fetch_info=None,
        print_period=100, fetch_handler=None,
    ):  # fmt: skip
        """Run ``program`` once per batch of ``dataset`` (an InMemoryDataset or QueueDataset), in one
        thread; after every ``print_period``-th batch (counted over the calls, as fluid did) print each ``fetch_list``
        variable as fluid printed it, under its ``fetch_info`` label. Returns None."""
        return self._run_from_dataset(program, dataset, scope, fetch_list, fetch_info, print_period, fetch_handler)

    def infer_from_dataset(
        self, program=None, dataset=None, scope=None, thread=0, debug=False, fetch_list=None, fetch_info=None,
        print_period=100, fetch_handler=None,
    ):  # fmt: skip
        """As ``train_from_dataset``: the program runs as it is (give it a test program: fluid 1.8.5 also
        ran the optimizer ops of a training program here)."""
        return self._run_from_dataset(program, dataset, scope, fetch_list, fetch_info, print_period, fetch_handler)

    def _run_from_dataset(self, program, dataset, scope, fetch_list, fetch_info, print_period, fetch_handler):
        if dataset is None:
            raise RuntimeError("dataset is need and should be initialized")
        fluid_dataset = _fluid_dataset()
        if fluid_dataset is None or not isinstance(dataset, fluid_dataset.DatasetBase):
            raise TypeError(f"dataset must come from fluid.DatasetFactory().create_dataset. Received: {type(dataset)}")
        fetch_list = list(fetch_list or [])
        names = [v.name if isinstance(v, Variable) else str(v) for v in fetch_list]
        labels = list(fetch_info) if fetch_info is not None else names
        if len(labels) != len(names):
            raise ValueError(f"fetch_info has {len(labels)} labels for {len(names)} fetch_list variables")
        if not isinstance(print_period, int) or print_period <= 0:
            raise ValueError(f"print_period must be a positive int. Received: {print_period!r}")
        program = default_main_program() if program is None else program
        if getattr(program, "_pipeline_opt", None):
            from fluidcompat.executor.sections import SectionRunner

            step = functools.partial(SectionRunner(program, self, names).run, scope=scope)
        else:
            step = functools.partial(self.run, program, fetch_list=names, scope=scope, return_numpy=False)
        if fetch_handler is not None:  # called every period_secs while the batches run (fluid_dataset)
            from fluidcompat.executor.scope import global_scope

            monitor = fluid_dataset.FetchHandlerMonitor(scope if scope is not None else global_scope(), fetch_handler)
            monitor.start()
            try:
                return self._run_batches(dataset, step, names, labels, print_period)
            finally:
                monitor.stop()
        return self._run_batches(dataset, step, names, labels, print_period)

    def _run_batches(self, dataset, step, names, labels, print_period):
        global _DATASET_BATCHES
        for feed in dataset._feeds(self.place):
            got = step(feed=feed)
            _DATASET_BATCHES += 1
            if names and _DATASET_BATCHES % print_period == 0:
                lods = dataset._dense_lods(feed)
                sys.stdout.write(
                    "".join(_dataset_print(label, n, t, lods.get(n)) for label, n, t in zip(labels, names, got))
                )
                sys.stdout.flush()
        return None

    def _feed_tensor(self, name: str, value, var: Variable) -> torch.Tensor:
        return _with_fed_lod(_to_device(self._feed_host(name, value, var), self._device), value)

    def _feed_host(self, name: str, value, var: Variable) -> torch.Tensor:
        """The fed value checked against ``var`` and as a tensor (where it was: host memory for arrays)."""
        if isinstance(value, LoDTensor):
            value = value.torch()
        if torch.is_tensor(value):
            t = value.detach()
            if var.need_check_feed:
                _check_feed(var, list(t.shape), np_name(vartype_of(t)))
            return t
        if isinstance(value, np.ndarray):
            arr = value
        elif np.isscalar(value):
            arr = np.array([value]).astype(np_name(var.dtype))
        elif isinstance(value, (list, tuple)):
            if var.lod_level:
                raise RuntimeError(
                    "Some of your feed data hold LoD information. They can not be completely cast from a list of "
                    "Python ndarray to LoDTensor. Please convert data to LoDTensor directly before feeding the data. "
                    f"('{name}' has lod_level {var.lod_level}: feed fluid.create_lod_tensor(data, [lengths], place) "
                    "or use fluid.DataFeeder.)"
                )
            try:
                arr = np.asarray(value, dtype=np_name(var.dtype))
            except ValueError as e:  # a ragged list (fluid's RuntimeError), or items that are not numbers
                if "sequence" not in str(e) and "inhomogeneous" not in str(e):
                    raise ValueError(
                        f"The feed value of '{name}' does not convert to {np_name(var.dtype)}: {e}"
                    ) from None
                raise RuntimeError(
                    "Some of your feed data hold LoD information. They can not be completely cast from a list of "
                    "Python ndarray to LoDTensor. Please convert data to LoDTensor directly before feeding the data. "
                    f"('{name}' is a list of rows of different lengths: {e})"
                ) from None
        else:
            raise TypeError(
                f"The feed value of '{name}' must be a numpy array, LoDTensor or scalar. "
                f"Received: {type(value).__name__}"
            )
        if var.need_check_feed:
            _check_feed(var, arr.shape, arr.dtype.name)
        to_vartype(arr.dtype)
        if not arr.dtype.isnative:  # big-endian data (read from a file): the same values in this machine's order
            return torch.from_numpy(np.array(arr, dtype=arr.dtype.newbyteorder("="), order="C"))
        if self._device.type != "cpu" and arr.flags.c_contiguous and arr.flags.writeable:
            return torch.from_numpy(arr)  # copied once, into the staging buffer (_to_device)
        return torch.from_numpy(np.array(arr, copy=True, order="C"))

    def run(
        self,
        program=None,
        feed=None,
        fetch_list=None,
        feed_var_name="feed",
        fetch_var_name="fetch",
        scope: Optional[Scope] = None,
        return_numpy: bool = True,
        use_program_cache: bool = False,
        return_merged: bool = True,
        use_prune: bool = False,
    ):
        """Run ``program`` with ``feed`` (name -> array) and return the ``fetch_list`` values.

        A run done before with the same program, feed names, fetch list and scope goes straight to
        its ``_Runner``; a data-parallel CompiledProgram over several places of this process to
        ``data_parallel.run``; a parameter server's program to the RPC server; any other to
        ``_run_program`` (docs/architecture.md: the path of a feed value)."""
        try:
            target = default_main_program() if program is None else program
            got = self._run_again(target, feed, fetch_list, scope, use_prune, return_numpy)
            if got is not _NOT_RUN:
                return got if return_merged or type(target) is Program else [[v] for v in got]
            if self._closed:
                raise RuntimeError("Attempted to use a closed Executor")
            if program is None:
                program = default_main_program()
                if not program.global_block().ops:
                    warnings.warn(
                        "Now you are using default_main_program, but there are no operators in the program to be "
                        "executed. Please ensure you create model correctly or you can pass the Program or the "
                        "CompiledProgram manually.",
                        stacklevel=2,
                    )
                passed = None
            else:
                passed = program
            if isinstance(program, CompiledProgram) and program._is_data_parallel:
                devices = self._data_parallel_devices(program)
                if devices > 1:  # several places in this process: the batch split across them
                    return self._run_places(program, devices, feed, fetch_list, scope, return_numpy, return_merged)
            runnable = self._runnable(program, scope)
            if any(op.type == "listen_and_serv" for op in runnable.global_block().ops):  # a parameter server
                from fluidcompat.transpiler import rpc

                rpc.serve(self, runnable, scope if scope is not None else global_scope())
                return []
            if isinstance(passed, Program) and not runnable.global_block().ops:
                warnings.warn(
                    "There are no operators in the program to be executed. If you pass Program manually, please use "
                    "fluid.program_guard to ensure the current Program is being used.",
                    stacklevel=2,
                )
            got = self._run_program(program, runnable, feed, fetch_list, scope, return_numpy, use_prune)
            # a CompiledProgram's values per place (one here) with return_merged=False, as fluid's parallel executor
            return got if return_merged or not isinstance(program, CompiledProgram) else [[v] for v in got]
        except Exception as e:
            # fluid 1.8's notice before any error but the end of a reader's data (a warning: shown once
            # per process unless the warnings filter says otherwise)
            if not isinstance(e, EOFException):
                warnings.warn("The following exception is not an EOF exception.", stacklevel=2)
            raise

    def _run_again(self, target, feed, fetch_list, scope, use_prune, return_numpy):
        """The values of a run done before with the same program version, feed names, fetch list
        and scope, through its ``_Runner``; ``_NOT_RUN`` when there is none (or it cannot be used)."""
        if (
            type(target) not in (Program, CompiledProgram)
            or (feed is not None and type(feed) is not dict)
            or RECORDER.enabled
            or any_vlog()
            or flags.CHECK_NAN_INF
        ):
            return _NOT_RUN
        names = None if feed is None else tuple(feed)
        fast = self._runners.get((target, names, _fetch_key(fetch_list), scope, use_prune))
        if fast is None or fast.version != fast.program._version or self._closed:
            return _NOT_RUN
        try:
            return fast.run(feed, scope if scope is not None else global_scope(), return_numpy)
        except _FedLoD:  # planned for values without a LoD: planned again
            return _NOT_RUN

    def _run_places(self, program, devices, feed, fetch_list, scope, return_numpy, return_merged):
        """A data-parallel CompiledProgram over ``devices`` places of this process."""
        from fluidcompat.executor import data_parallel

        scope = scope if scope is not None else global_scope()
        if feed is not None and not isinstance(feed, (dict, list, tuple)):
            raise TypeError(f"feed requires dict as its Parameter. But you passed in {type(feed)}")
        names = _fetch_names(fetch_list)
        return data_parallel.run(self, program, devices, feed or {}, names, scope, return_numpy, return_merged)

    @staticmethod
    def _runnable(program, scope) -> Program:
        """The Program that runs for ``program`` (a CompiledProgram's, in ``scope``), its desc-API
        ops completed."""
        if isinstance(program, CompiledProgram):
            program = program._program_for(scope if scope is not None else global_scope())
        if not isinstance(program, Program):
            raise TypeError(f"Executor.run expects a Program or CompiledProgram. Received: {type(program).__name__}")
        if program._desc_dirty:  # ops made through the desc API: as fluid ran its C++ program, they run
            program._sync_with_cpp()  # without an explicit sync
        return program

    def _run_program(self, original, program: Program, feed, fetch_list, scope, return_numpy, use_prune):
        """``program`` (run for ``original``, a Program or CompiledProgram) fed, planned (once per
        content, feed names and fetch names), run and fetched; its ``_Runner`` kept from its second run."""
        original_feed, original_scope = feed, scope
        scope = scope if scope is not None else global_scope()
        fetch_names = _fetch_names(fetch_list)
        if feed is None:
            feed = {}
        elif isinstance(feed, (list, tuple)):
            if len(feed) != 1:
                raise AssertionError("Not compiled with data parallel")
            feed = feed[0]
        if not isinstance(feed, dict):
            raise TypeError(f"feed requires dict as its Parameter. But you passed in {type(feed)}")
        if use_prune:
            program = self._pruned(program, feed, fetch_list)
        block = program.global_block()
        recorder = RECORDER if RECORDER.enabled else None
        vlog = VLog() if any_vlog() else None
        vlog = vlog if vlog is not None and vlog.on else None
        compiled = isinstance(original, CompiledProgram)
        # a CompiledProgram is recorded as fluid's parallel executor recorded it: no feed ops, the
        # executor's own spans on this thread, ops / eager deletions / Fetch on a worker list
        parallel = recorder is not None and compiled
        main = recorder.thread_events().events if recorder else None  # this thread's event list
        fed = self._feed_all(block, feed, main, parallel, vlog)
        _check_fetch_names(block, scope, fetch_names)

        # fed LoDTensors with a LoD make their LoD travel even where the program declares none
        fed_lod = any(lod_of(t) for t in fed.values())
        key = (tuple(sorted(fed)), tuple(fetch_names), fed_lod)
        t0 = now_ns() if parallel else 0
        prepared, again = self._cache.get(program, key, lambda: self._prepare(program, fed, fetch_names, fed_lod))
        accelerated = _accelerator(original, prepared)
        if parallel:
            main.append(Event("FastThreadedSSAGraphExecutorPrepare", ORDINARY, t0, now_ns(), 0))
        t0 = now_ns() if parallel else 0
        if compiled and original._first_run_in(scope) and parallel:
            main.append(Event("InitLocalVars", ORDINARY, t0, now_ns(), 0))
        check = flags.CHECK_NAN_INF  # NOTE: [Checking for NaN and Inf] in interpreter.py
        if again and not vlog and not recorder and not check and fed.keys() == feed.keys() and block.ops:
            # the next run with the same program, feed names, fetch list and scope skips the checks above
            # (from its second run: a program run once, a clone made for one step, is not held)
            fast_key = (original, None if original_feed is None else tuple(feed), _fetch_key(fetch_list),
                        original_scope, use_prune)  # fmt: skip
            if fast_key[2] is not None:
                while len(self._runners) >= ProgramCache.LIMIT:  # (the oldest first, as the cache above)
                    del self._runners[next(iter(self._runners))]
                self._runners[fast_key] = _Runner(self, program, prepared, block, list(feed), fetch_names, accelerated)
        env: Dict[str, torch.Tensor] = dict(fed)
        if recorder or vlog or check:
            return self._run_observed(
                prepared, block, env, scope, fetch_names, return_numpy, recorder, vlog, compiled, check
            )
        _read_externals(prepared, block, scope, env)
        with torch.no_grad():
            (accelerated or prepared.run)(env)
        _write_persistables(prepared, env, scope)
        return _fetch_all(accelerated, fetch_names, env, scope, return_numpy)

    def _feed_all(self, block, feed: dict, main, parallel: bool, vlog) -> Dict[str, torch.Tensor]:
        """The fed values as tensors on the executor's device (the feed ops' work), recorded in the
        event list ``main`` and the VLOG when they are on."""
        fed: Dict[str, torch.Tensor] = {}
        # fluid prepends one feed op per name, so the last name is fed first
        for col, (name, value) in reversed(list(enumerate(feed.items()))):
            if not isinstance(name, str):
                raise TypeError(_feed_key_error(name))
            var = block.vars.get(name)
            if var is None:
                _unknown_feed(name)
                continue
            t0 = now_ns() if main is not None else 0
            host = self._feed_host(name, value, var)
            c0 = now_ns() if main is not None else 0
            fed[name] = _with_fed_lod(_to_device(host, self._device), value)
            if main is not None:
                t1 = now_ns()
                if self._where != "cpu" and not _on_gpu(value):  # through page-locked memory (_to_device)
                    copy = ("" if parallel else "feed/") + "GpuMemcpyAsync:CUDAPinned->GPU"
                    main.append(Event(copy, ORDINARY, c0, t1, 0))
                if not parallel:
                    main.append(Event("feed", ORDINARY, t0, t1, 0))
            if vlog:
                vlog("feed_op", 58, f"Feed variable feed's {col} column to variable {name}")
                vlog(
                    "operator",
                    180,
                    f"{place_text(self._where)} Op(feed), inputs:{{X[feed:[-1]({{{{}}}})]}}, "
                    f"outputs:{{Out[{var_debug(name, fed[name], vartype_of, lod_of)}]}}.",
                )
        return fed

    def _data_parallel_devices(self, compiled: CompiledProgram) -> int:
        """The places a data-parallel CompiledProgram runs on in this process (1 in a launched worker,
        whose data parallelism is across the workers)."""
        if compiled._devices is None:
            from fluidcompat import process_group
            from fluidcompat.executor import data_parallel

            if process_group.get_world_size() > 1 or getattr(compiled._program, "_is_distributed", False):
                compiled._devices = 1
            else:
                compiled._devices = data_parallel.device_count(compiled, self.place)
        return compiled._devices

    def _run_env(self, program: Program, feed: dict, keep: List[str], scope: Scope, deletions: bool = True) -> dict:
        """``program`` run over ``feed`` in ``scope`` (its persistables written there); its values, the
        ``keep`` names among them, returned by name. Fed tensors (and sparse gradients) of an earlier
        run are taken as they are. For one device of a data-parallel run (data_parallel.py)."""
        block = program.global_block()
        fed: Dict[str, Any] = {}
        for name, value in feed.items():
            var = block.vars.get(name)
            if var is None:  # as Executor.run
                _unknown_feed(name)
                continue
            fed[name] = value if torch.is_tensor(value) or isinstance(value, SelectedRows) else (
                self._feed_tensor(name, value, var))  # fmt: skip
        _check_fetch_names(block, scope, keep)
        fed_lod = any(lod_of(t) for t in fed.values())
        key = (tuple(sorted(fed)), tuple(keep), fed_lod)
        prepared = self._cache.get(program, key, lambda: self._prepare(program, fed, keep, fed_lod))[0]
        env: Dict[str, Any] = dict(fed)
        _read_externals(prepared, block, scope, env)
        with torch.no_grad():
            if RECORDER.enabled or flags.CHECK_NAN_INF:  # recorded as fluid's parallel executor: eager
                # deletions their own events; or each op's outputs checked for NaN and Inf
                recorder = RECORDER if RECORDER.enabled else None
                prepared.run_instrumented(env, recorder, deletions=deletions, check_nan_inf=flags.CHECK_NAN_INF)
            else:
                prepared.run(env)
        _write_persistables(prepared, env, scope)
        return env

    def _run_observed(
        self, prepared, block, env, scope, fetch_names, return_numpy, recorder, vlog, compiled, check_nan_inf=False
    ):
        """The run with the profiler or VLOG on: events for every op, copy and fetch (for a
        CompiledProgram, fluid's parallel-executor spans around them), log lines; or with
        FLAGS_check_nan_inf, each op's outputs checked."""
        parallel = recorder is not None and compiled
        main = recorder.thread_events().events if recorder else None
        t0 = now_ns()
        _read_externals(prepared, block, scope, env)
        if parallel:
            main.append(Event("ScopeBufferedMonitor::pre_local_exec_scopes_process", ORDINARY, t0, now_ns(), 0))
        results = []
        worker = recorder.to_worker(True) if parallel else main
        try:
            with torch.no_grad():
                last = prepared.run_instrumented(env, recorder, vlog, deletions=compiled, check_nan_inf=check_nan_inf)
            fetch = "Fetch" if parallel else "fetch"
            # fluid's fetch op copied with TensorCopySync; its parallel executor's Fetch asynchronously
            copy = fetch + ("/GpuMemcpyAsync:GPU->CPU" if parallel else "/GpuMemcpySync:GPU->CPU")
            # the copies' GPU times (NOTE: [Timing GPU ops] in fluidcompat/profiler/events.py)
            gpu = recorder.gpu_timing(worker) if recorder and recorder.wants_gpu_time and prepared.on_cuda else None
            for col, n in enumerate(fetch_names):
                value = env.get(n)
                device = (value.device.index or 0) if gpu and return_numpy and _on_gpu(value) else None
                if device is not None:  # from the end of the last GPU span when nothing ran since
                    g0 = span_start(gpu, device, last)
                t0 = now_ns()
                results.append(self._fetched(n, env, scope, return_numpy))
                last = (span_end(gpu, device), device) if device is not None else None
                where = prepared.plan.locations.get(n, self._where)
                if recorder:
                    t1 = now_ns()
                    copied = return_numpy and where != "cpu" and torch.is_tensor(value)
                    if copied:
                        worker.append(Event(copy, ORDINARY, t0, t1, 0))
                    worker.append(Event(fetch, ORDINARY, t0, t1, 0))
                    if device is not None:  # the copy's GPU time, also the fetch's
                        at = [len(worker) - 2, len(worker) - 1] if copied else [len(worker) - 1]
                        gpu[2]((worker, at, g0, last[0], device))  # (Recorder.gpu_timing: its pending list)
                if vlog:
                    self._log_fetch(vlog, col, n, env.get(n), where)
        finally:
            if parallel:
                recorder.to_worker(False)
        t0 = now_ns()
        _write_persistables(prepared, env, scope)
        if parallel:
            main.append(Event("ScopeBufferedMonitor::post_local_exec_scopes_process", ORDINARY, t0, now_ns(), 0))
        return results

    @staticmethod
    def _log_fetch(vlog, col: int, name: str, value, where: str) -> None:
        vlog("fetch_op", 99, f"Fetch variable {name} to variable fetch's {col} column.")
        if torch.is_tensor(value):
            src = place_text(where)
            vlog("tensor_util", 129, f"TensorCopySync {dims_text(value.shape)} from {src} to CPUPlace")
        vlog(
            "operator",
            180,
            f"CPUPlace Op(fetch), inputs:{{X[{var_debug(name, value, vartype_of, lod_of)}]}}, "
            f"outputs:{{Out[fetch:[-1]({{{{}}}})]}}.",
        )

    def _pruned(self, program: Program, feed: dict, fetch_list) -> Program:
        """``use_prune=True``: the program cut down to what the fetched variables and the optimizer ops
        need (those fetched, else all of them, as fluid 1.8), from the fed variables; cached per
        program version, feed names and fetch list."""
        items = [fetch_list] if isinstance(fetch_list, (Variable, str, Operator)) else list(fetch_list or [])
        optimize = [op for op in items if isinstance(op, Operator)] or [
            op for op in program.global_block().ops if op.attrs.get("op_role", 0) & OpRole.Optimize
        ]
        targets = [t for t in items if not isinstance(t, Operator)] + optimize
        key = (program, program._version, tuple(sorted(feed)), tuple(id(t) if isinstance(t, Operator) else
               (t.name if isinstance(t, Variable) else t) for t in targets))  # fmt: skip
        cache = self._prune_cache
        if key not in cache:
            if len(cache) > 32:
                cache.clear()
            cache[key] = program._prune_with_input(list(feed), targets)
        return cache[key]

    @collector.pausing
    def _prepare(self, program: Program, fed, fetch_names, fed_lod: bool = False) -> PreparedBlock:
        block = program.global_block()
        if os.environ.get(ENV_EXPLAIN) and block.ops:
            from fluidcompat.executor.explain import placement_report

            sys.stderr.write(placement_report(program, self.place, _batch_of(block, fed)))
        plan = plan_block(block, self.place, fed)
        persist = [
            n
            for op in block.ops
            for n in op.output_arg_names
            if (v := block._find_var_recursive(n)) is not None and v.persistable
        ]
        # a fed persistable variable stays in the scope too, as fluid's feed op wrote it there
        persist += [n for n in fed if (v := block.vars.get(n)) is not None and v.persistable]
        prepared = PreparedBlock(plan, keep=list(fetch_names) + persist, lod=True if fed_lod else None)
        prepared.persist_outputs = tuple(dict.fromkeys(persist))
        prepared.fetch_names = tuple(fetch_names)
        return prepared

    @staticmethod
    def _fetched(name: str, env, scope: Scope, return_numpy: bool):
        t = env.get(name)
        if t is None:
            sv = scope.find_var(name)
            t = sv.tensor._t if sv is not None else None
        if t is None:
            return None
        if isinstance(t, list):  # a tensor array: its elements
            return [Executor._fetched_value(v, return_numpy) for v in t]
        return Executor._fetched_value(t, return_numpy)

    @staticmethod
    def _fetched_value(t, return_numpy: bool):
        if t is None:
            return None
        if not torch.is_tensor(t):  # a sparse gradient: fetched as the dense tensor it stands for
            t = t.to_dense()
        lod = lod_of(t)
        if return_numpy:
            if lod:
                raise RuntimeError(_LOD_TO_NUMPY)
            return fetched(_to_numpy(t))
        return LoDTensor(t, made_lod=lod)


# fluid 1.8.5's text (run's return_numpy and as_numpy alike), spaces of its source lines included
_LOD_TO_NUMPY = (
    "Some of your fetched tensors hold LoD information.             They can not be completely cast to "
    "Python ndarray.             Please set the parameter 'return_numpy' as 'False' to             "
    "return LoDTensor itself directly."
)


def _as_lodtensor(data, place, dtype=None) -> LoDTensor:
    """A LoDTensor of ``data`` (an array, a list, or a number with its ``dtype``) on ``place``."""
    if np.isscalar(data):
        assert dtype is not None, "The dtype should be given when feed data is not np.ndarray"
        data = np.array([data]).astype(np_dtype(dtype))
    elif isinstance(data, (list, tuple)):
        data = np.array(data)
        if data.dtype == object:
            raise TypeError(
                "The type of data in feed must be np.ndarray or a list / tuple of numbers of one shape. "
                f"Received: {type(data).__name__} of ragged rows"
            )
    tensor = LoDTensor()
    tensor.set(data, place)
    return tensor


def as_numpy(tensor):
    """``fluid.executor.as_numpy``: a LoDTensor without LoD as a new numpy array (None when it holds
    no value), a list or LoDTensorArray of them as a list. The array converts to a number when it
    holds one element, like a fetched value (FetchedArray)."""
    if isinstance(tensor, list):  # (a LoDTensorArray is a list)
        return [as_numpy(t) for t in tensor]
    if not isinstance(tensor, LoDTensor):
        raise TypeError(
            f"as_numpy expects a LoDTensor, a LoDTensorArray or a list of them. Received: {type(tensor).__name__}"
        )
    if tensor.lod():
        raise RuntimeError(_LOD_TO_NUMPY)
    if not tensor._is_initialized():
        return None
    return fetched(np.array(tensor))


def _with_fed_lod(t: torch.Tensor, value) -> torch.Tensor:
    """The fed tensor carrying the LoD of a fed LoDTensor (NOTE: [LoD values] in fluidcompat_ops/sequence.py)."""
    if isinstance(value, LoDTensor) and value._lod:
        # the scope's own tensor: the run's value is a new tensor object over it
        return with_lod(t.detach() if t is value._t else t, value.lod())
    return t


def _to_device(t: torch.Tensor, device: torch.device) -> torch.Tensor:
    """``t`` on ``device``. To a GPU from host memory through page-locked memory without blocking the
    host: the tensor itself when pinned (LoDTensor.set(a, CUDAPinnedPlace())), else a staging buffer
    from torch's caching host allocator (reused once the copy has finished)."""
    if t.device == device or device.type == "cpu":
        return t if t.device == device else t.to(device)
    if t.device.type == "cpu" and not t.is_pinned():
        staged = torch.empty(t.shape, dtype=t.dtype, pin_memory=True)
        staged.copy_(t)
        t = staged
    return t.to(device, non_blocking=True)


# Below this many bytes a fetch from a GPU is a plain blocking copy: on an H200 machine a 300-byte
# fetch took 16.6 us as a plain copy and 26.4 us through a pinned staging buffer (bench/gpu_launches.py); the
# staging buffer pays off where the copy's bandwidth matters.
_PINNED_FETCH_BYTES = 1 << 16


def _to_numpy(t: torch.Tensor) -> np.ndarray:
    """A fetched tensor as a new host array; from a GPU through a page-locked staging buffer when it is
    large (_PINNED_FETCH_BYTES)."""
    if t.requires_grad:
        t = t.detach()
    if not t.is_cuda:
        return (t if t.device.type == "cpu" else t.cpu()).numpy().copy()
    if t.numel() * t.element_size() >= _PINNED_FETCH_BYTES:
        staged = torch.empty(t.shape, dtype=t.dtype, pin_memory=True)
        staged.copy_(t, non_blocking=True)
        torch.cuda.current_stream(t.device).synchronize()
        return staged.numpy().copy()
    a = t.cpu().numpy()  # a new host tensor's memory: no one else holds it
    return a if a.flags.c_contiguous else a.copy()


def _batch_of(block, fed) -> int:
    """The batch size of a run: the first dimension of a fed tensor whose variable declares it -1."""
    for name, t in fed.items():
        var = block.vars.get(name)
        if var is not None and var.shape and var.shape[0] < 0 and t.dim():
            return int(t.shape[0])
    return 1


def _on_gpu(value) -> bool:
    """Whether a fed value already lives in GPU memory (a LoDTensor or tensor from an earlier run)."""
    t = value._t if isinstance(value, LoDTensor) else value
    return torch.is_tensor(t) and t.device.type == "cuda"


def _read_externals(prepared: PreparedBlock, block, scope: Scope, env) -> None:
    """Put into ``env`` what the run reads from the scope, on the device the plan wants it."""
    for n, dev in prepared.externals.items():
        sv = scope.find_var(n)
        t = sv.tensor._t if sv is not None else None
        if t is None:
            if n in prepared.optional_externals or _read_optionally(block, n):
                continue  # e.g. detection_map's state before its first batch
            var = block.vars.get(n)
            if var is not None and var.type == VarType.LOD_TENSOR_ARRAY:
                env[n] = []  # fluid's executor created every variable: a tensor array starts empty
                continue
            raise _missing_input(prepared, n, block)
        env[n] = t if dev is None or t.device == dev else t.to(dev)
        if prepared.lod and sv.tensor._lod:  # a scope LoDTensor's LoD (NOTE: [LoD values] in sequence.py)
            env[n] = with_lod(env[n].detach() if env[n] is t else env[n], sv.tensor.lod())


def _read_optionally(block, name: str) -> bool:
    """Whether every op of ``block`` that reads ``name`` reads it in a slot that may hold no value."""
    readers = [(op, slot) for op in block.ops for slot, names in op.inputs.items() if name in names]
    return bool(readers) and all(slot in op._def.optional_inputs for op, slot in readers)


def _write_persistables(prepared: PreparedBlock, env, scope: Scope) -> None:
    """Keep in the scope the persistable variables the run wrote (in a program with LoD, with the
    LoD each now has)."""
    for n in prepared.persist_outputs:
        t = env.get(n)
        if t is not None:
            tensor = scope.var(n).tensor
            tensor._t = t
            if prepared.lod:
                tensor._lod = [list(level) for level in lod_of(t)]


def _fetch_all(accelerated, names, env, scope: Scope, return_numpy: bool) -> list:
    """The fetched values of a run; after a torch.compile / CUDA graph runner, from the host buffers a
    replayed graph filled (NOTE: [Fetches in the graph] in accelerate.py), or as copies of the graph's
    buffers for LoDTensors (return_numpy=False)."""
    if accelerated is not None:
        if return_numpy:
            host = accelerated.host_fetched(names)
            if host is not None:
                return [fetched(t.numpy().copy()) for t in host]
        else:
            accelerated.own_fetched(env, names)
    return [Executor._fetched(n, env, scope, return_numpy) for n in names]


def _accelerator(program, prepared: PreparedBlock):
    """The torch.compile / CUDA graph runner a CompiledProgram's BuildStrategy asks for (one per
    prepared block), or None."""
    strategy = program._build_strategy if isinstance(program, CompiledProgram) else None
    if strategy is None or not (strategy.use_torch_compile or strategy.use_cuda_graph):
        return None
    from fluidcompat.executor import accelerate

    runners = prepared.accelerators
    if strategy.use_cuda_graph:
        if "graph" not in runners:
            runners["graph"] = accelerate.CudaGraphed(prepared)
        return runners["graph"]
    key = ("compile", strategy.torch_compile_backend)
    if key not in runners:
        runners[key] = accelerate.TorchCompiled(prepared, strategy.torch_compile_backend)
    return runners[key]


def _may_be_written(program: Program, name: str, persist: set) -> bool:
    """Whether a run could write into the tensor fed as ``name`` (so the feed must be a copy): some
    op updates in place (an output that is also its input) a variable that may share memory with it
    (the fed variable, or anything computed from it), or such a variable is kept in the scope."""
    shared = {name}
    for block in program.blocks:
        for op in block.ops:
            ins = set(op.input_arg_names)
            in_place = ins.intersection(op.output_arg_names)
            if in_place & shared:
                return True
            if ins & shared:
                shared.update(n for n in op.output_arg_names if n not in in_place)
    return bool(shared & persist)


# Batches run by train/infer_from_dataset in this process: fluid 1.8.5 counted them across calls and
# printed the fetched variables after every print_period-th one.
_DATASET_BATCHES = 0


def _fluid_dataset():
    """fluidcompat.fluid_dataset, whose datasets train_from_dataset runs, if it is imported: it sits above
    the executor, and until it is imported there is no dataset to run."""
    return sys.modules.get("fluidcompat.fluid_dataset")


def _dataset_print(label: str, name: str, value, dense_lod=None) -> str:
    """One fetched variable as fluid's dataset trainer printed it (C++ stream formatting: six
    significant digits); ``dense_lod``: the LoD fluid's data feed gave a dense slot."""
    from fluidcompat.logging import tensor_text

    t = value.torch() if isinstance(value, LoDTensor) else torch.as_tensor(np.asarray(value))
    lod = (value._lod if isinstance(value, LoDTensor) else []) or dense_lod or []
    return f"{label}\t{name}\t{tensor_text(t, lod, vartype_of(t))}\t\n"


def _fetch_key(fetch_list):
    """The fetch list as a tuple of names, or None when it is not a plain list of names/Variables."""
    if fetch_list is None:
        return ()
    if type(fetch_list) is str:
        return (fetch_list,)
    if isinstance(fetch_list, Variable):
        return (fetch_list.name,)
    if type(fetch_list) not in (list, tuple):
        return None
    names = []
    for f in fetch_list:
        if type(f) is str:
            names.append(f)
        elif isinstance(f, Variable):
            names.append(f.name)
        else:
            return None
    return tuple(names)


_NOT_RUN = object()  # Executor._run_again: no earlier run to repeat


class _FedLoD(Exception):
    """A feed of a run prepared for values without a LoD carries one."""


class _Runner:
    """A run Executor.run has done before, with everything it checked and looked up kept: the next
    run with the same program version, feed names, fetch list and scope feeds, runs and fetches."""

    def __init__(
        self, exe: "Executor", program: Program, prepared: PreparedBlock, block, feed_names, fetch_names, accelerated
    ):
        self.exe = exe
        self.program = program
        self.version = program._version
        self.accelerated = accelerated  # a torch.compile / CUDA graph runner, or None
        self.prepared = prepared
        self.block = block
        self.feeds = []
        for n in feed_names:
            var = block.vars[n]
            # (declared shape, dtype, shapes already seen to fit it): numpy's dtype.name is a Python property
            # (1.5 us a read), a dtype comparison and a set look-up are not
            check = (tuple(var.shape), np.dtype(np_name(var.dtype)), set()) if var.need_check_feed else None
            self.feeds.append((n, var, check, _may_be_written(program, n, set(prepared.persist_outputs))))
        self.fetch = tuple(fetch_names)
        self.device = exe._device

    def _feed(self, name, value, var, check, copy):
        if type(value) is np.ndarray and check is not None and value.flags.c_contiguous:
            shape, dtype, fitting = check
            if value.dtype == dtype and (value.shape in fitting or self._fits(fitting, shape, value.shape)):
                t = torch.from_numpy(value)  # shares the caller's array: nothing in the run writes to it
                if self.device.type != "cpu":
                    return _to_device(t, self.device)
                return t.clone() if copy else t
        t = self.exe._feed_tensor(name, value, var)
        if not self.prepared.lod and lod_of(t):
            raise _FedLoD  # planned for values without a LoD: Executor.run plans again
        return t

    @staticmethod
    def _fits(fitting: set, vshape, shape) -> bool:
        if not _shape_fits(vshape, shape):
            return False
        if len(fitting) >= 16:  # a few batch sizes are usual: keep the set small
            fitting.clear()
        fitting.add(shape)
        return True

    def run(self, feed, scope, return_numpy):
        env = {}
        for name, var, check, copy in self.feeds:
            env[name] = self._feed(name, feed[name], var, check, copy)
        _read_externals(self.prepared, self.block, scope, env)
        prev = torch.is_grad_enabled()
        torch._C._set_grad_enabled(False)
        try:
            (self.accelerated or self.prepared.run)(env)
        finally:
            torch._C._set_grad_enabled(prev)
        _write_persistables(self.prepared, env, scope)
        if self.accelerated is None:
            return [Executor._fetched(n, env, scope, return_numpy) for n in self.fetch]
        return _fetch_all(self.accelerated, self.fetch, env, scope, return_numpy)


def _missing_input(prepared: PreparedBlock, name: str, block) -> UninitializedVariableError:
    for p in prepared.plan.ops:
        for slot, names in p.op.inputs.items():
            if name in names:
                var = block._find_var_recursive(name)
                fed_by_op = any(o.type == "feed" and name in o.output_arg_names for o in block.ops)  # a saved model
                feedable = var is not None and (var.is_data or fed_by_op)
                hint = f" Feed it: exe.run(feed={{'{name}': ...}})." if feedable else ""
                if not feedable and var is not None and var.persistable:
                    hint = (
                        " It is persistable (a parameter or optimizer state): run the startup program first, "
                        "exe.run(fluid.default_startup_program()), after optimizer.minimize, in this scope."
                    )
                return UninitializedVariableError(
                    f"The variable '{name}' read by op {p.index} ({p.op.type}) of block {block.idx} (input slot "
                    f"{slot}) is not initialized: it was not fed and the scope does not hold it.{hint}\n"
                    f"  built at {p.op.callsite_text()}"
                )
    return UninitializedVariableError(f"The variable '{name}' is not initialized.")
