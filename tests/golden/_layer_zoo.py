# Shared by lod_levels.py, stop_gradients.py, runtime_lods.py and grad_lods.py: about 240 layers
# built from sequence (lod_level 1 and 2) and dense inputs; build() returns {name: output Variable},
# lod_feed() LoDTensors for its inputs, set_float_params() and differentiate() what runtime_lods.py,
# grad_lods.py, zoo_values.py and zoo_grads.py share. (nce and hsigmoid print a line when built under fluid
# 1.8.5: building is kept off stdout.)
import contextlib
import io

import numpy as np
import paddle.fluid as fluid


def build(more=False, startup_too=False):
    """The layers of lod_levels.py; with ``more``, also the creation, index, comparison and random
    layers of stop_gradients.py. With ``startup_too``: (layers, startup program)."""
    L = fluid.layers
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), contextlib.redirect_stdout(io.StringIO()):
        s = fluid.data("s", [None, 8], "float32", lod_level=1)
        s2 = fluid.data("s2", [None, 8], "float32", lod_level=2)
        i = fluid.data("i", [None, 1], "int64", lod_level=1)
        i2 = fluid.data("i2", [None, 1], "int64", lod_level=2)
        d = fluid.data("d", [None, 8], "float32")
        s3 = fluid.data("s3", [None, 2, 4], "float32", lod_level=1)
        s4 = fluid.data("s4", [None, 4, 2, 2], "float32", lod_level=1)
        o = {}
        o["emb"] = L.embedding(i, [10, 8])
        o["emb2"] = L.embedding(i2, [10, 8])
        o["emb_sparse"] = L.embedding(i, [10, 8], is_sparse=True)
        o["fc"] = L.fc(s, 4)
        o["fc_act"] = L.fc(s, 4, act="tanh")
        o["fc_multi"] = L.fc([s, d], 4)
        o["fc_2"] = L.fc(s2, 4)
        o["mul"] = L.mul(s, L.fill_constant([8, 3], "float32", 1.0))
        o["matmul"] = L.matmul(s, L.fill_constant([8, 3], "float32", 1.0))
        o["relu"] = L.relu(s)
        o["tanh"] = L.tanh(s2)
        o["sigmoid"] = L.sigmoid(s)
        o["softmax"] = L.softmax(s)
        o["scale"] = L.scale(s, 2.0)
        o["add"] = L.elementwise_add(s, d)
        o["add_rev"] = L.elementwise_add(d, s)
        o["mul_op"] = s * 2.0
        o["plus"] = s + s
        o["cast"] = L.cast(s, "float64")
        o["dropout"] = L.dropout(s, 0.5)
        o["concat"] = L.concat([s, s], 1)
        o["concat0"] = L.concat([d, s], 1)
        o["sums"] = L.sums([s, s])
        o["assign"] = L.assign(s)
        o["reshape"] = L.reshape(s, [-1, 4])
        o["clip"] = L.clip(s, -1.0, 1.0)
        o["layer_norm"] = L.layer_norm(s)
        o["batch_norm"] = L.batch_norm(s)
        o["l2n"] = L.l2_normalize(s, 1)
        o["cos_sim"] = L.cos_sim(s, s)
        zeros = L.fill_constant_batch_size_like(s, [-1, 1], "float32", 0)
        o["sce"] = L.softmax_with_cross_entropy(s, L.cast(zeros, "int64"))
        o["ce"] = L.cross_entropy(L.softmax(s), i)
        o["sq"] = L.square_error_cost(s, s)
        o["topk"] = L.topk(s, 2)[0]
        o["argmax"] = L.argmax(s, 1)
        o["one_hot"] = L.one_hot(i, 10)
        o["seq_conv"] = L.sequence_conv(s, 4, 3)
        o["seq_conv_bias"] = L.sequence_conv(s, 4, 3, bias_attr=False, act=None)
        o["seq_pool"] = L.sequence_pool(s, "max")
        o["seq_pool2"] = L.sequence_pool(s2, "sum")
        o["seq_last"] = L.sequence_last_step(s2)
        o["seq_softmax"] = L.sequence_softmax(L.fc(s, 1))
        o["seq_expand"] = L.sequence_expand(d, s)
        o["seq_expand_as"] = L.sequence_expand_as(d, s)
        o["seq_reshape"] = L.sequence_reshape(s, 4)
        o["seq_concat"] = L.sequence_concat([s, s])
        o["seq_slice"] = L.sequence_slice(s, L.fill_constant([1, 1], "int64", 0), L.fill_constant([1, 1], "int64", 1))
        o["seq_enum"] = L.sequence_enumerate(i, 2)
        o["seq_reverse"] = L.sequence_reverse(s)
        o["seq_scatter"] = L.sequence_scatter(d, i, L.cast(i, "float32"))
        o["seq_unpad"] = L.sequence_unpad(L.fill_constant([2, 3, 8], "float32", 0), L.fill_constant([2], "int64", 3))
        o["lstm_h"], o["lstm_c"] = L.dynamic_lstm(L.fc(s, 16), 16)
        o["lstmp_h"], o["lstmp_c"] = L.dynamic_lstmp(L.fc(s, 16), 16, 3)
        o["gru"] = L.dynamic_gru(L.fc(s, 12), 4)
        o["row_conv"] = L.row_conv(s, 2)
        o["lod_reset"] = L.lod_reset(d, s)
        o["lod_reset2"] = L.lod_reset(s, target_lod=[0, 1])
        o["lod_append"] = L.lod_append(s, [1, 1])
        o["im2seq"] = L.im2sequence(L.fill_constant([1, 1, 4, 4], "float32", 0), filter_size=2)
        o["crf"] = L.linear_chain_crf(L.fc(s, 3), i, param_attr=fluid.ParamAttr(name="crfw"))
        o["crf_dec"] = L.crf_decoding(L.fc(s, 3), param_attr=fluid.ParamAttr(name="crfw"))
        o["chunk"] = L.chunk_eval(i, i, "IOB", 2)[0]
        o["edit"] = L.edit_distance(i, i)[0]
        o["ctc"] = L.ctc_greedy_decoder(L.softmax(s), 0)
        o["warpctc"] = L.warpctc(s, L.cast(i, "int32"))
        o["nce"] = L.nce(s, i, 10)
        o["mnms"] = L.multiclass_nms(L.data("bb", [10, 4], "float32"), L.data("sc", [3, 10], "float32"), 0.1, 5, 3)
        o["sequence_mask"] = L.sequence_mask(L.fill_constant([3], "int64", 2))
        o["where"] = L.where(s > 0)
        o["greater"] = s > 0
        o["logical"] = L.logical_not(s > 0)
        o["shape"] = L.shape(s)
        o["mean"] = L.mean(s)
        o["reduce"] = L.reduce_sum(s, 1)
        o["pad_seq"] = L.sequence_pad(s, L.fill_constant([1], "float32", 0.0))[0]
        o["pad_len"] = L.sequence_pad(s, L.fill_constant([1], "float32", 0.0))[1]
        o["gather"] = L.gather(s, L.fill_constant([2], "int32", 0))
        o["expand"] = L.expand(s, [1, 2])
        o["unsq"] = L.unsqueeze(s, [1])
        o["sq_"] = L.squeeze(L.unsqueeze(s, [1]), [1])
        o["split"] = L.split(s, 2, 1)[0]
        o["transpose"] = L.transpose(s, [1, 0])
        o["flatten"] = L.flatten(s)
        o["prelu"] = L.prelu(s, "all")
        o["bn_act"] = L.batch_norm(s, act="relu")
        o["add_act"] = L.elementwise_add(s, d, act="relu")
        o["hsig"] = L.hsigmoid(s, i, 10)
        o["sampled"] = L.sampled_softmax_with_cross_entropy(s, i, 2)
        o["lstm_unit"] = L.lstm_unit(d, d, d)[0]
        o["gru_unit"] = L.gru_unit(L.fc(s, 12), d[:, :4], 12)[0]
        o["pool_proj"] = L.sequence_first_step(s)
        acts = "softsign hard_sigmoid leaky_relu elu swish softplus brelu selu stanh thresholded_relu hard_swish"
        acts += " gelu sign"
        acts += " abs exp log sqrt rsqrt floor ceil round reciprocal square relu6 softshrink hard_shrink logsigmoid"
        acts += " tanh_shrink cos sin erf acos asin atan log_softmax"
        for act in acts.split():
            if hasattr(L, act):
                o[act] = getattr(L, act)(s)
        o["pow"] = L.pow(s, 2.0)
        o["cumsum"] = L.cumsum(s, 1)
        o["label_smooth"] = L.label_smooth(L.one_hot(i, 4), epsilon=0.1)
        o["sig_ce"] = L.sigmoid_cross_entropy_with_logits(s, s)
        o["smooth_l1"] = L.smooth_l1(s, s)
        o["log_loss"] = L.log_loss(L.sigmoid(s[:, :1]), s[:, :1])
        o["huber"] = L.huber_loss(s[:, :1], s[:, :1], 1.0)
        o["pad"] = L.pad(s, [0, 0, 1, 1])
        o["pad_like"] = L.pad_constant_like(s, s)
        o["stack"] = L.stack([s, s], 0)
        o["slice"] = L.slice(s, [1], [0], [2])
        o["strided"] = L.strided_slice(s, [1], [0], [4], [2])
        o["unstack"] = L.unstack(s3, 1)[0]
        o["lrn"] = L.lrn(s4)
        o["maxout"] = L.maxout(s4, 2)
        o["fill_zeros_like"] = L.zeros_like(s)
        o["ones_like"] = L.ones_like(s)
        o["acc"] = L.accuracy(L.softmax(s), i)
        o["bpr"] = L.bpr_loss(L.softmax(s), i)
        o["rank_loss"] = L.rank_loss(s[:, :1], s[:, :1], s[:, :1])
        o["margin_rank"] = L.margin_rank_loss(s[:, :1], s[:, :1], s[:, :1])
        o["kldiv"] = L.kldiv_loss(s, s, "none")
        o["add_pos"] = L.add_position_encoding(s3, 1.0, 1.0)
        o["bilinear"] = L.bilinear_tensor_product(s, s, 3)
        o["shuffle_channel"] = L.shuffle_channel(s4, 2)
        o["data_norm"] = L.data_norm(s)
        o["group_norm"] = L.group_norm(s4, 2)
        o["instance_norm"] = L.instance_norm(s4)
        o["pixel_shuffle"] = L.pixel_shuffle(s4, 2)
        o["unique"] = L.unique(L.reshape(i, [-1]))[0]
        o["scatter"] = L.scatter(s, L.fill_constant([1], "int64", 0), L.fill_constant([1, 8], "float32", 0))
        o["sampling_id"] = L.sampling_id(L.softmax(s))
        o["urbsl"] = L.uniform_random_batch_size_like(s, [-1, 3])
        o["grbsl"] = L.gaussian_random_batch_size_like(s, [-1, 3])
        o["fcbsl"] = L.fill_constant_batch_size_like(s, [-1, 3], "float32", 0)
        o["conv2d"] = L.conv2d(s4, 2, 1)
        o["pool2d"] = L.pool2d(s4, 2)
        o["reduce_dim0"] = L.reduce_sum(s, 0)
        o["reduce_all"] = L.reduce_sum(s)
        o["reduce_mean1"] = L.reduce_mean(s, 1)
        o["reduce_keep"] = L.reduce_max(s, 1, keep_dim=True)
        o["expand_0"] = L.expand(s, [2, 1])
        o["reshape_batch"] = L.reshape(s, [2, -1])
        o["reshape_0"] = L.reshape(s, [0, 2, 4])
        o["split0"] = L.split(s, 2, 0)[0]
        o["concat_axis0"] = L.concat([s, s], 0)
        o["elt_sub"] = L.elementwise_sub(s, s)
        o["elt_max"] = L.elementwise_max(s, s)
        o["elt_pow"] = L.elementwise_pow(s, s)
        o["elt_floordiv"] = L.elementwise_floordiv(L.cast(s, "int32"), L.cast(s, "int32"))
        o["sum_op"] = L.sum([s, s])
        o["softmax_axis"] = L.softmax(s3, axis=1)
        o["sce_soft"] = L.softmax_with_cross_entropy(s, L.softmax(s), soft_label=True)
        o["ce_soft"] = L.cross_entropy(L.softmax(s), L.softmax(s), soft_label=True)
        o["teacher"] = L.teacher_student_sigmoid_loss(s[:, :1], s[:, :1])
        o["npair_in"] = L.squeeze(s3[:, :1, :], [1])
        o["sequence_expand_ref"] = L.sequence_expand(s, s, ref_level=0)
        o["lstm_unit_h"] = L.lstm_unit(s[:, :4], s[:, :4], s[:, :4])[0]
        o["sum_pool"] = L.sequence_pool(s, "sum")
        o["mul_3d"] = L.mul(s3, L.fill_constant([8, 3], "float32", 1.0))
        o["matmul_y"] = L.matmul(L.fill_constant([3, 8], "float32", 1.0), s, transpose_y=True)
        o["fsp"] = L.fsp_matrix(s4, s4)
        o["similarity_focus"] = L.similarity_focus(s4, 1, [0])
        o["pad2d"] = L.pad2d(s4, [1, 1, 1, 1])
        o["resize"] = L.resize_nearest(s4, [4, 4])
        o["crop_tensor"] = L.crop_tensor(s, shape=[1, 4])
        o["random_crop"] = L.random_crop(s4, [2, 2])
        o["mean_iou"] = L.mean_iou(L.cast(s, "int32"), L.cast(s, "int32"), 3)[0]
        o["clip_by_norm"] = L.clip_by_norm(s, 1.0)
        o["l2_normalize"] = L.l2_normalize(s, 1)
        o["dropout_ui"] = L.dropout(s, 0.5, dropout_implementation="upscale_in_train")
        if more:
            o["fill_constant"] = L.fill_constant([2, 3], "float32", 1.0)
            o["zeros"] = L.zeros([2], "float32")
            o["ones"] = L.ones([2], "float32")
            o["zeros_like"] = L.zeros_like(s)
            o["ones_like"] = L.ones_like(s)
            o["fill_bsl"] = L.fill_constant_batch_size_like(s, [-1, 3], "float32", 0.5)
            o["diag"] = L.diag(L.fill_constant([3], "float32", 1.0))
            o["eye"] = L.eye(3)
            o["linspace"] = L.linspace(0.0, 1.0, 5, "float32")
            o["range"] = L.range(0, 5, 1, "int64")
            o["assign_np"] = L.assign(__import__("numpy").ones((2, 2), "float32"))
            o["assign_var"] = L.assign(s)
            o["argmax"] = L.argmax(s, 1)
            o["argmin"] = L.argmin(s, 1)
            o["argsort_out"] = L.argsort(s, 1)[0]
            o["argsort_idx"] = L.argsort(s, 1)[1]
            o["topk_out"] = L.topk(s, 2)[0]
            o["topk_idx"] = L.topk(s, 2)[1]
            o["shape"] = L.shape(s)
            o["rank"] = L.rank(s)
            o["size"] = L.size(s)
            o["sequence_mask"] = L.sequence_mask(L.cast(d[:, 0], "int64"), maxlen=4)
            o["one_hot"] = L.one_hot(i, 10)
            o["uniform"] = L.uniform_random([2, 3])
            o["gaussian"] = L.gaussian_random([2, 3])
            o["uniform_bsl"] = L.uniform_random_batch_size_like(s, [-1, 3])
            o["sampling_id"] = L.sampling_id(L.softmax(d))
            o["equal"] = L.equal(s, s)
            o["less_than"] = L.less_than(s, s)
            o["logical_and"] = L.logical_and(L.equal(s, s), L.equal(s, s))
            o["isfinite"] = L.isfinite(s)
            o["has_nan"] = L.has_nan(s)
            o["has_inf"] = L.has_inf(s)
            o["isinf_like"] = L.logical_not(L.isfinite(s))
            o["where"] = L.where(L.equal(d, d))
            o["unique"] = L.unique(L.cast(d[:, 0], "int64"))[0]
            o["increment"] = L.increment(L.fill_constant([1], "float32", 0.0), in_place=False)
            o["create_tensor"] = L.create_tensor("float32")
            o["create_global_var"] = L.create_global_var([1], 0.0, "float32")
            o["cast_int"] = L.cast(d, "int64")
            o["sign"] = L.sign(d)
            o["floor"] = L.floor(d)
            o["round"] = L.round(d)
            o["accuracy"] = L.accuracy(L.softmax(d), L.cast(d[:, :1], "int64"))
            o["auc"] = L.auc(L.softmax(d[:, :2]), L.cast(d[:, :1], "int64"))[0]
            o["prior_box"] = L.prior_box(s4, fluid.data("im", [None, 3, 8, 8], "float32"), [2.0])[0]
            o["anchor"] = L.anchor_generator(s4, [16.0], [1.0], stride=[4.0, 4.0])[0]
            o["random_crop2"] = L.random_crop(s4, [1, 1])
            o["gather_tree"] = None
            o["data"] = d
            o["sum_of"] = L.sums([d, d])
            o["concat_var"] = L.concat([d, d], 0)
    return (o, startup) if startup_too else o


