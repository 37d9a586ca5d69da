"""Places, ``device_guard`` and the one function that maps them to torch device strings.

Torch-free: whether CUDA exists is asked of torch lazily, only when a GPU place must be mapped.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
from typing import Iterator, List, Optional, Union

ENV_DEVICE = "FLUIDCOMPAT_DEVICE"
# FLUIDCOMPAT_DEVICE=emulated-gpu (``fluidcompat run --device emulated-gpu``): GPU places are planned,
# logged and profiled as on a GPU (copies, GpuMemcpy events, CUDAPlace in logs) while every tensor
# stays in host memory: a GPU run's copies, rehearsed on a machine without one.
EMULATED_GPU = "emulated-gpu"


class CUDAUnavailableError(RuntimeError):
    """A GPU place was used on a machine where torch sees no CUDA device."""


class Place:
    """Base of the place classes; compared and hashed by their text."""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Place) and str(self) == str(other)

    def __hash__(self) -> int:
        return hash(str(self))

    def __repr__(self) -> str:
        return str(self)

    def is_cpu_place(self) -> bool:
        return isinstance(self, CPUPlace)

    def is_gpu_place(self) -> bool:
        return isinstance(self, CUDAPlace)

    def is_cuda_pinned_place(self) -> bool:
        return isinstance(self, CUDAPinnedPlace)

    def _type(self) -> int:
        """fluid's place kind number: 0 for a GPU, 1 for the CPU, 2 for pinned host memory."""
        target = self.place if isinstance(self, GenericPlace) else self
        return {CUDAPlace: 0, CPUPlace: 1, CUDAPinnedPlace: 2}[type(target)]

    def _equals(self, other: "Place") -> bool:
        """Whether ``other`` is the same place (a ``core.Place`` compares as the place it holds)."""
        return self == other


class CPUPlace(Place):
    """The host CPU."""

    def __str__(self) -> str:
        return "CPUPlace"


class CUDAPlace(Place):
    """GPU number ``device_id``.

    Compat: on a machine without CUDA this raises ``CUDAUnavailableError`` (fluid 1.8's CPU build
    exited the process), unless ``--device cpu`` / ``FLUIDCOMPAT_DEVICE=cpu`` maps GPUs to the CPU.
    """

    def __init__(self, device_id: int = 0) -> None:
        if not isinstance(device_id, int) or device_id < 0:
            raise ValueError(f"CUDAPlace expects a non-negative int device id. Received: device_id={device_id!r}")
        self.device_id = device_id
        _require_cuda(self)

    def get_device_id(self) -> int:
        return self.device_id

    gpu_device_id = get_device_id

    def __str__(self) -> str:
        return f"CUDAPlace({self.device_id})"


class CUDAPinnedPlace(Place):
    """Page-locked host memory."""

    def __init__(self) -> None:
        _require_cuda(self)

    def __str__(self) -> str:
        return "CUDAPinnedPlace"


_planning_as_asked = False


class GenericPlace(Place):
    """fluid's ``core.Place()``: a place that holds one of the others (``set_place``)."""

    def __init__(self) -> None:
        self.place: Place = CPUPlace()

    def set_place(self, place: Place) -> None:
        self.place = place.place if isinstance(place, GenericPlace) else place

    def is_cpu_place(self) -> bool:
        return isinstance(self.place, CPUPlace)

    def is_gpu_place(self) -> bool:
        return isinstance(self.place, CUDAPlace)

    def is_cuda_pinned_place(self) -> bool:
        return isinstance(self.place, CUDAPinnedPlace)

    def gpu_device_id(self) -> int:
        return self.place.device_id

    def __str__(self) -> str:
        return str(self.place)


def cpu_mode() -> bool:
    """True when the user asked for every GPU place and guard to run on the CPU."""
    return not _planning_as_asked and os.environ.get(ENV_DEVICE, "").lower() == "cpu"


