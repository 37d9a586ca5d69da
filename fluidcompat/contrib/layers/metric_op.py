"""``fluid.contrib.layers.ctr_metric_bundle``: running sums for CTR metrics, as fluid 1.8.5 kept them."""

from __future__ import annotations

from fluidcompat.dtypes import VarType
from fluidcompat.initializer import ConstantInitializer
from fluidcompat.layer_helper import LayerHelper, check_variable

__all__ = ["ctr_metric_bundle"]


def ctr_metric_bundle(input, label):
    """Persistable sums over every batch run so far: (squared error, absolute error, sum of ``input``,
    sum of sigmoid(``input``), positives, instances), each [1] float32. From them: MAE = abserr / ins,
    RMSE = sqrt(sqrerr / ins), predicted CTR = prob / ins, actual CTR = pos / ins."""
    check_variable(input, "input", "ctr_metric_bundle")
    check_variable(label, "label", "ctr_metric_bundle")
    if tuple(input.shape) != tuple(label.shape):
        raise ValueError(
            f"ctr_metric_bundle: input and label must have one shape. Received: {list(input.shape)} and "
            f"{list(label.shape)}"
        )
    helper = LayerHelper("ctr_metric_bundle")
    startup = helper.startup_program.global_block()

    def accumulator():
        var = helper.create_global_variable(persistable=True, dtype=VarType.FP32, shape=[1])
        svar = startup.create_var(name=var.name, shape=[1], dtype=VarType.FP32, persistable=True)
        ConstantInitializer(0.0, force_cpu=True)(svar, startup)
        return var

    def temporary(shape):
        return helper.create_global_variable(persistable=False, dtype=VarType.FP32, shape=shape)

    # the creation order gives fluid's names (_generated_var_N)
    abserr, sqrerr, prob, q, pos, ins = (accumulator() for _ in range(6))
    diff, sig, ones = temporary([-1]), temporary([-1]), temporary([-1])
    b_prob, b_abserr, b_sqrerr, b_q, b_pos, b_ins = (temporary([1]) for _ in range(6))

    def add_into(batch, total):
        helper.append_op(type="elementwise_add", inputs={"X": [batch], "Y": [total]}, outputs={"Out": [total]})

    helper.append_op(type="elementwise_sub", inputs={"X": [input], "Y": [label]}, outputs={"Out": [diff]})
    helper.append_op(type="squared_l2_norm", inputs={"X": [diff]}, outputs={"Out": [b_sqrerr]})
    add_into(b_sqrerr, sqrerr)
    helper.append_op(type="l1_norm", inputs={"X": [diff]}, outputs={"Out": [b_abserr]})
    add_into(b_abserr, abserr)
    helper.append_op(type="reduce_sum", inputs={"X": [input]}, outputs={"Out": [b_prob]})
    add_into(b_prob, prob)
    helper.append_op(type="sigmoid", inputs={"X": [input]}, outputs={"Out": [sig]})
    helper.append_op(type="reduce_sum", inputs={"X": [sig]}, outputs={"Out": [b_q]})
    add_into(b_q, q)
    helper.append_op(type="reduce_sum", inputs={"X": [label]}, outputs={"Out": [b_pos]})
    add_into(b_pos, pos)
    helper.append_op(
        type="fill_constant_batch_size_like",
        inputs={"Input": [label]},
        outputs={"Out": [ones]},
        attrs={"shape": [-1, 1], "dtype": int(VarType.FP32), "value": 1.0},
    )
    helper.append_op(type="reduce_sum", inputs={"X": [ones]}, outputs={"Out": [b_ins]})
    add_into(b_ins, ins)
    return sqrerr, abserr, prob, q, pos, ins
