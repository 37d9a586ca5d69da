"""``fluid.layers`` losses: cross entropy (softmax, sigmoid), square error and the other regression
losses, ranking losses, label_smooth, the sampled losses with their own parameters (nce, hsigmoid,
sampled softmax), center_loss, CTC (warpctc) and the linear-chain CRF. fluid 1.8's ``layers.loss``
(loss.py) hands out its names from here."""

from __future__ import annotations

import numpy as np

from fluidcompat import unique_name
from fluidcompat.framework import Variable, layer
from fluidcompat.initializer import NumpyArrayInitializer
from fluidcompat.layer_helper import LayerHelper, check_variable
from fluidcompat.layers._common import _listed, _one
from fluidcompat.layers.reduction import reduce_mean, reduce_sum
from fluidcompat.param_attr import ParamAttr

__all__ = [
    "cross_entropy",
    "softmax_with_cross_entropy",
    "sigmoid_cross_entropy_with_logits",
    "label_smooth",
    "square_error_cost",
    "mse_loss",
    "smooth_l1",
    "huber_loss",
    "log_loss",
    "kldiv_loss",
    "dice_loss",
    "rank_loss",
    "margin_rank_loss",
    "bpr_loss",
    "npair_loss",
    "center_loss",
    "teacher_student_sigmoid_loss",
    "hsigmoid",
    "sampled_softmax_with_cross_entropy",
    "nce",
    "warpctc",
    "linear_chain_crf",
]


# -- cross entropy ----------------------------------------------------------------------------------
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
def label_smooth(label, prior_dist=None, epsilon=0.1, dtype="float32", name=None):
    if epsilon > 1.0 or epsilon < 0.0:
        raise ValueError("The value of epsilon must be between 0 and 1.")
    label.stop_gradient = True  # as fluid 1.8.5: the label (this variable, everywhere) gets no gradient
    ins = {"X": [label]}
    if prior_dist is not None:
        ins["PriorDist"] = [prior_dist]
    return _one("label_smooth", ins, {"epsilon": float(epsilon)}, name=name)


# -- regression -------------------------------------------------------------------------------------
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
def mse_loss(input, label):
    """mean((input - label)^2), built as fluid 1.8 did: reduce_mean of square_error_cost."""

    return reduce_mean(square_error_cost(input, label))


@layer
def smooth_l1(x, y, inside_weight=None, outside_weight=None, sigma=None):
    helper = LayerHelper("smooth_l1_loss")
    diff = helper.create_variable_for_type_inference(dtype=x.dtype)
    loss = helper.create_variable_for_type_inference(dtype=x.dtype)
    ins = {"X": [x], "Y": [y]}
    if inside_weight is not None:
        ins["InsideWeight"] = [inside_weight]
    if outside_weight is not None:
        ins["OutsideWeight"] = [outside_weight]
    helper.append_op(
        type="smooth_l1_loss",
        inputs=ins,
        outputs={"Diff": [diff], "Out": [loss]},
        attrs={"sigma": sigma if sigma is not None else 1.0},
    )
    return loss


@layer
def huber_loss(input, label, delta):
    helper = LayerHelper("huber_loss")
    residual = helper.create_variable_for_type_inference(dtype=input.dtype)
    out = helper.create_variable_for_type_inference(dtype=input.dtype)
    helper.append_op(
        type="huber_loss",
        inputs={"X": [input], "Y": [label]},
        outputs={"Out": [out], "Residual": [residual]},
        attrs={"delta": float(delta)},
    )
    return out


@layer
def log_loss(input, label, epsilon=0.0001, name=None):
    return _one("log_loss", {"Predicted": [input], "Labels": [label]}, {"epsilon": epsilon}, out_slot="Loss", name=name)


@layer
def kldiv_loss(x, target, reduction="mean", name=None):
    if reduction not in ("none", "batchmean", "mean", "sum"):
        raise ValueError(f"reduction must be 'none', 'batchmean', 'mean' or 'sum'. Received: {reduction!r}")
    return _one("kldiv_loss", {"X": [x], "Target": [target]}, {"reduction": reduction}, out_slot="Loss", name=name)


