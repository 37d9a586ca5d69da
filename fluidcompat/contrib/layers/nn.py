"""fluid.contrib.layers' op layers: fused_elemwise_activation, fused_embedding_seq_pool,
partial_concat, partial_sum, shuffle_batch (and multiclass_nms2, as fluid.layers has it)."""

from __future__ import annotations

import warnings

import numpy as np

from fluidcompat import unique_name
from fluidcompat.dtypes import VarType
from fluidcompat.layer_helper import LayerHelper, check_dtype, check_variable

__all__ = [
    "fused_elemwise_activation",
    "fused_embedding_seq_pool",
    "multiclass_nms2",
    "partial_concat",
    "partial_sum",
    "shuffle_batch",
    "tree_conv",
    "match_matrix_tensor",
    "sequence_topk_avg_pooling",
    "var_conv_2d",
    "tdm_child",
    "tdm_sampler",
    "rank_attention",
]


def fused_elemwise_activation(x, y, functor_list, axis=-1, scale=0.0, save_intermediate_out=True):
    """One binary (``elementwise_add``, ``elementwise_mul``) and one unary functor (``relu``, ``scale``,
    ``tanh``, ``sigmoid``) in one op: ``[binary, unary]`` is ``binary(x, unary(y))``, ``[unary,
    binary]`` is ``unary(binary(x, y))``; ``scale`` multiplies by ``scale``."""
    from fluidcompat_ops.contrib import _functors

    if isinstance(functor_list, str):
        functor_list = functor_list.split(",")
    if not isinstance(functor_list, list) or len(functor_list) != 2:
        raise ValueError("functor_list should be a list of str, and the length should be 2.")
    _functors(functor_list)
    check_variable(x, "x", "fused_elemwise_activation")
    check_variable(y, "y", "fused_elemwise_activation")
    helper = LayerHelper("fused_elemwise_activation")
    out = helper.create_variable_for_type_inference(dtype=x.dtype)
    intermediate = helper.create_variable_for_type_inference(dtype=x.dtype)
    helper.append_op(
        type="fused_elemwise_activation",
        inputs={"X": [x], "Y": [y]},
        outputs={"Out": [out], "IntermediateOut": [intermediate]},
        attrs={
            "axis": axis,
            "scale": float(scale),
            "save_intermediate_out": save_intermediate_out,
            "functor_list": list(functor_list),
        },
    )
    return out


def fused_embedding_seq_pool(
    input, size, is_sparse=False, padding_idx=None, combiner="sum", param_attr=None, dtype="float32"
):
    """The sum over each sequence of ``input``'s (LoD ids [N, 1]) embedding rows: [sequences, size[1]];
    ids equal to ``padding_idx`` add nothing."""
    check_variable(input, "input", "fused_embedding_seq_pool")
    helper = LayerHelper("fused_embedding_seq_pool")
    w = helper.create_parameter(attr=param_attr, shape=list(size), dtype=dtype, is_bias=False)
    out = helper.create_variable_for_type_inference(dtype)
    if padding_idx is None:
        padding_idx = -1
    elif padding_idx < 0:
        padding_idx += size[0]
    helper.append_op(
        type="fused_embedding_seq_pool",
        inputs={"Ids": [input], "W": [w]},
        outputs={"Out": [out]},
        attrs={"is_sparse": is_sparse, "combiner": combiner, "padding_idx": padding_idx},
    )
    return out


