"""Sequence labelling and alignment: CTC (``warpctc``, the connectionist temporal classification loss, and
``ctc_align``, its greedy decoding's merge of repeats and blanks) and the linear-chain CRF
(``linear_chain_crf``, its negative log-likelihood, and ``crf_decoding``, Viterbi decoding), over LoD
sequences or padded [batch, time, ...] input with Length."""

from __future__ import annotations

import numpy as np

from fluidcompat_ops.recurrent import batch_layout
from fluidcompat_ops.registry import GradDef, OpDef, _op, register
from fluidcompat_ops.sequence import _last_level, _lod_sequences, _padded, lengths_of, lod_of, offsets_of, with_lod
from fluidcompat_ops.shapes import first, out

torch = None  # NOTE: [Lazy torch] in registry.py
F = None


# -- warpctc ---------------------------------------------------------------------------------------
def _rows_with_blank_labels(label, ll, blank):
    within = torch.arange(label.shape[1], device=label.device) < ll.to(label.device).unsqueeze(1)
    return torch.nonzero(((label == blank) & within).any(1)).reshape(-1).tolist()


def _warp_ctc_rows(logits, label, il, ll, blank, rows, loss):
    """``loss`` with ``rows`` scored by ``_warp_ctc_row``; their gradient rides on a term worth 0."""
    x = logits.detach().to("cpu", torch.float64).numpy()
    labels, il, ll = label.tolist(), il.tolist(), ll.tolist()
    costs = loss.detach().clone()
    grad = np.zeros(x.shape)
    for b in rows:
        cost, g = _warp_ctc_row(x[: il[b], b], labels[b][: ll[b]], blank)
        costs[b] = cost
        grad[: il[b], b] = g
    pick = torch.zeros(loss.shape, dtype=torch.bool, device=loss.device)
    pick[rows] = True
    surrogate = (logits * torch.as_tensor(grad, dtype=logits.dtype, device=logits.device)).sum((0, 2))
    return torch.where(pick, costs + (surrogate - surrogate.detach()), loss)