@layer
def dice_loss(input, label, epsilon=1e-05, name=None):
    """1 - 2|X.Y| / (|X| + |Y| + epsilon) against the one-hot label, averaged over the batch (fluid
    1.8's composition)."""
    from fluidcompat.layer_helper import layers  # the checked one_hot: fluid refused a float label there

    label = layers.one_hot(label, depth=input.shape[-1])
    dims = list(range(1, len(input.shape)))
    inse = reduce_sum(input * label, dim=dims)
    denominator = reduce_sum(input, dim=dims) + reduce_sum(label, dim=dims)
    return reduce_mean(1 - inse * 2 / (denominator + epsilon))


# -- ranking and metric learning --------------------------------------------------------------------
@layer
def rank_loss(label, left, right, name=None):
    return _one("rank_loss", {"Label": [label], "Left": [left], "Right": [right]}, dtype=left.dtype, name=name)


@layer
def margin_rank_loss(label, left, right, margin=0.1, name=None):
    helper = LayerHelper("margin_rank_loss", name=name)
    out = helper.create_variable_for_type_inference(dtype=left.dtype)
    act = helper.create_variable_for_type_inference(dtype=left.dtype)
    helper.append_op(
        type="margin_rank_loss",
        inputs={"Label": [label], "X1": [left], "X2": [right]},
        outputs={"Out": [out], "Activated": [act]},
        attrs={"margin": float(margin)},
    )
    return out


@layer
def bpr_loss(input, label, name=None):
    return _one("bpr_loss", {"X": [input], "Label": [label]}, out_slot="Y", name=name)


@layer
def npair_loss(anchor, positive, labels, l2_reg=0.002):
    """The N-pair loss of anchors and positives (fluid 1.8's composition): soft-label cross entropy of
    anchor . positive^T against same-label targets, plus 0.25 * l2_reg * the mean squared norms."""
    from fluidcompat.layers.indexing import slice
    from fluidcompat.layers.manipulation import expand, reshape, shape, transpose
    from fluidcompat.layers.math import equal, matmul
    from fluidcompat.layers.ops import square

    # fluid 1.8 could not build this for a batch of unknown size (expand by -1); here it expands by
    # the batch size read when it runs
    batch = labels.shape[0]
    if batch < 0:
        batch = slice(shape(labels), axes=[0], starts=[0], ends=[1])
    labels = expand(reshape(labels, [-1, 1]), [1, batch])
    labels = equal(labels, transpose(labels, [1, 0])).astype("float32")
    labels = labels / reduce_sum(labels, dim=1, keep_dim=True)
    l2loss = reduce_mean(reduce_sum(square(anchor), 1)) + reduce_mean(reduce_sum(square(positive), 1))
    l2loss = l2loss * 0.25 * l2_reg
    similarity = matmul(anchor, positive, transpose_x=False, transpose_y=True)
    softmax_ce = softmax_with_cross_entropy(logits=similarity, label=labels, soft_label=True)
    celoss = reduce_mean(reduce_sum(labels * softmax_ce, 0))
    return l2loss + celoss


@layer
def center_loss(input, label, num_classes, alpha, param_attr, update_center=True):
    """0.5 * |x - center(label)|^2 per sample; with ``update_center`` each run moves the centers
    toward their samples by ``alpha`` (op ``center_loss``, centers updated in place)."""
    helper = LayerHelper("center_loss")
    centers = helper.create_parameter(attr=param_attr, shape=[num_classes, input.shape[1]], dtype=input.dtype)
    centers.stop_gradient = True
    if isinstance(alpha, Variable):
        rate = alpha
    else:
        from fluidcompat.layers.creation import create_global_var

        rate = create_global_var(
            shape=[1],
            value=float(alpha),
            dtype="float32",
            persistable=True,
            name=unique_name.generate("centerloss_alpha"),
        )
        rate.stop_gradient = True
    diff = helper.create_variable_for_type_inference(dtype=input.dtype)
    loss = helper.create_variable_for_type_inference(dtype=input.dtype)
    helper.append_op(
        type="center_loss",
        inputs={"X": [input], "Label": [label], "Centers": [centers], "CenterUpdateRate": [rate]},
        outputs={"SampleCenterDiff": [diff], "Loss": [loss], "CentersOut": [centers]},
        attrs={"cluster_num": num_classes, "need_update": update_center},
    )
    return loss


