"""``paddle.nn.functional``: activations, losses, linear/conv/pool on Paddle 2 tensors (torch math)."""

from __future__ import annotations

from fluidcompat.compat.tensor import flatten, place_of, unwrap, wrap

__all__ = [
    "avg_pool2d",
    "conv2d",
    "cross_entropy",
    "dropout",
    "flatten",
    "gelu",
    "leaky_relu",
    "linear",
    "log_softmax",
    "max_pool2d",
    "mse_loss",
    "one_hot",
    "relu",
    "sigmoid",
    "softmax",
    "softmax_with_cross_entropy",
    "square_error_cost",
    "tanh",
]


def _F():
    import torch.nn.functional as F

    return F


def _torch():
    import torch

    return torch


def relu(x, name=None):
    return wrap(_F().relu(x._t), x.place)


def sigmoid(x, name=None):
    return wrap(_torch().sigmoid(x._t), x.place)


def tanh(x, name=None):
    return wrap(_torch().tanh(x._t), x.place)


def leaky_relu(x, negative_slope=0.01, name=None):
    return wrap(_F().leaky_relu(x._t, negative_slope), x.place)


def gelu(x, approximate=False, name=None):
    return wrap(_F().gelu(x._t, approximate="tanh" if approximate else "none"), x.place)


def softmax(x, axis=-1, dtype=None, name=None):
    t = x._t if dtype is None else x._t.to(getattr(_torch(), str(dtype).replace("paddle.", "")))
    return wrap(_F().softmax(t, dim=axis), x.place)


def log_softmax(x, axis=-1, dtype=None, name=None):
    return wrap(_F().log_softmax(x._t, dim=axis), x.place)


def linear(x, weight, bias=None, name=None):
    """x @ weight + bias, with weight of shape [in_features, out_features] as in Paddle."""
    out = _torch().matmul(x._t, weight._t)
    if bias is not None:
        out = out + bias._t
    return wrap(out, place_of(x))


def _pair(v):
    return tuple(v) if isinstance(v, (list, tuple)) else (int(v), int(v))


def _padding(padding):
    if isinstance(padding, str):
        if padding.upper() not in ("SAME", "VALID"):
            raise ValueError(f"padding must be 'SAME', 'VALID', an int or a list. Received: {padding!r}")
        return padding.lower()
    if isinstance(padding, (list, tuple)) and len(padding) == 4:  # [top, bottom, left, right]
        if padding[0] != padding[1] or padding[2] != padding[3]:
            raise ValueError(f"asymmetric padding {list(padding)} is not supported")
        return (int(padding[0]), int(padding[2]))
    return _pair(padding)


def _check_nchw(x, op, data_format):
    if data_format != "NCHW":
        raise ValueError(f"{op}: data_format {data_format!r} is not supported: fluidcompat takes 'NCHW'")
    if x._t.dim() != 4:
        raise ValueError(f"{op}: the input must be 4-D (N, C, H, W). Received: shape {x.shape}")


def conv2d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1, data_format="NCHW", name=None):
    _check_nchw(x, "conv2d", data_format)
    if x.shape[1] != weight.shape[1] * groups:
        raise ValueError(
            f"conv2d: the input has {x.shape[1]} channels but the weight (shape {weight.shape}, groups={groups}) "
            f"expects {weight.shape[1] * groups}"
        )
    out = _F().conv2d(
        x._t, weight._t, None if bias is None else bias._t, _pair(stride), _padding(padding), _pair(dilation), groups
    )
    return wrap(out, x.place)


def max_pool2d(
    x, kernel_size, stride=None, padding=0, return_mask=False, ceil_mode=False, data_format="NCHW", name=None
):
    _check_nchw(x, "max_pool2d", data_format)
    stride = kernel_size if stride is None else stride
    out = _F().max_pool2d(x._t, _pair(kernel_size), _pair(stride), _pair(padding), 1, ceil_mode, return_mask)
    if return_mask:
        return wrap(out[0], x.place), wrap(out[1], x.place)
    return wrap(out, x.place)


def avg_pool2d(x, kernel_size, stride=None, padding=0, ceil_mode=False, exclusive=True, divisor_override=None,
               data_format="NCHW", name=None):  # fmt: skip
    _check_nchw(x, "avg_pool2d", data_format)
    stride = kernel_size if stride is None else stride
    out = _F().avg_pool2d(
        x._t, _pair(kernel_size), _pair(stride), _pair(padding), ceil_mode, not exclusive, divisor_override
    )
    return wrap(out, x.place)