def _warp_ctc_row(x, label, blank):
    """warp-ctc's cost and gradient (with respect to the logits ``x`` [T, C], float64 numpy) of one
    label, step for step as fluid 1.8.5's warp-ctc computed them: the forward pass never skips into
    a label equal to blank, the backward pass never skips out of one, each pass runs over the
    window of states that can still be on a path (so the backward column keeps older values
    outside it), and a class whose occupancy is nothing (or exactly 1 in log space) gets
    softmax(x) as its gradient. For labels without blank this is plain CTC."""
    steps, classes = x.shape
    probs = np.exp(x - x.max(1, keepdims=True))
    probs /= probs.sum(1, keepdims=True)
    logp = np.log(probs)
    n = len(label)
    states = 2 * n + 1
    s_inc, e_inc, repeats = [1], [], 0
    for i in range(1, n):
        if label[i - 1] == label[i]:
            s_inc += [1, 1]
            e_inc += [1, 1]
            repeats += 1
        else:
            s_inc.append(2)
            e_inc.append(2)
    e_inc.append(1)
    if n + repeats > steps:  # no path fits: no cost, no gradient
        return 0.0, np.zeros_like(x)
    ext = np.full(states, blank)
    ext[1::2] = label
    prev2 = np.concatenate([[-1, -1], ext[:-2]])
    into = (ext != blank) & (ext != prev2)
    into[:2] = False
    next2 = np.concatenate([ext[2:], [-1, -1]])
    out_of = (ext != blank) & (ext != next2)
    out_of[states - 2 :] = False
    need = n + repeats
    alphas = np.full((steps, states), -np.inf)
    lo, hi = (0 if need - steps < 0 else 1), (2 if states > 1 else 1)
    alphas[0, lo:hi] = logp[0, ext[lo:hi]]
    for t in range(1, steps):
        remain = need - (steps - t)
        if remain >= 0:
            lo += s_inc[remain]
        if t <= need:
            hi += e_inc[t - 1]
        prev = alphas[t - 1]
        one = np.concatenate([[-np.inf], prev[:-1]])
        two = np.where(into, np.concatenate([[-np.inf, -np.inf], prev[:-2]]), -np.inf)
        alphas[t, lo:hi] = (np.logaddexp(np.logaddexp(prev, one), two) + logp[t, ext])[lo:hi]
    loglike = np.logaddexp.reduce(alphas[steps - 1, lo:hi]) if hi > lo else -np.inf
    grad = np.zeros_like(x)
    betas = np.full(states, -np.inf)

    def gradient_at(t, window):
        occupied = np.full(classes, -np.inf)
        np.logaddexp.at(occupied, ext[window], alphas[t, window] + betas[window])
        bare = (occupied == 0.0) | (occupied == -np.inf) | (probs[t] == 0.0)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            taken = probs[t] - np.exp(occupied - logp[t] - loglike)
        grad[t] = np.where(bare, probs[t], taken)

    lo = states - 2 if states > 1 else 0
    hi = states if steps > need else states - 1
    betas[lo:hi] = logp[steps - 1, ext[lo:hi]]
    gradient_at(steps - 1, np.arange(lo, hi))
    for t in range(steps - 2, -1, -1):
        remain = need - (steps - t)
        if remain >= -1:
            lo -= s_inc[remain + 1]
        if t < need:
            hi -= e_inc[t]
        top = hi - 1 if hi == states else hi
        one = np.concatenate([betas[1:], [-np.inf]])
        two = np.where(out_of, np.concatenate([betas[2:], [-np.inf, -np.inf]]), -np.inf)
        fresh = np.logaddexp(np.logaddexp(betas, one), two) + logp[t, ext]
        betas[lo:top] = fresh[lo:top]  # outside the window the column keeps what it had
        window = list(range(lo, top))
        if hi == states:
            betas[states - 1] += logp[t, blank]
            window.append(states - 1)
        gradient_at(t, np.array(window, dtype=int))
    return -loglike, grad


def _warpctc(ins, a):
    """CTC loss; a label that no alignment of its logits can produce (too long for them) costs 0 and
    gives no gradient, as warp-ctc in fluid 1.8.5."""
    logits, label = ins["Logits"][0], ins["Label"][0]
    if ins.get("LogitsLength"):
        il, ll = ins["LogitsLength"][0].reshape(-1).long(), ins["LabelLength"][0].reshape(-1).long()
    else:  # LoD sequences: logits [rows, classes], labels [rows, 1]
        offsets = _last_level(logits, "warpctc", "Input(Logits)")
        label_offsets = _last_level(label, "warpctc", "Input(Label)")
        if len(offsets) != len(label_offsets):
            raise ValueError(
                f"warpctc: Input(Logits) holds {len(offsets) - 1} sequences and Input(Label) "
                f"{len(label_offsets) - 1}; they must hold the same number"
            )
        logits = _padded(logits, offsets, 0.0)[0].transpose(0, 1)
        label = _padded(label.reshape(-1, 1), label_offsets, 0)[0].reshape(len(label_offsets) - 1, -1)
        il = torch.tensor(lengths_of(offsets), dtype=torch.int64, device=logits.device)
        ll = torch.tensor(lengths_of(label_offsets), dtype=torch.int64, device=logits.device)
    logp = torch.log_softmax(logits, -1)
    label = label.long()
    loss = F.ctc_loss(logp, label, il, ll, blank=a["blank"], reduction="none", zero_infinity=True)
    blank_rows = _rows_with_blank_labels(label, ll, a["blank"])
    if blank_rows:  # torch's CTC scores these otherwise than warp-ctc did
        loss = _warp_ctc_rows(logits, label, il, ll, a["blank"], blank_rows, loss)
    if a["norm_by_times"]:  # fluid scales only the gradient by 1 / the sequence's length
        scaled = loss / il.to(loss.dtype)
        loss = scaled + (loss - scaled).detach()
    return {"Loss": [loss.reshape(-1, 1)]}


