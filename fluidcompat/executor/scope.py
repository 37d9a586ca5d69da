"""Scopes and LoDTensors: where persistable values live between runs."""

from __future__ import annotations

import contextlib
from typing import Dict, Iterator, List, Optional

import numpy as np
import torch

from fluidcompat import places
from fluidcompat.dtypes import VarType, as_long_long, to_vartype
from fluidcompat.logging import tensor_text
from fluidcompat_ops.registry import TORCH_DTYPES, bind_torch
from fluidcompat_ops.sequence import lengths_of

bind_torch()
_FROM_TORCH = {v: k for k, v in TORCH_DTYPES.items()}


def vartype_of(t: torch.Tensor) -> VarType:
    return _FROM_TORCH[t.dtype]


class LoDTensor:
    """A tensor held in a scope (fluid's ``core.LoDTensor``), backed by a torch tensor.

    ``np.array(t)`` copies it to the host; ``t.set(array, place)`` replaces it.
    """

    __slots__ = ("_t", "_lod")

    def __init__(self, value: Optional[torch.Tensor] = None, made_lod=None) -> None:
        """``made_lod``: the LoD an op gave ``value``, kept as made (unlike ``set_lod`` it is not checked
        against the rows: ctc_align's all-empty result is one row [-1] under offsets [0, 0, ...], as in
        fluid 1.8.5)."""
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
        from fluidcompat.lod_tensor import _offsets

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


class ScopeVariable:
    """A named slot in a Scope (fluid's ``core.Variable``)."""

    __slots__ = ("name", "tensor")

    def __init__(self, name: str) -> None:
        self.name = name
        self.tensor = LoDTensor()

    def get_tensor(self) -> LoDTensor:
        return self.tensor

    def is_initialized(self) -> bool:
        return self.tensor._t is not None


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
