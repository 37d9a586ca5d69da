"""Convolution ops: conv2d, depthwise_conv2d, conv2d_transpose, depthwise_conv2d_transpose, conv3d,
conv3d_transpose, deformable_conv (DCN v2: offsets and a modulation mask), deformable_conv_v1 (offsets
only) and row_conv (lookahead convolution over sequences); and the im2col ops unfold and im2sequence.

The padding helpers here (``_pads``, ``_conv_pads``, ``_dil``) are pooling's too. deformable_conv's
gradient is a per-op VJP (NOTE in registry.py GradDef): its sampling is differentiable in the map, the
offsets (through the interpolation weights) and the mask."""

from __future__ import annotations

import math

from fluidcompat_ops.registry import GradDef, OpDef, _op, register
from fluidcompat_ops.sequence import _padded, lod_of, offsets_of, with_lod
from fluidcompat_ops.shapes import _channels_first, _x, checked_conv_out, conv_out, expand_paddings, first, out, same_as

torch = None  # NOTE: [Lazy torch] in registry.py
F = None


# -- padding helpers shared by conv and pool ------------------------------------------------------
def _pads(attrs, in_hw, k_hw, strides, dilations=None):
    """Per-dim (before, after) paddings, [top, bottom, left, right] in 2-D, after fluid's
    padding_algorithm; for any number of spatial dims."""
    algo = attrs.get("padding_algorithm", "EXPLICIT")
    if algo == "VALID":
        return [0] * (2 * len(in_hw))
    if algo == "SAME":
        res = []
        for size, k, s, d in zip(in_hw, k_hw, strides, dilations or [1] * len(in_hw)):
            if size < 0:
                res += [0, 0]
                continue
            o = (size + s - 1) // s
            total = max((o - 1) * s + d * (k - 1) + 1 - size, 0)
            res += [total // 2, total - total // 2]
        return res
    return expand_paddings(attrs["paddings"], len(in_hw))


def _conv_pads(attrs, in_hw, k_hw, dilations):
    """A conv's paddings for its kernels: ``_pads``, with the end of a dim padded further where the
    filter reaches past it. fluid's C++ division gives a window there (input 2, filter 3, stride 2:
    one output), which it computes over zeros; torch refuses a filter larger than the input."""
    p = list(_pads(attrs, in_hw, k_hw, attrs["strides"], dilations))
    for i, size in enumerate(in_hw):
        n = conv_out(size, k_hw[i], p[2 * i], p[2 * i + 1], attrs["strides"][i], dilations[i])
        reach = (n - 1) * attrs["strides"][i] + dilations[i] * (k_hw[i] - 1) + 1
        p[2 * i + 1] += max(0, reach - (size + p[2 * i] + p[2 * i + 1]))
    return p


def _dil(attrs):
    """A conv's dilations: fluid 1.8.5 sets them to 1 under padding_algorithm 'SAME' (measured)."""
    return [1] * len(attrs["dilations"]) if attrs.get("padding_algorithm") == "SAME" else list(attrs["dilations"])


def _hw(shape, fmt):
    return (shape[1], shape[2]) if fmt == "NHWC" else (shape[2], shape[3])


def _to_nchw(x, fmt):
    return x.permute(0, 3, 1, 2) if fmt == "NHWC" else x


def _from_nchw(y, fmt):
    return y.permute(0, 2, 3, 1) if fmt == "NHWC" else y


def _with_hw(shape, fmt, c, h, w):
    return (shape[0], h, w, c) if fmt == "NHWC" else (shape[0], c, h, w)


# -- conv2d -------------------------------------------------------------------------------------------
def _conv_infer(ins, attrs):
    x, w = first(ins, "Input"), first(ins, "Filter")
    fmt = attrs["data_format"]
    if len(x.shape) != 4 or len(w.shape) != 4:
        raise ValueError(f"conv2d needs 4-D Input and Filter. Received: Input.shape={x.shape}, Filter.shape={w.shape}")
    cin = x.shape[3] if fmt == "NHWC" else x.shape[1]
    groups = attrs["groups"] or 1
    if cin >= 0 and cin != w.shape[1] * groups:
        raise ValueError(
            "the number of input channels must equal Filter.shape[1] * groups. "
            f"Received: Input.shape={x.shape}, Filter.shape={w.shape}, groups={groups}"
        )
    hw = _hw(x.shape, fmt)
    dil = _dil(attrs)
    p = _pads(attrs, hw, w.shape[2:], attrs["strides"], dil)
    oh, ow = (
        checked_conv_out(size, w.shape[2 + i], p[2 * i], p[2 * i + 1], attrs["strides"][i], dil[i])
        for i, size in enumerate(hw)
    )
    return out("Output", _with_hw(x.shape, fmt, w.shape[0], oh, ow), x.dtype)


def _conv_kernel(ins, attrs):
    fmt = attrs["data_format"]
    x, w = _to_nchw(ins["Input"][0], fmt), ins["Filter"][0]
    dil = _dil(attrs)
    p = _conv_pads(attrs, x.shape[2:], w.shape[2:], dil)
    if p[0] == p[1] and p[2] == p[3]:
        padding = (p[0], p[2])
    else:
        x = F.pad(x, [p[2], p[3], p[0], p[1]])
        padding = 0
    y = F.conv2d(x, w, None, attrs["strides"], padding, dil, attrs["groups"] or 1)
    return {"Output": [_from_nchw(y, fmt)]}


def _conv_grad_kernel(ins, attrs):
    """Input and Filter gradients straight from torch's convolution backward (no forward re-run)."""
    fmt, wanted = attrs["data_format"], attrs["_wanted"]
    x, w = _to_nchw(ins["Input"][0], fmt), ins["Filter"][0]
    g = _to_nchw(ins["Output@GRAD"][0], fmt).to(x.dtype)
    dil = _dil(attrs)
    p = _conv_pads(attrs, x.shape[2:], w.shape[2:], dil)
    symmetric = p[0] == p[1] and p[2] == p[3]
    xp = x if symmetric else F.pad(x, [p[2], p[3], p[0], p[1]])
    padding = [p[0], p[2]] if symmetric else [0, 0]
    mask = ["Input" in wanted, "Filter" in wanted, False]
    dx, dw, _ = torch.ops.aten.convolution_backward(
        g, xp, w, None, list(attrs["strides"]), padding, dil, False, [0, 0],
        attrs["groups"] or 1, mask,
    )  # fmt: skip
    result = {}
    if mask[0]:
        if not symmetric:
            dx = dx[:, :, p[0] : p[0] + x.shape[2], p[2] : p[2] + x.shape[3]]
        result["Input@GRAD"] = [_from_nchw(dx, fmt)]
    if mask[1]:
        result["Filter@GRAD"] = [dw]
    return result


_CONV_ATTRS = {
    "strides": [1, 1],
    "paddings": [0, 0],
    "padding_algorithm": "EXPLICIT",
    "groups": 1,
    "dilations": [1, 1],
    "data_format": "NCHW",
    "use_cudnn": True,
    "fuse_relu_before_depthwise_conv": False,
    "use_mkldnn": False,
    "exhaustive_search": False,
    "workspace_size_MB": 512,
    "is_test": False,  # fluid 1.8's attribute (for its MKL-DNN kernels)
}
for _name in ("conv2d", "depthwise_conv2d"):
    register(
        OpDef(
            _name,
            ("Input", "Filter", "Bias", "ResidualData"),
            ("Output",),
            _CONV_ATTRS,
            _conv_infer,
            _conv_kernel,
            grad=GradDef(
                ("Input", "Filter"),
                out_grads=("Output",),
                in_grads=("Input", "Filter"),
                kernel=_conv_grad_kernel,
                double=True,  # aten.convolution_backward is differentiable (fluid's conv2d_grad_grad)
            ),  # fmt: skip
        )
    )


def _convt_sizes(attrs, hw, k_hw):
    dil = _dil(attrs)
    p = _pads(attrs, hw, k_hw, attrs["strides"], dil)
    res = []
    for i, size in enumerate(hw):
        if size < 0:
            res.append(-1)
            continue
        d, s, k = dil[i], attrs["strides"][i], k_hw[i]
        res.append((size - 1) * s - p[2 * i] - p[2 * i + 1] + d * (k - 1) + 1)
    return res, p


def _convt_infer(ins, attrs):
    x, w = first(ins, "Input"), first(ins, "Filter")
    fmt = attrs["data_format"]
    cin = x.shape[3] if fmt == "NHWC" else x.shape[1]
    if cin >= 0 and cin != w.shape[0]:
        raise ValueError(
            f"Input channels must equal Filter.shape[0]. Received: Input.shape={x.shape}, Filter.shape={w.shape}"
        )
    sizes, _ = _convt_sizes(attrs, _hw(x.shape, fmt), w.shape[2:])
    if attrs["output_size"]:
        sizes = list(attrs["output_size"])
    cout = w.shape[1] * (attrs["groups"] or 1)
    return out("Output", _with_hw(x.shape, fmt, cout, sizes[0], sizes[1]), x.dtype)


def convt_nd(x, w, attrs):
    """A transposed conv of channels-first ``x`` (2-D or 3-D) with fluid's paddings (explicit pairs, SAME,
    VALID) and ``output_size``: torch's full transposed conv, cropped (or padded) to the wanted size."""
    nd = x.dim() - 2
    sizes, p = _convt_sizes(attrs, list(x.shape[2:]), list(w.shape[2:]))
    want = list(attrs["output_size"]) or sizes
    conv = F.conv_transpose2d if nd == 2 else F.conv_transpose3d
    y = conv(x, w, None, list(attrs["strides"]), 0, 0, attrs["groups"] or 1, _dil(attrs))
    pad = []
    for i in reversed(range(nd)):  # (F.pad takes the last dim first)
        pad += [0, max(0, p[2 * i] + want[i] - (y.shape[2 + i] - p[2 * i + 1]))]
    if any(pad):
        y = F.pad(y, pad)
    return y[(slice(None), slice(None)) + tuple(slice(p[2 * i], p[2 * i] + want[i]) for i in range(nd))]


def _convt_kernel(ins, attrs):
    fmt = attrs["data_format"]
    y = convt_nd(_to_nchw(ins["Input"][0], fmt), ins["Filter"][0], attrs)
    return {"Output": [_from_nchw(y, fmt)]}


register(
    OpDef(
        "conv2d_transpose",
        ("Input", "Filter", "Bias"),
        ("Output",),
        dict(_CONV_ATTRS, output_size=[]),
        _convt_infer,
        _convt_kernel,
        grad=GradDef(out_grads=("Output",), in_grads=("Input", "Filter")),
    )
)
# fluid 1.8's conv2d_transpose with groups = channels (its own CPU kernel; the same arithmetic)
register(
    OpDef(
        "depthwise_conv2d_transpose",
        ("Input", "Filter", "Bias"),
        ("Output",),
        {
            "is_test": False,
            "output_size": [],
            "groups": 1,
            "dilations": [1, 1],
            "strides": [1, 1],
            "paddings": [0, 0],
            "use_cudnn": False,
            "use_mkldnn": False,
            "fuse_relu": False,
            "fuse_activation": "",
            "fuse_alpha": 0.0,
            "fuse_beta": 0.0,
            "data_format": "NCHW",
            "padding_algorithm": "EXPLICIT",
            "workspace_size_MB": 512,
        },
        _convt_infer,
        _convt_kernel,
        grad=GradDef(out_grads=("Output",), in_grads=("Input", "Filter")),
    )
)


# -- conv3d, conv3d_transpose ----------------------------------------------------------------------
def _conv3d(ins, a):
    x, w = ins["Input"][0], ins["Filter"][0]
    p = _conv_pads(a, x.shape[2:], w.shape[2:], _dil(a))
    if any(p):
        x = F.pad(x, (p[4], p[5], p[2], p[3], p[0], p[1]))
    y = F.conv3d(x, w, None, list(a["strides"]), 0, _dil(a), a["groups"])
    return {"Output": [y]}


def _conv3d_infer(ins, a):
    from fluidcompat_ops.shapes import checked_conv_out

    x, w = first(ins, "Input"), first(ins, "Filter")
    dil = _dil(a)
    pads = _pads(a, x.shape[2:], w.shape[2:], a["strides"], dil)
    dims = [
        checked_conv_out(x.shape[2 + i], w.shape[2 + i], pads[2 * i], pads[2 * i + 1], a["strides"][i], dil[i])
        for i in range(3)
    ]
    return out("Output", [x.shape[0], w.shape[0]] + dims, x.dtype)


register(
    OpDef(
        "conv3d",
        ("Input", "Filter"),
        ("Output",),
        {
            "strides": [1, 1, 1],
            "paddings": [0, 0, 0],
            "dilations": [1, 1, 1],
            "groups": 1,
            "data_format": "NCDHW",
            "padding_algorithm": "EXPLICIT",
            "use_cudnn": True,
            "is_test": False,
        },
        *_channels_first(_conv3d, _conv3d_infer, "Input", ("Output",), "data_format", "NDHWC"),
        grad=GradDef(out_grads=("Output",)),
    )
)


def _conv3d_transpose(ins, a):
    return {"Output": [convt_nd(ins["Input"][0], ins["Filter"][0], a)]}


def _conv3d_transpose_infer(ins, a):
    x, w = first(ins, "Input"), first(ins, "Filter")
    dims = list(a["output_size"]) or _convt_sizes(a, list(x.shape[2:5]), list(w.shape[2:5]))[0]
    return out("Output", [x.shape[0], w.shape[1] * a["groups"]] + dims, x.dtype)


register(
    OpDef(
        "conv3d_transpose",
        ("Input", "Filter"),
        ("Output",),
        {
            "strides": [1, 1, 1],
            "paddings": [0, 0, 0],
            "dilations": [1, 1, 1],
            "groups": 1,
            "output_size": [],
            "data_format": "NCDHW",
            "padding_algorithm": "EXPLICIT",
            "use_cudnn": True,
        },
        # (fluid's layer writes NHWC / NCHW for 3-D data too)
        *_channels_first(
            _conv3d_transpose, _conv3d_transpose_infer, "Input", ("Output",), "data_format", ("NDHWC", "NHWC")
        ),
        grad=GradDef(out_grads=("Output",)),
    )
)


# -- deformable_conv, deformable_conv_v1 -----------------------------------------------------------
def bilinear_zero_outside(img, h, w):
    """``img`` [N, G, C, H, W] sampled at the fractional positions ``h``, ``w`` [N, G, P]: [N, G, C, P].
    A position with h <= -1, h >= H, w <= -1 or w >= W gives 0; inside, each of its four neighbours
    that lies outside the image counts as 0 (fluid 1.8's deformable-conv interpolation)."""
    n, g, c, height, width = img.shape
    flat = img.reshape(n, g, c, height * width)
    inside = (h > -1) & (h < height) & (w > -1) & (w < width)
    h0, w0 = torch.floor(h), torch.floor(w)
    lh, lw = h - h0, w - w0
    total = None
    for dh, dw, weight in ((0, 0, (1 - lh) * (1 - lw)), (0, 1, (1 - lh) * lw), (1, 0, lh * (1 - lw)), (1, 1, lh * lw)):
        hh, ww = h0 + dh, w0 + dw
        ok = inside & (hh >= 0) & (hh <= height - 1) & (ww >= 0) & (ww <= width - 1)
        index = (hh.clamp(0, height - 1) * width + ww.clamp(0, width - 1)).long()
        picked = flat.gather(3, index.unsqueeze(2).expand(n, g, c, index.shape[-1]))
        term = picked * (weight * ok.to(weight.dtype)).unsqueeze(2)
        total = term if total is None else total + term
    return total


def _deformable_geometry(ins, a):
    x, w = ins["Input"][0], ins["Filter"][0]
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = w.shape[2:], a["strides"], a["paddings"], a["dilations"]
    oh, ow = conv_out(x.shape[2], kh, ph, ph, sh, dh), conv_out(x.shape[3], kw, pw, pw, sw, dw)
    return x, w, (kh, kw), (sh, sw), (ph, pw), (dh, dw), (oh, ow)


def _deformable_conv(ins, a):
    """Each output position's kernel taps are moved by the offsets (Offset [N, dg * 2 * kh * kw, oh,
    ow]: per deformable group and tap, the (dy, dx) pair), the image sampled there bilinearly,
    scaled by the mask (Mask [N, dg * kh * kw, oh, ow]) when there is one, and convolved with
    Filter by groups. Input channels are split evenly between the deformable groups."""
    x, w, (kh, kw), (sh, sw), (ph, pw), (dh, dw), (oh, ow) = _deformable_geometry(ins, a)
    n, c, height, width = x.shape
    dg, groups, taps = a["deformable_groups"] or 1, a["groups"] or 1, kh * kw
    dev, dtype = x.device, x.dtype
    rows = (torch.arange(oh, device=dev, dtype=dtype) * sh - ph).reshape(1, oh, 1)
    cols = (torch.arange(ow, device=dev, dtype=dtype) * sw - pw).reshape(1, 1, ow)
    tap_rows = (torch.arange(kh, device=dev, dtype=dtype) * dh).repeat_interleave(kw).reshape(taps, 1, 1)
    tap_cols = (torch.arange(kw, device=dev, dtype=dtype) * dw).repeat(kh).reshape(taps, 1, 1)
    offset = ins["Offset"][0].reshape(n, dg, taps, 2, oh, ow)
    h = (rows + tap_rows) + offset[:, :, :, 0]  # [N, dg, taps, oh, ow]
    v = (cols + tap_cols) + offset[:, :, :, 1]
    sampled = bilinear_zero_outside(
        x.reshape(n, dg, c // dg, height, width), h.reshape(n, dg, -1), v.reshape(n, dg, -1)
    )  # [N, dg, C/dg, taps * oh * ow]
    mask = first(ins, "Mask")
    if mask is not None:
        sampled = sampled * mask.reshape(n, dg, 1, taps * oh * ow)
    columns = sampled.reshape(n, groups, (c // groups) * taps, oh * ow)
    filters = w.reshape(groups, w.shape[0] // groups, (c // groups) * taps)
    y = torch.einsum("gok,ngkp->ngop", filters, columns)
    return {"Output": [y.reshape(n, w.shape[0], oh, ow)]}


def _deformable_conv_infer(modulated):
    def infer(ins, a):
        x, w, off = first(ins, "Input"), first(ins, "Filter"), first(ins, "Offset")
        op = "deformable_conv" if modulated else "deformable_conv_v1"
        if len(x.shape) != 4 or len(w.shape) != 4 or len(off.shape) != 4:
            raise ValueError(
                f"{op} needs 4-D Input, Offset and Filter. Received: Input.shape={x.shape}, "
                f"Offset.shape={off.shape}, Filter.shape={w.shape}"
            )
        dg, groups = a["deformable_groups"] or 1, a["groups"] or 1
        (kh, kw), (sh, sw), (ph, pw), (dh, dw) = w.shape[2:], a["strides"], a["paddings"], a["dilations"]
        oh, ow = conv_out(x.shape[2], kh, ph, ph, sh, dh), conv_out(x.shape[3], kw, pw, pw, sw, dw)
        c = x.shape[1]
        if c >= 0 and (c % dg or c % groups or c != w.shape[1] * groups):
            raise ValueError(
                f"{op}: the input channels must equal Filter.shape[1] * groups and divide evenly by groups and "
                f"deformable_groups. Received: Input.shape={x.shape}, Filter.shape={w.shape}, groups={groups}, "
                f"deformable_groups={dg}"
            )
        if w.shape[0] % groups:
            raise ValueError(f"{op}: the number of filters ({w.shape[0]}) must divide evenly by groups ({groups})")
        want = [(2 * dg * kh * kw, oh, ow, "Offset", off)]
        mask = first(ins, "Mask")
        if modulated:
            if mask is None:
                raise ValueError("deformable_conv (modulated) needs a Mask; without one use modulated=False")
            want.append((dg * kh * kw, oh, ow, "Mask", mask))
        for channels, rows, cols, slot, var in want:
            got = tuple(var.shape[1:])
            if any(g >= 0 and e >= 0 and g != e for g, e in zip(got, (channels, rows, cols))):
                raise ValueError(
                    f"{op}: {slot} must be [N, {channels}, {rows}, {cols}] (deformable_groups {dg} x kernel "
                    f"{kh}x{kw}{' x 2' if slot == 'Offset' else ''}, at the output's {rows}x{cols} positions). "
                    f"Received: {slot}.shape={var.shape}"
                )
        return out("Output", (x.shape[0], w.shape[0], oh, ow), x.dtype)

    return infer


_DEFORMABLE_ATTRS = {
    "strides": [1, 1],
    "paddings": [0, 0],
    "dilations": [1, 1],
    "groups": 1,
    "deformable_groups": 1,
    "im2col_step": 64,
}
for _name, _inputs in (
    ("deformable_conv", ("Input", "Offset", "Mask", "Filter")),
    ("deformable_conv_v1", ("Input", "Offset", "Filter")),
):
    register(
        OpDef(
            _name,
            _inputs,
            ("Output",),
            _DEFORMABLE_ATTRS,
            _deformable_conv_infer(_name == "deformable_conv"),
            _deformable_conv,
            grad=GradDef(_inputs, out_grads=("Output",), in_grads=_inputs),
        )
    )


# -- unfold ----------------------------------------------------------------------------------------
def _unfold(ins, a):
    x = _x(ins)
    p = list(a["paddings"])
    x = F.pad(x, (p[1], p[3], p[0], p[2]))
    y = F.unfold(x, list(a["kernel_sizes"]), list(a["dilations"]), 0, list(a["strides"]))
    return {"Y": [y]}


def _unfold_infer(ins, a):
    from fluidcompat_ops.shapes import conv_out

    x = first(ins, "X")
    k, s, p, d = a["kernel_sizes"], a["strides"], a["paddings"], a["dilations"]
    oh = conv_out(x.shape[2], k[0], p[0], p[2], s[0], d[0])
    ow = conv_out(x.shape[3], k[1], p[1], p[3], s[1], d[1])
    c = x.shape[1] * k[0] * k[1] if x.shape[1] >= 0 else -1
    return out("Y", (x.shape[0], c, oh * ow if oh >= 0 and ow >= 0 else -1), x.dtype)


_op(
    "unfold",
    ("X",),
    ("Y",),
    {"kernel_sizes": [], "strides": [1, 1], "paddings": [0, 0, 0, 0], "dilations": [1, 1]},
    _unfold_infer,
    _unfold,
)


# -- row_conv --------------------------------------------------------------------------------------
def _row_conv(ins, a):
    """Lookahead convolution: out[t] = sum_i x[t + i] * Filter[i] within each sequence, of padded
    [batch, time, dim] input or of LoD [rows, dim] sequences."""
    x, w = _x(ins), ins["Filter"][0]
    lod = lod_of(x)
    if lod:
        batch, pos = _padded(x, lod[-1], 0.0)
        return {"Out": [_row_conv_padded(batch, w).reshape(-1, x.shape[1])[pos]]}
    return {"Out": [_row_conv_padded(x, w)]}


def _row_conv_padded(x, w):
    k = w.shape[0]
    t = x.shape[1]
    padded = F.pad(x, (0, 0, 0, k - 1))
    return sum(padded[:, i : i + t] * w[i] for i in range(k))


_op("row_conv", ("X", "Filter"), ("Out",), {}, same_as(), _row_conv)


# -- im2sequence -----------------------------------------------------------------------------------
def _im2sequence(ins, a):
    """Each image's patches as one sequence of rows [patches, C * kh * kw]. With ``Y`` (each image's
    real [height, width]), an image has the patches its real size divided by ``out_stride`` (rounded
    up) gives, taken from the top-left of its windows over the whole padded image, as fluid 1.8.5."""
    x = _x(ins)
    k, s, p = list(a["kernels"]), list(a["strides"]), list(a["paddings"])
    xp = F.pad(x, (p[1], p[3], p[0], p[2]))
    cols = F.unfold(xp, k, 1, 0, s)  # [N, C*kh*kw, oh*ow]
    n, width = x.shape[0], cols.shape[1]
    if not ins.get("Y"):
        rows = cols.transpose(1, 2).reshape(-1, width)
        return {"Out": [with_lod(rows, [[i * cols.shape[2] for i in range(n + 1)]])]}
    from fluidcompat_ops.shapes import conv_out

    full_h = conv_out(x.shape[2], k[0], p[0], p[2], s[0])
    grid = cols.reshape(n, width, full_h, -1)
    parts, counts = [], []
    for i, (h, w) in enumerate(ins["Y"][0].reshape(n, 2).tolist()):
        real_h, real_w = math.ceil(h / a["out_stride"][0]), math.ceil(w / a["out_stride"][1])
        oh = conv_out(real_h, k[0], p[0], p[2], s[0])
        ow = conv_out(real_w, k[1], p[1], p[3], s[1])
        parts.append(grid[i, :, :oh, :ow].reshape(width, -1).transpose(0, 1))
        counts.append(oh * ow)
    return {"Out": [with_lod(torch.cat(parts), [offsets_of(counts)])]}


def _im2sequence_infer(ins, a):
    from fluidcompat_ops.shapes import conv_out

    x = first(ins, "X")
    k, s, p = a["kernels"], a["strides"], a["paddings"]
    oh = conv_out(x.shape[2], k[0], p[0], p[2], s[0])
    ow = conv_out(x.shape[3], k[1], p[1], p[3], s[1])
    rows = x.shape[0] * oh * ow if min(x.shape[0], oh, ow) >= 0 and not first(ins, "Y") else -1
    return out("Out", (rows, x.shape[1] * k[0] * k[1]), x.dtype)


_op(
    "im2sequence",
    ("X", "Y"),
    ("Out",),
    {"kernels": [], "strides": [1, 1], "paddings": [0, 0, 0, 0], "out_stride": [1, 1]},
    _im2sequence_infer,
    _im2sequence,
    host_inputs=frozenset({"Y"}),
)
