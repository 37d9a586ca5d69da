"""Which op outputs take a LoD from their inputs at run time, as fluid's ShareLoD did (NOTE: [LoD
values] in fluidcompat_ops/sequence.py): a kernel wrapped here sets its outputs' LoD."""

from __future__ import annotations

import torch

from fluidcompat_ops.sequence import lod_of, with_lod


def uses_lod(program) -> bool:
    """Whether a program's values may carry a LoD: it declares a variable with a lod_level or has a
    LoD sequence op."""
    for block in program.blocks:
        if any(v.lod_level for v in block.vars.values()):
            return True
        if any(op.type in LOD_OPS or op.type.startswith("sequence_") for op in block.ops):
            return True
    return False


# Ops that set their outputs' LoD themselves (besides the sequence_* ops).
LOD_OPS = frozenset(
    {
        "fused_embedding_seq_pool",
        "lstm",
        "lstmp",
        "gru",
        "lod_reset",
        "ctc_align",
        "edit_distance",
        "warpctc",
        "im2sequence",
        "beam_search",
        "beam_search_decode",
        "distribute_fpn_proposals",
        "collect_fpn_proposals",
        "generate_proposals",
        "box_decoder_and_assign",
        "multiclass_nms",
        "multiclass_nms2",
        "matrix_nms",
        "bipartite_match",
        "target_assign",
        "mine_hard_examples",
        "detection_map",
        "rpn_target_assign",
        "retinanet_target_assign",
        "retinanet_detection_output",
        "generate_proposal_labels",
        "lod_rank_table",
        "reorder_lod_tensor_by_rank",
        "lod_tensor_to_array",
        "array_to_lod_tensor",
        "shrink_rnn_memory",
        "locality_aware_nms",
        "filter_by_instag",
        "generate_mask_labels",
        "match_matrix_tensor",
        "var_conv_2d",
        # the fused inference ops (fluidcompat_ops/fusion.py), each as fluid 1.8's ShareLoD did
        "fc",
        "fusion_lstm",
        "fused_embedding_fc_lstm",
        "fusion_gru",
        "attention_lstm",
        "fusion_seqexpand_concat_fc",
        "fusion_seqconv_eltadd_relu",
        "fusion_seqpool_concat",
        "fusion_seqpool_cvm_concat",
        "fusion_repeated_fc_relu",
        "fusion_squared_mat_sub",
    }
)
# Ops whose output keeps no LoD although its first dimension is its input's (fluid 1.8 did not share).
_NO_SHARED_LOD = frozenset(
    {
        "linear_chain_crf",
        "arg_max",
        "arg_min",
        "mean",
        "shape",
        "size",
        "transpose",
        "transpose2",
        "gather",
        "scatter",
        "unstack",
        "norm",
        "maxout",
        "pixel_shuffle",
        "shuffle_channel",
        "random_crop",
        "nearest_interp",
        "bilinear_interp",
        "trilinear_interp",
        "bicubic_interp",
        "linear_interp",
        "gru_unit",
        "lstm_unit",
        "nce",
        "sample_logits",
        "kldiv_loss",
        "rank_loss",
        "margin_rank_loss",
        "smooth_l1_loss",
        "fill_constant_batch_size_like",
        "gaussian_random_batch_size_like",
        "uniform_random_batch_size_like",
    }
)
# Ops whose named output takes its first input's LoD whatever its rows (stack's along a new axis 0,
# accuracy's one value).
_LOD_WHATEVER_ROWS = {"stack": "Y", "accuracy": "Accuracy"}
_LOD_SOURCES = ("X", "Input", "Ids", "Logits")
# Forward ops whose grad op gives the input's gradient no LoD (fluid 1.8's grad kernels did not share it).
_NO_GRAD_LOD = frozenset(
    {
        "slice",
        "softmax",
        "matmul",
        "layer_norm",
        "expand",
        "clip",
        "stack",
        "batch_norm",
        "lstm",
        "lstmp",
        "gru",
        "row_conv",
        "add_position_encoding",
        # (found by feeding LoDTensors to each layer under fluid 1.8.5; the conv / pool / interp families
        # share one grad kernel each there, so their 3-D and other-mode ops are listed with them)
        "cos_sim",
        "strided_slice",
        "shuffle_channel",
        "nce",
        "scatter",
        "crop_tensor",
        "sigmoid_cross_entropy_with_logits",
        "sigmoid_focal_loss",
        "softmax_with_cross_entropy",
        "sample_logits",
        "kldiv_loss",
        "smooth_l1_loss",
        "conv2d",
        "depthwise_conv2d",
        "conv2d_transpose",
        "depthwise_conv2d_transpose",
        "conv3d",
        "conv3d_transpose",
        "pool2d",
        "pool3d",
        "max_pool2d_with_index",
        "max_pool3d_with_index",
        "pad",
        "pad2d",
        "nearest_interp",
        "bilinear_interp",
        "trilinear_interp",
        "bicubic_interp",
        "linear_interp",
        "bilinear_tensor_product",
        "instance_norm",
        "group_norm",
        "data_norm",
        "norm",
        "lrn",
        "maxout",
        "selu",
        "prelu",
        "pixel_shuffle",
        "fsp",
        "temporal_shift",
        "expand_as",
        "im2sequence",
        "space_to_depth",
        "unfold",
    }
)


