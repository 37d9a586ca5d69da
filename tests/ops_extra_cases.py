"""Op-table cases (numpy references) for the ops fluidcompat_ops/extra.py held (now in their
family modules); test_ops.py runs them."""

from __future__ import annotations

import json
import math
import os

import numpy as np

import fluidcompat as fluid
from tests import numpy_ref as R
from tests.op_harness import Case

L = fluid.layers
rng = np.random.RandomState(7)
X = rng.uniform(-2, 2, (2, 3, 4)).astype("float32")
U = rng.uniform(-0.9, 0.9, (2, 3)).astype("float32")
M = rng.uniform(-1, 1, (3, 3)).astype("float32")
IMG = rng.uniform(-1, 1, (2, 4, 4, 4)).astype("float32")
VOL = rng.uniform(-1, 1, (1, 2, 4, 4, 4)).astype("float32")
PROB = rng.uniform(0.05, 0.95, (4, 1)).astype("float32")
LBL = (rng.uniform(0, 1, (4, 1)) > 0.5).astype("float32")
erf = np.vectorize(math.erf)


def const(a):
    return L.assign(np.asarray(a))


def _soft_relu(x, t=40.0):
    return np.log1p(np.exp(np.clip(x, -t, t)))


def _selu(x):
    scale, alpha = 1.0507009873554804934193349852946, 1.6732632423543772848170429916717
    return (scale * np.where(x > 0, x, alpha * (np.exp(x) - 1))).astype("float32")


