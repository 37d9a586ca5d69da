# Golden script: 3-D convolution, pooling and resizing with their padding forms ('SAME' with a dilation,
# 'VALID', per-dim pairs, asymmetric), ceil_mode and align modes: each output and the gradient of a
# weighted sum of it with respect to the input, summarised.
import numpy as np
import paddle.fluid as fluid
from _layer_runner import run_cases, weights

L = fluid.layers
rng = np.random.RandomState(0)
X4 = rng.uniform(-1, 1, (2, 4, 5, 5, 5)).astype("float32")

cases = {
    "conv3d_same_dil": lambda x: L.conv3d(x, 3, 3, padding="SAME", dilation=2, param_attr=weights((3, 4, 3, 3, 3), 1)),
    "conv3d_valid_stride": lambda x: L.conv3d(
        x, 3, 3, stride=2, padding="VALID", param_attr=weights((3, 4, 3, 3, 3), 2)
    ),
    "conv3d_pairs": lambda x: L.conv3d(
        x, 3, 2, padding=[[0, 0], [0, 0], [1, 1], [0, 0], [2, 2]], param_attr=weights((3, 4, 2, 2, 2), 3)
    ),
    "conv3d_dil": lambda x: L.conv3d(x, 3, 3, padding=[1, 2, 0], dilation=2, param_attr=weights((3, 4, 3, 3, 3), 4)),
    "conv3d_t": lambda x: L.conv3d_transpose(
        x, 3, filter_size=3, stride=2, padding=1, output_size=[10, 10, 10], param_attr=weights((4, 3, 3, 3, 3), 5)
    ),
    "pool3d_avg_ceil": lambda x: L.pool3d(x, 3, "avg", 2, pool_padding=1, ceil_mode=True, exclusive=False),
    "pool3d_avg_ceil_excl": lambda x: L.pool3d(x, 3, "avg", 2, pool_padding=1, ceil_mode=True),
    "pool3d_max_ceil": lambda x: L.pool3d(x, 2, "max", 2, pool_padding=[0, 1, 1], ceil_mode=True),
    "pool3d_max_same": lambda x: L.pool3d(x, 3, "max", 2, pool_padding="SAME"),
    "pool3d_avg_valid": lambda x: L.pool3d(x, 2, "avg", 2, pool_padding="VALID"),
    "trilinear_am1": lambda x: L.resize_trilinear(x, out_shape=[7, 6, 4], align_corners=False, align_mode=1),
    "trilinear_am0": lambda x: L.resize_trilinear(x, out_shape=[7, 6, 4], align_corners=False, align_mode=0),
    "trilinear_ac": lambda x: L.resize_trilinear(x, scale=1.5),
}

run_cases(cases, {"x": X4})
