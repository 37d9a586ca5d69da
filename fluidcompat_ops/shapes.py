"""Pure helpers shared by shape functions and kernels (no torch)."""

from __future__ import annotations

import math
from typing import List, Optional, Sequence, Tuple

Shape = Tuple[int, ...]


def first(ins, slot: str):
    """The single variable (or tensor) in ``slot``, or None when the slot is empty."""
    vals = ins.get(slot)
    return vals[0] if vals else None


def out(slot: str, shape, dtype) -> dict:
    return {slot: [(tuple(shape), dtype)]}


def same_as(slot_in: str = "X", slot_out: str = "Out", *more_outs: str):
    """Shape function: the output (and each of ``more_outs``) has the input's shape and dtype."""

    def infer(ins, attrs):
        x = first(ins, slot_in)
        return {s: [(tuple(x.shape), x.dtype)] for s in (slot_out,) + more_outs}

    return infer


def norm_axis(axis: int, rank: int, what: str = "axis") -> int:
    if not -rank <= axis < max(rank, 1):
        raise ValueError(f"{what} must be in [{-rank}, {rank}). Received: {what}={axis}, rank={rank}")
    return axis + rank if axis < 0 else axis


def dims_agree(a: Sequence[int], b: Sequence[int]) -> bool:
    """Shapes that agree where both are known (a -1 dimension matches any, as fluid's build-time check)."""
    return len(a) == len(b) and all(x == y or x < 0 or y < 0 for x, y in zip(a, b))


def prod(dims: Sequence[int]) -> int:
    p = 1
    for d in dims:
        p *= d
    return p


def prod_or_unknown(dims: Sequence[int]) -> int:
    return -1 if any(d < 0 for d in dims) else prod(dims)


def merge_dim(a: int, b: int, what: str) -> int:
    """Broadcast two dims: equal, one of them 1, or unknown (-1)."""
    if a == b:
        return a
    if a == 1:
        return b
    if b == 1:
        return a
    if a < 0:
        return b if b > 1 else a
    if b < 0:
        return a
    raise ValueError(what)


def trim_trailing_ones(shape: Sequence[int]) -> List[int]:
    s = list(shape)
    while len(s) > 1 and s[-1] == 1:
        s.pop()
    return s


def aligned_y_shape(x_shape: Sequence[int], y_shape: Sequence[int], axis: int) -> Optional[List[int]]:
    """Fluid's elementwise broadcast: Y is laid over X starting at ``axis`` (-1: at the end).

    Returns the shape Y must be viewed as so numpy-style broadcasting gives fluid's result, or
    None when plain right-aligned broadcasting already does.
    """
    xr, yr = len(x_shape), len(y_shape)
    if yr >= xr or axis == -1 or axis == xr - yr:
        return None
    y = trim_trailing_ones(y_shape)
    if axis + len(y) > xr:
        y = list(y_shape)
    if axis < 0 or axis + len(y) > xr:
        raise ValueError(f"axis {axis} does not fit Y of rank {len(y)} into X of rank {xr}")
    return [1] * axis + list(y) + [1] * (xr - axis - len(y))


def broadcast_shapes(x_shape: Sequence[int], y_shape: Sequence[int], axis: int, op: str) -> Shape:
    swapped = len(y_shape) > len(x_shape)
    big, small = (y_shape, x_shape) if swapped else (x_shape, y_shape)
    aligned = aligned_y_shape(big, small, axis)
    small = aligned if aligned is not None else [1] * (len(big) - len(small)) + list(small)
    msg = (
        f"the shapes of X and Y do not broadcast (axis={axis}). "
        f"Received: X.shape={tuple(x_shape)}, Y.shape={tuple(y_shape)}"
    )
    return tuple(merge_dim(a, b, msg) for a, b in zip(big, small))


def reduce_shape(shape: Sequence[int], dims: Sequence[int], keep_dim: bool, reduce_all: bool) -> Shape:
    rank = len(shape)
    axes = set(range(rank)) if reduce_all else {norm_axis(d, rank, "dim") for d in dims}
    if keep_dim:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    kept = tuple(d for i, d in enumerate(shape) if i not in axes)
    return kept if kept else (1,)


def c_div(a: int, b: int) -> int:
    """``a / b`` for ints as C++ divides them (towards zero; fluid's shape arithmetic)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def conv_out(size: int, k: int, pad_a: int, pad_b: int, stride: int, dilation: int = 1) -> int:
    if size < 0:
        return -1
    return c_div(size + pad_a + pad_b - (dilation * (k - 1) + 1), stride) + 1


def checked_conv_out(size: int, k: int, pad_a: int, pad_b: int, stride: int, dilation: int = 1) -> int:
    """``conv_out``, refused with fluid 1.8's text when it is not positive (the filter does not fit)."""
    o = conv_out(size, k, pad_a, pad_b, stride, dilation)
    if size >= 0 and o <= 0:
        raise ValueError(
            f"The output's size is expected to be greater than 0. But recieved: output's size is {o}. The "
            "output's size is computed by ((input_size + padding_1 + padding_2 - (dilation * (filter_size - 1) "
            f"+ 1)) / stride + 1), where input_size is {size}, padding is ({pad_a}, {pad_b}), filter_size is {k}, "
            f"dilation is {dilation}, stride is {stride}."
        )
    return o


def expand_paddings(paddings: Sequence[int], n: int) -> List[int]:
    """Fluid paddings: n values (symmetric) or 2n values (before, after per dim)."""
    p = list(paddings)
    if len(p) == n:
        return [v for v in p for _ in range(2)]
    if len(p) == 2 * n:
        return p
    raise ValueError(f"paddings must have {n} or {2 * n} values. Received: paddings={p}")


def require_attrs(attrs, *names: str) -> None:
    """fluid's error for an attribute its op maker declared without a default and the op lacks."""
    for name in names:
        if name not in attrs:
            raise ValueError(f"Attribute '{name}' is required!")


def _x(ins):
    return ins["X"][0]


class _Dims:
    """A variable's shape and dtype, as a shape function reads them, in another layout."""

    def __init__(self, shape, dtype):
        self.shape, self.dtype = shape, dtype


def _channels_first(kernel, infer, slot, outs, attr, last):
    """The shape function and kernel (OpDef's order) of an op whose ``attr`` says ``last`` (channels-last
    input: NHWC, NDHWC) from its channels-first ones: ``slot``'s input with its last dim moved to 1, the outputs in
    ``outs`` with their dim 1 moved last (torch's convolutions and pools want channels first)."""

    lasts = (last,) if isinstance(last, str) else tuple(last)

    def run(ins, a):
        if a[attr] not in lasts:
            return kernel(ins, a)
        res = kernel(dict(ins, **{slot: [ins[slot][0].movedim(-1, 1)]}), a)
        return {k: [v.movedim(1, -1) for v in vs] if k in outs else vs for k, vs in res.items()}

    def shape(ins, a):
        if a[attr] not in lasts:
            return infer(ins, a)
        x = first(ins, slot)
        dims = list(x.shape)
        res = infer(dict(ins, **{slot: [_Dims([dims[0], dims[-1]] + dims[1:-1], x.dtype)]}), a)
        return {k: [((s[0], *s[2:], s[1]), dt) for s, dt in vs] if k in outs else vs for k, vs in res.items()}

    return shape, run


def _round_half_away(v: float) -> int:
    """C's round(): halves away from zero (Python's round() goes to even)."""
    return int(math.floor(abs(v) + 0.5)) * (1 if v >= 0 else -1)
