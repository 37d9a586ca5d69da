"""Protobuf message classes made at import time from a field table, as a generated ``_pb2`` module
would hold them (the ``protobuf`` package's runtime; no ``protoc``, no generated code).

A table is a list of :func:`message` and :func:`enum` entries. A field is ``(name, number, label,
type)`` or ``(name, number, label, type, default)``: ``label`` is ``"required"``, ``"optional"`` or
``"repeated"``; ``type`` is a scalar type's name (``"int32"``, ``"string"``...) or the name of a
message or enum of the file, looked up as protoc looks it up (the enclosing messages first, innermost
first, then the file's package). :func:`build_module` fills a module's namespace: each top-level
message class (its nested messages as class attributes), each top-level enum (an
``EnumTypeWrapper``) and its values, and ``DESCRIPTOR``, the file's descriptor.

Torch-free; ``google.protobuf`` is imported only when a module is built.
"""

from __future__ import annotations

from typing import Dict, List, NamedTuple, Sequence, Tuple

_SCALARS = ("double", "float", "int64", "uint64", "int32", "fixed64", "fixed32", "bool", "string")
_SCALARS += ("bytes", "uint32", "sfixed32", "sfixed64", "sint32", "sint64")
_LABELS = ("optional", "required", "repeated")


class Enum(NamedTuple):
    name: str
    values: Tuple[Tuple[str, int], ...]


class Message(NamedTuple):
    name: str
    fields: Tuple[tuple, ...]
    nested: Tuple["Message", ...]
    enums: Tuple[Enum, ...]
    reserved: Tuple[int, ...]


def enum(name: str, values: Sequence[Tuple[str, int]]) -> Enum:
    """An enum: its values as ``(name, number)`` pairs, in the order the file declares them."""
    return Enum(name, tuple(values))


def message(
    name: str,
    fields: Sequence[tuple],
    nested: Sequence[Message] = (),
    enums: Sequence[Enum] = (),
    reserved: Sequence[int] = (),
) -> Message:
    """A message: its fields in the file's order, its nested messages and enums, and the field
    numbers it reserves (no longer used)."""
    for f in fields:
        if len(f) not in (4, 5) or f[2] not in _LABELS or not isinstance(f[1], int):
            raise ValueError(
                f"message {name}: a field should be (name, number, label, type[, default]) with label one of "
                f"{_LABELS}. Received: {f!r}"
            )
    return Message(name, tuple(fields), tuple(nested), tuple(enums), tuple(reserved))


def _kinds(package: str, entries: Sequence) -> Dict[str, str]:
    """Every message's and enum's full name (without the leading dot) -> 'message' or 'enum'."""
    kinds: Dict[str, str] = {}

    def walk(scope: str, items: Sequence) -> None:
        for item in items:
            full = f"{scope}.{item.name}"
            if full in kinds:
                raise ValueError(f"{full} is declared twice in the table")
            kinds[full] = "enum" if isinstance(item, Enum) else "message"
            if isinstance(item, Message):
                walk(full, item.enums + item.nested)

    walk(package, entries)
    return kinds


def _resolve(type_name: str, scope: str, kinds: Dict[str, str]) -> str:
    """``type_name`` as seen from message ``scope``: its full name, the innermost match first."""
    parts = scope.split(".")
    while parts:
        candidate = ".".join(parts + [type_name])
        if candidate in kinds:
            return candidate
        parts.pop()
    if type_name in kinds:
        return type_name
    raise ValueError(
        f"field type {type_name!r} (in {scope}) is neither a scalar type nor a message or enum of the table"
    )


def file_descriptor_proto(file_name: str, package: str, entries: Sequence):
    """The table as a ``FileDescriptorProto`` (proto2)."""
    from google.protobuf import descriptor_pb2

    fdp = descriptor_pb2.FileDescriptorProto(name=file_name, package=package, syntax="proto2")
    kinds = _kinds(package, entries)
    fd_type = descriptor_pb2.FieldDescriptorProto

    def add_enum(into, e: Enum) -> None:
        ep = into.add(name=e.name)
        for value_name, number in e.values:
            ep.value.add(name=value_name, number=number)

    def add_message(into, m: Message, scope: str) -> None:
        full = f"{scope}.{m.name}"
        mp = into.add(name=m.name)
        for f in m.fields:
            name, number, label, type_name = f[:4]
            fp = mp.field.add(name=name, number=number, label=getattr(fd_type, "LABEL_" + label.upper()))
            if type_name in _SCALARS:
                fp.type = getattr(fd_type, "TYPE_" + type_name.upper())
            else:
                target = _resolve(type_name, full, kinds)
                fp.type = fd_type.TYPE_ENUM if kinds[target] == "enum" else fd_type.TYPE_MESSAGE
                fp.type_name = "." + target
            if len(f) == 5:
                fp.default_value = f[4]
        for e in m.enums:
            add_enum(mp.enum_type, e)
        for number in m.reserved:
            mp.reserved_range.add(start=number, end=number + 1)
        for n in m.nested:
            add_message(mp.nested_type, n, full)

    for entry in entries:
        if isinstance(entry, Enum):
            add_enum(fdp.enum_type, entry)
        else:
            add_message(fdp.message_type, entry, package)
    return fdp


def _message_class(desc, module_name: str, prefix: str = ""):
    from google.protobuf import message as pb_message
    from google.protobuf import reflection

    namespace = {
        name: _message_class(n, module_name, f"{prefix}{desc.name}.") for name, n in desc.nested_types_by_name.items()
    }
    namespace.update(DESCRIPTOR=desc, __module__=module_name, __qualname__=prefix + desc.name)
    return reflection.GeneratedProtocolMessageType(desc.name, (pb_message.Message,), namespace)


def build_module(namespace: dict, file_name: str, package: str, entries: Sequence) -> List[str]:
    """Build the table's classes into ``namespace`` (a module's ``globals()``); returns the public
    names it added. The file goes into a descriptor pool of its own, so a real Paddle's
    ``framework.proto`` in the same process does not clash with it."""
    from google.protobuf import descriptor_pool
    from google.protobuf.internal import enum_type_wrapper

    pool = descriptor_pool.DescriptorPool()
    pool.AddSerializedFile(file_descriptor_proto(file_name, package, entries).SerializeToString())
    fd = pool.FindFileByName(file_name)
    names: List[str] = []
    for name, enum_desc in fd.enum_types_by_name.items():
        namespace[name] = enum_type_wrapper.EnumTypeWrapper(enum_desc)
        names.append(name)
        for value in enum_desc.values:
            namespace[value.name] = value.number
            names.append(value.name)
    for name, msg_desc in fd.message_types_by_name.items():
        namespace[name] = _message_class(msg_desc, namespace["__name__"])
        names.append(name)
    namespace["DESCRIPTOR"] = fd
    return names
