"""Plain numpy references for the op table (loops where that keeps them obviously right)."""

from __future__ import annotations

import math

import numpy as np


def softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def gelu(x):
    erf = np.vectorize(math.erf)
    return (0.5 * x * (1.0 + erf(x / math.sqrt(2.0)))).astype(x.dtype)


def pad_hw(x, top, bottom, left, right, value=0.0):
    return np.pad(x, [(0, 0), (0, 0), (top, bottom), (left, right)], constant_values=value)


def conv2d(x, w, stride=(1, 1), pads=(0, 0, 0, 0), dilation=(1, 1), groups=1):
    xp = pad_hw(x, *pads)
    n, c, h, wd = xp.shape
    f, cg, kh, kw = w.shape
    eh, ew = dilation[0] * (kh - 1) + 1, dilation[1] * (kw - 1) + 1
    oh, ow = (h - eh) // stride[0] + 1, (wd - ew) // stride[1] + 1
    out = np.zeros((n, f, oh, ow), dtype=np.float64)
    per_group = f // groups
    for o in range(f):
        g = o // per_group
        for i in range(oh):
            for j in range(ow):
                patch = xp[
                    :,
                    g * cg : (g + 1) * cg,
                    i * stride[0] : i * stride[0] + eh : dilation[0],
                    j * stride[1] : j * stride[1] + ew : dilation[1],
                ]
                out[:, o, i, j] = (patch * w[o]).sum(axis=(1, 2, 3))
    return out.astype(x.dtype)


def conv2d_transpose(x, w, stride=(1, 1), pads=(0, 0, 0, 0)):
    n, c, h, wd = x.shape
    _, f, kh, kw = w.shape
    full = np.zeros((n, f, (h - 1) * stride[0] + kh, (wd - 1) * stride[1] + kw), dtype=np.float64)
    for i in range(h):
        for j in range(wd):
            contrib = np.einsum("nc,cfhw->nfhw", x[:, :, i, j], w)
            full[:, :, i * stride[0] : i * stride[0] + kh, j * stride[1] : j * stride[1] + kw] += contrib
    t, b, left, r = pads
    return full[:, :, t : full.shape[2] - b, left : full.shape[3] - r].astype(x.dtype)


def pool2d(x, k, s, pads, kind, ceil=False, exclusive=True):
    n, c, h, w = x.shape
    t, b, left, r = pads

    def size(dim, kk, ss, pa, pb):
        return (dim - kk + pa + pb + (ss - 1 if ceil else 0)) // ss + 1

    oh, ow = size(h, k[0], s[0], t, b), size(w, k[1], s[1], left, r)
    out = np.zeros((n, c, oh, ow), dtype=np.float64)
    for i in range(oh):
        for j in range(ow):
            h0, w0 = i * s[0] - t, j * s[1] - left
            h1, w1 = min(h0 + k[0], h + b), min(w0 + k[1], w + r)
            hs, ws = max(h0, 0), max(w0, 0)
            he, we = min(h1, h), min(w1, w)
            win = x[:, :, hs:he, ws:we]
            if kind == "max":
                out[:, :, i, j] = win.max(axis=(2, 3))
            else:
                area = (he - hs) * (we - ws) if exclusive else k[0] * k[1]
                out[:, :, i, j] = win.sum(axis=(2, 3)) / area
    return out.astype(x.dtype)


def batch_norm_train(x, scale, bias, eps=1e-5):
    mean = x.mean(axis=(0, 2, 3))
    var = x.var(axis=(0, 2, 3))
    y = (x - mean[None, :, None, None]) / np.sqrt(var[None, :, None, None] + eps)
    return (y * scale[None, :, None, None] + bias[None, :, None, None]).astype(x.dtype), mean, var


def layer_norm(x, axis, eps=1e-5):
    left = int(np.prod(x.shape[:axis]))
    x2 = x.reshape(left, -1).astype(np.float64)
    mean = x2.mean(axis=1)
    var = x2.var(axis=1)
    y = (x2 - mean[:, None]) / np.sqrt(var[:, None] + eps)
    return y.reshape(x.shape).astype(x.dtype), mean.astype(x.dtype), var.astype(x.dtype)


