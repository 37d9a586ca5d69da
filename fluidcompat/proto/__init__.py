"""fluid's file formats: the ProgramDesc protobuf (``__model__``, ``.pdmodel``) and the LoDTensor
stream (per-variable and combined parameter files), read and written without a protobuf library.

Torch-free. Field numbers are those of fluid 1.8's ``framework.proto``; proto2 repeated scalars
are not packed.

As ``paddle.fluid.proto`` this package also holds fluid's generated message modules, built with the
``protobuf`` package when first imported (``import paddle.fluid`` imports neither them nor protobuf):
``framework_pb2`` (``OpProto``, ``OpDesc``, ``ProgramDesc``...) and ``profiler.profiler_pb2``.
"""

from __future__ import annotations

import io
import struct
from typing import Any, Dict, List, Tuple

import numpy as np

from fluidcompat.dtypes import FluidEnum, VarType, np_dtype, to_vartype


class FormatError(ValueError):
    """A file is not in the format fluid wrote (truncated, or not a fluid file at all)."""


# -- protobuf wire format -------------------------------------------------------------------------
def _varint(value: int) -> bytes:
    if value < 0:
        value += 1 << 64
    out = bytearray()
    while True:
        b = value & 0x7F
        value >>= 7
        if value:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _key(field: int, wire: int) -> bytes:
    return _varint((field << 3) | wire)


def _bytes_field(field: int, data: bytes) -> bytes:
    return _key(field, 2) + _varint(len(data)) + data


def _int_field(field: int, value: int) -> bytes:
    return _key(field, 0) + _varint(int(value))


def _float_field(field: int, value: float) -> bytes:
    return _key(field, 5) + struct.pack("<f", float(value))


def _parse(data: bytes) -> Dict[int, List[Any]]:
    """Fields of one message: number -> list of raw values (int, bytes or float bits)."""
    fields: Dict[int, List[Any]] = {}
    pos, end = 0, len(data)

    def varint() -> int:
        nonlocal pos
        shift = result = 0
        while True:
            if pos >= end:
                raise FormatError("the protobuf message ends inside a number")
            b = data[pos]
            pos += 1
            result |= (b & 0x7F) << shift
            if not b & 0x80:
                return result
            shift += 7

    while pos < end:
        key = varint()
        field, wire = key >> 3, key & 7
        if wire == 0:
            value: Any = varint()
        elif wire == 2:
            n = varint()
            if pos + n > end:
                raise FormatError("the protobuf message ends inside a field")
            value = data[pos : pos + n]
            pos += n
        elif wire == 5:
            value = struct.unpack("<f", data[pos : pos + 4])[0]
            pos += 4
        elif wire == 1:
            value = struct.unpack("<d", data[pos : pos + 8])[0]
            pos += 8
        else:
            raise FormatError(f"unknown protobuf wire type {wire}")
        fields.setdefault(field, []).append(value)
    return fields


def _signed(v: int, bits: int = 64) -> int:
    return v - (1 << bits) if v >= 1 << (bits - 1) else v


def _signed32(v: int) -> int:
    v &= (1 << 64) - 1
    return _signed(v & 0xFFFFFFFF, 32) if v < (1 << 32) or v >= (1 << 63) else v


# -- ProgramDesc ------------------------------------------------------------------------------------
class AttrType(FluidEnum):
    """``fluid.core.AttrType``: an attribute's type as a ProgramDesc records it."""

    INT = 0
    FLOAT = 1
    STRING = 2
    INTS = 3
    FLOATS = 4
    STRINGS = 5
    BOOL = 6
    BOOLS = 7
    BLOCK = 8
    LONG = 9
    BLOCKS = 10
    LONGS = 11


