# Golden script: 32 layers with their less common arguments (conv2d SAME with dilation, VALID, groups
# with asymmetric padding, NHWC; conv2d_transpose with output_size and SAME; pool2d ceil_mode and
# exclusive; norms; resize with each align mode; pad2d modes; prelu modes; space_to_depth; ...): each
# output and the gradient of a weighted sum of it with respect to the input, summarised.
import numpy as np
import paddle.fluid as fluid
from _layer_runner import run_cases, weights

L = fluid.layers
rng = np.random.RandomState(0)
X4 = rng.uniform(-1, 1, (2, 4, 7, 7)).astype("float32")
X4h = np.transpose(X4, (0, 2, 3, 1)).copy()

cases = {
    "conv_same_dil": lambda x, xh: L.conv2d(
        x, 6, 3, padding="SAME", dilation=2, param_attr=weights((6, 4, 3, 3), 1), bias_attr=False
    ),
    "conv_valid_stride": lambda x, xh: L.conv2d(
        x, 6, 3, stride=2, padding="VALID", param_attr=weights((6, 4, 3, 3), 2), bias_attr=False
    ),
    "conv_groups_asym": lambda x, xh: L.conv2d(
        x, 4, (3, 2), padding=[1, 0, 2, 1], groups=2, param_attr=weights((4, 2, 3, 2), 3), bias_attr=False
    ),
    "conv_nhwc": lambda x, xh: L.conv2d(
        xh, 6, 3, padding=1, data_format="NHWC", param_attr=weights((6, 4, 3, 3), 4), bias_attr=False
    ),
    "convT_out": lambda x, xh: L.conv2d_transpose(
        x, 3, output_size=[15, 15], filter_size=3, stride=2, param_attr=weights((4, 3, 3, 3), 5), bias_attr=False
    ),
    "convT_pad_same": lambda x, xh: L.conv2d_transpose(
        x, 3, filter_size=4, stride=2, padding="SAME", param_attr=weights((4, 3, 4, 4), 6), bias_attr=False
    ),
    "pool_ceil_excl": lambda x, xh: L.pool2d(x, 3, "avg", 2, pool_padding=1, ceil_mode=True, exclusive=False),
    "pool_ceil_max": lambda x, xh: L.pool2d(x, 3, "max", 2, pool_padding=1, ceil_mode=True),
    "pool_nhwc_avg": lambda x, xh: L.pool2d(xh, 2, "avg", 2, data_format="NHWC"),
    "adaptive_avg": lambda x, xh: L.adaptive_pool2d(x, [3, 2], "avg"),
    "bn_nhwc": lambda x, xh: L.batch_norm(
        xh, data_layout="NHWC", param_attr=weights((4,), 7), bias_attr=weights((4,), 8)
    ),
    "bn_global": lambda x, xh: L.batch_norm(
        x, use_global_stats=True, param_attr=weights((4,), 9), moving_mean_name="mm", moving_variance_name="mv"
    ),
    "ln_axis2": lambda x, xh: L.layer_norm(
        x, begin_norm_axis=2, param_attr=weights((49,), 10), bias_attr=weights((49,), 11)
    ),
    "group_norm": lambda x, xh: L.group_norm(x, 2, param_attr=weights((4,), 12), bias_attr=weights((4,), 13)),
    "instance_norm": lambda x, xh: L.instance_norm(x, param_attr=weights((4,), 14), bias_attr=weights((4,), 15)),
    "lrn": lambda x, xh: L.lrn(x, n=3, k=1.0, alpha=0.01, beta=0.75),
    "bilinear_ac": lambda x, xh: L.resize_bilinear(x, out_shape=[10, 12], align_corners=True),
    "bilinear_am0": lambda x, xh: L.resize_bilinear(x, out_shape=[10, 12], align_corners=False, align_mode=0),
    "bilinear_am1": lambda x, xh: L.resize_bilinear(x, scale=1.5, align_corners=False, align_mode=1),
    "nearest": lambda x, xh: L.resize_nearest(x, out_shape=[10, 12], align_corners=False),
    "nearest_ac": lambda x, xh: L.resize_nearest(x, out_shape=[10, 12]),
    "pad2d_reflect": lambda x, xh: L.pad2d(x, [1, 2, 2, 1], mode="reflect"),
    "pad2d_edge": lambda x, xh: L.pad2d(x, [1, 2, 2, 1], mode="edge"),
    "pixel_shuffle": lambda x, xh: L.pixel_shuffle(x, 2),
    "prelu_ch": lambda x, xh: L.prelu(x, "channel", param_attr=weights((1, 4, 1, 1), 16)),
    "maxout": lambda x, xh: L.maxout(x, 2),
    "affine_channel": lambda x, xh: L.affine_channel(
        x, scale=L.assign(np.arange(4, dtype="float32")), bias=L.assign(np.ones(4, "float32"))
    ),
    "unfold": lambda x, xh: L.unfold(x, [2, 3], strides=2, paddings=1, dilations=1),
    "space_to_depth": lambda x, xh: L.space_to_depth(L.slice(x, [2, 3], [0, 0], [6, 6]), 2),
    "shuffle_channel": lambda x, xh: L.shuffle_channel(x, 2),
    "temporal_shift": lambda x, xh: L.temporal_shift(x, 2, 0.25),
    "roll_flip": lambda x, xh: L.flip(L.roll(x, shifts=[1, -2], dims=[2, 3]), [1]),
}

run_cases(cases, {"x": X4, "xh": X4h})
