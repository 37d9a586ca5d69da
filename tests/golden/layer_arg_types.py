"""About 100 layers given a numpy array where a Variable is due (the first argument, or one item of
a list), then an int64 Variable: the error's type and last line under fluid 1.8.5."""

import json

import numpy as np
import paddle.fluid as fluid
from _golden import errors_of

L = fluid.layers
names = """relu sigmoid tanh exp log sqrt abs softmax log_softmax elu leaky_relu relu6 swish gelu hard_sigmoid
softplus softsign
scale mean reduce_sum reduce_mean reduce_max transpose reshape squeeze unsqueeze flatten cast concat stack expand
fc embedding dropout layer_norm batch_norm l2_normalize topk argmax argmin argsort cumsum clip clip_by_norm
cross_entropy softmax_with_cross_entropy sigmoid_cross_entropy_with_logits square_error_cost
matmul mul elementwise_add elementwise_mul elementwise_sub elementwise_div elementwise_max elementwise_pow
pool2d conv2d conv2d_transpose sequence_pool sequence_softmax dynamic_lstm dynamic_gru shape size
one_hot gather scatter where slice split unstack pad pad2d crop_tensor resize_bilinear image_resize
logical_not logical_and equal less_than greater_than sum sums isfinite has_nan has_inf zeros_like ones_like
assign fill_constant_batch_size_like uniform_random_batch_size_like sign floor ceil round reciprocal square""".split()


def checks(bad):
    calls = {}
    for n in names:
        f = getattr(L, n, None)
        if f is None:
            continue

        def call(f=f, n=n):
            with fluid.program_guard(fluid.Program(), fluid.Program()):
                x = fluid.data("x", [None, 3], "float32")
                arr = bad()
                if n in (
                    "elementwise_add",
                    "elementwise_mul",
                    "elementwise_sub",
                    "elementwise_div",
                    "elementwise_max",
                    "elementwise_pow",
                    "matmul",
                    "mul",
                    "logical_and",
                    "equal",
                    "less_than",
                    "greater_than",
                    "cross_entropy",
                    "softmax_with_cross_entropy",
                    "sigmoid_cross_entropy_with_logits",
                    "square_error_cost",
                ):
                    f(arr, x)
                elif n in ("fc",):
                    f(arr, 2)
                elif n in ("embedding",):
                    f(arr, [3, 2])
                elif n in ("reshape", "transpose", "expand", "squeeze", "unsqueeze"):
                    f(arr, [1, 0] if n == "transpose" else [1])
                elif n in ("concat", "stack", "sum", "sums"):
                    f([arr, x])
                elif n in (
                    "scale",
                    "dropout",
                    "topk",
                    "split",
                    "one_hot",
                    "clip_by_norm",
                    "cast",
                    "gather",
                    "sequence_pool",
                    "pool2d",
                    "conv2d",
                    "conv2d_transpose",
                    "dynamic_lstm",
                    "dynamic_gru",
                    "fill_constant_batch_size_like",
                    "uniform_random_batch_size_like",
                    "pad",
                    "crop_tensor",
                    "slice",
                    "resize_bilinear",
                    "image_resize",
                    "clip",
                    "scatter",
                    "pad2d",
                    "where",
                ):
                    args = {
                        "scale": (1.0,),
                        "dropout": (0.5,),
                        "topk": (1,),
                        "split": (3,),
                        "one_hot": (3,),
                        "clip_by_norm": (1.0,),
                        "cast": ("float64",),
                        "gather": (x,),
                        "sequence_pool": ("sum",),
                        "pool2d": (2,),
                        "conv2d": (2, 3),
                        "conv2d_transpose": (2, 3),
                        "dynamic_lstm": (4,),
                        "dynamic_gru": (4,),
                        "fill_constant_batch_size_like": ([-1, 2], "float32", 1.0),
                        "uniform_random_batch_size_like": ([-1, 2],),
                        "pad": ([0, 0, 0, 0],),
                        "crop_tensor": ([1, 1],),
                        "slice": ([0], [0], [1]),
                        "resize_bilinear": ([2, 2],),
                        "image_resize": ([2, 2],),
                        "clip": (0.0, 1.0),
                        "scatter": (x, x),
                        "pad2d": ([0, 0, 0, 0],),
                        "where": (),
                    }[n]
                    f(arr, *args)
                else:
                    f(arr)

        calls[n] = call
    res = errors_of(list(calls.values()))
    return {n: (None if e is None else [e[0], e[1].strip().splitlines()[-1][:300]]) for n, e in zip(calls, res)}


print(
    json.dumps(
        {
            "array": checks(lambda: np.ones((2, 3), "float32")),
            "int64": checks(lambda: fluid.data("ix", [None, 3], "int64")),
        },
        indent=0,
    )
)