def dropout(x, p=0.5, axis=None, training=True, mode="upscale_in_train", name=None):
    if not training or p == 0:
        return x if mode == "upscale_in_train" else wrap(x._t * (1 - p), x.place)
    if mode == "upscale_in_train":
        return wrap(_F().dropout(x._t, p, True), x.place)
    mask = (_torch().rand_like(x._t) >= p).to(x._t.dtype)
    return wrap(x._t * mask, x.place)


def one_hot(x, num_classes, name=None):
    return wrap(_F().one_hot(x._t.long(), num_classes).to(_torch().float32), x.place)


def _reduced(loss, reduction, op):
    if reduction == "mean":
        return loss.mean().reshape(1)
    if reduction == "sum":
        return loss.sum().reshape(1)
    if reduction == "none":
        return loss
    raise ValueError(f"{op}: reduction must be 'mean', 'sum' or 'none'. Received: {reduction!r}")


def cross_entropy(input, label, weight=None, ignore_index=-100, reduction="mean", soft_label=False, axis=-1,
                  use_softmax=True, name=None):  # fmt: skip
    """Softmax (unless ``use_softmax=False``) and the negative log-likelihood of ``label``: class ids of
    shape [N] or [N, 1] (int64), or with ``soft_label`` distributions like ``input``. ``reduction='none'``
    keeps the label's shape ([N, 1] for [N, 1] labels), as Paddle does."""
    torch = _torch()
    x, y = input._t, unwrap(label)
    logp = torch.log_softmax(x, dim=axis) if use_softmax else torch.log(x)
    if soft_label:
        loss = -(y * logp).sum(dim=axis, keepdim=True)
        return wrap(_reduced(loss, reduction, "cross_entropy"), input.place)
    if y.dtype not in (torch.int64, torch.int32):
        raise TypeError(f"cross_entropy: hard labels must be int64 (or int32). Received: {y.dtype}")
    keep = y.dim() == x.dim()
    if keep and y.shape[axis] != 1:
        raise ValueError(
            f"cross_entropy: the label's shape {list(y.shape)} should be {list(x.shape[:-1])} or with 1 last"
        )
    ids = y.squeeze(axis) if keep else y
    if list(ids.shape) != list(x.shape[:-1]):
        raise ValueError(
            f"cross_entropy: the input has shape {list(x.shape)} but the label {list(y.shape)}: expected "
            f"{list(x.shape[:-1])} or {list(x.shape[:-1]) + [1]}"
        )
    if ids.numel() and int(ids.max()) >= x.shape[axis]:
        raise ValueError(f"cross_entropy: a label is {int(ids.max())}, beyond the {x.shape[axis]} classes")
    valid = ids != ignore_index
    safe = torch.where(valid, ids, torch.zeros_like(ids)).long()
    loss = -logp.gather(axis, safe.unsqueeze(axis)).squeeze(axis)
    w = None
    if weight is not None:
        w = unwrap(weight)[safe]
        loss = loss * w
    loss = loss * valid.to(loss.dtype)
    if reduction == "mean":
        denom = (w * valid.to(w.dtype)).sum() if w is not None else valid.sum().to(loss.dtype)
        return wrap((loss.sum() / denom).reshape(1), input.place)
    if keep:
        loss = loss.unsqueeze(axis)
    return wrap(_reduced(loss, reduction, "cross_entropy"), input.place)


def softmax_with_cross_entropy(logits, label, soft_label=False, ignore_index=-100, numeric_stable_mode=True,
                               return_softmax=False, axis=-1):  # fmt: skip
    loss = cross_entropy(logits, label, ignore_index=ignore_index, reduction="none", soft_label=soft_label, axis=axis)
    if loss._t.dim() != logits._t.dim():
        loss = wrap(loss._t.unsqueeze(axis), logits.place)
    return (loss, softmax(logits, axis)) if return_softmax else loss


def mse_loss(input, label, reduction="mean", name=None):
    return wrap(_reduced((input._t - unwrap(label)) ** 2, reduction, "mse_loss"), input.place)


def square_error_cost(input, label):
    return wrap((input._t - unwrap(label)) ** 2, input.place)


def __getattr__(name):  # Paddle 2.x names fluidcompat lacks: what to use instead
    from fluidcompat.compat.names import module_getattr

    return module_getattr("paddle.nn.functional")(name)
