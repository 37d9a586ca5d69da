"""The LoD level an op's outputs get when it is built (fluid 1.8's compile-time ``ShareLoD``): most
ops that keep their input's rows give their main output the first input's ``lod_level``, so that
``fc(embedding(words))`` reads as a sequence (lod_level 1) as it did in fluid. Recorded under fluid
1.8.5 in tests/golden/lod_levels.

Where fluid said 0 for an output that carries a LoD when run (``sequence_expand``, ``sequence_slice``)
the layers set the level they produce instead.
"""

from __future__ import annotations

from typing import Callable, Dict, Optional, Tuple

from fluidcompat.dtypes import VarType

# op type -> (input slot, output slots that take its first variable's lod_level). The families of
# many like ops add theirs on their import (``takes_x_lod``): the activations, the elementwise, compare
# and logical ops; importing fluidcompat_ops (as framework.py does) imports them all.
_X_OUT = ("X", ("Out",))
_REDUCE = ("reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod")
SHARED: Dict[str, Tuple[str, Tuple[str, ...]]] = {
    **{
        t: _X_OUT
        for t in (
            "softmax",
            "scale",
            "cast",
            "dropout",
            "concat",
            "sum",
            "assign",
            "clip",
            "clip_by_norm",
            "cos_sim",
            "one_hot",
            "mul",
            "matmul",
            "pow",
            "cumsum",
            "label_smooth",
            "sigmoid_cross_entropy_with_logits",
            "huber_loss",
            "pad",
            "pad2d",
            "pad_constant_like",
            "lrn",
            "fill_zeros_like",
            "fill_any_like",
            "add_position_encoding",
            "bilinear_tensor_product",
            "sampling_id",
            "pool2d",
            "fsp",
            "similarity_focus",
            "sequence_conv",
            "row_conv",
            "prelu",
            "hierarchical_sigmoid",
            "unsqueeze2",
            "squeeze2",
            "flatten2",
            "logical_not",
            "log_softmax",
            "sign",
            "one_hot_v2",
            "sequence_concat",
            "sequence_erase",
            "sequence_enumerate",
            "sequence_expand",
            "sequence_reshape",
            "sequence_softmax",
            "sequence_topk_avg_pooling",
            "hash",
            "iou_similarity",
            "match_matrix_tensor",
        )
    },
    "sequence_reverse": ("X", ("Y",)),
    "cvm": ("X", ("Y",)),
    "sequence_expand_as": ("Y", ("Out",)),
    "box_clip": ("Input", ("Output",)),
    "box_coder": ("TargetBox", ("OutputBox",)),
    "box_decoder_and_assign": ("TargetBox", ("DecodeBox", "OutputAssignBox")),
    "lookup_table": ("Ids", ("Out",)),
    "lookup_table_v2": ("Ids", ("Out",)),
    **{
        t: ("X", ("Y",))
        for t in (
            "layer_norm",
            "batch_norm",
            "data_norm",
            "group_norm",
            "instance_norm",
            "cross_entropy",
            "cross_entropy2",
            "bpr_loss",
            "teacher_student_sigmoid_loss",
            "stack",
        )
    },
    "softmax_with_cross_entropy": ("Logits", ("Softmax", "Loss")),
    "log_loss": ("Predicted", ("Loss",)),
    "top_k": ("X", ("Out", "Indices")),
    "accuracy": ("Out", ("Accuracy",)),
    "slice": ("Input", ("Out",)),
    "strided_slice": ("Input", ("Out",)),
    "conv2d": ("Input", ("Output",)),
    "lstm": ("Input", ("Hidden", "Cell")),
    "lstmp": ("Input", ("Projection", "Cell")),
    "gru": ("Input", ("Hidden",)),
    "crf_decoding": ("Emission", ("ViterbiPath",)),
    # fused inference ops (fluidcompat_ops/fusion.py)
    "fc": ("Input", ("Out",)),
    "fusion_lstm": ("X", ("Hidden", "Cell", "XX")),
    "fused_embedding_fc_lstm": ("Ids", ("Hidden", "Cell", "XX")),
    "fusion_gru": ("X", ("Hidden", "XX")),
    "attention_lstm": ("X", ("Hidden", "Cell")),
    "fusion_seqexpand_concat_fc": _X_OUT,
    "fusion_seqconv_eltadd_relu": _X_OUT,
    "fusion_repeated_fc_relu": _X_OUT,
    "reshape2": _X_OUT,
    "expand": _X_OUT,
    "split": _X_OUT,
    **{t: _X_OUT for t in _REDUCE},
}


