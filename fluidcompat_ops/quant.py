"""Fake quantization ops of fluid 1.8's quantization-aware training (QuantizeTranspiler,
QuantizationTransformPass, ImperativeQuantAware): ``fake_quantize_abs_max``,
``fake_quantize_range_abs_max``, ``fake_quantize_moving_average_abs_max``,
``fake_channel_wise_quantize_abs_max``, ``fake_quantize_dequantize_moving_average_abs_max``,
``moving_average_abs_max_scale``, ``fake_dequantize_max_abs``, ``fake_channel_wise_dequantize_max_abs``;
the inference-side ``dequantize_abs_max`` and ``lookup_table_dequant``.

A fake quantize op finds a scale s, clips X to [-s, s] and maps it onto the integers
``round(X * bin_cnt / s)`` (bin_cnt = 2^(bit_length - 1) - 1, rounding half away from zero as
C++'s round); the dequantize op maps them back, ``X * Scale / max_range``. No gradients: fluid's
transpiler rewires the backward pass around them (a straight-through estimator).
"""

from __future__ import annotations

from fluidcompat.dtypes import VarType
from fluidcompat_ops.registry import OpDef, register
from fluidcompat_ops.shapes import first, require_attrs

torch = None  # NOTE: [Lazy torch] in registry.py
F = None


def _bin_cnt(a) -> int:
    bits = a["bit_length"]
    if not 1 < bits <= 16:
        raise ValueError(f"bit_length must be in (1, 16]. Received: {bits}")
    return (1 << (bits - 1)) - 1


def _round(v):
    """Halves away from zero, as C++'s round."""
    return torch.sign(v) * torch.floor(v.abs() + 0.5)


def _inverse(s):
    """1 / s as fluid's quantizers take it: 1 / (s + 1e-6) for a scale of at most 1e-30 (all zeros)."""
    return torch.where(s <= 1e-30, 1.0 / (s + 1e-6), 1.0 / s)


def _clip_quantize(x, scale, bin_cnt):
    """round(bin_cnt * (1 / s) * clip(x, -s, s)), halves away from zero; ``scale`` one value, or one
    per slice of dim 0 (channel-wise)."""
    s = scale.reshape(()) if scale.numel() == 1 else scale.reshape((-1,) + (1,) * (x.dim() - 1))
    return _round((bin_cnt * _inverse(s)) * torch.minimum(torch.maximum(x, -s), s))


def _abs_max(x):
    return x.abs().max().reshape(1) if x.numel() else torch.zeros(1, dtype=x.dtype, device=x.device)


def _fake_quantize_abs_max(ins, a):
    x = ins["X"][0]
    scale = _abs_max(x)
    return {"Out": [_clip_quantize(x, scale, _bin_cnt(a))], "OutScale": [scale]}


def _fake_quantize_range_abs_max(ins, a):
    """Training: the scale is the largest of the last ``window_size`` batches' abs max (OutScales, a
    ring buffer indexed by Iter): the previous scale unless this batch's is larger, scanned again
    when the batch leaving the window held it. Test: InScale."""
    x, in_scale = ins["X"][0], ins["InScale"][0]
    bin_cnt = _bin_cnt(a)
    if a["is_test"]:
        return {"Out": [_clip_quantize(x, in_scale, bin_cnt)], "OutScale": [in_scale.reshape(1).clone()]}
    window = a["window_size"]
    it = int(ins["Iter"][0].reshape(-1)[0])
    scales = first(ins, "OutScales")
    scales = torch.zeros(window, dtype=x.dtype, device=x.device) if scales is None else scales.reshape(-1).clone()
    cur = _abs_max(x)
    slot = it % window
    removed = float(scales[slot])
    scales[slot] = cur[0]
    scale = float(in_scale.reshape(-1)[0])
    if scale < float(cur[0]):
        scale = float(cur[0])
    elif abs(removed - scale) < 1e-6:
        scale = float(scales[: min(it, window)].max()) if it > 0 else float(cur[0])
    out_scale = torch.tensor([scale], dtype=x.dtype, device=x.device)
    return {"Out": [_clip_quantize(x, out_scale, bin_cnt)], "OutScale": [out_scale], "OutScales": [scales]}


def _fake_quantize_moving_average_abs_max(ins, a):
    """Training: state = rate * state + 1, accum = rate * accum + abs max(X), scale = accum / state.
    Test: InScale."""
    x, in_scale = ins["X"][0], ins["InScale"][0]
    bin_cnt = _bin_cnt(a)
    if a["is_test"]:
        return {"Out": [_clip_quantize(x, in_scale, bin_cnt)], "OutScale": [in_scale.reshape(1).clone()]}
    rate = a["moving_rate"]
    state = rate * ins["InState"][0].reshape(1) + 1.0
    accum = rate * ins["InAccum"][0].reshape(1) + _abs_max(x)
    scale = accum / state
    return {
        "Out": [_clip_quantize(x, scale, bin_cnt)],
        "OutScale": [scale],
        "OutState": [state],
        "OutAccum": [accum],
    }