# the codes, in AttrType's order, under the names the encoder and decoder below use
ATTR_INT, ATTR_FLOAT, ATTR_STRING, ATTR_INTS, ATTR_FLOATS, ATTR_STRINGS = list(AttrType)[:6]
ATTR_BOOLEAN, ATTR_BOOLEANS, ATTR_BLOCK, ATTR_LONG, ATTR_BLOCKS, ATTR_LONGS = list(AttrType)[6:]
# list attributes whose element type an empty (or integer-valued) list does not tell: fluid 1.8.5's types
_STRING_LISTS = {
    "op_role_var", "op_callstack", "skip_eager_deletion_vars", "original_output_grad", "backward_skip_vars",
    "epmap", "table_names", "inner_input_grads", "inner_output_grads",
}  # fmt: skip
_FLOAT_LISTS = {"fp32_values", "custom_neg_classes_probs"}
_LONG_LISTS = {"int64_values"}
_BLOCK_ATTRS = {"sub_block"}
# attributes fluid 1.8.5 declared as int64 (LONG) or vector<int64> (LONGS) on these ops (and their grads),
# recorded from its serialized programs (tests/golden/program_desc.py and a wider sweep)
_LONG_OF = {
    ("arg_max", "axis"), ("arg_min", "axis"), ("lookup_table", "padding_idx"), ("space_to_depth", "blocksize"),
    ("nll_loss", "ignore_index"), ("lookup_table_dequant", "padding_idx"),
}  # fmt: skip
_LONGS_OF = {
    ("fill_constant", "shape"), ("gaussian_random", "shape"), ("uniform_random", "shape"), ("randint", "shape"),
    ("roll", "dims"), ("roll", "shifts"), ("lookup_table", "height_sections"), ("lookup_table_v2", "height_sections"),
}  # fmt: skip


def attr_kind(name: str, value, like=None, op_type: str = "") -> AttrType:
    """The AttrType fluid 1.8.5 declared for attribute ``name`` of ``op_type`` holding ``value``;
    ``like`` (the op's default) tells it where the value alone does not (a float attribute given 2)."""
    if isinstance(value, int) and not isinstance(value, bool):
        if isinstance(like, float):
            return ATTR_FLOAT
        if isinstance(like, bool):
            return ATTR_BOOLEAN
    base = op_type[: -len("_grad")] if op_type.endswith("_grad") else op_type
    if (base, name) in _LONG_OF and isinstance(value, int) and not isinstance(value, bool):
        return ATTR_LONG
    if (base, name) in _LONGS_OF and isinstance(value, (list, tuple)):
        return ATTR_LONGS
    if name in _BLOCK_ATTRS and isinstance(value, int):
        return ATTR_BLOCK
    if isinstance(value, bool):
        return ATTR_BOOLEAN
    if isinstance(value, int):
        return ATTR_INT if -(1 << 31) <= value < (1 << 31) else ATTR_LONG
    if isinstance(value, float):
        return ATTR_FLOAT
    if isinstance(value, str):
        return ATTR_STRING
    if isinstance(value, (list, tuple)):
        items = list(value)
        like_items = list(like) if isinstance(like, (list, tuple)) else []
        if name in _STRING_LISTS or (items and all(isinstance(v, str) for v in items)):
            return ATTR_STRINGS
        if name == "bool_values":  # fluid keeps assign_value's booleans as ints
            return ATTR_INTS
        if items and all(isinstance(v, bool) for v in items):
            return ATTR_BOOLEANS
        floats = any(isinstance(v, float) for v in items) or any(isinstance(v, float) for v in like_items)
        if name in _FLOAT_LISTS or floats:
            return ATTR_FLOATS
        if name in _LONG_LISTS or any(not -(1 << 31) <= v < (1 << 31) for v in items):
            return ATTR_LONGS
        return ATTR_INTS
    raise TypeError(f"attribute {name!r} of type {type(value).__name__} cannot be written to a ProgramDesc")


# AttrType -> (field number, how one value is written)
_ATTR_FIELDS = {
    ATTR_INT: (3, int), ATTR_FLOAT: (4, float), ATTR_STRING: (5, str), ATTR_INTS: (6, int), ATTR_FLOATS: (7, float),
    ATTR_STRINGS: (8, str), ATTR_BOOLEAN: (10, int), ATTR_BOOLEANS: (11, int), ATTR_BLOCK: (12, int),
    ATTR_LONG: (13, int), ATTR_LONGS: (15, int),
}  # fmt: skip


def _attr_bytes(name: str, value, like=None, op_type: str = "") -> bytes:
    """One attribute, written as the type fluid declared it (fluid reads an attribute only as that)."""
    kind = attr_kind(name, value, like, op_type)
    field, cast = _ATTR_FIELDS[kind]
    out = _bytes_field(1, name.encode()) + _int_field(2, int(kind))
    for v in value if isinstance(value, (list, tuple)) else [value]:
        if cast is str:
            out += _bytes_field(field, v.encode())
        elif cast is float:
            out += _float_field(field, float(v))
        else:
            out += _int_field(field, int(v))
    return out


