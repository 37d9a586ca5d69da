"""``fluid.layers.detection``: priors and anchors: prior_box, density_prior_box, anchor_generator,
and SSD's multi_box_head (priors plus the location and confidence convolutions of each feature map)."""

from __future__ import annotations

from fluidcompat.framework import layer
from fluidcompat.layer_helper import check_variable
from fluidcompat.layers._common import _append

__all__ = [
    "prior_box",
    "density_prior_box",
    "anchor_generator",
    "multi_box_head",
]


_VARIANCE = [0.1, 0.1, 0.2, 0.2]


def _as_list(v):
    return list(v) if isinstance(v, (list, tuple)) else [v]


def _steps(steps):
    if not isinstance(steps, (list, tuple)) or len(steps) != 2:
        raise ValueError(
            f"steps should be a list or tuple with length 2, (step_width, step_height). Received: {steps!r}"
        )
    return float(steps[0]), float(steps[1])


@layer
def prior_box(
    input,
    image,
    min_sizes,
    max_sizes=None,
    aspect_ratios=[1.0],  # noqa: B006  (fluid's signature)
    variance=_VARIANCE,
    flip=False,
    clip=False,
    steps=[0.0, 0.0],  # noqa: B006
    offset=0.5,
    name=None,
    min_max_aspect_ratios_order=False,
):
    """SSD prior boxes of each cell of ``input`` (a feature map of ``image``): returns (boxes,
    variances), each [H, W, priors per cell, 4] in image-relative coordinates."""
    check_variable(input, "input", "prior_box")
    check_variable(image, "image", "prior_box")
    step_w, step_h = _steps(steps)
    attrs = {
        "min_sizes": [float(v) for v in _as_list(min_sizes)],
        "aspect_ratios": [float(v) for v in _as_list(aspect_ratios)],
        "variances": [float(v) for v in variance],
        "flip": flip,
        "clip": clip,
        "step_w": step_w,
        "step_h": step_h,
        "offset": offset,
        "min_max_aspect_ratios_order": min_max_aspect_ratios_order,
    }
    if max_sizes is not None and _as_list(max_sizes):
        attrs["max_sizes"] = [float(v) for v in _as_list(max_sizes)]
        if len(attrs["max_sizes"]) != len(attrs["min_sizes"]):
            raise ValueError(
                f"prior_box: max_sizes must have as many values as min_sizes. Received: {attrs['max_sizes']} and "
                f"{attrs['min_sizes']}"
            )
    boxes, var = _append("prior_box", {"Input": [input], "Image": [image]}, ("Boxes", "Variances"), attrs, name)
    boxes.stop_gradient = var.stop_gradient = True
    return boxes, var


@layer
def density_prior_box(
    input,
    image,
    densities=None,
    fixed_sizes=None,
    fixed_ratios=None,
    variance=_VARIANCE,
    clip=False,
    steps=[0.0, 0.0],  # noqa: B006  (fluid's signature)
    offset=0.5,
    flatten_to_2d=False,
    name=None,
):
    """Density priors: per cell, each fixed size at each fixed ratio repeated on a density x density
    grid over the cell. Returns (boxes, variances): [H, W, priors per cell, 4], or [H * W * priors, 4]
    with ``flatten_to_2d``."""
    check_variable(input, "input", "density_prior_box")
    check_variable(image, "image", "density_prior_box")
    for value, what in ((densities, "densities"), (fixed_sizes, "fixed_sizes"), (fixed_ratios, "fixed_ratios")):
        if not isinstance(value, (list, tuple)):
            raise TypeError(f"{what} should be a list or a tuple. Received: {value!r}")
    if len(densities) != len(fixed_sizes):
        raise ValueError(
            f"density_prior_box: densities and fixed_sizes must have as many values. Received: {list(densities)} and "
            f"{list(fixed_sizes)}"
        )
    step_w, step_h = _steps(steps)
    attrs = {
        "variances": [float(v) for v in variance],
        "clip": clip,
        "step_w": step_w,
        "step_h": step_h,
        "offset": offset,
        "densities": [int(v) for v in densities],
        "fixed_sizes": [float(v) for v in fixed_sizes],
        "fixed_ratios": [float(v) for v in fixed_ratios],
        "flatten_to_2d": flatten_to_2d,
    }
    boxes, var = _append("density_prior_box", {"Input": [input], "Image": [image]}, ("Boxes", "Variances"), attrs, name)
    boxes.stop_gradient = var.stop_gradient = True
    return boxes, var