def _same_and_scalar(ins, *scalars):
    x = first(ins, "X")
    result = {"Out": [(x.shape, x.dtype)]}
    result.update({s: [((1,), x.dtype)] for s in scalars})
    return result


register(
    OpDef(
        "fake_quantize_abs_max",
        ("X",),
        ("Out", "OutScale"),
        {"bit_length": 8},
        lambda ins, a: _same_and_scalar(ins, "OutScale"),
        _fake_quantize_abs_max,
    )
)

register(
    OpDef(
        "fake_quantize_range_abs_max",
        ("X", "InScale", "Iter"),
        ("Out", "OutScale", "OutScales"),
        {"window_size": 10000, "bit_length": 8, "is_test": False},
        lambda ins, a: dict(
            _same_and_scalar(ins, "OutScale"), OutScales=[((a["window_size"],), first(ins, "X").dtype)]
        ),
        _fake_quantize_range_abs_max,
        host_inputs=frozenset({"Iter"}),
        reads_outputs=frozenset({"OutScales"}),
    )
)

register(
    OpDef(
        "fake_quantize_moving_average_abs_max",
        ("X", "InScale", "InAccum", "InState"),
        ("Out", "OutScale", "OutState", "OutAccum"),
        {"moving_rate": 0.9, "bit_length": 8, "is_test": False},
        lambda ins, a: _same_and_scalar(ins, "OutScale", "OutState", "OutAccum"),
        _fake_quantize_moving_average_abs_max,
    )
)

register(
    OpDef(
        "fake_dequantize_max_abs",
        ("X", "Scale"),
        ("Out",),
        {"max_range": 127.0},
        lambda ins, a: {"Out": [(first(ins, "X").shape, first(ins, "X").dtype)]},
        lambda ins, a: {"Out": [ins["X"][0] * ins["Scale"][0].reshape(()) / a["max_range"]]},
    )
)


# -- channel-wise, quantize-dequantize and scale-only ops (fluid 1.8's ImperativeQuantAware and PTQ) ------
def _channel_abs_max(x):
    """The abs max of each slice of dim 0 (an output channel of a filter)."""
    return x.abs().reshape(x.shape[0], -1).amax(dim=1) if x.numel() else x.new_zeros(x.shape[:1])


def _fake_channel_wise_quantize_abs_max(ins, a):
    x = ins["X"][0]
    scales = _channel_abs_max(x)
    return {"Out": [_clip_quantize(x, scales, _bin_cnt(a))], "OutScale": [scales]}


register(
    OpDef(
        "fake_channel_wise_quantize_abs_max",
        ("X",),
        ("Out", "OutScale"),
        {"bit_length": 8},
        lambda ins, a: {
            "Out": [(first(ins, "X").shape, first(ins, "X").dtype)],
            "OutScale": [((first(ins, "X").shape[0],), first(ins, "X").dtype)],
        },
        _fake_channel_wise_quantize_abs_max,
    )
)


def _moving_average_scale(x, ins, rate):
    """(scale, state, accum) of a training step: state = rate * state + 1, accum = rate * accum + abs max(X),
    scale = accum / state."""
    state = rate * ins["InState"][0].reshape(1) + 1.0
    accum = rate * ins["InAccum"][0].reshape(1) + _abs_max(x)
    return accum / state, state, accum


def _fake_quantize_dequantize_moving_average_abs_max(ins, a):
    """The moving-average quantizer's Out mapped straight back: round(bin_cnt / s * X) * (s / bin_cnt).
    Testing reads InScale and writes Out alone."""
    x = ins["X"][0]
    bin_cnt = _bin_cnt(a)
    if a["is_test"]:
        scale = ins["InScale"][0].reshape(1)
        result = {}
    else:
        scale, state, accum = _moving_average_scale(x, ins, a["moving_rate"])
        result = {"OutScale": [scale], "OutState": [state], "OutAccum": [accum]}
    s = scale.reshape(())
    result["Out"] = [_round((bin_cnt / s) * torch.minimum(torch.maximum(x, -s), s)) * (s / bin_cnt)]
    return result


register(
    OpDef(
        "fake_quantize_dequantize_moving_average_abs_max",
        ("X", "InScale", "InAccum", "InState"),
        ("Out", "OutScale", "OutState", "OutAccum"),
        {"moving_rate": 0.9, "bit_length": 8, "is_test": False},
        lambda ins, a: _same_and_scalar(ins, "OutScale", "OutState", "OutAccum"),
        _fake_quantize_dequantize_moving_average_abs_max,
        optional_inputs=frozenset({"InAccum", "InState"}),
    )
)