_op(
    "warpctc",
    ("Logits", "Label", "LogitsLength", "LabelLength"),
    # (WarpCTCGrad: fluid's kernel left the logits' gradient there for its grad op; here autograd
    # differentiates the loss, and the variable is declared, as in fluid's programs, but not written)
    ("Loss", "WarpCTCGrad"),
    {"blank": 0, "norm_by_times": False},
    lambda ins, a: out(
        "Loss", (first(ins, "Logits").shape[1] if first(ins, "LogitsLength") else -1, 1), first(ins, "Logits").dtype
    ),
    _warpctc,
    grad=GradDef(out_grads=("Loss",)),
)


# -- ctc_align -------------------------------------------------------------------------------------
def _ctc_merged(seq, a):
    kept, prev = [], None
    for v in seq:
        if v != a["blank"] and (not a["merge_repeated"] or v != prev):
            kept.append(v)
        prev = v
    return kept


def _ctc_align(ins, a):
    x = ins["Input"][0]
    dev = a["_device"]  # read on the host, written where the op runs
    if not ins.get("InputLength"):  # LoD sequences of ids [rows, 1]: LoD sequences out
        rows = [_ctc_merged(seq, a) for seq in _lod_sequences(x, "ctc_align", "Input(Input)")]
        flat = [v for r in rows for v in r]
        # as fluid 1.8.5: when every sequence comes out empty, one row [-1] (the LoD says all are empty)
        out = torch.tensor(flat or [-1], dtype=x.dtype, device=dev).reshape(-1, 1)
        return {"Output": [with_lod(out, [offsets_of(len(r) for r in rows)])]}
    lengths = ins["InputLength"][0].reshape(-1).tolist()
    rows = [_ctc_merged(seq[: int(n)], a) for seq, n in zip(x.tolist(), lengths)]
    out_len = [len(r) for r in rows]
    width = x.shape[1]
    padded = [r + [a["padding_value"]] * (width - len(r)) for r in rows]
    return {
        "Output": [torch.tensor(padded, dtype=x.dtype, device=dev)],
        "OutputLength": [torch.tensor(out_len, dtype=torch.int64, device=dev).reshape(-1, 1)],
    }


_op(
    "ctc_align",
    ("Input", "InputLength"),
    ("Output", "OutputLength"),
    {"blank": 0, "merge_repeated": True, "padding_value": 0},
    lambda ins, a: {
        "Output": [(first(ins, "Input").shape if first(ins, "InputLength") else (-1, 1), first(ins, "Input").dtype)],
        "OutputLength": [((first(ins, "Input").shape[0], 1), "int64")],
    },
    _ctc_align,
    grad=False,
    host_inputs=frozenset({"Input", "InputLength"}),
)


# -- linear_chain_crf, crf_decoding (padded [batch, time, tags] with Length) ------------------------
def _crf_parts(ins):
    em, trans = ins["Emission"][0], ins["Transition"][0]
    return em, trans[0], trans[1], trans[2:]


def _crf_padded(ins, *slots):
    """Each slot's tensor as padded [sequences, time, ...], the sequences' lengths (int64 tensor) and,
    for LoD input ([rows, ...] without Length, fluid's other form), each row's place in the padded
    rows (None for padded input)."""
    em = ins["Emission"][0]
    length = first(ins, "Length")
    if length is not None:
        n, steps = em.shape[0], em.shape[1]
        vals = [ins[s][0].reshape((n, steps) + tuple(ins[s][0].shape[2:])) for s in slots]
        return vals, length.reshape(-1).to(device=em.device, dtype=torch.int64), None
    offsets = _last_level(em, "LinearChainCRFOp", "Input(Emission)")
    vals, pos = [], None
    for s in slots:
        v = ins[s][0]
        padded, pos = _padded(v.reshape(v.shape[0], -1), offsets, 0)
        vals.append(padded)
    lengths = torch.tensor(lengths_of(offsets), dtype=torch.int64, device=em.device)
    return vals, lengths, pos