@layer
def anchor_generator(
    input, anchor_sizes=None, aspect_ratios=None, variance=_VARIANCE, stride=None, offset=0.5, name=None
):
    """Faster R-CNN anchors of each cell of ``input``: for each aspect ratio, each anchor size.
    Returns (anchors, variances), each [H, W, anchors per cell, 4] in the image's pixels."""
    check_variable(input, "input", "anchor_generator")
    if not isinstance(stride, (list, tuple)) or len(stride) != 2:
        raise ValueError(
            f"stride should be a list or tuple ,with length two, (stride_width, stride_height). Received: {stride!r}"
        )
    attrs = {
        "anchor_sizes": [float(v) for v in _as_list(anchor_sizes)],
        "aspect_ratios": [float(v) for v in _as_list(aspect_ratios)],
        "variances": [float(v) for v in variance],
        "stride": [float(v) for v in stride],
        "offset": offset,
    }
    anchors, var = _append("anchor_generator", {"Input": [input]}, ("Anchors", "Variances"), attrs, name)
    anchors.stop_gradient = var.stop_gradient = True
    return anchors, var


def _per_layer(values, n, what):
    if values is not None and not (isinstance(values, (list, tuple)) and len(values) == n):
        raise ValueError(f"{what} should be list or tuple, and the length of inputs and {what} should be the same.")
    return values


@layer
def multi_box_head(
    inputs,
    image,
    base_size,
    num_classes,
    aspect_ratios,
    min_ratio=None,
    max_ratio=None,
    min_sizes=None,
    max_sizes=None,
    steps=None,
    step_w=None,
    step_h=None,
    offset=0.5,
    variance=_VARIANCE,
    flip=True,
    clip=False,
    kernel_size=1,
    pad=0,
    stride=1,
    name=None,
    min_max_aspect_ratios_order=False,
):
    """SSD's head over several feature maps: per map its priors (``prior_box``) and two convolutions
    predicting each prior's 4 box offsets and ``num_classes`` scores. Returns (locations [N, priors,
    4], confidences [N, priors, num_classes], boxes [priors, 4], variances [priors, 4]). Without
    ``min_sizes``/``max_sizes`` (three maps or more) the sizes step evenly from ``min_ratio`` to
    ``max_ratio`` percent of ``base_size``, after a first map of 10% and 20%."""
    from fluidcompat.layers import nn, tensor

    if not isinstance(inputs, (list, tuple)):
        raise ValueError("inputs should be a list or tuple.")
    count = len(inputs)
    if count <= 2:
        if min_sizes is None or max_sizes is None or len(min_sizes) != count or len(max_sizes) != count:
            raise ValueError(
                f"multi_box_head: with {count} input(s) give min_sizes and max_sizes, one per input. "
                f"Received: min_sizes={min_sizes!r}, max_sizes={max_sizes!r}"
            )
    elif min_sizes is None and max_sizes is None:
        step = int((max_ratio - min_ratio) // (count - 2))
        ratios = range(min_ratio, max_ratio + 1, step)
        min_sizes = [base_size * 0.10] + [base_size * r / 100.0 for r in ratios]
        max_sizes = [base_size * 0.20] + [base_size * (r + step) / 100.0 for r in ratios]
    if aspect_ratios:
        _per_layer(aspect_ratios, count, "aspect_ratios")
    _per_layer(step_h, count, "step_h")
    _per_layer(step_w, count, "step_w")
    if _per_layer(steps, count, "steps") is not None:
        step_w = step_h = steps
    locs, confs, boxes, variances = [], [], [], []
    for i, feat in enumerate(inputs):
        ratio = aspect_ratios[i] if aspect_ratios is not None else []
        step = [step_w[i] if step_w else 0.0, step_h[i] if step_h else 0.0]
        box, var = prior_box(feat, image, _as_list(min_sizes[i]), _as_list(max_sizes[i]), _as_list(ratio), variance,
                             flip, clip, step, offset, None, min_max_aspect_ratios_order)  # fmt: skip
        boxes.append(box)
        variances.append(var)
        per_cell = box.shape[2]
        for width, into in ((4, locs), (num_classes, confs)):
            conv = nn.conv2d(feat, per_cell * width, kernel_size, padding=pad, stride=stride)
            into.append(tensor.flatten(tensor.transpose(conv, perm=[0, 2, 3, 1]), axis=1))
    if len(boxes) == 1:
        box, var, loc, conf = boxes[0], variances[0], locs[0], confs[0]
    else:
        box = tensor.concat([tensor.flatten(b, axis=3) for b in boxes])
        var = tensor.concat([tensor.flatten(v, axis=3) for v in variances])
        loc = tensor.reshape(tensor.concat(locs, axis=1), shape=[0, -1, 4])
        conf = tensor.reshape(tensor.concat(confs, axis=1), shape=[0, -1, num_classes])
    box.stop_gradient = var.stop_gradient = True
    return loc, conf, box, var
