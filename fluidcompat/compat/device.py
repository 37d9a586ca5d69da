"""Paddle 2.x's device API over torch tensors, as scripts run by ``fluidcompat run`` see it under
``paddle``: ``paddle.device.get_device()`` / ``set_device()``, ``paddle.CPUPlace`` / ``CUDAPlace`` /
``CUDAPinnedPlace`` (printed ``Place(cpu)``, ``Place(gpu:0)``, ``Place(gpu_pinned)``),
``paddle.to_tensor`` and ``Tensor.place`` / ``cuda()`` / ``cpu()`` / ``pin_memory()`` / ``numpy()``.

With ``--device cpu`` a GPU is emulated on the CPU: ``get_device()`` says ``gpu:0``, ``cuda()`` gives a
tensor whose place is ``Place(gpu:0)`` and whose data stays in host memory.
"""

from __future__ import annotations

import re
from typing import Optional

import numpy as np

from fluidcompat import places as _places
from fluidcompat import process_group as _process_group

__all__ = [
    "CPUPlace",
    "CUDAPlace",
    "CUDAPinnedPlace",
    "Tensor",
    "get_device",
    "set_device",
    "to_tensor",
    "seed",
    "is_compiled_with_cuda",
]


class CPUPlace(_places.CPUPlace):
    """The host CPU, printed as Paddle 2 prints it."""

    def __str__(self) -> str:
        return "Place(cpu)"


class CUDAPlace(_places.CUDAPlace):
    """GPU ``device_id``, printed as Paddle 2 prints it."""

    def __str__(self) -> str:
        return f"Place(gpu:{self.device_id})"


class CUDAPinnedPlace(_places.CUDAPinnedPlace):
    """Page-locked host memory, printed as Paddle 2 prints it."""

    def __str__(self) -> str:
        return "Place(gpu_pinned)"


def is_compiled_with_cuda() -> bool:
    return _places.is_compiled_with_cuda()


_device: Optional[str] = None  # set_device's choice


def _gpu_usable() -> bool:
    return _places.cpu_mode() or _places.emulating_gpu() or _places.cuda_available()


def get_device() -> str:
    """The global device: what ``set_device`` chose, else ``gpu:0`` with a GPU (or ``--device cpu``),
    else ``cpu``."""
    if _device is not None:
        return _device
    return "gpu:0" if _gpu_usable() else "cpu"


def set_device(device: str):
    """Run on ``'cpu'``, ``'gpu'`` (``gpu:0``) or ``'gpu:N'``; returns that place."""
    global _device
    if not isinstance(device, str):
        raise ValueError(f"The device must be a string which is like 'cpu', 'gpu' or 'gpu:x'. Received: {device!r}")
    d = device.lower()
    if d == "gpu":
        d = "gpu:0"
    if d == "cpu":
        _device = "cpu"
        return CPUPlace()
    m = re.fullmatch(r"gpu:(\d+)", d)
    if m is None:
        raise ValueError(
            f"The device must be a string which is like 'cpu', 'gpu' or 'gpu:x' (fluidcompat has no xpu/npu). "
            f"Received: {device!r}"
        )
    place = CUDAPlace(int(m.group(1)))  # refuses without CUDA unless --device cpu
    _device = d
    return place


# a worker that joins its group over NCCL runs on its GPU (process_group.init_parallel_env)
if _process_group.joined_gpu is not None:
    _device = f"gpu:{_process_group.joined_gpu}"
_process_group.on_gpu_join.append(lambda i: set_device(f"gpu:{i}"))


def _current_place():
    dev = get_device()
    return CPUPlace() if dev == "cpu" else CUDAPlace(int(dev.split(":")[1]))


def seed(value: int):
    """Seed torch's generators (CPU and CUDA); returns the CPU generator."""
    import torch

    return torch.manual_seed(int(value))


_DTYPES = {
    "float32": "float32",
    "float64": "float64",
    "float16": "float16",
    "int32": "int32",
    "int64": "int64",
    "int16": "int16",
    "int8": "int8",
    "uint8": "uint8",
    "bool": "bool",
}