def _crf_check_labels(y, real, tags):
    y = y[real] if real is not None else y
    if y.numel() and int(y.max()) >= tags:
        raise ValueError("An invalid tag label that execesses the largest tag number.")
    if y.numel() and int(y.min()) < 0:
        raise ValueError(f"linear_chain_crf: tag labels must be in [0, {tags}). Received: {int(y.min())}")


def _linear_chain_crf(ins, a):
    """Negative log likelihood of each tag sequence: log Z - score, Transition's rows being the
    start weights, the end weights, then [from tag, to tag]. All sequences step together (the
    forward variables of a finished one stay as they were). NOTE: [CRF in batch order]"""
    bt = None if torch.is_grad_enabled() else _crf_layout(ins)
    if bt is not None:
        return _linear_chain_crf_batched(ins, bt)
    em, start, end, trans = _crf_parts(ins)
    (x, y), lengths, pos = _crf_padded(ins, "Emission", "Label")
    n, steps, tags = x.shape
    y = y.reshape(n, steps).long()
    real = torch.arange(steps, device=x.device)[None, :] < lengths[:, None]
    _crf_check_labels(y, real, tags)
    if n == 0 or steps == 0:
        empty = em.new_zeros((0, 1)) if n == 0 else em.new_zeros((n, 1))
        return {"LogLikelihood": [empty], "Alpha": [torch.zeros_like(em)], "EmissionExps": [torch.exp(em)],
                "TransitionExps": [torch.exp(ins["Transition"][0])]}  # fmt: skip
    y = y * real  # a padded step's label: any valid tag (its terms are masked out)
    alpha = start + x[:, 0]
    alphas = [alpha]
    for t in range(1, steps):
        nxt = torch.logsumexp(alpha.unsqueeze(2) + trans, 1) + x[:, t]
        alpha = torch.where(real[:, t : t + 1], nxt, alpha)
        alphas.append(alpha)
    log_z = torch.logsumexp(alpha + end, 1)
    maskf = real.to(x.dtype)
    emitted = (x.gather(2, y.unsqueeze(2)).squeeze(2) * maskf).sum(1)
    moved = (trans[y[:, :-1], y[:, 1:]] * maskf[:, 1:]).sum(1)
    last = y.gather(1, (lengths - 1).clamp(min=0).unsqueeze(1)).squeeze(1)
    nll = torch.where(lengths > 0, log_z - (start[y[:, 0]] + emitted + moved + end[last]), log_z.new_zeros(()))
    with torch.no_grad():
        # fluid's Alpha: its forward table normalized each step (rows sum to 1), zeros past each end
        table = torch.softmax(torch.stack(alphas, 1), -1) * maskf.unsqueeze(2)
        table = table.reshape(-1, tags)[pos] if pos is not None else table
        em_d, trans_d = em.detach(), ins["Transition"][0].detach()
        em_exps = torch.exp(em_d - em_d.amax(dim=-1, keepdim=True))
    return {
        "LogLikelihood": [nll.reshape(n, 1)],
        "Alpha": [table.reshape(em.shape)],
        "EmissionExps": [em_exps],
        "TransitionExps": [torch.exp(trans_d)],
    }