def shuffle_batch(x, seed=None):
    """``x``'s rows (all dimensions but the last, flattened) in a random order; the order is kept in a
    ``ShuffleIdx`` output (row j goes to place ShuffleIdx[j]) and the gradient puts rows back.
    ``seed``: an int (the program's random_seed when None and set) or an int64 Variable."""
    check_variable(x, "x", "shuffle_batch")
    helper = LayerHelper("shuffle_batch")
    out = helper.create_variable_for_type_inference(dtype=x.dtype)
    shuffle_idx = helper.create_variable_for_type_inference(dtype=VarType.INT64)
    shuffle_idx.stop_gradient = True
    if seed is None and helper.main_program.random_seed != 0:
        seed = helper.main_program.random_seed
    if seed is None:
        seed = int(np.random.randint(-65536, 65535))
    attrs = {}
    if isinstance(seed, int):
        attrs["startup_seed"] = seed
        seed = helper.create_global_variable(
            name=unique_name.generate("shuffle_batch_seed"), dtype=VarType.INT64, persistable=True, shape=[1]
        )
        seed.stop_gradient = True
    helper.append_op(
        type="shuffle_batch",
        inputs={"X": [x], "Seed": [seed]},
        outputs={"Out": [out], "ShuffleIdx": [shuffle_idx], "SeedOut": [seed]},
        attrs=attrs,
    )
    return out


def multiclass_nms2(
    bboxes, scores, score_threshold, nms_top_k, keep_top_k, nms_threshold=0.3, normalized=True, nms_eta=1.0,
    background_label=0, return_index=False, name=None,
):  # fmt: skip
    """``fluid.layers.multiclass_nms`` that can also return each kept box's index in the input (op
    ``multiclass_nms2``): ``(out, index)`` with ``return_index``."""
    from fluidcompat.layers.detection_nms import _nms

    out, index = _nms(
        "multiclass_nms2", bboxes, scores, name, background_label=background_label,
        score_threshold=score_threshold, nms_top_k=nms_top_k, nms_threshold=nms_threshold, nms_eta=nms_eta,
        keep_top_k=keep_top_k, normalized=normalized,
    )  # fmt: skip
    return (out, index) if return_index else out


def _partial(op_type, input, start_index, length, dtypes):
    if not isinstance(input, list):
        warnings.warn(f"The type of input in {op_type} should be list, but received {type(input)}.", stacklevel=3)
        input = [input]
    for i, x in enumerate(input):
        check_variable(x, f"input[{i}]", op_type)
        check_dtype(x.dtype, f"input[{i}]", dtypes, op_type)
    for name, value in (("start_index", start_index), ("length", length)):
        if not isinstance(value, int) or isinstance(value, bool):
            raise TypeError(f"The type of '{name}' in {op_type} must be <class 'int'>, but received {type(value)}. ")
    helper = LayerHelper(op_type)
    out = helper.create_variable_for_type_inference(dtype=input[0].dtype)
    helper.append_op(
        type=op_type,
        inputs={"X": list(input)},
        outputs={"Out": [out]},
        attrs={"start_index": start_index, "length": length},
    )
    return out


def partial_concat(input, start_index=0, length=-1):
    """Columns ``[start_index, start_index + length)`` (to the end for -1) of each 2-D input, side by side."""
    return _partial("partial_concat", input, start_index, length, ["float16", "float32", "float64", "int32", "int64"])


def partial_sum(input, start_index=0, length=-1):
    """The sum of the inputs' columns ``[start_index, start_index + length)``."""
    return _partial("partial_sum", input, start_index, length, ["float32", "float64", "int32", "int64"])


def tree_conv(
    nodes_vector,
    edge_set,
    output_size,
    num_filters=1,
    max_depth=2,
    act="tanh",
    param_attr=None,
    bias_attr=None,
    name=None,
):
    """Tree-based convolution (TBCNN, op ``tree_conv``): each node's patch (its subtree less than
    ``max_depth`` deep) weighted by depth and sibling position, times the filter
    ``[feature_size, 3, output_size, num_filters]``; then a bias per node and output (shape
    ``[max_node_size, output_size, num_filters]``) unless ``bias_attr`` is False, then ``act``.
    ``nodes_vector`` [batch, max_node_size, feature_size]; ``edge_set`` [batch, edges, 2] of
    (parent, child) node ids from 1, a (0, 0) row ending the list. Output
    ``[batch, max_node_size, output_size, num_filters]``; a node outside the tree gets zeros."""
    check_variable(nodes_vector, "nodes_vector", "tree_conv")
    check_variable(edge_set, "edge_set", "tree_conv")
    if len(nodes_vector.shape) != 3:
        raise ValueError(
            "tree_conv: nodes_vector must be 3-D [batch, max_node_size, feature_size]. "
            f"Received: {list(nodes_vector.shape)}"
        )
    helper = LayerHelper("tree_conv", param_attr=param_attr, bias_attr=bias_attr, act=act, name=name)
    w = helper.create_parameter(
        attr=param_attr, shape=[nodes_vector.shape[2], 3, output_size, num_filters], dtype=nodes_vector.dtype
    )
    out = helper.create_variable_for_type_inference(dtype=nodes_vector.dtype)
    helper.append_op(
        type="tree_conv",
        inputs={"NodesVector": [nodes_vector], "EdgeSet": [edge_set], "Filter": [w]},
        outputs={"Out": [out]},
        attrs={"max_depth": max_depth},
    )
    return helper.append_activation(helper.append_bias_op(out))