def beam_search(step, first_ids, beam, vocab, end, max_step_num):
    """Beam search as BeamSearchDecoder defines it: ``step(ids [B*K], state_rows_order) -> log-probs
    [B*K, vocab]`` is called with each step's ids and the parents chosen (so the caller can reorder
    its states). Returns (ids [T, B, K] traced back through the parents, final log-probs, finished,
    lengths)."""
    batch = first_ids.shape[0] // beam
    log_probs = np.tile(np.array([0.0] + [-1e9] * (beam - 1), "float32"), (batch, 1))
    finished = np.zeros((batch, beam), bool)
    lengths = np.zeros((batch, beam), "int64")
    only_end = np.full(vocab, -1e9, "float32")
    only_end[end] = 0.0
    ids, tokens, parents = first_ids, [], []
    while True:
        logp = step(ids).reshape(batch, beam, vocab)
        logp = np.where(finished[:, :, None], only_end, logp)
        scores = (logp + log_probs[:, :, None]).reshape(batch, beam * vocab)
        best = np.argsort(-scores, axis=1, kind="stable")[:, :beam]
        parent, token = best // vocab, best % vocab
        log_probs = np.take_along_axis(scores, best, 1)
        step.reorder(parent)
        was = np.take_along_axis(finished, parent, 1)
        lengths = np.take_along_axis(lengths, parent, 1) + ~was
        finished = was | (token == end)
        tokens.append(token)
        parents.append(parent)
        ids = token.reshape(-1)
        if finished.all() or len(tokens) > max_step_num:
            break
    out = np.zeros((len(tokens), batch, beam), "int64")
    for b in range(batch):
        for k in range(beam):
            p = k
            for t in range(len(tokens) - 1, -1, -1):
                out[t, b, k] = tokens[t][b, p]
                p = parents[t][b, p]
    return out, log_probs, finished, lengths


def lstm_time_major(x, h0, c0, w, hidden, layers, bidi, masks=None):
    """Out, last_h, last_c of a time-major LSTM. w: per layer and direction W_ih [4H, in] and W_hh
    [4H, H] first, then per layer and direction b_ih and b_hh; gates i, f, g, o. masks[l]: the
    (already scaled) dropout mask after layer l."""
    dirs = 2 if bidi else 1
    mats, off = [], 0
    for layer in range(layers):
        width = x.shape[2] if layer == 0 else hidden * dirs
        for _ in range(dirs):
            w_ih = w[off : off + 4 * hidden * width].reshape(4 * hidden, width)
            off += 4 * hidden * width
            w_hh = w[off : off + 4 * hidden * hidden].reshape(4 * hidden, hidden)
            off += 4 * hidden * hidden
            mats.append((w_ih, w_hh))
    biases = []
    for _ in range(layers * dirs):
        biases.append((w[off : off + 4 * hidden], w[off + 4 * hidden : off + 8 * hidden]))
        off += 8 * hidden
    assert off == w.size
    seq, last_h, last_c = x, [], []
    for layer in range(layers):
        outs = []
        for d in range(dirs):
            k = layer * dirs + d
            (w_ih, w_hh), (b_ih, b_hh) = mats[k], biases[k]
            h, c = h0[k], c0[k]
            steps = range(seq.shape[0]) if d == 0 else range(seq.shape[0] - 1, -1, -1)
            ys = [None] * seq.shape[0]
            for t in steps:
                g = seq[t] @ w_ih.T + b_ih + h @ w_hh.T + b_hh
                i, f, gg, o = np.split(g, 4, axis=1)
                c = sigmoid(f) * c + sigmoid(i) * np.tanh(gg)
                h = sigmoid(o) * np.tanh(c)
                ys[t] = h
            outs.append(np.stack(ys))
            last_h.append(h)
            last_c.append(c)
        seq = np.concatenate(outs, axis=2)
        if masks is not None and layer < layers - 1:
            seq = seq * masks[layer]
    return seq, np.stack(last_h), np.stack(last_c)
