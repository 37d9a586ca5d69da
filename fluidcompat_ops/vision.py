"""Interpolation and vision ops: bilinear_interp, nearest_interp, trilinear_interp, grid_sampler,
affine_grid, temporal_shift, pixel_shuffle, shuffle_channel, space_to_depth, random_crop and
similarity_focus; and the region-of-interest ops roi_pool, roi_align, prroi_pool, psroi_pool (R-FCN),
deformable_psroi_pooling (deformable R-FCN) and roi_perspective_transform.

psroi_pool's and deformable_psroi_pooling's gradients are per-op VJPs (NOTE in registry.py GradDef):
their pooling is differentiable in the map and, for the deformable one, the offsets."""

from __future__ import annotations

import math

from fluidcompat_ops.registry import GradDef, OpDef, _op, register
from fluidcompat_ops.sequence import _image_of_rows, lengths_of, lod_of, with_lod
from fluidcompat_ops.shapes import _channels_first, _round_half_away, _x, first, out, same_as

torch = None  # NOTE: [Lazy torch] in registry.py
F = None


# -- bilinear_interp, nearest_interp, trilinear_interp ---------------------------------------------
def _linear_from_origin(x, size):
    """fluid's align_mode 1 without align_corners: output index k reads input position k * in / out
    (ratio in float32, as fluid computed it), linear between its two neighbours, dimension by dimension."""
    y = x
    for k, (n_in, n_out) in enumerate(zip(x.shape[2:], size)):
        dim = 2 + k
        src = torch.arange(n_out, device=x.device, dtype=torch.float32) * torch.tensor(
            n_in / n_out, dtype=torch.float32
        )
        lo = src.long().clamp_(0, n_in - 1)
        hi = (lo + 1).clamp_(max=n_in - 1)
        frac = (src - lo.to(torch.float32)).to(x.dtype)
        view = [1] * y.dim()
        view[dim] = n_out
        frac = frac.reshape(view)
        y = torch.index_select(y, dim, lo) * (1 - frac) + torch.index_select(y, dim, hi) * frac
    return y


def _interp(mode):
    def kernel(ins, a):
        return {"Out": [resize(_x(ins), _out_size(ins), a, first(ins, "Scale"))]}

    def resize(x, size_t, a, scale_t=None):
        nd = x.dim() - 2
        scale = float(scale_t.reshape(-1)[0]) if scale_t is not None else a.get("scale", 0)
        if size_t is not None:
            size = [int(v) for v in size_t.reshape(-1).tolist()]
        elif scale and scale > 0:
            size = [int(s * scale) for s in x.shape[2:]]
        else:
            size = [a["out_d"], a["out_h"], a["out_w"]][3 - nd :]
        if mode == "nearest":
            # fluid's source index: the ratio in float32, times the output index in float32; with
            # corners aligned + 0.5 (halves round up), then truncated
            idx = []
            for i, o in zip(x.shape[2:], size):
                aligned = a["align_corners"] and o > 1
                ratio = torch.tensor((i - 1) / (o - 1) if aligned else i / o, dtype=torch.float32)
                pos = torch.arange(o, device=x.device, dtype=torch.float32) * ratio.to(x.device)
                idx.append((pos.double() + 0.5).floor().long() if aligned else pos.floor().long())
            y = x
            for k, ix in enumerate(idx):
                y = torch.index_select(y, 2 + k, ix)
            return y
        tmode = {"bilinear": "bilinear", "trilinear": "trilinear", "linear": "linear"}[mode]
        if a["align_corners"] or a.get("align_mode", 1) == 0:
            # corners aligned, or align_mode 0: half-pixel centres, as torch's align_corners=False
            return F.interpolate(x, size=size, mode=tmode, align_corners=bool(a["align_corners"]))
        return _linear_from_origin(x, size)

    return kernel


