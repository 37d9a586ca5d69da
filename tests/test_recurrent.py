"""lstm, gru and linear_chain_crf: the hand-written backward passes (fluidcompat_ops/recurrent.py,
ctc_crf.py) against torch autograd through the forward kernel, for every input slot, over LoDs with
empty, equal and reversed sequences."""

import itertools

import numpy as np
import pytest
import torch

from fluidcompat_ops import bind_torch, lookup
from fluidcompat_ops.sequence import offsets_of, with_lod

bind_torch()

LODS = ([[2, 0, 4, 1]], [[3, 3, 1]], [[5]], [[0, 2]])


def _seq(v, lengths):
    return with_lod(v, [offsets_of(lengths[0])])


def _t(rng, *shape, scale=0.5):
    return torch.tensor(rng.uniform(-scale, scale, size=shape), dtype=torch.float64)


def _check(op_type, ins, attrs, outs, grad_slots):
    """The registered grad kernel's gradients equal autograd's of the forward kernel."""
    opdef = lookup(op_type)
    attrs = {**opdef.attrs, **attrs}
    leaves = {s: [v.detach().requires_grad_(v.is_floating_point()) for v in vs] for s, vs in ins.items()}
    fins = {s: [with_lod(v, getattr(ins[s][0], "_lod", [])) for v in vs] for s, vs in leaves.items()}
    fwd = opdef.kernel(fins, attrs)
    rng = np.random.RandomState(3)
    out_grads = {s: torch.tensor(rng.randn(*fwd[s][0].shape)) for s in outs}
    total = sum((fwd[s][0] * g).sum() for s, g in out_grads.items())
    wanted = [(s, v) for s in grad_slots for v in leaves.get(s, [])]
    expected = torch.autograd.grad(total, [v for _, v in wanted], allow_unused=True)
    gdef = lookup(op_type + "_grad")
    gins = {s: ins[s] for s in gdef.inputs if s in ins}
    gins.update({s: [v[0].detach()] for s, v in fwd.items() if s in gdef.inputs})
    gins.update({s + "@GRAD": [g] for s, g in out_grads.items()})
    # both loops of each kernel (NOTE: [Two LSTM loops]): autograd on, as here, and off, as the executor runs
    got = gdef.kernel(gins, {**attrs, "_wanted": frozenset(grad_slots)})
    with torch.no_grad():
        fwd_off = opdef.kernel(
            {s: [with_lod(v.detach(), getattr(v, "_lod", [])) for v in vs] for s, vs in fins.items()}, attrs
        )
        got_off = gdef.kernel(gins, {**attrs, "_wanted": frozenset(grad_slots)})
    for slot, values in fwd.items():
        np.testing.assert_allclose(fwd_off[slot][0].numpy(), values[0].detach().numpy(), rtol=1e-12, err_msg=slot)
    for (slot, _), want in zip(wanted, expected):
        want = torch.zeros(1) if want is None else want
        for kernel_got in (got, got_off):
            np.testing.assert_allclose(
                kernel_got[slot + "@GRAD"][0].numpy(), want.numpy(), rtol=1e-9, atol=1e-12, err_msg=slot
            )


@pytest.mark.parametrize("lod", LODS)
@pytest.mark.parametrize("peepholes", [True, False])
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("initial", [False, True])
def test_lstm_grad_matches_autograd(lod, peepholes, reverse, initial):
    rng = np.random.RandomState(len(lod[0]) + 7 * peepholes + 3 * reverse)
    d, rows, n = 3, sum(lod[0]), len(lod[0])
    x = _seq(_t(rng, rows, 4 * d), lod)
    ins = {"Input": [x], "Weight": [_t(rng, d, 4 * d)], "Bias": [_t(rng, 1, 7 * d if peepholes else 4 * d)]}
    if initial:
        ins["H0"], ins["C0"] = [_t(rng, n, d)], [_t(rng, n, d)]
    attrs = {"use_peepholes": peepholes, "is_reverse": reverse}
    _check("lstm", ins, attrs, ("Hidden", "Cell"), ("Input", "H0", "C0", "Weight", "Bias"))