@layer
def teacher_student_sigmoid_loss(input, label, soft_max_up_bound=15.0, soft_max_lower_bound=-15.0):
    attrs = {"soft_max_up_bound": float(soft_max_up_bound), "soft_max_lower_bound": float(soft_max_lower_bound)}
    helper = LayerHelper("teacher_student_sigmoid_loss")
    out = helper.create_variable(dtype=input.dtype)  # unnamed, as fluid 1.8.5 made it
    helper.append_op(
        type="teacher_student_sigmoid_loss", inputs={"X": [input], "Label": [label]}, outputs={"Y": [out]}, attrs=attrs
    )
    return out


# -- many classes: hierarchical sigmoid, sampled softmax, noise-contrastive estimation --------------
def sparse_mode_notice() -> None:
    """The line fluid 1.8.5 printed whenever it built an nce or hsigmoid layer (sparse or not)."""
    print("With sparse mode, if your models has only small parameter prefetch may cause speed down")


@layer
def hsigmoid(
    input,
    label,
    num_classes,
    param_attr=None,
    bias_attr=None,
    name=None,
    path_table=None,
    path_code=None,
    is_custom=False,
    is_sparse=False,
):
    """Hierarchical sigmoid loss (op ``hierarchical_sigmoid``): over fluid's default complete binary
    tree of ``num_classes`` classes (weights [num_classes - 1, dim]), or with ``is_custom`` over each
    sample's ``path_table`` node ids (-1 past the path) and ``path_code`` bits (weights
    [num_classes, dim], num_classes being the number of non-leaf nodes)."""
    if is_custom and (path_table is None or path_code is None):
        raise ValueError("path_table and path_code should not be None with custom tree")
    if not is_custom and (path_table is not None or path_code is not None):
        raise ValueError("only num_classes should be passed without custom tree")
    if num_classes < 2:
        raise ValueError(f"num_classes must not be less than 2 with default tree. Received: {num_classes}")
    sparse_mode_notice()
    helper = LayerHelper("hierarchical_sigmoid", name=name)
    dim = input.shape[1]
    rows = num_classes if is_custom else num_classes - 1
    weights = helper.create_parameter(attr=param_attr, shape=[rows, dim], dtype=input.dtype)
    ins = {"X": [input], "W": [weights], "Label": [label]}
    if is_custom:
        ins.update(PathTable=[path_table], PathCode=[path_code])
    bias = helper.create_parameter(attr=bias_attr, shape=[rows, 1], dtype=input.dtype, is_bias=True)
    if bias is not None:
        ins["Bias"] = [bias]
    out = helper.create_variable_for_type_inference(dtype=input.dtype)
    pre_out = helper.create_variable_for_type_inference(dtype=input.dtype)
    w_out = weights
    helper.append_op(
        type="hierarchical_sigmoid",
        inputs=ins,
        outputs={"Out": [out], "PreOut": [pre_out], "W_Out": [w_out]},
        attrs={"num_classes": num_classes, "is_sparse": is_sparse},
    )
    return out


