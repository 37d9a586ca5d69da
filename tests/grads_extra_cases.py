"""Gradient cases (finite differences, float64) for the ops fluidcompat_ops/extra.py held (now
in their family modules); test_grads.py runs them."""

from __future__ import annotations

import numpy as np

import fluidcompat as fluid

L = fluid.layers
rng = np.random.RandomState(11)


def afz(shape, lo=0.2, hi=1.5):
    return rng.uniform(lo, hi, shape) * rng.choice([-1.0, 1.0], shape)


A = afz((2, 3))
B = afz((2, 3))
SQ = afz((3, 3))
IN = rng.uniform(-0.8, 0.8, (2, 3))
P = rng.uniform(0.2, 0.8, (2, 3))
IMG = afz((1, 4, 4, 4))
VOL = afz((1, 2, 3, 3, 3))
I64 = np.array([2, 0], "int64")
RFCN_ROIS = np.array([[0.6, 0.4, 3.3, 2.6], [1.2, -0.7, 4.4, 3.1]])


_RANK_OFFSETS = np.array([[1, 1, 0, 2, 1], [2, 1, 2, 0, 0], [2, 2, 0, 1, 1]], "int32")


def _rank_attention_raw(x, ro, p):
    block = fluid.default_main_program().current_block()
    out = block.create_var(name=fluid.unique_name.generate("rank_attention.out"), dtype="float64")
    block.append_op(
        type="rank_attention", inputs={"X": [x], "RankOffset": [ro], "RankParam": [p]}, outputs={"Out": [out]},
        attrs={"MaxRank": 2},
    )  # fmt: skip
    return out


def _passing(v):
    v.stop_gradient = False
    return v


def v1_op(op_type, x, attrs):
    from tests.ops_extra_cases import v1_op as append_v1

    return append_v1(op_type, x, attrs)


def c64(a):
    """A float64 constant (assign_value has no float64: cast a float32 one)."""
    return L.cast(L.assign(np.asarray(a, "float32")), "float64")