@pytest.mark.parametrize("acts", [("relu", "sigmoid", "identity"), ("tanh", "tanh", "sigmoid")])
def test_lstm_grad_other_activations_and_hidden_only(acts):
    rng = np.random.RandomState(11)
    d, lod = 4, [[2, 3, 1]]
    x = _seq(_t(rng, 6, 4 * d), lod)
    ins = {"Input": [x], "Weight": [_t(rng, d, 4 * d)], "Bias": [_t(rng, 1, 7 * d)]}
    cand, cell, gate = acts
    attrs = {"candidate_activation": cand, "cell_activation": cell, "gate_activation": gate}
    _check("lstm", ins, attrs, ("Hidden",), ("Input", "Weight", "Bias"))


@pytest.mark.parametrize("lod", LODS)
@pytest.mark.parametrize("origin_mode", [False, True])
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("initial", [False, True])
def test_gru_grad_matches_autograd(lod, origin_mode, reverse, initial):
    rng = np.random.RandomState(len(lod[0]) + 5 * origin_mode + 2 * reverse)
    d, rows, n = 3, sum(lod[0]), len(lod[0])
    x = _seq(_t(rng, rows, 3 * d), lod)
    ins = {"Input": [x], "Weight": [_t(rng, d, 3 * d)], "Bias": [_t(rng, 1, 3 * d)]}
    if initial:
        ins["H0"] = [_t(rng, n, d)]
    attrs = {"origin_mode": origin_mode, "is_reverse": reverse}
    _check("gru", ins, attrs, ("Hidden",), ("Input", "H0", "Weight", "Bias"))


def test_lstm_forward_matches_a_per_sequence_numpy_loop():
    rng = np.random.RandomState(5)
    d, lod = 2, [[3, 1, 2]]
    x, w, b = _t(rng, 6, 8), _t(rng, 2, 8), _t(rng, 1, 14)
    out = lookup("lstm").kernel(
        {"Input": [_seq(x, lod)], "Weight": [w], "Bias": [b]}, {**lookup("lstm").attrs, "is_reverse": True}
    )
    xn, wn, bn = x.numpy(), w.numpy(), b.numpy().reshape(-1)
    sig = lambda v: 1 / (1 + np.exp(-v))  # noqa: E731
    want_h, start = np.zeros((6, d)), 0
    for length in lod[0]:
        h, c = np.zeros(d), np.zeros(d)
        for row in range(start + length - 1, start - 1, -1):
            g = xn[row] + h @ wn + bn[:8]
            gc, gi, gf, go = np.split(g, 4)
            i, f = sig(gi + c * bn[8:10]), sig(gf + c * bn[10:12])
            c = f * c + i * np.tanh(gc)
            h = sig(go + c * bn[12:14]) * np.tanh(c)
            want_h[row] = h
        start += length
    np.testing.assert_allclose(out["Hidden"][0].numpy(), want_h, rtol=1e-12)


@pytest.mark.parametrize("lod", LODS)
@pytest.mark.parametrize("padded", [False, True])
def test_linear_chain_crf_grad_matches_autograd(lod, padded):
    rng = np.random.RandomState(len(lod[0]) + 9 * padded)
    tags, lengths = 4, lod[0]
    rows = sum(lengths)
    if padded:
        steps = max(lengths)
        em = _t(rng, len(lengths), steps, tags, scale=2.0)
        label = torch.tensor(rng.randint(0, tags, (len(lengths), steps, 1)))
        ins = {"Emission": [em], "Label": [label], "Length": [torch.tensor(lengths, dtype=torch.int64)]}
    else:
        em = _seq(_t(rng, rows, tags, scale=2.0), lod)
        ins = {"Emission": [em], "Label": [_seq(torch.tensor(rng.randint(0, tags, (rows, 1))), lod)]}
    ins["Transition"] = [_t(rng, tags + 2, tags)]
    _check("linear_chain_crf", ins, {}, ("LogLikelihood",), ("Emission", "Transition"))


def _best_path(em, trans):
    """The highest-scoring tag path of one sequence, by trying every path (numpy)."""
    steps, tags = em.shape
    best, best_score = None, -np.inf
    for path in itertools.product(range(tags), repeat=steps):
        score = trans[0, path[0]] + trans[1, path[-1]] + sum(em[t, p] for t, p in enumerate(path))
        score += sum(trans[2 + a, b] for a, b in zip(path, path[1:]))
        if score > best_score:
            best, best_score = path, score
    return list(best)