def _linear_chain_crf_grad(ins, a):
    """The forward-backward pass: each step's tag and tag-pair marginals (from the forward's Alpha and
    a backward table made here, in log space) less the label's indicators, times each sequence's
    gradient. NOTE: [CRF in batch order]"""
    bt = None if torch.is_grad_enabled() else _crf_layout(ins)
    if bt is not None:
        return _linear_chain_crf_grad_batched(ins, bt)
    em, start, end, trans = _crf_parts(ins)
    (x, y, alpha), lengths, pos = _crf_padded(ins, "Emission", "Label", "Alpha")
    n, steps, tags = x.shape
    dx = torch.zeros_like(x)
    dtrans = torch.zeros_like(ins["Transition"][0])
    g = ins["LogLikelihood@GRAD"][0].reshape(-1).to(x.dtype)
    if n == 0 or steps == 0:
        return {"Emission@GRAD": [torch.zeros_like(em)], "Transition@GRAD": [dtrans]}
    real = torch.arange(steps, device=x.device)[None, :] < lengths[:, None]
    maskf = real.to(x.dtype)
    y = y.reshape(n, steps).long() * real
    betas = [end.expand(n, tags)]
    for t in range(steps - 2, -1, -1):
        nxt = torch.logsumexp(trans + (x[:, t + 1] + betas[-1]).unsqueeze(1), 2)
        betas.append(torch.where((lengths - 1 > t).unsqueeze(1), nxt, end.expand(n, tags)))
    beta = torch.stack(betas[::-1], 1)
    # (a padded step's Alpha row is zeros: its log would make NaN marginals that the mask cannot clear)
    log_alpha = torch.where(real.unsqueeze(2), torch.log(alpha.reshape(n, steps, tags)), 0.0)
    scale = (maskf * g.unsqueeze(1)).unsqueeze(2)  # each real step, times its sequence's gradient
    onehot = F.one_hot(y, tags).to(x.dtype)
    dx = (torch.softmax(log_alpha + beta, -1) - onehot) * scale
    last = (lengths - 1).clamp(min=0)
    at_last = F.one_hot(last, steps).to(x.dtype).unsqueeze(2) * dx  # the last real step of each
    dtrans[0] = dx[:, 0].sum(0)
    dtrans[1] = at_last.sum((0, 1))
    if steps > 1:
        pairs = log_alpha[:, :-1].unsqueeze(3) + trans + (x[:, 1:] + beta[:, 1:]).unsqueeze(2)
        marg = torch.softmax(pairs.reshape(n, steps - 1, -1), -1).reshape(pairs.shape)
        seen = onehot[:, :-1].unsqueeze(3) * onehot[:, 1:].unsqueeze(2)
        dtrans[2:] = ((marg - seen) * scale[:, 1:].unsqueeze(3)).sum((0, 1))
    dx = dx.reshape(-1, tags)[pos] if pos is not None else dx
    return {"Emission@GRAD": [dx.reshape(em.shape)], "Transition@GRAD": [dtrans]}


# NOTE: [CRF in batch order]
# Where no autograd records (the executor; the grad kernel computes the gradient itself), the CRF
# steps its sequences in the LSTM's batch order (NOTE: [Batch order] in recurrent.py): step t works on
# the first n_t rows of the step before, without masks, in probability space as fluid's kernel does
# (each step's forward or backward variables normalized to sum 1, the log of each normalizer summed
# into log Z; the emissions, start, end and transition weights exponentiated less their maxima). That
# is four small ops a step (a matmul into the step's rows, a product, a sum, a division) where the
# log-space loop above takes six over every sequence with masks; what does not depend on the step
# (the label path's score, the marginals, the transition gradient) is computed for all rows at once.
# Where autograd records (dygraph differentiating the forward, a gradient of a gradient), the
# log-space loops above run.
def _crf_layout(ins):
    """The batch layout of the emission's sequences over its rows ([rows, tags]; padded input
    [n, time, tags] seen as n * time rows), or None where the log-space loops must run (no
    sequences or steps; a length outside [0, time])."""
    em = ins["Emission"][0]
    length = first(ins, "Length")
    if length is not None:
        n, steps = em.shape[0], em.shape[1]
        lengths = tuple(length.reshape(-1).tolist())
        if not n or not steps or len(lengths) != n or min(lengths) < 0 or max(lengths) > steps:
            return None
        starts = tuple(range(0, n * steps, steps))
    else:
        offsets = _last_level(em, "LinearChainCRFOp", "Input(Emission)")
        lengths, starts = tuple(lengths_of(offsets)), tuple(offsets[:-1])
        if not lengths or not max(lengths):
            return None
    return batch_layout(starts, lengths, False, em.device)


