"""Pooling ops: pool2d, pool3d (max and average, global and adaptive), max_pool2d_with_index and
max_pool3d_with_index (each maximum's flat index in its channel), ``unpool`` (max unpooling by the
indices max pooling gave) and ``spp`` (spatial pyramid pooling: pool2d at 1, 2, 4, ... bins a side,
flattened and concatenated)."""

from __future__ import annotations

from fluidcompat_ops.conv import _from_nchw, _hw, _pads, _to_nchw, _with_hw
from fluidcompat_ops.registry import GradDef, OpDef, _op, register
from fluidcompat_ops.shapes import _channels_first, _x, c_div, first, out, prod, require_attrs

torch = None  # NOTE: [Lazy torch] in registry.py
F = None


# -- pool2d ----------------------------------------------------------------------------------------------
def _pool_geometry(attrs, hw):
    """Window sizes, strides and paddings of a pool op (2-D or 3-D)."""
    if attrs["global_pooling"]:
        return list(hw), [1] * len(hw), [0] * (2 * len(hw))
    k, s = list(attrs["ksize"]), list(attrs["strides"])
    return k, s, _pads(attrs, hw, k, s)


def _cover_pad(sizes, k, s, p, outs):
    """F.pad's list (last dim first) so that each of the ``outs`` windows lies inside: the leading
    padding, and after the input as much as the last window reaches (fluid clips the windows at the
    padded border, where torch's ceil_mode drops the last one)."""
    pad = []
    for i in reversed(range(len(sizes))):
        pad += [p[2 * i], max((outs[i] - 1) * s[i] + k[i] - sizes[i] - p[2 * i], 0)]
    return pad


def _max_pad(x, pad):
    """Padding for max pooling: a window with no input element gets fluid's initial value, the lowest
    finite number."""
    return F.pad(x, pad, value=torch.finfo(x.dtype).min) if any(pad) else x


def _avg_pooled(x, pad, k, s, exclusive, avg_pool):
    """Average pooling as fluid: over the input elements of each window (exclusive), or over the full
    window size."""
    sums = avg_pool(F.pad(x, pad) if any(pad) else x, k, s, divisor_override=1)
    if not exclusive:
        return sums / float(prod(k))
    ones = torch.ones_like(x[:1, :1])
    return sums / avg_pool(F.pad(ones, pad) if any(pad) else ones, k, s, divisor_override=1)


def _pool_out(size, k, s, pa, pb, ceil):
    """A pooled size as fluid 1.8 computed it (C++ division), refused with its text when not positive."""
    if size < 0:
        return -1
    o = c_div(size - k + pa + pb + (s - 1 if ceil else 0), s) + 1
    if o <= 0:
        raise ValueError(
            f"ShapeError: the output size must be greater than 0. But received: output_size = {o} due to the "
            f"settings of input_size({size}), padding({pa},{pb}), k_size({k}) and stride({s}). Please check again!"
        )
    return o


def _pool_infer(ins, attrs):
    x = first(ins, "X")
    fmt = attrs["data_format"]
    if len(x.shape) != 4:
        raise ValueError(f"pool2d needs a 4-D input. Received: X.shape={x.shape}")
    hw = _hw(x.shape, fmt)
    c = x.shape[3] if fmt == "NHWC" else x.shape[1]
    if attrs["adaptive"]:
        oh, ow = attrs["ksize"]
    else:
        k, s, p = _pool_geometry(attrs, hw)
        oh, ow = (_pool_out(hw[i], k[i], s[i], p[2 * i], p[2 * i + 1], attrs["ceil_mode"]) for i in range(2))
    return out("Out", _with_hw(x.shape, fmt, c, oh, ow), x.dtype)


def _pool_kernel(ins, attrs):
    fmt = attrs["data_format"]
    x = _to_nchw(ins["X"][0], fmt)
    is_max = attrs["pooling_type"] == "max"
    if attrs["adaptive"]:
        fn = F.adaptive_max_pool2d if is_max else F.adaptive_avg_pool2d
        return {"Out": [_from_nchw(fn(x, list(attrs["ksize"])), fmt)]}
    k, s, p = _pool_geometry(attrs, list(x.shape[2:]))
    oh = _pool_out(x.shape[2], k[0], s[0], p[0], p[1], attrs["ceil_mode"])
    ow = _pool_out(x.shape[3], k[1], s[1], p[2], p[3], attrs["ceil_mode"])
    pad = _cover_pad(x.shape[2:], k, s, p, (oh, ow))
    if is_max:
        xp = _max_pad(x, pad)
        y, where = F.max_pool2d(xp, k, s, return_indices=True)  # as fast as without (torch 2.x, CPU)
        if y.shape[2] == oh and y.shape[3] == ow:
            y = _from_nchw(y, fmt)
            # pool2d_grad reads the argmax positions from here instead of pooling again
            y._fluidcompat_argmax = (where, tuple(xp.shape), pad, k, s)
            return {"Out": [y]}
    else:
        y = _avg_pooled(x, pad, k, s, attrs["exclusive"], F.avg_pool2d)
    return {"Out": [_from_nchw(y[:, :, :oh, :ow], fmt)]}


_pool_vjp = None