@pytest.mark.parametrize("lod", LODS + ([[4, 1, 4, 2, 1]],))
@pytest.mark.parametrize("padded", [False, True])
@pytest.mark.parametrize("with_label", [False, True])
def test_crf_decoding_is_the_best_path_of_each_sequence(lod, padded, with_label):
    """crf_decoding in batch order (NOTE: [CRF in batch order]): each sequence's path is the best of
    all its paths, zeros past each end (padded input), 1 where it agrees with the label."""
    rng = np.random.RandomState(len(lod[0]) + 3 * padded + with_label)
    tags, lengths = 3, lod[0]
    steps, n = max(lengths), len(lengths)
    em_np, trans = rng.uniform(-2, 2, (n, steps, tags)), rng.uniform(-1, 1, (tags + 2, tags))
    label_np = rng.randint(0, tags, (n, steps))
    want = np.zeros((n, steps), dtype=np.int64)
    for i, length in enumerate(lengths):
        if length:
            want[i, :length] = _best_path(em_np[i, :length], trans)
            if with_label:
                want[i, :length] = want[i, :length] == label_np[i, :length]
    ins = {"Transition": [torch.tensor(trans)]}
    if padded:
        ins["Emission"], ins["Length"] = [torch.tensor(em_np)], [torch.tensor(lengths, dtype=torch.int64)]
        if with_label:
            ins["Label"] = [torch.tensor(label_np).reshape(n, steps, 1)]
    else:
        ins["Emission"] = [_seq(torch.tensor(np.concatenate([em_np[i, :k] for i, k in enumerate(lengths)])), lod)]
        if with_label:
            flat = np.concatenate([label_np[i, :k] for i, k in enumerate(lengths)]).reshape(-1, 1)
            ins["Label"] = [_seq(torch.tensor(flat), lod)]
    got = lookup("crf_decoding").kernel(ins, dict(lookup("crf_decoding").attrs))["ViterbiPath"][0].numpy()
    if padded:
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_array_equal(got.reshape(-1), np.concatenate([want[i, :k] for i, k in enumerate(lengths)]))


def test_linear_chain_crf_in_batch_order_matches_log_space_on_long_float32_sequences():
    """The batch-order kernels (probability space, normalized each step) against the log-space ones
    (autograd on) in float32 over sequences of up to 300 steps, emissions and weights of scale 4: no
    underflow, the same likelihood and gradients to float32's precision."""
    rng = np.random.RandomState(8)
    lengths, tags = [300, 1, 57, 0, 120], 6
    em = _seq(torch.tensor(rng.uniform(-4, 4, (sum(lengths), tags)), dtype=torch.float32), [lengths])
    label = _seq(torch.tensor(rng.randint(0, tags, (sum(lengths), 1))), [lengths])
    trans = torch.tensor(rng.uniform(-4, 4, (tags + 2, tags)), dtype=torch.float32)
    ins = {"Emission": [em], "Label": [label], "Transition": [trans]}
    fwd, attrs = lookup("linear_chain_crf"), dict(lookup("linear_chain_crf").attrs)
    g = torch.tensor(rng.uniform(0.5, 1.5, (len(lengths), 1)), dtype=torch.float32)
    runs = []
    for grad_mode in (True, False):
        with torch.set_grad_enabled(grad_mode):
            out = fwd.kernel(ins, attrs)
            gins = {**ins, "Alpha": out["Alpha"], "LogLikelihood@GRAD": [g]}
            grads = lookup("linear_chain_crf_grad").kernel(
                gins, {**attrs, "_wanted": frozenset(("Emission", "Transition"))}
            )
        runs.append([out["LogLikelihood"][0], out["Alpha"][0], grads["Emission@GRAD"][0], grads["Transition@GRAD"][0]])
    for log_space, batched in zip(*runs):
        assert torch.isfinite(batched).all()
        np.testing.assert_allclose(batched.detach().numpy(), log_space.detach().numpy(), rtol=2e-4, atol=2e-4)
