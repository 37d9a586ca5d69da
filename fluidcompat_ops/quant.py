"""Fake quantization ops of fluid 1.8's quantization-aware training (QuantizeTranspiler):
``fake_quantize_abs_max``, ``fake_quantize_range_abs_max``, ``fake_quantize_moving_average_abs_max``
and ``fake_dequantize_max_abs``.

A fake quantize op finds a scale s, clips X to [-s, s] and maps it onto the integers
``round(X * bin_cnt / s)`` (bin_cnt = 2^(bit_length - 1) - 1, rounding half away from zero as
C++'s round); the dequantize op maps them back, ``X * Scale / max_range``. No gradients: fluid's
transpiler rewires the backward pass around them (a straight-through estimator).
"""

from __future__ import annotations

from fluidcompat_ops.registry import OpDef, register
from fluidcompat_ops.shapes import first

torch = None  # NOTE: [Lazy torch] in registry.py
F = None


def _bin_cnt(a) -> int:
    bits = a["bit_length"]
    if not 1 < bits <= 16:
        raise ValueError(f"bit_length must be in (1, 16]. Received: {bits}")
    return (1 << (bits - 1)) - 1


def _clip_quantize(x, scale, bin_cnt):
    """round(bin_cnt / s * clip(x, -s, s)), halves away from zero."""
    s = scale.reshape(())
    v = (bin_cnt / s) * torch.minimum(torch.maximum(x, -s), s)
    return torch.sign(v) * torch.floor(v.abs() + 0.5)


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
