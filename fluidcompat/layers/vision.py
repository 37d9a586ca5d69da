"""``fluid.layers`` interpolation and vision: image_resize and its resize_* / interpolate forms,
pixel_shuffle, shuffle_channel, space_to_depth, unfold and im2sequence, temporal_shift, grid_sampler
and affine_grid, random_crop, similarity_focus, fsp_matrix, and region-of-interest pooling: roi_pool,
roi_align, prroi_pool, psroi_pool, deformable_roi_pooling."""

from __future__ import annotations

import warnings

import numpy as np

from fluidcompat import unique_name
from fluidcompat.framework import Variable, layer
from fluidcompat.layer_helper import LayerHelper, check_dtype, check_variable
from fluidcompat.layers._common import _one
from fluidcompat.layers.conv import _pair

__all__ = [
    "image_resize",
    "interpolate",
    "resize_bilinear",
    "resize_nearest",
    "resize_trilinear",
    "image_resize_short",
    "pixel_shuffle",
    "shuffle_channel",
    "space_to_depth",
    "unfold",
    "im2sequence",
    "temporal_shift",
    "grid_sampler",
    "affine_grid",
    "random_crop",
    "roi_pool",
    "roi_align",
    "prroi_pool",
    "psroi_pool",
    "deformable_roi_pooling",
    "similarity_focus",
    "fsp_matrix",
]


# -- resizing ---------------------------------------------------------------------------------------
_RESAMPLE = {"BILINEAR": ("bilinear_interp", 2), "NEAREST": ("nearest_interp", 2), "TRILINEAR": ("trilinear_interp", 3)}


@layer
def image_resize(
    input,
    out_shape=None,
    scale=None,
    name=None,
    resample="BILINEAR",
    actual_shape=None,
    align_corners=True,
    align_mode=1,
    data_format="NCHW",
):
    if resample not in _RESAMPLE:
        raise ValueError("The 'resample' of image_resize can only be 'BILINEAR', 'TRILINEAR' or 'NEAREST' currently.")
    op_type, nd = _RESAMPLE[resample]
    if resample in ("BILINEAR", "NEAREST") and len(input.shape) != 4:
        raise ValueError("'BILINEAR' and 'NEAREST' only support 4-D tensor.")
    if resample == "TRILINEAR" and len(input.shape) != 5:
        raise ValueError("'TRILINEAR'only support 5-D tensor.")
    if out_shape is None and scale is None:
        raise ValueError("One of out_shape and scale must not be None.")
    formats = ("NCHW", "NHWC") if len(input.shape) == 4 else ("NCDHW", "NDHWC")
    if len(input.shape) in (4, 5) and data_format not in formats:
        raise ValueError(
            f"Got wrong value for param `data_format`: {data_format} received but only `{formats[0]}` or "
            f"`{formats[1]}` supported for {len(input.shape)}-D input."
        )
    attrs = {"align_corners": align_corners, "align_mode": align_mode, "interp_method": op_type.split("_")[0]}
    attrs["data_layout"] = "NHWC" if data_format in ("NHWC", "NDHWC") else "NCHW"  # fluid's two values
    ins = {"X": [input]}
    if actual_shape is not None:
        ins["OutSize"] = [actual_shape]
    if isinstance(out_shape, Variable):
        ins["OutSize"] = [out_shape]
    elif out_shape is not None:
        if not isinstance(out_shape, (list, tuple)):
            raise TypeError("out_shape should be a list or tuple or Variable.")
        if len(out_shape) != nd:
            raise ValueError(f"out_shape of {op_type} must have {nd} values. Received: {list(out_shape)}")
        if any(not isinstance(d, Variable) and int(d) <= 0 for d in out_shape):
            raise ValueError(f"Each dimension size given in out_shape must be greater than 0. Received: {out_shape}")
        from fluidcompat.layers.creation import _host_ints, _known_ints

        if any(isinstance(d, Variable) for d in out_shape):
            # SizeTensor: one int32 [1] tensor per output dimension, a constant one where the size is known
            for d in out_shape:
                if isinstance(d, Variable):
                    d.stop_gradient = True
            ins["SizeTensor"] = _host_ints(out_shape)
        dims = _known_ints(out_shape)
        attrs.update(dict(zip(["out_d", "out_h", "out_w"][3 - nd :], dims)))
    elif isinstance(scale, Variable):
        ins["Scale"] = [scale]
    else:
        if not isinstance(scale, (int, float)):  # fluid 1.8.5's check and text
            raise TypeError("Attr(scale)'s type should be float, int or Variable.")
        if float(scale) <= 0:
            raise ValueError("Attr(scale) should be greater than zero.")
        attrs["scale"] = float(scale)
    if isinstance(actual_shape, Variable):  # (fluid 1.8's notice; the size is still taken from it)
        warnings.warn(
            "actual_shape will be deprecated, it is recommended to use out_shape instead of actual_shape to "
            "specify output shape dynamically.",
            stacklevel=3,
        )
        actual_shape.stop_gradient = True
    return _one(op_type, ins, attrs, name=name, helper_name=op_type)


