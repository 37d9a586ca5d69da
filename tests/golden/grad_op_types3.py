# grad_op_types.py's third batch: sequence (LoD) ops, recurrent units, CRF, hsigmoid: the grad ops
# fluid 1.8 appends and the gradient each gives a [4, 6] parameter (LoD [0, 1, 4] set by lod_reset).
# Left out: the cell output of dynamic_lstm alone (fluid 1.8.5 sent no gradient through it),
# sampled softmax (its samples differ), and layers whose grad ops fluid appended for nothing (a sum
# over gradients nothing wrote: sequence_expand(_as) of a slice).
# (hsigmoid prints a line when built under fluid 1.8.5: the JSON is the last line.)
import numpy as np
import paddle.fluid as fluid
from _grad_op_types import run

L = fluid.layers


def seq(x):
    return L.lod_reset(x, target_lod=[0, 1, 4])


cases = {
    "lod_reset": lambda x: seq(x) * 2.0,
    "sequence_pool_sum": lambda x: L.sequence_pool(seq(x), "sum"),
    "sequence_pool_max": lambda x: L.sequence_pool(seq(x), "max"),
    "sequence_pool_avg": lambda x: L.sequence_pool(seq(x), "average"),
    "sequence_pool_sqrt": lambda x: L.sequence_pool(seq(x), "sqrt"),
    "sequence_first": lambda x: L.sequence_first_step(seq(x)),
    "sequence_last": lambda x: L.sequence_last_step(seq(x)),
    "sequence_softmax": lambda x: L.sequence_softmax(seq(L.slice(x, [1], [0], [1]))),
    "sequence_concat": lambda x: L.sequence_concat([seq(x), seq(x * 2.0)]),
    "sequence_pad": lambda x: L.sequence_pad(seq(x), L.assign(np.zeros([1], "float32")))[0],
    "sequence_unpad": lambda x: L.sequence_unpad(L.reshape(x, [2, 2, 6]), L.assign(np.array([1, 2], "int64"))),
    "sequence_reshape": lambda x: L.sequence_reshape(L.lod_reset(x, target_lod=[0, 2, 4]), 12),
    "sequence_slice": lambda x: L.sequence_slice(
        seq(x), L.assign(np.array([[0], [1]], "int64")), L.assign(np.array([[1], [2]], "int64"))
    ),
    "sequence_conv": lambda x: L.sequence_conv(seq(x), 3, 3),
    "sequence_scatter_like": lambda x: L.sequence_reverse(seq(x)),
    "row_conv": lambda x: L.row_conv(seq(x), 2),
    "dynamic_lstm": lambda x: L.dynamic_lstm(L.fc(seq(x), 8), 8)[0],
    "dynamic_gru": lambda x: L.dynamic_gru(L.fc(seq(x), 6), 2),
    "dynamic_lstmp": lambda x: L.dynamic_lstmp(L.fc(seq(x), 8), 8, 3)[0],
    "lstm_unit": lambda x: L.lstm_unit(L.slice(x, [1], [0], [2]), L.slice(x, [1], [2], [4]), L.slice(x, [1], [4], [6]))[
        0
    ],
    "gru_unit": lambda x: L.gru_unit(L.fc(x, 6), L.slice(x, [1], [0], [2]), 6)[0],
    "im2sequence": lambda x: L.im2sequence(L.reshape(x, [1, 1, 4, 6]), filter_size=2, stride=2),
    "embedding_sparse": lambda x: (
        L.embedding(L.assign(np.array([[1], [2], [1]], "int64")), size=[5, 6], is_sparse=True) + L.reduce_sum(x)
    ),
    "linear_chain_crf": lambda x: L.linear_chain_crf(
        L.lod_reset(L.slice(x, [1], [0], [3]), target_lod=[0, 1, 4]),
        L.lod_reset(L.assign(np.array([[0], [1], [2], [1]], "int64")), target_lod=[0, 1, 4]),
        param_attr=fluid.ParamAttr(name="crfw"),
    ),
    "sequence_enumerate_mul": lambda x: (
        seq(x)
        * L.cast(
            L.reduce_sum(
                L.sequence_enumerate(
                    L.lod_reset(L.assign(np.array([[1], [2], [3], [4]], "int64")), target_lod=[0, 1, 4]), 2
                ),
                1,
                keep_dim=True,
            ),
            "float32",
        )
    ),
    "sequence_mask_mul": lambda x: L.elementwise_mul(
        x, L.cast(L.sequence_mask(L.assign(np.array([2, 3, 6, 1], "int64")), maxlen=6), "float32")
    ),
    "hsigmoid": lambda x: L.hsigmoid(x, L.assign(np.array([[1], [2], [0], [3]], "int64")), 5),
}
run(cases)
