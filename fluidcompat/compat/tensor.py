"""Paddle 2.x's math on tensors, as ``paddle.X(...)`` functions and ``Tensor`` methods/operators.

Each function unwraps its Tensor arguments to torch tensors, calls torch (whose autograd records it
when an input has ``stop_gradient=False``) and wraps the result on the first input's place.
Whole-tensor reductions give shape ``[1]``, as Paddle 2.0 - 2.4 did.
"""

from __future__ import annotations

import builtins
import contextlib
import functools

import numpy as np

from fluidcompat.compat.device import _DTYPES, DType, Tensor, _current_place, _torch_device

__all__ = [
    "DTYPES",
    "abs",
    "add",
    "arange",
    "argmax",
    "argmin",
    "cast",
    "clip",
    "concat",
    "cos",
    "divide",
    "equal",
    "exp",
    "flatten",
    "full",
    "greater_than",
    "is_tensor",
    "less_than",
    "log",
    "matmul",
    "max",
    "maximum",
    "mean",
    "min",
    "minimum",
    "multiply",
    "no_grad",
    "not_equal",
    "numel",
    "ones",
    "ones_like",
    "pow",
    "rand",
    "randint",
    "randn",
    "reshape",
    "sin",
    "split",
    "sqrt",
    "square",
    "squeeze",
    "stack",
    "subtract",
    "sum",
    "tanh",
    "topk",
    "transpose",
    "unsqueeze",
    "where",
    "zeros",
    "zeros_like",
]

DTYPES = {name: DType(name) for name in _DTYPES}


def _torch():
    import torch

    return torch


def torch_dtype(dtype):
    """A torch dtype from a Paddle dtype, its name, a numpy dtype or a torch dtype."""
    torch = _torch()
    if isinstance(dtype, torch.dtype):
        return dtype
    name = str(np.dtype(dtype)) if isinstance(dtype, (type, np.dtype)) else str(dtype).replace("paddle.", "")
    if name not in _DTYPES:
        raise ValueError(f"unsupported dtype {dtype!r}: expected one of {sorted(_DTYPES)}")
    return getattr(torch, "bool" if name == "bool" else name)


def unwrap(x):
    """The torch tensor behind a Tensor (numpy arrays converted; numbers and lists kept)."""
    if isinstance(x, Tensor):
        return x._t
    if isinstance(x, np.ndarray):
        return _torch().from_numpy(np.ascontiguousarray(x))
    return x


def place_of(*xs):
    for x in xs:
        if isinstance(x, Tensor):
            return x.place
        if isinstance(x, (list, tuple)):
            for y in x:
                if isinstance(y, Tensor):
                    return y.place
    return _current_place()


def wrap(t, place) -> Tensor:
    """``t`` as a Tensor on ``place``; it needs gradients when autograd recorded it."""
    return Tensor(t, place, stop_gradient=not t.requires_grad)


def _whole(t):
    """A whole-tensor reduction's result: shape [1]."""
    return t.reshape(1)


def _axes(axis):
    if axis is None:
        return None
    if isinstance(axis, Tensor):
        axis = axis.numpy().tolist()
    return tuple(axis) if isinstance(axis, (list, tuple)) else int(axis)


def _device(place) -> str:
    return _torch_device(place)


def _new(make, shape, dtype, place=None):
    place = place if place is not None else _current_place()
    if isinstance(shape, Tensor):
        shape = shape.numpy().tolist()
    shape = [int(unwrap(s)) if not isinstance(s, int) else s for s in ([shape] if isinstance(shape, int) else shape)]
    return Tensor(make(shape, torch_dtype(dtype), _device(place)), place, True)


# -- creation -------------------------------------------------------------------------------------
def zeros(shape, dtype="float32", name=None) -> Tensor:
    return _new(lambda s, d, dev: _torch().zeros(s, dtype=d, device=dev), shape, dtype)


def ones(shape, dtype="float32", name=None) -> Tensor:
    return _new(lambda s, d, dev: _torch().ones(s, dtype=d, device=dev), shape, dtype)


def full(shape, fill_value, dtype="float32", name=None) -> Tensor:
    return _new(lambda s, d, dev: _torch().full(s, float(unwrap(fill_value)), dtype=d, device=dev), shape, dtype)


