"""``fluid.layers`` metrics: accuracy, auc, mean_iou, chunk_eval, edit_distance and detection_map.
fluid 1.8's ``layers.metric_op`` (accuracy, auc) hands its names out from here."""

from __future__ import annotations

from fluidcompat import unique_name
from fluidcompat.dtypes import VarType
from fluidcompat.framework import Variable, layer
from fluidcompat.initializer import ConstantInitializer
from fluidcompat.layer_helper import LayerHelper
from fluidcompat.layers.indexing import topk

__all__ = [
    "accuracy",
    "auc",
    "mean_iou",
    "chunk_eval",
    "edit_distance",
]


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


@layer
def auc(input, label, curve="ROC", num_thresholds=2**12 - 1, topk=1, slide_steps=1):
    """Global and sliding-window AUC, accumulated in persistable counters (two ``auc`` ops)."""
    helper = LayerHelper("auc")
    auc_out = helper.create_variable_for_type_inference(dtype="float64")
    batch_auc_out = helper.create_variable_for_type_inference(dtype="float64")
    stats = []
    # fluid's counters: the sliding window's batch slots, their sum and a batch count, flat
    window = [(slide_steps + 1) * (num_thresholds + 1) + (1 if slide_steps else 0)]
    for shape in (window,) * 2 + ([1, num_thresholds + 1],) * 2:
        var = helper.create_global_variable(
            persistable=True, dtype="int64", shape=shape, name=unique_name.generate("_generated_var")
        )
        startup = helper.startup_program.global_block()
        startup.create_var(name=var.name, shape=shape, dtype="int64", persistable=True)
        ConstantInitializer(0.0)(startup.var(var.name), startup)
        stats.append(var)
    batch_pos, batch_neg, stat_pos, stat_neg = stats
    for out, pos, neg, steps in ((batch_auc_out, batch_pos, batch_neg, slide_steps), (auc_out, stat_pos, stat_neg, 0)):
        helper.append_op(
            type="auc",
            inputs={"Predict": [input], "Label": [label], "StatPos": [pos], "StatNeg": [neg]},
            attrs={"curve": curve, "num_thresholds": num_thresholds, "slide_steps": steps},
            outputs={"AUC": [out], "StatPosOut": [pos], "StatNegOut": [neg]},
        )
    return auc_out, batch_auc_out, stats


@layer
def mean_iou(input, label, num_classes):
    helper = LayerHelper("mean_iou")
    miou = helper.create_variable_for_type_inference(dtype="float32")
    wrong = helper.create_variable_for_type_inference(dtype="int32")
    correct = helper.create_variable_for_type_inference(dtype="int32")
    helper.append_op(
        type="mean_iou",
        inputs={"Predictions": [input], "Labels": [label]},
        outputs={"OutMeanIou": [miou], "OutWrong": [wrong], "OutCorrect": [correct]},
        attrs={"num_classes": num_classes},
    )
    return miou, wrong, correct


@layer
def chunk_eval(input, label, chunk_scheme, num_chunk_types, excluded_chunk_types=None, seq_length=None):
    """Chunk precision, recall and F1 (and the three counts) of IOB / IOE / IOBES / plain tag
    sequences: padded [batch, length] with ``seq_length``, or one sequence per call without it."""
    if chunk_scheme not in ("IOB", "IOE", "IOBES", "plain"):
        raise ValueError(f"chunk_scheme must be IOB, IOE, IOBES or plain. Received: {chunk_scheme!r}")
    helper = LayerHelper("chunk_eval")
    outs = [helper.create_variable_for_type_inference(dtype="float32") for _ in range(3)]
    outs += [helper.create_variable_for_type_inference(dtype="int64") for _ in range(3)]
    names = ("Precision", "Recall", "F1-Score", "NumInferChunks", "NumLabelChunks", "NumCorrectChunks")
    ins = {"Inference": [input], "Label": [label]}
    if seq_length is not None:
        ins["SeqLength"] = [seq_length]
    helper.append_op(
        type="chunk_eval",
        inputs=ins,
        outputs={n: [v] for n, v in zip(names, outs)},
        attrs={
            "num_chunk_types": num_chunk_types,
            "chunk_scheme": chunk_scheme,
            "excluded_chunk_types": list(excluded_chunk_types or []),
        },
    )
    return tuple(outs)


