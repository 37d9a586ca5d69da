"""``fluid.layers`` losses and metrics."""

from __future__ import annotations

from fluidcompat.dtypes import VarType
from fluidcompat.framework import Variable, layer
from fluidcompat.layer_helper import LayerHelper, check_variable
from fluidcompat.layers.nn import topk

__all__ = [
    "square_error_cost",
    "cross_entropy",
    "softmax_with_cross_entropy",
    "sigmoid_cross_entropy_with_logits",
    "accuracy",
]


@layer
def square_error_cost(input, label) -> Variable:
    """``(input - label) ** 2`` elementwise, built as ``elementwise_sub`` + ``square``."""
    check_variable(input, "input", "square_error_cost")
    check_variable(label, "label", "square_error_cost")
    helper = LayerHelper("square_error_cost", **locals())
    minus = helper.create_variable_for_type_inference(dtype=input.dtype)
    helper.append_op(type="elementwise_sub", inputs={"X": [input], "Y": [label]}, outputs={"Out": [minus]})
    square = helper.create_variable_for_type_inference(dtype=input.dtype)
    helper.append_op(type="square", inputs={"X": [minus]}, outputs={"Out": [square]})
    return square


@layer
def cross_entropy(input, label, soft_label=False, ignore_index=-100) -> Variable:
    """Hard labels use op ``cross_entropy2``; ``soft_label=True`` uses ``cross_entropy``."""
    check_variable(input, "input", "cross_entropy")
    if soft_label:
        helper = LayerHelper("cross_entropy", **locals())
        out = helper.create_variable_for_type_inference(dtype=input.dtype)
        helper.append_op(
            type="cross_entropy",
            inputs={"X": [input], "Label": [label]},
            outputs={"Y": [out]},
            attrs={"soft_label": True, "ignore_index": ignore_index},
        )
        return out
    helper = LayerHelper("cross_entropy2", **locals())
    out = helper.create_variable_for_type_inference(dtype=input.dtype)
    xshape = helper.create_variable_for_type_inference(dtype=input.dtype)
    match_x = helper.create_variable_for_type_inference(dtype=input.dtype)
    helper.append_op(
        type="cross_entropy2",
        inputs={"X": [input], "Label": [label]},
        outputs={"Y": [out], "MatchX": [match_x], "XShape": [xshape]},
        attrs={"ignore_index": ignore_index},
    )
    return out


@layer
def softmax_with_cross_entropy(
    logits, label, soft_label=False, ignore_index=-100, numeric_stable_mode=True, return_softmax=False, axis=-1
):
    helper = LayerHelper("softmax_with_cross_entropy", **locals())
    softmax = helper.create_variable_for_type_inference(dtype=logits.dtype)
    loss = helper.create_variable_for_type_inference(dtype=logits.dtype)
    helper.append_op(
        type="softmax_with_cross_entropy",
        inputs={"Logits": [logits], "Label": [label]},
        outputs={"Softmax": [softmax], "Loss": [loss]},
        attrs={
            "soft_label": soft_label,
            "ignore_index": ignore_index,
            "numeric_stable_mode": numeric_stable_mode,
            "axis": axis,
        },
    )
    return (loss, softmax) if return_softmax else loss


@layer
def sigmoid_cross_entropy_with_logits(x, label, ignore_index=-100, name=None, normalize=False) -> Variable:
    helper = LayerHelper("sigmoid_cross_entropy_with_logits", **locals())
    out = helper.create_variable_for_type_inference(dtype=x.dtype)
    helper.append_op(
        type="sigmoid_cross_entropy_with_logits",
        inputs={"X": [x], "Label": [label]},
        outputs={"Out": [out]},
        attrs={"ignore_index": ignore_index, "normalize": normalize},
    )
    return out


@layer
def accuracy(input, label, k=1, correct=None, total=None) -> Variable:
    """Top-k accuracy: ``top_k`` then ``accuracy``; returns a float32 [1] tensor."""
    helper = LayerHelper("accuracy", **locals())
    values, indices = topk(input, k=k)
    acc = helper.create_variable_for_type_inference(dtype=VarType.FP32)
    if correct is None:
        correct = helper.create_variable_for_type_inference(dtype=VarType.INT32)
    if total is None:
        total = helper.create_variable_for_type_inference(dtype=VarType.INT32)
    helper.append_op(
        type="accuracy",
        inputs={"Out": [values], "Indices": [indices], "Label": [label]},
        outputs={"Accuracy": [acc], "Correct": [correct], "Total": [total]},
    )
    return acc
