"""Scopes and LoDTensors: where persistable values live between runs."""

from __future__ import annotations

import contextlib
from typing import Dict, Iterator, List, Optional

import numpy as np
import torch

from fluidcompat import places
from fluidcompat.dtypes import VarType, as_long_long, to_vartype
from fluidcompat.logging import tensor_text
from fluidcompat_ops.grad import SelectedRows
from fluidcompat_ops.registry import TORCH_DTYPES, bind_torch
from fluidcompat_ops.sequence import lengths_of, lod_of, offsets_of, with_lod

bind_torch()
_FROM_TORCH = {v: k for k, v in TORCH_DTYPES.items()}


def vartype_of(t: torch.Tensor) -> VarType:
    return _FROM_TORCH[t.dtype]


def vartype_of_dtype(dtype: torch.dtype) -> VarType:
    return _FROM_TORCH[dtype]


class LoDTensor:
    """A tensor held in a scope (fluid's ``core.LoDTensor``), backed by a torch tensor.

    ``np.array(t)`` copies it to the host; ``t.set(array, place)`` replaces it.
    """

    __slots__ = ("_t", "_lod")

    def __init__(self, value: Optional[torch.Tensor] = None, made_lod=None) -> None:
        """``made_lod``: the LoD an op gave ``value``, kept as made (unlike ``set_lod`` it is not checked
        against the rows: ctc_align's all-empty result is one row [-1] under offsets [0, 0, ...], as in
        fluid 1.8.5). fluid's ``LoDTensor(recursive_sequence_lengths)`` (no value yet) is taken too."""
        if isinstance(value, (list, tuple)) and made_lod is None:  # core.LoDTensor([[2, 2]]): sequence lengths
            value, made_lod = None, _offsets(value)
        self._t = value
        self._lod: List[List[int]] = [list(level) for level in made_lod or ()]

    def set(self, array, place) -> None:
        arr = np.ascontiguousarray(np.asarray(array))
        if arr.dtype == np.float64 and isinstance(array, (float, list)):
            arr = arr.astype("float32")
        to_vartype(arr.dtype)  # rejects types fluid has no VarType for
        if not arr.dtype.isnative:  # big-endian data: the same values in this machine's byte order
            arr = arr.astype(arr.dtype.newbyteorder("="))
        t = torch.from_numpy(arr.copy()).to(places.tensor_device(places.torch_device(place)))
        if isinstance(place, places.CUDAPinnedPlace) and not places.cpu_mode() and places.cuda_available():
            t = t.pin_memory()  # page-locked host memory: copies to the GPU can run asynchronously
        self._t = t

    def _is_pinned(self) -> bool:
        return self._t is not None and self._t.is_pinned()

    def _is_initialized(self) -> bool:
        return self._t is not None

    def shape(self) -> List[int]:
        # fluid 1.8: a tensor that holds no value yet has dims [0]
        return [0] if self._t is None else list(self._t.shape)

    def _dtype(self) -> VarType:
        self._require()
        return vartype_of(self._t)

    _get_dims = shape

    def _set_dims(self, dims) -> None:
        """Give the tensor these dims (fluid's Resize): its values stay where the element count is the
        same; otherwise it holds new, uninitialized memory of its dtype (float32 before any)."""
        dims = [int(d) for d in dims]
        if self._t is not None and self._t.numel() == int(np.prod(dims)):
            self._t = self._t.reshape(dims)
        else:
            dtype = self._t.dtype if self._t is not None else torch.float32
            device = self._t.device if self._t is not None else "cpu"
            self._t = torch.empty(dims, dtype=dtype, device=device)

    def _alloc(self, place, dtype) -> None:
        """Give the tensor memory of ``dtype`` on ``place`` for its dims (zeros; fluid's was uninitialized)."""
        dims = list(self._t.shape) if self._t is not None else [0]
        self._t = torch.zeros(dims, dtype=dtype, device=places.tensor_device(places.torch_device(place)))

    def _alloc_float(self, place) -> None:
        self._alloc(place, torch.float32)

    def _alloc_double(self, place) -> None:
        self._alloc(place, torch.float64)

    def _alloc_int(self, place) -> None:
        self._alloc(place, torch.int32)

    def _mutable_data(self, place, dtype) -> int:
        """Memory of ``dtype`` on ``place`` for the dims; its address, as fluid returned it."""
        self._alloc(place, TORCH_DTYPES[to_vartype(dtype)])
        return self._t.data_ptr()

    def __getitem__(self, index) -> "LoDTensor":
        """A new tensor of the indexed part (numpy's indexing, negative steps too)."""
        self._require()
        part = np.ascontiguousarray(np.asarray(self)[index])
        return LoDTensor(torch.from_numpy(part).to(self._t.device))

    def _element(self, i: int):
        """The ``i``-th element as a view into the tensor (made contiguous first)."""
        self._require()
        if not 0 <= i < self._t.numel():
            raise IndexError(f"The index {i} is out of the tensor's {self._t.numel()} elements")
        if not self._t.is_contiguous():
            self._t = self._t.contiguous()
        return self._t.view(-1)[i]

    def _get_float_element(self, i: int) -> float:
        return float(self._element(i))

    def _get_double_element(self, i: int) -> float:
        return float(self._element(i))

    def _set_float_element(self, i: int, value: float) -> None:
        self._element(i).fill_(float(value))

    _set_double_element = _set_float_element

    def _copy(self, place) -> "LoDTensor":
        """A copy of the tensor and its LoD on ``place``."""
        self._require()
        t = self._t.detach().to(places.tensor_device(places.torch_device(place)), copy=True)
        return LoDTensor(t, self._lod)

    def _clear(self) -> None:
        self._t = None
        self._lod = []

    def lod(self) -> List[List[int]]:
        return [list(level) for level in self._lod]

    def set_lod(self, lod) -> None:
        lod = [[int(v) for v in level] for level in lod]
        if not self._valid(lod):
            raise ValueError(f"the provided lod info is invalid: {lod} for a tensor of {self._rows()} rows")
        self._lod = lod

    def recursive_sequence_lengths(self) -> List[List[int]]:
        return [lengths_of(level) for level in self._lod]

    def set_recursive_sequence_lengths(self, recursive_seq_lens) -> None:
        lod = _offsets(recursive_seq_lens)
        if not self._valid(lod):
            raise ValueError(
                f"the provided recursive_sequence_lengths info is invalid: {[list(x) for x in recursive_seq_lens]} "
                f"for a tensor of {self._rows()} rows"
            )
        self._lod = lod

    def has_valid_recursive_sequence_lengths(self) -> bool:
        return self._valid(self._lod)

    def _rows(self):
        return None if self._t is None else (self._t.shape[0] if self._t.dim() else 1)

    def _valid(self, lod) -> bool:
        """fluid's check: each level starts at 0 and never decreases, ends where the next level has
        entries, and the last level ends at the tensor's first dimension (no LoD is valid)."""
        for i, level in enumerate(lod):
            if len(level) < 2 or level[0] != 0 or any(b < a for a, b in zip(level, level[1:])):
                return False
            bound = len(lod[i + 1]) - 1 if i + 1 < len(lod) else self._rows()
            if bound is not None and level[-1] != bound:
                return False
        return True

    def _place(self):
        self._require()
        if self._t.device.type == "cuda":
            return places.CUDAPlace(self._t.device.index or 0)
        return places.CPUPlace()

    def _require(self) -> None:
        if self._t is None:
            raise RuntimeError("The tensor is not initialized: it holds no value yet.")

    def __array__(self, dtype=None, copy=None):
        # a snapshot: the tensor itself may be updated in place by the next run
        if self._t is None:  # fluid 1.8 gave an empty float64 array
            return np.empty((0,), dtype=dtype or np.float64)
        arr = self._t.detach().cpu().numpy()
        if copy is not False:
            arr = arr.copy()
        return arr.astype(dtype) if dtype is not None else as_long_long(arr)

    def torch(self) -> torch.Tensor:
        """The torch tensor itself (fluidcompat extension)."""
        self._require()
        return self._t

    def __str__(self) -> str:
        if self._t is None:
            return "\tlod: {}\n\tdim: \n\tlayout: NCHW\n\tdtype: \n\tdata: []\n"
        return tensor_text(self._t, self._lod, vartype_of(self._t))

    __repr__ = __str__