@layer
def sampled_softmax_with_cross_entropy(
    logits,
    label,
    num_samples,
    num_true=1,
    remove_accidental_hits=True,
    use_customized_samples=False,
    customized_samples=None,
    customized_probabilities=None,
    seed=0,
):
    """Softmax cross entropy over the true class and ``num_samples`` sampled classes (log-uniform, or
    ``customized_samples`` with their probabilities), each logit corrected by -log(probability):
    ops ``sample_logits`` and ``softmax_with_cross_entropy``."""

    helper = LayerHelper("sample_logits")
    # the variables in fluid's order (their names are sample_logits_N.tmp_0 ... tmp_8)
    outs = {
        "Samples": helper.create_variable_for_type_inference(dtype="int64"),
        "Probabilities": helper.create_variable_for_type_inference(dtype=logits.dtype),
        "SampledLogits": helper.create_variable_for_type_inference(dtype=logits.dtype),
        "SampledLabels": helper.create_variable_for_type_inference(dtype="int64"),
    }
    soft = helper.create_variable_for_type_inference(dtype=logits.dtype)
    outs["LogitsDim"] = helper.create_variable_for_type_inference(dtype=logits.dtype)
    outs["LabelsDim"] = helper.create_variable_for_type_inference(dtype=logits.dtype)
    ins = {"Logits": [logits], "Labels": [label]}
    if use_customized_samples:
        if customized_samples is None or customized_probabilities is None:
            raise ValueError("use_customized_samples needs customized_samples and customized_probabilities")
        ins.update(CustomizedSamples=[customized_samples], CustomizedProbabilities=[customized_probabilities])
    helper.append_op(
        type="sample_logits",
        inputs=ins,
        outputs={k: [v] for k, v in outs.items()},
        attrs={
            "use_customized_samples": use_customized_samples,
            "uniq": True,
            "remove_accidental_hits": remove_accidental_hits,
            "num_samples": num_samples,
            "seed": seed,
        },
    )
    outs["SampledLabels"].stop_gradient = True
    if num_true == 1:  # fluid's ops: a one_hot of the sampled labels, a soft-label loss, / num_true
        loss = helper.create_variable_for_type_inference(dtype=logits.dtype)
        softmax = helper.create_variable_for_type_inference(dtype=logits.dtype)
        helper.append_op(
            type="one_hot",
            inputs={"X": [outs["SampledLabels"]]},
            outputs={"Out": [soft]},
            attrs={"depth": num_samples + 1},
        )
        helper.append_op(
            type="softmax_with_cross_entropy",
            inputs={"Logits": [outs["SampledLogits"]], "Label": [soft]},
            outputs={"Softmax": [softmax], "Loss": [loss]},
            attrs={"soft_label": True, "ignore_index": False, "numeric_stable_mode": False},
        )
        return loss / num_true
    # several true classes: a soft target of 1 / num_true on each (fluid 1.8.5 failed here with a
    # shape error)
    from fluidcompat.layers.math import scale
    from fluidcompat.layers.nn import one_hot_v2

    targets = scale(reduce_sum(one_hot_v2(outs["SampledLabels"], num_true + num_samples), dim=1), 1.0 / num_true)
    targets.stop_gradient = True
    return softmax_with_cross_entropy(outs["SampledLogits"], targets, soft_label=True)


def nce_alias_table(probs):
    """Walker's alias table of ``probs`` (fluid 1.8's construction: over- and under-full classes
    paired first come, first served): ``(alias, alias_probs)``; -1 marks a class that keeps its slot."""
    n = len(probs)
    alias, keep = [0] * n, [0.0] * n
    over, under = [], []

    def file(i, scaled):  # over-full, under-full, or exactly full (keeps its slot)
        if scaled > 1.0:
            over.append((i, scaled))
        elif scaled < 1.0:
            under.append((i, scaled))
        else:
            keep[i], alias[i] = scaled, -1

    for i, p in enumerate(probs):
        file(i, p * n)
    while over and under:
        (big, big_p), (little, little_p) = over.pop(0), under.pop(0)
        keep[little], alias[little] = little_p, big
        file(big, big_p + little_p - 1.0)
    for rest in (over, under):
        if rest:
            keep[rest[0][0]], alias[rest[0][0]] = 1.0, -1
    return alias, keep


def nce_custom_dist_tables(custom_dist):
    """nce's custom-distribution inputs as fluid 1.8 made them: (slot, numpy array) for the
    probabilities, the alias table and the alias probabilities."""
    alias, alias_probs = nce_alias_table([float(p) for p in custom_dist])
    return [
        ("CustomDistProbs", np.array(custom_dist, "float32")),
        ("CustomDistAlias", np.array(alias, "int32")),
        ("CustomDistAliasProbs", np.array(alias_probs, "float32")),
    ]