def zeros_like(x, dtype=None, name=None) -> Tensor:
    return Tensor(_torch().zeros_like(x._t, dtype=torch_dtype(dtype) if dtype else None), x.place, True)


def ones_like(x, dtype=None, name=None) -> Tensor:
    return Tensor(_torch().ones_like(x._t, dtype=torch_dtype(dtype) if dtype else None), x.place, True)


def arange(start=0, end=None, step=1, dtype=None, name=None) -> Tensor:
    if end is None:
        start, end = 0, start
    start, end, step = (unwrap(v) for v in (start, end, step))
    start, end, step = (v.item() if hasattr(v, "item") else v for v in (start, end, step))
    if dtype is None:
        dtype = "int64" if builtins.all(isinstance(v, int) for v in (start, end, step)) else "float32"
    place = _current_place()
    return Tensor(_torch().arange(start, end, step, dtype=torch_dtype(dtype), device=_device(place)), place, True)


def rand(shape, dtype="float32", name=None) -> Tensor:
    return _new(lambda s, d, dev: _torch().rand(s, dtype=d, device=dev), shape, dtype)


def randn(shape, dtype="float32", name=None) -> Tensor:
    return _new(lambda s, d, dev: _torch().randn(s, dtype=d, device=dev), shape, dtype)


def randint(low=0, high=None, shape=(1,), dtype="int64", name=None) -> Tensor:
    if high is None:
        low, high = 0, low
    return _new(lambda s, d, dev: _torch().randint(low, high, s, dtype=d, device=dev), shape, dtype)


# -- shapes ---------------------------------------------------------------------------------------
def reshape(x, shape, name=None) -> Tensor:
    """``shape`` may hold one -1 (inferred) and 0s (that dimension of ``x`` kept), as in Paddle."""
    if isinstance(shape, Tensor):
        shape = shape.numpy().tolist()
    dims = [int(unwrap(s).item()) if not isinstance(s, int) else s for s in shape]
    dims = [x.shape[i] if d == 0 else d for i, d in enumerate(dims)]
    known = int(np.prod([d for d in dims if d != -1]))
    if dims.count(-1) > 1 or (-1 not in dims and known != x._t.numel()) or (known and x._t.numel() % known):
        raise ValueError(
            f"reshape: a tensor of shape {x.shape} ({x._t.numel()} elements) cannot take the shape {list(shape)}"
        )
    return wrap(x._t.reshape(dims), x.place)


def flatten(x, start_axis=0, stop_axis=-1, name=None) -> Tensor:
    return wrap(_torch().flatten(x._t, start_axis, stop_axis), x.place)


def transpose(x, perm, name=None) -> Tensor:
    return wrap(x._t.permute(*perm), x.place)


def squeeze(x, axis=None, name=None) -> Tensor:
    t = x._t
    if axis is None:
        return wrap(t.squeeze(), x.place)
    for a in sorted((_axes(axis) if isinstance(axis, (list, tuple)) else (int(axis),)), reverse=True):
        t = t.squeeze(a)
    return wrap(t, x.place)


def unsqueeze(x, axis, name=None) -> Tensor:
    t = x._t
    for a in sorted(axis) if isinstance(axis, (list, tuple)) else (int(axis),):
        t = t.unsqueeze(a)
    return wrap(t, x.place)


def concat(x, axis=0, name=None) -> Tensor:
    return wrap(_torch().cat([unwrap(v) for v in x], dim=int(unwrap(axis))), place_of(x))


def stack(x, axis=0, name=None) -> Tensor:
    return wrap(_torch().stack([unwrap(v) for v in x], dim=axis), place_of(x))