Tensor = LoDTensor


class HeldTensor(LoDTensor):
    """A LoDTensor over a value another object holds in ``_value`` (a dygraph VarBase): its tensor
    and LoD, both live (``_set_tensor`` takes a new tensor)."""

    __slots__ = ("_owner",)

    def __init__(self, owner) -> None:
        self._owner = owner

    @property
    def _t(self):
        return self._owner._value

    @_t.setter
    def _t(self, value) -> None:
        self._owner._set_tensor(value)

    @property
    def _lod(self):
        t = self._owner._value
        return lod_of(t) if t is not None else []

    @_lod.setter
    def _lod(self, lod) -> None:
        t = self._owner._value
        if t is not None:
            with_lod(t, [list(level) for level in lod])


class ArrayValue(LoDTensor):
    """fluid's ``core.LoDTensorArray`` held in a scope variable: the script's list of LoDTensors
    (``get_lod_tensor_array()``, appended to as fluid's). The executor reads and writes it as an
    array value, a list of tensors carrying their LoD (NOTE: [Array values] in fluidcompat_ops/array.py)."""

    __slots__ = ("array",)

    def __init__(self) -> None:
        self.array = LoDTensorArray()
        self._lod = []

    @property
    def _t(self):
        return [None if e._t is None else with_lod(e._t, e.lod()) for e in self.array]

    @_t.setter
    def _t(self, value) -> None:
        self.array[:] = [LoDTensor(t, lod_of(t)) if t is not None else LoDTensor() for t in value or ()]


