"""The LoD of gradients when programs run on LoDTensors, as fluid 1.8.5 gave it: d(sum of a layer's
output) / d(each sequence or dense input) for ~180 layers of the layer zoo (each differentiated in a
clone of the zoo's program and run pruned to its gradients) and ~70 more layers built alone. fluid's
grad kernels passed the input's LoD on to its gradient for most ops but not for convolutions,
pools, interpolations, norms, several losses and shape ops."""

import json
import sys

import numpy as np
import paddle.fluid as fluid
from _layer_zoo import FAIL_ON_LOD_FEED, STOPS_FLUID, build, differentiate, float_outputs, lod_feed, run_pruned

place = fluid.CPUPlace()
L = fluid.layers
rng = np.random.RandomState(0)


def zoo():
    outs, startup = build(startup_too=True)
    outs = float_outputs(outs)
    main = next(iter(outs.values())).block.program
    feed = lod_feed(rng, place)
    exe = fluid.Executor(place)
    exe.run(startup)
    base = main
    found = {}
    for k, v in sorted(outs.items()):
        if k in STOPS_FLUID | FAIL_ON_LOD_FEED:
            continue
        try:
            main, targets = differentiate(base, startup, v, L.reduce_sum)
            if not targets:
                found[k] = "none"
                continue
            got = run_pruned(exe, main, [g for _, g in targets], feed)
            found[k] = {n: [t.lod(), list(np.array(t).shape)] for (n, _), t in zip(targets, got)}
        except Exception as e:
            found[k] = ["error", type(e).__name__, [ln for ln in str(e).splitlines() if "rror:" in ln][-1:]]
    return found


