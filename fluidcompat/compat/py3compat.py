"""``paddle.compat``: fluid 1.8's text / bytes conversions and Python-2-style rounding, which fluid-era
readers and scripts call (``cpt.to_text``)."""

from __future__ import annotations

import math

__all__ = ["long_type", "to_text", "to_bytes", "round", "floor_division", "get_exception_message"]

int_type = int
long_type = int


def _text(obj, encoding):
    if isinstance(obj, bytes):
        return obj.decode(encoding)
    return obj


def _bytes(obj, encoding):
    assert encoding is not None
    if isinstance(obj, str):
        return obj.encode(encoding)
    if isinstance(obj, bytes):
        return obj
    raise TypeError(f"paddle.compat.to_bytes: expected str or bytes, received {type(obj).__name__} ({obj!r})")


def _convert(obj, one, encoding, inplace, maps):
    """``one`` applied to ``obj``, or to each item of a list or set (and each key and value of a dict,
    where ``maps``); ``inplace`` changes the container itself, as fluid did."""
    if obj is None:
        return None
    if isinstance(obj, list):
        if not inplace:
            return [one(x, encoding) for x in obj]
        obj[:] = [one(x, encoding) for x in obj]
        return obj
    if isinstance(obj, set):
        converted = {one(x, encoding) for x in obj}
        if not inplace:
            return converted
        obj.clear()
        obj.update(converted)
        return obj
    if maps and isinstance(obj, dict):
        converted = {one(k, encoding): one(v, encoding) for k, v in obj.items()}
        if not inplace:
            return converted
        obj.update(converted)  # fluid 1.8 kept the old (bytes) keys too
        return obj
    return one(obj, encoding)


def to_text(obj, encoding="utf-8", inplace=False):
    """``obj`` with bytes decoded to str (in a list, set or dict: each item, key and value)."""
    return _convert(obj, _text, encoding, inplace, maps=True)


def to_bytes(obj, encoding="utf-8", inplace=False):
    """``obj`` with str encoded to bytes (in a list or set: each item)."""
    return _convert(obj, _bytes, encoding, inplace, maps=False)


def round(x, d=0):
    """Rounding half away from zero, as Python 2 rounded: ``round(2.5) == 3.0``."""
    if x == 0.0:
        return math.copysign(0.0, x)
    p = 10**d
    shifted = x * p + math.copysign(0.5, x)
    return float(math.floor(shifted) if x > 0.0 else math.ceil(shifted)) / p


def floor_division(x, y):
    return x // y


def get_exception_message(exc):
    assert exc is not None
    return str(exc)