def match_matrix_tensor(x, y, channel_num, act=None, param_attr=None, dtype="float32", name=None):
    """The matching matrix of two sequences of word vectors (op ``match_matrix_tensor``): for each
    pair of sequences (x [n, h], y [m, h], one LoD level each), x W y^T with W ``[h, channel_num, h]``,
    [channel_num, n, m] flattened into one column with one LoD entry per pair; then ``act``.
    Returns ``(out, tmp)``, tmp being x W."""
    x_shape, y_shape = list(x.shape), list(y.shape)
    if len(x_shape) != 2 or len(y_shape) != 2 or x_shape[-1] != y_shape[-1]:
        raise ValueError(
            f"match_matrix_tensor: x and y must be 2-D with the same width. Received: x {x_shape}, y {y_shape}"
        )
    helper = LayerHelper("match_matrix_tensor", param_attr=param_attr, act=act, name=name)
    w = helper.create_parameter(
        attr=param_attr, shape=[x_shape[-1], channel_num, y_shape[-1]], dtype=dtype, is_bias=False
    )
    out = helper.create_variable_for_type_inference(dtype)
    tmp = helper.create_variable_for_type_inference(dtype, stop_gradient=True)
    helper.append_op(
        type="match_matrix_tensor",
        inputs={"X": [x], "Y": [y], "W": [w]},
        outputs={"Out": [out], "Tmp": [tmp]},
        attrs={"dim_t": channel_num},
    )
    return helper.append_activation(out), tmp


def sequence_topk_avg_pooling(input, row, col, topks, channel_num):
    """Per sequence, channel and row of ``input`` (``channel_num * rows * columns`` values, rows and
    columns from the LoDs of ``row`` and ``col``): the mean of the k largest values for each k in
    ``topks`` (missing values count as 0). Output [rows, channel_num * len(topks)] with row's LoD."""
    helper = LayerHelper("sequence_topk_avg_pooling")
    out = helper.create_variable_for_type_inference(dtype=input.dtype)
    pos = helper.create_variable_for_type_inference(dtype="int32", stop_gradient=True)
    helper.append_op(
        type="sequence_topk_avg_pooling",
        inputs={"X": [input], "ROW": [row], "COLUMN": [col]},
        outputs={"Out": [out], "pos": [pos]},
        attrs={"topks": list(topks), "channel_num": channel_num},
    )
    return out