@layer
def edit_distance(input, label, normalized=True, ignored_tokens=None, input_length=None, label_length=None):
    """Levenshtein distance per sequence: LoD [rows, 1] int64 sequences, or padded [batch, length]
    tensors with their lengths. ``ignored_tokens`` are erased from LoD sequences first (op
    ``sequence_erase``). Returns (distances [sequences, 1], the number of sequences)."""
    if (input_length is None) != (label_length is None):
        raise ValueError("edit_distance: give both input_length and label_length, or neither")
    helper = LayerHelper("edit_distance")
    if ignored_tokens:
        if input_length is not None:
            raise ValueError(
                "edit_distance: ignored_tokens erases tokens from LoD sequences; with input_length and "
                "label_length (padded input) leave them out of the input instead"
            )
        erased = []
        for x in (input, label):
            e = helper.create_variable_for_type_inference(dtype="int64")
            helper.append_op(
                type="sequence_erase", inputs={"X": [x]}, outputs={"Out": [e]}, attrs={"tokens": list(ignored_tokens)}
            )
            erased.append(e)
        input, label = erased
    ins = {"Hyps": [input], "Refs": [label]}
    if input_length is not None:
        ins.update(HypsLength=[input_length], RefsLength=[label_length])
    # fluid 1.8 declared the distances int64; its kernel writes float32 all the same
    out = helper.create_variable_for_type_inference(dtype="int64")
    seq_num = helper.create_variable_for_type_inference(dtype="int64")
    helper.append_op(
        type="edit_distance",
        inputs=ins,
        outputs={"Out": [out], "SequenceNum": [seq_num]},
        attrs={"normalized": normalized},
    )
    return out, seq_num


@layer
def detection_map(
    detect_res,
    label,
    class_num,
    background_label=0,
    overlap_threshold=0.3,
    evaluate_difficult=True,
    has_state=None,
    input_states=None,
    out_states=None,
    ap_version="integral",
):
    """Mean average precision [1] of ``detect_res`` (LoD rows [label, score, box]) against ``label``
    (LoD rows [label, difficult, box] or [label, box]), 'integral' or '11point'. With ``has_state``
    (1) and ``input_states`` (positive counts, true and false positive flags) earlier batches count
    too, and ``out_states`` receive the accumulation (``fluid.metrics.DetectionMAP``)."""
    if ap_version not in ("integral", "11point"):
        raise ValueError(f"detection_map: ap_version must be 'integral' or '11point'. Received: {ap_version!r}")
    helper = LayerHelper("detection_map")
    map_out = helper.create_variable_for_type_inference("float32")
    outs = list(out_states) if out_states is not None else [
        helper.create_variable_for_type_inference(d) for d in ("int32", "float32", "float32")
    ]  # fmt: skip
    inputs = {"Label": [label], "DetectRes": [detect_res]}
    if has_state is not None:
        inputs["HasState"] = [has_state]
    if input_states is not None:
        inputs.update(PosCount=[input_states[0]], TruePos=[input_states[1]], FalsePos=[input_states[2]])
    helper.append_op(
        type="detection_map",
        inputs=inputs,
        outputs={"MAP": [map_out], "AccumPosCount": [outs[0]], "AccumTruePos": [outs[1]], "AccumFalsePos": [outs[2]]},
        attrs={
            "overlap_threshold": overlap_threshold,
            "evaluate_difficult": evaluate_difficult,
            "ap_type": ap_version,
            "class_num": class_num,
            "background_label": background_label,
        },
    )
    return map_out