def lod_feed(rng, place):
    """LoDTensors (and arrays) for the zoo's data variables, from numpy generator ``rng``."""

    def lt(a, lens):
        return fluid.create_lod_tensor(a, lens, place)

    return {
        "s": lt(rng.uniform(-1, 1, (5, 8)).astype("float32"), [[2, 3]]),
        "s2": lt(rng.uniform(-1, 1, (5, 8)).astype("float32"), [[1, 2], [2, 1, 2]]),
        "i": lt(rng.randint(0, 8, (5, 1)).astype("int64"), [[2, 3]]),
        "i2": lt(rng.randint(0, 8, (5, 1)).astype("int64"), [[1, 2], [2, 1, 2]]),
        "d": rng.uniform(-1, 1, (5, 8)).astype("float32"),
        "bb": rng.uniform(0, 1, (2, 10, 4)).astype("float32"),
        "sc": rng.uniform(0, 1, (2, 3, 10)).astype("float32"),
        "s3": lt(rng.uniform(-1, 1, (5, 2, 4)).astype("float32"), [[2, 3]]),
        "s4": lt(rng.uniform(-1, 1, (5, 4, 2, 2)).astype("float32"), [[2, 3]]),
    }


def set_float_params(program, scope, place):
    """Every float32 parameter of ``program`` in ``scope`` set from numpy, seeded by its rank in name
    order."""
    for k, p in enumerate(sorted(p.name for p in program.global_block().all_parameters())):
        t = scope.find_var(p).get_tensor()
        a = np.array(t)
        if a.dtype == np.float32:
            t.set(np.random.RandomState(k).uniform(-0.5, 0.5, a.shape).astype("float32"), place)