@layer
def interpolate(
    input,
    out_shape=None,
    scale=None,
    name=None,
    resample="BILINEAR",
    actual_shape=None,
    align_corners=True,
    align_mode=1,
    data_format="NCHW",
):
    return image_resize(input, out_shape, scale, name, resample, actual_shape, align_corners, align_mode, data_format)


@layer
def resize_bilinear(
    input,
    out_shape=None,
    scale=None,
    name=None,
    actual_shape=None,
    align_corners=True,
    align_mode=1,
    data_format="NCHW",
):
    return image_resize(input, out_shape, scale, name, "BILINEAR", actual_shape, align_corners, align_mode, data_format)


@layer
def resize_nearest(
    input, out_shape=None, scale=None, name=None, actual_shape=None, align_corners=True, data_format="NCHW"
):
    return image_resize(input, out_shape, scale, name, "NEAREST", actual_shape, align_corners, 1, data_format)


@layer
def resize_trilinear(
    input,
    out_shape=None,
    scale=None,
    name=None,
    actual_shape=None,
    align_corners=True,
    align_mode=1,
    data_format="NCDHW",
):
    return image_resize(
        input, out_shape, scale, name, "TRILINEAR", actual_shape, align_corners, align_mode, data_format
    )


@layer
def image_resize_short(input, out_short_len, resample="BILINEAR"):
    h, w = input.shape[2], input.shape[3]
    if h < 0 or w < 0:
        raise ValueError(f"image_resize_short needs a known height and width. Received: {input.shape}")
    short, long_ = (h, w) if h < w else (w, h)
    long_out = int(long_ * out_short_len / short + 0.5)
    out_shape = [out_short_len, long_out] if h < w else [long_out, out_short_len]
    return image_resize(input, out_shape, resample=resample)


# -- rearranging pixels, patches, frames ------------------------------------------------------------
@layer
def pixel_shuffle(x, upscale_factor):
    return _one("pixel_shuffle", {"X": [x]}, {"upscale_factor": upscale_factor})


@layer
def shuffle_channel(x, group, name=None):
    return _one("shuffle_channel", {"X": [x]}, {"group": group}, name=name)


@layer
def space_to_depth(x, blocksize, name=None):
    return _one("space_to_depth", {"X": [x]}, {"blocksize": blocksize}, name=name)


@layer
def unfold(x, kernel_sizes, strides=1, paddings=0, dilations=1, name=None):
    paddings = [paddings] * 4 if isinstance(paddings, int) else list(paddings)
    if len(paddings) == 2:
        paddings = paddings * 2
    attrs = {
        "kernel_sizes": _pair(kernel_sizes, "kernel_sizes"),
        "strides": _pair(strides, "strides"),
        "paddings": paddings,
        "dilations": _pair(dilations, "dilations"),
    }
    return _one("unfold", {"X": [x]}, attrs, out_slot="Y", name=name)


@layer
def im2sequence(input, filter_size=1, stride=1, padding=0, input_image_size=None, out_stride=1, name=None):
    """Each image's patches as one LoD sequence of rows [patches, C * kh * kw]; with
    ``input_image_size`` ([N, 2]: each image's real height and width) and ``out_stride``, an image
    has the patches its real size gives."""
    padding = [padding] * 4 if isinstance(padding, int) else list(padding)
    if len(padding) == 2:
        padding = padding * 2
    attrs = {"kernels": _pair(filter_size, "filter_size"), "strides": _pair(stride, "stride"), "paddings": padding}
    attrs["out_stride"] = _pair(out_stride, "out_stride")
    inputs = {"X": [input]} if input_image_size is None else {"X": [input], "Y": [input_image_size]}
    out = _one("im2sequence", inputs, attrs, name=name)
    out._lod_level = 1
    return out


@layer
def temporal_shift(x, seg_num, shift_ratio=0.25, name=None):
    return _one("temporal_shift", {"X": [x]}, {"seg_num": seg_num, "shift_ratio": shift_ratio}, name=name)