def _crf_rows_back(bt, v, rows):
    """Batch-order rows back in the emission's rows, zeros in a padded input's rows past each end."""
    if rows == bt.total:
        return bt.scatter(v)
    return v.new_zeros((rows,) + tuple(v.shape[1:])).index_copy_(0, bt.rows, v)


def _crf_batch_inputs(ins, bt):
    """The emission and label rows in batch order, the emission rows less their maxima
    exponentiated, the maxima, and the transition weights exponentiated less their maximum."""
    em, trans = ins["Emission"][0], ins["Transition"][0]
    tags = em.shape[-1]
    xb = em.reshape(-1, tags).index_select(0, bt.rows)
    yb = ins["Label"][0].reshape(-1).index_select(0, bt.rows).long()
    _crf_check_labels(yb, None, tags)
    mx = xb.amax(1, keepdim=True)
    ex = torch.exp(xb - mx)
    t_max = trans[2:].max()
    return xb, yb, ex, mx, torch.exp(trans[2:] - t_max), t_max


def _crf_label_rows(xb, yb, bt, start, end, trans):
    """The label path's score, per batch row (its emission, plus the start weight on a first row,
    the transition from the row before otherwise, plus the end weight on a last row)."""
    n0 = bt.sizes[0]
    score = xb.gather(1, yb.unsqueeze(1)).squeeze(1)
    score[:n0] += start[yb[:n0]]
    if bt.total > n0:
        score[n0:] += trans[yb.index_select(0, bt.before[n0:]), yb[n0:]]
    return score.index_add_(0, bt.last, end[yb.index_select(0, bt.last)])


def _linear_chain_crf_batched(ins, bt):
    """linear_chain_crf without autograd (NOTE: [CRF in batch order])."""
    em, start, end, trans = _crf_parts(ins)
    tags, n_seq = em.shape[-1], len(bt.order)
    xb, yb, ex, mx, e_trans, t_max = _crf_batch_inputs(ins, bt)
    s_max, e_max = start.max(), end.max()
    alpha, norm = torch.empty_like(ex), ex.new_empty((bt.total, 1))
    sizes, starts = bt.sizes, bt.starts
    torch.mul(ex[: sizes[0]], torch.exp(start - s_max), out=alpha[: sizes[0]])
    for t, n in enumerate(sizes):
        lo, hi = starts[t], starts[t] + n
        block = alpha[lo:hi]
        if t:
            torch.mm(alpha[starts[t - 1] : starts[t - 1] + n], e_trans, out=block)
            block.mul_(ex[lo:hi])
        torch.sum(block, 1, keepdim=True, out=norm[lo:hi])
        block.div_(norm[lo:hi])
    # log Z less the label path's score, row by row: the log of each normalizer and the maxima taken out
    rows = norm.log_().squeeze(1).add_(mx.squeeze(1))
    rows[sizes[0] :] += t_max
    rows[: sizes[0]] += s_max
    rows -= _crf_label_rows(xb, yb, bt, start, end, trans)
    last = (alpha.index_select(0, bt.last) * torch.exp(end - e_max)).sum(1).log_().add_(e_max)
    nll = rows.new_zeros(n_seq).index_add_(0, bt.seq, rows).index_add_(0, bt.order_t[: len(last)], last)
    flat = em.reshape(-1, tags)
    em_d = em.detach()
    return {
        "LogLikelihood": [nll.reshape(n_seq, 1)],
        "Alpha": [_crf_rows_back(bt, alpha, flat.shape[0]).reshape(em.shape)],
        "EmissionExps": [torch.exp(em_d - em_d.amax(dim=-1, keepdim=True))],
        "TransitionExps": [torch.exp(ins["Transition"][0].detach())],
    }