class SelectedRowsValue(LoDTensor):
    """fluid's ``core.SelectedRows`` held in a scope variable: ``rows()``, ``height()`` and the values
    tensor (``get_tensor()``), each set on its own as fluid's was. The executor reads and writes it as a
    ``SelectedRows`` value (``_t``)."""

    __slots__ = ("_rows", "_height", "_value")

    def __init__(self) -> None:
        self._rows: List[int] = []
        self._height = 0
        self._value = LoDTensor()
        self._lod = []

    @property
    def _t(self):
        values = self._value._t
        if values is None:
            return None
        rows = torch.tensor(self._rows, dtype=torch.int64, device=values.device)
        return SelectedRows(rows, values, self._height)

    @_t.setter
    def _t(self, value) -> None:
        if value is None:
            self._value._t = None
        elif isinstance(value, SelectedRows):
            self._rows = [int(r) for r in value.rows.reshape(-1).tolist()]
            self._height = int(value.height)
            self._value._t = value.values
        else:  # a dense value written over the rows: all rows of it
            self._rows = list(range(value.shape[0]))
            self._height = int(value.shape[0])
            self._value._t = value

    def rows(self) -> List[int]:
        return list(self._rows)

    def set_rows(self, rows) -> None:
        self._rows = [int(r) for r in rows]

    def height(self) -> int:
        return self._height

    def set_height(self, height: int) -> None:
        self._height = int(height)

    def get_tensor(self) -> LoDTensor:
        return self._value

    def sync_index(self) -> None:
        """fluid rebuilt its row index here; the rows are a list."""

    def numel(self) -> int:
        return 0 if self._value._t is None else self._value._t.numel()