def make_cases(G):
    ab = {"a": A, "b": B}
    a = {"a": A}
    return [
        *[G(n, (lambda n: lambda a: getattr(L, n)(a))(n), {"a": IN}) for n in ("acos", "asin", "atan", "erf", "log1p")],
        *[G(n, (lambda n: lambda a: getattr(L, n)(a))(n), a) for n in ("tanh_shrink", "selu", "mish", "stanh")],
        G("hard_shrink", lambda a: L.hard_shrink(a, 0.1), a),
        G("softshrink", lambda a: L.softshrink(a, 0.1), a),
        G("thresholded_relu", lambda a: L.thresholded_relu(a, 0.1), a),
        G("brelu", lambda a: L.brelu(a, -1.6, 1.6), a),
        G("soft_relu", lambda a: L.soft_relu(a, 5.0), a),
        G("cumsum", lambda a: L.cumsum(a, axis=1, exclusive=True), a),
        G(
            "reshape_transpose_v1",
            lambda a: v1_op("transpose", v1_op("reshape", a, {"shape": [3, 2]}), {"axis": [1, 0]}),
            a,
        ),
        G("flip_roll", lambda a: L.roll(L.flip(a, [1]), [1], [0]), a),
        G("reverse_strided", lambda a: L.reverse(a, [0, 1]) * 2.0 + a[::-1] + L.reverse(a[0:2:2], 1), a),
        G("tril_triu", lambda s: L.tril(s) + L.triu(s, 1) * 2.0, {"s": SQ}),
        # diag's output stops gradients, as in fluid 1.8 (which had no grad for diag): let it through
        G("diag_trace", lambda s: _passing(L.diag(L.trace(s))) + L.trace(s * s), {"s": SQ}),
        G("diag_embed", lambda a: L.diag_embed(a), a),
        G("kron", lambda a, b: L.kron(a, b), ab),
        G("index_select", lambda a: L.index_select(a, L.assign(I64), dim=1), a),
        G("index_sample", lambda a: L.index_sample(a, L.assign(np.array([[2, 2], [0, 1]], "int64"))), a),
        G("gather_nd", lambda a: L.gather_nd(a, L.assign(np.array([[1, 2], [1, 2], [0, 0]], "int64"))), a),
        G("scatter_nd_add", lambda a, b: L.scatter_nd_add(a, L.assign(np.array([[1], [1]], "int64")), b), ab),
        G("bmm", lambda a, b: L.bmm(L.unsqueeze(a, [0]), L.unsqueeze(L.transpose(b, [1, 0]), [0])), ab),
        G("dot", lambda a, b: L.dot(a, b), ab),
        G("cross", lambda s: L.cross(s, s * s, dim=1), {"s": SQ}),
        G("dist", lambda a, b: L.dist(a, b, p=3), ab),
        G("addmm", lambda s: L.addmm(s, s, s * 0.5, alpha=2.0, beta=0.5), {"s": SQ}),
        G("cos_sim", lambda a, b: L.cos_sim(a, b), ab),
        G("logsumexp", lambda a: L.logsumexp(a, dim=[1]), a),
        G("unstack", lambda a: L.unstack(a, axis=1), a),
        G("meshgrid", lambda a: L.meshgrid([L.reshape(a, [6]), L.reshape(a * 2.0, [6])]), a),
        G("pixel_shuffle", lambda x: L.pixel_shuffle(x, 2), {"x": IMG}),
        G("shuffle_channel", lambda x: L.shuffle_channel(x, 2), {"x": IMG}),
        G("space_to_depth", lambda x: L.space_to_depth(x, 2), {"x": IMG}),
        G("maxout", lambda x: L.maxout(x, 2), {"x": IMG}),
        G("prelu", lambda x: L.prelu(x, "element"), {"x": IMG}),
        G("strided_slice", lambda x: L.strided_slice(x, [1, 2], [3, 0], [0, 4], [-2, 3]), {"x": IMG}),
        G("expand_as", lambda a: L.expand_as(a, c64(np.zeros((4, 6)))), a),
        G("pad_constant_like", lambda a: L.pad_constant_like(c64(np.zeros((3, 5))), a, 0.5), a),
        G("multiplex", lambda a, b: L.multiplex([a, b], L.assign(np.array([[1], [0]], "int32"))), ab),
        G("label_smooth", lambda p: L.label_smooth(p, epsilon=0.2), {"p": P}),
        # fluid's floor_grad / ceil_grad / round_grad and sign's scale by 0: zeros (finite differences
        # away from the steps agree)
        G("floor", lambda a: L.floor(a), {"a": A}),
        G("ceil", lambda a: L.ceil(a), {"a": A}),
        G("round", lambda a: L.round(a), {"a": A}),
        G("sign", lambda a: L.sign(a), {"a": A}),
        # as fluid 1.8.5, Labels get no gradient
        G("log_loss", lambda p, q: L.log_loss(p, q), {"p": P[:, :1], "q": rng.uniform(0, 1, (2, 1))}, wrt=["p"]),
        G("smooth_l1", lambda a, b: L.smooth_l1(a, b, sigma=0.7), ab),
        # as fluid 1.8.5, Target gets no gradient
        G("kldiv_loss", lambda a, p: L.kldiv_loss(a, p, "batchmean"), {"a": A, "p": P}, wrt=["a"]),
        G("huber_loss", lambda a, b: L.huber_loss(a, b, 0.4), ab),
        # lstm_unit's fc weights and gru_unit's weight are random parameters, checked through their inputs
        G(
            "lstm_unit",
            lambda x, h, c: L.sums(list(L.lstm_unit(x, h, c, forget_bias=0.5))),
            {"x": A, "h": IN, "c": B},
        ),
        G("gru_unit", lambda x, h: L.gru_unit(x, h, 6)[0], {"x": afz((2, 6)), "h": IN[:, :2].copy()}),
        G(
            "gru_unit_origin",
            lambda x, h: L.gru_unit(x, h, 6, origin_mode=True)[0],
            {"x": afz((2, 6)), "h": IN[:, :2].copy()},
        ),
        G("margin_rank_loss", lambda a, b: L.margin_rank_loss(c64(np.sign(A)), a, b, 0.3), ab),
        # (rank_loss takes [N, 1] scores, as fluid 1.8.5 checked)
        G("rank_loss", lambda a, b: L.rank_loss(c64(np.ones((2, 1)) * 0.3), a, b), {"a": A[:, :1], "b": B[:, :1]}),
        G("bpr_loss", lambda a: L.bpr_loss(a, L.assign(np.array([[1], [2]], "int64"))), a),
        G(
            "teacher_student_sigmoid_loss",
            lambda a: L.teacher_student_sigmoid_loss(
                L.reshape(a, [6, 1]), c64(np.array([[-2.0], [-0.5], [0.3], [1.7], [0.9], [0.1]]))
            ),
            a,
        ),
        G("group_norm", lambda x: L.group_norm(x, 2), {"x": IMG}, rtol=1e-4, atol=1e-6),
        G("instance_norm", lambda x: L.instance_norm(x), {"x": IMG}, rtol=1e-4, atol=1e-6),
        G("lrn", lambda x: L.lrn(x, n=3, k=1.0, alpha=0.1), {"x": IMG}),
        G("affine_channel", lambda x: L.affine_channel(x, c64(np.arange(4)), c64(np.ones(4))), {"x": IMG}),
        G("conv3d", lambda v: L.conv3d(v, 2, 2), {"v": VOL}, rtol=1e-4, atol=1e-6),
        G("pool3d", lambda v: L.pool3d(v, 2, "max", 1), {"v": VOL}),
        G("resize_bilinear", lambda x: L.resize_bilinear(x, [5, 3]), {"x": IMG}),
        G("resize_nearest", lambda x: L.resize_nearest(x, [8, 8], align_corners=False), {"x": IMG}),
        G("resize_trilinear", lambda v: L.resize_trilinear(v, [4, 2, 4]), {"v": VOL}),
        G("unfold", lambda x: L.unfold(x, [2, 2], strides=1, paddings=1), {"x": IMG}),
        G("temporal_shift", lambda x: L.temporal_shift(L.reshape(x, [2, 2, 4, 4]), 2, 0.25), {"x": IMG}),
        G("add_position_encoding", lambda s: L.add_position_encoding(s, 0.5, 2.0), {"s": afz((2, 3, 4))}),
        G("bilinear_tensor_product", lambda a, b: L.bilinear_tensor_product(a, b, 2), ab),
        G(
            "conv3d_transpose",
            lambda v: L.conv3d_transpose(v, 2, filter_size=2, stride=2),
            {"v": VOL},
            rtol=1e-4,
            atol=1e-6,
        ),
        G("fsp_matrix", lambda x: L.fsp_matrix(x, x * x), {"x": IMG}),
        G("spectral_norm", lambda s: L.spectral_norm(s, power_iters=60), {"s": SQ}, rtol=1e-4, atol=1e-6),
        G("row_conv", lambda s: L.row_conv(s, 2), {"s": afz((2, 4, 3))}),
        G(
            "center_loss",
            lambda a: L.center_loss(
                a,
                L.assign(np.array([[1], [0]], "int64")),
                3,
                0.5,
                fluid.ParamAttr(initializer=fluid.initializer.Constant(0.2)),
                update_center=False,
            ),
            a,
        ),
        # without use_cvm, and CVM zero, fluid's cvm gradient is the true one
        G("cvm", lambda a: L.continuous_value_model(a, c64(np.zeros((2, 2))), use_cvm=False), a),
        G(
            "roi_pool_roi_align",
            lambda x: [
                L.roi_pool(x, c64(np.array([[0, 0, 2, 3], [1, 1, 3, 3]])), 2, 2),
                L.roi_align(x, c64(np.array([[0.3, 0.2, 2.6, 3.1], [1.2, 0.7, 3.3, 2.9]])), 2, 2, sampling_ratio=2),
            ],
            {"x": IMG},
        ),
        # X's gradient is the true one; the statistics get fluid's accumulation terms (tests/golden/data_norm)
        G("data_norm", lambda a: L.data_norm(a * 1.0) * a, a),
        G(
            "sampled_softmax_customized",
            lambda a: L.sampled_softmax_with_cross_entropy(
                a,
                L.assign(np.array([[2], [0]], "int64")),
                2,
                use_customized_samples=True,
                customized_samples=L.assign(np.array([[2, 1, 0], [0, 2, 2]], "int64")),
                customized_probabilities=c64(np.array([[0.3, 0.5, 0.2], [0.6, 0.4, 0.4]])),
            ),
            a,
        ),
        G(
            "linear_chain_crf",
            lambda e: L.linear_chain_crf(
                e,
                L.assign(np.array([[[0], [2], [1]], [[1], [1], [0]]], "int64")),
                length=L.assign(np.array([3, 2], "int64")),
            ),
            {"e": afz((2, 3, 3))},
        ),
        G(
            "deformable_conv",
            lambda x, off, mask: L.deformable_conv(
                x, off, mask, 2, 2, param_attr=fluid.initializer.Constant(0.3), bias_attr=False
            ),
            {
                "x": afz((1, 2, 3, 3)),
                "off": rng.uniform(-1.4, 1.4, (1, 8, 2, 2)),
                "mask": rng.uniform(0.2, 1, (1, 4, 2, 2)),
            },
        ),
        G(
            "deformable_conv_v1",
            lambda x, off: L.deformable_conv(
                x, off, None, 2, 2, stride=2, padding=1, modulated=False, param_attr=fluid.initializer.Constant(0.3)
            ),
            {"x": afz((1, 2, 3, 3)), "off": rng.uniform(-1.4, 1.4, (1, 8, 2, 2))},
        ),
        G(
            "psroi_pool",
            lambda x: L.psroi_pool(x, L.lod_reset(c64(RFCN_ROIS), target_lod=[0, 2]), 1, 0.7, 2, 2),
            {"x": afz((1, 4, 4, 5))},
        ),
        G(
            "deformable_psroi_pooling",
            lambda x, trans: L.deformable_roi_pooling(
                x,
                L.lod_reset(c64(RFCN_ROIS), target_lod=[0, 2]),
                trans,
                spatial_scale=0.7,
                group_size=[2, 2],
                pooled_height=2,
                pooled_width=2,
                sample_per_part=2,
                trans_std=0.3,
                position_sensitive=True,
            ),  # fmt: skip
            {"x": afz((1, 8, 4, 5)), "trans": rng.uniform(-0.9, 0.9, (2, 2, 2, 2))},
        ),
        G(
            "box_coder",
            lambda t: L.box_coder(c64(RFCN_ROIS), [0.1, 0.1, 0.2, 0.2], t, code_type="decode_center_size"),
            {"t": rng.uniform(-1, 1, (3, 2, 4))},
        ),
        G(
            "sigmoid_focal_loss",
            lambda x: L.sigmoid_focal_loss(
                x, L.assign(np.array([[0], [2], [3], [-1]], "int32")), L.assign(np.array([2], "int32")), gamma=1.5
            ),
            {"x": afz((4, 3))},
        ),
        G(
            "yolov3_loss",  # two boxes in one cell on one anchor (fluid 1.8.5's gradient kept the last)
            lambda x: L.yolov3_loss(
                x,
                c64(np.array([[[0.3, 0.4, 0.2, 0.35], [0.31, 0.42, 0.25, 0.3], [0.7, 0.6, 0.1, 0.1]]])),
                L.assign(np.array([[1, 0, 1]], "int32")),
                [10, 13, 16, 30, 33, 23],
                [1, 2],
                2,
                0.4,
                32,
            ),  # fmt: skip
            {"x": rng.uniform(-1, 1, (1, 14, 2, 2))},
        ),
        G(
            "roi_perspective_transform",
            lambda x: L.transpose(  # (transpose drops the output's LoD, which the harness fetches as numpy)
                L.roi_perspective_transform(
                    x, L.lod_reset(c64(np.array([[0.3, 0.2, 2.6, 0.5, 2.9, 2.7, 0.1, 2.4]])), target_lod=[0, 1]), 3, 3
                )[0],
                [0, 1, 2, 3],
            ),
            {"x": afz((1, 2, 4, 4))},
        ),
        G("prroi_pool", lambda x: L.prroi_pool(x, c64(np.array([[0.3, 0.2, 2.7, 3.1]])), 1.0, 2, 2), {"x": IMG}),
        G(
            "nce",
            lambda a: L.nce(
                a,
                L.assign(np.array([[1], [3]], "int64")),
                4,
                num_neg_samples=2,
                sampler="custom_dist",
                custom_dist=[0, 0.5, 0, 0.5],
                seed=5,
            ),
            a,
        ),
        G("adaptive_pool_index", lambda x: L.adaptive_pool2d(x, [2, 3], "max", require_index=True)[0], {"x": IMG}),
        G("adaptive_pool3d_index", lambda v: L.adaptive_pool3d(v, [2, 2, 1], "max", require_index=True)[0], {"v": VOL}),
        G("hsigmoid", lambda a: L.hsigmoid(a, L.assign(np.array([[0], [3]], "int64")), 4), a),
        G(
            "match_matrix_topk_pooling",
            lambda x, y: fluid.contrib.sequence_topk_avg_pooling(
                fluid.contrib.match_matrix_tensor(x, y, 2, act="tanh", dtype="float64")[0], x, y, [1, 3], 2
            ),
            {"x": afz((5, 3)), "y": afz((6, 3))},
            lods={"x": [[2, 3]], "y": [[4, 2]]},
        ),
        G(
            "var_conv_2d",
            lambda v, r, c: fluid.contrib.var_conv_2d(v, r, c, 2, 2, [2, 3], [2, 1], act="tanh", dtype="float64"),
            {"v": afz((2 * 3 * 4 + 2 * 2 * 2, 1)), "r": np.zeros((5, 1), "float32"), "c": np.zeros((6, 1), "float32")},
            lods={"v": [[24, 8]], "r": [[3, 2]], "c": [[4, 2]]},
        ),
        # fluid 1.8.5's own NodesVector gradient disagreed with finite differences of its forward
        G(
            "tree_conv",
            lambda x: fluid.contrib.layers.tree_conv(
                x, L.assign(np.array([[[1, 2], [1, 3], [2, 4], [2, 5]]] * 2, "int32")), 3, 2, 3, act="tanh"
            ),
            {"x": afz((2, 5, 2))},
        ),
        # fluid 1.8's rank_attention gives RankParam a gradient only: the parameter fed as an input here
        G(
            "rank_attention",
            _rank_attention_raw,
            {"x": afz((3, 2)), "ro": _RANK_OFFSETS, "p": afz((8, 2))},
            wrt=["p"],
        ),
        G(
            "cudnn_lstm",
            lambda x, h, c: L.lstm(x, h, c, 3, 2, 2, is_bidirec=True),
            {"x": afz((3, 2, 2)), "h": afz((4, 2, 2), 0.1, 0.8), "c": afz((4, 2, 2), 0.1, 0.8)},
        ),
        G("im2sequence", lambda x: L.im2sequence(x, filter_size=2, stride=1, padding=1), {"x": IMG}),
        G("inplace_abn", lambda x: L.inplace_abn(x, act="elu"), {"x": IMG}, rtol=1e-4, atol=1e-6),
        G(
            "warpctc",
            lambda z: L.warpctc(
                z,
                L.assign(np.array([[1, 2], [2, 2]], "int32")),
                input_length=L.assign(np.array([4, 3], "int64")),
                label_length=L.assign(np.array([2, 1], "int64")),
            ),
            {"z": afz((4, 2, 3))},
        ),
        G(
            "affine_grid_grid_sampler",
            lambda x, t: L.grid_sampler(x, L.affine_grid(t, [1, 4, 3, 3])),
            {"x": IMG, "t": np.array([[[0.93, 0.07, 0.031], [-0.11, 0.83, 0.077]]])},
        ),
    ]


