"""The numeric matrices of a MATLAB level-5 ``.mat`` file (what ``scipy.io.loadmat`` gave
fluid 1.8's flowers reader), read without scipy: plain and zlib-compressed variables, either byte
order, every numeric class. Cells, structs, strings, sparse and complex matrices are refused by name."""

from __future__ import annotations

import struct
import zlib
from typing import Dict

import numpy as np

# data types of a data element (miINT8 ... miUINT64) and classes of a matrix (mxDOUBLE ... mxUINT64)
_MI_TYPES = {1: "i1", 2: "u1", 3: "i2", 4: "u2", 5: "i4", 6: "u4", 7: "f4", 9: "f8", 12: "i8", 13: "u8"}
_MI_MATRIX, _MI_COMPRESSED = 14, 15
_MX_CLASSES = {6: "f8", 7: "f4", 8: "i1", 9: "u1", 10: "i2", 11: "u2", 12: "i4", 13: "u4", 14: "i8", 15: "u8"}
_MX_NAMES = {1: "cell", 2: "struct", 3: "object", 4: "char", 5: "sparse", 16: "function handle"}


class _Elements:
    """Data elements of a byte string: (type, payload) pairs, small and normal forms."""

    def __init__(self, data: bytes, endian: str, where: str):
        self.data, self.endian, self.where, self.pos = data, endian, where, 0

    def next(self):
        data, pos = self.data, self.pos
        if pos + 8 > len(data):
            raise ValueError(f"{self.where}: the file ends inside a data element's tag (byte {pos})")
        kind, size = struct.unpack_from(self.endian + "II", data, pos)
        if kind >> 16:  # small element: the size in the upper half, the data in the tag's second word
            self.pos = pos + 8
            return kind & 0xFFFF, data[pos + 4 : pos + 4 + (kind >> 16)]
        if pos + 8 + size > len(data):
            raise ValueError(f"{self.where}: a data element of {size} bytes runs past the end of the file")
        payload = data[pos + 8 : pos + 8 + size]
        # elements are padded to 8 bytes; a compressed one is not
        self.pos = pos + 8 + (size if kind == _MI_COMPRESSED else (size + 7) // 8 * 8)
        return kind, payload

    def more(self) -> bool:
        return self.pos < len(self.data)


def _numbers(kind, payload, endian, where):
    if kind not in _MI_TYPES:
        raise ValueError(f"{where}: a data element of unknown type {kind}")
    return np.frombuffer(payload, dtype=np.dtype(_MI_TYPES[kind]).newbyteorder(endian))


def _matrix(payload: bytes, endian: str, where: str):
    parts = _Elements(payload, endian, where)
    kind, flags = parts.next()
    flags = _numbers(kind, flags, endian, where)
    mx_class, complex_flag = int(flags[0]) & 0xFF, int(flags[0]) & 0x800
    _, dims = parts.next()
    dims = tuple(int(d) for d in _numbers(5, dims, endian, where))
    _, name = parts.next()
    name = name.decode("latin-1")
    if mx_class not in _MX_CLASSES:
        what = _MX_NAMES.get(mx_class, f"class {mx_class}")
        raise ValueError(f"{where}: variable {name!r} is a {what} matrix; only numeric matrices are read")
    if complex_flag:
        raise ValueError(f"{where}: variable {name!r} is complex; only real matrices are read")
    kind, real = parts.next()
    # the stored type, as scipy.io.loadmat gives it (a double matrix MATLAB stored as uint16 reads
    # as uint16), in this machine's byte order
    values = _numbers(kind, real, endian, where)
    values = values.astype(values.dtype.newbyteorder("="))
    if values.size != int(np.prod(dims)):
        raise ValueError(f"{where}: variable {name!r} has {values.size} values for dimensions {dims}")
    return name, values.reshape(dims, order="F")


def loadmat(path: str) -> Dict[str, np.ndarray]:
    """The variables of level-5 MAT file ``path``: name -> ndarray of the matrix's dimensions (at
    least 2) and stored type, as ``scipy.io.loadmat`` returns them."""
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 128 or data[126:128] not in (b"IM", b"MI"):
        raise ValueError(f"{path}: not a MATLAB level-5 .mat file (no byte-order mark in its 128-byte header)")
    endian = "<" if data[126:128] == b"IM" else ">"
    out = {}
    elements = _Elements(data[128:], endian, path)
    while elements.more():
        kind, payload = elements.next()
        if kind == _MI_COMPRESSED:
            kind, payload = _Elements(zlib.decompress(payload), endian, path).next()
        if kind != _MI_MATRIX:
            raise ValueError(f"{path}: a top-level data element of type {kind}, not a matrix")
        name, value = _matrix(payload, endian, path)
        out[name] = value
    return out