def differentiate(base, startup, out, loss_of):
    """A clone of ``base`` with the gradients of ``loss_of(out)`` (``out`` one of the zoo's outputs)
    with respect to the float inputs s, s2, s3, s4 and d: (clone, [(input name, gradient)]) for the
    inputs that get one."""
    main = base.clone()
    v = main.global_block().var(out.name)
    wrt = [main.global_block().var(n) for n in ("s", "s2", "s3", "s4", "d")]
    for w in wrt:
        w.stop_gradient = False
    with fluid.program_guard(main, startup):
        grads = fluid.gradients([loss_of(v)], wrt)
    return main, [(w.name, g) for w, g in zip(wrt, grads) if g is not None]


# zoo layers whose integer division by zero stops fluid 1.8.5 (SIGFPE) when run on lod_feed()
STOPS_FLUID = frozenset({"elt_floordiv", "elt_mod"})
# zoo layers that fail when run on lod_feed() (runtime_lods records how; the gradient goldens skip them)
FAIL_ON_LOD_FEED = frozenset(
    {"sce", "chunk", "crf", "label_smooth", "lod_append", "lod_reset2", "seq_expand", "seq_expand_as",
     "seq_slice", "split0", "add_pos"}
)  # fmt: skip


def float_outputs(outs):
    """The zoo's float32 / float64 outputs."""
    floats = (fluid.core.VarDesc.VarType.FP32, fluid.core.VarDesc.VarType.FP64)
    return {k: v for k, v in outs.items() if v is not None and v.dtype in floats}


def run_pruned(exe, program, targets, feed, scope=None):
    """``targets`` (Variables) fetched as LoDTensors from ``program`` pruned to them, fed the names
    of ``feed`` the pruned program still reads."""
    pruned = program._prune(targets=list(targets))
    names = set(pruned.global_block().vars)
    return exe.run(
        pruned,
        feed={n: t for n, t in feed.items() if n in names},
        fetch_list=[t.name for t in targets],
        return_numpy=False,
        scope=scope,
    )
