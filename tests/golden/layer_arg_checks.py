# Golden script: layers given a Variable of a dtype fluid 1.8 refuses, or no Variable: the build-time
# errors (type and message). Prints {case: [exception type or "ok", message]}.
import json
import sys

import numpy as np
import paddle.fluid as fluid
import paddle.fluid.layers as L

main = fluid.Program()
with fluid.program_guard(main, fluid.Program()):
    f = fluid.data("f", [4, 3], "float32")
    i = fluid.data("i", [4, 3], "int64")
    i32 = fluid.data("i32", [4, 3], "int32")
    b = fluid.data("b", [4, 3], "bool")
    arr = np.ones((4, 3), "float32")
    cases = {
        "relu_int": lambda: L.relu(i),
        "sigmoid_int": lambda: L.sigmoid(i),
        "tanh_int": lambda: L.tanh(i),
        "exp_int": lambda: L.exp(i),
        "log_int": lambda: L.log(i),
        "sqrt_int": lambda: L.sqrt(i),
        "softmax_int": lambda: L.softmax(i),
        "fc_int": lambda: L.fc(i, 2),
        "mean_int": lambda: L.mean(i),
        "reduce_sum_bool": lambda: L.reduce_sum(b),
        "matmul_int": lambda: L.matmul(i, L.transpose(i, [1, 0])),
        "elementwise_add_mixed": lambda: L.elementwise_add(f, i),
        "concat_mixed": lambda: L.concat([f, i]),
        "relu_np": lambda: L.relu(arr),
        "fc_np": lambda: L.fc(arr, 2),
        "mean_np": lambda: L.mean(arr),
        "cast_np": lambda: L.cast(arr, "int32"),
        "reshape_np": lambda: L.reshape(arr, [3, 4]),
        "dropout_int": lambda: L.dropout(i, 0.5),
        "layer_norm_int": lambda: L.layer_norm(i),
        "cross_entropy_int": lambda: L.cross_entropy(i, i),
        "square_error_int": lambda: L.square_error_cost(i, i),
        "argmax_bool": lambda: L.argmax(b),
        "scale_bool": lambda: L.scale(b, 2.0),
        "abs_bool": lambda: L.abs(b),
        "logical_and_float": lambda: L.logical_and(f, f),
        "logical_not_int": lambda: L.logical_not(i),
        "equal_mixed": lambda: L.equal(f, i),
        "less_than_np": lambda: L.less_than(arr, f),
        "topk_int": lambda: L.topk(i, 2),
        "cumsum_bool": lambda: L.cumsum(b),
        "clip_int": lambda: L.clip(i, 0, 1),
        "pow_int": lambda: L.pow(i, 2.0),
        "embedding_float_ids": lambda: L.embedding(f, [10, 2]),
        "one_hot_float": lambda: L.one_hot(f, 4),
        "sum_mixed": lambda: L.sums([f, i]),
        "transpose_np": lambda: L.transpose(arr, [1, 0]),
        "split_np": lambda: L.split(arr, 2),
        "squeeze_np": lambda: L.squeeze(arr, [0]),
        "unsqueeze_np": lambda: L.unsqueeze(arr, [0]),
        "gather_float_index": lambda: L.gather(f, f),
        "slice_np": lambda: L.slice(arr, [0], [0], [1]),
        "conv2d_int": lambda: L.conv2d(fluid.data("im", [1, 1, 4, 4], "int64"), 1, 2),
        "pool2d_int": lambda: L.pool2d(fluid.data("im2", [1, 1, 4, 4], "int64"), 2),
        "batch_norm_int": lambda: L.batch_norm(fluid.data("im3", [1, 1, 4, 4], "int64")),
        "sigmoid_ce_int": lambda: L.sigmoid_cross_entropy_with_logits(i, i),
        "swce_int_logits": lambda: L.softmax_with_cross_entropy(i, i[:, 0:1]),
        "assign_int_list": lambda: L.assign([1, 2]),
        "fill_constant_bad_dtype": lambda: L.fill_constant([1], "str", 1),
        "increment_float": lambda: L.increment(f),
        "zeros_bad": lambda: L.zeros([2], "complex64"),
        "dice_loss_float_label": lambda: L.dice_loss(L.softmax(f), f[:, 0:1]),
    }
    report = {}
    for name, fn in cases.items():
        try:
            fn()
            report[name] = ["ok", ""]
        except Exception as e:  # noqa: BLE001
            report[name] = [type(e).__name__, str(e).strip().splitlines()[-1]]
json.dump(report, sys.stdout, indent=1, sort_keys=True)