def alone():
    cases = {
        "sce_hard": lambda s, s4: L.softmax_with_cross_entropy(
            s, L.cast(L.ones_like(L.slice(s, [1], [0], [1])), "int64")
        ),
        "bilinear": lambda s, s4: L.resize_bilinear(s4, [3, 3]),
        "conv_t": lambda s, s4: L.conv2d_transpose(s4, 2, filter_size=2),
        "dw_conv": lambda s, s4: L.conv2d(s4, 4, 1, groups=4),
        "pool_max": lambda s, s4: L.pool2d(s4, 2, "max"),
        "adaptive": lambda s, s4: L.adaptive_pool2d(s4, 1),
        "affine_ch": lambda s, s4: L.affine_channel(s4),
        "bn": lambda s, s4: L.batch_norm(s4),
        "ln": lambda s, s4: L.layer_norm(s),
        "sq_err": lambda s, s4: L.square_error_cost(s, L.ones_like(s)),
        "huber": lambda s, s4: L.huber_loss(L.slice(s, [1], [0], [1]), L.slice(s, [1], [1], [2]), 1.0),
        "log_loss": lambda s, s4: L.log_loss(
            L.sigmoid(L.slice(s, [1], [0], [1])), L.ones_like(L.slice(s, [1], [0], [1]))
        ),
        "softmax": lambda s, s4: L.softmax(s),
        "log_softmax": lambda s, s4: L.log_softmax(s),
        "elu": lambda s, s4: L.elu(s),
        "swish": lambda s, s4: L.swish(s),
        "gelu": lambda s, s4: L.gelu(s),
        "hard_swish": lambda s, s4: L.hard_swish(s),
        "brelu": lambda s, s4: L.brelu(s),
        "leaky": lambda s, s4: L.leaky_relu(s),
        "mish_like_softplus": lambda s, s4: L.softplus(s),
        "expand": lambda s, s4: L.expand(s, [1, 2]),
        "expand_as": lambda s, s4: L.expand_as(s, L.concat([s, s], 1)),
        "flatten": lambda s, s4: L.flatten(s4),
        "reshape": lambda s, s4: L.reshape(s4, [-1, 16]),
        "transpose": lambda s, s4: L.transpose(s, [1, 0]),
        "squeeze": lambda s, s4: L.squeeze(L.unsqueeze(s, [2]), [2]),
        "unsqueeze": lambda s, s4: L.unsqueeze(s, [2]),
        "concat1": lambda s, s4: L.concat([s, s], 1),
        "concat0": lambda s, s4: L.concat([s, s], 0),
        "split": lambda s, s4: L.split(s, 2, 1)[0] * 1 + L.split(s, 2, 1)[1],
        "gather": lambda s, s4: L.gather(s, L.assign(np.array([0, 2], "int32"))),
        "gather_nd": lambda s, s4: L.gather_nd(s, L.assign(np.array([[0], [2]], "int32"))),
        "slice": lambda s, s4: L.slice(s, [1], [0], [3]),
        "strided": lambda s, s4: L.strided_slice(s, [1], [0], [4], [2]),
        "sums": lambda s, s4: L.sums([s, s]),
        "sum_op": lambda s, s4: s + s,
        "mul": lambda s, s4: L.mul(s, L.ones_like(L.transpose(s, [1, 0]))),
        "matmul": lambda s, s4: L.matmul(s, s, transpose_y=True),
        "fc": lambda s, s4: L.fc(s, 3),
        "row_conv": lambda s, s4: L.row_conv(s, 2),
        "clip_by_norm": lambda s, s4: L.clip_by_norm(s, 1.0),
        "topk": lambda s, s4: L.topk(s, 2)[0],
        "reduce_max": lambda s, s4: L.reduce_max(s, dim=1),
        "reduce_mean0": lambda s, s4: L.reduce_mean(s, dim=0),
        "mean": lambda s, s4: L.mean(s),
        "cumsum": lambda s, s4: L.cumsum(s, axis=1),
        "dropout": lambda s, s4: L.dropout(s, 0.5, is_test=True),
        "scale": lambda s, s4: L.scale(s, 2.0),
        "cast": lambda s, s4: L.cast(s, "float64"),
        "elementwise_max": lambda s, s4: L.elementwise_max(s, L.ones_like(s)),
        "elementwise_pow": lambda s, s4: L.elementwise_pow(L.abs(s) + 1, L.ones_like(s)),
        "pow": lambda s, s4: L.pow(s, 2.0),
        "sign_abs": lambda s, s4: L.abs(s),
        "teacher": lambda s, s4: L.teacher_student_sigmoid_loss(L.slice(s, [1], [0], [1]), L.slice(s, [1], [1], [2])),
        "sig_focal": lambda s, s4: L.sigmoid_focal_loss(
            s, L.cast(L.ones_like(L.slice(s, [1], [0], [1])), "int32"), L.fill_constant([1], "int32", 1)
        ),
        "npair": lambda s, s4: L.npair_loss(s, s, L.cast(L.slice(s, [1], [0], [1]) > 0, "float32")),
        "margin": lambda s, s4: L.margin_rank_loss(
            L.ones_like(L.slice(s, [1], [0], [1])), L.slice(s, [1], [0], [1]), L.slice(s, [1], [1], [2])
        ),
        "unfold": lambda s, s4: L.unfold(s4, [1, 1]),
        "space_to_depth": lambda s, s4: L.space_to_depth(s4, 2),
        "temporal_shift": lambda s, s4: L.temporal_shift(s4, 5, 0.25),
        "hard_sigmoid": lambda s, s4: L.hard_sigmoid(s),
        "im2seq": lambda s, s4: L.im2sequence(s4, [1, 1]),
        "lstm_h": lambda s, s4: L.dynamic_lstm(L.fc(s, 16), 16)[0],
        "gru": lambda s, s4: L.dynamic_gru(L.fc(s, 12), 4),
        "seq_conv": lambda s, s4: L.sequence_conv(s, 3, 3),
        "seq_pool": lambda s, s4: L.sequence_pool(s, "max"),
        "seq_softmax": lambda s, s4: L.sequence_softmax(L.slice(s, [1], [0], [1])),
        "seq_reverse": lambda s, s4: L.sequence_reverse(s),
        "seq_pad": lambda s, s4: L.sequence_pad(s, L.fill_constant([1], "float32", 0.0))[0],
        "seq_first": lambda s, s4: L.sequence_first_step(s),
    }
    out = {}
    for k, fn in cases.items():
        main, startup = fluid.Program(), fluid.Program()
        try:
            with fluid.program_guard(main, startup):
                s = fluid.data("s", [None, 8], "float32", lod_level=1)
                s4 = fluid.data("s4", [None, 4, 2, 2], "float32", lod_level=1)
                s.stop_gradient = False
                s4.stop_gradient = False
                y = fn(s, s4)
                gs = fluid.gradients([L.reduce_sum(L.cast(y, "float32"))], [s, s4])
            targets = [(n, g) for n, g in zip(("s", "s4"), gs) if g is not None]
            exe = fluid.Executor(place)
            exe.run(startup)
            feed = {
                "s": fluid.create_lod_tensor(rng.uniform(-1, 1, (5, 8)).astype("float32"), [[2, 3]], place),
                "s4": fluid.create_lod_tensor(rng.uniform(-1, 1, (5, 4, 2, 2)).astype("float32"), [[2, 3]], place),
            }
            got = exe.run(main, feed=feed, fetch_list=[g for _, g in targets], return_numpy=False)
            out[k] = {n: t.lod() for (n, _), t in zip(targets, got)}
        except Exception as e:
            out[k] = ["error", type(e).__name__, [ln for ln in str(e).splitlines() if "rror" in ln][-1:]]
    return out


json.dump({"zoo": zoo(), "alone": alone()}, sys.stdout, indent=0, sort_keys=True)