def var_conv_2d(
    input,
    row,
    col,
    input_channel,
    output_channel,
    filter_size,
    stride=1,
    param_attr=None,
    act=None,
    dtype="float32",
    name=None,
):
    """2-D convolution of each sequence of ``input`` (one LoD level, one value per row) read as an
    image [input_channel, rows, columns], rows and columns from the LoDs of ``row`` and ``col``
    (op ``var_conv_2d``): filter ``[output_channel, input_channel * kh * kw]``, zero padding of
    kh // 2 rows above and kw // 2 columns left, (rows - 1) // stride + 1 output rows (likewise
    columns); each sequence's output [output_channel, out_rows, out_cols] in one column; then ``act``."""
    if len(input.shape) != 2:
        raise ValueError(f"var_conv_2d: input must be 2-D [values, 1]. Received: {list(input.shape)}")
    from fluidcompat.dygraph.nn import _ntuple

    kh, kw = _ntuple(filter_size, 2, "filter_size")
    sh, sw = _ntuple(stride, 2, "stride")
    helper = LayerHelper("var_conv_2d", param_attr=param_attr, act=act, name=name)
    elems = int(input_channel) * kh * kw
    w = helper.create_parameter(attr=param_attr, shape=[int(output_channel), elems], dtype=dtype)
    out = helper.create_variable_for_type_inference(dtype)
    col_out = helper.create_variable_for_type_inference(dtype, stop_gradient=True)
    helper.append_op(
        type="var_conv_2d",
        inputs={"X": [input], "ROW": [row], "COLUMN": [col], "W": [w]},
        outputs={"Out": [out], "Col": [col_out]},
        attrs={
            "InputChannel": input_channel,
            "OutputChannel": output_channel,
            "StrideH": sh,
            "StrideW": sw,
            "KernelH": kh,
            "KernelW": kw,
        },
    )
    return helper.append_activation(out)


def tdm_child(x, node_nums, child_nums, param_attr=None, dtype="int32"):
    """The children of the tree nodes ``x`` (op ``tdm_child``) and whether each is a leaf (an item),
    from the tree-info parameter [node_nums, 3 + child_nums] (item id, layer id, parent id, child
    ids padded with 0; ``param_attr`` gives it, default zeros). Returns ``(child, leaf_mask)``, each
    x's shape + [child_nums]; node 0 is padding."""
    from fluidcompat.initializer import ConstantInitializer

    check_dtype(dtype, "dtype", ["int32", "int64"], "fluid.contrib.layers.tdm_child")
    helper = LayerHelper("tdm_child", param_attr=param_attr)
    tree_info = helper.create_parameter(
        attr=param_attr, shape=[node_nums, 3 + child_nums], dtype=dtype, default_initializer=ConstantInitializer(0)
    )
    tree_info.stop_gradient = True
    child = helper.create_variable_for_type_inference(dtype=dtype)
    leaf_mask = helper.create_variable_for_type_inference(dtype=dtype)
    helper.append_op(
        type="tdm_child",
        inputs={"X": [x], "TreeInfo": [tree_info]},
        outputs={"Child": [child], "LeafMask": [leaf_mask]},
        attrs={"child_nums": child_nums, "dtype": VarType.INT64 if dtype == "int64" else VarType.INT32},
        stop_gradient=True,
    )
    return child, leaf_mask