def emulating_gpu() -> bool:
    """True under ``--device emulated-gpu``: plan for the GPU, compute on the CPU."""
    return os.environ.get(ENV_DEVICE, "").lower() == EMULATED_GPU


def tensor_device(device: str) -> str:
    """Where a tensor planned for ``device`` ('cpu', 'cuda:N') is really allocated: the same, except
    in host memory when the GPU is emulated."""
    return "cpu" if device != "cpu" and emulating_gpu() else device


@contextlib.contextmanager
def as_asked() -> Iterator[None]:
    """Map places as the script asked for them, ignoring ``--device cpu`` (to explain a GPU plan)."""
    global _planning_as_asked
    old = _planning_as_asked
    _planning_as_asked = True
    try:
        yield
    finally:
        _planning_as_asked = old


_announced = False


def _announce(what: str) -> None:
    """Say once per process which device mode the user asked for."""
    global _announced
    if not _announced:
        _announced = True
        sys.stderr.write(f"fluidcompat: device {what}\n")


def cuda_available() -> bool:
    import torch  # lazily: building programs never needs torch

    return torch.cuda.is_available()


def cuda_device_count() -> int:
    import torch

    if torch.cuda.is_available():
        return torch.cuda.device_count()
    return 1 if emulating_gpu() else 0


def _require_cuda(place: Place) -> None:
    if cpu_mode():
        _announce("cpu requested: GPU places and device_guard('gpu') run on the CPU")
        return
    if emulating_gpu():
        _announce(
            "emulated-gpu requested: GPU places are planned, logged and profiled as on CUDAPlace(N), with "
            "every tensor in host memory (times are the CPU's)"
        )
        return
    if not cuda_available():
        raise CUDAUnavailableError(
            f"{place} needs CUDA, but torch finds no CUDA device on this machine. Run the script with "
            f"`fluidcompat run --device cpu` (or set {ENV_DEVICE}=cpu) to run GPU places on the CPU."
        )
    _float32_as_fluid()


_fp32_set = False


def _float32_as_fluid() -> None:
    """fluid 1.8 computed float32 convolutions and cuDNN RNNs in float32; torch lets cuDNN use TF32
    (10-bit mantissas) on Ampere and later GPUs, off by about 1e-3. Set once, at the first GPU place,
    so that GPU results match the CPU's as they did in fluid (a script may set it back after)."""
    global _fp32_set
    if not _fp32_set:
        import torch

        _fp32_set = True
        torch.backends.cudnn.allow_tf32 = False


def current_stream(device: int, known: dict):
    """``torch.cuda.current_stream(device)``, as the object kept in ``known`` (device index -> stream)
    while the device's current stream stays the same: torch's function makes a new one each call
    (6.3 us on an H200 machine, against well under 1 us for asking the stream's id)."""
    import torch

    stream_id, device_index, device_type = torch._C._cuda_getCurrentStream(device)
    s = known.get(device)
    if s is None or s.stream_id != stream_id:
        s = known[device] = torch.cuda.Stream(stream_id=stream_id, device_index=device_index, device_type=device_type)
    return s


def is_compiled_with_cuda() -> bool:
    """True when GPU places can run on a GPU here (False under ``--device cpu``)."""
    return not cpu_mode() and (cuda_available() or emulating_gpu())


def _cpu_num() -> int:
    """``CPU_NUM``; unset, 1 (set from now on), and on a machine with more than one core fluid's notice
    on stderr."""
    if "CPU_NUM" not in os.environ:
        cores = os.cpu_count() or 1
        if cores > 1:
            sys.stderr.write(
                "!!! The CPU_NUM is not specified, you should set CPU_NUM in the environment variable list.\n"
                "CPU_NUM indicates that how many CPUPlace are used in the current task.\n"
                "And if this parameter are set as N (equal to the number of physical CPU core) the program may be "
                f"faster.\n\nexport CPU_NUM={cores} # for example, set CPU_NUM as number of physical CPU core which is "
                f"{cores}.\n\n!!! The default number of CPU_NUM=1.\n"
            )
        os.environ["CPU_NUM"] = "1"
    return int(os.environ["CPU_NUM"])


