"""Neural-network ops: embeddings, convolutions, pooling, normalisation, dropout."""

from __future__ import annotations

from fluidcompat.dtypes import VarType
from fluidcompat_ops.conv import _from_nchw, _hw, _pads, _to_nchw, _with_hw
from fluidcompat_ops.grad import SelectedRows
from fluidcompat_ops.registry import GradDef, OpDef, register
from fluidcompat_ops.shapes import c_div, first, out, prod

torch = None  # NOTE: [Lazy torch] in registry.py
F = None


# -- embeddings ----------------------------------------------------------------------------------
def _lookup_infer(v2):
    def infer(ins, attrs):
        ids, w = first(ins, "Ids"), first(ins, "W")
        if ids.dtype != VarType.INT64 and ids.dtype != VarType.INT32:
            raise TypeError(f"Ids must be int64 or int32. Received: Ids.dtype={ids.dtype}")
        if len(w.shape) != 2:
            raise ValueError(f"W must be 2-D. Received: W.shape={w.shape}")
        if v2:
            shape = tuple(ids.shape) + (w.shape[1],)
        else:
            if ids.shape[-1] != 1:
                raise ValueError(  # fluid's text
                    f"ShapeError: The last dimensions of the 'Ids' tensor must be 1. But received Ids's last "
                    f"dimensions = {ids.shape[-1]}, Ids's shape = {list(ids.shape)}."
                )
            shape = tuple(ids.shape[:-1]) + (w.shape[1],)
        return out("Out", shape, w.dtype)

    return infer


def check_lookup_ids(ids, n: int) -> None:
    """Every id of an embedding lookup is a row of its ``n``-row table (fluid 1.8's message)."""
    if ids.numel():
        lo, hi = torch.stack(torch.aminmax(ids)).tolist()  # one read (on a GPU, one wait) for both
        if lo < 0 or hi >= n:
            raise ValueError(
                f"Variable value (input) of OP(fluid.layers.embedding) expected >= 0 and < {n}, "
                f"but got {lo if lo < 0 else hi}. Please check input value."
            )


def _lookup_kernel(v2):
    def kernel(ins, attrs):
        ids, w = ins["Ids"][0], ins["W"][0]
        if not v2:
            ids = ids.squeeze(-1)
        check_lookup_ids(ids, w.shape[0])
        r = F.embedding(ids, w)
        p = attrs["padding_idx"]
        if p != -1:
            r = r.masked_fill((ids == p).unsqueeze(-1), 0)
        return {"Out": [r]}

    return kernel


_LOOKUP_ATTRS = {
    "is_sparse": False,
    "is_distributed": False,
    "padding_idx": -1,
    "remote_prefetch": False,
    "height_sections": [],
    "epmap": [],
    "table_names": [],
    "trainer_id": 0,
}
register(
    OpDef(
        "lookup_table",
        ("W", "Ids"),
        ("Out",),
        dict(_LOOKUP_ATTRS, grad_inplace=False),
        _lookup_infer(False),
        _lookup_kernel(False),
        grad=GradDef(("Ids", "W"), in_grads=("W",), kernel=lambda ins, a: _lookup_grad(ins, a, False)),
    )
)
register(
    OpDef(
        "lookup_table_v2",
        ("W", "Ids"),
        ("Out",),
        _LOOKUP_ATTRS,
        _lookup_infer(True),
        _lookup_kernel(True),
        grad=GradDef(("Ids", "W"), in_grads=("W",), kernel=lambda ins, a: _lookup_grad(ins, a, True)),
    )
)


def _lookup_grad(ins, attrs, v2):
    """W's gradient: SelectedRows (touched rows only) when is_sparse, else a dense table."""
    ids, w, g = ins["Ids"][0], ins["W"][0], ins["Out@GRAD"][0]
    rows = ids.reshape(-1).long()
    values = g.reshape(rows.shape[0], w.shape[1])
    p = attrs["padding_idx"]
    if p != -1:
        values = values.masked_fill((rows == p).unsqueeze(-1), 0)
    if attrs["is_sparse"]:
        return {"W@GRAD": [SelectedRows(rows, values, w.shape[0])]}
    return {"W@GRAD": [torch.zeros_like(w).index_add_(0, rows, values)]}


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


# -- dropout ------------------------------------------------------------------------------------------------
def _dropout_infer(ins, attrs):
    x = first(ins, "X")
    p = attrs["dropout_prob"]
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout_prob must be in [0, 1]. Received: dropout_prob={p}")
    return {"Out": [(x.shape, x.dtype)], "Mask": [(x.shape, VarType.UINT8)]}


def _dropout_kernel(ins, attrs):
    x = ins["X"][0]
    p = attrs["dropout_prob"]
    upscale = attrs["dropout_implementation"] == "upscale_in_train"
    if attrs["is_test"]:
        return {"Out": [x.clone() if upscale else x * (1.0 - p)]}
    seed_t = first(ins, "Seed")
    if seed_t is not None or attrs["fix_seed"]:  # the same mask as fluid's (NOTE: [Seeded draws])
        from fluidcompat_ops.fluid_random import dropout_keep

        seed = int(seed_t.reshape(-1)[0]) if seed_t is not None else attrs["seed"]
        keep = dropout_keep(seed, x.shape, p, x.device)
    else:
        keep = torch.empty(x.shape, device=x.device).uniform_(0.0, 1.0) >= p
    mask = keep.to(torch.uint8)
    y = x * keep.to(x.dtype)
    if upscale:
        y = y / (1.0 - p) if p < 1.0 else torch.zeros_like(x)
    return {"Out": [y], "Mask": [mask]}


register(
    OpDef(
        "dropout",
        ("X", "Seed"),
        ("Out", "Mask"),
        {
            "dropout_prob": 0.5,
            "is_test": False,
            "fix_seed": False,
            "seed": 0,
            "dropout_implementation": "downgrade_in_infer",
        },
        _dropout_infer,
        _dropout_kernel,
        host_inputs=frozenset({"Seed"}),
        # the grad op's Mask: an is_test dropout makes none (its gradient is the scaling alone; fluid
        # 1.8.5 refused it, "GradOp is only callable when is_test is false")
        optional_inputs=frozenset({"Mask"}),
        grad=GradDef(("Mask",), in_grads=("X",), kernel=lambda ins, a: _dropout_grad(ins, a)),
    )
)


def _dropout_grad(ins, attrs):
    g = ins["Out@GRAD"][0]
    p = attrs["dropout_prob"]
    upscale = attrs["dropout_implementation"] == "upscale_in_train"
    if attrs["is_test"]:
        return {"X@GRAD": [g if upscale else g * (1.0 - p)]}
    dx = g * ins["Mask"][0].to(g.dtype)
    if upscale:
        dx = dx / (1.0 - p) if p < 1.0 else torch.zeros_like(g)
    return {"X@GRAD": [dx]}