# -- sampling grids, random crops -------------------------------------------------------------------
@layer
def grid_sampler(x, grid, name=None):
    return _one("grid_sampler", {"X": [x], "Grid": [grid]}, out_slot="Output", name=name)


@layer
def affine_grid(theta, out_shape, name=None):
    ins = {"Theta": [theta]}
    attrs = {}
    if isinstance(out_shape, Variable):
        ins["OutputShape"] = [out_shape]
    else:
        attrs["output_shape"] = [int(d) for d in out_shape]
    return _one("affine_grid", ins, attrs, out_slot="Output", name=name)


@layer
def random_crop(x, shape, seed=None):
    """Crop ``x``'s last ``len(shape)`` dims to ``shape`` at random offsets, fresh each run: as in fluid
    1.8.5 the seed is carried from run to run in ``seed`` (a Variable) or, for an int or None, in a
    persistable ``random_crop_seed_N`` that starts from it."""
    helper = LayerHelper("random_crop")
    out = helper.create_variable_for_type_inference(dtype=x.dtype)
    attrs = {"shape": list(shape), "startup_seed": 0}
    if seed is None:
        seed = int(np.random.randint(-65536, 65536))  # numpy's global generator, as fluid 1.8's layer
    if isinstance(seed, (int, np.integer)) and not isinstance(seed, bool):
        attrs["startup_seed"] = int(seed)
        seed = helper.create_variable(name=unique_name.generate("random_crop_seed"), dtype="int64", persistable=True)
    elif not isinstance(seed, Variable):
        raise ValueError(f"'seed' must be a Variable or an int. Received: {type(seed).__name__}")
    helper.append_op(
        type="random_crop", inputs={"X": [x], "Seed": [seed]}, outputs={"Out": [out], "SeedOut": [seed]}, attrs=attrs
    )
    return out


# -- regions of interest ----------------------------------------------------------------------------
def _roi(op_type, input, rois, attrs, rois_lod, argmax):
    helper = LayerHelper(op_type)
    out = helper.create_variable_for_type_inference(dtype=input.dtype)
    outs = {"Out": [out]}
    if argmax:
        outs["Argmax"] = [helper.create_variable_for_type_inference(dtype="int64")]
    ins = {"X": [input], "ROIs": [rois]}
    if rois_lod is not None:
        ins["RoisLod"] = [rois_lod]
    helper.append_op(type=op_type, inputs=ins, outputs=outs, attrs=attrs)
    return out


@layer
def roi_pool(input, rois, pooled_height=1, pooled_width=1, spatial_scale=1.0, rois_lod=None):
    """Max pooling over each [x1, y1, x2, y2] region; ``rois_lod`` (offsets per image) says which
    image each region is in (all in image 0 without it)."""
    attrs = {"pooled_height": pooled_height, "pooled_width": pooled_width, "spatial_scale": spatial_scale}
    return _roi("roi_pool", input, rois, attrs, rois_lod, True)


@layer
def roi_align(
    input, rois, pooled_height=1, pooled_width=1, spatial_scale=1.0, sampling_ratio=-1, name=None, rois_lod=None
):
    """Bilinear RoI Align over each [x1, y1, x2, y2] region (fluid 1.8's, without half-pixel offset)."""
    attrs = {
        "pooled_height": pooled_height,
        "pooled_width": pooled_width,
        "spatial_scale": spatial_scale,
        "sampling_ratio": sampling_ratio,
    }
    return _roi("roi_align", input, rois, attrs, rois_lod, False)


@layer
def prroi_pool(input, rois, spatial_scale=1.0, pooled_height=1, pooled_width=1, batch_roi_nums=None, name=None):
    """Precise RoI pooling: each bin's exact average of the bilinear-interpolated feature map
    (op ``prroi_pool``); ``batch_roi_nums`` says how many regions each image has."""
    attrs = {"spatial_scale": spatial_scale, "pooled_height": pooled_height, "pooled_width": pooled_width}
    helper = LayerHelper("prroi_pool", name=name)
    out = helper.create_variable_for_type_inference(dtype=input.dtype)
    ins = {"X": [input], "ROIs": [rois]}
    if batch_roi_nums is not None:
        ins["BatchRoINums"] = [batch_roi_nums]
    helper.append_op(type="prroi_pool", inputs=ins, outputs={"Out": [out]}, attrs=attrs)
    return out


