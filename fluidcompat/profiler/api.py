"""``fluid.profiler``: start/stop/reset, the ``profiler`` context, and CUDA profiler ranges."""

from __future__ import annotations

import contextlib
import os
import sys
import warnings
from typing import Iterator, Optional

from fluidcompat.profiler.events import RECORDER, now_ns
from fluidcompat.profiler.report import format_reports

__all__ = ["cuda_profiler", "reset_profiler", "profiler", "start_profiler", "stop_profiler", "profiler_range"]

_STATES = ["CPU", "GPU", "All"]
_TRACERS = ["Default", "OpDetail", "AllOpDetail"]
_KEYS = ["default", "calls", "total", "max", "min", "ave"]


def _check_state(state, tracer_option) -> None:
    if state not in _STATES:
        raise ValueError("The state must be 'CPU' or 'GPU' or 'All'.")
    if tracer_option not in _TRACERS:
        raise ValueError("tracer option must be 'Default', 'OpDetail', 'AllOpDetail'.")


def _check_key(sorted_key) -> str:
    key = "default" if sorted_key is None else sorted_key
    if key not in _KEYS:
        raise ValueError("The sorted_key must be None or in 'calls', 'total', 'max', 'min' and 'ave'")
    return key


def start_profiler(state: str, tracer_option: str = "Default") -> None:
    """Start recording events; ``state`` is 'CPU', 'GPU' or 'All'. A second start is ignored."""
    if RECORDER.enabled:
        return
    _check_state(state, tracer_option)
    RECORDER.start(state, tracer_option)


def _write_profile(path: str) -> None:
    from fluidcompat import proto

    data = proto.profile_to_bytes(RECORDER.lists, RECORDER.wall_offset_ns, RECORDER.session_start_ns, now_ns())
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def stop_profiler(sorted_key: Optional[str] = None, profile_path: str = "/tmp/profile") -> None:
    """Stop recording, print the report to stdout and write the profile file for the timeline tool.

    A bad ``sorted_key`` raises and leaves the profiler running, so a second call can stop it.
    """
    if not RECORDER.enabled:
        return
    key = _check_key(sorted_key)
    RECORDER.resolve_gpu_times()
    text = format_reports(RECORDER.lists, RECORDER.state, key, RECORDER.tracer)
    try:
        if profile_path:
            _write_profile(profile_path)
    finally:
        RECORDER.stop()
        sys.stdout.write(text)
        sys.stdout.flush()


def reset_profiler() -> None:
    """Forget the events recorded so far; the profiler keeps running."""
    RECORDER.reset()


@contextlib.contextmanager
def profiler(
    state: str, sorted_key: Optional[str] = None, profile_path: str = "/tmp/profile", tracer_option: str = "Default"
) -> Iterator[None]:
    """Profile the block and print the report at its end.

    Compat: arguments are checked before the block runs, and the report is printed (and the
    profiler stopped) also when the block raises; fluid 1.8 left the profiler running then.
    """
    if not RECORDER.enabled:
        _check_state(state, tracer_option)
    _check_key(sorted_key)
    start_profiler(state, tracer_option)
    try:
        yield
    finally:
        stop_profiler(sorted_key, profile_path)


def _cuda():
    import torch

    return torch if torch.cuda.is_available() else None


@contextlib.contextmanager
def cuda_profiler(output_file: str, output_mode: Optional[str] = None, config=None) -> Iterator[None]:
    """Start the CUDA profiler API for the block, so that an external profiler (Nsight Systems or
    Compute, nvprof) run with capture-range=cudaProfilerApi records only this region.

    Compat: ``output_file``, ``output_mode`` and ``config`` were nvprof settings; they are checked
    and otherwise unused (the external profiler's own options decide the output). Without CUDA the
    block runs with a warning.
    """
    mode = "csv" if output_mode is None else output_mode
    if mode not in ("kvp", "csv"):
        raise ValueError("The output mode must be 'kvp' or 'csv'.")
    with profiler_range("cuda_profiler"):
        yield


@contextlib.contextmanager
def profiler_range(name: str = "fluidcompat") -> Iterator[None]:
    """cudaProfilerStart/Stop and an NVTX range named ``name`` around the block (a no-op with a
    warning where there is no CUDA)."""
    torch = _cuda()
    if torch is None:
        warnings.warn(f"{name}: no CUDA device here, so the CUDA profiler is not started", stacklevel=3)
        yield
        return
    torch.cuda.synchronize()
    torch.cuda.profiler.start()
    torch.cuda.nvtx.range_push(name)
    try:
        yield
    finally:
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_pop()
        torch.cuda.profiler.stop()
