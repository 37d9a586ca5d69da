"""``fluid.get_flags`` / ``set_flags``, ``require_version`` and fluid 1.8's retired memory helpers."""

from __future__ import annotations

import os
import re
import sys
import warnings

__all__ = ["get_flags", "set_flags", "require_version", "memory_optimize", "release_memory"]

# The FLAGS_ that scripts set through set_flags and read back; values start from the environment.
_FLAGS = {
    "FLAGS_eager_delete_tensor_gb": 0.0,
    "FLAGS_fraction_of_gpu_memory_to_use": 0.92,
    "FLAGS_allocator_strategy": "auto_growth",
    "FLAGS_check_nan_inf": False,
    "FLAGS_cudnn_deterministic": False,
    "FLAGS_cudnn_exhaustive_search": False,
    "FLAGS_benchmark": False,
    "FLAGS_paddle_num_threads": 1,
    "FLAGS_use_mkldnn": False,
    "FLAGS_selected_gpus": "",
    "FLAGS_memory_fraction_of_eager_deletion": 1.0,
    "FLAGS_fast_eager_deletion_mode": True,
    "FLAGS_conv_workspace_size_limit": 512,
}


# fluid 1.8.5's core.globals(): every global flag it listed, with its default
_GLOBALS = {
    "FLAGS_allocator_strategy": "auto_growth",
    "FLAGS_benchmark": False,
    "FLAGS_check_nan_inf": False,
    "FLAGS_cpu_deterministic": False,
    "FLAGS_eager_delete_tensor_gb": 0.0,
    "FLAGS_enable_parallel_graph": False,
    "FLAGS_enable_rpc_profiler": False,
    "FLAGS_fraction_of_cpu_memory_to_use": 1.0,
    "FLAGS_free_idle_chunk": False,
    "FLAGS_free_when_no_cache_hit": False,
    "FLAGS_fuse_parameter_groups_size": 1,
    "FLAGS_fuse_parameter_memory_size": -1.0,
    "FLAGS_init_allocated_mem": False,
    "FLAGS_initial_cpu_memory_in_mb": 500,
    "FLAGS_inner_op_parallelism": 0,
    "FLAGS_memory_fraction_of_eager_deletion": 1.0,
    "FLAGS_multiple_of_cupti_buffer_size": 1,
    "FLAGS_paddle_num_threads": 1,
    "FLAGS_pe_profile_fname": "",
    "FLAGS_print_sub_graph_dir": "",
    "FLAGS_reader_queue_speed_test_mode": False,
    "FLAGS_tracer_profile_fname": "xxgperf",
    "FLAGS_use_mkldnn": False,
    "FLAGS_use_pinned_memory": True,
    "FLAGS_use_system_allocator": False,
}
_global_values: dict = {}


def global_names() -> list:
    return sorted(_GLOBALS)


def get_global(name):
    """``core.globals()[name]``: a flag set through set_flags or the environment reads as such."""
    if name not in _GLOBALS:
        raise ValueError(f"Cannot find global variable {name}")
    if name in _FLAGS:
        return _current(name)
    if name in _global_values:
        return _global_values[name]
    raw = os.environ.get(name)
    default = _GLOBALS[name]
    if raw is None:
        return default
    if isinstance(default, bool):
        return raw.lower() in ("1", "true")
    return type(default)(raw)


def set_global(name, value) -> None:
    if name not in _GLOBALS:
        raise ValueError(f"Cannot find global variable {name}")
    if name in _FLAGS:
        set_flags({name: value})
    else:
        _global_values[name] = value


def _current(name):
    default = _FLAGS[name]
    raw = os.environ.get(name)
    if raw is None:
        return default
    if isinstance(default, bool):
        return raw.lower() in ("1", "true")
    return type(default)(raw)


# FLAGS_check_nan_inf as the executor reads it (NOTE: [Checking for NaN and Inf]): from the environment,
# read when fluidcompat is imported and again when an Executor is made (a script run by `fluidcompat
# run` sets os.environ before its own `import paddle.fluid`, which is when fluid read its FLAGS_),
# and from set_flags (which keeps the value in the environment too)
CHECK_NAN_INF = _current("FLAGS_check_nan_inf")


def refresh() -> None:
    global CHECK_NAN_INF
    CHECK_NAN_INF = _current("FLAGS_check_nan_inf")
    if "torch" in sys.modules:
        apply_num_threads()


def apply_num_threads() -> None:
    """Compute with FLAGS_paddle_num_threads threads (default 1), as fluid 1.8 set its math library:
    torch's default of one thread per core makes each small op wait on the others' spinning threads
    (a 13 x 69 matmul: 11 us on one thread, 10 ms on two on a loaded 2-core machine)."""
    import torch

    n = max(1, int(_current("FLAGS_paddle_num_threads")))
    if torch.get_num_threads() != n:
        torch.set_num_threads(n)


def get_flags(flags):
    """``{name: value}`` for a flag name or a list of them."""
    names = [flags] if isinstance(flags, str) else list(flags) if isinstance(flags, (list, tuple)) else None
    if names is None:
        raise TypeError("Flags in get_flags should be a list, tuple or string.")
    result = {}
    for name in names:
        if name not in _FLAGS:
            raise ValueError(f"Flag {name} cannot get its value through this function.")
        result[name] = _current(name)
    return result


def set_flags(flags):
    """Set flags from a dict; they are kept in the environment (FLAGS_selected_gpus there picks the
    device of CUDAPlace(0) as in fluid)."""
    if not isinstance(flags, dict):
        raise TypeError("flags in set_flags should be a dict")
    for name in flags:
        if name not in _FLAGS:
            raise ValueError(f"Flag {name} cannot set its value through this function.")
    for name, value in flags.items():
        os.environ[name] = str(value)
    refresh()


def _parse(version: str, what: str):
    if not isinstance(version, str):
        raise TypeError(f"The type of '{what}' in require_version must be str, but received {type(version)}.")
    if not re.match(r"^\d+(\.\d+){0,3}$", version):
        raise ValueError(
            f"The value of '{what}' in require_version must be in format '\\d+(\\.\\d+){{0,3}}', like '1.5.2.0', "
            f"but received {version}"
        )
    parts = [int(p) for p in version.split(".")]
    return parts + [0] * (4 - len(parts))


def require_version(min_version, max_version=None):
    """Fails unless the fluid version this runtime provides (1.8.5) is within [min, max]."""
    have = [1, 8, 5, 0]
    lo = _parse(min_version, "min_version")
    hi = _parse(max_version, "max_version") if max_version is not None else None
    if have < lo or (hi is not None and have > hi):
        wanted = f">= {min_version}" + (f" and <= {max_version}" if max_version is not None else "")
        raise Exception(
            f"VersionError: PaddlePaddle version {wanted} required, but 1.8.5 installed (fluidcompat provides the "
            "fluid 1.8.5 API)."
        )


def memory_optimize(input_program, skip_opt_set=None, print_log=False, level=0, skip_grads=True):
    """Retired in fluid 1.8 (a warning, no change); fluidcompat frees each temporary after its last use."""
    warnings.warn(
        "Caution! paddle.fluid.memory_optimize() is deprecated and not maintained any more, since it is not "
        "stable!\nThis API would not take any memory optimizations on your Program now, since we have provided "
        "default strategies for you.",
        stacklevel=2,
    )


def release_memory(input_program, skip_opt_set=None):
    """Retired in fluid 1.8 (a warning, no change)."""
    warnings.warn(
        "paddle.fluid.release_memory() is deprecated, it would not take any memory release on your program",
        stacklevel=2,
    )
