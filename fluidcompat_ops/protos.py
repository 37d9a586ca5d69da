"""Op protos as fluid 1.8's ``OpProtoHolder`` gave them: each op type's input and output slots
(duplicable, dispensable, intermediate) and attribute names, in fluid's order.

``fluid18_op_protos.json`` beside this file holds fluid 1.8.5's own protos (facts read from
``core.get_all_op_protos()`` of the real fluid 1.8.5): code written against fluid (its ``OpTest``, the
``Operator`` factory, layer helpers that walk ``op_proto.inputs``) reads them. An op type fluid did
not have gets a proto made from its ``OpDef``: every slot plain, its attributes in their order.
"""

from __future__ import annotations

import json
import os
from typing import Dict, List, Optional

from fluidcompat_ops.registry import all_defs, has, lookup

_HERE = os.path.dirname(os.path.abspath(__file__))
_FLUID: Optional[Dict[str, dict]] = None

# framework.proto's AttrType codes
ATTR_TYPES = {
    "INT": 0,
    "FLOAT": 1,
    "STRING": 2,
    "INTS": 3,
    "FLOATS": 4,
    "STRINGS": 5,
    "BOOLEAN": 6,
    "BOOLEANS": 7,
    "BLOCK": 8,
    "LONG": 9,
    "BLOCKS": 10,
    "LONGS": 11,
}
# the attributes fluid's OpProtoAndCheckerMaker added to every op
COMMON_ATTRS = (
    ("op_role", 0),
    ("op_role_var", 5),
    ("op_namescope", 2),
    ("op_callstack", 5),
    ("op_device", 2),
)


class VarProto:
    """One input or output slot of an op proto."""

    __slots__ = ("name", "duplicable", "dispensable", "intermediate", "comment")

    def __init__(self, name: str, flags: str = "") -> None:
        self.name = name
        self.duplicable = "d" in flags
        self.dispensable = "o" in flags
        self.intermediate = "i" in flags
        self.comment = ""

    def __repr__(self) -> str:
        return (
            f"VarProto(name={self.name!r}, duplicable={self.duplicable}, dispensable={self.dispensable}, "
            f"intermediate={self.intermediate})"
        )


class AttrProto:
    """One attribute of an op proto (``type``: framework.proto's AttrType code)."""

    __slots__ = ("name", "type", "generated", "comment")

    def __init__(self, name: str, type: int) -> None:
        self.name = name
        self.type = type
        self.generated = False
        self.comment = ""

    def __repr__(self) -> str:
        return f"AttrProto(name={self.name!r}, type={self.type})"


class OpProto:
    """An op type's proto: ``type``, ``inputs``, ``outputs`` and ``attrs`` as fluid's ``framework_pb2.OpProto``."""

    __slots__ = ("type", "inputs", "outputs", "attrs", "comment")

    def __init__(self, type: str, inputs: List[VarProto], outputs: List[VarProto], attrs: List[AttrProto]) -> None:
        self.type = type
        self.inputs = inputs
        self.outputs = outputs
        self.attrs = attrs
        self.comment = ""

    def __repr__(self) -> str:
        return f"OpProto(type={self.type!r}, inputs={self.inputs}, outputs={self.outputs})"


def _fluid() -> Dict[str, dict]:
    global _FLUID
    if _FLUID is None:
        with open(os.path.join(_HERE, "fluid18_op_protos.json")) as f:
            _FLUID = json.load(f)
    return _FLUID


def _attr_type(value) -> int:
    if isinstance(value, bool):
        return ATTR_TYPES["BOOLEAN"]
    if isinstance(value, int):
        return ATTR_TYPES["INT"]
    if isinstance(value, float):
        return ATTR_TYPES["FLOAT"]
    if isinstance(value, str):
        return ATTR_TYPES["STRING"]
    if isinstance(value, (list, tuple)):
        if value and all(isinstance(v, bool) for v in value):
            return ATTR_TYPES["BOOLEANS"]
        if value and all(isinstance(v, float) for v in value):
            return ATTR_TYPES["FLOATS"]
        if value and all(isinstance(v, str) for v in value):
            return ATTR_TYPES["STRINGS"]
        return ATTR_TYPES["INTS"]
    return ATTR_TYPES["INT"]


def has_proto(op_type: str) -> bool:
    """Whether the op type has a proto: fluid 1.8.5 made one for it, or fluidcompat registers it
    (grad ops had none in fluid)."""
    return op_type in _fluid() or (has(op_type) and not lookup(op_type).forward)


def get_op_proto(op_type: str) -> OpProto:
    """The op type's proto; ValueError (fluid's text) for a type with none."""
    rec = _fluid().get(op_type)
    if rec is not None:
        return OpProto(
            op_type,
            [VarProto(n, f) for n, f in rec["inputs"]],
            [VarProto(n, f) for n, f in rec["outputs"]],
            [AttrProto(n, t) for n, t in rec["attrs"]],
        )
    if not has_proto(op_type):
        raise ValueError(f'Operator "{op_type}" has not been registered.')
    opdef = lookup(op_type)
    attrs = [AttrProto(n, _attr_type(v)) for n, v in opdef.attrs.items()]
    attrs += [AttrProto(n, t) for n, t in COMMON_ATTRS if n not in opdef.attrs]
    return OpProto(
        op_type,
        [VarProto(n, "o" if n in opdef.optional_inputs else "") for n in opdef.inputs],
        [VarProto(n) for n in opdef.outputs],
        attrs,
    )


def all_proto_types() -> List[str]:
    """Every op type with a proto (fluid 1.8.5's, then fluidcompat's own forward ops)."""
    names = set(_fluid())
    names.update(t for t, d in all_defs().items() if not d.forward)
    return sorted(names)