class DType:
    """A Paddle dtype (``paddle.float32``); compares equal to its name."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __eq__(self, other) -> bool:
        return str(other).replace("paddle.", "") == self.name

    def __hash__(self) -> int:
        return hash(self.name)

    def __repr__(self) -> str:
        return f"paddle.{self.name}"


def _torch_device(place) -> str:
    if isinstance(place, _places.CUDAPlace):
        return _places.tensor_device(_places.torch_device(place))
    return "cpu"


class Tensor:
    """A Paddle 2 tensor in fluidcompat: torch data, a place, ``stop_gradient``.

    A tensor with ``stop_gradient=False`` is recorded by torch's autograd: ``backward()`` fills the
    ``grad`` of every such tensor it reaches (fluidcompat/compat/tensor.py has the math on tensors).
    """

    __array_priority__ = 100  # numpy array (op) Tensor gives a Tensor

    def __init__(self, value, place, stop_gradient: bool = True) -> None:
        self._t = value
        self._place = place
        self.stop_gradient = stop_gradient

    @property
    def place(self):
        return self._place

    @property
    def stop_gradient(self) -> bool:
        return self._stop_gradient

    @stop_gradient.setter
    def stop_gradient(self, value: bool) -> None:
        value = bool(value)
        if self._t.is_leaf:
            if not value and not (self._t.is_floating_point() or self._t.is_complex()):
                value = True  # integer tensors never get gradients, as in Paddle
            self._t.requires_grad_(not value)
        elif value:
            self._t = self._t.detach()
        self._stop_gradient = value

    @property
    def grad(self) -> Optional["Tensor"]:
        """The gradient ``backward()`` accumulated here (None before any)."""
        g = self._t.grad
        return None if g is None else Tensor(g, self._place, True)

    def backward(self, grad_tensor=None, retain_graph: bool = False) -> None:
        """Accumulate d(self)/d(x) into ``x.grad`` for every tensor x with ``stop_gradient=False``."""
        if self._stop_gradient:
            raise RuntimeError(
                f"Tensor.backward: this tensor (shape {self.shape}) has stop_gradient=True: nothing it was "
                "computed from needs a gradient"
            )
        g = grad_tensor._t if isinstance(grad_tensor, Tensor) else grad_tensor
        if g is None and self._t.numel() != 1:
            import torch

            g = torch.ones_like(self._t)  # Paddle starts from ones for any shape
        self._t.backward(g, retain_graph=retain_graph)
        for hook in list(AFTER_BACKWARD):
            hook()

    def clear_grad(self) -> None:
        """Zero the accumulated gradient (Paddle's ``clear_gradient``)."""
        if self._t.grad is not None:
            self._t.grad.zero_()

    clear_gradient = clear_grad

    @property
    def shape(self):
        return list(self._t.shape)

    @property
    def dtype(self) -> DType:
        return DType(str(self._t.dtype).replace("torch.", ""))

    def numpy(self) -> np.ndarray:
        """A copy in a numpy array (one element converts with float()/int(), as in Paddle)."""
        from fluidcompat.executor.executor import fetched

        return fetched(self._t.detach().cpu().numpy().copy())

    def cuda(self, device_id: Optional[int] = None, blocking: bool = False) -> "Tensor":
        """This tensor on GPU ``device_id`` (its own GPU, or 0); no copy when it is there already. From
        pinned memory with ``blocking=False`` the copy is asynchronous."""
        if isinstance(self._place, _places.CUDAPlace) and device_id in (None, self._place.device_id):
            return self
        target = CUDAPlace(0 if device_id is None else device_id)
        non_blocking = not blocking and self._t.device.type == "cpu" and self._t.is_pinned()
        return Tensor(self._t.to(_torch_device(target), non_blocking=non_blocking), target, self.stop_gradient)

    def cpu(self) -> "Tensor":
        """This tensor in host memory (itself when it is there already)."""
        if isinstance(self._place, _places.CPUPlace):
            return self
        return Tensor(self._t.to("cpu"), CPUPlace(), self.stop_gradient)

    def pin_memory(self) -> "Tensor":
        """A copy in page-locked host memory (plain host memory under ``--device cpu``)."""
        place = CUDAPinnedPlace()  # refuses without CUDA unless --device cpu
        t = self._t.to("cpu")
        if not _places.cpu_mode() and _places.cuda_available():
            t = t.pin_memory()
        else:
            t = t.clone()
        return Tensor(t, place, self.stop_gradient)

    def __repr__(self) -> str:
        data = np.array2string(self.numpy(), separator=", ", prefix="       ")
        return (
            f"Tensor(shape={self.shape}, dtype={self.dtype.name}, place={self._place}, "
            f"stop_gradient={self.stop_gradient},\n       {data})"
        )

    __str__ = __repr__

    def __array__(self, dtype=None, copy=None):
        arr = self.numpy()
        return arr.astype(dtype) if dtype is not None else arr


def to_tensor(data, dtype=None, place=None, stop_gradient: bool = True) -> Tensor:
    """A Tensor of ``data`` (a number, nested lists, a numpy array or a Tensor) on ``place`` (the
    global device by default). Python floats become float32 and ints int64, and a number a tensor of
    shape [1], as in Paddle 2.0 - 2.4."""
    import torch

    if isinstance(data, Tensor):
        arr = data.numpy()
    else:
        arr = np.asarray(data)
        if arr.dtype == np.float64 and not isinstance(data, np.ndarray):
            arr = arr.astype(np.float32)
    if dtype is not None:
        name = str(dtype).replace("paddle.", "")
        if name not in _DTYPES:
            raise ValueError(f"to_tensor: unsupported dtype {dtype!r}")
        arr = arr.astype(name)
    if arr.dtype.name not in _DTYPES:
        raise TypeError(f"to_tensor: data of dtype {arr.dtype} has no Paddle dtype")
    if place is None:
        place = _current_place()
    elif isinstance(place, _places.CPUPlace):
        place = CPUPlace()
    elif isinstance(place, _places.CUDAPinnedPlace):
        return Tensor(torch.from_numpy(np.ascontiguousarray(arr)), CPUPlace(), stop_gradient).pin_memory()
    elif isinstance(place, _places.CUDAPlace):
        place = CUDAPlace(place.device_id)
    else:
        raise TypeError(f"to_tensor: place must be a CPUPlace, CUDAPlace or CUDAPinnedPlace. Received: {place!r}")
    t = torch.from_numpy(np.ascontiguousarray(arr).copy()).to(_torch_device(place))
    return Tensor(t, place, stop_gradient)


# Called after every Tensor.backward(): paddle.DataParallel all-reduces its gradients there.
AFTER_BACKWARD: list = []
