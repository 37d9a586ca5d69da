"""fluid's ``framework.Operator`` (one op of a Block: its type, slot -> variable-name lists and
attributes), ``OpRole`` (the ``op_role`` values) and ``OpProtoHolder``. ``framework`` builds and links
operators; fluid-era code finds these three there by name.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple

from fluidcompat import descs
from fluidcompat_ops.protos import COMMON_ATTRS, get_op_proto

if TYPE_CHECKING:  # (annotations only)
    from fluidcompat_ops import registry

__all__ = ["Operator", "OpRole", "OpProtoHolder"]


class OpProtoHolder:
    """fluid's ``framework.OpProtoHolder``: each op type's proto (its slots and attributes)."""

    __module__ = "fluidcompat.framework"  # fluid's framework.OpProtoHolder

    _instance: Optional["OpProtoHolder"] = None

    @classmethod
    def instance(cls) -> "OpProtoHolder":
        if cls._instance is None:
            cls._instance = cls()
        return cls._instance

    def get_op_proto(self, type: str):
        return get_op_proto(type)

    def update_op_proto(self) -> None:
        """fluid re-read protos after loading a custom op library; fluidcompat's never change."""

    @staticmethod
    def generated_op_attr_names():
        return {name for name, _ in COMMON_ATTRS}


class OpRole:
    """``op_role`` values, as fluid's ``core.op_proto_and_checker_maker.OpRole``."""

    __module__ = "fluidcompat.framework"  # fluid's framework.OpRole

    Forward = 0
    Backward = 1
    Optimize = 2
    RPC = 4
    Dist = 8
    LRSched = 16
    Loss = 256


# The op_role_var of an op built outside an optimizer's role guard: one empty list for all of them.
# A list per op was one in twenty of the objects a 20,000-op training program adds for the cyclic
# collector to visit (bench/program_scaling.py: its full collections during the build 0.15 s -> 0.06
# s, one fewer); ``attr`` and ``all_attrs`` give copies of lists, as fluid's did, so nothing writes
# to it.
_NO_ROLE_VAR: List[str] = []


class Operator:
    """One op in a Block: ``type``, slot -> variable-name lists, and attributes."""

    __module__ = "fluidcompat.framework"  # fluid's framework.Operator

    def __init__(
        self,
        block: Any,  # the framework.Block holding it
        type: str,
        inputs: Dict[str, List[str]],
        outputs: Dict[str, List[str]],
        attrs: Dict[str, Any],
        opdef: "registry.OpDef",
    ) -> None:
        self.block = block
        self.type = type
        self.inputs = inputs
        self.outputs = outputs
        self.attrs = attrs
        self._def = opdef
        self._callsite: Optional[Tuple[str, int, str]] = None
        # a grad op: (block index, op index) of the forward op it differentiates
        self._fwd_at: Optional[Tuple[int, int]] = None

    # -- fluid's accessors --------------------------------------------------------------------
    def input(self, name: str) -> List[str]:
        return list(self.inputs.get(name, []))

    def output(self, name: str) -> List[str]:
        return list(self.outputs.get(name, []))

    # fluid's OpDesc keeps its slots in a sorted map: names and arguments come in slot-name order
    @property
    def input_names(self) -> List[str]:
        return sorted(self.inputs)

    @property
    def output_names(self) -> List[str]:
        return sorted(self.outputs)

    @property
    def input_arg_names(self) -> List[str]:
        return [n for slot in sorted(self.inputs) for n in self.inputs[slot]]

    @property
    def output_arg_names(self) -> List[str]:
        return [n for slot in sorted(self.outputs) for n in self.outputs[slot]]

    @property
    def attr_names(self) -> List[str]:
        return list(self.attrs)

    def attr(self, name: str) -> Any:
        if name not in self.attrs:
            raise ValueError(f"Operator '{self.type}' has no attribute '{name}'. Received: name={name!r}")
        value = self.attrs[name]
        return list(value) if type(value) is list else value  # a copy, as fluid's

    def has_attr(self, name: str) -> bool:
        return name in self.attrs

    def attr_type(self, name: str):
        """The ``core.AttrType`` a ProgramDesc records attribute ``name`` as (what fluid declared)."""
        from fluidcompat.proto import attr_kind

        like = self._def.attrs.get(name) if self._def is not None else None
        return attr_kind(name, self.attr(name), like, self.type)

    @property
    def desc(self) -> "descs.OpDesc":
        """The op as fluid's ``core.OpDesc`` showed it (methods, not properties)."""
        return descs.OpDesc(self)

    def all_attrs(self) -> Dict[str, Any]:
        return {k: list(v) if type(v) is list else v for k, v in self.attrs.items()}

    def _set_attr(self, name: str, value: Any) -> None:
        self.attrs[name] = value
        self.block.program._bump()

    def _rename_input(self, old: str, new: str) -> None:
        for names in self.inputs.values():
            names[:] = [new if n == old else n for n in names]
        self.block.program._bump()

    def _rename_output(self, old: str, new: str) -> None:
        for names in self.outputs.values():
            names[:] = [new if n == old else n for n in names]
        self.block.program._bump()

    @property
    def idx(self) -> int:
        for i, op in enumerate(self.block.ops):
            if op is self:
                return i
        raise ValueError(f"Operator '{self.type}' is not in its block")

    def callsite_text(self) -> str:
        if self._callsite is None:
            return "<unknown>"
        fname, lineno, line = self._callsite
        return f'File "{fname}", line {lineno}: {line}'

    def to_string(self, skip_op_callstack: bool = True) -> str:
        def slots(d: Dict[str, List[str]]) -> str:
            return ", ".join(f"{k}={v}" for k, v in d.items())

        shown = []
        for k in sorted(self.attrs):
            if k in ("op_device", "op_role", "op_role_var", "op_namescope"):
                continue
            shown.append(f"{k} = {self.attrs[k]}")
        shown.append(f"op_device = {self.attrs.get('op_device', '')}")
        return f"{{{slots(self.outputs)}}} = {self.type}(inputs={{{slots(self.inputs)}}}, {', '.join(shown)})"

    __str__ = to_string
    __repr__ = to_string

    def _copy_to(self, block: Any) -> "Operator":
        new = Operator(
            block,
            self.type,
            {k: list(v) for k, v in self.inputs.items()},
            {k: list(v) for k, v in self.outputs.items()},
            dict(self.attrs),
            self._def,
        )
        new._callsite = self._callsite
        new._fwd_at = self._fwd_at
        return new