def _reduces_rows(op) -> bool:
    """A reduce op over the first dimension: fluid 1.8 passed the LoD on only when it kept that one."""
    if not op.type.startswith("reduce_"):
        return False
    if op.attrs.get("reduce_all"):
        return True
    x = op.block._find_var_recursive(op.input("X")[0]) if op.input("X") else None
    rank = len(x.shape) if x is not None and x.shape is not None else 0
    return any(d == 0 or (rank and d == -rank) for d in op.attrs.get("dim") or [])


def _sharing_lod(kernel, op, d):
    """``kernel`` whose outputs get a LoD as fluid 1.8 gave them (its ShareLoD): a forward op's
    outputs with as many rows as its first input take that input's LoD (concat along axis 0 joins
    its inputs' LoDs); a grad op's ``S@GRAD`` takes the LoD of its forward input ``S``. Sequence ops
    set their own."""
    forward = d.forward
    if not forward and (op.type.startswith("sequence_") or op.type in LOD_OPS):
        return kernel
    if forward in _NO_GRAD_LOD:
        return kernel
    if forward:
        # S@GRAD takes the LoD of S; a grad op that does not read S (relu_grad reads Out, reshape2_grad
        # XShape) that of Out or of an output's gradient, where it fits S@GRAD's rows
        grads = tuple(s for s in op.inputs if s.endswith("@GRAD"))
        pairs = tuple(
            (s, (s[: -len("@GRAD")],) if op.inputs.get(s[: -len("@GRAD")]) else ("Out", "XShape") + grads)
            for s, names in op.outputs.items()
            if names and s.endswith("@GRAD")
        )

        def grad_kernel(ins, attrs):
            result = kernel(ins, attrs)
            for slot, sources in pairs:
                for i, g in enumerate(result.get(slot) or ()):
                    if not torch.is_tensor(g) or not g.dim():
                        continue
                    for source in sources:
                        vals = ins.get(source) or ()
                        lod = lod_of(vals[i if len(sources) == 1 else 0]) if vals else None
                        if lod and lod[-1][-1] == g.shape[0]:
                            with_lod(g, lod)
                            break
            return result

        return grad_kernel
    source = next((s for s in _LOD_SOURCES if op.inputs.get(s)), next((s for s in d.inputs if op.inputs.get(s)), None))
    if source is None:
        return kernel
    joins = op.type == "concat" and op.attrs.get("axis", 0) == 0 and not op.inputs.get("AxisTensor")
    by_rows = op.type not in _NO_SHARED_LOD and not _reduces_rows(op)
    whatever_rows = _LOD_WHATEVER_ROWS.get(op.type)

    def shared(ins, attrs):
        result = kernel(ins, attrs)
        vals = ins.get(source)
        x = vals[0] if vals else None
        lod = lod_of(x)
        if joins:
            lods = [lod_of(v) for v in vals]
            if lods[0] and all(len(lv) == 1 for lv in lods):
                joined = [0]
                for lv in lods:
                    base = joined[-1]
                    joined.extend(base + o for o in lv[0][1:])
                with_lod(result["Out"][0], [joined])
            return result
        if not lod:
            return result
        if whatever_rows:
            for t in result.get(whatever_rows) or ():
                with_lod(t, lod)
        for t in result.get("XShape") or ():  # for the grad op, which reads XShape instead of X
            if torch.is_tensor(t):
                with_lod(t, lod)
        if by_rows and x.dim():
            rows = x.shape[0]
            for slot, outs in result.items():
                for t in outs:
                    if torch.is_tensor(t) and t is not x and t.dim() and t.shape[0] == rows and slot != "XShape":
                        with_lod(t, lod)
        return result

    return shared