def split(x, num_or_sections, axis=0, name=None):
    n = x.shape[axis]
    if isinstance(num_or_sections, int):
        if n % num_or_sections:
            raise ValueError(f"split: axis {axis} of size {n} does not divide into {num_or_sections} parts")
        sizes = [n // num_or_sections] * num_or_sections
    else:
        sizes = list(num_or_sections)
        if -1 in sizes:
            sizes[sizes.index(-1)] = n - (builtins.sum(sizes) + 1)
    return [wrap(t, x.place) for t in _torch().split(x._t, sizes, dim=axis)]


def cast(x, dtype) -> Tensor:
    return wrap(x._t.to(torch_dtype(dtype)), x.place)


# -- math -----------------------------------------------------------------------------------------
def _binary(fn):
    @functools.wraps(fn)
    def op(x, y, name=None):
        return wrap(fn(unwrap(x), unwrap(y)), place_of(x, y))

    return op


def _unary(fn):
    @functools.wraps(fn)
    def op(x, name=None):
        return wrap(fn(x._t), x.place)

    return op


add = _binary(lambda a, b: a + b)
subtract = _binary(lambda a, b: a - b)
multiply = _binary(lambda a, b: a * b)
divide = _binary(lambda a, b: a / b)
pow = _binary(lambda a, b: a**b)
maximum = _binary(lambda a, b: _torch().maximum(a, b))
minimum = _binary(lambda a, b: _torch().minimum(a, b))
equal = _binary(lambda a, b: a == b)
not_equal = _binary(lambda a, b: a != b)
less_than = _binary(lambda a, b: a < b)
greater_than = _binary(lambda a, b: a > b)
exp = _unary(lambda t: t.exp())
log = _unary(lambda t: t.log())
sqrt = _unary(lambda t: t.sqrt())
abs = _unary(lambda t: t.abs())
square = _unary(lambda t: t * t)
tanh = _unary(lambda t: t.tanh())
sin = _unary(lambda t: t.sin())
cos = _unary(lambda t: t.cos())


def matmul(x, y, transpose_x=False, transpose_y=False, name=None) -> Tensor:
    a, b = unwrap(x), unwrap(y)
    if transpose_x:
        a = a.transpose(-1, -2)
    if transpose_y:
        b = b.transpose(-1, -2)
    return wrap(_torch().matmul(a, b), place_of(x, y))


def clip(x, min=None, max=None, name=None) -> Tensor:
    return wrap(x._t.clamp(unwrap(min), unwrap(max)), x.place)


def where(condition, x=None, y=None, name=None) -> Tensor:
    return wrap(_torch().where(unwrap(condition), unwrap(x), unwrap(y)), place_of(x, y, condition))


def _reduce(fn, x, axis, keepdim):
    axis = _axes(axis)
    if axis is None:
        return wrap(_whole(fn(x._t)), x.place)
    return wrap(fn(x._t, axis, keepdim), x.place)


def mean(x, axis=None, keepdim=False, name=None) -> Tensor:
    return _reduce(lambda t, *a: t.mean(*a), x, axis, keepdim)


def sum(x, axis=None, dtype=None, keepdim=False, name=None) -> Tensor:
    t = x if dtype is None else cast(x, dtype)
    return _reduce(lambda v, *a: v.sum(*a), t, axis, keepdim)


def max(x, axis=None, keepdim=False, name=None) -> Tensor:
    return _reduce(lambda t, *a: t.amax(*a), x, axis, keepdim)


def min(x, axis=None, keepdim=False, name=None) -> Tensor:
    return _reduce(lambda t, *a: t.amin(*a), x, axis, keepdim)


def _arg(x, fn, axis, keepdim, dtype) -> Tensor:
    """Indices of ``fn`` (argmax / argmin) along ``axis``; over the whole tensor: shape [1]."""
    t = _whole(fn(x._t)) if axis is None else fn(x._t, int(axis), keepdim)
    return Tensor(t.to(torch_dtype(dtype)), x.place, True)


def argmax(x, axis=None, keepdim=False, dtype="int64", name=None) -> Tensor:
    return _arg(x, _torch().argmax, axis, keepdim, dtype)


def argmin(x, axis=None, keepdim=False, dtype="int64", name=None) -> Tensor:
    return _arg(x, _torch().argmin, axis, keepdim, dtype)


def topk(x, k, axis=-1, largest=True, sorted=True, name=None):
    values, indices = _torch().topk(x._t, int(unwrap(k)), dim=axis, largest=largest, sorted=sorted)
    return wrap(values, x.place), Tensor(indices, x.place, True)


def numel(x, name=None) -> Tensor:
    return Tensor(_torch().tensor([x._t.numel()], dtype=_torch().int64), x.place, True)


def is_tensor(x) -> bool:
    return isinstance(x, Tensor)


class no_grad(contextlib.ContextDecorator):
    """``with paddle.no_grad():`` / ``@paddle.no_grad()``: nothing inside is recorded for backward."""

    def __enter__(self):
        self._ctx = _torch().no_grad()
        self._ctx.__enter__()
        return self

    def __exit__(self, *exc):
        return self._ctx.__exit__(*exc)


# -- Tensor methods and operators -----------------------------------------------------------------
def _astype(self, dtype) -> Tensor:
    return cast(self, dtype)


def _getitem(self, index) -> Tensor:
    if isinstance(index, tuple):
        index = tuple(unwrap(i) for i in index)
    else:
        index = unwrap(index)
    return wrap(self._t[index], self.place)


def _setitem(self, index, value) -> None:
    torch = _torch()
    index = tuple(unwrap(i) for i in index) if isinstance(index, tuple) else unwrap(index)
    with torch.no_grad() if self._t.is_leaf and self._t.requires_grad else contextlib.nullcontext():
        self._t[index] = unwrap(value)


def _set_value(self, value) -> None:
    """Overwrite the data (same shape), keeping this tensor's identity: Paddle's ``set_value``."""
    arr = value.numpy() if isinstance(value, Tensor) else np.asarray(value)
    if list(arr.shape) != self.shape:
        raise ValueError(f"set_value: the value's shape {list(arr.shape)} differs from the tensor's {self.shape}")
    torch = _torch()
    with torch.no_grad():
        self._t.copy_(torch.from_numpy(np.ascontiguousarray(arr)).to(self._t.dtype))


def _detach(self) -> Tensor:
    return Tensor(self._t.detach(), self.place, True)


def _clone(self) -> Tensor:
    return wrap(self._t.clone(), self.place)


def _item(self, *args):
    return self._t.item() if not args else self._t[args].item()


def _reflected(fn):
    return lambda self, other: fn(other, self)


_METHODS = {
    "reshape": reshape,
    "flatten": flatten,
    "transpose": transpose,
    "squeeze": squeeze,
    "unsqueeze": unsqueeze,
    "split": split,
    "cast": cast,
    "astype": _astype,
    "matmul": matmul,
    "mean": mean,
    "sum": sum,
    "max": max,
    "min": min,
    "argmax": argmax,
    "argmin": argmin,
    "topk": topk,
    "exp": exp,
    "log": log,
    "sqrt": sqrt,
    "abs": abs,
    "square": square,
    "tanh": tanh,
    "clip": clip,
    "add": add,
    "subtract": subtract,
    "multiply": multiply,
    "divide": divide,
    "pow": pow,
    "equal": equal,
    "detach": _detach,
    "clone": _clone,
    "item": _item,
    "set_value": _set_value,
    "__getitem__": _getitem,
    "__setitem__": _setitem,
    "__add__": add,
    "__radd__": _reflected(add),
    "__sub__": subtract,
    "__rsub__": _reflected(subtract),
    "__mul__": multiply,
    "__rmul__": _reflected(multiply),
    "__truediv__": divide,
    "__rtruediv__": _reflected(divide),
    "__pow__": pow,
    "__rpow__": _reflected(pow),
    "__matmul__": matmul,
    "__rmatmul__": _reflected(matmul),
    "__neg__": lambda self: wrap(-self._t, self.place),
    "__eq__": equal,
    "__ne__": not_equal,
    "__lt__": less_than,
    "__gt__": greater_than,
    "__le__": _binary(lambda a, b: a <= b),
    "__ge__": _binary(lambda a, b: a >= b),
    "__len__": lambda self: self.shape[0],
    "__float__": lambda self: float(self._t.item()),
    "__int__": lambda self: int(self._t.item()),
    "__bool__": lambda self: bool(self._t.item()),
    "__hash__": object.__hash__,
    "tolist": lambda self: self._t.tolist(),
    "numel": numel,
    "dim": lambda self: self._t.dim(),
    "ndim": property(lambda self: self._t.dim()),
    "size": property(lambda self: self._t.numel()),
    "T": property(
        lambda self: wrap(
            self._t.t() if self._t.dim() == 2 else self._t.permute(*range(self._t.dim())[::-1]), self.place
        )
    ),
}
for _name, _fn in _METHODS.items():
    setattr(Tensor, _name, _fn)
