# Golden script: 53 math, shape, activation and loss layers with their less common arguments (axis
# broadcasting, keep_dim, alpha, descending, reverse/exclusive, reductions, losses with a target that
# depends on the input): output and the gradients of a nonlinear function of it, summarised. Not here,
# as fluid 1.8.5's gradients were wrong and fluidcompat's are not: gather with repeated indices
# (fluid kept the last row's gradient), scatter's X gradient (fluid did not zero the replaced rows),
# strided_slice with a negative stride not dividing the range (fluid anchored at the end).
import json

import numpy as np
import paddle.fluid as fluid

L = fluid.layers
rng = np.random.RandomState(0)
A = rng.uniform(-1, 1, (3, 4, 5)).astype("float32")
B = rng.uniform(-1, 1, (4, 5)).astype("float32")
I = np.array([[2], [0], [1]], "int64")
cases = {
    "ew_axis1": lambda a, b: L.elementwise_mul(a, L.reduce_sum(b, dim=1), axis=1),
    "ew_div_axis0": lambda a, b: L.elementwise_div(a, L.reduce_mean(a, dim=[1, 2]) + 3.0, axis=0),
    "ew_pow": lambda a, b: L.elementwise_pow(L.abs(a) + 0.5, b),
    "ew_max_b": lambda a, b: L.elementwise_max(a, b),
    "ew_floordiv": lambda a, b: L.cast(
        L.elementwise_floordiv(L.cast(a * 10, "int64"), L.fill_constant([1], "int64", 3)), "float32"
    ),
    "ew_mod": lambda a, b: L.elementwise_mod(a * 10, L.fill_constant([1], "float32", 3.0)),
    "reduce_multi": lambda a, b: L.reduce_max(a, dim=[0, 2], keep_dim=True),
    "reduce_prod": lambda a, b: L.reduce_prod(a, dim=-1),
    "reduce_min_all": lambda a, b: L.reduce_min(a),
    "matmul_tt_alpha": lambda a, b: L.matmul(
        a, L.transpose(a, [0, 2, 1]), transpose_x=False, transpose_y=False, alpha=0.5
    ),
    "matmul_bcast": lambda a, b: L.matmul(a, b, transpose_y=True),
    "matmul_vec": lambda a, b: L.matmul(L.reshape(b, [20]), L.reshape(b, [20])),
    "mul_dims": lambda a, b: L.mul(a, L.reshape(b, [20, 1]), x_num_col_dims=1, y_num_col_dims=1),
    "topk": lambda a, b: L.topk(a, 2)[0],
    "argsort_desc": lambda a, b: L.argsort(a, axis=1, descending=True)[0],
    "expand": lambda a, b: L.expand(b, [2, 3]),
    "expand_as": lambda a, b: L.expand_as(L.slice(a, [0], [0], [1]), a),
    "stack": lambda a, b: L.stack([b, b * 2.0, b * 3.0], axis=1),
    "split_list": lambda a, b: L.concat(L.split(a, [1, -1, 2], dim=2)[::-1], axis=2),
    "where": lambda a, b: L.where(a > 0.2, a, b * 0.0 + a * a),
    "clip": lambda a, b: L.clip(a, -0.3, 0.4),
    "clip_by_norm": lambda a, b: L.clip_by_norm(a, 1.5),
    "l2_normalize": lambda a, b: L.l2_normalize(a, axis=1),
    "cumsum_rev": lambda a, b: L.cumsum(a, axis=2, reverse=True, exclusive=True),
    "logsumexp": lambda a, b: L.logsumexp(a, dim=[1], keep_dim=False),
    "softmax_axis": lambda a, b: L.softmax(a, axis=1),
    "log_softmax_like": lambda a, b: L.log(L.softmax(a)),
    "pad_const": lambda a, b: L.pad(a, [0, 1, 2, 0, 1, 1], pad_value=0.5),
    "pad_like": lambda a, b: L.pad_constant_like(L.pad(a, [0, 1, 0, 0, 0, 0]), a, 0.0),
    "unsqueeze_squeeze": lambda a, b: L.squeeze(L.unsqueeze(a, [0, 3]), [0]),
    "flatten": lambda a, b: L.flatten(a, axis=2),
    "reverse": lambda a, b: L.reverse(a, [0, 2]),
    "sign_abs": lambda a, b: L.sign(a) * L.abs(a),
    "hard_sigmoid": lambda a, b: L.hard_sigmoid(a * 5),
    "swish": lambda a, b: L.swish(a * 3),
    "gelu": lambda a, b: L.gelu(a * 3),
    "elu_selu": lambda a, b: L.elu(a * 3, 0.7) + L.selu(a),
    "leaky_relu6": lambda a, b: L.leaky_relu(a, 0.1) + L.relu6(a * 10),
    "softplus_sign": lambda a, b: L.softplus(a) + L.softsign(a),
    "erf_rsqrt": lambda a, b: L.erf(a) + L.rsqrt(L.abs(a) + 0.1),
    "one_hot": lambda a, b: L.one_hot(L.assign(I), 4) * 2.0 + L.reduce_sum(a),
    "sigmoid_ce": lambda a, b: L.sigmoid_cross_entropy_with_logits(
        a, L.cast(a > 0, "float32"), ignore_index=-1, normalize=True
    ),
    "label_smooth": lambda a, b: L.label_smooth(L.softmax(a), epsilon=0.1),
    "smooth_l1": lambda a, b: L.smooth_l1(L.reshape(a, [3, 20]), L.reshape(a * 0.5, [3, 20]), sigma=2.0),
    "huber": lambda a, b: L.huber_loss(L.reshape(a, [60, 1]), L.reshape(a * 0.1, [60, 1]), 0.3),
    "kldiv": lambda a, b: L.kldiv_loss(L.log(L.softmax(a)), L.softmax(a * 2.0), reduction="batchmean"),
    "mse": lambda a, b: L.mse_loss(a, a * 0.3),
    "square_err": lambda a, b: L.square_error_cost(a, a * 0.3 + 0.1),
    "log_loss": lambda a, b: L.log_loss(L.sigmoid(L.reshape(a, [60, 1])), L.cast(L.reshape(a, [60, 1]) > 0, "float32")),
    "npair": lambda a, b: L.npair_loss(
        L.reshape(a, [3, 20]), L.reshape(a * 0.5, [3, 20]), L.assign(np.array([0.0, 1.0, 0.0], "float32"))
    ),
    "cos_sim": lambda a, b: L.cos_sim(L.reshape(a, [3, 20]), L.reshape(a * a, [3, 20])),
    "dist": lambda a, b: L.dist(a, a * 0.5, p=3),
    "trace_diag": lambda a, b: L.trace(a, offset=1, axis1=1, axis2=2),
}
res = {}


def summary(v):
    flat = np.asarray(v).ravel().astype("float64")
    return [list(np.asarray(v).shape), float(flat.sum()), float((flat * np.cos(np.arange(flat.size))).sum())]


for name, fn in cases.items():
    main, start = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, start):
        a = fluid.data("a", [3, 4, 5], "float32")
        a.stop_gradient = False
        b = fluid.data("b", [4, 5], "float32")
        b.stop_gradient = False
        try:
            out = fn(a, b)
            loss = L.reduce_sum(L.cast(out, "float32") * L.cos(L.cast(out, "float32")))
            grads = [g for g in fluid.gradients([loss], [a, b])]
        except Exception as e:  # noqa: BLE001
            res[name] = "BUILD " + type(e).__name__ + " " + str(e).strip().splitlines()[-1][:100]
            continue
    exe = fluid.Executor(fluid.CPUPlace())
    try:
        r = exe.run(main, feed={"a": A, "b": B}, fetch_list=[out] + [g for g in grads if g is not None])
        res[name] = [summary(v) for v in r] + [[g is None for g in grads]]
    except Exception as e:  # noqa: BLE001
        res[name] = "RUN " + str(e).strip().splitlines()[-1][:150]
print(json.dumps(res))