def _keeps_rows(op, x, out) -> bool:
    return len(x.shape) > 0 and len(out.shape) > 0 and out.shape[0] == x.shape[0]


# Ops that share only when their rows stay the rows of X.
_WHEN: Dict[str, Callable] = {
    "reshape2": _keeps_rows,
    "expand": _keeps_rows,
    "split": lambda op, x, out: op.attrs.get("axis", 0) % max(len(x.shape), 1) != 0,
    **{t: lambda op, x, out: not op.attrs.get("reduce_all") and (op.attrs.get("dim") or [0])[0] != 0 for t in _REDUCE},
}


# Outputs that are one sequence per instance (image, sequence) whatever the inputs' levels.
ONE_LEVEL: Dict[str, Tuple[str, ...]] = {
    "multiclass_nms": ("Out",),
    "multiclass_nms2": ("Out", "Index"),
    "sequence_unpad": ("Out",),
    "im2sequence": ("Out",),
    "collect_fpn_proposals": ("FpnRois",),
    "distribute_fpn_proposals": ("MultiFpnRois",),
    "generate_mask_labels": ("MaskRois", "RoiHasMaskInt32", "MaskInt32"),
    "fusion_seqpool_concat": ("Out",),
}


def _level_of(op, find_var, slot: str) -> Optional[int]:
    names = op.inputs.get(slot) or []
    v = find_var(names[0]) if names else None
    return None if v is None else v.lod_level


def _computed_level(op, find_var) -> Optional[int]:
    """The output level of ops whose level is computed from their inputs (fluid 1.8.5's, checked
    against its programs): sequence_pool drops one level; lod_reset takes Y's (at least 1), else one
    more than X's when appending, else 1."""
    if op.type == "sequence_pool":
        x = _level_of(op, find_var, "X")
        return None if x is None else max(x - 1, 0)
    if op.type == "lod_reset":
        y = _level_of(op, find_var, "Y")
        if y is not None:
            return max(y, 1)
        x = _level_of(op, find_var, "X")
        return (x or 0) + 1 if op.attrs.get("append") else 1
    return None


def _set_level(op, find_var, slots, level: int) -> None:
    for slot in slots:
        for name in op.outputs.get(slot, []):
            v = find_var(name)
            if v is not None and v.type == VarType.LOD_TENSOR:
                v._lod_level = level


def takes_x_lod(*op_types: str) -> None:
    """Ops whose ``Out`` takes the lod_level of their first ``X`` (called by the op families)."""
    SHARED.update({t: _X_OUT for t in op_types})


def share_lod_level(op, find_var: Callable[[str], Optional[object]]) -> None:
    """Give ``op``'s outputs the lod_level of its input, where fluid 1.8 did when building it."""
    if op.type in SHARED:
        slot, outs = SHARED[op.type]
    elif op.type in ONE_LEVEL:
        _set_level(op, find_var, ONE_LEVEL[op.type], 1)
        return
    else:
        level = _computed_level(op, find_var)
        if level is not None:
            _set_level(op, find_var, ("Out",), level)
        return
    names = op.inputs.get(slot) or []
    x = find_var(names[0]) if names else None
    if x is None or x.type != VarType.LOD_TENSOR:
        return
    when = _WHEN.get(op.type)
    for out_slot in outs:
        for name in op.outputs.get(out_slot, []):
            out = find_var(name)
            if out is not None and out.type == VarType.LOD_TENSOR and (when is None or when(op, x, out)):
                out._lod_level = x.lod_level
