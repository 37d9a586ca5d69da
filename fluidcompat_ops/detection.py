"""Detection-model ops of fluid 1.8 built on sampling an image at fractional positions:
``deformable_conv`` (DCN v2: offsets and a modulation mask) and ``deformable_conv_v1`` (offsets only).

Their gradients are per-op VJPs (NOTE in registry.py GradDef): the sampling below is differentiable
in the image, the offsets (through the interpolation weights) and the mask.
"""

from __future__ import annotations

from fluidcompat_ops.registry import GradDef, OpDef, register
from fluidcompat_ops.shapes import conv_out, first, out

torch = None  # NOTE: [Lazy torch] in registry.py
F = None


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
