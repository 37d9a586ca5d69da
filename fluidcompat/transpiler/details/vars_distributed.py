"""Where a distributed job's variables live: each server-side piece (``VarDistributed``) of an original
variable, its slice, block, offset, kind (``vtype``: Param, Optimizer, RemotePrefetch) and server.

A trainer program's ``_parameters_on_pservers`` may hold a ``VarsDistributed``: ``fluid.io``'s
``save_persistables`` then fetches the Optimizer and RemotePrefetch variables from their servers."""

from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Union

from fluidcompat.framework import Variable

__all__ = ["VarStruct", "VarDistributed", "VarsDistributed"]


class VarStruct:
    """The properties of a variable that a VarDistributed records."""

    def __init__(self, name, shape, dtype, type, lod_level, persistable) -> None:
        self.name = name
        self.shape = shape
        self.dtype = dtype
        self.type = type
        self.lod_level = lod_level
        self.persistable = persistable


def _struct(var: Union[Variable, VarStruct]) -> VarStruct:
    if isinstance(var, Variable):
        return VarStruct(var.name, var.shape, var.dtype, var.type, var.lod_level, var.persistable)
    return var


def _same(a, b) -> bool:
    return all(getattr(a, k) == getattr(b, k) for k in ("name", "type", "shape", "dtype", "lod_level", "persistable"))


class VarDistributed:
    """One piece of ``origin_var`` on a server: ``slice_var`` (a Variable or VarStruct), whether it is a
    slice (by default: whether it differs from the original), its ``block_id`` among the slices, its
    ``offset`` (elements before it), ``vtype`` and ``endpoint``."""

    def __init__(self, origin_var, slice_var, is_slice=None, block_id=None, offset=None, vtype=None, endpoint=None):
        self.origin = _struct(origin_var)
        self.slice = _struct(slice_var)
        self.is_slice = (not self.equal(self.origin, self.slice)) if is_slice is None else is_slice
        self.block_id = 0 if block_id is None else block_id
        self.offset = 0 if offset is None else offset
        self.vtype = vtype
        self.endpoint = endpoint

    @staticmethod
    def equal(var1, var2) -> bool:
        """Whether two VarStructs record the same variable (name, type, shape, dtype, lod_level, persistable)."""
        if not (isinstance(var1, VarStruct) and isinstance(var2, VarStruct)):
            raise TypeError(
                f"VarDistributed.equal compares two VarStructs. Received: {type(var1).__name__}, {type(var2).__name__}"
            )
        return _same(var1, var2)

    def __str__(self) -> str:
        o, s = self.origin, self.slice
        origin = f"{o.name} : fluid.{o.type}.shape{o.shape}.astype({o.dtype})"
        piece = (
            f"{s.name} : fluid.{s.type}.shape{s.shape}.astype({s.dtype})"
            f".slice({self.is_slice}).block({self.block_id}).offset({self.offset})"
        )
        return f"var owned: {self.vtype}, origin var: ( {origin} ), slice var: ( {piece} ), endpoint: {self.endpoint} "


class VarsDistributed:
    """The VarDistributed records of a job, with the lookups fluid's io and transpilers made."""

    def __init__(self) -> None:
        self.distributed_vars: List[VarDistributed] = []

    def add_distributed_var(
        self, origin_var, slice_var, is_slice=None, block_id=None, offset=None, vtype=None, endpoint=None
    ) -> None:
        """Record one piece (the arguments as VarDistributed's)."""
        self.distributed_vars.append(VarDistributed(origin_var, slice_var, is_slice, block_id, offset, vtype, endpoint))

    def get_distributed_var_by_slice(self, var_name: str) -> Optional[VarDistributed]:
        """The record whose slice is named ``var_name`` (None if none)."""
        return next((v for v in self.distributed_vars if v.slice.name == var_name), None)

    @staticmethod
    def equal(var1, var2) -> bool:
        """Whether two variables (or VarStructs) agree in name, type, shape, dtype, lod_level and persistable."""
        return _same(var1, var2)

    def get_distributed_var_by_origin_and_ep(self, origin_var_name: str, endpoint: str) -> Optional[VarDistributed]:
        """The record of ``origin_var_name``'s piece on ``endpoint`` (None if none)."""
        return next(
            (v for v in self.distributed_vars if v.origin.name == origin_var_name and v.endpoint == endpoint), None
        )

    def get_distributed_vars_by_vtypes(
        self, vtypes: Sequence[str], groupby: bool = False
    ) -> Union[List[VarDistributed], Dict[str, List[VarDistributed]]]:
        """The records of the kinds ``vtypes``; ``groupby``: a dict original name -> its records."""
        chosen = [v for v in self.distributed_vars if v.vtype in vtypes]
        if not groupby:
            return chosen
        grouped: Dict[str, List[VarDistributed]] = {}
        for v in chosen:
            grouped.setdefault(v.origin.name, []).append(v)
        return grouped

    def get_distributed_vars_by_ep(self, endpoint: str, vtype: Optional[str] = None) -> List[VarDistributed]:
        """The records on ``endpoint`` (of kind ``vtype`` only, when given)."""
        return [v for v in self.distributed_vars if v.endpoint == endpoint and (not vtype or v.vtype == vtype)]

    def overview(self) -> str:
        """One line per record."""
        return "\n".join(str(v) for v in self.distributed_vars)
