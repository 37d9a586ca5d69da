# grad_op_types.py's second batch (conv, pool, norms, activations, resizing, losses): the grad ops
# fluid 1.8 appends and the gradient each gives a [4, 6] parameter (the layers' own parameters set
# from numpy). Left out: elementwise_floordiv on floats (fluid 1.8.5 refused it) and npair_loss
# (fluid placed one gradient sum a step later).
import numpy as np
import paddle.fluid as fluid
from _grad_op_types import run

L = fluid.layers


cases = {
    "conv2d": lambda x: L.conv2d(L.reshape(x, [1, 2, 3, 4]), 2, 2),
    "conv2d_transpose": lambda x: L.conv2d_transpose(L.reshape(x, [1, 2, 3, 4]), 2, filter_size=2),
    "depthwise": lambda x: L.conv2d(L.reshape(x, [1, 2, 3, 4]), 2, 2, groups=2),
    "pool_max": lambda x: L.pool2d(L.reshape(x, [1, 2, 3, 4]), 2, "max"),
    "pool_avg": lambda x: L.pool2d(L.reshape(x, [1, 2, 3, 4]), 2, "avg"),
    "adaptive_pool": lambda x: L.adaptive_pool2d(L.reshape(x, [1, 2, 3, 4]), 2, "avg"),
    "batch_norm": lambda x: L.batch_norm(L.reshape(x, [2, 3, 2, 2])),
    "instance_norm": lambda x: L.instance_norm(L.reshape(x, [2, 3, 2, 2])),
    "group_norm": lambda x: L.group_norm(
        L.reshape(x, [2, 4, 3, 1]), 2, param_attr=fluid.ParamAttr(), bias_attr=fluid.ParamAttr()
    ),
    "fc": lambda x: L.fc(x, 3),
    "fc_act": lambda x: L.fc(x, 3, act="tanh"),
    "prelu": lambda x: L.prelu(x, "all"),
    "leaky_relu": lambda x: L.leaky_relu(x - 0.5, 0.1),
    "elu": lambda x: L.elu(x - 0.5),
    "selu": lambda x: L.selu(x - 0.5),
    "softplus": lambda x: L.softplus(x),
    "softsign": lambda x: L.softsign(x),
    "swish": lambda x: L.swish(x),
    "hard_sigmoid": lambda x: L.hard_sigmoid(x),
    "hard_swish": lambda x: L.hard_swish(x),
    "gelu": lambda x: L.gelu(x),
    "brelu": lambda x: L.brelu(x, 0.2, 0.7),
    "relu6": lambda x: L.relu6(x * 10.0),
    "stanh": lambda x: L.stanh(x),
    "log": lambda x: L.log(x),
    "reciprocal": lambda x: L.reciprocal(x),
    "rsqrt": lambda x: L.rsqrt(x),
    "sin": lambda x: L.sin(x),
    "cos": lambda x: L.cos(x),
    "floor": lambda x: L.floor(x * 3.0) * x,
    "logsumexp": lambda x: L.logsumexp(x, dim=1),
    "reduce_min": lambda x: L.reduce_min(x, 1),
    "resize_bilinear": lambda x: L.resize_bilinear(L.reshape(x, [1, 2, 3, 4]), out_shape=[5, 6]),
    "resize_nearest": lambda x: L.resize_nearest(L.reshape(x, [1, 2, 3, 4]), out_shape=[5, 6]),
    "pad2d": lambda x: L.pad2d(L.reshape(x, [1, 2, 3, 4]), [1, 0, 0, 1], mode="reflect"),
    "lrn": lambda x: L.lrn(L.reshape(x, [1, 6, 2, 2]), n=3),
    "cos_sim": lambda x: L.cos_sim(x, x * x),
    "bilinear_tp": lambda x: L.bilinear_tensor_product(x, x, 2),
    "matmul_alpha": lambda x: L.matmul(x, x, transpose_x=True, alpha=0.5),
    "bmm": lambda x: L.bmm(L.reshape(x, [2, 3, 4]), L.reshape(x, [2, 4, 3])),
    "dot": lambda x: L.dot(x, x * 2.0),
    "kron": lambda x: L.kron(x, L.slice(x, [0], [0], [2])),
    "trace": lambda x: L.trace(x),
    "index_select": lambda x: L.index_select(x, L.assign(np.array([0, 2, 2], "int32")), dim=1),
    "tril": lambda x: L.tril(x),
    "diag_embed_like": lambda x: L.elementwise_mul(x, L.diag(L.assign(np.ones(6, "float32")))[:4]),
    "where_index": lambda x: L.gather(x, L.reshape(L.where(x > 0.5), [-1])[:2]),
    "elementwise_min": lambda x: L.elementwise_min(x, x * 0.5 + 0.2),
    "square_error": lambda x: L.square_error_cost(x, x * 0.1),
    "log_loss": lambda x: L.log_loss(
        L.sigmoid(L.reduce_sum(x, 1, keep_dim=True)), L.assign(np.ones((4, 1), "float32"))
    ),
    "rank_loss": lambda x: L.rank_loss(
        L.assign(np.ones((4, 1), "float32")), L.slice(x, [1], [0], [1]), L.slice(x, [1], [1], [2])
    ),
    "margin_rank": lambda x: L.margin_rank_loss(
        L.assign(np.ones((4, 1), "float32")), L.slice(x, [1], [0], [1]), L.slice(x, [1], [1], [2])
    ),
    "sigmoid_focal": lambda x: L.sigmoid_focal_loss(
        x, L.assign(np.array([[1], [2], [0], [3]], "int32")), L.assign(np.array([2], "int32"))
    ),
    "center_like_l2": lambda x: L.reduce_sum(L.square(x - L.reduce_mean(x, 0, keep_dim=True))),
    "dist": lambda x: L.dist(x, x * 0.3, p=2),
    "mse_mean": lambda x: L.reduce_mean(L.square(x)),
    "teacher_student": lambda x: L.teacher_student_sigmoid_loss(
        L.reduce_sum(x, 1, keep_dim=True), L.assign(np.ones((4, 1), "float32") * 0.5)
    ),
    "maxout2": lambda x: L.maxout(L.reshape(x, [1, 6, 2, 2]), 3),
    "unsqueeze_squeeze": lambda x: L.squeeze(L.unsqueeze(x, [1, 3]), [1]),
    "flatten_axis": lambda x: L.flatten(L.reshape(x, [2, 3, 4]), axis=2),
    "sequence_free_pad": lambda x: L.pad(x, [1, 1, 0, 0], pad_value=0.5),
    "image_resize_tri": lambda x: L.image_resize(
        L.reshape(x, [1, 2, 3, 4]), out_shape=[4, 5], resample="BILINEAR", align_corners=False, align_mode=1
    ),
    "grid_sampler": lambda x: L.grid_sampler(
        L.reshape(x, [1, 2, 3, 4]), L.assign(np.random.RandomState(0).uniform(-1, 1, (1, 3, 4, 2)).astype("float32"))
    ),
    "affine_grid": lambda x: L.affine_grid(L.reshape(L.slice(x, [1], [0], [3]), [2, 2, 3]), [2, 1, 3, 3]),
}
run(cases)