def _attr_value(f: Dict[int, List[Any]]):
    kind = f[2][0]
    if kind == ATTR_INT:
        return _signed32(f.get(3, [0])[0])
    if kind == ATTR_FLOAT:
        return float(f.get(4, [0.0])[0])
    if kind == ATTR_STRING:
        return f.get(5, [b""])[0].decode()
    if kind == ATTR_INTS:
        return [_signed32(v) for v in f.get(6, [])]
    if kind == ATTR_FLOATS:
        return [float(v) for v in f.get(7, [])]
    if kind == ATTR_STRINGS:
        return [v.decode() for v in f.get(8, [])]
    if kind == ATTR_BOOLEAN:
        return bool(f.get(10, [0])[0])
    if kind == ATTR_BOOLEANS:
        return [bool(v) for v in f.get(11, [])]
    if kind == ATTR_BLOCK:
        return _signed32(f.get(12, [0])[0])
    if kind == ATTR_LONG:
        return _signed(f.get(13, [0])[0])
    if kind == ATTR_BLOCKS:
        return [_signed32(v) for v in f.get(14, [])]
    if kind == ATTR_LONGS:
        return [_signed(v) for v in f.get(15, [])]
    raise FormatError(f"unknown attribute type {kind}")


def _tensor_desc(dtype, shape) -> bytes:
    return _int_field(1, int(dtype)) + b"".join(_int_field(2, d) for d in shape)


def _var_bytes(var) -> bytes:
    vt = var.type
    type_msg = _int_field(1, int(vt))
    if vt == VarType.LOD_TENSOR:
        type_msg += _bytes_field(3, _bytes_field(1, _tensor_desc(var.dtype, var.shape)) + _int_field(2, var.lod_level))
    elif vt == VarType.SELECTED_ROWS:
        type_msg += _bytes_field(2, _tensor_desc(var.dtype, var.shape))
    out = _bytes_field(1, var.name.encode()) + _bytes_field(2, type_msg)
    out += _int_field(3, int(bool(var.persistable)))
    if var.need_check_feed:
        out += _int_field(4, 1)
    return out


def _op_bytes(op) -> bytes:
    out = b""
    for field, slots in ((1, op.inputs), (2, op.outputs)):
        for slot, names in slots.items():
            out += _bytes_field(
                field, _bytes_field(1, slot.encode()) + b"".join(_bytes_field(2, n.encode()) for n in names)
            )
    out += _bytes_field(3, op.type.encode())
    defaults = op._def.attrs if getattr(op, "_def", None) is not None else {}
    for name in sorted(op.attrs):
        out += _bytes_field(4, _attr_bytes(name, op.attrs[name], defaults.get(name), op.type))
    return out


def program_to_bytes(program) -> bytes:
    """Serialise a Program as fluid's ProgramDesc protobuf."""
    out = b""
    for b in program.blocks:
        msg = _int_field(1, b.idx) + _int_field(2, b.parent_idx)
        msg += b"".join(_bytes_field(3, _var_bytes(b.vars[n])) for n in b._desc_order())
        msg += b"".join(_bytes_field(4, _op_bytes(op)) for op in b.ops)
        if b.forward_block_idx != -1:
            msg += _int_field(5, b.forward_block_idx)
        out += _bytes_field(1, msg)
    return out + _bytes_field(4, _int_field(1, 0))


def parse_program(data: bytes):
    """A ProgramDesc protobuf as plain records: [(idx, parent, forward, vars, ops)]. Data that is not
    one (truncated, damaged) raises FormatError."""
    try:
        return _program_records(data)
    except FormatError:
        raise
    except (KeyError, IndexError, TypeError, ValueError, AttributeError, OverflowError, struct.error) as e:
        raise FormatError(f"not a fluid program ({type(e).__name__}: {e})") from None


