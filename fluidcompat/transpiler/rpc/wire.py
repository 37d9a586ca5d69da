"""What a parameter-server message holds, as bytes: the JSON of its structure (arrays as references),
then the raw bytes of its numpy arrays. No pickle: a message can hold only strings, numbers, lists,
tuples and arrays of plain dtypes, and decoding a message checks every length against the bytes it
has (a malformed one is a ValueError naming what is wrong, never an allocation the sender chose)."""

from __future__ import annotations

import json
import struct

import numpy as np

MAX_NDIM = 32
_PLAIN_KINDS = "biufc"  # bool, int, uint, float, complex


class MalformedMessage(ValueError):
    """A message whose bytes do not decode."""


def _encode(obj) -> bytes:
    """``obj`` as bytes: the JSON of its structure (arrays as references), then the arrays' bytes."""
    arrays = []

    def walk(x):
        if isinstance(x, np.ndarray):
            if x.dtype.hasobject:
                raise TypeError("an array of Python objects cannot be sent")
            if x.dtype.kind not in _PLAIN_KINDS:
                raise TypeError(f"an array of dtype {x.dtype} cannot be sent")
            arrays.append(np.ascontiguousarray(x))
            return {"array": len(arrays) - 1, "dtype": x.dtype.str, "shape": list(x.shape)}
        if isinstance(x, tuple):
            return {"tuple": [walk(v) for v in x]}
        if isinstance(x, list):
            return [walk(v) for v in x]
        if x is None or isinstance(x, (str, int, float, bool)):
            return x
        raise TypeError(f"a {type(x).__name__} cannot be sent")

    head = json.dumps(walk(obj)).encode()
    return b"".join([struct.pack("!Q", len(head)), head] + [a.tobytes() for a in arrays])


def _decode(data: bytes):
    """The object ``_encode`` made ``data`` from; MalformedMessage when the bytes are not such a message."""
    if len(data) < 8:
        raise MalformedMessage(f"a message of {len(data)} bytes is shorter than its 8-byte header")
    n = struct.unpack("!Q", data[:8])[0]
    if n > len(data) - 8:
        raise MalformedMessage(f"the message announces a {n}-byte structure but holds {len(data) - 8} bytes")
    at = 8 + n
    try:
        head = json.loads(data[8:at].decode())
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        raise MalformedMessage(f"the message's structure is not JSON ({type(e).__name__})") from None
    view = memoryview(data)

    def array(x):
        nonlocal at
        if set(x) != {"array", "dtype", "shape"} or not isinstance(x["dtype"], str):
            raise MalformedMessage(f"an array reference has keys {sorted(x)}")
        try:
            dtype = np.dtype(x["dtype"])
        except (TypeError, ValueError):
            raise MalformedMessage(f"an array has an unknown dtype {x['dtype']!r}") from None
        if dtype.kind not in _PLAIN_KINDS:
            raise MalformedMessage(f"an array has dtype {dtype}, not a plain number type")
        shape = x["shape"]
        if (
            not isinstance(shape, list)
            or len(shape) > MAX_NDIM
            or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape)
        ):
            raise MalformedMessage(f"an array has shape {shape!r}")
        count = 1
        for d in shape:
            count *= d  # (a Python int: no overflow)
        size = count * dtype.itemsize
        if size > len(data) - at:
            raise MalformedMessage(f"an array of shape {shape} ({size} bytes) is longer than the message's rest")
        a = np.frombuffer(view[at : at + size], dtype).reshape(shape).copy()
        at += size
        return a

    def build(x):
        if isinstance(x, dict):
            if "array" in x:
                return array(x)
            if set(x) != {"tuple"} or not isinstance(x["tuple"], list):
                raise MalformedMessage(f"a message holds a mapping with keys {sorted(x)}")
            return tuple(build(v) for v in x["tuple"])
        if isinstance(x, list):
            return [build(v) for v in x]
        return x

    try:
        obj = build(head)
    except RecursionError:
        raise MalformedMessage("the message's structure is nested too deeply") from None
    if at != len(data):
        raise MalformedMessage(f"{len(data) - at} bytes follow the message's arrays")
    return obj


def _wire(t):
    """A tensor (or a SelectedRows: its rows, values and height) as it travels."""
    from fluidcompat_ops.grad import SelectedRows

    if isinstance(t, SelectedRows):
        return ("selected_rows", _wire(t.rows), _wire(t.values), int(t.height))
    return np.ascontiguousarray(t.detach().cpu().numpy())


def _unwire(value, device):
    import torch

    from fluidcompat_ops.grad import SelectedRows

    if isinstance(value, tuple) and value[:1] == ("selected_rows",):
        _, rows, values, height = value
        return SelectedRows(torch.from_numpy(rows).to(device), torch.from_numpy(values).to(device), height)
    return torch.from_numpy(value).to(device)
