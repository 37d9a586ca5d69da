"""Detection-model ops of fluid 1.8 that sample a feature map at fractional positions or over
roi bins: ``deformable_conv`` (DCN v2: offsets and a modulation mask), ``deformable_conv_v1``
(offsets only), ``psroi_pool`` (R-FCN) and ``deformable_psroi_pooling`` (deformable R-FCN).

Their gradients are per-op VJPs (NOTE in registry.py GradDef): the sampling and pooling below are
differentiable in the map, the offsets (through the interpolation weights) and the mask.
"""

from __future__ import annotations

from fluidcompat_ops.registry import GradDef, OpDef, register
from fluidcompat_ops.sequence import lengths_of, lod_of
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


# -- psroi_pool and deformable_psroi_pooling (R-FCN and deformable R-FCN) ---------------------------
def _c_round(v):
    """C's round(): halves away from zero."""
    return torch.sign(v) * torch.floor(v.abs() + 0.5)


def _rois_images(x, rois, op: str):
    """Each roi's image index, from the LoD of ROIs (one level: rois per image). Without a LoD every
    roi is in image 0, which only a batch of one allows."""
    lod = lod_of(rois)
    if not lod:
        if x.shape[0] != 1:
            raise ValueError(
                f"{op}: ROIs carries no LoD, so which image each roi is in is unknown (Input has {x.shape[0]} "
                "images). Feed ROIs as a LoDTensor with the number of rois per image"
            )
        return torch.zeros(rois.shape[0], dtype=torch.long, device=x.device)
    offsets = lod[-1]
    if len(offsets) - 1 != x.shape[0] or offsets[-1] != rois.shape[0]:
        raise ValueError(
            f"{op}: the LoD of ROIs must give each of Input's {x.shape[0]} images its rois ({rois.shape[0]} "
            f"in all). Received offsets {offsets}"
        )
    counts = torch.tensor(lengths_of(offsets), device=x.device)
    return torch.repeat_interleave(torch.arange(len(counts), device=x.device), counts, output_size=rois.shape[0])


def _roi_boxes(rois, scale, shift):
    """(start_w, start_h, width, height) of each roi on the feature map: corners rounded as C does,
    the end pixel included, times ``scale``, moved by ``shift``; sides at least 0.1."""
    r = _c_round(rois.detach().to(torch.float64))
    sw, sh = r[:, 0] * scale + shift, r[:, 1] * scale + shift
    ew, eh = (r[:, 2] + 1.0) * scale + shift, (r[:, 3] + 1.0) * scale + shift
    return sw, sh, (ew - sw).clamp(min=0.1), (eh - sh).clamp(min=0.1)


def _psroi_pool(ins, a):
    """Position-sensitive roi pooling: bin (i, j) of output channel c averages input channel
    (c * ph + i) * pw + j over the whole pixels the bin touches (0 for an empty bin)."""
    x, rois = ins["X"][0], ins["ROIs"][0]
    n, channels, height, width = x.shape
    oc, ph, pw = a["output_channels"], a["pooled_height"], a["pooled_width"]
    if channels != oc * ph * pw:
        raise ValueError(
            f"psroi_pool: Input must have output_channels * pooled_height * pooled_width = {oc * ph * pw} channels. "
            f"Received: {channels}"
        )
    images = _rois_images(x, rois, "psroi_pool")
    sw, sh, rw, rh = _roi_boxes(rois, a["spatial_scale"], 0.0)
    i = torch.arange(ph, dtype=torch.float64, device=x.device)
    j = torch.arange(pw, dtype=torch.float64, device=x.device)
    bh, bw = (rh / ph)[:, None], (rw / pw)[:, None]
    hs = torch.floor(bh * i + sh[:, None]).clamp(0, height).long()  # [R, ph]
    he = torch.ceil(bh * (i + 1) + sh[:, None]).clamp(0, height).long()
    ws = torch.floor(bw * j + sw[:, None]).clamp(0, width).long()  # [R, pw]
    we = torch.ceil(bw * (j + 1) + sw[:, None]).clamp(0, width).long()
    # sums over the bins from an integral image (in float64, so no rows' precision is lost)
    integral = F.pad(x.to(torch.float64).cumsum(2).cumsum(3), (1, 0, 1, 0))  # [N, C, H+1, W+1]
    chan = torch.arange(oc * ph * pw, device=x.device).reshape(oc, ph, pw)
    base = (images[:, None, None, None] * channels + chan) * (height + 1) * (width + 1)  # [R, oc, ph, pw]
    flat = integral.reshape(-1)

    def at(rows, cols):
        return flat[base + rows[:, None, :, None] * (width + 1) + cols[:, None, None, :]]

    total = at(he, we) - at(hs, we) - at(he, ws) + at(hs, ws)
    area = ((he - hs)[:, None, :, None] * (we - ws)[:, None, None, :]).to(torch.float64)
    pooled = torch.where(area > 0, total / area.clamp(min=1), torch.zeros_like(total))
    return {"Out": [pooled.to(x.dtype)]}


def _psroi_infer(ins, a):
    x = first(ins, "X")
    return out("Out", (-1, a["output_channels"], a["pooled_height"], a["pooled_width"]), x.dtype)


register(
    OpDef(
        "psroi_pool",
        ("X", "ROIs"),
        ("Out",),
        {"output_channels": 1, "spatial_scale": 1.0, "pooled_height": 1, "pooled_width": 1},
        _psroi_infer,
        _psroi_pool,
        grad=GradDef(("X", "ROIs"), out_grads=("Out",), in_grads=("X",)),
    )
)