def _moving_average_abs_max_scale(ins, a):
    """Out is X; training also updates the moving-average scale (OutScale, OutState, OutAccum), which
    testing leaves unwritten."""
    x = ins["X"][0]
    if a["is_test"]:
        return {"Out": [x.clone()]}
    scale, state, accum = _moving_average_scale(x, ins, a["moving_rate"])
    return {"Out": [x.clone()], "OutScale": [scale], "OutState": [state], "OutAccum": [accum]}


register(
    OpDef(
        "moving_average_abs_max_scale",
        ("X", "InAccum", "InState"),
        ("Out", "OutScale", "OutState", "OutAccum"),
        {"moving_rate": 0.9, "is_test": False},
        lambda ins, a: _same_and_scalar(ins, "OutScale", "OutState", "OutAccum"),
        _moving_average_abs_max_scale,
        optional_inputs=frozenset({"InAccum", "InState"}),
    )
)


def _max_range(bits: int) -> float:
    return float((1 << (bits - 1)) - 1)


def _fake_channel_wise_dequantize_max_abs(ins, a):
    """One scale: X[i] * Scales[0][i] / max_range (a filter's output channels). Two: X[:, j] * Scales[0][j]
    / max_range0 * Scales[1] / max_range1 (a conv output's channels, then the activation's scale)."""
    x, scales, bits = ins["X"][0], ins["Scales"], list(a["quant_bits"])
    if len(scales) == 1:
        s = scales[0].reshape((-1,) + (1,) * (x.dim() - 1))
        return {"Out": [x * s / _max_range(bits[0])]}
    if len(scales) != 2 or len(bits) < 2:
        raise ValueError(f"Scales holds one or two tensors, quant_bits as many. Received: {len(scales)}, {bits}")
    s = scales[0].reshape((1, -1) + (1,) * (x.dim() - 2))
    y = x * s / _max_range(bits[0])
    return {"Out": [y * (scales[1].reshape(()) / _max_range(bits[1]))]}


register(
    OpDef(
        "fake_channel_wise_dequantize_max_abs",
        ("X", "Scales"),
        ("Out",),
        {"quant_bits": [8]},
        lambda ins, a: {"Out": [(first(ins, "X").shape, first(ins, "X").dtype)]},
        _fake_channel_wise_dequantize_max_abs,
    )
)


def _dequantize_abs_max_infer(ins, attrs):
    require_attrs(attrs, "max_range")
    return {"Out": [(first(ins, "X").shape, VarType.FP32)]}


register(
    OpDef(
        "dequantize_abs_max",
        ("X", "Scale"),
        ("Out",),
        {},  # max_range: required
        _dequantize_abs_max_infer,
        lambda ins, a: {"Out": [ins["Scale"][0].float().reshape(()) * ins["X"][0].float() / a["max_range"]]},
        doc="int8 or int16 X to float32: X * Scale / max_range.",
    )
)


# -- lookup_table_dequant: an embedding whose rows are 8-bit quantized -------------------------------------
def _lookup_dequant_infer(ins, a):
    ids, w = first(ins, "Ids"), first(ins, "W")
    if ids.shape[-1] not in (1, -1) or len(w.shape) != 2:
        raise ValueError(f"Ids' last dimension must be 1 and W 2-D. Received: Ids.shape={ids.shape}, W.shape={w.shape}")
    width = (w.shape[1] - 2) * 4 if w.shape[1] >= 0 else -1
    return {"Out": [(tuple(ids.shape[:-1]) + (width,), w.dtype)]}


def _lookup_table_dequant(ins, a):
    """Each row of W is [min, max, then 4 bytes a float32]: the bytes b (in memory order) dequantize to
    min + b * (max - min) / 256. Ids' padding_idx rows are zeros."""
    w, ids = ins["W"][0], ins["Ids"][0]
    flat = ids.reshape(-1).long()
    if flat.numel():
        lo, hi = int(flat.min()), int(flat.max())
        pad = a["padding_idx"]
        bad = [v for v in (lo, hi) if (v < 0 or v >= w.shape[0]) and v != pad]
        if bad:
            raise ValueError(f"Ids of lookup_table_dequant must be in [0, {w.shape[0]}). Received: {bad[0]}")
    keep = flat != a["padding_idx"] if a["padding_idx"] != -1 else None
    rows = w.float()[flat if keep is None else torch.where(keep, flat, 0)]
    low, high = rows[:, :1], rows[:, 1:2]
    codes = rows[:, 2:].contiguous().view(torch.uint8).float()
    res = codes * ((high - low) / 256.0) + low
    if keep is not None:
        res = res * keep.unsqueeze(1)
    return {"Out": [res.reshape(tuple(ids.shape[:-1]) + (res.shape[1],)).to(w.dtype)]}


register(
    OpDef(
        "lookup_table_dequant",
        ("W", "Ids"),
        ("Out",),
        {"padding_idx": -1},
        _lookup_dequant_infer,
        _lookup_table_dequant,
    )
)