SEQ = afz((7, 3))  # four sequences of 2, 0, 4 and 1 rows
SEQ_LENS = {"x": [[2, 0, 4, 1]]}


def _steps_and_back(x):
    """x split into time steps and back (each step scaled), plus step 1 and a memory shrunk at step 1."""
    cf = L.control_flow
    table = cf.lod_rank_table(x)
    arr = cf.lod_tensor_to_array(x, table)
    one = L.fill_constant([1], "int64", 1)
    back = cf.array_to_lod_tensor(arr, table)
    shrunk = cf.shrink_memory(L.slice(x, [0], [0], [4]), one, table)
    return L.reduce_sum(back * back) + L.reduce_sum(L.array_read(arr, one) * 3.0) + L.reduce_sum(shrunk * shrunk)


def sequence_cases(G):
    """LoD sequence ops, their input fed as a LoDTensor (an empty sequence among them)."""
    x = {"x": SEQ}

    def seq(name, build, inputs=None, lods=None, **kw):
        return G(name, build, inputs or x, lods=lods or SEQ_LENS, **kw)

    w = afz((9, 2))
    return [
        *[seq(f"sequence_pool_{t}", (lambda t: lambda x: L.sequence_pool(x, t))(t)) for t in ("sum", "sqrt", "max")],
        seq("sequence_pool_first_last", lambda x: L.sequence_first_step(x) * L.sequence_last_step(x)),
        seq("sequence_softmax", lambda x: L.sequence_softmax(L.reduce_sum(x, dim=1, keep_dim=True))),
        seq("sequence_conv", lambda x, w: _seq_conv(x, w), {"x": SEQ, "w": w}),
        seq("sequence_reverse_reshape", lambda x: L.sequence_reshape(L.sequence_reverse(x) * x, 1)),
        seq("sequence_pad", lambda x: L.sequence_pad(x, c64([0.5]), maxlen=5)[0]),
        G(
            "sequence_unpad",
            lambda p: L.sequence_unpad(p, L.assign(np.array([2, 3], "int64"))) * 2.0,
            {"p": afz((2, 3, 2))},
        ),
        seq(
            "sequence_concat_slice",
            lambda x: L.sequence_slice(
                L.sequence_concat([x, L.tanh(x)]),
                L.assign(np.array([[1], [0], [2], [0]], "int64")),
                L.assign(np.array([[2], [0], [5], [1]], "int64")),
            ),
        ),
        seq("sequence_expand_as", lambda x: L.sequence_expand_as(L.sequence_pool(x, "average"), x) * x),
        seq("lod_tensor_to_array", lambda x: _steps_and_back(x)),
        seq(
            "filter_by_instag",
            lambda x: L.filter_by_instag(
                x,
                L.lod_reset(L.assign(np.array([[1], [2], [3], [5]], "int64")), target_lod=[0, 2, 3, 3, 4]),
                L.assign(np.array([2, 5], "int64")),
                True,
            )[0],
        ),  # fmt: skip
        seq(
            "reorder_lod_tensor_by_rank",
            lambda x: L.reorder_lod_tensor_by_rank(x, L.control_flow.lod_rank_table(x)) * L.sequence_reverse(x),
        ),
        seq("sequence_expand", lambda x: L.sequence_expand(L.sequence_pool(x, "sum"), x) * x),
        G(
            "sequence_scatter",
            lambda b, u: L.sequence_scatter(b, L.lod_reset(L.assign(np.array([[0], [2], [1], [1]], "int64")), u), u),
            {"b": afz((2, 3)), "u": afz((4, 1))},
            lods={"u": [[1, 3]]},
        ),
        seq("lod_reset", lambda x: L.sequence_pool(L.lod_reset(x, target_lod=[0, 3, 7]), "max")),
        G(
            "lstm",
            lambda x, h: L.dynamic_lstm(x, 8, h_0=h, c_0=h * 0.5, dtype="float64")[0],
            {"x": afz((7, 8), 0.05, 0.6), "h": afz((4, 2), 0.05, 0.5)},
            lods={"x": [[2, 0, 4, 1]]},
            rtol=1e-4,
            atol=1e-6,
        ),
        G(
            # a hidden size that is a multiple of 8: fluid 1.8.5's CPU lstm_grad (its AVX path) gave zero for
            # the input's gradient there (finite differences of its own forward did not), as in the book's
            # semantic-role model; fluidcompat's follows the finite differences
            "lstm_hidden_8_relu_sigmoid_reversed",
            lambda x: L.dynamic_lstm(
                x, 32, dtype="float64", candidate_activation="relu", cell_activation="sigmoid", is_reverse=True
            )[0],
            {"x": afz((6, 32), 0.05, 0.6)},
            lods={"x": [[1, 3, 2]]},
            rtol=1e-4,
            atol=1e-6,
        ),
        G(
            "lstmp_projection_and_cell",
            lambda x: list(L.dynamic_lstmp(x, 8, 3, dtype="float64", cell_clip=0.8, is_reverse=True)),
            {"x": afz((7, 8), 0.05, 0.6)},
            lods={"x": [[2, 0, 4, 1]]},
            rtol=1e-4,
            atol=1e-6,
        ),
        G(
            "gru",
            lambda x, h: L.dynamic_gru(x, 2, h_0=h, is_reverse=True),
            {"x": afz((7, 6), 0.05, 0.6), "h": afz((4, 2), 0.05, 0.5)},
            lods={"x": [[2, 0, 4, 1]]},
            rtol=1e-4,
            atol=1e-6,
        ),
    ]


def _seq_conv(x, w):
    """The sequence_conv op with its filter a fed input, so the filter's gradient is checked too."""
    block = fluid.default_main_program().current_block()
    out = block.create_var(name=fluid.unique_name.generate("seqconv"), dtype="float64")
    attrs = {"contextLength": 3, "contextStart": -1, "contextStride": 1}
    block.append_op(type="sequence_conv", inputs={"X": [x], "Filter": [w]}, outputs={"Out": [out]}, attrs=attrs)
    return out