def _clamp_passing_gradient(v, low, high):
    """``v`` clamped to [low, high] whose gradient passes as if unclamped (fluid 1.8's deformable
    psroi pooling differentiates the interpolation at the clamped point by the unclamped offset)."""
    return v + (v.clamp(low, high) - v).detach()


def _deformable_psroi_pooling(ins, a):
    """Deformable (position-sensitive) roi pooling: each bin is moved by its part's offset from Trans
    (times trans_std and the roi's size) and averages ``sample_per_part``^2 bilinear samples of its
    channel; samples more than half a pixel outside the map are left out. TopCount: the samples
    each bin averaged."""
    x, rois = ins["Input"][0], ins["ROIs"][0]
    n, channels, height, width = x.shape
    out_dim, (gh, gw), ph, pw = a["output_dim"], a["group_size"], a["pooled_height"], a["pooled_width"]
    (part_h, part_w), spp, no_trans = a["part_size"], a["sample_per_part"], a["no_trans"]
    if channels != out_dim * gh * gw:
        raise ValueError(
            f"deformable_psroi_pooling: Input must have output_dim * group_size[0] * group_size[1] = "
            f"{out_dim * gh * gw} channels. Received: {channels}"
        )
    images = _rois_images(x, rois, "deformable_psroi_pooling")
    dev, dt = x.device, x.dtype
    sw, sh, rw, rh = (v.to(dt) for v in _roi_boxes(rois, a["spatial_scale"], -0.5))
    r = rois.shape[0]
    i = torch.arange(ph, device=dev)
    j = torch.arange(pw, device=dev)
    ct = torch.arange(out_dim, device=dev)
    view = (r, out_dim, ph, pw)
    if no_trans:
        tx = ty = torch.zeros(view, dtype=dt, device=dev)
    else:
        trans = ins["Trans"][0]
        classes = trans.shape[1] // 2
        cls = (ct // (out_dim // classes)).reshape(1, out_dim, 1, 1)
        pi = (i * part_h // ph).reshape(1, 1, ph, 1)  # floor(i / ph * part_h)
        pj = (j * part_w // pw).reshape(1, 1, 1, pw)
        rr = torch.arange(r, device=dev).reshape(r, 1, 1, 1)
        tx = trans[rr, cls * 2, pi, pj] * a["trans_std"]
        ty = trans[rr, cls * 2 + 1, pi, pj] * a["trans_std"]
    col = lambda v: v.reshape(r, 1, 1, 1)  # noqa: E731
    bw, bh = col(rw) / pw, col(rh) / ph
    wstart = j.to(dt).reshape(1, 1, 1, pw) * bw + col(sw) + tx * col(rw)
    hstart = i.to(dt).reshape(1, 1, ph, 1) * bh + col(sh) + ty * col(rh)
    steps = torch.arange(spp, dtype=dt, device=dev)
    w = wstart[..., None, None] + steps.reshape(1, spp) * (bw / spp)[..., None, None]  # [R, od, ph, pw, spp, spp]
    h = hstart[..., None, None] + steps.reshape(spp, 1) * (bh / spp)[..., None, None]
    kept = (w >= -0.5) & (w <= width - 0.5) & (h >= -0.5) & (h <= height - 0.5)
    w = _clamp_passing_gradient(w, 0.0, width - 1.0)
    h = _clamp_passing_gradient(h, 0.0, height - 1.0)
    gi = (i * gh // ph).clamp(0, gh - 1).reshape(1, 1, ph, 1)
    gj = (j * gw // pw).clamp(0, gw - 1).reshape(1, 1, 1, pw)
    chan = (ct.reshape(1, out_dim, 1, 1) * gh + gi) * gw + gj
    base = ((images.reshape(r, 1, 1, 1) * channels + chan) * height)[..., None, None]
    flat = x.reshape(-1)
    x0, y0 = torch.floor(w.detach()), torch.floor(h.detach())
    x1, y1 = torch.ceil(w.detach()), torch.ceil(h.detach())
    dx, dy = w - x0, h - y0

    def px(yy, xx):
        return flat[((base + yy.long()) * width + xx.long()).clamp(0, flat.numel() - 1)]

    value = (
        (1 - dx) * (1 - dy) * px(y0, x0)
        + (1 - dx) * dy * px(y1, x0)
        + dx * (1 - dy) * px(y0, x1)
        + dx * dy * px(y1, x1)
    )
    value = torch.where(kept, value, torch.zeros_like(value))
    count = kept.sum((-2, -1)).to(dt)
    pooled = torch.where(count > 0, value.sum((-2, -1)) / count.clamp(min=1), torch.zeros_like(count))
    return {"Output": [pooled], "TopCount": [count]}


def _deformable_psroi_infer(ins, a):
    x = first(ins, "Input")
    shape = (-1, a["output_dim"], a["pooled_height"], a["pooled_width"])
    return {"Output": [(shape, x.dtype)], "TopCount": [(shape, x.dtype)]}


register(
    OpDef(
        "deformable_psroi_pooling",
        ("Input", "ROIs", "Trans"),
        ("Output", "TopCount"),
        {
            "no_trans": False,
            "spatial_scale": 1.0,
            "output_dim": 1,
            "group_size": [1, 1],
            "pooled_height": 1,
            "pooled_width": 1,
            "part_size": [1, 1],
            "sample_per_part": 1,
            "trans_std": 0.1,
        },
        _deformable_psroi_infer,
        _deformable_psroi_pooling,
        grad=GradDef(("Input", "ROIs", "Trans"), out_grads=("Output",), in_grads=("Input", "Trans")),
    )
)