def _program_records(data: bytes):
    top = _parse(data)
    blocks = []
    for raw in top.get(1, []):
        b = _parse(raw)
        vars_ = []
        for rv in b.get(3, []):
            v = _parse(rv)
            t = _parse(v[2][0])
            vtype = VarType(t[1][0])
            shape, dtype, lod_level = [], VarType.FP32, 0
            if 3 in t:
                lt = _parse(t[3][0])
                td = _parse(lt[1][0])
                dtype, shape = VarType(td[1][0]), [_signed(d) for d in td.get(2, [])]
                lod_level = lt.get(2, [0])[0]
            elif 2 in t:
                td = _parse(t[2][0])
                dtype, shape = VarType(td[1][0]), [_signed(d) for d in td.get(2, [])]
            vars_.append(
                {
                    "name": v[1][0].decode(),
                    "type": vtype,
                    "dtype": dtype,
                    "shape": shape,
                    "lod_level": lod_level,
                    "persistable": bool(v.get(3, [0])[0]),
                    "need_check_feed": bool(v.get(4, [0])[0]),
                }
            )
        ops = []
        for ro in b.get(4, []):
            o = _parse(ro)
            slots = []
            for field in (1, 2):
                d = {}
                for rs in o.get(field, []):
                    s = _parse(rs)
                    d[s[1][0].decode()] = [a.decode() for a in s.get(2, [])]
                slots.append(d)
            attrs = {}
            for ra in o.get(4, []):
                a = _parse(ra)
                attrs[a[1][0].decode()] = _attr_value(a)
            ops.append({"type": o[3][0].decode(), "inputs": slots[0], "outputs": slots[1], "attrs": attrs})
        blocks.append(
            (_signed32(b[1][0]), _signed32(b[2][0]), _signed32(b.get(5, [-1 & ((1 << 64) - 1)])[0]), vars_, ops)
        )
    if not blocks:
        raise FormatError("the file holds no program blocks: it is not a fluid program")
    return blocks


# -- the LoDTensor stream ---------------------------------------------------------------------------
def tensor_to_bytes(array: np.ndarray, lod=()) -> bytes:
    """One LoDTensor as fluid streams it: version, LoD, version, TensorDesc, raw data."""
    array = np.ascontiguousarray(array)
    out = io.BytesIO()
    out.write(struct.pack("<I", 0))
    out.write(struct.pack("<Q", len(lod)))
    for level in lod:
        data = np.asarray(level, dtype="<u8").tobytes()
        out.write(struct.pack("<Q", len(data)))
        out.write(data)
    out.write(struct.pack("<I", 0))
    desc = _tensor_desc(to_vartype(array.dtype), array.shape)
    out.write(struct.pack("<i", len(desc)))
    out.write(desc)
    out.write(array.tobytes())
    return out.getvalue()


def read_tensor(stream, what: str) -> Tuple[np.ndarray, List[List[int]]]:
    """Read one LoDTensor from ``stream``; ``what`` names it in errors."""

    def take(n: int) -> bytes:
        data = stream.read(n)
        if len(data) != n:
            raise FormatError(f"{what}: the file ends early (wanted {n} more bytes, found {len(data)})")
        return data

    (version,) = struct.unpack("<I", take(4))
    if version != 0:
        raise FormatError(f"{what}: not a fluid tensor (version {version}, expected 0)")
    (levels,) = struct.unpack("<Q", take(8))
    if levels > 64:
        raise FormatError(f"{what}: not a fluid tensor ({levels} LoD levels)")
    lod = []
    for _ in range(levels):
        (size,) = struct.unpack("<Q", take(8))
        lod.append(np.frombuffer(take(size), dtype="<u8").astype(int).tolist())
    (version,) = struct.unpack("<I", take(4))
    if version != 0:
        raise FormatError(f"{what}: not a fluid tensor (tensor version {version}, expected 0)")
    (size,) = struct.unpack("<i", take(4))
    if not 0 < size < 1 << 20:
        raise FormatError(f"{what}: not a fluid tensor (descriptor of {size} bytes)")
    desc = _parse(take(size))
    try:
        dtype = np_dtype(VarType(desc[1][0]))
    except (KeyError, ValueError):
        raise FormatError(f"{what}: unknown element type in the file") from None
    shape = [_signed(d) for d in desc.get(2, [])]
    count = int(np.prod(shape)) if shape else 1
    data = take(count * dtype.itemsize)
    return np.frombuffer(data, dtype=dtype).reshape(shape).copy(), lod


