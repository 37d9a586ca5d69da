# Golden script: the names fluid 1.8.5 gave the outputs of ~150 layers (with and without name=), the
# variables a program and its startup program hold afterwards, and the persistable learning-rate
# variables of the decay schedules (what scripts fetch by name and checkpoints hold as files).
# Prints one line per layer and the two sorted variable lists.
import paddle.fluid as fluid

L = fluid.layers
out = []


def rec(tag, v):
    try:
        v = v() if callable(v) else v
    except Exception as e:
        out.append((tag, "ERR " + type(e).__name__))
        return
    vs = v if isinstance(v, (list, tuple)) else [v]
    out.append((tag, [x if isinstance(x, str) else getattr(x, "name", None) for x in vs]))


x = fluid.data("x", [None, 3, 8, 8], "float32")
y = fluid.data("y", [None, 16], "float32")
ids = fluid.data("ids", [None, 1], "int64")
seq = fluid.data("seq", [None, 16], "float32", lod_level=1)
sid = fluid.data("sid", [None, 1], "int64", lod_level=1)
rec("fc", L.fc(y, 4))
rec("fc_named", L.fc(y, 4, name="myfc"))
rec("fc_act_named", L.fc(y, 4, act="relu", name="myfc2"))
rec("conv", L.conv2d(x, 4, 3))
rec("conv_named", L.conv2d(x, 4, 3, name="myconv", act="relu"))
rec("bn", L.batch_norm(x))
rec("bn_named", L.batch_norm(x, name="mybn"))
rec("pool", L.pool2d(x, 2))
rec("pool_named", L.pool2d(x, 2, name="mypool"))
rec("emb", L.embedding(ids, [10, 4]))
rec("emb_named", L.embedding(ids, [10, 4], param_attr="embw"))
rec("relu", L.relu(y))
rec("relu_named", L.relu(y, name="myrelu"))
rec("softmax", L.softmax(y))
rec("softmax_named", L.softmax(y, name="mysm"))
rec("scale_named", L.scale(y, 2.0, name="mysc"))
rec("concat", L.concat([y, y], axis=1))
rec("concat_named", L.concat([y, y], axis=1, name="mycat"))
rec("elementwise_add_named", L.elementwise_add(y, y, name="myadd"))
rec("elementwise_add_act", L.elementwise_add(y, y, act="relu"))
rec("mean", L.mean(y))
rec("mean_named", L.mean(y, name="mymean"))
rec("reduce_sum_named", L.reduce_sum(y, name="myrs"))
rec("dropout", L.dropout(y, 0.5))
rec("dropout_named", L.dropout(y, 0.5, name="mydrop"))
rec("layer_norm", L.layer_norm(y))
rec("layer_norm_named", L.layer_norm(y, name="myln"))
rec("lstm", L.dynamic_lstm(L.fc(seq, 16), 16))
rec("gru", L.dynamic_gru(L.fc(seq, 12), 4))
rec("seq_pool", L.sequence_pool(seq, "sum"))
rec("cross_entropy", L.cross_entropy(L.softmax(y), ids))
rec("swce", L.softmax_with_cross_entropy(y, ids))
rec("topk", L.topk(y, 2))
rec("split", L.split(y, 2, dim=1))
rec("reshape", L.reshape(y, [-1, 4, 4]))
rec("reshape_named", L.reshape(y, [-1, 4, 4], name="myrs2"))
rec("transpose", L.transpose(x, [0, 2, 3, 1]))
rec("transpose_named", L.transpose(x, [0, 2, 3, 1], name="mytr"))
rec("cast", L.cast(y, "float64"))
rec("fill_constant", L.fill_constant([1], "float32", 1.0))
rec("assign", L.assign(y))
rec("matmul_named", L.matmul(y, y, transpose_y=True, name="mymm"))
rec("sigmoid_named", L.sigmoid(y, name="mysig"))
rec("tanh", L.tanh(y))
rec("prelu", L.prelu(y, "all"))
rec("group_norm", L.group_norm(x, 1))
rec("conv_transpose", L.conv2d_transpose(x, 2, filter_size=3))
rec("image_resize", L.resize_bilinear(x, out_shape=[4, 4]))
rec("argmax", L.argmax(y, 1))
rec("accuracy", L.accuracy(L.softmax(y), ids))
rec("one_hot", L.one_hot(ids, 16))
rec("expand", L.expand(y, [2, 1]))
rec("square_error", L.square_error_cost(y, y))
rec("l2_normalize", L.l2_normalize(y, 1))
rec("clip", L.clip(y, -1.0, 1.0))
rec("stack", L.stack([y, y]))
rec("unsqueeze", L.unsqueeze(y, [1]))
rec("slice", L.slice(y, [1], [0], [2]))
rec("sums", L.sums([y, y]))
rec("where", L.where(L.cast(y, "bool")))
rec("gather", L.gather(y, L.cast(ids, "int32")))
rec("instance_norm", lambda: L.instance_norm(x))
rec("data_norm", lambda: L.data_norm(y))
rec("spectral_norm", lambda: L.spectral_norm(fluid.layers.create_parameter([4, 6], "float32")))
rec("conv3d", lambda: L.conv3d(fluid.data("v", [None, 2, 4, 4, 4], "float32"), 2, 3))
rec("pool3d", lambda: L.pool3d(fluid.data("v2", [None, 2, 4, 4, 4], "float32"), 2))
rec("adaptive_pool2d", lambda: L.adaptive_pool2d(x, 2))
rec("lrn", lambda: L.lrn(x))
rec("pad", lambda: L.pad(y, [0, 0, 1, 1]))
rec("pad2d", lambda: L.pad2d(x, [1, 1, 1, 1]))
rec("crop", lambda: L.crop_tensor(y, [1, 4]))
rec("flatten", lambda: L.flatten(x))
rec("squeeze", lambda: L.squeeze(L.unsqueeze(y, [1]), [1]))
rec("lod_reset", lambda: L.lod_reset(seq, sid))
rec("seq_conv", lambda: L.sequence_conv(seq, 4))
rec("seq_softmax", lambda: L.sequence_softmax(L.fc(seq, 1)))
rec("seq_expand", lambda: L.sequence_expand(y, seq))
rec("seq_first", lambda: L.sequence_first_step(seq))
rec("seq_last", lambda: L.sequence_last_step(seq))
rec("seq_reshape", lambda: L.sequence_reshape(seq, 8))
rec("seq_pad", lambda: L.sequence_pad(seq, L.fill_constant([1], "float32", 0.0)))
rec("seq_mask", lambda: L.sequence_mask(L.cast(ids, "int64"), 5))
rec("seq_enum", lambda: L.sequence_enumerate(sid, 2))
rec("seq_concat", lambda: L.sequence_concat([seq, seq]))
rec(
    "seq_slice", lambda: L.sequence_slice(seq, L.fill_constant([1, 1], "int64", 0), L.fill_constant([1, 1], "int64", 1))
)
rec("lstm_unit", lambda: L.lstm_unit(y, L.fc(y, 4), L.fc(y, 4)))
rec("gru_unit", lambda: L.gru_unit(L.fc(y, 12), L.fc(y, 4), 12))
rec("dynamic_lstmp", lambda: L.dynamic_lstmp(L.fc(seq, 16), 16, 3))
rec("warpctc", lambda: L.warpctc(L.fc(seq, 5), sid))
rec("edit_distance", lambda: L.edit_distance(sid, sid))
rec("ctc_greedy", lambda: L.ctc_greedy_decoder(L.fc(seq, 5), 0))
rec("linear_chain_crf", lambda: L.linear_chain_crf(L.fc(seq, 4), sid))
rec("nce", lambda: L.nce(y, ids, 10))
rec("hsigmoid", lambda: L.hsigmoid(y, ids, 10))
rec("bpr", lambda: L.bpr_loss(L.softmax(y), ids))
rec("log_loss", lambda: L.log_loss(L.sigmoid(L.fc(y, 1)), L.cast(ids, "float32")))
rec("sigmoid_ce", lambda: L.sigmoid_cross_entropy_with_logits(y, y))
rec("huber", lambda: L.huber_loss(L.fc(y, 1), L.cast(ids, "float32"), 1.0))
rec("smooth_l1", lambda: L.smooth_l1(y, y))
rec("rank_loss", lambda: L.rank_loss(L.fc(y, 1), L.fc(y, 1), L.fc(y, 1)))
rec("margin_rank", lambda: L.margin_rank_loss(L.fc(y, 1), L.fc(y, 1), L.fc(y, 1)))
rec("kldiv", lambda: L.kldiv_loss(y, y))
rec("mse", lambda: L.mse_loss(y, y))
rec("center_loss", lambda: L.center_loss(y, ids, 4, 0.1))
rec("teacher_student", lambda: L.teacher_student_sigmoid_loss(L.fc(y, 1), L.cast(ids, "float32")))
rec("cos_sim", lambda: L.cos_sim(y, y))
rec("label_smooth", lambda: L.label_smooth(L.one_hot(ids, 16), epsilon=0.1))
rec("maxout", lambda: L.maxout(fluid.data("m", [None, 4, 4, 4], "float32"), 2))
rec("pixel_shuffle", lambda: L.pixel_shuffle(fluid.data("ps", [None, 4, 4, 4], "float32"), 2))
rec("affine_grid", lambda: L.affine_grid(fluid.data("th", [None, 2, 3], "float32"), [1, 3, 8, 8]))
rec("grid_sampler", lambda: L.grid_sampler(x, fluid.data("g", [None, 8, 8, 2], "float32")))
rec("roi_pool", lambda: L.roi_pool(x, fluid.data("rois", [None, 4], "float32", lod_level=1), 2, 2))
rec("roi_align", lambda: L.roi_align(x, fluid.data("rois2", [None, 4], "float32", lod_level=1), 2, 2))
rec("prior_box", lambda: L.prior_box(x, fluid.data("img", [None, 3, 32, 32], "float32"), [8.0]))
rec(
    "box_coder",
    lambda: L.box_coder(
        fluid.data("pb", [4, 4], "float32"),
        None,
        fluid.data("tb", [None, 4], "float32"),
        prior_box_var=[0.1, 0.1, 0.2, 0.2],
    ),
)
rec(
    "iou_similarity",
    lambda: L.iou_similarity(fluid.data("b1", [None, 4], "float32"), fluid.data("b2", [None, 4], "float32")),
)
rec(
    "multiclass_nms",
    lambda: L.multiclass_nms(
        fluid.data("bb", [None, 10, 4], "float32"), fluid.data("sc", [None, 3, 10], "float32"), 0.1, 5, 3
    ),
)
rec(
    "yolo_box",
    lambda: L.yolo_box(
        fluid.data("yb", [None, 18, 4, 4], "float32"),
        fluid.data("isz", [None, 2], "int32"),
        [10, 13, 16, 30],
        4,
        0.1,
        8,
    ),
)
rec("sums", lambda: L.sum([y, y]))
rec("cumsum", lambda: L.cumsum(y))
rec("shape", lambda: L.shape(y))
rec("size", lambda: L.size(y))
rec("rank", lambda: L.rank(y))
rec("increment", lambda: L.increment(L.fill_constant([1], "float32", 0.0)))
rec("less_than", lambda: L.less_than(y, y))
rec("logical_and", lambda: L.logical_and(L.less_than(y, y), L.less_than(y, y)))
rec("isfinite", lambda: L.isfinite(y))
rec("has_nan", lambda: L.has_nan(y))
rec("argsort", lambda: L.argsort(y))
rec("range", lambda: L.range(0, 10, 1, "int64"))
rec("linspace", lambda: L.linspace(0, 1, 5, "float32"))
rec("zeros_like", lambda: L.zeros_like(y))
rec("ones", lambda: L.ones([2], "float32"))
rec("eye", lambda: L.eye(3))
rec("diag", lambda: L.diag(L.ones([3], "float32")))
rec("uniform_random", lambda: L.uniform_random([2, 2]))
rec("gaussian_random", lambda: L.gaussian_random([2, 2]))
rec("sampling_id", lambda: L.sampling_id(L.softmax(y)))
rec("random_crop", lambda: L.random_crop(x, [3, 4, 4]))
rec("create_tensor", lambda: L.create_tensor("float32"))
rec("create_global_var", lambda: L.create_global_var([1], 0.0, "float32"))
rec("array_write", lambda: L.array_write(y, L.zeros([1], "int64")))
rec("array_length", lambda: L.array_length(L.array_write(y, L.zeros([1], "int64"))))
rec("lod_rank_table", lambda: L.lod_rank_table(seq))
rec("reorder", lambda: L.reorder_lod_tensor_by_rank(seq, L.lod_rank_table(seq)))
rec("autoincreased_step_counter", lambda: L.autoincreased_step_counter())
rec("exponential_decay", lambda: L.exponential_decay(0.1, 10, 0.5))
rec("noam_decay", lambda: L.noam_decay(16, 10))
rec("piecewise_decay", lambda: L.piecewise_decay([10], [0.1, 0.01]))
rec("cosine_decay", lambda: L.cosine_decay(0.1, 10, 5))
rec("linear_lr_warmup", lambda: L.linear_lr_warmup(0.1, 5, 0.0, 0.1))
rec("lod_append", lambda: L.lod_append(seq, [0, 1, 2]))
rec("sampled_softmax", lambda: L.sampled_softmax_with_cross_entropy(y, ids, num_samples=3).op.input("X"))
rec("sampled_softmax_ops", lambda: [op.type for op in fluid.default_main_program().global_block().ops[-4:]])
print("\n".join(f"{t} {n}" for t, n in out))
print(sorted(v.name for v in fluid.default_main_program().list_vars()))
print(sorted(v.name for v in fluid.default_startup_program().list_vars()))