def cpu_places(device_count: Optional[int] = None) -> List[CPUPlace]:
    """The CPU places a program may run on: ``device_count`` of them (``CPU_NUM`` or 1 by default)."""
    if device_count is None:
        device_count = _cpu_num()
    return [CPUPlace() for _ in range(device_count)]


def cuda_places(device_ids: Optional[List[int]] = None) -> List[CUDAPlace]:
    """The CUDA places for ``device_ids`` (``FLAGS_selected_gpus`` or every visible GPU by default)."""
    if device_ids is None:
        selected = os.environ.get("FLAGS_selected_gpus")
        if selected:
            device_ids = [int(s) for s in selected.split(",")]
        else:
            device_ids = list(range(max(1, cuda_device_count()) if not cpu_mode() else 1))
    elif not isinstance(device_ids, (list, tuple)):
        device_ids = [device_ids]
    return [CUDAPlace(i) for i in device_ids]


def default_place_count(place) -> int:
    """How many places fluid used by default for a device like ``place``: ``cuda_places()`` for a GPU,
    ``cpu_places()`` (CPU_NUM) for the CPU."""
    return len(cuda_places() if torch_device(place).startswith("cuda") else cpu_places())


def cuda_pinned_places(device_count: Optional[int] = None) -> List[CUDAPinnedPlace]:
    """``device_count`` pinned-host-memory places."""
    return [CUDAPinnedPlace() for _ in range(device_count or _cpu_num())]


# -- device_guard ------------------------------------------------------------------------------
_GUARD_RE = re.compile(r"cpu|gpu(:\d+)?")
_current_device: Optional[str] = None


def current_device() -> Optional[str]:
    return _current_device


def _check_guard(device) -> None:
    if device in ("", None) or (isinstance(device, str) and _GUARD_RE.fullmatch(device)):
        return
    raise ValueError(
        "The Attr(device) should be 'cpu' or 'gpu', and it can also be empty string or None when there "
        f"is no need to specify device. But received {device}"
    )


@contextlib.contextmanager
def device_guard(device: Optional[str] = None) -> Iterator[None]:
    """Stamp ``op_device`` on the ops appended inside the block: 'cpu', 'gpu', 'gpu:N' or None.

    Compat: 'gpu:N' is accepted (fluid 1.8 took only 'cpu' and 'gpu').
    """
    global _current_device
    _check_guard(device)
    prev = _current_device
    _current_device = device or None
    try:
        yield
    finally:
        _current_device = prev


# -- the one mapping to torch devices ------------------------------------------------------------
def torch_device(where: Union[Place, str, None], default: Union[Place, str, None] = None) -> str:
    """Map a place, an ``op_device`` string ('cpu', 'gpu', 'gpu:N') or None to 'cpu' / 'cuda:N'.

    None and '' mean ``default`` (the executor's place). 'gpu' means the executor's GPU when it
    has one; on a CPU executor a 'gpu' op stays on the CPU, as in fluid 1.8.
    """
    if where is None or where == "":
        if default is None:
            return "cpu"
        return torch_device(default)
    if isinstance(where, GenericPlace):
        return torch_device(where.place, default)
    if isinstance(where, CPUPlace) or isinstance(where, CUDAPinnedPlace):
        return "cpu"
    if isinstance(where, CUDAPlace):
        return "cpu" if cpu_mode() else f"cuda:{where.device_id}"
    if isinstance(where, str):
        if where == "cpu":
            return "cpu"
        if cpu_mode():
            return "cpu"
        if where == "gpu":
            base = torch_device(default) if default is not None else "cpu"
            return base if base.startswith("cuda") else "cpu"
        if where.startswith("gpu:"):
            return "cuda:" + where[4:]
        if where.startswith("cuda"):
            return where
    raise ValueError(f"Cannot map {where!r} to a device. Expected a Place or 'cpu', 'gpu', 'gpu:N'.")