def tdm_sampler(
    x, neg_samples_num_list, layer_node_num_list, leaf_node_num, tree_travel_attr=None, tree_layer_attr=None,
    output_positive=True, output_list=True, seed=0, tree_dtype="int32", dtype="int32",
):  # fmt: skip
    """Training samples along the tree for the leaves ``x`` (op ``tdm_sampler``): per layer the node
    on each leaf's path (the Travel parameter [leaf_node_num, layers]) and
    ``neg_samples_num_list[l]`` other nodes of the layer (the Layer parameter [node_nums, 1], the
    layers' nodes one after another) drawn uniformly, with labels (1 for the path's node) and masks
    (0 where the path is padding). ``seed`` other than 0 draws as fluid 1.8 did. Returns (out,
    labels, mask), each [N, samples], or with ``output_list`` each a list of [N, layer samples, 1]."""
    from fluidcompat import layers
    from fluidcompat.initializer import ConstantInitializer

    check_dtype(tree_dtype, "tree_dtype", ["int32", "int64"], "fluid.contrib.layers.tdm_sampler")
    check_dtype(dtype, "dtype", ["int32", "int64"], "fluid.contrib.layers.tdm_sampler")
    if len(neg_samples_num_list) != len(layer_node_num_list):
        raise ValueError(
            "The shape of negative samples list must match the shape of layers. "
            f"But received len of neg_samples_num_list: {len(neg_samples_num_list)},"
            f"and len of layer_node_num_list: {len(layer_node_num_list)}, please check your input."
        )
    if leaf_node_num is None:
        raise AssertionError("leaf_node_num should not be None here.")
    offsets = [0]
    for k, (count, nodes) in enumerate(zip(neg_samples_num_list, layer_node_num_list)):
        offsets.append(offsets[-1] + nodes)
        if count >= nodes:
            raise ValueError(
                "The number of negative samples must be less than the number of nodes "
                f"in the layer {k}, But received negative nums {count}, and num of node at layer {k} "
                f"is {nodes}, please check your input."
            )
    if not leaf_node_num < offsets[-1]:
        raise AssertionError("leaf_node_num must be less than total node nums.")
    helper = LayerHelper("tdm_sampler")
    travel = helper.create_parameter(
        attr=tree_travel_attr, shape=[leaf_node_num, len(layer_node_num_list)], dtype=tree_dtype,
        default_initializer=ConstantInitializer(0),
    )  # fmt: skip
    layer = helper.create_parameter(
        attr=tree_layer_attr, shape=[offsets[-1], 1], dtype=tree_dtype, default_initializer=ConstantInitializer(0)
    )
    results = []
    for _ in range(3):
        v = helper.create_variable_for_type_inference(dtype=dtype)
        v.stop_gradient = True
        results.append(v)
    out, labels, mask = results
    helper.append_op(
        type="tdm_sampler",
        inputs={"X": [x], "Travel": [travel], "Layer": [layer]},
        outputs={"Out": [out], "Labels": [labels], "Mask": [mask]},
        attrs={
            "neg_samples_num_list": list(neg_samples_num_list),
            "output_positive": bool(output_positive),
            "layer_offset_lod": offsets,
            "seed": int(seed),
            "dtype": VarType.INT64 if dtype == "int64" else VarType.INT32,
        },
    )
    if not output_list:
        return out, labels, mask
    lists = ([], [], [])
    start = 0
    for count in neg_samples_num_list:
        width = count + (1 if output_positive else 0)
        parts = [layers.slice(v, axes=[1], starts=[start], ends=[start + width]) for v in results]
        for dest, part in zip(lists, parts):
            part = layers.reshape(part, [-1, width, 1])
            part.stop_gradient = True
            dest.append(part)
        start += width
    return lists


def rank_attention(input, rank_offset, rank_param_shape, rank_param_attr, max_rank=3):
    """Rank attention (op ``rank_attention``): each instance i of ``input`` [N, D] attends to up to
    ``max_rank`` instances listed in ``rank_offset`` [N, 2 * max_rank + 1] (its own rank, then
    (rank, row) pairs; ranks start at 1, below 1 is none): Out[i] = sum over k of X[row_k] @
    W[own rank, rank_k], W the [D, C] blocks of the parameter ``rank_param_shape`` =
    [D * max_rank * max_rank, C]. The gradient flows to the parameter only (as in fluid 1.8)."""
    helper = LayerHelper("rank_attention")
    dtype = input.dtype
    if input.shape[1] * max_rank * max_rank != rank_param_shape[0]:
        raise AssertionError(
            f"rank_attention: rank_param_shape[0] must be input's width * max_rank * max_rank = "
            f"{input.shape[1] * max_rank * max_rank}. Received {rank_param_shape[0]}"
        )
    rank_param = helper.create_parameter(attr=rank_param_attr, shape=rank_param_shape, dtype=dtype)
    rank_param.stop_gradient = False
    output = helper.create_variable_for_type_inference(dtype)
    helper.create_variable_for_type_inference(dtype, stop_gradient=True)  # fluid 1.8.5's unused ins_rank
    helper.append_op(
        type="rank_attention",
        inputs={"X": [input], "RankOffset": [rank_offset], "RankParam": [rank_param]},
        outputs={"Out": [output]},
        attrs={"MaxRank": max_rank},
    )
    return output