# -- the profile file (fluid's profiler.proto) -------------------------------------------------------
def profile_to_bytes(threads, wall_offset_ns: int, start_ns: int, end_ns: int) -> bytes:
    """fluid's ``Profile`` message: every CPU event with its thread as ``sub_device_id``.

    Linear in the number of events (NOTE: [Writing the profile file])."""
    out = [_profile_events(t, int(wall_offset_ns)) for t in threads if len(t.events)]
    out += [_int_field(2, int(start_ns + wall_offset_ns)), _int_field(3, int(end_ns + wall_offset_ns))]
    return b"".join(out)


_VARINT_SHIFTS = np.arange(0, 64, 7, dtype=np.uint64)  # the 10 groups of 7 bits of a 64-bit varint


def _varint_rows(values: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """The varints of ``values`` (uint64) as rows of 10 bytes and a mask of the bytes each uses."""
    shifted = values[:, None] >> _VARINT_SHIFTS
    length = np.maximum((shifted != 0).sum(axis=1), 1)
    used = np.arange(10) < length[:, None]
    more = np.arange(10) < (length - 1)[:, None]
    return ((shifted & np.uint64(0x7F)).astype(np.uint8) | (more * 0x80).astype(np.uint8)), used


def _padded(parts: List[bytes]) -> Tuple[np.ndarray, np.ndarray]:
    """Byte strings as zero-padded rows and a mask of their bytes."""
    width = max(len(p) for p in parts)
    rows = np.frombuffer(b"".join(p.ljust(width, b"\0") for p in parts), np.uint8).reshape(len(parts), width)
    return rows, np.arange(width) < np.array([len(p) for p in parts])[:, None]


def _profile_events(thread, wall_offset_ns: int) -> bytes:
    """The ``events`` fields of one thread's events, in order."""
    events = thread.events
    n = len(events)
    index: Dict[str, int] = {}
    ids = np.fromiter((index.setdefault(e.name, len(index)) for e in events), np.int64, n)
    starts = np.fromiter((e.start_ns for e in events), np.int64, n) + np.int64(wall_offset_ns)
    ends = np.fromiter((e.end_ns for e in events), np.int64, n) + np.int64(wall_offset_ns)
    tail = _int_field(6, thread.tid) + _int_field(8, 0)
    # ops of block 0 sit at depth 2, as fluid numbers them
    heads, head_used = _padded([_bytes_field(1, name.encode()) for name in index])
    tails, tail_used = _padded([_int_field(5, name.count("/") + 2) + tail for name in index])
    start_bytes, start_used = _varint_rows(starts.astype(np.uint64))  # (negatives as two's complement)
    end_bytes, end_used = _varint_rows(ends.astype(np.uint64))
    one = np.ones((n, 1), bool)
    sizes = (head_used.sum(1)[ids] + start_used.sum(1) + end_used.sum(1) + tail_used.sum(1)[ids] + 2).astype(np.uint64)
    size_bytes, size_used = _varint_rows(sizes)
    col = np.full((n, 1), 0, np.uint8)
    rows = np.concatenate(
        [col + 0x0A, size_bytes, heads[ids], col + 0x10, start_bytes, col + 0x18, end_bytes, tails[ids]], axis=1
    )
    used = np.concatenate([one, size_used, head_used[ids], one, start_used, one, end_used, tail_used[ids]], axis=1)
    return rows[used].tobytes()


# NOTE: [Writing the profile file]
# A profile of 2,000 steps of a small MLP holds about 240,000 events. Each event's message is laid out
# as a row of bytes (field keys, the varint of its size, its name's field, the varints of its times,
# its depth / thread / type fields) with a mask of the bytes it uses; the rows of a thread are masked
# into one string. A name's fields are encoded once, the times' varints by numpy. Concatenating the
# messages one by one (`bytes +=`) had made writing quadratic: 400 steps took 6 s, 2,000 never ended.


def parse_profile(data: bytes):
    """A profile file as ``(start_ns, end_ns, [(name, start_ns, end_ns, device_id, sub_device_id, type)])``."""
    top = _parse(data)
    events = []
    for raw in top.get(1, []):
        e = _parse(raw)
        events.append(
            (
                e[1][0].decode(),
                e.get(2, [0])[0],
                e.get(3, [0])[0],
                _signed(e.get(5, [0])[0]),
                _signed(e.get(6, [0])[0]),
                e.get(8, [0])[0],
            )
        )
    return top.get(2, [0])[0], top.get(3, [0])[0], events