def _space_to_depth(x, b):
    # fluid 1.8.5's order (tests/golden/layers_spatial): x read as [n, b, b, c / b^2, h, w] laid out as the
    # [n, c / b^2, h * b, w * b] image, whose memory is the output
    n, c, h, w = x.shape
    img = x.reshape(n, b, b, c // (b * b), h, w).transpose(0, 3, 4, 1, 5, 2)
    return img.reshape(n, c * b * b, h // b, w // b)


RNN_X = np.random.RandomState(8).uniform(-1, 1, (3, 3)).astype("float32")
RNN_H = np.random.RandomState(9).uniform(-1, 1, (3, 2)).astype("float32")


def _sig(v):
    return 1 / (1 + np.exp(-v))


def _lstm_unit(x, h, c):
    """All weights 0.1 and biases 0.2: the four gates are equal."""
    z = 0.1 * (x.sum(1, keepdims=True) + h.sum(1, keepdims=True)) + 0.2
    c_new = c * _sig(z + 0.5) + _sig(z) * np.tanh(z)
    return [(_sig(z) * np.tanh(c_new)).astype("float32"), c_new.astype("float32")]


def _gru_unit(x, h):
    """Weight 0.1 everywhere and bias 0.2 (fluid's layout does not matter then)."""
    d = h.shape[1]
    gate = x + 0.2
    ur = _sig(gate[:, : 2 * d] + 0.1 * h.sum(1, keepdims=True))
    u, r = ur[:, :d], ur[:, d:]
    cand = np.tanh(gate[:, 2 * d :] + 0.1 * (r * h).sum(1, keepdims=True))
    return [(u * (cand - h) + h).astype("float32"), (r * h).astype("float32"), np.concatenate([u, r, cand], 1)]


def _group_norm(x, g, eps=1e-5):
    n = x.shape[0]
    xg = x.reshape(n, g, -1)
    return ((xg - xg.mean(-1, keepdims=True)) / np.sqrt(xg.var(-1, keepdims=True) + eps)).reshape(x.shape)


def _smooth_l1(x, y, sigma=1.0):
    d = x - y
    s2 = sigma * sigma
    v = np.where(np.abs(d) < 1.0 / s2, 0.5 * d * d * s2, np.abs(d) - 0.5 / s2)
    return v.reshape(v.shape[0], -1).sum(1, keepdims=True)


def _huber(x, y, d):
    r = y - x
    return np.where(np.abs(r) <= d, 0.5 * r * r, d * (np.abs(r) - 0.5 * d))


def _lrn(x, n=5, k=1.0, alpha=1e-4, beta=0.75):
    c = x.shape[1]
    sq = np.square(x)
    mid = np.zeros_like(x)
    for i in range(c):
        lo, hi = max(0, i - n // 2), min(c, i + (n - 1) // 2 + 1)
        mid[:, i] = k + alpha * sq[:, lo:hi].sum(1)
    return x / mid**beta


def _bilinear_align(x, oh, ow):
    n, c, h, w = x.shape
    ys = np.arange(oh) * ((h - 1) / (oh - 1))
    xs = np.arange(ow) * ((w - 1) / (ow - 1))
    y0, x0 = np.floor(ys).astype(int), np.floor(xs).astype(int)
    y1, x1 = np.minimum(y0 + 1, h - 1), np.minimum(x0 + 1, w - 1)
    wy, wx = (ys - y0)[:, None], (xs - x0)[None, :]
    a, b = x[:, :, y0][:, :, :, x0], x[:, :, y0][:, :, :, x1]
    c_, d = x[:, :, y1][:, :, :, x0], x[:, :, y1][:, :, :, x1]
    return (a * (1 - wy) * (1 - wx) + b * (1 - wy) * wx + c_ * wy * (1 - wx) + d * wy * wx).astype("float32")


def _conv3d_ref(x, w):
    n, c, d, h, ww = x.shape
    o, _, kd, kh, kw = w.shape
    out = np.zeros((n, o, d - kd + 1, h - kh + 1, ww - kw + 1), "float64")
    for i in range(out.shape[2]):
        for j in range(out.shape[3]):
            for k in range(out.shape[4]):
                patch = x[:, :, i : i + kd, j : j + kh, k : k + kw]
                out[:, :, i, j, k] = np.tensordot(patch, w, axes=([1, 2, 3, 4], [1, 2, 3, 4]))
    return out.astype("float32")


def _unique_first(x):
    vals, first = [], {}
    for v in x.reshape(-1):
        if v not in first:
            first[v] = len(vals)
            vals.append(v)
    return np.array(vals, x.dtype), np.array([first[v] for v in x.reshape(-1)], "int32")


def _at_1_2(v):
    return np.where((np.arange(2)[:, None, None] == 1) & (np.arange(3)[None, :, None] == 2), v, 0.0).astype("float32")


W3 = rng.uniform(-1, 1, (3, 2, 2, 2, 2)).astype("float32")

EXTRA_CASES = [
    Case("acos", lambda u: L.acos(u), {"u": U}, np.arccos, rtol=1e-5),
    Case("asin", lambda u: L.asin(u), {"u": U}, np.arcsin, rtol=1e-5),
    Case("atan", lambda x: L.atan(x), {"x": X}, np.arctan),
    Case("erf", lambda x: L.erf(x), {"x": X}, lambda x: erf(x).astype("float32"), atol=1e-6),
    Case("log1p", lambda u: L.log1p(u), {"u": U}, np.log1p, rtol=1e-5),
    Case("tanh_shrink", lambda x: L.tanh_shrink(x), {"x": X}, lambda x: x - np.tanh(x), atol=1e-6),
    Case("hard_shrink", lambda x: L.hard_shrink(x, 0.7), {"x": X}, lambda x: np.where(np.abs(x) > 0.7, x, 0)),
    Case("softshrink", lambda x: L.softshrink(x, 0.3), {"x": X}, lambda x: np.sign(x) * np.maximum(np.abs(x) - 0.3, 0)),
    Case("thresholded_relu", lambda x: L.thresholded_relu(x, 0.4), {"x": X}, lambda x: np.where(x > 0.4, x, 0)),
    Case("brelu", lambda x: L.brelu(x, -1.0, 1.5), {"x": X}, lambda x: np.clip(x, -1.0, 1.5)),
    Case("soft_relu", lambda x: L.soft_relu(x, 1.0), {"x": X}, lambda x: _soft_relu(x, 1.0).astype("float32")),
    Case("stanh", lambda x: L.stanh(x), {"x": X}, lambda x: (1.7159 * np.tanh(0.67 * x)).astype("float32")),
    Case("selu", lambda x: L.selu(x), {"x": X}, _selu),
    Case("mish", lambda x: L.mish(x), {"x": X}, lambda x: (x * np.tanh(np.log1p(np.exp(x)))).astype("float32")),
    Case("sign", lambda x: L.sign(x), {"x": X}, np.sign),
    Case("cumsum", lambda x: L.cumsum(x, axis=1), {"x": X}, lambda x: np.cumsum(x, 1)),
    Case(
        "cumsum_exclusive_reverse",
        lambda x: L.cumsum(x, axis=2, exclusive=True, reverse=True),
        {"x": X},
        lambda x: np.flip(np.cumsum(np.flip(x, 2), 2), 2) - x,
        atol=1e-5,
    ),
    Case(
        "reshape_transpose_v1",
        lambda x: v1_op("transpose", v1_op("reshape", x, {"shape": [4, -1]}), {"axis": [1, 0]}),
        {"x": X},
        lambda x: x.reshape(4, 6).T,
    ),
    Case("cumsum_no_axis", lambda x: L.cumsum(x), {"x": X}, lambda x: np.cumsum(x, -1), atol=1e-5),
    Case("flip", lambda x: L.flip(x, [0, 2]), {"x": X}, lambda x: x[::-1, :, ::-1]),
    Case("reverse", lambda x: L.reverse(x, 1), {"x": X}, lambda x: x[:, ::-1]),
    Case("roll", lambda x: L.roll(x, [1, -1], [1, 2]), {"x": X}, lambda x: np.roll(x, (1, -1), (1, 2))),
    Case("tril", lambda m: L.tril(m, -1), {"m": M}, lambda m: np.tril(m, -1)),
    Case("triu", lambda m: L.triu(m, 1), {"m": M}, lambda m: np.triu(m, 1)),
    Case("eye", lambda: L.eye(2, 3, dtype="float32"), {}, lambda: np.eye(2, 3, dtype="float32")),
    Case("eye_batch", lambda: L.eye(2, batch_shape=[3]), {}, lambda: np.tile(np.eye(2, dtype="float32"), (3, 1, 1))),
    Case(
        "diag",
        lambda: L.diag(np.array([1.0, 2.0, 3.0], "float32")),
        {},
        lambda: np.diag([1.0, 2.0, 3.0]).astype("float32"),
    ),
    Case(
        "diag_embed",
        lambda u: L.diag_embed(u),
        {"u": U},
        lambda u: np.stack([np.diag(r) for r in u]).astype("float32"),
    ),
    Case("kron", lambda u, m: L.kron(u, m), {"u": U, "m": M}, np.kron, rtol=1e-5),
    Case("trace", lambda m: L.trace(m), {"m": M}, lambda m: np.array([np.trace(m)], "float32"), rtol=1e-5),
    Case("isfinite", lambda x: L.isfinite(x), {"x": X}, lambda x: np.array([True])),
    Case("has_inf", lambda x: L.has_inf(L.log(x * 0.0)), {"x": X}, lambda x: np.array([True])),
    Case("has_nan", lambda x: L.has_nan(x), {"x": X}, lambda x: np.array([False])),
    Case("full", lambda: L.full([2, 2], 3.5), {}, lambda: np.full((2, 2), 3.5, "float32")),
    Case("full_like", lambda x: L.full_like(x, 2.0), {"x": X}, lambda x: np.full_like(x, 2.0)),
    Case("arange", lambda: L.arange(1, 7, 2), {}, lambda: np.arange(1, 7, 2)),
    Case(
        "index_select",
        lambda x, i: L.index_select(x, i, dim=2),
        {"x": X, "i": np.array([3, 0, 3], "int64")},
        lambda x, i: x[:, :, i],
    ),
    Case(
        "index_sample",
        lambda u, i: L.index_sample(u, i),
        {"u": U, "i": np.array([[2, 0], [1, 1]], "int64")},
        lambda u, i: np.take_along_axis(u, i, 1),
    ),
    Case(
        "gather_nd",
        lambda x, i: L.gather_nd(x, i),
        {"x": X, "i": np.array([[1, 2], [0, 0]], "int64")},
        lambda x, i: x[i[:, 0], i[:, 1]],
    ),
    Case(
        "scatter_nd_add",
        lambda x, i, v: L.scatter_nd_add(x, i, v),
        {"x": X, "i": np.array([[1, 2], [1, 2]], "int64"), "v": np.ones((2, 4), "float32")},
        lambda x, i, v: (
            x
            + np.where((np.arange(2)[:, None, None] == 1) & (np.arange(3)[None, :, None] == 2), 2.0, 0.0).astype(
                "float32"
            )
        ),
    ),
    Case(
        "scatter_nd",
        lambda i, v: L.scatter_nd(i, v, [3, 2]),
        {"i": np.array([[1], [1], [2]], "int64"), "v": np.ones((3, 2), "float32")},
        lambda i, v: np.array([[0, 0], [2, 2], [1, 1]], "float32"),
    ),
    Case("bmm", lambda x: L.bmm(x, L.transpose(x, [0, 2, 1])), {"x": X}, lambda x: x @ x.transpose(0, 2, 1), rtol=1e-5),
    Case("dot", lambda u: L.dot(u, u), {"u": U}, lambda u: (u * u).sum(-1, keepdims=True), rtol=1e-5),
    Case("cross", lambda m: L.cross(m, m * 2.0 + 1.0), {"m": M}, lambda m: np.cross(m, m * 2 + 1, axis=0), rtol=1e-5),
    Case(
        "dist",
        lambda u: L.dist(u, u * 0.5, p=3),
        {"u": U},
        lambda u: np.array([np.sum(np.abs(u * 0.5) ** 3) ** (1 / 3)], "float32"),
    ),
    Case(
        "addmm", lambda m: L.addmm(m, m, m, alpha=2.0, beta=0.5), {"m": M}, lambda m: 0.5 * m + 2.0 * m @ m, rtol=1e-5
    ),
    Case("addcmul", lambda u: L.addcmul(u, u, u, value=3.0), {"u": U}, lambda u: u + 3.0 * u * u, rtol=1e-5),
    Case("clamp", lambda x: L.clamp(x, min=-0.5), {"x": X}, lambda x: np.maximum(x, -0.5)),
    Case(
        "cos_sim",
        lambda u: L.cos_sim(u, L.reverse(u, 0)),
        {"u": U},
        lambda u: ((u * u[::-1]).sum(1) / (np.linalg.norm(u, axis=1) * np.linalg.norm(u[::-1], axis=1)))[:, None],
        rtol=1e-5,
    ),
    Case("logsumexp", lambda x: L.logsumexp(x, dim=[1]), {"x": X}, lambda x: np.log(np.exp(x).sum(1)), rtol=1e-5),
    Case("reduce_all", lambda x: L.reduce_all(x > 0.0, dim=[1]), {"x": X}, lambda x: (x > 0).all(1)),
    Case("reduce_any", lambda x: L.reduce_any(x > 1.5), {"x": X}, lambda x: np.array([(x > 1.5).any()])),
    Case("size", lambda x: L.size(x), {"x": X}, lambda x: np.array([24], "int64")),
    Case("rank", lambda x: L.rank(x), {"x": X}, lambda x: np.array(3, "int32")),
    Case("t", lambda u: L.t(u), {"u": U}, lambda u: u.T),
    Case("unstack", lambda x: L.unstack(x, axis=1), {"x": X}, lambda x: [x[:, k] for k in range(3)]),
    Case(
        "unique",
        lambda i: list(L.unique(i)),
        {"i": np.array([3, 1, 3, 2, 1], "int64")},
        lambda i: list(_unique_first(i)),
    ),
    Case(
        "unique_with_counts",
        lambda i: list(L.unique_with_counts(i, dtype="int64"))[2],
        {"i": np.array([3, 1, 3, 2, 1], "int64")},
        lambda i: np.array([2, 2, 1], "int64"),
    ),
    Case(
        "meshgrid",
        lambda: L.meshgrid([const(np.array([1.0, 2.0], "float32")), const(np.array([3.0, 4.0, 5.0], "float32"))]),
        {},
        lambda: list(np.meshgrid(np.array([1.0, 2.0], "float32"), np.array([3.0, 4.0, 5.0], "float32"), indexing="ij")),
    ),
    Case(
        "nonzero",
        lambda m: L.nonzero(m > 0.0),
        {"m": M},
        lambda m: np.argwhere(m > 0).astype("int64"),
        shapes={},
    ),
    Case(
        "pixel_shuffle",
        lambda x: L.pixel_shuffle(x, 2),
        {"x": IMG},
        lambda x: x.reshape(2, 1, 2, 2, 4, 4).transpose(0, 1, 4, 2, 5, 3).reshape(2, 1, 8, 8),
    ),
    Case(
        "shuffle_channel",
        lambda x: L.shuffle_channel(x, 2),
        {"x": IMG},
        lambda x: x.reshape(2, 2, 2, 4, 4).transpose(0, 2, 1, 3, 4).reshape(2, 4, 4, 4),
    ),
    Case("space_to_depth", lambda x: L.space_to_depth(x, 2), {"x": IMG}, lambda x: _space_to_depth(x, 2)),
    Case("maxout", lambda x: L.maxout(x, 2), {"x": IMG}, lambda x: x.reshape(2, 2, 2, 4, 4).max(2)),
    Case(
        "prelu_channel",
        lambda x: L.prelu(x, "channel"),
        {"x": IMG},
        lambda x: np.where(x > 0, x, 0.25 * x).astype("float32"),
    ),
    Case(
        "strided_slice",
        lambda x: L.strided_slice(x, [1, 2], [0, 3], [3, 0], [2, -1]),
        {"x": X},
        lambda x: x[:, 0:3:2, 3:0:-1],
    ),
    Case(
        "expand_as",
        lambda u: L.expand_as(u, L.fill_constant([4, 6], "float32", 0.0)),
        {"u": U},
        lambda u: np.tile(u, (2, 2)),
    ),
    Case(
        "pad_constant_like",
        lambda u: L.pad_constant_like(L.fill_constant([3, 5], "float32", 0.0), u, 1.5),
        {"u": U},
        lambda u: np.pad(u, ((0, 1), (0, 2)), constant_values=1.5),
    ),
    Case("allclose", lambda u: L.allclose(u, u + 1e-9), {"u": U}, lambda u: np.array([True])),
    Case("allclose_not", lambda u: L.allclose(u, u * 1.001 + 1e-3), {"u": U}, lambda u: np.array([False])),
    Case("elementwise_equal", lambda u: L.elementwise_equal(u, u), {"u": U}, lambda u: np.ones_like(u, bool)),
    Case(
        "multiplex",
        lambda u, i: L.multiplex([u, u * 2.0], i),
        {"u": U, "i": np.array([[1], [0]], "int32")},
        lambda u, i: np.stack([u[0] * 2, u[1]]),
    ),
    Case(
        "shard_index",
        lambda i: L.shard_index(i, 20, 2, 1),
        {"i": np.array([[1], [12], [19]], "int64")},
        lambda i: np.array([[-1], [2], [9]], "int64"),
    ),
    Case("label_smooth", lambda u: L.label_smooth(u, epsilon=0.2), {"u": U}, lambda u: 0.8 * u + 0.2 / 3, rtol=1e-5),
    Case(
        "lstm_unit",
        lambda x, h, c: L.lstm_unit(x, h, c, 0.5, fluid.initializer.Constant(0.1), fluid.initializer.Constant(0.2)),
        {"x": RNN_X, "h": RNN_H, "c": RNN_H * 2},
        lambda x, h, c: _lstm_unit(x, h, c),
    ),
    Case(
        "gru_unit",
        lambda x, h: L.gru_unit(x, h, 6, fluid.initializer.Constant(0.1), fluid.initializer.Constant(0.2)),
        {"x": np.concatenate([RNN_X, RNN_X[:, :3]], 1), "h": RNN_H},
        lambda x, h: _gru_unit(x, h),
    ),
    Case(
        "sequence_mask",
        lambda i: L.sequence_mask(i, maxlen=5, dtype="float32"),
        {"i": np.array([[2], [0], [5]], "int64")},
        lambda i: (np.arange(5) < i[..., None]).astype("float32"),
    ),
    Case(
        "sequence_mask_longest",  # maxlen None: the largest length (read on the host)
        lambda i: L.sequence_mask(i),
        {"i": np.array([3, 1], "int64")},
        lambda i: (np.arange(3) < i[:, None]).astype("int64"),
    ),
    Case(
        "log_loss",
        lambda p, y: L.log_loss(p, y),
        {"p": PROB, "y": LBL},
        lambda p, y: (-y * np.log(p + 1e-4) - (1 - y) * np.log(1 - p + 1e-4)).astype("float32"),
        rtol=1e-5,
    ),
    Case(
        "smooth_l1",
        lambda x: L.smooth_l1(x, x * 0.3),
        {"x": X},
        lambda x: _smooth_l1(x, x * np.float32(0.3)),
        rtol=1e-5,
    ),
    Case(
        "mse_loss",
        lambda u: L.mse_loss(u, u * 0.5),
        {"u": U},
        lambda u: np.array([np.mean((u * 0.5) ** 2)], "float32"),
        rtol=1e-5,
    ),
    Case(
        "kldiv_loss",
        lambda u: L.kldiv_loss(u, L.abs(u), "sum"),
        {"u": U},
        lambda u: np.array([np.sum(np.abs(u) * (np.log(np.abs(u)) - u))], "float32"),
        rtol=1e-5,
    ),
    Case("huber_loss", lambda u: L.huber_loss(u, u * -1.0, 0.5), {"u": U}, lambda u: _huber(u, -u, 0.5), rtol=1e-5),
    Case(
        "margin_rank_loss",
        lambda p, y: L.margin_rank_loss(y * 2.0 - 1.0, p, p * 0.5, margin=0.2),
        {"p": PROB, "y": LBL},
        lambda p, y: np.maximum(0, -(y * 2 - 1) * (p - p * 0.5) + 0.2).astype("float32"),
        rtol=1e-5,
    ),
    Case(
        "rank_loss",
        lambda p, y: L.rank_loss(y, p, p * 0.5),
        {"p": PROB, "y": LBL},
        lambda p, y: (np.log1p(np.exp(p * 0.5)) - y * (p * 0.5)).astype("float32"),
        rtol=1e-5,
    ),
    Case(
        "bpr_loss",
        lambda u, i: L.bpr_loss(u, i),
        {"u": U, "i": np.array([[0], [2]], "int64")},
        lambda u, i: np.array(
            [
                [sum(-np.log(R.sigmoid(u[r, i[r, 0]] - u[r, j])) for j in range(3) if j != i[r, 0]) / 2]
                for r in range(2)
            ],
            "float32",
        ),
        rtol=1e-5,
    ),
    Case(
        "teacher_student_sigmoid_loss",
        lambda x, y: L.teacher_student_sigmoid_loss(x, y),
        {
            "x": np.array([[0.5], [2.0], [-3.0], [1.5], [0.2]], "float32"),
            "y": np.array([[-2.0], [-0.5], [0.3], [1.7], [0.9]], "float32"),
        },
        lambda x, y: np.array([[0.974077], [0.126928], [0.997174], [0.852826], [1.416278]], "float32"),  # fluid 1.8.5
        rtol=1e-5,
    ),
    Case(
        "dice_loss",
        lambda p: L.dice_loss(L.softmax(p), L.assign(np.array([[1], [0]], "int64"))),
        {"p": U},
        lambda p: np.array(
            [np.mean(1 - 2 * (R.softmax(p) * np.eye(3)[[1, 0]]).sum(1) / (R.softmax(p).sum(1) + 1 + 1e-5))], "float32"
        ),
        rtol=1e-5,
    ),
    Case(
        "group_norm",
        lambda x: L.group_norm(x, 2),
        {"x": IMG},
        lambda x: _group_norm(x, 2).astype("float32"),
        atol=1e-5,
    ),
    Case(
        "instance_norm",
        lambda x: L.instance_norm(x),
        {"x": IMG},
        lambda x: _group_norm(x, 4).astype("float32"),
        atol=1e-5,
    ),
    Case("lrn", lambda x: L.lrn(x, n=3), {"x": IMG}, lambda x: _lrn(x, 3).astype("float32"), rtol=1e-5),
    Case(
        "affine_channel",
        lambda x: L.affine_channel(x, const(np.arange(4, dtype="float32")), const(np.ones(4, "float32"))),
        {"x": IMG},
        lambda x: x * np.arange(4, dtype="float32").reshape(1, 4, 1, 1) + 1,
    ),
    Case(
        "conv3d",
        lambda v: L.conv3d(
            v,
            3,
            2,
            param_attr=fluid.ParamAttr(initializer=fluid.initializer.NumpyArrayInitializer(W3)),
            bias_attr=False,
        ),
        {"v": VOL},
        lambda v: _conv3d_ref(v, W3),
        rtol=1e-4,
        atol=1e-5,
    ),
    Case(
        "pool3d",
        lambda v: L.pool3d(v, 2, "avg", 2),
        {"v": VOL},
        lambda v: v.reshape(1, 2, 2, 2, 2, 2, 2, 2).mean((3, 5, 7)),
        rtol=1e-5,
    ),
    Case(
        "adaptive_pool2d",
        lambda x: L.adaptive_pool2d(x, 2, "max"),
        {"x": IMG},
        lambda x: x.reshape(2, 4, 2, 2, 2, 2).max((3, 5)),
    ),
    Case(
        "adaptive_pool3d",
        lambda v: L.adaptive_pool3d(v, 1, "avg"),
        {"v": VOL},
        lambda v: v.mean((2, 3, 4), keepdims=True),
        rtol=1e-5,
    ),
    Case(
        "resize_bilinear",
        lambda x: L.resize_bilinear(x, [7, 5]),
        {"x": IMG},
        lambda x: _bilinear_align(x, 7, 5),
        atol=1e-5,
    ),
    Case(
        "resize_nearest",
        lambda x: L.resize_nearest(x, scale=2.0, align_corners=False),
        {"x": IMG},
        lambda x: x.repeat(2, 2).repeat(2, 3),
    ),
    Case(
        "resize_trilinear",
        lambda v: L.resize_trilinear(v, [4, 4, 4]),
        {"v": VOL},
        lambda v: v,
        atol=1e-6,
    ),
    Case(
        "unfold",
        lambda x: L.unfold(x, [2, 2], strides=2),
        {"x": IMG},
        lambda x: x.reshape(2, 4, 2, 2, 2, 2).transpose(0, 1, 3, 5, 2, 4).reshape(2, 16, 4),
    ),
    Case(
        "temporal_shift",
        lambda x: L.temporal_shift(x, 2, 0.25),
        {"x": IMG},
        lambda x: np.concatenate(
            [
                np.stack([np.zeros_like(x[0, :1]), x[0, :1]])[:, 0:1],
                np.stack([x[1, 1:2], np.zeros_like(x[0, 1:2])]),
                x[:, 2:],
            ],
            1,
        ),
    ),
    Case(
        "affine_grid_and_grid_sampler",
        lambda x: L.grid_sampler(
            x, L.affine_grid(const(np.tile(np.eye(2, 3, dtype="float32"), (2, 1, 1))), [2, 4, 4, 4])
        ),
        {"x": IMG},
        lambda x: x,
        atol=1e-5,
    ),
    Case(
        "randint",
        lambda: L.randint(3, 9, [50], seed=5),
        {},
        check=lambda out: (out.dtype == np.int64 and out.min() >= 3 and out.max() < 9 and len(set(out)) > 3) or _fail(),
    ),
    Case(
        "randperm",
        lambda: L.randperm(10, seed=3),
        {},
        check=lambda out: sorted(out.tolist()) == list(range(10)) or _fail(),
    ),
    Case(
        "uniform_random_batch_size_like",
        lambda x: L.uniform_random_batch_size_like(x, [-1, 100], min=2.0, max=3.0),
        {"x": X},
        check=lambda out: (out.shape == (2, 100) and out.min() >= 2.0 and out.max() < 3.0) or _fail(),
    ),
    Case(
        "gaussian_random_batch_size_like",
        lambda x: L.gaussian_random_batch_size_like(x, [-1, 500], mean=1.0, std=0.5),
        {"x": X},
        check=lambda out: (out.shape == (2, 500) and abs(out.mean() - 1.0) < 0.1) or _fail(),
    ),
]


def _fail():
    raise AssertionError("random op output out of its range")


def _conv3d_transpose_ref(x, w):
    n, c, d, h, ww = x.shape
    _, o, kd, kh, kw = w.shape
    out = np.zeros((n, o, d + kd - 1, h + kh - 1, ww + kw - 1), "float64")
    for i in range(d):
        for j in range(h):
            for k in range(ww):
                out[:, :, i : i + kd, j : j + kh, k : k + kw] += np.einsum("nc,cokij->nokij", x[:, :, i, j, k], w)
    return out.astype("float32")


def _sparse_grad_rows():
    """W@GRAD of a sparse embedding (rows 1, 3, 1), merged, as a dense [2, 4] tensor."""
    ids = L.assign(np.array([[1], [3], [1]], "int64"))
    emb = L.embedding(ids, size=(5, 4), is_sparse=True, param_attr=fluid.ParamAttr(name="emb_w"))
    (g,) = fluid.gradients([L.reduce_sum(emb * 2.0)], [fluid.default_main_program().global_block().var("emb_w")])
    return L.get_tensor_from_selected_rows(L.merge_selected_rows(g))


WT = rng.uniform(-1, 1, (2, 3, 2, 2, 2)).astype("float32")
BW = rng.uniform(-1, 1, (2, 3, 4)).astype("float32")
RW = rng.uniform(-1, 1, (3, 4)).astype("float32")
SEQ = rng.uniform(-1, 1, (2, 5, 4)).astype("float32")


def _param(arr):
    return fluid.ParamAttr(initializer=fluid.initializer.NumpyArrayInitializer(arr))


EXTRA_CASES += [
    Case(
        "conv3d_transpose",
        lambda v: L.conv3d_transpose(v, 3, filter_size=2, param_attr=_param(WT), bias_attr=False),
        {"v": VOL},
        lambda v: _conv3d_transpose_ref(v, WT),
        rtol=1e-4,
        atol=1e-5,
    ),
    Case(
        "bilinear_tensor_product",
        lambda u, x: L.bilinear_tensor_product(
            u, L.reshape(L.slice(x, [1, 2], [0, 0], [1, 4]), [2, 4]), 2, param_attr=_param(BW), bias_attr=False
        ),
        {"u": U, "x": X},
        lambda u, x: np.einsum("ni,kij,nj->nk", u, BW, x[:, 0, :]),
        rtol=1e-5,
    ),
    Case(
        "fsp_matrix",
        lambda x: L.fsp_matrix(x, x * 2.0),
        {"x": IMG},
        lambda x: np.einsum("nchw,ndhw->ncd", x, x * 2) / 16,
        rtol=1e-5,
    ),
    Case(
        "gather_tree",
        lambda: L.gather_tree(
            L.assign(np.array([[[2, 2], [6, 1]], [[3, 9], [6, 1]], [[0, 1], [9, 0]]], "int64")),
            L.assign(np.array([[[0, 0], [1, 1]], [[1, 0], [1, 0]], [[0, 0], [0, 1]]], "int64")),
        ),
        {},
        lambda: np.array([[[2, 2], [1, 6]], [[3, 3], [6, 1]], [[0, 1], [9, 0]]], "int64"),  # fluid 1.8's docs example
    ),
    Case(
        "selected_rows",
        lambda: _sparse_grad_rows(),
        {},
        lambda: np.full((2, 4), 2.0, "float32") * np.array([[2], [1]], "float32"),
    ),
    Case(
        "random_crop",
        lambda x: L.random_crop(x, [2, 3], seed=4),
        {"x": X},
        check=lambda out: (
            (
                out.shape == (2, 2, 3)
                and all(
                    any(np.array_equal(out[i], X[i, a : a + 2, b : b + 3]) for a in range(2) for b in range(2))
                    for i in range(2)
                )
            )
            or _fail()
        ),
    ),
    Case(
        "sampling_id",
        lambda: L.sampling_id(L.assign(np.array([[0, 1, 0], [0, 0, 1], [1, 0, 0]], "float32"))),
        {},
        lambda: np.array([1, 2, 0], "int64"),
    ),
    Case(
        "spectral_norm",
        lambda m: L.spectral_norm(m, power_iters=50),
        {"m": M},
        lambda m: m / np.linalg.svd(m)[1][0],
        rtol=1e-4,
    ),
    Case(
        "row_conv",
        lambda s: L.row_conv(s, 2, param_attr=_param(RW)),
        {"s": SEQ},
        lambda s: sum(np.pad(s, ((0, 0), (0, 2), (0, 0)))[:, i : i + 5] * RW[i] for i in range(3)).astype("float32"),
        rtol=1e-5,
    ),
    Case("is_empty", lambda x: L.is_empty(x), {"x": X}, lambda x: np.array([False])),
]


_ctc_rng = np.random.RandomState(3)
_ctc_rng.uniform(-1, 1, (2, 3, 6))
_CTC_LOGITS = _ctc_rng.uniform(-1, 1, (5, 2, 4)).astype("float32")  # as in tests/golden/ops_extra.py
_CTC_LOSS = [[2.832435], [3.385081]]


def _position_encoding(x, alpha, beta):
    _, m, p = x.shape
    half = p // 2
    j = np.arange(m)[:, None]
    k = np.arange(half)[None, :]
    val = j / 10000.0 ** (k / (half - 1))
    return (x * alpha + np.concatenate([np.sin(val), np.cos(val)], 1)[None] * beta).astype("float32")


EXTRA_CASES += [
    Case(
        "add_position_encoding",
        lambda s: L.add_position_encoding(s, 0.5, 2.0),
        {"s": SEQ},
        lambda s: _position_encoding(s, 0.5, 2.0),
        rtol=1e-5,
        atol=1e-6,
    ),
    Case(
        "mean_iou",
        lambda: list(
            L.mean_iou(L.assign(np.array([0, 1, 1, 2], "int32")), L.assign(np.array([0, 1, 2, 2], "int32")), 3)
        ),
        {},
        # class 0: 1/1, class 1: 1/(1+1), class 2: 1/(1+1)
        lambda: [np.array([2 / 3], "float32"), np.array([0, 1, 1], "int32"), np.array([1, 1, 1], "int32")],
    ),
    Case(
        "edit_distance",
        lambda: L.edit_distance(
            L.assign(np.array([[1, 2, 3, 0], [4, 5, 0, 0]], "int64")),
            L.assign(np.array([[1, 3, 3, 0], [4, 5, 6, 7]], "int64")),
            input_length=L.assign(np.array([3, 2], "int64")),
            label_length=L.assign(np.array([3, 4], "int64")),
        )[0],
        {},
        lambda: np.array([[1 / 3], [0.5]], "float32"),
    ),
    Case(
        "warpctc",
        lambda: L.warpctc(
            L.assign(_CTC_LOGITS),
            L.assign(np.array([[1, 2], [3, 3]], "int32")),
            input_length=L.assign(np.array([5, 4], "int64")),
            label_length=L.assign(np.array([2, 1], "int64")),
        ),
        {},
        lambda: np.array(_CTC_LOSS, "float32"),  # fluid 1.8.5 (tests/golden/ops_extra.json)
        rtol=1e-5,
    ),
]


def _read_case():
    reader = L.py_reader(capacity=1, shapes=[(-1, 3)], dtypes=["float32"])
    reader.decorate_batch_generator(lambda: iter([[U]]))
    reader.start()
    return L.read_file(reader)


def _load_case():
    import tempfile

    from fluidcompat.proto import tensor_to_bytes

    path = os.path.join(tempfile.mkdtemp(), "m")
    with open(path, "wb") as f:
        f.write(tensor_to_bytes(M))
    v = fluid.default_main_program().global_block().create_var(name="loaded", shape=[3, 3], dtype="float32")
    L.load(v, path)
    return v


EXTRA_CASES += [
    Case("read", _read_case, {}, lambda: U),
    Case("load", _load_case, {}, lambda: M),
]


def _bn_leaky(x, alpha):
    mean = x.mean((0, 2, 3), keepdims=True)
    var = x.var((0, 2, 3), keepdims=True)
    y = (x - mean) / np.sqrt(var + 1e-5)
    return np.where(y > 0, y, alpha * y).astype("float32")


EXTRA_CASES += [
    Case(
        "inplace_abn",
        lambda x: L.inplace_abn(x, act="leaky_relu", act_alpha=0.2),
        {"x": IMG},
        lambda x: _bn_leaky(x, 0.2),
        atol=1e-5,
    ),
    Case(
        "im2sequence",
        lambda x: L.im2sequence(x, filter_size=2, stride=2),
        {"x": IMG},
        lambda x: x.reshape(2, 4, 2, 2, 2, 2).transpose(0, 2, 4, 1, 3, 5).reshape(8, 16),
    ),
    Case(
        "ctc_greedy_decoder",
        lambda: list(
            L.ctc_greedy_decoder(
                L.assign(np.eye(3, dtype="float32")[[[1, 1, 0, 2, 2, 1], [0, 2, 0, 2, 1, 1]]]),
                blank=0,
                input_length=L.assign(np.array([[6], [5]], "int64")),
            )
        ),
        {},
        lambda: [np.array([[1, 2, 1, 0, 0, 0], [2, 2, 1, 0, 0, 0]], "int64"), np.array([[3], [3]], "int64")],
    ),
    Case(
        "auc",
        lambda: L.auc(
            L.assign(np.array([[0.3, 0.7], [0.8, 0.2], [0.4, 0.6], [0.1, 0.9], [0.65, 0.35]], "float32")),
            L.assign(np.array([[1], [0], [0], [1], [1]], "int64")),
            num_thresholds=200,
        )[0],
        {},
        lambda: np.array([5 / 6]),  # positives 0.7, 0.9, 0.35 against negatives 0.2, 0.6: 5 of 6 pairs
    ),
]


with open(os.path.join(os.path.dirname(__file__), "golden", "ops_extra3.json")) as _f:
    _GOLDEN3 = json.load(_f)  # fluid 1.8.5's values for tests/golden/ops_extra3.py's inputs
_g3 = np.random.RandomState(7)
_SF = _g3.uniform(0, 1, (2, 3, 2, 2)).astype("float32")
_g3.uniform(-1, 1, (3, 4))
_CVM_X = np.abs(_g3.uniform(0, 3, (3, 5))).astype("float32")
_CL_X = _g3.uniform(-1, 1, (4, 3)).astype("float32")
_FEAT = _g3.uniform(-1, 1, (2, 2, 6, 6)).astype("float32")
_ROIS = np.array([[0, 0, 3, 3], [1, 1, 5, 4], [0.5, 2, 5.5, 5.5]], "float32")


def _golden3(key):
    return np.array(_GOLDEN3[key][1], _GOLDEN3[key][0])


def _hsigmoid_ref(x, label, w, b, num_classes):
    length = int(np.floor(np.log2(2 * num_classes - 1)))
    out = []
    for xi, yi in zip(x, label.reshape(-1)):
        code, total = yi + num_classes, 0.0
        for j in range(length):
            node = (code >> (j + 1)) - 1
            pre = float(w[node] @ xi + b[node, 0]) if node >= 0 else 0.0
            total += np.log1p(np.exp(pre)) - ((code >> j) & 1) * pre * (node >= 0)
        out.append([total])
    return np.array(out, "float32")


_HW = rng.uniform(-1, 1, (4, 4)).astype("float32")
_HB = rng.uniform(-1, 1, (4, 1)).astype("float32")


def _sampled_softmax_random(u):
    out = L.sampled_softmax_with_cross_entropy(
        L.concat([u, u, u], 1), L.assign(np.array([[1], [7]], "int64")), num_samples=4, seed=3
    )
    samples = next(op for op in fluid.default_main_program().global_block().ops if op.type == "sample_logits")
    samples = samples.output("Samples")[0]
    return [out, fluid.default_main_program().global_block().var(samples)]


def _check_sampled(out, samples):
    assert out.shape == (2, 1) and np.all(np.isfinite(out)) and np.all(out > 0)
    assert samples.tolist()[0][0] == 1 and samples.tolist()[1][0] == 7  # the true class first
    assert all(len(set(row[1:])) == 4 and all(0 <= k < 9 for k in row) for row in samples.tolist())


def _crf_nll(em, labels, lengths, trans):
    start, end, tt = trans[0], trans[1], trans[2:]
    out = []
    for x, y, k in zip(em, labels, lengths):
        x, y = x[:k].astype("float64"), y[:k]
        paths = np.array(np.meshgrid(*[range(x.shape[1])] * k, indexing="ij")).reshape(k, -1).T

        def score(p):
            return start[p[0]] + x[np.arange(k), p].sum() + tt[p[:-1], p[1:]].sum() + end[p[-1]]

        all_scores = np.array([score(p) for p in paths])
        log_z = np.log(np.exp(all_scores - all_scores.max()).sum()) + all_scores.max()
        out.append([log_z - score(y)])
    return np.array(out, "float32")


def _crf_decode_case():
    L.create_parameter([5, 3], "float32", name="crf_t", default_initializer=fluid.initializer.Constant(0.0))
    emissions = L.assign(np.eye(3, dtype="float32")[[[2, 0, 1], [1, 1, 2]]] * 5.0)
    return L.crf_decoding(emissions, fluid.ParamAttr(name="crf_t"), length=L.assign(np.array([3, 2], "int64")))


_CRF_T = rng.uniform(-0.5, 0.5, (5, 3)).astype("float32")
_CRF_EM = rng.uniform(-1, 1, (2, 3, 3)).astype("float32")
_CRF_Y = np.array([[0, 2, 1], [1, 1, 0]])


def _prroi_ref(x, roi, ph, pw):
    """The bin averages of the bilinear surface, by a fine midpoint rule (200 x 200 points per bin)."""
    x1, y1, x2, y2 = roi
    out = np.zeros((x.shape[0], ph, pw))
    for i in range(ph):
        for j in range(pw):
            ys = y1 + (i + (np.arange(200) + 0.5) / 200) * (y2 - y1) / ph
            xs = x1 + (j + (np.arange(200) + 0.5) / 200) * (x2 - x1) / pw
            wy = np.maximum(0, 1 - np.abs(ys[:, None] - np.arange(x.shape[1])))
            wx = np.maximum(0, 1 - np.abs(xs[:, None] - np.arange(x.shape[2])))
            out[:, i, j] = np.einsum("chw,yh,xw->c", x, wy, wx) / (200 * 200)
    return out.astype("float32")


def _nce_case(kind):
    def build(u):
        dist = [0.1, 0.2, 0.3, 0.4] if kind == "custom_dist" else None
        return L.nce(
            u, L.assign(np.array([[1], [3]], "int64")), 4, num_neg_samples=3, sampler=kind, custom_dist=dist, seed=2
        )

    return build


def _check_nce(out):
    assert out.shape == (2, 1) and np.all(np.isfinite(out)) and np.all(out > 0)


def _tree_conv_ref(f):
    """Worked by hand for the tree 1 -> (2, 3) at max_depth 2 and an identity filter: the root counts
    fully in eta_t; its two children, at depth 1, half in eta_t and the rest split left / right by
    their place (first: all right; second: half left, a quarter right)."""
    out = np.zeros((1, 4, 3, 1), "float32")
    f1, f2, f3, f4 = f[0, :, 0]
    out[0, 0, :, 0] = [0.5 * f3, 0.5 * f2 + 0.25 * f3, f1 + 0.5 * f2 + 0.5 * f3]
    out[0, 1, 2, 0], out[0, 2, 2, 0] = f2, f3  # leaves: themselves; node 4 is outside the tree: zeros
    return out


_MM_X, _MM_Y = rng.uniform(-1, 1, (5, 3)).astype("float32"), rng.uniform(-1, 1, (6, 3)).astype("float32")
_MM_W = rng.uniform(-1, 1, (3, 2, 3)).astype("float32")


_LSTM_X = rng.uniform(-1, 1, (5, 2, 4)).astype("float32")
_LSTM_H, _LSTM_C = rng.uniform(-0.5, 0.5, (2, 4, 2, 3)).astype("float32")
_LSTM_W = rng.uniform(-0.6, 0.6, 480).astype("float32")  # 2 layers, both directions, 4 -> 3


def _match_matrix_np(x, y):
    """Per pair of sequences (x rows 2 + 3, y rows 4 + 2): x W_t y^T for each channel t, flattened."""
    parts = []
    for (a, b), (c, d) in zip(((0, 2), (2, 5)), ((0, 4), (4, 6))):
        parts.append(np.einsum("nk,ktj,mj->tnm", x[a:b], _MM_W, y[c:d]).reshape(-1))
    return np.concatenate(parts).reshape(-1, 1).astype("float32")


def _topk_avg_np(v, rows, cols, channels, topks):
    out, at = [], 0
    for r, c in zip(rows, cols):
        grid = v[at : at + channels * r * c].reshape(channels, r, c)
        at += channels * r * c
        desc = -np.sort(-grid, axis=2)
        for i in range(r):
            out.append([desc[ch, i, :k].sum() / k for ch in range(channels) for k in topks])
    return np.array(out, "float32")


def _var_conv_np(v, r, c):
    """One sequence: a 1-channel 3 x 4 image, a 3 x 3 filter of ones but for its centre (0), stride 1:
    each output is the sum of the (zero-padded) 8 neighbours."""
    image = np.pad(v.reshape(3, 4), 1)
    out = np.zeros((3, 4), "float32")
    for i in range(3):
        for j in range(4):
            out[i, j] = image[i : i + 3, j : j + 3].sum() - image[i + 1, j + 1]
    return out.reshape(-1, 1)


_TDM_TREE = np.array(
    [
        [0, 0, 0, 1, 2],
        [0, 1, 0, 3, 4],
        [0, 1, 0, 5, 6],
        [0, 2, 1, 0, 0],
        [1, 2, 1, 0, 0],
        [2, 2, 2, 0, 0],
        [3, 2, 2, 0, 0],
    ],
    "int32",
)


def _tdm_child_np(ids):
    child = _TDM_TREE[ids.reshape(-1), 3:] * (ids.reshape(-1, 1) != 0)
    leaf = ((_TDM_TREE[child, 0] != 0) & (child != 0)).astype("int32")
    return [child.reshape(ids.shape + (2,)), leaf.reshape(ids.shape + (2,))]


_RA_X = rng.uniform(-1, 1, (3, 2)).astype("float32")
_RA_PARAM = rng.uniform(-1, 1, (8, 2)).astype("float32")


def _rank_attention_ref(x, ro):
    """Out[i] = sum over neighbour slots k with both ranks >= 1 of X[row_k] @ block(own, rank_k)."""
    blocks = _RA_PARAM.reshape(4, 2, 2)
    out = np.zeros((3, 2), "float32")
    for i, row in enumerate(ro):
        for k in range(2):
            if row[0] >= 1 and row[1 + 2 * k] >= 1:
                out[i] += x[row[2 + 2 * k]] @ blocks[(row[0] - 1) * 2 + row[1 + 2 * k] - 1]
    return out


def _check_tdm_sampler(out, labels, mask):
    """Unseeded draws: per leaf its path node (label 1) and 2 other nodes of layer 1 (3..6), distinct."""
    path = {0: 3, 1: 4, 2: 6}
    for leaf, row, lab, m in zip((0, 1, 2), out, labels, mask):
        assert row[0] == path[leaf] and list(lab) == [1, 0, 0] and list(m) == [1, 1, 1]
        assert len(set(row.tolist())) == 3 and all(3 <= v <= 6 for v in row)


EXTRA_CASES += [
    Case(
        "rank_attention",
        lambda x, ro: fluid.contrib.layers.rank_attention(x, ro, [8, 2], _param(_RA_PARAM), 2),
        {"x": _RA_X, "ro": np.array([[1, 1, 0, 2, 1], [2, 1, 2, 0, 0], [0, 2, 0, 1, 1]], "int32")},
        lambda x, ro: _rank_attention_ref(x, ro),
    ),
    Case(
        "tdm_sampler",
        lambda ids: list(
            fluid.contrib.layers.tdm_sampler(
                ids,
                [0, 2],
                [2, 4],
                3,
                output_list=False,
                tree_travel_attr=_param(np.array([[1, 3], [1, 4], [2, 6]], "int32")),
                tree_layer_attr=_param(np.arange(1, 7, dtype="int32").reshape(-1, 1)),
            )
        ),
        {"ids": np.array([[0], [1], [2]], "int32")},
        check=lambda out, labels, mask: _check_tdm_sampler(out[:, 1:], labels[:, 1:], mask[:, 1:]),
    ),
    Case(
        "tdm_child",
        lambda ids: list(fluid.contrib.layers.tdm_child(ids, 7, 2, param_attr=_param(_TDM_TREE))),
        {"ids": np.array([[0], [1], [2], [6]], "int32")},
        _tdm_child_np,
    ),
    Case(
        "var_conv_2d",
        lambda v, r, c: fluid.contrib.var_conv_2d(
            v, r, c, 1, 1, 3, param_attr=_param(np.array([[1, 1, 1, 1, 0, 1, 1, 1, 1]], "float32"))
        ),
        {
            "v": np.arange(12, dtype="float32").reshape(-1, 1),
            "r": np.zeros((3, 1), "float32"),
            "c": np.zeros((4, 1), "float32"),
        },
        _var_conv_np,
        lods={"v": [[12]], "r": [[3]], "c": [[4]]},
        shapes={"v": [None, 1], "r": [None, 1], "c": [None, 1]},
    ),
    Case(
        "match_matrix_tensor",
        lambda x, y: fluid.contrib.match_matrix_tensor(x, y, 2, param_attr=_param(_MM_W))[0],
        {"x": _MM_X, "y": _MM_Y},
        _match_matrix_np,
        lods={"x": [[2, 3]], "y": [[4, 2]]},
        shapes={"x": [None, 3], "y": [None, 3]},
    ),
    Case(
        "sequence_topk_avg_pooling",
        lambda v, r, c: fluid.contrib.sequence_topk_avg_pooling(v, r, c, [1, 2, 4], 2),
        {
            "v": np.arange(16, dtype="float32").reshape(-1, 1) % 7 - 3,
            "r": np.zeros((3, 1), "float32"),
            "c": np.zeros((5, 1), "float32"),
        },
        lambda v, r, c: _topk_avg_np(v.reshape(-1), [2, 1], [3, 2], 2, [1, 2, 4]),
        lods={"v": [[12, 4]], "r": [[2, 1]], "c": [[3, 2]]},
        shapes={"v": [None, 1], "r": [None, 1], "c": [None, 1]},
    ),
    Case(
        "tree_conv",
        lambda f: fluid.contrib.layers.tree_conv(
            f,
            L.assign(np.array([[[1, 2], [1, 3], [0, 0]]], "int32")),
            3,
            1,
            2,
            act=None,
            bias_attr=False,
            param_attr=_param(np.eye(3, dtype="float32").reshape(1, 3, 3, 1)),
        ),
        {"f": np.array([[[1.0], [2.0], [5.0], [7.0]]], "float32")},
        _tree_conv_ref,
    ),
    Case(
        "cudnn_lstm",
        lambda x, h, c: L.lstm(
            x, h, c, 5, 3, 2, is_bidirec=True, default_initializer=fluid.initializer.NumpyArrayInitializer(_LSTM_W)
        ),
        {"x": _LSTM_X, "h": _LSTM_H, "c": _LSTM_C},
        lambda x, h, c: tuple(
            v.astype("float32") for v in R.lstm_time_major(x, h, c, _LSTM_W.astype("float64"), 3, 2, True)
        ),
    ),
    *[
        Case(f"nce_{kind}", _nce_case(kind), {"u": U}, check=_check_nce)
        for kind in ("uniform", "log_uniform", "custom_dist")
    ],
    Case(
        "prroi_pool",
        lambda: L.prroi_pool(L.assign(_FEAT[:1]), L.assign(np.array([[0.3, 0.2, 3.7, 4.1]], "float32")), 1.0, 2, 2),
        {},
        lambda: _prroi_ref(_FEAT[0], (0.3, 0.2, 3.7, 4.1), 2, 2)[None],
        atol=1e-4,
    ),
    Case(
        "linear_chain_crf",
        lambda: L.linear_chain_crf(
            L.assign(_CRF_EM),
            L.assign(_CRF_Y.reshape(2, 3, 1)),
            param_attr=_param(_CRF_T),
            length=L.assign(np.array([3, 2], "int64")),
        ),
        {},
        lambda: _crf_nll(_CRF_EM, _CRF_Y, [3, 2], _CRF_T.astype("float64")),  # by enumerating every path
        rtol=1e-5,
    ),
    Case(
        "crf_decoding",
        lambda: _crf_decode_case(),
        {},
        lambda: np.array([[2, 0, 1], [1, 1, 0]], "int64"),  # no transition preference: each step's best tag
    ),
    Case("sampled_softmax_log_uniform", _sampled_softmax_random, {"u": U}, check=_check_sampled),
    Case("data_norm", lambda m: L.data_norm(m), {"m": M}, lambda m: m),  # fresh statistics: mean 0, scale 1
    Case(
        "hash",
        lambda: L.hash(L.assign(np.array([[1, 2], [3, 4], [1, 2], [123456, 7]], "int64")), 100000, num_hash=3),
        {},
        # fluid 1.8.5's hash op on these ids (tests/golden/hash_op.json)
        lambda: np.array(
            [[16524, 93896, 71680], [23640, 97562, 750], [16524, 93896, 71680], [66218, 31936, 41071]], "int64"
        )[..., None],
    ),
    Case(
        "hsigmoid",
        lambda u: L.hsigmoid(
            L.reshape(L.concat([u, u], 1), [3, 4]),
            L.assign(np.array([[0], [4], [2]], "int64")),
            5,
            param_attr=_param(_HW),
            bias_attr=_param(_HB),
        ),
        {"u": U},
        lambda u: _hsigmoid_ref(np.concatenate([u, u], 1).reshape(3, 4), np.array([0, 4, 2]), _HW, _HB, 5),
        rtol=1e-5,
    ),
    Case("similarity_focus", lambda: L.similarity_focus(L.assign(_SF), 1, [0]), {}, lambda: _golden3("sf")),
    Case(
        "cvm",
        lambda: [
            L.continuous_value_model(L.assign(_CVM_X), L.assign(np.ones((3, 2), "float32")), use_cvm=u)
            for u in (True, False)
        ],
        {},
        lambda: [
            np.concatenate(
                [np.log(_CVM_X[:, :1] + 1), np.log(_CVM_X[:, 1:2] + 1) - np.log(_CVM_X[:, :1] + 1), _CVM_X[:, 2:]], 1
            ),
            _CVM_X[:, 2:],
        ],
        rtol=1e-5,
    ),
    Case(
        "center_loss",
        lambda: L.center_loss(
            L.assign(_CL_X),
            L.assign(np.array([[0], [2], [0], [1]], "int64")),
            3,
            0.5,
            fluid.ParamAttr(initializer=fluid.initializer.Constant(0.1)),
        ),
        {},
        lambda: 0.5 * ((_CL_X - 0.1) ** 2).sum(1, keepdims=True),
        rtol=1e-5,
    ),
    Case(
        "chunk_eval",
        lambda: list(
            L.chunk_eval(
                L.assign(np.array([[0, 1, 4, 2, 3, 4], [2, 3, 0, 1, 1, 4]], "int64")),
                L.assign(np.array([[0, 1, 4, 2, 4, 4], [2, 3, 0, 1, 4, 4]], "int64")),
                "IOB",
                2,
                seq_length=L.assign(np.array([6, 5], "int64")),
            )
        ),
        {},
        lambda: (
            [np.array([0.5], "float32")] * 3 + [np.array([4], "int64"), np.array([4], "int64"), np.array([2], "int64")]
        ),
    ),
    Case(
        "roi_pool",
        lambda: L.roi_pool(L.assign(_FEAT), L.assign(_ROIS), 2, 2, rois_lod=L.assign(np.array([0, 2, 3], "int64"))),
        {},
        lambda: _golden3("rp"),
        atol=1e-5,
    ),
    Case(
        "roi_align",
        lambda: L.roi_align(
            L.assign(_FEAT), L.assign(_ROIS), 2, 2, sampling_ratio=2, rois_lod=L.assign(np.array([0, 2, 3], "int64"))
        ),
        {},
        lambda: _golden3("ra"),
        atol=1e-5,
    ),
]


def _adaptive_max_index(x):
    """The flat H*W index of each 2x2 block's maximum over a 4x4 map (adaptive pooling to 2x2)."""
    n, c = x.shape[:2]
    blocks = x.reshape(n, c, 2, 2, 2, 2).transpose(0, 1, 2, 4, 3, 5).reshape(n, c, 2, 2, 4)
    a = blocks.argmax(-1)
    rows = np.arange(2)[:, None] * 2 + a // 2
    cols = np.arange(2)[None, :] * 2 + a % 2
    return (rows * 4 + cols).astype("int32")


EXTRA_CASES += [
    Case(
        "adaptive_pool2d_index",
        lambda x: list(L.adaptive_pool2d(x, 2, "max", require_index=True)),
        {"x": IMG},
        lambda x: [x.reshape(2, 4, 2, 2, 2, 2).max((3, 5)), _adaptive_max_index(x)],
    ),
    Case(
        "adaptive_pool3d_index",
        lambda v: L.adaptive_pool3d(v, 1, "max", require_index=True)[1],
        {"v": VOL},
        lambda v: v.reshape(1, 2, -1).argmax(-1).reshape(1, 2, 1, 1, 1).astype("int32"),
    ),
]


def _deformable_ref(x, off, mask, w, stride, pad, groups, dg):
    """Deformable convolution by its definition: every tap sampled bilinearly at its moved position
    (0 outside the image and for neighbours outside it), times the mask, times the filter."""
    n, c, h, wd = x.shape
    oc, cg, kh, kw = w.shape
    oh, ow = off.shape[2:]

    def sample(img, y, v):
        if y <= -1 or y >= h or v <= -1 or v >= wd:
            return 0.0
        y0, v0 = int(np.floor(y)), int(np.floor(v))
        total = 0.0
        for yy, vv, weight in (
            (y0, v0, (1 - (y - y0)) * (1 - (v - v0))),
            (y0, v0 + 1, (1 - (y - y0)) * (v - v0)),
            (y0 + 1, v0, (y - y0) * (1 - (v - v0))),
            (y0 + 1, v0 + 1, (y - y0) * (v - v0)),
        ):
            if 0 <= yy < h and 0 <= vv < wd:
                total += weight * img[yy, vv]
        return total

    y = np.zeros((n, oc, oh, ow))
    for b, o, i, j in np.ndindex(n, oc, oh, ow):
        g = o // (oc // groups)
        for ci, p, q in np.ndindex(cg, kh, kw):
            ch, k = g * cg + ci, p * kw + q
            d = ch // (c // dg)
            dy, dx = off[b, d * 2 * kh * kw + 2 * k, i, j], off[b, d * 2 * kh * kw + 2 * k + 1, i, j]
            m = 1.0 if mask is None else mask[b, d * kh * kw + k, i, j]
            y[b, o, i, j] += w[o, ci, p, q] * m * sample(x[b, ch], i * stride - pad + p + dy, j * stride - pad + q + dx)
    return y.astype(x.dtype)


_DC_X = rng.uniform(-1, 1, (2, 4, 4, 5)).astype("float32")
_DC_OFF = rng.uniform(-2, 2, (2, 2 * 2 * 9, 4, 5)).astype("float32")
_DC_MASK = rng.uniform(0, 1, (2, 2 * 9, 4, 5)).astype("float32")
_DC_W = rng.uniform(-1, 1, (4, 2, 3, 3)).astype("float32")
EXTRA_CASES += [
    Case(
        "deformable_conv",
        lambda x, off, mask: L.deformable_conv(
            x,
            off,
            mask,
            4,
            3,
            padding=1,
            groups=2,
            deformable_groups=2,
            param_attr=fluid.initializer.NumpyArrayInitializer(_DC_W),
            bias_attr=False,
        ),  # fmt: skip
        {"x": _DC_X, "off": _DC_OFF, "mask": _DC_MASK},
        lambda x, off, mask: _deformable_ref(x, off, mask, _DC_W, 1, 1, 2, 2),
        atol=1e-5,
    ),
    Case(
        "deformable_conv_v1",
        lambda x, off: L.deformable_conv(
            x,
            off,
            None,
            4,
            3,
            stride=2,
            padding=2,
            groups=2,
            modulated=False,
            param_attr=fluid.initializer.NumpyArrayInitializer(_DC_W),
            bias_attr=False,
        ),  # fmt: skip
        {"x": _DC_X, "off": _DC_OFF[:, :18, :3, :4]},
        lambda x, off: _deformable_ref(x, off, None, _DC_W, 2, 2, 2, 1),
        atol=1e-5,
    ),
]


def _c_round(v):
    return np.sign(v) * np.floor(np.abs(v) + 0.5)


_RFCN_ROIS = np.array([[0.4, 1.6, 5.5, 4.4], [2, 2, 2, 2], [-3, 1, 12, 9.6], [6.5, 5.5, 7.4, 6.2]], "float32")
_RFCN_IMAGE = np.array([0, 0, 1, 1])  # the LoD [[2, 2]]


def _psroi_ref(x, rois, oc, scale, ph, pw):
    """Bin (i, j) of channel c: the mean of input channel (c * ph + i) * pw + j over the pixels from
    floor(bin start) to ceil(bin end), the roi's corners rounded and its end pixel included."""
    n, c, h, w = x.shape
    out = np.zeros((len(rois), oc, ph, pw), x.dtype)
    for r, (x1, y1, x2, y2) in enumerate(rois):
        sw, sh = _c_round(x1) * scale, _c_round(y1) * scale
        bw = max((_c_round(x2) + 1) * scale - sw, 0.1) / pw
        bh = max((_c_round(y2) + 1) * scale - sh, 0.1) / ph
        for k, i, j in np.ndindex(oc, ph, pw):
            hs, he = (int(np.clip(f(bh * v + sh), 0, h)) for f, v in ((np.floor, i), (np.ceil, i + 1)))
            ws, we = (int(np.clip(f(bw * v + sw), 0, w)) for f, v in ((np.floor, j), (np.ceil, j + 1)))
            if he > hs and we > ws:
                out[r, k, i, j] = x[_RFCN_IMAGE[r], (k * ph + i) * pw + j, hs:he, ws:we].mean()
    return out


def _bilinear_clamped(img, px, py):
    x1, x2, y1, y2 = int(np.floor(px)), int(np.ceil(px)), int(np.floor(py)), int(np.ceil(py))
    dx, dy = px - x1, py - y1
    return (
        (1 - dx) * (1 - dy) * img[y1, x1]
        + (1 - dx) * dy * img[y2, x1]
        + dx * (1 - dy) * img[y1, x2]
        + dx * dy * img[y2, x2]
    )


def _deformable_psroi_ref(x, rois, trans, out_dim, group, ph, pw, part, spp, scale, std):
    """Each bin moved by its part's offset (times std and the roi's size), the mean of its spp x spp
    bilinear samples that lie within half a pixel of the map (clamped onto it)."""
    n, c, h, w = x.shape
    each = out_dim // (trans.shape[1] // 2)
    out = np.zeros((len(rois), out_dim, ph, pw), x.dtype)
    for r, (x1, y1, x2, y2) in enumerate(rois):
        sw, sh = _c_round(x1) * scale - 0.5, _c_round(y1) * scale - 0.5
        rw = max((_c_round(x2) + 1) * scale - 0.5 - sw, 0.1)
        rh = max((_c_round(y2) + 1) * scale - 0.5 - sh, 0.1)
        for k, i, j in np.ndindex(out_dim, ph, pw):
            p, q = int(np.floor(i / ph * part[0])), int(np.floor(j / pw * part[1]))
            tx, ty = trans[r, k // each * 2, p, q] * std, trans[r, k // each * 2 + 1, p, q] * std
            ws, hs = j * rw / pw + sw + tx * rw, i * rh / ph + sh + ty * rh
            gi, gj = min(i * group[0] // ph, group[0] - 1), min(j * group[1] // pw, group[1] - 1)
            samples = []
            for a, b in np.ndindex(spp, spp):
                px, py = ws + b * rw / pw / spp, hs + a * rh / ph / spp
                if -0.5 <= px <= w - 0.5 and -0.5 <= py <= h - 0.5:
                    img = x[_RFCN_IMAGE[r], (k * group[0] + gi) * group[1] + gj]
                    samples.append(_bilinear_clamped(img, min(max(px, 0), w - 1), min(max(py, 0), h - 1)))
            out[r, k, i, j] = np.mean(samples) if samples else 0.0
    return out


_RFCN_X = rng.uniform(-1, 1, (2, 12, 7, 8)).astype("float32")
_RFCN_TRANS = rng.uniform(-1, 1, (4, 4, 2, 2)).astype("float32")
_rfcn = dict(lods={"rois": [[2, 2]]}, shapes={"rois": [None, 4]}, atol=1e-5)
EXTRA_CASES += [
    Case(
        "psroi_pool",
        lambda x, rois: L.psroi_pool(x, rois, 2, 0.6, 2, 3),
        {"x": _RFCN_X, "rois": _RFCN_ROIS},
        lambda x, rois: _psroi_ref(x, rois, 2, 0.6, 2, 3),
        **_rfcn,
    ),
    Case(
        "deformable_psroi_pooling",
        lambda x, rois, trans: L.deformable_roi_pooling(
            x,
            rois,
            trans,
            spatial_scale=0.8,
            group_size=[2, 3],
            pooled_height=2,
            pooled_width=3,
            part_size=[2, 2],
            sample_per_part=2,
            trans_std=0.2,
            position_sensitive=True,
        ),  # fmt: skip
        {"x": _RFCN_X, "rois": _RFCN_ROIS, "trans": _RFCN_TRANS},
        lambda x, rois, trans: _deformable_psroi_ref(x, rois, trans, 2, [2, 3], 2, 3, [2, 2], 2, 0.8, 0.2),
        **_rfcn,
    ),
    Case(
        "deformable_psroi_pooling_parts",
        lambda x, rois, trans: L.deformable_roi_pooling(
            x,
            rois,
            trans,
            spatial_scale=0.5,
            pooled_height=3,
            pooled_width=3,
            part_size=[2, 2],
            sample_per_part=3,
        ),  # fmt: skip
        {"x": _RFCN_X, "rois": _RFCN_ROIS, "trans": _RFCN_TRANS},
        lambda x, rois, trans: _deformable_psroi_ref(x, rois, trans, 12, [1, 1], 3, 3, [2, 2], 3, 0.5, 0.1),
        **_rfcn,
    ),
]


# -- fluid.layers.detection (values against fluid 1.8.5 as well: golden detection_layers) ---------
def _rand_boxes(n, scale=1.0):
    xy = rng.uniform(0, 0.7, (n, 2))
    return (np.concatenate([xy, xy + rng.uniform(0.05, 0.4, (n, 2))], 1) * scale).astype("float32")


def _f32(*arrays):
    return [np.asarray(a, "float32") for a in arrays]


def _iou_np(a, b, extra=0.0):
    lt = np.maximum(a[:, None, :2], b[None, :, :2])
    rb = np.minimum(a[:, None, 2:], b[None, :, 2:])
    inter = np.prod(np.clip(rb - lt + extra, 0, None), -1)
    area = lambda v: (v[:, 2] - v[:, 0] + extra) * (v[:, 3] - v[:, 1] + extra)  # noqa: E731
    return (inter / (area(a)[:, None] + area(b)[None, :] - inter)).astype("float32")


def _encode_np(prior, target, var):
    pw, ph = prior[:, 2] - prior[:, 0], prior[:, 3] - prior[:, 1]
    pc = (prior[:, :2] + prior[:, 2:]) / 2
    tw, th = target[:, 2] - target[:, 0], target[:, 3] - target[:, 1]
    tc = (target[:, :2] + target[:, 2:]) / 2
    d = np.stack(
        [(tc[:, None, 0] - pc[None, :, 0]) / pw, (tc[:, None, 1] - pc[None, :, 1]) / ph,
         np.log(tw[:, None] / pw), np.log(th[:, None] / ph)], -1,
    )  # fmt: skip
    return (d / np.array(var)).astype("float32")


def _prior_np(fh, fw, img_h, img_w, min_sizes, max_sizes, ratios, clip):
    """SSD priors written out per cell: for each min size, its aspect ratios (1 first), then the
    sqrt(min * max) square."""
    out = np.zeros((fh, fw, len(min_sizes) * (len(ratios) + 1), 4))
    for i, j in np.ndindex(fh, fw):
        cx, cy = (j + 0.5) * img_w / fw, (i + 0.5) * img_h / fh
        sizes = []
        for mn, mx in zip(min_sizes, max_sizes):
            sizes += [(mn * np.sqrt(r), mn / np.sqrt(r)) for r in ratios] + [(np.sqrt(mn * mx),) * 2]
        for k, (bw, bh) in enumerate(sizes):
            out[i, j, k] = [(cx - bw / 2) / img_w, (cy - bh / 2) / img_h, (cx + bw / 2) / img_w, (cy + bh / 2) / img_h]
    return _f32(np.clip(out, 0, 1) if clip else out, np.tile([0.1, 0.1, 0.2, 0.2], out.shape[:3] + (1,)))


def _density_np(fh, fw, img_h, img_w, densities, sizes, ratios):
    per = sum(d * d for d in densities) * len(ratios)
    out = np.zeros((fh, fw, per, 4))
    step = int((img_w / fw + img_h / fh) / 2)
    for i, j in np.ndindex(fh, fw):
        cx, cy, k = (j + 0.5) * img_w / fw, (i + 0.5) * img_h / fh, 0
        for size, d in zip(sizes, densities):
            shift = step // d
            for r in ratios:
                bw, bh = size * np.sqrt(r), size / np.sqrt(r)
                for di, dj in np.ndindex(d, d):
                    x = cx - step / 2 + shift / 2 + dj * shift
                    y = cy - step / 2 + shift / 2 + di * shift
                    out[i, j, k] = [max((x - bw / 2) / img_w, 0), max((y - bh / 2) / img_h, 0),
                                    min((x + bw / 2) / img_w, 1), min((y + bh / 2) / img_h, 1)]  # fmt: skip
                    k += 1
    return _f32(out, np.tile([0.1, 0.1, 0.2, 0.2], out.shape[:3] + (1,)))


def _anchor_np(fh, fw, sizes, ratios, stride):
    out = []
    for i, j in np.ndindex(fh, fw):
        cx, cy = j * stride[0] + 0.5 * (stride[0] - 1), i * stride[1] + 0.5 * (stride[1] - 1)
        for r in ratios:
            base_w = np.floor(np.sqrt(stride[0] * stride[1] / r) + 0.5)
            base_h = np.floor(base_w * r + 0.5)
            for s in sizes:
                w, h = s / stride[0] * base_w, s / stride[1] * base_h
                out.append([cx - (w - 1) / 2, cy - (h - 1) / 2, cx + (w - 1) / 2, cy + (h - 1) / 2])
    out = np.array(out).reshape(fh, fw, -1, 4)
    return _f32(out, np.tile([0.1, 0.1, 0.2, 0.2], out.shape[:3] + (1,)))


def _yolo_np(x, size, anchors, classes, thresh, ratio):
    sig = lambda v: 1 / (1 + np.exp(-v))  # noqa: E731
    n, _, gh, gw = x.shape
    na = len(anchors) // 2
    p = x.reshape(n, na, 5 + classes, gh, gw)
    boxes, scores = np.zeros((n, na, gh, gw, 4)), np.zeros((n, na, gh, gw, classes))
    for b, k, i, j in np.ndindex(n, na, gh, gw):
        h, w = size[b]
        obj = sig(p[b, k, 4, i, j])
        if obj < thresh:
            continue
        cx, cy = (j + sig(p[b, k, 0, i, j])) * w / gh, (i + sig(p[b, k, 1, i, j])) * h / gh
        bw = np.exp(p[b, k, 2, i, j]) * anchors[2 * k] * w / (ratio * gh)
        bh = np.exp(p[b, k, 3, i, j]) * anchors[2 * k + 1] * h / (ratio * gh)
        boxes[b, k, i, j] = [max(cx - bw / 2, 0), max(cy - bh / 2, 0), min(cx + bw / 2, w - 1), min(cy + bh / 2, h - 1)]
        scores[b, k, i, j] = obj * sig(p[b, k, 5:, i, j])
    return _f32(boxes.reshape(n, -1, 4), scores.reshape(n, -1, classes))


def _focal_np(x, label, fg, gamma=2.0, alpha=0.25):
    p = 1 / (1 + np.exp(-x))
    cls = np.arange(1, x.shape[1] + 1)[None]
    pos, neg = (label == cls).astype("float64"), ((label != cls) & (label != -1)).astype("float64")
    loss = -pos * (1 - p) ** gamma * np.log(p) * alpha - neg * p**gamma * np.log(1 - p) * (1 - alpha)
    return (loss / max(fg[0], 1)).astype("float32")


def _nms_np(boxes, scores, thresh, top_k, keep, iou_thresh):
    """Greedy NMS per class (background 0 skipped), the keep best of the image; rows by class, best
    first, each [class, score, box]."""
    rows, lod = [], [0]
    for b in range(boxes.shape[0]):
        kept = []
        for c in range(1, scores.shape[1]):
            order = [i for i in np.argsort(-scores[b, c], kind="stable") if scores[b, c, i] > thresh][:top_k]
            chosen = []
            for i in order:
                if all(_iou_np(boxes[b, i : i + 1], boxes[b, k : k + 1])[0, 0] <= iou_thresh for k in chosen):
                    chosen.append(i)
            kept += [(c, i) for i in chosen]
        kept = sorted(
            sorted(kept, key=lambda ci: -scores[b, ci[0], ci[1]])[:keep],
            key=lambda ci: (ci[0], -scores[b, ci[0], ci[1]]),
        )
        rows += [[c, scores[b, c, i], *boxes[b, i]] for c, i in kept]
        lod.append(lod[-1] + len(kept))
    return np.array(rows, "float32"), lod


def _bipartite_np(dist, offsets):
    """Greedy matching: the largest remaining entry pairs its row and column, until none is left."""
    idx = np.full((len(offsets) - 1, dist.shape[1]), -1, "int32")
    val = np.zeros(idx.shape, "float32")
    for n, (s, e) in enumerate(zip(offsets, offsets[1:])):
        d = dist[s:e].astype("float64").copy()
        while d.size and d.max() >= 1e-6:
            r, c = np.unravel_index(np.argmax(d), d.shape)
            idx[n, c], val[n, c] = r, d[r, c]
            d[r, :], d[:, c] = -1, -1
    return [idx, val]


_DET_BOXES = _rand_boxes(5)
_DET_PRIOR = _rand_boxes(3)
_NMS_B = np.stack([_rand_boxes(6), _rand_boxes(6)])
_NMS_S = rng.uniform(0, 1, (2, 3, 6)).astype("float32")
_YOLO_X = rng.uniform(-2, 2, (2, 14, 3, 3)).astype("float32")
_YOLO_SIZE = np.array([[96, 128], [64, 80]], "int32")
_TA_X = rng.uniform(-1, 1, (5, 4, 2)).astype("float32")
_TA_MATCH = np.array([[1, -1, 0, -1], [-1, 2, -1, 0]], "int32")
_DM = rng.uniform(0, 1, (5, 4)).astype("float32")
_FI = {"f": np.zeros((1, 2, 2, 3), "float32"), "img": np.zeros((1, 3, 20, 30), "float32")}
EXTRA_CASES += [
    Case("iou_similarity", lambda x, y: L.iou_similarity(x, y), {"x": _DET_BOXES, "y": _DET_PRIOR}, _iou_np),
    Case(
        "box_coder",
        lambda p, t: L.box_coder(p, [0.1, 0.1, 0.2, 0.2], t),
        {"p": _DET_PRIOR, "t": _DET_BOXES},
        lambda p, t: _encode_np(p, t, [0.1, 0.1, 0.2, 0.2]),
        rtol=1e-4,
    ),
    Case(
        "prior_box",
        lambda f, img: list(L.prior_box(f, img, [4.0, 8.0], [9.0, 12.0], [2.0], flip=True, clip=True)),
        _FI,
        lambda f, img: _prior_np(2, 3, 20, 30, [4.0, 8.0], [9.0, 12.0], [1.0, 2.0, 0.5], True),
    ),
    Case(
        "density_prior_box",
        lambda f, img: list(L.density_prior_box(f, img, [2, 1], [6.0, 12.0], [1.0, 2.0])),
        _FI,
        lambda f, img: _density_np(2, 3, 20, 30, [2, 1], [6.0, 12.0], [1.0, 2.0]),
    ),
    Case(
        "anchor_generator",
        lambda f: list(L.anchor_generator(f, [32.0, 64.0], [0.5, 2.0], stride=[16.0, 8.0])),
        {"f": _FI["f"]},
        lambda f: _anchor_np(2, 3, [32.0, 64.0], [0.5, 2.0], [16.0, 8.0]),
    ),
    Case(
        "box_clip",
        lambda b, im: L.box_clip(b, im),
        {"b": _rand_boxes(4, 40) - 5, "im": np.array([[30, 40, 2.0], [25, 26, 1.0]], "float32")},
        lambda b, im: _f32(np.concatenate([np.clip(b[:3], 0, [19, 14, 19, 14]), np.clip(b[3:], 0, [25, 24, 25, 24])]))[
            0
        ],
        lods={"b": [[3, 1]]},
        shapes={"b": [None, 4]},
    ),
    Case(
        "yolo_box",
        lambda x, sz: list(L.yolo_box(x, sz, [10, 13, 30, 20], 2, 0.3, 32)),
        {"x": _YOLO_X, "sz": _YOLO_SIZE},
        lambda x, sz: _yolo_np(x, sz, [10, 13, 30, 20], 2, 0.3, 32),
        rtol=1e-4,
        atol=1e-4,
    ),
    Case(
        "sigmoid_focal_loss",
        lambda x, l, fg: L.sigmoid_focal_loss(x, l, fg),
        {
            "x": rng.uniform(-3, 3, (5, 3)).astype("float32"),
            "l": np.array([[0], [2], [3], [1], [-1]], "int32"),
            "fg": np.array([3], "int32"),
        },  # fmt: skip
        _focal_np,
    ),
    Case(
        "polygon_box_transform",
        lambda x: L.polygon_box_transform(x),
        {"x": rng.uniform(-1, 1, (2, 4, 2, 3)).astype("float32")},
        lambda x: 4 * np.stack(np.meshgrid(np.arange(3), np.arange(2)) * 2)[None].astype("float32") - x,
    ),
    Case(
        "multiclass_nms",
        lambda b, s: L.multiclass_nms(b, s, 0.2, 4, 5, nms_threshold=0.3),
        {"b": _NMS_B, "s": _NMS_S},
        lambda b, s: _nms_np(b, s, 0.2, 4, 5, 0.3)[0],
    ),
    Case(
        "multiclass_nms2",
        lambda loc, sc, pb: list(
            L.detection_output(
                loc, sc, pb, [1.0, 1.0, 1.0, 1.0], score_threshold=0.2, nms_top_k=4, keep_top_k=5, return_index=True
            )
        ),  # fmt: skip
        {"loc": np.zeros((2, 6, 4), "float32"), "sc": np.log(_NMS_S.transpose(0, 2, 1) + 0.05), "pb": _NMS_B[0]},
        None,
        check=lambda out, index: _check_nms2([out, index], _NMS_S),
    ),
    Case(
        "bipartite_match",
        lambda dm: list(L.detection.bipartite_match(dm)),
        {"dm": _DM},
        lambda dm: _bipartite_np(dm, [0, 2, 5]),
        lods={"dm": [[2, 3]]},
        shapes={"dm": [None, 4]},
    ),
    Case(
        "target_assign",
        lambda x, mi: list(L.detection.target_assign(x, mi, mismatch_value=-1)),
        {"x": _TA_X, "mi": _TA_MATCH},
        lambda x, mi: [
            np.where((mi > -1)[..., None], x[np.array([[0], [2]]) + np.maximum(mi, 0), np.arange(4)[None]], -1).astype(
                "float32"
            ),
            (mi > -1)[..., None].astype("float32"),
        ],
        lods={"x": [[2, 3]]},
        shapes={"x": [None, 4, 2]},
    ),
]


def _check_nms2(outs, scores):
    """detection_output with zero offsets and unit variances keeps the priors as boxes: the NMS rows
    of the softmax scores, and each row's index into the [N * M] boxes."""
    logits = np.log(scores.transpose(0, 2, 1) + 0.05)
    probs = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
    boxes = np.stack([_NMS_B[0], _NMS_B[0]])
    want, _ = _nms_np(boxes, probs.transpose(0, 2, 1), 0.2, 4, 5, 0.3)
    np.testing.assert_allclose(np.array(outs[0]), want, rtol=1e-5, atol=1e-6)
    index = np.array(outs[1]).reshape(-1)
    np.testing.assert_allclose(boxes.reshape(-1, 4)[index], want[:, 2:], rtol=1e-6)


def _mine_np(cls, match, dist, ratio, threshold):
    """max_negative mining: per image the unmatched priors under the distance threshold with the
    highest loss, ratio times the matched ones, listed in ascending order."""
    neg = []
    for loss, m, d in zip(cls, match, dist):
        eligible = [j for j in range(len(m)) if m[j] == -1 and d[j] < threshold]
        count = min(int((m != -1).sum() * ratio), len(eligible))
        neg += sorted(sorted(eligible, key=lambda j: -loss[j])[:count])
    return [np.array(neg, "int32").reshape(-1, 1), match]


_MINE = {
    "cls": rng.permutation(12).reshape(2, 6).astype("float32"),
    "mi": np.array([[-1, 0, -1, -1, 1, -1], [2, -1, -1, -1, -1, -1]], "int32"),
    "md": rng.uniform(0, 0.8, (2, 6)).astype("float32"),
}


def v1_op(op_type, x, attrs):
    """fluid 1.8's first reshape / transpose (no XShape), which only weight normalisation and
    older saved programs hold: appended as they are."""
    block = fluid.default_main_program().current_block()
    out = block.create_var(name=fluid.unique_name.generate(op_type + ".out"), dtype=x.dtype)
    block.append_op(type=op_type, inputs={"X": [x]}, outputs={"Out": [out]}, attrs=attrs)
    return out


def _mine(cls, mi, md):
    from fluidcompat.layer_helper import LayerHelper

    helper = LayerHelper("mine_hard_examples")
    neg, upd = helper.create_variable_for_type_inference("int32"), helper.create_variable_for_type_inference("int32")
    helper.append_op(
        type="mine_hard_examples",
        inputs={"ClsLoss": [cls], "MatchIndices": [mi], "MatchDist": [md]},
        outputs={"NegIndices": [neg], "UpdatedMatchIndices": [upd]},
        attrs={"neg_pos_ratio": 2.0, "neg_dist_threshold": 0.5},
    )
    return [neg, upd]


EXTRA_CASES += [Case("mine_hard_examples", _mine, _MINE, lambda cls, mi, md: _mine_np(cls, mi, md, 2.0, 0.5))]


def _yolov3_loss_np(x, gt_box, gt_label, anchors, mask, classes, ignore, ratio):
    """YOLOv3's loss per image written out with loops (no label smoothing, scores 1)."""
    sig = lambda v: 1 / (1 + np.exp(-v))  # noqa: E731
    sce = lambda v, t: max(v, 0) - v * t + np.log1p(np.exp(-abs(v)))  # noqa: E731
    n, _, h, w = x.shape
    size = ratio * h
    p = x.reshape(n, len(mask), 5 + classes, h, w).astype("float64")

    def iou(a, b):
        ow = min(a[0] + a[2] / 2, b[0] + b[2] / 2) - max(a[0] - a[2] / 2, b[0] - b[2] / 2)
        oh = min(a[1] + a[3] / 2, b[1] + b[3] / 2) - max(a[1] - a[3] / 2, b[1] - b[3] / 2)
        return 0.0 if ow <= 0 or oh <= 0 else ow * oh / (a[2] * a[3] + b[2] * b[3] - ow * oh)

    loss = np.zeros(n)
    for i in range(n):
        obj = np.zeros((len(mask), h, w))
        for j, r, c in np.ndindex(len(mask), h, w):
            k = mask[j]
            pred = [(c + sig(p[i, j, 0, r, c])) / h, (r + sig(p[i, j, 1, r, c])) / h,
                    np.exp(p[i, j, 2, r, c]) * anchors[2 * k] / size,
                    np.exp(p[i, j, 3, r, c]) * anchors[2 * k + 1] / size]  # fmt: skip
            if max((iou(pred, g) for g in gt_box[i] if g[2] > 1e-6 and g[3] > 1e-6), default=0) > ignore:
                obj[j, r, c] = -1
        for g, label in zip(gt_box[i], gt_label[i]):
            if g[2] <= 1e-6 or g[3] <= 1e-6:
                continue
            shapes = [
                iou([0, 0, anchors[2 * k] / size, anchors[2 * k + 1] / size], [0, 0, g[2], g[3]])
                for k in range(len(anchors) // 2)
            ]
            best = int(np.argmax(shapes))
            if best not in mask:
                continue
            j, r, c = mask.index(best), int(g[1] * h), int(g[0] * w)
            weight = 2 - g[2] * g[3]
            loss[i] += weight * (sce(p[i, j, 0, r, c], g[0] * h - c) + sce(p[i, j, 1, r, c], g[1] * h - r))
            loss[i] += weight * abs(p[i, j, 2, r, c] - np.log(g[2] * size / anchors[2 * best]))
            loss[i] += weight * abs(p[i, j, 3, r, c] - np.log(g[3] * size / anchors[2 * best + 1]))
            loss[i] += sum(sce(p[i, j, 5 + q, r, c], float(q == label)) for q in range(classes))
            obj[j, r, c] = 1.0
        for j, r, c in np.ndindex(len(mask), h, w):
            if obj[j, r, c] > 0:
                loss[i] += sce(p[i, j, 4, r, c], 1.0)
            elif obj[j, r, c] == 0:
                loss[i] += sce(p[i, j, 4, r, c], 0.0)
    return loss.astype("float32")


_Y3_BOX = np.array([[[0.3, 0.4, 0.2, 0.35], [0.7, 0.2, 0.5, 0.4], [0.0, 0.0, 0.0, 0.0]],
                    [[0.55, 0.65, 0.08, 0.1], [0.5, 0.5, 0.4, 0.45], [0.9, 0.1, 0.1, 0.2]]], "float32")  # fmt: skip
_Y3_LABEL = np.array([[1, 0, 0], [2, 1, 0]], "int32")
EXTRA_CASES += [
    Case(
        "yolov3_loss",
        lambda x, gb, gl: L.yolov3_loss(
            x, gb, gl, [10, 13, 16, 30, 33, 23, 30, 61], [1, 2], 3, 0.4, 32, use_label_smooth=False
        ),
        {"x": rng.uniform(-1.5, 1.5, (2, 16, 3, 3)).astype("float32"), "gb": _Y3_BOX, "gl": _Y3_LABEL},
        lambda x, gb, gl: _yolov3_loss_np(x, gb, gl, [10, 13, 16, 30, 33, 23, 30, 61], [1, 2], 3, 0.4, 32),
        rtol=1e-4,
        atol=1e-4,
    )
]


def _collect_np(rois, scores, offsets, top):
    """The ``top`` best-scored rows of all levels, then in image order (by score within an image)."""
    rows = [(s[r, 0], np.searchsorted(off, r, side="right") - 1, roi[r])
            for roi, s, off in zip(rois, scores, offsets) for r in range(len(roi))]  # fmt: skip
    best = sorted(sorted(rows, key=lambda e: -e[0])[:top], key=lambda e: e[1])
    return np.stack([e[2] for e in best])


_CLIP = float(np.log(1000.0 / 16))


def _decode_pixel_np(anchors, deltas, var, clip=_CLIP):
    w, h = anchors[:, 2] - anchors[:, 0] + 1, anchors[:, 3] - anchors[:, 1] + 1
    cx, cy = anchors[:, 0] + w / 2, anchors[:, 1] + h / 2
    d = deltas * var
    ncx, ncy = d[:, 0] * w + cx, d[:, 1] * h + cy
    nw, nh = np.exp(np.minimum(d[:, 2], clip)) * w, np.exp(np.minimum(d[:, 3], clip)) * h
    return np.stack([ncx - nw / 2, ncy - nh / 2, ncx + nw / 2 - 1, ncy + nh / 2 - 1], 1)


def _proposals_np(scores, deltas, info, anchors, var, pre, post, thresh, min_size):
    rois, probs = [], []
    for i in range(scores.shape[0]):
        s = scores[i].transpose(1, 2, 0).reshape(-1)
        d = deltas[i].transpose(1, 2, 0).reshape(-1, 4)
        order = np.argsort(-s, kind="stable")[:pre]
        boxes = _decode_pixel_np(anchors.reshape(-1, 4)[order], d[order], var.reshape(-1, 4)[order])
        h, w, scale = info[i]
        boxes = np.clip(boxes, 0, [w - 1, h - 1, w - 1, h - 1])
        bw, bh = boxes[:, 2] - boxes[:, 0], boxes[:, 3] - boxes[:, 1]
        keep = (bw / scale + 1 >= min_size) & (bh / scale + 1 >= min_size)
        keep &= (boxes[:, 0] + (bw + 1) / 2 <= w) & (boxes[:, 1] + (bh + 1) / 2 <= h)
        boxes, sc = boxes[keep], s[order][keep]
        chosen = []
        for k in range(len(boxes)):
            if all(_iou_np(boxes[k : k + 1], boxes[c : c + 1], 1.0)[0, 0] <= thresh for c in chosen):
                chosen.append(k)
        rois.append(boxes[chosen[:post]])
        probs.append(sc[chosen[:post]].reshape(-1, 1))
    counts = np.cumsum([len(r) for r in rois]).astype("int32")
    return _f32(np.concatenate(rois), np.concatenate(probs)) + [counts]


def _levels_np(rois, lo, hi, refer_level, refer_scale):
    scale = np.sqrt((rois[:, 2] - rois[:, 0] + 1) * (rois[:, 3] - rois[:, 1] + 1))
    return np.clip(np.floor(np.log2(scale / refer_scale + 1e-6) + refer_level), lo, hi).astype(int)


def _distribute_np(rois):
    level = _levels_np(rois, 2, 4, 3, 56)
    order = np.concatenate([np.flatnonzero(level == lv) for lv in (2, 3, 4)])
    restore = np.argsort(order, kind="stable").astype("int32").reshape(-1, 1)
    return [rois[level == lv] for lv in (2, 3, 4)] + [restore]


def _box_assign_np(prior, var, target, score):
    r, classes = score.shape
    decoded = _decode_pixel_np(np.repeat(prior, classes, 0), target.reshape(-1, 4), var, clip=1.5).reshape(r, -1)
    best = score[:, 1:].argmax(1) + 1
    assigned = decoded.reshape(r, classes, 4)[np.arange(r), best]
    return _f32(decoded, assigned)


_GP_A, _GP_H, _GP_W = 2, 3, 4
_GP_CELLS = np.stack(np.meshgrid(np.arange(_GP_W) * 8.0, np.arange(_GP_H) * 8.0), -1)[
    :, :, None, :
]  # [H, W, 1, (x, y)]
_GP_ANCHORS = np.concatenate(
    [_GP_CELLS - np.array([[2.0, 3.0], [6.0, 4.0]]), _GP_CELLS + np.array([[5.0, 4.0], [9.0, 11.0]])], -1
).astype("float32")
_GP = {
    "s": rng.permutation(2 * _GP_A * _GP_H * _GP_W).reshape(2, _GP_A, _GP_H, _GP_W).astype("float32") / 48,
    "d": rng.uniform(-0.8, 0.8, (2, 4 * _GP_A, _GP_H, _GP_W)).astype("float32"),
    "im": np.array([[24, 30, 1.0], [20, 28, 2.0]], "float32"),
    "a": _GP_ANCHORS,
    "v": np.tile(np.array([0.1, 0.1, 0.2, 0.2], "float32"), (_GP_H, _GP_W, _GP_A, 1)),
}
_FPN_XY = rng.uniform(0, 60, (7, 2))
_FPN_WH = np.array([[3, 3], [20, 30], [60, 50], [90, 100], [8, 9], [150, 90], [30, 30]])
_FPN = np.concatenate([_FPN_XY, _FPN_XY + _FPN_WH], 1).astype("float32")
EXTRA_CASES += [
    Case(
        "generate_proposals",
        lambda s, d, im, a, v: list(L.generate_proposals(s, d, im, a, v, 10, 6, 0.5, 2.0, return_rois_num=True)),
        _GP,
        lambda s, d, im, a, v: _proposals_np(s, d, im, a, v, 10, 6, 0.5, 2.0),
        atol=1e-4,
    ),
    Case(
        "distribute_fpn_proposals",
        lambda r: (lambda levels, restore: levels + [restore])(*L.distribute_fpn_proposals(r, 2, 4, 3, 56)),
        {"r": _FPN},
        _distribute_np,
        lods={"r": [[4, 3]]},
        shapes={"r": [None, 4]},
    ),
    Case(
        "collect_fpn_proposals",
        lambda r0, r1, s0, s1: L.collect_fpn_proposals([r0, r1], [s0, s1], 2, 3, 4),
        {
            "r0": _FPN[:4],
            "r1": _FPN[4:],
            "s0": np.array([[0.9], [0.2], [0.6], [0.1]], "float32"),
            "s1": np.array([[0.5], [0.95], [0.3]], "float32"),
        },  # fmt: skip
        lambda r0, r1, s0, s1: _collect_np([r0, r1], [s0, s1], [[0, 2, 4], [0, 1, 3]], 4),
        lods={"r0": [[2, 2]], "s0": [[2, 2]], "r1": [[1, 2]], "s1": [[1, 2]]},
        shapes={k: [None, 4 if k[0] == "r" else 1] for k in ("r0", "r1", "s0", "s1")},
    ),
    Case(
        "box_decoder_and_assign",
        lambda p, pv, t, sc: list(L.box_decoder_and_assign(p, pv, t, sc, 1.5)),
        {
            "p": _FPN[:4],
            "pv": np.array([0.1, 0.1, 0.2, 0.2], "float32"),
            "t": rng.uniform(-2, 2, (4, 12)).astype("float32"),
            "sc": rng.uniform(0, 1, (4, 3)).astype("float32"),
        },  # fmt: skip
        _box_assign_np,
        atol=1e-4,
    ),
]


def _matrix_nms_np(boxes, scores, thresh, post, top_k, keep):
    """Matrix NMS with matrices: per class the upper-triangular IoU of the score-sorted candidates,
    each column's largest overlap with a better box, the linear decay's column minimum."""
    rows, index, lod = [], [], [0]
    for b in range(boxes.shape[0]):
        found = []
        for c in range(1, scores.shape[1]):
            order = [i for i in np.argsort(-scores[b, c], kind="stable") if scores[b, c, i] > thresh][:top_k]
            if not order:
                continue
            iou = np.triu(_iou_np(boxes[b, order], boxes[b, order]).astype("float64"), 1)  # iou[j, i], j better
            own_max = iou.max(0)  # each box's largest overlap with a better one
            decay = ((1 - iou) / (1 - own_max[:, None])).min(0, initial=1.0, where=np.triu(np.ones_like(iou, bool), 1))
            decayed = scores[b, c, order] * decay
            found += [(s, c, i) for s, i in zip(decayed, order) if s > post]
        found = sorted(found, key=lambda f: -f[0])[:keep]
        rows += [[c, s, *boxes[b, i]] for s, c, i in found]
        index += [b * boxes.shape[1] + i for _, _, i in found]
        lod.append(lod[-1] + len(found))
    return [np.array(rows, "float32"), np.array(index, "int32").reshape(-1, 1)]


EXTRA_CASES += [
    Case(
        "matrix_nms",
        lambda b, s: list(L.matrix_nms(b, s, 0.1, 0.15, 5, 6, return_index=True)),
        {"b": _NMS_B, "s": _NMS_S},
        lambda b, s: _matrix_nms_np(b, s, 0.1, 0.15, 5, 6),
    )
]


def _map_np(det, det_off, gt, gt_off, threshold):
    """Integral mean average precision, one image at a time: detections best first, each a true
    positive when it overlaps an unclaimed box of its class by more than the threshold."""
    flags, positives = {}, {}
    for n in range(len(gt_off) - 1):
        g, d = gt[gt_off[n] : gt_off[n + 1]], det[det_off[n] : det_off[n + 1]]
        for c in np.unique(g[:, 0]):
            positives[c] = positives.get(c, 0) + int((g[:, 0] == c).sum())
        claimed = np.zeros(len(g), bool)
        for row in d[np.argsort(-d[:, 1], kind="stable")]:
            same = np.flatnonzero(g[:, 0] == row[0])
            iou = _iou_np(np.clip(row[None, 2:], 0, 1), g[same, 1:])[0] if len(same) else np.zeros(0)
            hit = len(same) and iou.max() > threshold and not claimed[same[iou.argmax()]]
            if hit:
                claimed[same[iou.argmax()]] = True
            flags.setdefault(row[0], []).append((row[1], bool(hit)))
    aps = []
    for c, count in positives.items():
        pairs = sorted(flags.get(c, []), key=lambda p: -p[0])
        tp = np.cumsum([h for _, h in pairs])
        precision, recall = tp / np.arange(1, len(pairs) + 1), tp / count
        aps.append(float(np.sum(precision * np.diff(np.concatenate([[0.0], recall])))) if pairs else 0.0)
    return np.array([np.mean(aps)], "float32")


_MAP_GT = np.array([[1, 0.1, 0.1, 0.4, 0.5], [2, 0.5, 0.5, 0.9, 0.8], [1, 0.2, 0.6, 0.5, 0.9]], "float32")
_MAP_DET = np.array(
    [[1, 0.9, 0.12, 0.1, 0.41, 0.52], [1, 0.8, 0.1, 0.12, 0.4, 0.5], [2, 0.7, 0.0, 0.0, 0.2, 0.2],
     [2, 0.95, 0.52, 0.5, 0.88, 0.8], [1, 0.6, 0.22, 0.6, 0.5, 0.88], [2, 0.3, 0.2, 0.6, 0.5, 0.9]], "float32",
)  # fmt: skip
EXTRA_CASES += [
    Case(
        "detection_map",
        lambda det, gt: L.detection.detection_map(det, gt, 3, overlap_threshold=0.5),
        {"det": _MAP_DET, "gt": _MAP_GT},
        lambda det, gt: _map_np(det, [0, 3, 6], gt, [0, 2, 3], 0.5),
        lods={"det": [[3, 3]], "gt": [[2, 1]]},
        shapes={"det": [None, 6], "gt": [None, 5]},
    )
]


def _anchor_labels_np(anchors, gt, positive, negative):
    """Foreground: anchors with IoU >= positive with a box, or a box's best anchor; background: IoU
    < negative with every box. Returns (fg, bg, the best box of each anchor)."""
    iou = _iou_np(anchors, gt, 1.0)
    best_of_box = np.isclose(iou, iou.max(0, keepdims=True), atol=1e-5, rtol=0).any(1)
    fg = np.flatnonzero(best_of_box | (iou.max(1) >= positive))
    bg = np.setdiff1d(np.flatnonzero(iou.max(1) < negative), fg)
    return fg, bg, iou.argmax(1)


def _deltas_np(a, g):
    aw, ah, gw, gh = a[:, 2] - a[:, 0] + 1, a[:, 3] - a[:, 1] + 1, g[:, 2] - g[:, 0] + 1, g[:, 3] - g[:, 1] + 1
    return np.stack([(g[:, 0] + gw / 2 - a[:, 0] - aw / 2) / aw, (g[:, 1] + gh / 2 - a[:, 1] - ah / 2) / ah,
                     np.log(gw / aw), np.log(gh / ah)], 1).astype("float32")  # fmt: skip


_TA_ANCHORS = np.concatenate([_GP_ANCHORS.reshape(-1, 4)[:, :2], _GP_ANCHORS.reshape(-1, 4)[:, :2] + [[9, 7]]], 1)
_TA_ANCHORS = _TA_ANCHORS.astype("float32")
_TA_GT = np.array([[2, 3, 12, 10], [14, 6, 25, 15]], "float32")


def _rpn_np(bbox, cls, anchor, var, gt, crowd, im):
    fg, bg, best = _anchor_labels_np(anchor, gt, 0.5, 0.3)
    return [cls.reshape(-1, 1)[np.concatenate([fg, bg])], bbox.reshape(-1, 4)[fg],
            np.array([1] * len(fg) + [0] * len(bg), "int32").reshape(-1, 1), _deltas_np(anchor[fg], gt[best[fg]]),
            np.ones((len(fg), 4), "float32")]  # fmt: skip


def _retina_np(bbox, cls, anchor, var, gt, label, crowd, im):
    fg, bg, best = _anchor_labels_np(anchor, gt, 0.5, 0.4)
    labels = np.concatenate([label.reshape(-1)[best[fg]], np.zeros(len(bg), "int32")]).reshape(-1, 1)
    return [cls.reshape(-1, 2)[np.concatenate([fg, bg])], bbox.reshape(-1, 4)[fg], labels,
            _deltas_np(anchor[fg], gt[best[fg]]), np.ones((len(fg), 4), "float32"),
            np.array([[len(fg) + 1]], "int32")]  # fmt: skip


_TA_IN = {
    "bbox": rng.uniform(-1, 1, (1, len(_TA_ANCHORS), 4)).astype("float32"),
    "cls": rng.uniform(-1, 1, (1, len(_TA_ANCHORS), 1)).astype("float32"),
    "anchor": _TA_ANCHORS,
    "var": np.ones_like(_TA_ANCHORS),
    "gt": _TA_GT,
    "crowd": np.zeros((2, 1), "int32"),
    "im": np.array([[40, 40, 1.0]], "float32"),
}
_TA_LODS = {"gt": [[2]], "crowd": [[2]], "label": [[2]]}
EXTRA_CASES += [
    Case(
        "rpn_target_assign",
        lambda bbox, cls, anchor, var, gt, crowd, im: list(
            L.rpn_target_assign(
                bbox,
                cls,
                anchor,
                var,
                gt,
                crowd,
                im,
                rpn_batch_size_per_im=1000,
                rpn_straddle_thresh=-1,
                rpn_positive_overlap=0.5,
                rpn_negative_overlap=0.3,
                rpn_fg_fraction=1.0,
                use_random=False,
            )
        ),  # fmt: skip
        _TA_IN,
        _rpn_np,
        lods=_TA_LODS,
        shapes={"gt": [None, 4], "crowd": [None, 1]},
        atol=1e-5,
    ),
    Case(
        "retinanet_target_assign",
        lambda bbox, cls, anchor, var, gt, label, crowd, im: list(
            L.retinanet_target_assign(bbox, cls, anchor, var, gt, label, crowd, im, num_classes=2)
        ),
        {
            **{k: v for k, v in _TA_IN.items() if k not in ("crowd", "im")},
            "cls": rng.uniform(-1, 1, (1, len(_TA_ANCHORS), 2)).astype("float32"),
            "label": np.array([[1], [2]], "int32"),
            "crowd": _TA_IN["crowd"],
            "im": _TA_IN["im"],
        },  # fmt: skip
        _retina_np,
        lods=_TA_LODS,
        shapes={"gt": [None, 4], "crowd": [None, 1], "label": [None, 1]},
        atol=1e-5,
    ),
]


def _retina_out_np(b0, b1, s0, s1, a0, a1, im, thresh, top_k, keep, iou_thresh):
    """Per image: per level the top_k (anchor, class) pairs over the threshold (the last level's over
    0), decoded, scaled and clipped; NMS per class; the keep best, best first."""
    rows, lod = [], [0]
    levels = [(b0, s0, a0), (b1, s1, a1)]
    for n in range(im.shape[0]):
        h, w, scale = im[n]
        cands = {}
        for lv, (b, s, a) in enumerate(levels):
            flat = s[n].reshape(-1)
            order = [i for i in np.argsort(-flat, kind="stable") if flat[i] > (thresh if lv == 0 else 0.0)][:top_k]
            for i in order:
                k, c = divmod(int(i), s.shape[2])
                box = _decode_pixel_np(a[k : k + 1], b[n, k : k + 1], np.ones(4))[0] / scale
                box = np.clip(box, 0, [np.floor(w / scale + 0.5) - 1, np.floor(h / scale + 0.5) - 1] * 2)
                cands.setdefault(c, []).append((flat[i], box))
        found = []
        for c, cs in cands.items():
            cs.sort(key=lambda sb: -sb[0])
            kept = []
            for score, box in cs:
                if all(_iou_np(box[None], k[None], 1.0)[0, 0] <= iou_thresh for _, k in kept):
                    kept.append((score, box))
            found += [(score, c, box) for score, box in kept]
        found = sorted(found, key=lambda f: -f[0])[:keep]
        rows += [[c + 1, score, *box] for score, c, box in found]
        lod.append(lod[-1] + len(found))
    return np.array(rows, "float32")


_RO_A = [_TA_ANCHORS[:12], _TA_ANCHORS[12:18] * 1.5]
_RO = {
    "b0": rng.uniform(-0.5, 0.5, (2, 12, 4)).astype("float32"),
    "b1": rng.uniform(-0.5, 0.5, (2, 6, 4)).astype("float32"),
    "s0": (rng.uniform(0, 1, (2, 12, 2)) ** 2).astype("float32"),
    "s1": (rng.uniform(0, 1, (2, 6, 2)) ** 2).astype("float32"),
    "a0": _RO_A[0],
    "a1": _RO_A[1].astype("float32"),
    "im": np.array([[30, 34, 1.0], [28, 30, 1.25]], "float32"),
}
EXTRA_CASES += [
    Case(
        "retinanet_detection_output",
        lambda b0, b1, s0, s1, a0, a1, im: L.retinanet_detection_output(
            [b0, b1], [s0, s1], [a0, a1], im, score_threshold=0.1, nms_top_k=6, keep_top_k=7, nms_threshold=0.4
        ),
        _RO,
        lambda b0, b1, s0, s1, a0, a1, im: _retina_out_np(b0, b1, s0, s1, a0, a1, im, 0.1, 6, 7, 0.4),
        atol=1e-4,
    )
]


def _proposal_labels_np(rois, classes, crowd, gt, im, batch, fraction, fg_thresh, bg_hi, class_nums):
    """One image at scale 1, no crowd: the ground truth then the rois, labelled by their best box,
    the first foreground and background candidates, targets in the label's columns."""
    boxes = np.concatenate([gt, rois])
    iou = _iou_np(boxes, gt, 1.0)
    best = iou.max(1)
    fg = np.flatnonzero(best >= fg_thresh)[: int(batch * fraction)]
    bg = np.flatnonzero((best < bg_hi) & (best < fg_thresh))[: batch - len(fg)]
    match = iou[fg].argmax(1)
    labels = np.concatenate([classes.reshape(-1)[match], np.zeros(len(bg), "int32")]).reshape(-1, 1)
    targets = np.zeros((len(fg) + len(bg), 4 * class_nums), "float32")
    inside = np.zeros_like(targets)
    deltas = _deltas_np(boxes[fg], gt[match]) / np.array([0.1, 0.1, 0.2, 0.2], "float32")
    for r, c in enumerate(labels[: len(fg), 0]):
        targets[r, 4 * c : 4 * c + 4], inside[r, 4 * c : 4 * c + 4] = deltas[r], 1.0
    return [boxes[np.concatenate([fg, bg])], labels, targets, inside, inside]


_PL = {
    "rois": _FPN[:6] / 4,
    "classes": np.array([[1], [2]], "int32"),
    "crowd": np.zeros((2, 1), "int32"),
    "gt": _TA_GT,
    "im": np.array([[40, 40, 1.0]], "float32"),
}
EXTRA_CASES += [
    Case(
        "generate_proposal_labels",
        lambda rois, classes, crowd, gt, im: list(
            L.generate_proposal_labels(
                rois,
                classes,
                crowd,
                gt,
                im,
                batch_size_per_im=6,
                fg_fraction=0.5,
                fg_thresh=0.3,
                bg_thresh_hi=0.5,
                class_nums=3,
                use_random=False,
            )
        ),  # fmt: skip
        _PL,
        lambda rois, classes, crowd, gt, im: _proposal_labels_np(rois, classes, crowd, gt, im, 6, 0.5, 0.3, 0.5, 3),
        lods={"rois": [[6]], "classes": [[2]], "crowd": [[2]], "gt": [[2]]},
        shapes={"rois": [None, 4], "classes": [None, 1], "crowd": [None, 1], "gt": [None, 4]},
        atol=1e-4,
    )
]


_RPT_X = rng.uniform(-1, 1, (2, 2, 8, 10)).astype("float32")
EXTRA_CASES += [
    Case(
        "roi_perspective_transform",  # axis-aligned rectangles: the warp is a plain crop
        lambda x, rois: list(L.roi_perspective_transform(x, rois, 5, 5))[:2],
        {"x": _RPT_X, "rois": np.array([[2, 1, 6, 1, 6, 5, 2, 5], [4, 3, 8, 3, 8, 7, 4, 7]], "float32")},
        lambda x, rois: [np.stack([x[0, :, 1:6, 2:7], x[1, :, 3:8, 4:9]]), np.ones((2, 1, 5, 5), "int32")],
        lods={"rois": [[1, 1]]},
        shapes={"rois": [None, 8]},
        atol=1e-5,
    )
]


def _lanms_np(boxes, scores, merge_thresh, thresh):
    """Locality-aware NMS of one image and class: merge each box into the running one while they
    overlap (score-weighted mean, scores added), then greedy NMS of the merged ones."""
    merged = []  # [box, score]
    for b, s in zip(boxes[0].astype("float64"), scores[0, 0].astype("float64")):
        if merged and _iou_np(b[None], merged[-1][0][None])[0, 0] > merge_thresh:
            box, score = merged[-1]
            merged[-1] = [(b * s + box * score) / (s + score), s + score]
        else:
            merged.append([b, s])
    merged = sorted([m for m in merged if m[1] > thresh], key=lambda m: -m[1])
    kept = []
    for box, score in merged:
        if all(_iou_np(box[None], k[None])[0, 0] <= merge_thresh for k, _ in kept):
            kept.append((box, score))
    return np.array([[0, s, *b] for b, s in kept], "float32")


_LANMS_B = np.array(
    [[[0, 0, 10, 4], [2, 0, 12, 4], [4, 1, 14, 5], [30, 30, 40, 36], [60, 5, 64, 9], [3, 0, 13, 4]]], "float32"
)
_LANMS_S = np.array([[[0.9, 0.5, 0.7, 0.8, 0.3, 0.6]]], "float32")
EXTRA_CASES += [
    Case(
        "locality_aware_nms",
        lambda b, s: L.locality_aware_nms(b, s, 0.1, -1, -1, nms_threshold=0.3),
        {"b": _LANMS_B, "s": _LANMS_S},
        lambda b, s: _lanms_np(b, s, 0.3, 0.1),
        atol=1e-5,
    )
]


def _mask_labels_np(im, cls, crowd, segms, rois, labels, size, classes):
    """One foreground roi and one rectangular polygon: the target is the pixels whose centres lie
    inside the rectangle mapped into the roi's frame, in the label's slot (-1 elsewhere)."""
    x0, y0, x1, y1 = rois[0]
    px = (segms[:, 0] - x0) * size / (x1 - x0)
    py = (segms[:, 1] - y0) * size / (y1 - y0)
    c = np.arange(size) + 0.5
    inside = (c[None] > px.min()) & (c[None] < px.max()) & (c[:, None] > py.min()) & (c[:, None] < py.max())
    target = np.full((1, classes * size * size), -1, "int32")
    target[0, labels[0, 0] * size * size : (labels[0, 0] + 1) * size * size] = inside.reshape(-1)
    return [rois, np.array([[0]], "int32"), target]


_ML = {
    "im": np.array([[40, 40, 1.0]], "float32"),
    "cls": np.array([[2]], "int32"),
    "crowd": np.array([[0]], "int32"),
    "segms": np.array([[6.3, 5.2], [17.6, 5.2], [17.6, 14.1], [6.3, 14.1]], "float32"),
    "rois": np.array([[5, 4, 19, 16]], "float32"),
    "labels": np.array([[2]], "int32"),
}
EXTRA_CASES += [
    Case(
        "generate_mask_labels",
        lambda im, cls, crowd, segms, rois, labels: list(
            L.generate_mask_labels(im, cls, crowd, segms, rois, labels, num_classes=3, resolution=7)
        ),
        _ML,
        lambda im, cls, crowd, segms, rois, labels: _mask_labels_np(im, cls, crowd, segms, rois, labels, 7, 3),
        lods={"cls": [[1]], "crowd": [[1]], "segms": [[1], [1], [4]], "rois": [[1]], "labels": [[1]]},
        shapes={"cls": [None, 1], "crowd": [None, 1], "segms": [None, 2], "rois": [None, 4], "labels": [None, 1]},
    )
]

# -- fluid.contrib.layers' ops ----------------------------------------------------------------------
C = fluid.contrib.layers
_Y = rng.uniform(-2, 2, (2, 3, 4)).astype("float32")
EXTRA_CASES += [
    Case(
        "fused_elemwise_activation",
        lambda x, y: [
            C.fused_elemwise_activation(x, y, ["elementwise_add", "relu"]),
            C.fused_elemwise_activation(x, y, "tanh,elementwise_add"),
            C.fused_elemwise_activation(x, y, ["elementwise_mul", "scale"], scale=0.5),
            C.fused_elemwise_activation(x, y, ["sigmoid", "elementwise_mul"]),  # fluid 1.8.5 had no such kernel
        ],
        {"x": X, "y": _Y},
        lambda x, y: [x + np.maximum(y, 0), np.tanh(x + y), x * (0.5 * y), 1 / (1 + np.exp(-(x * y)))],
        atol=1e-6,
    ),
    Case(
        "partial_concat_sum",
        lambda u, v: [C.partial_concat([u, v], 1), C.partial_sum([u, v, u], 0, 2)],
        {"u": U, "v": U[::-1].copy()},
        lambda u, v: [np.concatenate([u[:, 1:], v[:, 1:]], 1), u[:, :2] * 2 + v[:, :2]],
    ),
    Case(
        "fused_embedding_seq_pool",
        lambda ids: C.fused_embedding_seq_pool(
            ids, [5, 3], padding_idx=-1, param_attr=fluid.initializer.NumpyArrayInitializer(M.repeat(2, 0)[:5])
        ),
        {"ids": np.array([[1], [4], [0], [2], [4], [3]], "int64")},
        # padding_idx -1 is the last row (4): it adds nothing
        lambda ids: np.stack([M.repeat(2, 0)[1], M.repeat(2, 0)[0], M.repeat(2, 0)[[2, 3]].sum(0)]),
        lods={"ids": [[2, 1, 3]]},
        shapes={"ids": [None, 1]},
        atol=1e-6,
    ),
    Case(
        "shuffle_batch",  # any order: the sum over the rows stays
        lambda x: L.reduce_sum(C.shuffle_batch(x, seed=5), dim=[0, 1]),
        {"x": X},
        lambda x: x.sum((0, 1)),
        atol=1e-5,
    ),
]


def _seed_op(value):
    block = fluid.default_main_program().current_block()
    out = block.create_var(name=fluid.unique_name.generate("seed.tmp"), dtype="int32")
    block.append_op(type="seed", outputs={"Out": [out]}, attrs={"seed": value})
    return out


EXTRA_CASES += [
    # recomputation's dropout seed: a given seed, else a random one
    Case("seed", lambda x: [_seed_op(7), x * 1.0], {"x": X}, lambda x: [np.array([7], "int32"), x]),
]
EXTRA_CASES += [
    Case(
        "squared_l2_l1_norm",
        lambda x: list(C.ctr_metric_bundle(x[:, :1, 0], x[:, 1:2, 1])[:2]),
        {"x": X},
        lambda x: [
            np.array([((x[:, 0, 0] - x[:, 1, 1]) ** 2).sum()], "float32"),
            np.array([np.abs(x[:, 0, 0] - x[:, 1, 1]).sum()], "float32"),
        ],
        atol=1e-5,
    ),
]