def _linear_chain_crf_grad_batched(ins, bt):
    """linear_chain_crf's gradient without autograd (NOTE: [CRF in batch order]): the backward
    variables, each row's tag marginals (Alpha times them) and each pair of rows' tag-pair marginals,
    less the label's indicators, times the sequence's gradient."""
    em, start, end, trans = _crf_parts(ins)
    tags = em.shape[-1]
    xb, yb, ex, mx, e_trans, t_max = _crf_batch_inputs(ins, bt)
    alpha = ins["Alpha"][0].reshape(-1, tags).index_select(0, bt.rows).to(xb.dtype)
    g = ins["LogLikelihood@GRAD"][0].reshape(-1).to(xb.dtype).index_select(0, bt.seq).unsqueeze(1)
    sizes, starts = bt.sizes, bt.starts
    beta = torch.empty_like(ex)
    beta.index_copy_(0, bt.last, torch.exp(end - end.max()).expand(len(bt.last), tags))
    carried, norm = ex.new_empty((sizes[0], tags)), ex.new_empty((sizes[0], 1))
    e_trans_t = e_trans.t()
    for t in range(len(sizes) - 1, 0, -1):
        n, lo = sizes[t], starts[t]
        block = beta[starts[t - 1] : starts[t - 1] + n]  # the rows before these
        torch.mul(ex[lo : lo + n], beta[lo : lo + n], out=carried[:n])
        torch.mm(carried[:n], e_trans_t, out=block)
        torch.sum(block, 1, keepdim=True, out=norm[:n])
        block.div_(norm[:n])
    dx = alpha * beta
    dx.div_(dx.sum(1, keepdim=True))
    dx.scatter_add_(1, yb.unsqueeze(1), dx.new_full((bt.total, 1), -1.0)).mul_(g)
    dtrans = torch.zeros_like(ins["Transition"][0])
    n0 = sizes[0]
    dtrans[0] = dx[:n0].sum(0)
    dtrans[1] = dx.index_select(0, bt.last).sum(0)
    if bt.total > n0:  # tag pairs: Alpha of the row before, the weights, this row's emission and beta
        prev = bt.before[n0:]
        before, after = alpha.index_select(0, prev), ex[n0:] * beta[n0:]
        z = ((before @ e_trans) * after).sum(1, keepdim=True)
        seen = (yb.index_select(0, prev) * tags + yb[n0:]).reshape(-1)
        counts = g.new_zeros(tags * tags).index_add_(0, seen, g[n0:].squeeze(1)).reshape(tags, tags)
        dtrans[2:] = e_trans * (before.t() @ (after * (g[n0:] / z))) - counts
    flat = em.reshape(-1, tags)
    grad = _crf_rows_back(bt, dx.to(flat.dtype), flat.shape[0]).reshape(em.shape)
    return {"Emission@GRAD": [grad], "Transition@GRAD": [dtrans]}


def _crf_infer(ins, a):
    em, tr = first(ins, "Emission"), first(ins, "Transition")
    return {
        "LogLikelihood": [((em.shape[0], 1), em.dtype)],
        "Alpha": [(em.shape, em.dtype)],
        "EmissionExps": [(em.shape, em.dtype)],
        "TransitionExps": [(tr.shape, em.dtype)],
    }


register(
    OpDef(
        "linear_chain_crf",
        ("Emission", "Transition", "Label", "Length"),
        ("Alpha", "EmissionExps", "TransitionExps", "LogLikelihood"),
        {},
        _crf_infer,
        _linear_chain_crf,
        host_inputs=frozenset({"Length"}),
        grad=GradDef(
            ("Emission", "Transition", "Label", "Length", "Alpha"),
            out_grads=("LogLikelihood",),
            in_grads=("Emission", "Transition"),
            kernel=_linear_chain_crf_grad,
        ),
    )
)