class ScopeVariable:
    """A named slot in a Scope (fluid's ``core.Variable``)."""

    __slots__ = ("name", "tensor")

    def __init__(self, name: str) -> None:
        self.name = name
        self.tensor = LoDTensor()

    def get_tensor(self) -> LoDTensor:
        return self.tensor

    def get_selected_rows(self) -> SelectedRowsValue:
        """The variable as fluid's SelectedRows (made one if it held a dense tensor or nothing)."""
        if not isinstance(self.tensor, SelectedRowsValue):
            old = self.tensor._t
            self.tensor = SelectedRowsValue()
            if old is not None:
                self.tensor._t = old
        return self.tensor

    def get_lod_tensor_array(self):
        """The variable as fluid's LoDTensorArray (made one if it held nothing)."""
        if not isinstance(self.tensor, ArrayValue):
            old = self.tensor._t
            self.tensor = ArrayValue()
            if isinstance(old, list):
                self.tensor._t = old
        return self.tensor.array

    get_fetch_list = get_lod_tensor_array

    def is_initialized(self) -> bool:
        return self.tensor._t is not None

    def set_float(self, value: float) -> None:
        """Hold one float (fluid's Variable of a float; here a 0-d float32 tensor)."""
        self.tensor._t = torch.tensor(float(value), dtype=torch.float32)

    def set_int(self, value: int) -> None:
        self.tensor._t = torch.tensor(int(value), dtype=torch.int32)

    def _scalar(self, dtype) -> bool:
        t = self.tensor._t
        return torch.is_tensor(t) and t.dim() == 0 and t.dtype == dtype

    def is_float(self) -> bool:
        return self._scalar(torch.float32)

    def is_int(self) -> bool:
        return self._scalar(torch.int32)

    def get_float(self) -> float:
        if not self.is_float():
            raise TypeError(f"Variable {self.name} holds no float")
        return float(self.tensor._t)

    def get_int(self) -> int:
        if not self.is_int():
            raise TypeError(f"Variable {self.name} holds no int")
        return int(self.tensor._t)


class Scope:
    """A tree of name -> variable tables; lookups fall back to the parent."""

    def __init__(self, parent: Optional["Scope"] = None) -> None:
        self._vars: Dict[str, ScopeVariable] = {}
        self._parent = parent
        self._kids: List[Scope] = []

    def var(self, name: str) -> ScopeVariable:
        v = self._vars.get(name)
        if v is None:
            v = self._vars[name] = ScopeVariable(name)
        return v

    def find_var(self, name: str) -> Optional[ScopeVariable]:
        scope: Optional[Scope] = self
        while scope is not None:
            v = scope._vars.get(name)
            if v is not None:
                return v
            scope = scope._parent
        return None

    def find_local_var(self, name: str) -> Optional[ScopeVariable]:
        return self._vars.get(name)

    def erase(self, names) -> None:
        for n in names:
            self._vars.pop(n, None)

    def local_var_names(self) -> List[str]:
        return list(self._vars)

    def new_scope(self) -> "Scope":
        kid = Scope(self)
        self._kids.append(kid)
        return kid

    def drop_kids(self) -> None:
        self._kids.clear()

    def parent(self) -> Optional["Scope"]:
        return self._parent


_global_scope = Scope()


def global_scope() -> Scope:
    """The scope ``Executor.run`` uses when none is given."""
    return _global_scope


@contextlib.contextmanager
def scope_guard(scope: Scope) -> Iterator[None]:
    """Make ``scope`` the global scope inside the block."""
    global _global_scope
    if not isinstance(scope, Scope):
        raise TypeError(f"scope_guard expects a Scope. Received: {type(scope).__name__}")
    prev = _global_scope
    _global_scope = scope
    try:
        yield
    finally:
        _global_scope = prev


def _offsets(recursive_seq_lens):
    """A LoD (levels of offsets) from sequence lengths per level."""
    return [offsets_of(lens) for lens in recursive_seq_lens]


class LoDTensorArray(list):
    """fluid's ``core.LoDTensorArray``: a list of LoDTensors."""

    def append(self, tensor) -> None:  # noqa: D401  (the list method, typed as fluid's)
        super().append(tensor)