def _pool_grad_kernel(ins, attrs):
    """Max pooling: the gradient goes to the argmax positions the forward kernel kept on Out (the first
    maximum of each window, as fluid); otherwise (average, adaptive, Out from elsewhere) a VJP."""
    global _pool_vjp
    out = ins["Out"][0]
    kept = getattr(out, "_fluidcompat_argmax", None)
    if kept is not None and attrs["pooling_type"] == "max" and not attrs["adaptive"]:
        where, xshape, pad, k, s = kept
        fmt = attrs["data_format"]
        x = _to_nchw(ins["X"][0], fmt)
        g = _to_nchw(ins["Out@GRAD"][0], fmt).to(x.dtype).reshape(where.shape)
        xp = torch.empty(xshape, dtype=x.dtype, device=x.device)  # only its shape is read
        dx = torch.ops.aten.max_pool2d_with_indices_backward(g, xp, k, s, [0, 0], [1, 1], False, where)
        if any(pad):
            dx = dx[:, :, pad[2] : pad[2] + x.shape[2], pad[0] : pad[0] + x.shape[3]]
        return {"X@GRAD": [_from_nchw(dx, fmt)]}
    if _pool_vjp is None:
        from fluidcompat_ops.grad import vjp_kernel
        from fluidcompat_ops.registry import lookup

        _pool_vjp = vjp_kernel(lookup("pool2d"), ("Out",))
    return _pool_vjp(ins, attrs)


register(
    OpDef(
        "pool2d",
        ("X",),
        ("Out",),
        {
            "pooling_type": "max",
            "ksize": [1, 1],
            "global_pooling": False,
            "strides": [1, 1],
            "paddings": [0, 0],
            "exclusive": True,
            "adaptive": False,
            "ceil_mode": False,
            "padding_algorithm": "EXPLICIT",
            "data_format": "NCHW",
            "use_cudnn": True,
            "use_mkldnn": False,
            "is_test": False,
        },
        _pool_infer,
        _pool_kernel,
        grad=GradDef(("X", "Out"), kernel=_pool_grad_kernel),
    )
)


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


# -- pool3d ----------------------------------------------------------------------------------------
def _pool3d(ins, a):
    x = _x(ins)
    if a["adaptive"]:
        fn = F.adaptive_max_pool3d if a["pooling_type"] == "max" else F.adaptive_avg_pool3d
        return {"Out": [fn(x, list(a["ksize"]))]}
    ks, st, pd = _pool_geometry(a, list(x.shape[2:]))
    outs = [_pool_out(x.shape[2 + i], ks[i], st[i], pd[2 * i], pd[2 * i + 1], a["ceil_mode"]) for i in range(3)]
    pad = _cover_pad(x.shape[2:], ks, st, pd, outs)
    if a["pooling_type"] == "max":
        y = F.max_pool3d(_max_pad(x, pad), ks, st)
    else:
        y = _avg_pooled(x, pad, ks, st, a["exclusive"], F.avg_pool3d)
    return {"Out": [y[:, :, : outs[0], : outs[1], : outs[2]]]}


def _pool_nd_infer(nd):
    def infer(ins, a):

        x = first(ins, "X")
        if a["global_pooling"]:
            dims = [1] * nd
        elif a["adaptive"]:
            dims = list(a["ksize"])
        else:
            ks, st, pd = _pool_geometry(a, list(x.shape[2:]))
            ceil = a["ceil_mode"]
            dims = [_pool_out(x.shape[2 + i], ks[i], st[i], pd[2 * i], pd[2 * i + 1], ceil) for i in range(nd)]
        return out("Out", list(x.shape[:2]) + dims, x.dtype)

    return infer


_POOL = {
    "pooling_type": "max",
    "ksize": [],
    "global_pooling": False,
    "strides": [1, 1, 1],
    "paddings": [0, 0, 0],
    "exclusive": True,
    "adaptive": False,
    "ceil_mode": False,
    "data_format": "NCDHW",
    "use_cudnn": True,
    "padding_algorithm": "EXPLICIT",
}
_op(
    "pool3d",
    ("X",),
    ("Out",),
    dict(_POOL),
    *_channels_first(_pool3d, _pool_nd_infer(3), "X", ("Out",), "data_format", "NDHWC"),
)


# -- max_pool2d/3d_with_index: max pooling and each maximum's flat index in its channel -------------
def _pool_with_index(nd):
    def kernel(ins, a):
        x = _x(ins)
        if a["global_pooling"]:
            ks, st, pd = list(x.shape[2:]), [1] * nd, [0] * nd
        else:
            ks, st, pd = list(a["ksize"]), list(a["strides"]), list(a["paddings"])
        if a["adaptive"]:
            fn = F.adaptive_max_pool2d if nd == 2 else F.adaptive_max_pool3d
            y, idx = fn(x, ks, return_indices=True)
        else:
            fn = F.max_pool2d if nd == 2 else F.max_pool3d
            y, idx = fn(x, ks, st, pd, return_indices=True)
        return {"Out": [y], "Mask": [idx.to(torch.int32)]}

    return kernel


def _pool_with_index_infer(nd):
    base = _pool_nd_infer(nd)

    def infer(ins, a):
        (shape, dtype) = base(ins, dict(a, ceil_mode=False))["Out"][0]
        return {"Out": [(shape, dtype)], "Mask": [(shape, "int32")]}

    return infer


for _nd in (2, 3):
    register(
        OpDef(
            f"max_pool{_nd}d_with_index",
            ("X",),
            ("Out", "Mask"),
            {"ksize": [], "strides": [1] * _nd, "paddings": [0] * _nd, "global_pooling": False, "adaptive": False},
            _pool_with_index_infer(_nd),
            _pool_with_index(_nd),
            grad=GradDef(out_grads=("Out",)),
        )
    )