def _crf_decoding(ins, a):
    """The Viterbi path of each sequence (zeros past its length); with Label, 1 where it agrees.
    LoD input ([rows, tags], no Length) gives a [rows, 1] path with the input's LoD. All sequences
    step together, as in linear_chain_crf; in batch order where the sequences have steps (NOTE: [CRF
    in batch order])."""
    bt = _crf_layout(ins)
    if bt is not None:
        return _crf_decoding_batched(ins, bt)
    em, start, end, trans = _crf_parts(ins)
    (x,), lengths, pos = _crf_padded(ins, "Emission")
    n, steps = x.shape[0], x.shape[1]
    path = torch.zeros((n, steps), dtype=torch.int64, device=em.device)
    if n and steps:
        score = start + x[:, 0]
        backs = []
        for t in range(1, steps):
            best, arg = (score.unsqueeze(2) + trans).max(1)
            score = torch.where((lengths > t).unsqueeze(1), best + x[:, t], score)
            backs.append(arg)
        last = torch.argmax(score + end, 1)
        cur = last
        for t in range(steps - 1, -1, -1):
            cur = torch.where(lengths - 1 == t, last, cur)
            path[:, t] = torch.where(lengths > t, cur, 0)
            if t:
                cur = backs[t - 1].gather(1, cur.unsqueeze(1)).squeeze(1)
    label = first(ins, "Label")
    if pos is not None:  # LoD sequences: one row per step
        path = path.reshape(-1)[pos].reshape(-1, 1)
        if label is not None:
            path = (path == label.reshape(-1, 1).long()).to(torch.int64)
        return {"ViterbiPath": [with_lod(path, lod_of(em))]}
    if label is not None:
        mask = torch.arange(steps, device=em.device)[None, :] < lengths[:, None]
        path = ((path == label.reshape(n, steps).long()) & mask).to(torch.int64)
    return {"ViterbiPath": [path]}


def _crf_decoding_batched(ins, bt):
    """crf_decoding in batch order: each step's best score per tag and the tag before it that gave
    it (one sum, one max, one addition a step), then the path walked back from each sequence's best
    last tag (one gather a step)."""
    em, start, end, trans = _crf_parts(ins)
    tags = em.shape[-1]
    xb = em.reshape(-1, tags).index_select(0, bt.rows)
    sizes, starts = bt.sizes, bt.starts
    score, back = torch.empty_like(xb), torch.empty((bt.total, tags), dtype=torch.int64, device=xb.device)
    moves = xb.new_empty((sizes[0], tags, tags))
    torch.add(xb[: sizes[0]], start, out=score[: sizes[0]])
    for t in range(1, len(sizes)):
        n, lo, before = sizes[t], starts[t], starts[t - 1]
        torch.add(score[before : before + n].unsqueeze(2), trans, out=moves[:n])
        torch.max(moves[:n], 1, out=(score[lo : lo + n], back[lo : lo + n]))
        score[lo : lo + n] += xb[lo : lo + n]
    path = torch.empty((bt.total, 1), dtype=torch.int64, device=xb.device)
    path.index_copy_(0, bt.last, torch.argmax(score.index_select(0, bt.last) + end, 1, keepdim=True))
    for t in range(len(sizes) - 1, 0, -1):
        n, lo, before = sizes[t], starts[t], starts[t - 1]
        torch.gather(back[lo : lo + n], 1, path[lo : lo + n], out=path[before : before + n])
    label = first(ins, "Label")
    if label is not None:
        path = (path == label.reshape(-1, 1).index_select(0, bt.rows).long()).to(torch.int64)
    rows = _crf_rows_back(bt, path, em.numel() // tags)
    if first(ins, "Length") is None:  # LoD sequences: one row per step
        return {"ViterbiPath": [with_lod(rows, lod_of(em))]}
    return {"ViterbiPath": [rows.reshape(em.shape[0], em.shape[1])]}


_op(
    "crf_decoding",
    ("Emission", "Transition", "Label", "Length"),
    ("ViterbiPath",),
    {},
    lambda ins, a: out(
        "ViterbiPath",
        tuple(first(ins, "Emission").shape[:2]) if first(ins, "Length") is not None else (-1, 1),
        "int64",
    ),
    _crf_decoding,
    grad=False,
    host_inputs=frozenset({"Length"}),
)