def _out_size(ins):
    """The output size read when run: OutSize, else SizeTensor's [1] tensors (in that order of priority,
    as fluid read them), else None."""
    size_t = first(ins, "OutSize")
    if size_t is None and ins.get("SizeTensor"):
        size_t = torch.cat([t.reshape(-1) for t in ins["SizeTensor"]])
    return size_t


def _interp_infer(nd):
    def infer(ins, a):
        x = first(ins, "X")
        if first(ins, "OutSize") is not None or first(ins, "Scale") is not None:
            dims = [-1] * nd
        elif a.get("scale", 0) and a["scale"] > 0:
            dims = [int(s * a["scale"]) if s >= 0 else -1 for s in x.shape[2:]]
        else:
            dims = [a["out_d"], a["out_h"], a["out_w"]][3 - nd :]
        return out("Out", list(x.shape[:2]) + dims, x.dtype)

    return infer


_INTERP = {
    "out_d": -1,
    "out_h": -1,
    "out_w": -1,
    "scale": 0.0,
    "interp_method": "bilinear",
    "align_corners": True,
    "align_mode": 1,
    "data_layout": "NCHW",
}
for _name, _mode, _nd in (
    ("bilinear_interp", "bilinear", 2),
    ("nearest_interp", "nearest", 2),
    ("trilinear_interp", "trilinear", 3),
):
    _op(
        _name,
        ("X", "OutSize", "SizeTensor", "Scale"),
        ("Out",),
        dict(_INTERP, interp_method=_mode),
        # data_layout NHWC: fluid's value for NHWC and NDHWC input
        *_channels_first(_interp(_mode), _interp_infer(_nd), "X", ("Out",), "data_layout", "NHWC"),
        host_inputs=frozenset({"OutSize", "SizeTensor", "Scale"}),
    )


