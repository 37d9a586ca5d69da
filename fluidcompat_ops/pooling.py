"""Pooling ops beside nn.py's pool2d: ``unpool`` (max unpooling by the indices max pooling gave) and
``spp`` (spatial pyramid pooling: pool2d at 1, 2, 4, ... bins a side, flattened and concatenated)."""

from __future__ import annotations

from fluidcompat_ops.registry import GradDef, OpDef, register
from fluidcompat_ops.shapes import first, require_attrs

torch = None  # NOTE: [Lazy torch] in registry.py
F = None


# -- unpool ----------------------------------------------------------------------------------------------
def _unpool_sizes(hw, attrs):
    k, s, p = attrs["ksize"], attrs["strides"], attrs["paddings"]
    return [(size - 1) * s[i] - 2 * p[i] + k[i] if size >= 0 else -1 for i, size in enumerate(hw)]


def _unpool_infer(ins, attrs):
    require_attrs(attrs, "ksize", "unpooling_type")
    x, idx = first(ins, "X"), first(ins, "Indices")
    if len(x.shape) != 4:
        raise ValueError(f"Input(X) of unpool must be 4-D (NCHW). Received: X.shape={tuple(x.shape)}")
    if tuple(idx.shape) != tuple(x.shape):
        raise ValueError(f"Indices must have X's shape. Received: X.shape={x.shape}, Indices.shape={idx.shape}")
    if attrs["unpooling_type"] != "max":
        raise ValueError(f"unpooling_type must be 'max'. Received: {attrs['unpooling_type']!r}")
    oh, ow = _unpool_sizes(x.shape[2:], attrs)
    return {"Out": [((x.shape[0], x.shape[1], oh, ow), x.dtype)]}


def _unpool(ins, attrs):
    """Out is zeros but at each of Indices (a position in its channel's [out_h, out_w] plane): X there."""
    x, idx = ins["X"][0], ins["Indices"][0]
    n, c = x.shape[:2]
    oh, ow = _unpool_sizes(list(x.shape[2:]), attrs)
    flat = idx.reshape(n, c, -1).long()
    if flat.numel() and (int(flat.min()) < 0 or int(flat.max()) >= oh * ow):
        raise ValueError(f"unpool: an index of Indices is outside the output's {oh} x {ow} plane")
    out = torch.zeros(n, c, oh * ow, dtype=x.dtype, device=x.device)
    return {"Out": [out.scatter(2, flat, x.reshape(n, c, -1)).reshape(n, c, oh, ow)]}


register(
    OpDef(
        "unpool",
        ("X", "Indices"),
        ("Out",),
        {"strides": [1, 1], "paddings": [0, 0]},  # ksize, unpooling_type: required
        _unpool_infer,
        _unpool,
        grad=GradDef(("X", "Indices", "Out"), in_grads=("X",)),
    )
)


# -- spp -------------------------------------------------------------------------------------------------
def _spp_infer(ins, attrs):
    require_attrs(attrs, "pyramid_height", "pooling_type")
    x = first(ins, "X")
    if len(x.shape) != 4:
        raise ValueError(f"Input(X) of spp must be 4-D (NCHW). Received: X.shape={tuple(x.shape)}")
    bins = sum(4**level for level in range(attrs["pyramid_height"]))
    return {"Out": [((x.shape[0], x.shape[1] * bins if x.shape[1] >= 0 else -1), x.dtype)]}


_POOL2D = None


def _spp(ins, attrs):
    """Level l pools X into 2^l x 2^l bins: window ceil(size / bins), stride the window, padding
    (window * bins - size + 1) / 2; max, or the average over the input elements of a window."""
    global _POOL2D
    if _POOL2D is None:
        from fluidcompat_ops.registry import lookup

        _POOL2D = lookup("pool2d")
    x = ins["X"][0]
    n, _, h, w = x.shape
    levels = []
    for level in range(attrs["pyramid_height"]):
        bins = 2**level
        k = [-(-h // bins), -(-w // bins)]
        pool = dict(
            _POOL2D.attrs,
            _device=attrs.get("_device"),
            pooling_type=attrs["pooling_type"],
            ksize=k,
            strides=k,
            paddings=[(k[0] * bins - h + 1) // 2, (k[1] * bins - w + 1) // 2],
            exclusive=True,
        )
        levels.append(_POOL2D.kernel({"X": [x]}, pool)["Out"][0].reshape(n, -1))
    y = torch.cat(levels, dim=1)
    if x.dtype == torch.float64 and attrs["pooling_type"] == "max":  # a window wholly in the padding:
        lowest = torch.finfo(torch.float64).min  # fluid's max pooling's initial value, -FLT_MAX
        y = torch.where(y == lowest, torch.full_like(y, -torch.finfo(torch.float32).max), y)
    return {"Out": [y]}


register(
    OpDef(
        "spp",
        ("X",),
        ("Out",),
        {},  # pyramid_height, pooling_type: required
        _spp_infer,
        _spp,
        grad=GradDef(("X", "Out"), in_grads=("X",)),
    )
)