@layer
def nce(
    input,
    label,
    num_total_classes,
    sample_weight=None,
    param_attr=None,
    bias_attr=None,
    num_neg_samples=None,
    name=None,
    sampler="uniform",
    custom_dist=None,
    seed=0,
    is_sparse=False,
):
    """Noise-contrastive estimation cost per sample (op ``nce``): each true label and
    ``num_neg_samples`` negatives drawn from ``sampler`` ('uniform', 'log_uniform' or 'custom_dist'
    with ``custom_dist``) score sigmoid(x . w + b) against num_neg_samples * q(class)."""
    samplers = {"uniform": 0, "log_uniform": 1, "custom_dist": 2}
    if sampler not in samplers:
        raise ValueError(f"Unsupported sampler type: {sampler!r}; use uniform, log_uniform or custom_dist")
    if sampler == "custom_dist" and (custom_dist is None or len(custom_dist) != num_total_classes):
        raise ValueError("custom_dist must be given, with one probability per class, for sampler='custom_dist'")
    sparse_mode_notice()
    helper = LayerHelper("nce", name=name)
    dim = input.shape[1]
    weight = helper.create_parameter(attr=param_attr, shape=[num_total_classes, dim], dtype=input.dtype)
    ins = {"Input": [input], "Label": [label], "Weight": [weight]}
    bias = helper.create_parameter(attr=bias_attr, shape=[num_total_classes, 1], dtype=input.dtype, is_bias=True)
    if bias is not None:
        ins["Bias"] = [bias]
    if sample_weight is not None:
        ins["SampleWeight"] = [sample_weight]
    if sampler == "custom_dist":  # three parameters the startup program fills, as fluid 1.8 kept them
        for slot, values in nce_custom_dist_tables(custom_dist):
            table = helper.create_parameter(
                attr=ParamAttr(),
                shape=values.shape,
                dtype=values.dtype,
                default_initializer=NumpyArrayInitializer(values),
            )
            table.stop_gradient = True
            ins[slot] = [table]
    cost = helper.create_variable_for_type_inference(dtype=input.dtype)
    logits = helper.create_variable_for_type_inference(dtype=input.dtype)
    labels = helper.create_variable_for_type_inference(dtype="int64")
    helper.append_op(
        type="nce",
        inputs=ins,
        outputs={"Cost": [cost], "SampleLogits": [logits], "SampleLabels": [labels]},
        attrs={
            "num_total_classes": int(num_total_classes),
            "num_neg_samples": 10 if num_neg_samples is None else int(num_neg_samples),
            "seed": seed,
            "sampler": samplers[sampler],
            "is_sparse": is_sparse,
            "remote_prefetch": is_sparse,
        },
    )
    negatives = 10 if num_neg_samples is None else int(num_neg_samples)
    return cost / float(negatives + 1)  # fluid 1.8 averages over the true label and the negatives (a scale op)


# -- sequences: CTC and the linear-chain CRF --------------------------------------------------------
@layer
def warpctc(input, label, blank=0, norm_by_times=False, input_length=None, label_length=None):
    """CTC loss [batch, 1] of LoD logits [rows, classes] and LoD labels [rows, 1] (int32), or of padded
    logits [max_time, batch, classes] and labels [batch, max_label] with their lengths."""
    if (input_length is None) != (label_length is None):
        raise ValueError("warpctc: give both input_length and label_length (padded input), or neither (LoD input)")
    helper = LayerHelper("warpctc")
    loss = helper.create_variable_for_type_inference(dtype=input.dtype)
    grad = helper.create_variable_for_type_inference(dtype=input.dtype)
    inputs = {"Logits": [input], "Label": [label]}
    if input_length is not None:
        inputs.update(LogitsLength=[input_length], LabelLength=[label_length])
    helper.append_op(
        type="warpctc",
        inputs=inputs,
        outputs={"WarpCTCGrad": [grad], "Loss": [loss]},
        attrs={"blank": blank, "norm_by_times": norm_by_times},
    )
    return loss


@layer
def linear_chain_crf(input, label, param_attr=None, length=None):
    """Negative log likelihood of tag sequences under a linear-chain CRF whose transition parameter
    [tags + 2, tags] holds start weights, end weights and tag-to-tag weights; padded input
    [batch, time, tags] with ``length``, or LoD sequences of [rows, tags] without it."""
    helper = LayerHelper("linear_chain_crf")
    tags = input.shape[-1]
    transition = helper.create_parameter(attr=param_attr, shape=[tags + 2, tags], dtype=input.dtype)
    outs = {
        k: helper.create_variable_for_type_inference(dtype=input.dtype)
        for k in ("Alpha", "EmissionExps", "TransitionExps", "LogLikelihood")
    }
    helper.append_op(
        type="linear_chain_crf",
        inputs={"Emission": [input], "Transition": [transition], "Label": [label], "Length": _listed(length)},
        outputs={k: [v] for k, v in outs.items()},
    )
    return outs["LogLikelihood"]