# -- temporal_shift --------------------------------------------------------------------------------
def _temporal_shift(ins, a):
    x, t, r = _x(ins), a["seg_num"], a["shift_ratio"]
    nt, c, h, w = x.shape
    x5 = x.reshape(nt // t, t, c, h, w)
    c1, c2 = int(c * r), int(c * 2 * r)
    y = torch.zeros_like(x5)
    y[:, 1:, :c1] = x5[:, :-1, :c1]
    y[:, :-1, c1:c2] = x5[:, 1:, c1:c2]
    y[:, :, c2:] = x5[:, :, c2:]
    return {"Out": [y.reshape(nt, c, h, w)]}


_op("temporal_shift", ("X",), ("Out",), {"seg_num": 1, "shift_ratio": 0.25}, same_as(), _temporal_shift)


# -- grid_sampler, affine_grid ---------------------------------------------------------------------
def _grid_sampler(ins, a):
    x, grid = ins["X"][0], ins["Grid"][0]
    return {"Output": [F.grid_sample(x, grid, mode="bilinear", padding_mode="zeros", align_corners=True)]}


def _grid_sampler_infer(ins, a):
    x, g = first(ins, "X"), first(ins, "Grid")
    return out("Output", (x.shape[0], x.shape[1], g.shape[1], g.shape[2]), x.dtype)


_op("grid_sampler", ("X", "Grid"), ("Output",), {"use_cudnn": True}, _grid_sampler_infer, _grid_sampler)


def _affine_grid(ins, a):
    theta = ins["Theta"][0]
    shape_t = first(ins, "OutputShape")
    shape = [int(v) for v in shape_t.reshape(-1).tolist()] if shape_t is not None else list(a["output_shape"])
    shape[0] = theta.shape[0]  # fluid took the batch from theta, whatever the shape said
    return {"Output": [F.affine_grid(theta, shape, align_corners=True)]}


def _affine_grid_infer(ins, a):
    # fluid 1.8.5 declared the grid's height and width unknown even from an attribute shape
    theta = first(ins, "Theta")
    return out("Output", (theta.shape[0], -1, -1, 2), theta.dtype)


_op(
    "affine_grid",
    ("Theta", "OutputShape"),
    ("Output",),
    {"output_shape": [], "use_cudnn": True},
    _affine_grid_infer,
    _affine_grid,
    host_inputs=frozenset({"OutputShape"}),
)


# -- pixel_shuffle, shuffle_channel, space_to_depth ------------------------------------------------
def _pixel_shuffle_infer(ins, a):
    x, r = first(ins, "X"), a["upscale_factor"]
    n, c, h, w = x.shape
    return out("Out", (n, c // (r * r) if c >= 0 else -1, h * r if h >= 0 else -1, w * r if w >= 0 else -1), x.dtype)


_op(
    "pixel_shuffle",
    ("X",),
    ("Out",),
    {"upscale_factor": 1},
    _pixel_shuffle_infer,
    lambda ins, a: {"Out": [F.pixel_shuffle(_x(ins), a["upscale_factor"])]},
)


def _shuffle_channel(ins, a):
    x, g = _x(ins), a["group"]
    n, c, h, w = x.shape
    return {"Out": [x.reshape(n, g, c // g, h, w).transpose(1, 2).reshape(n, c, h, w)]}


_op("shuffle_channel", ("X",), ("Out",), {"group": 1}, same_as(), _shuffle_channel)


def _check_space_to_depth(c, h, w, b):
    """fluid 1.8.5's conditions (its InferShape): blocksize >= 1, the channels divisible by
    blocksize^2, the height and width by blocksize (-1: not known yet)."""
    if b < 1:
        raise ValueError(f"space_to_depth: blocksize must be at least 1. Received: {b}")
    for what, size, by in (("channel count", c, b * b), ("height", h, b), ("width", w, b)):
        if size >= 0 and size % by:
            raise ValueError(
                f"space_to_depth: X's {what} must be divisible by {by} (blocksize {b}"
                f"{'^2' if by != b else ''}). Received: X of shape [N, {c}, {h}, {w}]"
            )


def _space_to_depth_infer(ins, a):
    x, b = first(ins, "X"), a["blocksize"]
    n, c, h, w = x.shape
    _check_space_to_depth(c, h, w, b)
    return out("Out", (n, c * b * b if c >= 0 else -1, h // b if h >= 0 else -1, w // b if w >= 0 else -1), x.dtype)


def _space_to_depth(ins, a):
    """fluid 1.8.5's element order (measured): X read as [N, b, b, C / b^2, H, W] is laid out as the
    [N, C / b^2, H * b, W * b] image, whose memory is then the [N, C * b^2, H / b, W / b] output."""
    x, b = _x(ins), a["blocksize"]
    n, c, h, w = x.shape
    _check_space_to_depth(c, h, w, b)
    y = x.reshape(n, b, b, c // (b * b), h, w).permute(0, 3, 4, 1, 5, 2)
    return {"Out": [y.reshape(n, c * b * b, h // b, w // b)]}


_op("space_to_depth", ("X",), ("Out",), {"blocksize": 1}, _space_to_depth_infer, _space_to_depth)


# -- random_crop -----------------------------------------------------------------------------------
def _random_crop(ins, a):
    """Crops at random offsets drawn from the seed the Seed variable carries from the last run
    (``startup_seed`` on the first); SeedOut gets the next seed, so each run crops afresh. The
    offsets and seeds are fluid's (NOTE: [Seeded draws])."""
    from fluidcompat_ops import fluid_random

    x = _x(ins)
    shape = list(a["shape"])
    k = len(shape)
    carried = (ins.get("Seed") or [None])[0]
    seed = int(carried.reshape(-1)[0]) if carried is not None and carried.numel() else int(a.get("startup_seed", 0))
    lead = x.shape[: x.dim() - k]
    flat = x.reshape((-1,) + tuple(x.shape[x.dim() - k :]))
    offsets, next_seed = fluid_random.crop_offsets(seed, flat.shape[0], flat.shape[1:], shape)
    outs = [inst[tuple(slice(o, o + s) for o, s in zip(offs, shape))] for inst, offs in zip(flat, offsets)]
    return {
        "Out": [torch.stack(outs).reshape(tuple(lead) + tuple(shape))],
        "SeedOut": [torch.tensor([next_seed], dtype=torch.int64, device=x.device)],
    }


def _random_crop_infer(ins, a):
    x = first(ins, "X")
    k = len(a["shape"])
    return {"Out": [(list(x.shape[: len(x.shape) - k]) + list(a["shape"]), x.dtype)], "SeedOut": [((1,), "int64")]}


_op(
    "random_crop",
    ("X", "Seed"),
    ("Out", "SeedOut"),
    {"shape": [], "startup_seed": 0},
    _random_crop_infer,
    _random_crop,
    grad=False,
    optional_inputs=frozenset({"Seed"}),  # the carried seed holds no value before the first run
    host_inputs=frozenset({"Seed"}),
)


# -- similarity_focus ------------------------------------------------------------------------------
def _similarity_focus(ins, a):
    x = _x(ins)
    axis = a["axis"]
    moved = x.movedim(axis, 1)  # [N, C, A, B]
    mask = torch.zeros((moved.shape[0],) + tuple(moved.shape[2:]), dtype=torch.bool, device=x.device)
    for idx in a["indexes"]:
        t = moved[:, idx]
        for n in range(t.shape[0]):
            m = t[n].clone()
            rows, cols = m.shape
            for _ in range(min(rows, cols)):
                flat = int(torch.argmax(m))
                r, c = divmod(flat, cols)
                mask[n, r, c] = True
                m[r, :] = float("-inf")
                m[:, c] = float("-inf")
    out_t = mask.unsqueeze(1).expand_as(moved).to(x.dtype)
    return {"Out": [out_t.movedim(1, axis).contiguous()]}


_op("similarity_focus", ("X",), ("Out",), {"axis": 1, "indexes": []}, same_as(), _similarity_focus, grad=False)


# -- roi_pool, roi_align ---------------------------------------------------------------------------
def _roi_batch_ids(ins, rois):
    lod = first(ins, "RoisLod")
    if lod is None:
        return torch.zeros(rois.shape[0], dtype=torch.long, device=rois.device)
    offsets = lod.reshape(-1).long().tolist()
    ids = []
    for b, (s, e) in enumerate(zip(offsets, offsets[1:])):
        ids += [b] * (e - s)
    if len(ids) != rois.shape[0]:
        raise ValueError(f"RoisLod {offsets} covers {len(ids)} rois but Rois has {rois.shape[0]}")
    return torch.tensor(ids, dtype=torch.long, device=rois.device)


def _roi_pool(ins, a):
    x, rois = _x(ins), ins["ROIs"][0]
    ph_n, pw_n, scale = a["pooled_height"], a["pooled_width"], a["spatial_scale"]
    _, c, h, w = x.shape
    batch = _roi_batch_ids(ins, rois).tolist()
    outs, argmax = [], []
    for r, b in zip(rois.tolist(), batch):
        x1, y1, x2, y2 = (_round_half_away(v * scale) for v in r)
        rh, rw = max(y2 - y1 + 1, 1), max(x2 - x1 + 1, 1)
        bh, bw = rh / ph_n, rw / pw_n
        o = x.new_zeros((c, ph_n, pw_n))
        am = torch.full((c, ph_n, pw_n), -1, dtype=torch.int64, device=x.device)
        for ph in range(ph_n):
            hs = min(max(int(math.floor(ph * bh)) + y1, 0), h)
            he = min(max(int(math.ceil((ph + 1) * bh)) + y1, 0), h)
            for pw in range(pw_n):
                ws = min(max(int(math.floor(pw * bw)) + x1, 0), w)
                we = min(max(int(math.ceil((pw + 1) * bw)) + x1, 0), w)
                if he <= hs or we <= ws:
                    continue
                region = x[b, :, hs:he, ws:we].reshape(c, -1)
                val, idx = region.max(1)
                o[:, ph, pw] = val
                am[:, ph, pw] = (hs + idx // (we - ws)) * w + ws + idx % (we - ws)
        outs.append(o)
        argmax.append(am)
    return {"Out": [torch.stack(outs)], "Argmax": [torch.stack(argmax)]}


def _roi_infer(outs):
    def infer(ins, a):
        x, rois = first(ins, "X"), first(ins, "ROIs")
        shape = (rois.shape[0], x.shape[1], a["pooled_height"], a["pooled_width"])
        result = {"Out": [(shape, x.dtype)]}
        if "Argmax" in outs:
            result["Argmax"] = [(shape, "int64")]
        return result

    return infer


def _roi_pool_infer(ins, a):
    """roi_pool's checks when built in fluid 1.8.5 (roi_align had none), then the shared shapes."""
    x, rois = first(ins, "X"), first(ins, "ROIs")
    if len(x.shape) != 4:
        raise ValueError(f"The format of input tensor is NCHW. Received: X '{x.name}' of shape {list(x.shape)}")
    if len(rois.shape) != 2 or rois.shape[1] != 4:
        raise ValueError(
            "ROIs should be a 2-D LoDTensor of shape (num_rois, 4)given as [[x1, y1, x2, y2], ...]. Received: "
            f"ROIs '{rois.name}' of shape {list(rois.shape)}"
        )
    return _roi_infer(("Out", "Argmax"))(ins, a)


register(
    OpDef(
        "roi_pool",
        ("X", "ROIs", "RoisLod"),
        ("Out", "Argmax"),
        {"pooled_height": 1, "pooled_width": 1, "spatial_scale": 1.0},
        _roi_pool_infer,
        _roi_pool,
        host_inputs=frozenset({"RoisLod"}),
        grad=GradDef(("X", "ROIs", "RoisLod"), out_grads=("Out",), in_grads=("X",)),
    )
)


def _bilinear_at(img, y, x):
    """img [C, H, W] sampled at float points y, x (same shape), Caffe2's ROIAlign rules."""
    h, w = img.shape[1:]
    valid = (y >= -1.0) & (y <= h) & (x >= -1.0) & (x <= w)
    y, x = y.clamp(min=0), x.clamp(min=0)
    y_low, x_low = y.floor().long(), x.floor().long()
    y_low = torch.where(y_low >= h - 1, torch.full_like(y_low, h - 1), y_low)
    x_low = torch.where(x_low >= w - 1, torch.full_like(x_low, w - 1), x_low)
    y = torch.where(y_low >= h - 1, y_low.to(y.dtype), y)
    x = torch.where(x_low >= w - 1, x_low.to(x.dtype), x)
    y_high, x_high = (y_low + 1).clamp(max=h - 1), (x_low + 1).clamp(max=w - 1)
    ly, lx = y - y_low, x - x_low
    hy, hx = 1 - ly, 1 - lx
    v = (
        img[:, y_low, x_low] * (hy * hx)
        + img[:, y_low, x_high] * (hy * lx)
        + img[:, y_high, x_low] * (ly * hx)
        + img[:, y_high, x_high] * (ly * lx)
    )
    return v * valid.to(v.dtype)


def _roi_align(ins, a):
    x, rois = _x(ins), ins["ROIs"][0]
    ph_n, pw_n, scale, ratio = a["pooled_height"], a["pooled_width"], a["spatial_scale"], a["sampling_ratio"]
    batch = _roi_batch_ids(ins, rois).tolist()
    outs = []
    for r, b in zip(rois, batch):
        x1, y1, x2, y2 = (v * scale for v in r)
        rw, rh = torch.clamp(x2 - x1, min=1.0), torch.clamp(y2 - y1, min=1.0)
        bh, bw = rh / ph_n, rw / pw_n
        gh = ratio if ratio > 0 else int(math.ceil(float(rh) / ph_n))
        gw = ratio if ratio > 0 else int(math.ceil(float(rw) / pw_n))
        iy = (torch.arange(gh, dtype=x.dtype, device=x.device) + 0.5) / gh
        ix = (torch.arange(gw, dtype=x.dtype, device=x.device) + 0.5) / gw
        ys = y1 + (torch.arange(ph_n, dtype=x.dtype, device=x.device)[:, None] + iy[None, :]) * bh  # [ph, gh]
        xs = x1 + (torch.arange(pw_n, dtype=x.dtype, device=x.device)[:, None] + ix[None, :]) * bw  # [pw, gw]
        yy = ys[:, None, :, None].expand(ph_n, pw_n, gh, gw)
        xx = xs[None, :, None, :].expand(ph_n, pw_n, gh, gw)
        v = _bilinear_at(x[b], yy, xx)  # [C, ph, pw, gh, gw]
        outs.append(v.mean((3, 4)))
    return {"Out": [torch.stack(outs)]}


register(
    OpDef(
        "roi_align",
        ("X", "ROIs", "RoisLod"),
        ("Out",),
        {"pooled_height": 1, "pooled_width": 1, "spatial_scale": 1.0, "sampling_ratio": -1},
        _roi_infer(("Out",)),
        _roi_align,
        host_inputs=frozenset({"RoisLod"}),
        grad=GradDef(("X", "ROIs", "RoisLod"), out_grads=("Out",), in_grads=("X",)),
    )
)


# -- prroi_pool: the exact integral of the bilinear-interpolated map over each bin -------------------
def _tri_integral(a, b, n):
    """For pixel centres 0 .. n-1: the integral of max(0, 1 - |x - j|) from a to b, per j ([..., n])."""
    j = torch.arange(n, dtype=a.dtype, device=a.device)

    def g(t):  # antiderivative of the tent function, 0 below -1, 1 above 1
        t = t.clamp(-1.0, 1.0)
        return torch.where(t < 0, (t + 1) ** 2 / 2, 1 - (1 - t) ** 2 / 2)

    return g(b[..., None] - j) - g(a[..., None] - j)


def _prroi_pool(ins, a):
    x, rois = _x(ins), ins["ROIs"][0]
    nums = first(ins, "BatchRoINums")
    if nums is not None:
        counts = nums.reshape(-1).long().tolist()
        batch = [b for b, c in enumerate(counts) for _ in range(c)]
    else:
        batch = [0] * rois.shape[0]
    ph_n, pw_n, scale = a["pooled_height"], a["pooled_width"], a["spatial_scale"]
    _, _, h, w = x.shape
    outs = []
    for r, b in zip(rois, batch):
        x1, y1, x2, y2 = (v * scale for v in r)
        bw = torch.clamp(x2 - x1, min=0.0) / pw_n
        bh = torch.clamp(y2 - y1, min=0.0) / ph_n
        px = x1 + torch.arange(pw_n + 1, dtype=x.dtype, device=x.device) * bw
        py = y1 + torch.arange(ph_n + 1, dtype=x.dtype, device=x.device) * bh
        wx = _tri_integral(px[:-1], px[1:], w)  # [pw, W]
        wy = _tri_integral(py[:-1], py[1:], h)  # [ph, H]
        area = bw * bh
        pooled = torch.einsum("chw,ph,qw->cpq", x[b], wy, wx)
        outs.append(torch.where(area > 0, pooled / torch.clamp(area, min=1e-12), torch.zeros_like(pooled)))
    return {"Out": [torch.stack(outs)]}


register(
    OpDef(
        "prroi_pool",
        ("X", "ROIs", "BatchRoINums"),
        ("Out",),
        {"spatial_scale": 1.0, "pooled_height": 1, "pooled_width": 1},
        _roi_infer(("Out",)),
        _prroi_pool,
        host_inputs=frozenset({"BatchRoINums"}),
        grad=GradDef(("X", "ROIs", "BatchRoINums"), out_grads=("Out",), in_grads=("X",)),
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


# -- roi_perspective_transform (text recognition: each quadrilateral roi warped to a rectangle) ------
_QUAD_EPS = 1e-4


def _ge(a, b):
    return (a > b) | ((a - b).abs() < _QUAD_EPS)


def _perspective_matrix(xs, ys, out_h, out_w) -> list:
    """fluid 1.8's homography from output (column, row) to the roi's quadrilateral: the roi's
    estimated aspect sets how many output columns it fills (at least 2, at most out_w)."""
    x0, x1, x2, x3 = xs
    y0, y1, y2, y3 = ys
    side = lambda ax, ay, bx, by: math.sqrt((ax - bx) ** 2 + (ay - by) ** 2)  # noqa: E731
    est_h = (side(x1, y1, x2, y2) + side(x3, y3, x0, y0)) / 2.0
    est_w = (side(x0, y0, x1, y1) + side(x2, y2, x3, y3)) / 2.0
    nh = max(2, out_h)
    nw = max(2, min(int(_round_half_away(est_w * (nh - 1) / est_h)) + 1, out_w))
    dx1, dx2, dx3 = x1 - x2, x3 - x2, x0 - x1 + x2 - x3
    dy1, dy2, dy3 = y1 - y2, y3 - y2, y0 - y1 + y2 - y3
    den = dx1 * dy2 - dx2 * dy1 + 1e-5
    m6 = (dx3 * dy2 - dx2 * dy3) / den / (nw - 1)
    m7 = (dx1 * dy3 - dx3 * dy1) / den / (nh - 1)
    m3 = (y1 - y0 + m6 * (nw - 1) * y1) / (nw - 1)
    m4 = (y3 - y0 + m7 * (nh - 1) * y3) / (nh - 1)
    m0 = (x1 - x0 + m6 * (nw - 1) * x1) / (nw - 1)
    m1 = (x3 - x0 + m7 * (nh - 1) * x3) / (nh - 1)
    return [m0, m1, x0, m3, m4, y0, m6, m7, 1.0]


def _in_quad(x, y, xs, ys):
    """Whether the points (x, y) lie in the quadrilateral (on its edges included, within 1e-4)."""
    on_edge = torch.zeros_like(x, dtype=torch.bool)
    crossings = torch.zeros_like(x, dtype=torch.int64)
    for i in range(4):
        xs_, ys_, xe, ye = xs[i], ys[i], xs[(i + 1) % 4], ys[(i + 1) % 4]
        if abs(ys_ - ye) < _QUAD_EPS:
            on_edge |= ((y - ys_).abs() < _QUAD_EPS) & _ge(x, min(xs_, xe)) & _ge(max(xs_, xe), x)
            continue
        cross_x = (y - ys_) * (xe - xs_) / (ye - ys_) + xs_
        within = _ge(y, min(ys_, ye)) & _ge(max(ys_, ye), y)
        on_edge |= ((cross_x - x).abs() < _QUAD_EPS) & within
        strictly = (y > min(ys_, ye)) & (y <= max(ys_, ye))
        crossings += (strictly & (cross_x > x)).to(torch.int64)
    return on_edge | (crossings % 2 == 1)


def _roi_perspective_transform(ins, a):
    """Each quadrilateral roi (8 coordinates, times spatial_scale) warped to transformed_height x
    transformed_width by fluid 1.8's homography, sampled bilinearly; points outside the roi or more
    than half a pixel off the map give 0 (Mask 0). TransformMatrix: each roi's 3x3 matrix."""
    x, rois = ins["X"][0], ins["ROIs"][0]
    n, channels, height, width = x.shape
    oh, ow, scale = a["transformed_height"], a["transformed_width"], a["spatial_scale"]
    offsets = lod_of(rois)[-1] if lod_of(rois) else [0, rois.shape[0]]
    image = _image_of_rows(offsets)
    dev, dt = x.device, x.dtype
    cols = torch.arange(ow, dtype=torch.float64, device=dev).repeat(oh)
    rows = torch.arange(oh, dtype=torch.float64, device=dev).repeat_interleave(ow)
    outs, masks, matrices = [], [], []
    flat = x.reshape(n, channels, height * width)
    for r, quad in enumerate((rois.detach().to(torch.float64) * scale).tolist()):
        xs, ys = quad[0::2], quad[1::2]
        m = _perspective_matrix(xs, ys, oh, ow)
        matrices.append(m)
        u = m[0] * cols + m[1] * rows + m[2]
        v = m[3] * cols + m[4] * rows + m[5]
        w = m[6] * cols + m[7] * rows + m[8]
        px, py = u / w, v / w
        inside = _in_quad(px, py, xs, ys)
        on_map = ~(_ge(-0.5, px) | _ge(px, width - 0.5) | _ge(-0.5, py) | _ge(py, height - 0.5))
        px = torch.where(_ge(0.0, px), torch.zeros_like(px), px)
        py = torch.where(_ge(0.0, py), torch.zeros_like(py), py)
        x0, y0 = torch.floor(px), torch.floor(py)
        x_last, y_last = _ge(x0, width - 1), _ge(y0, height - 1)
        x0 = torch.where(x_last, torch.full_like(x0, width - 1), x0)
        y0 = torch.where(y_last, torch.full_like(y0, height - 1), y0)
        px = torch.where(x_last, x0, px)
        py = torch.where(y_last, y0, py)
        x1 = torch.where(x_last, x0, x0 + 1)
        y1 = torch.where(y_last, y0, y0 + 1)
        fx, fy = (px - x0).to(dt), (py - y0).to(dt)
        img = flat[image[r]]

        def at(yy, xx):
            return img[:, (yy * width + xx).long()]

        value = (
            (1 - fx) * (1 - fy) * at(y0, x0)
            + fx * (1 - fy) * at(y0, x1)
            + (1 - fx) * fy * at(y1, x0)
            + fx * fy * at(y1, x1)
        )
        keep = inside & on_map
        outs.append(torch.where(keep.to(dev), value, torch.zeros_like(value)).reshape(channels, oh, ow))
        masks.append(keep.to(torch.int32).reshape(1, oh, ow))
    lod = [list(offsets)]
    if not outs:
        empty = torch.zeros((0, channels, oh, ow), dtype=dt, device=dev)
        return {"Out": [empty], "Mask": [torch.zeros((0, 1, oh, ow), dtype=torch.int32, device=dev)],
                "TransformMatrix": [torch.zeros((0, 9), dtype=dt, device=dev)]}  # fmt: skip
    return {
        "Out": [with_lod(torch.stack(outs), lod)],
        "Mask": [torch.stack(masks).to(dev)],
        "TransformMatrix": [torch.tensor(matrices, dtype=dt, device=dev)],
    }


register(
    OpDef(
        "roi_perspective_transform",
        ("X", "ROIs"),
        ("Out", "Mask", "TransformMatrix"),
        {"transformed_height": 1, "transformed_width": 1, "spatial_scale": 1.0},
        lambda ins, a: {
            "Out": [
                ((-1, first(ins, "X").shape[1], a["transformed_height"], a["transformed_width"]), first(ins, "X").dtype)
            ],
            "Mask": [((-1, 1, a["transformed_height"], a["transformed_width"]), "int32")],
            "TransformMatrix": [((-1, 9), first(ins, "X").dtype)],
        },
        _roi_perspective_transform,
        host_inputs=frozenset({"ROIs"}),
        grad=GradDef(("X", "ROIs"), out_grads=("Out",), in_grads=("X",)),
    )
)