@layer
def psroi_pool(input, rois, output_channels, spatial_scale, pooled_height, pooled_width, name=None):
    """Position-sensitive roi pooling (R-FCN, op ``psroi_pool``): ``input`` [N, output_channels *
    pooled_height * pooled_width, H, W], ``rois`` [R, 4] (x1, y1, x2, y2) as a LoDTensor with the rois
    of each image. Bin (i, j) of output channel c averages input channel (c * pooled_height + i) *
    pooled_width + j over the bin. Returns [R, output_channels, pooled_height, pooled_width]."""
    for value, what, kind in (
        (output_channels, "output_channels", int),
        (spatial_scale, "spatial_scale", float),
        (pooled_height, "pooled_height", int),
        (pooled_width, "pooled_width", int),
    ):
        if not isinstance(value, kind):
            raise TypeError(f"{what} must be {kind.__name__} type")
    check_variable(input, "input", "psroi_pool")
    check_variable(rois, "rois", "psroi_pool")
    return _one(
        "psroi_pool",
        {"X": [input], "ROIs": [rois]},
        {
            "output_channels": output_channels,
            "spatial_scale": spatial_scale,
            "pooled_height": pooled_height,
            "pooled_width": pooled_width,
        },
        name=name,
    )


@layer
def deformable_roi_pooling(
    input,
    rois,
    trans,
    no_trans=False,
    spatial_scale=1.0,
    group_size=[1, 1],  # noqa: B006  (fluid's signature)
    pooled_height=1,
    pooled_width=1,
    part_size=None,
    sample_per_part=1,
    trans_std=0.1,
    position_sensitive=False,
    name=None,
):
    """Deformable roi pooling (op ``deformable_psroi_pooling``): each bin of each roi moved by its
    part's offset in ``trans`` [R, 2 * classes, part_h, part_w] (times ``trans_std`` and the roi's
    size; none with ``no_trans``), averaging ``sample_per_part``^2 bilinear samples. With
    ``position_sensitive`` the output has input channels / (pooled_height * pooled_width) channels
    and ``group_size`` picks each bin's input channel (fluid 1.8.5 failed there: it passed that
    channel count as a float); without, as many channels as the input."""
    for value, what in ((input, "input"), (rois, "rois"), (trans, "trans")):
        check_variable(value, what, "deformable_roi_pooling")
        check_dtype(value.dtype, what, ["float32", "float64"], "deformable_roi_pooling")
    for value, what in ((group_size, "group_size"), (part_size, "part_size")):
        if value is not None and not isinstance(value, (list, tuple)):
            raise TypeError(
                f"The type of '{what}' in deformable_roi_pooling must be (list, tuple), but received {type(value)!r}. "
            )
    channels = input.shape[1]
    if position_sensitive:
        if channels % (pooled_height * pooled_width):
            raise ValueError(
                "deformable_roi_pooling: with position_sensitive the input channels must divide by pooled_height * "
                f"pooled_width. Received: {channels} channels, pooled {pooled_height}x{pooled_width}"
            )
        output_channels = channels // (pooled_height * pooled_width)
    else:
        output_channels = channels
    part = _pair(list(part_size) if part_size is not None else [pooled_height, pooled_width], "part_size")
    helper = LayerHelper("deformable_psroi_pooling", name=name)
    output = helper.create_variable_for_type_inference(input.dtype)
    top_count = helper.create_variable_for_type_inference("int32")
    helper.append_op(
        type="deformable_psroi_pooling",
        inputs={"Input": [input], "ROIs": [rois], "Trans": [trans]},
        outputs={"Output": [output], "TopCount": [top_count]},
        attrs={
            "no_trans": no_trans,
            "spatial_scale": spatial_scale,
            "output_dim": output_channels,
            "group_size": _pair(list(group_size), "group_size"),
            "pooled_height": pooled_height,
            "pooled_width": pooled_width,
            "part_size": part,
            "sample_per_part": sample_per_part,
            "trans_std": trans_std,
        },
    )
    return output


# -- feature maps compared --------------------------------------------------------------------------
@layer
def similarity_focus(input, axis, indexes, name=None):
    if axis not in (1, 2, 3):
        raise ValueError(f"axis must be 1, 2 or 3. Received: {axis}")
    if not indexes:
        raise ValueError("indexes can not be empty.")
    attrs = {"axis": axis, "indexes": list(indexes)}
    return _one("similarity_focus", {"X": [input]}, attrs, name=name)


@layer
def fsp_matrix(x, y):
    return _one("fsp", {"X": [x], "Y": [y]}, helper_name="fsp_matrix")
