"""More of fluid 1.8's ops, with fluid's op types and attributes: activations (acos ... mish),
cumsum, flip, roll, tril_triu, diag, eye, kron, trace, isfinite/isinf/isnan, index_select,
index_sample, gather_nd, scatter_nd_add, bmm, dot, cross, dist, addmm, cos_sim, logsumexp,
reduce_all/any, size, unstack, unique, meshgrid, pixel_shuffle, shuffle_channel, space_to_depth,
maxout, prelu, label_smooth, log_loss, smooth_l1, kldiv_loss, huber_loss, margin_rank_loss,
rank_loss, bpr_loss, teacher_student_sigmoid_loss, strided_slice, expand_as, pad_constant_like,
allclose, multiplex, shard_index, diag_embed, randint, randperm, the batch-size-like random ops,
group_norm, instance_norm, lrn, affine_channel, conv3d, pool3d, interpolation, unfold,
temporal_shift, grid_sampler, affine_grid.
"""

from __future__ import annotations

import numpy as np

from fluidcompat_ops.metrics import _lod_sequences
from fluidcompat_ops.registry import GradDef, OpDef, _op, register
from fluidcompat_ops.sequence import _last_level, _padded, lengths_of, lod_of, offsets_of, with_lod
from fluidcompat_ops.shapes import _x, first, out, same_as
from fluidcompat_ops.tensor import _tdtype

torch = None  # NOTE: [Lazy torch] in registry.py
F = None
TORCH_DTYPES = None


# -- more nn ops ----------------------------------------------------------------------------------
def _add_position_encoding(ins, a):
    """[batch, length, width] without a LoD, else [rows, width] with one LoD level: each sequence's
    positions counted from its first row."""
    x = _x(ins)
    lod = lod_of(x)
    if len(lod) > 1:
        raise ValueError(
            f"The input(X)'s lod level of AddPositionEncodingOp should be equal to 1, but received {len(lod)}. "
        )
    rank = 2 if lod else 3
    if x.dim() != rank:
        raise ValueError(
            f"The input(X)'s dimension of AddPositionEncodingOp should be equal to {rank}, but received {x.dim()}. "
        )
    p = x.shape[-1]
    half = p // 2
    if lod:
        offsets = lod[0]
        starts = torch.tensor(offsets[:-1], dtype=torch.float64, device=x.device)
        lengths = torch.tensor(lengths_of(offsets), dtype=torch.int64, device=x.device)
        rows = torch.arange(x.shape[0], dtype=torch.float64, device=x.device)
        j = (rows - torch.repeat_interleave(starts, lengths, output_size=x.shape[0]))[:, None]
    else:
        j = torch.arange(x.shape[1], dtype=torch.float64, device=x.device)[:, None]
    k = torch.arange(half, dtype=torch.float64, device=x.device)[None, :]
    val = j / (10000.0 ** (k / (half - 1))) if half > 1 else j / 10000.0
    enc = torch.cat([torch.sin(val), torch.cos(val)], 1).to(x.dtype)
    return {"Out": [x * a["alpha"] + (enc if lod else enc[None]) * a["beta"]]}


_op("add_position_encoding", ("X",), ("Out",), {"alpha": 1.0, "beta": 1.0}, same_as(), _add_position_encoding)


def _gather_tree(ins, a):
    ids, parents = ins["Ids"][0], ins["Parents"][0]
    t_max = ids.shape[0]
    result = torch.empty_like(ids)
    beam = torch.arange(ids.shape[2], device=ids.device).expand(ids.shape[1], -1)
    batch = torch.arange(ids.shape[1], device=ids.device)[:, None].expand_as(beam)
    for t in range(t_max - 1, -1, -1):
        result[t] = ids[t, batch, beam]
        beam = parents[t, batch, beam].long()
    return {"Out": [result]}


_op("gather_tree", ("Ids", "Parents"), ("Out",), {}, same_as("Ids"), _gather_tree, grad=False)


def _selected_rows_values(ins, a):
    from fluidcompat_ops.grad import SelectedRows

    x = _x(ins)
    return {"Out": [x.values if isinstance(x, SelectedRows) else x]}


def _merge_selected_rows(ins, a):
    from fluidcompat_ops.grad import SelectedRows

    x = _x(ins)
    return {"Out": [x.merged() if isinstance(x, SelectedRows) else x]}


_op(
    "get_tensor_from_selected_rows",
    ("X",),
    ("Out",),
    {},
    lambda ins, a: out("Out", (-1,) + tuple(first(ins, "X").shape[1:]), first(ins, "X").dtype),
    _selected_rows_values,
    grad=False,
)
_op("merge_selected_rows", ("X",), ("Out",), {}, same_as(), _merge_selected_rows, grad=False)


_op(
    "is_empty",
    ("X",),
    ("Out",),
    {},
    lambda ins, a: out("Out", (1,), "bool"),
    lambda ins, a: {"Out": [torch.tensor([_x(ins).numel() == 0])]},
    grad=False,
    no_buffer_inputs=frozenset({"X"}),
    host_outputs=frozenset({"Out"}),
)


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


def _lstm_unit(ins, a):
    """fluid's lstm_unit: X holds the gates i, f, o, g side by side; c = c_prev * sigmoid(f + forget_bias)
    + sigmoid(i) * tanh(g), h = sigmoid(o) * tanh(c)."""
    i, f, o, g = torch.chunk(_x(ins), 4, dim=1)
    c = ins["C_prev"][0] * torch.sigmoid(f + a["forget_bias"]) + torch.sigmoid(i) * torch.tanh(g)
    return {"C": [c], "H": [torch.sigmoid(o) * torch.tanh(c)]}


register(
    OpDef(
        "lstm_unit",
        ("X", "C_prev"),
        ("C", "H"),
        {"forget_bias": 0.0},
        lambda ins, a: {s: [(first(ins, "C_prev").shape, first(ins, "X").dtype)] for s in ("C", "H")},
        _lstm_unit,
        grad=GradDef(out_grads=("C", "H"), fill_missing=True),
    )
)


# -- cudnn_lstm (fluid.layers.lstm) ----------------------------------------------------------------
def cudnn_lstm_weight_size(input_size: int, hidden_size: int, num_layers: int, is_bidirec: bool) -> int:
    """The length of cudnn_lstm's flat W: per layer and direction W_ih [4H, in] and W_hh [4H, H],
    then per layer and direction b_ih [4H] and b_hh [4H] (in = input_size, then H times directions)."""
    dirs = 2 if is_bidirec else 1
    total = 0
    for layer in range(num_layers):
        width = input_size if layer == 0 else hidden_size * dirs
        total += dirs * (4 * hidden_size * (width + hidden_size) + 8 * hidden_size)
    return total


def _cudnn_lstm_params(w, input_size, hidden_size, num_layers, dirs):
    """Per layer, per direction [w_ih, w_hh, b_ih, b_hh] as views of the flat W, in the order of
    cuDNN's weight space: every matrix first (layer by layer, forward before backward), then every
    bias in the same order. Gates i, f, g (cell candidate), o."""
    h = hidden_size
    mats, off = [], 0
    for layer in range(num_layers):
        width = input_size if layer == 0 else h * dirs
        for _ in range(dirs):
            w_ih = w[off : off + 4 * h * width].view(4 * h, width)
            off += 4 * h * width
            w_hh = w[off : off + 4 * h * h].view(4 * h, h)
            off += 4 * h * h
            mats.append((w_ih, w_hh))
    biases = []
    for _ in range(num_layers * dirs):
        biases.append((w[off : off + 4 * h], w[off + 4 * h : off + 8 * h]))
        off += 8 * h
    return [[*mats[k], *biases[k]] for k in range(num_layers * dirs)]


def _cudnn_lstm_run(ins, a, seed):
    """Out, last_h, last_c of a time-major [T, N, input_size] Input; between layers (not after the
    last) dropout with masks drawn from ``seed`` (None: no dropout)."""
    x, h0, c0, w = ins["Input"][0], ins["InitH"][0], ins["InitC"][0], ins["W"][0]
    dirs, layers, p = (2 if a["is_bidirec"] else 1), a["num_layers"], a["dropout_prob"]
    params = _cudnn_lstm_params(w.reshape(-1), a["input_size"], a["hidden_size"], layers, dirs)
    gen = torch.Generator(device=x.device).manual_seed(seed) if seed is not None else None
    hs, cs, y = [], [], x
    for layer in range(layers):
        k = layer * dirs
        flat = [t for d in range(dirs) for t in params[k + d]]
        y, h, c = torch.lstm(y, (h0[k : k + dirs], c0[k : k + dirs]), flat, True, 1, 0.0, False, dirs == 2, False)
        hs.append(h)
        cs.append(c)
        if gen is not None and layer < layers - 1:
            keep = torch.rand(y.shape, generator=gen, device=y.device, dtype=y.dtype) >= p
            y = y * keep.to(y.dtype) / (1.0 - p) if p < 1.0 else torch.zeros_like(y)
    return y, torch.cat(hs), torch.cat(cs)


def _cudnn_lstm_drops_out(a) -> bool:
    """Whether a run applies dropout: training, a positive probability, a layer after another."""
    return not a["is_test"] and a["dropout_prob"] > 0.0 and a["num_layers"] >= 2


def _cudnn_lstm_seed(a):
    """The dropout seed of one run (None: no dropout): the ``seed`` attribute, or a fresh one for -1."""
    if not _cudnn_lstm_drops_out(a):
        return None
    return a["seed"] if a["seed"] != -1 else int(torch.randint(0, 2**31 - 1, ()))


def _cudnn_lstm(ins, a):
    """fluid.layers.lstm's op (cuDNN's LSTM in fluid 1.8, which had no CPU kernel). Input [T, N, I]
    time-major; InitH / InitC [layers * directions, N, H]. Out keeps the dropout seed for the grad."""
    x = ins["Input"][0]
    if x.shape[0] > a["max_len"]:
        raise ValueError(
            f"cudnn_lstm: Input has {x.shape[0]} time steps (its first dimension), more than max_len {a['max_len']}"
        )
    seed = _cudnn_lstm_seed(a)
    out, last_h, last_c = _cudnn_lstm_run(ins, a, seed)
    out._fluidcompat_state = seed
    return {"Out": [out], "last_h": [last_h], "last_c": [last_c]}


def _cudnn_lstm_grad(ins, a):
    """The forward re-run under autograd with the forward's dropout masks (their seed rides on Out)."""
    wanted = [s for s in ("Input", "InitH", "InitC", "W") if s in a["_wanted"]]
    leaves = {s: ins[s][0].detach().requires_grad_(True) for s in wanted}
    seed = getattr(ins["Out"][0], "_fluidcompat_state", None)
    if seed is None and _cudnn_lstm_drops_out(a):
        raise RuntimeError("cudnn_lstm_grad: the forward run's dropout masks are unknown (Out was not made by it)")
    with torch.enable_grad():
        outs = _cudnn_lstm_run(dict(ins, **{s: [v] for s, v in leaves.items()}), a, seed)
        ys, gs = [], []
        for y, slot in zip(outs, ("Out", "last_h", "last_c")):
            g = first(ins, slot + "@GRAD")
            if g is not None:
                ys.append(y)
                gs.append(g.reshape(y.shape).to(y.dtype))
        grads = torch.autograd.grad(ys, list(leaves.values()), gs, allow_unused=True)
    return {s + "@GRAD": [g if g is not None else torch.zeros_like(leaves[s])] for s, g in zip(leaves, grads)}


def _cudnn_lstm_infer(ins, a):
    x, h0, c0, w = (first(ins, s) for s in ("Input", "InitH", "InitC", "W"))
    for slot, v in (("Input", x), ("InitH", h0), ("InitC", c0)):
        if len(v.shape) != 3:
            raise ValueError(f"cudnn_lstm: {slot} '{v.name}' must be 3-D. Received shape {list(v.shape)}")
    dirs, hidden = (2 if a["is_bidirec"] else 1), a["hidden_size"]
    want_state = [a["num_layers"] * dirs, x.shape[1], hidden]
    for slot, v in (("InitH", h0), ("InitC", c0)):
        if any(w_ >= 0 and g >= 0 and w_ != g for w_, g in zip(want_state, v.shape)):
            raise ValueError(
                f"cudnn_lstm: {slot} '{v.name}' must have shape [num_layers * directions, batch, hidden_size] = "
                f"{want_state}. Received {list(v.shape)}"
            )
    if x.shape[0] > a["max_len"]:
        raise ValueError(
            f"cudnn_lstm: Input has {x.shape[0]} time steps (its first dimension), more than max_len {a['max_len']}"
        )
    if x.shape[2] >= 0 and x.shape[2] != a["input_size"]:
        raise ValueError(f"cudnn_lstm: Input's last dimension {x.shape[2]} is not input_size {a['input_size']}")
    size = cudnn_lstm_weight_size(a["input_size"], hidden, a["num_layers"], a["is_bidirec"])
    if tuple(w.shape) != (size,):
        raise ValueError(f"cudnn_lstm: W '{w.name}' must have shape [{size}]. Received {list(w.shape)}")
    return {
        "Out": [((x.shape[0], x.shape[1], hidden * dirs), x.dtype)],
        "last_h": [(tuple(h0.shape), x.dtype)],
        "last_c": [(tuple(c0.shape), x.dtype)],
    }


register(
    OpDef(
        "cudnn_lstm",
        ("Input", "InitH", "InitC", "W", "Cache"),
        ("Out", "last_h", "last_c"),
        {
            "max_len": 20,
            "dropout_prob": 0.0,
            "is_bidirec": False,
            "input_size": 10,
            "hidden_size": 100,
            "num_layers": 1,
            "is_test": False,
            "seed": -1,
        },
        _cudnn_lstm_infer,
        _cudnn_lstm,
        optional_inputs=frozenset({"Cache"}),
        grad=GradDef(
            ("Input", "InitH", "InitC", "W", "Cache", "Out"),
            out_grads=("Out", "last_h", "last_c"),
            in_grads=("Input", "InitH", "InitC", "W"),
            kernel=_cudnn_lstm_grad,
        ),
    )
)


_GRU_ACT = {0: lambda v: v, 1: lambda v: torch.sigmoid(v), 2: lambda v: torch.tanh(v), 3: lambda v: torch.relu(v)}


def _gru_unit(ins, a):
    """fluid's gru_unit. Input is x's projection [N, 3D] (update, reset, candidate); Weight's memory
    holds the [D, 2D] update/reset matrix, then the [D, D] candidate one (not column blocks of [D, 3D]).
    Gate is [u, r, c]; Hidden is u * (c - h) + h, or with origin_mode u * h + (1 - u) * c."""
    x, h, w = ins["Input"][0], ins["HiddenPrev"][0], ins["Weight"][0]
    d = h.shape[1]
    bias = first(ins, "Bias")
    gate = x + bias if bias is not None else x
    flat = w.reshape(-1)
    w_ur, w_c = flat[: 2 * d * d].reshape(d, 2 * d), flat[2 * d * d :].reshape(d, d)
    act, gate_act = _GRU_ACT[a["activation"]], _GRU_ACT[a["gate_activation"]]
    ur = gate_act(gate[:, : 2 * d] + h @ w_ur)
    u, r = ur[:, :d], ur[:, d:]
    reset = r * h
    c = act(gate[:, 2 * d :] + reset @ w_c)
    new = u * h + (1 - u) * c if a["origin_mode"] else u * (c - h) + h
    return {"Gate": [torch.cat([u, r, c], dim=1)], "ResetHiddenPrev": [reset], "Hidden": [new]}


def _gru_unit_infer(ins, a):
    x, h = first(ins, "Input"), first(ins, "HiddenPrev")
    return {"Gate": [(x.shape, x.dtype)], "ResetHiddenPrev": [(h.shape, x.dtype)], "Hidden": [(h.shape, x.dtype)]}


register(
    OpDef(
        "gru_unit",
        ("Input", "HiddenPrev", "Weight", "Bias"),
        ("Gate", "ResetHiddenPrev", "Hidden"),
        {"activation": 2, "gate_activation": 1, "origin_mode": False},
        _gru_unit_infer,
        _gru_unit,
        # as fluid's gru_unit_grad: only Hidden's gradient flows back (Gate, ResetHiddenPrev: none)
        grad=GradDef(out_grads=("Hidden",)),
    )
)


def _sequence_mask(ins, a):
    """Y[..., j] = j < X[...], for j below maxlen (MaxLenTensor, the attribute, or X's largest value)."""
    x = _x(ins)
    limit = first(ins, "MaxLenTensor")
    maxlen = int(limit.reshape(-1)[0]) if limit is not None else a["maxlen"]
    if maxlen < 0:
        maxlen = int(x.max()) if x.numel() else 0
    steps = torch.arange(maxlen, device=x.device, dtype=x.dtype)
    return {"Y": [(steps < x.unsqueeze(-1)).to(_tdtype(a["out_dtype"]))]}


def _sequence_mask_infer(ins, a):
    x = first(ins, "X")
    maxlen = -1 if first(ins, "MaxLenTensor") is not None else a["maxlen"]
    return {"Y": [(tuple(x.shape) + (maxlen,), a["out_dtype"])]}


_op(
    "sequence_mask",
    ("X", "MaxLenTensor"),
    ("Y",),
    {"maxlen": -1, "out_dtype": 3},
    _sequence_mask_infer,
    _sequence_mask,
    grad=False,
    host_inputs=frozenset({"MaxLenTensor"}),
)


def _cvm(ins, a):
    x = _x(ins)
    if not a["use_cvm"]:
        return {"Y": [x[:, 2:]]}
    show = torch.log(x[:, :1] + 1)
    click = torch.log(x[:, 1:2] + 1) - show
    return {"Y": [torch.cat([show, click, x[:, 2:]], 1)]}


def _cvm_grad(ins, a):
    """fluid 1.8's cvm_grad: the first two columns get the CVM input itself, the others dY."""
    dy, cvm = ins["Y@GRAD"][0], ins["CVM"][0]
    rest = dy[:, 2:] if a["use_cvm"] else dy
    return {"X@GRAD": [torch.cat([cvm[:, :2].to(dy.dtype), rest], 1)]}


def _cvm_infer(ins, a):
    x = first(ins, "X")
    return out("Y", x.shape if a["use_cvm"] else (x.shape[0], x.shape[1] - 2), x.dtype)


register(
    OpDef(
        "cvm",
        ("X", "CVM"),
        ("Y",),
        {"use_cvm": True},
        _cvm_infer,
        _cvm,
        grad=GradDef(("X", "CVM"), out_grads=("Y",), in_grads=("X",), kernel=_cvm_grad),
    )
)


# -- hash: XXH64 of each row's bytes, seeds 0 .. num_hash - 1, modulo mod_by --------------------------
_P1, _P2, _P3 = 11400714785074694791, 14029467366897019727, 1609587929392839161
_P4, _P5, _M64 = 9650029242287828579, 2870177450012600261, 2**64 - 1


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (64 - r))) & _M64


def _xxh_round(acc: int, lane: int) -> int:
    return (_rotl((acc + lane * _P2) & _M64, 31) * _P1) & _M64


def xxh64(data: bytes, seed: int) -> int:
    """XXH64 (the hash fluid's hash op uses) of ``data``."""
    import struct

    n, i = len(data), 0
    if n >= 32:
        v = [(seed + _P1 + _P2) & _M64, (seed + _P2) & _M64, seed & _M64, (seed - _P1) & _M64]
        while i + 32 <= n:
            v = [_xxh_round(v[k], struct.unpack_from("<Q", data, i + 8 * k)[0]) for k in range(4)]
            i += 32
        h = (_rotl(v[0], 1) + _rotl(v[1], 7) + _rotl(v[2], 12) + _rotl(v[3], 18)) & _M64
        for lane in v:
            h = ((h ^ _xxh_round(0, lane)) * _P1 + _P4) & _M64
    else:
        h = (seed + _P5) & _M64
    h = (h + n) & _M64
    while i + 8 <= n:
        h ^= _xxh_round(0, struct.unpack_from("<Q", data, i)[0])
        h = (_rotl(h, 27) * _P1 + _P4) & _M64
        i += 8
    if i + 4 <= n:
        h ^= (struct.unpack_from("<I", data, i)[0] * _P1) & _M64
        h = (_rotl(h, 23) * _P2 + _P3) & _M64
        i += 4
    while i < n:
        h ^= (data[i] * _P5) & _M64
        h = (_rotl(h, 11) * _P1) & _M64
        i += 1
    h ^= h >> 33
    h = (h * _P2) & _M64
    h ^= h >> 29
    h = (h * _P3) & _M64
    return h ^ (h >> 32)


def _hash(ins, a):
    x = _x(ins)
    rows = x.detach().cpu().numpy().reshape(x.shape[0], -1)
    values = [[xxh64(r.tobytes(), k) % a["mod_by"] for k in range(a["num_hash"])] for r in rows]
    return {"Out": [torch.tensor(values, dtype=x.dtype, device=x.device).reshape(x.shape[0], a["num_hash"], 1)]}


_op(
    "hash",
    ("X",),
    ("Out",),
    {"num_hash": 1, "mod_by": 100000},
    lambda ins, a: out("Out", (first(ins, "X").shape[0], a["num_hash"], 1), first(ins, "X").dtype),
    _hash,
    grad=False,
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
    y = y[real]
    if y.numel() and int(y.max()) >= tags:
        raise ValueError("An invalid tag label that execesses the largest tag number.")
    if y.numel() and int(y.min()) < 0:
        raise ValueError(f"linear_chain_crf: tag labels must be in [0, {tags}). Received: {int(y.min())}")


def _linear_chain_crf(ins, a):
    """Negative log likelihood of each tag sequence: log Z - score, Transition's rows being the
    start weights, the end weights, then [from tag, to tag]. All sequences step together (the
    forward variables of a finished one stay as they were)."""
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
    gradient."""
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
    step together, as in linear_chain_crf."""
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


# -- filter_by_instag: the instances carrying one of the wanted tags ----------------------------------
def _filter_by_instag(ins, a):
    """The instances (LoD sequences of Ins with is_lod, else rows) one of whose tags (Ins_tag, LoD
    per instance) is in Filter_tag, in order, with their LoD; LossWeight 1 per kept instance. With
    none kept: one row of out_val_if_empty and LossWeight 0, as fluid 1.8."""
    x, tags, wanted = ins["Ins"][0], ins["Ins_tag"][0], set(ins["Filter_tag"][0].reshape(-1).tolist())
    tag_offsets = _last_level(tags, "filter_by_instag", "Input(Ins_tag)")
    if a["is_lod"]:
        offsets = _last_level(x, "filter_by_instag", "Input(Ins)")
    else:
        offsets = list(range(x.shape[0] + 1))
    if len(offsets) != len(tag_offsets):
        raise ValueError(
            f"filter_by_instag: Ins has {len(offsets) - 1} instances but Ins_tag tags {len(tag_offsets) - 1}"
        )
    values = tags.reshape(-1).tolist()
    kept = [i for i, (s, e) in enumerate(zip(tag_offsets, tag_offsets[1:])) if wanted.intersection(values[s:e])]
    dev = x.device
    if not kept:
        empty = torch.full((1,) + tuple(x.shape[1:]), float(a["out_val_if_empty"]), dtype=x.dtype, device=dev)
        if x.requires_grad:  # its gradient: zeros for every row of Ins, as fluid's grad kernel gave
            empty = empty + x[:1] * 0
        return {  # (fluid's IndexMap then: one row [0, 1, 1])
            "Out": [with_lod(empty, [[0, 1]])],
            "LossWeight": [with_lod(torch.zeros((1, 1), dtype=torch.float32, device=dev), [[0, 1]])],
            "IndexMap": [with_lod(torch.tensor([[0, 1, 1]], dtype=torch.int64, device=dev), [[0, 1]])],
        }
    rows, index_map, lengths = [], [], []
    for i in kept:
        s, e = offsets[i], offsets[i + 1]
        index_map.append([len(rows), s, e - s])
        rows += range(s, e)
        lengths.append(e - s)
    out_t = x[torch.tensor(rows, dtype=torch.int64, device=dev)]
    ones = [offsets_of([1] * len(kept))]  # one row per kept instance (fluid's LoD of both)
    return {
        "Out": [with_lod(out_t, [offsets_of(lengths)])],
        "LossWeight": [with_lod(torch.ones((len(kept), 1), dtype=torch.float32, device=dev), ones)],
        "IndexMap": [with_lod(torch.tensor(index_map, dtype=torch.int64, device=dev).reshape(-1, 3), ones)],
    }


register(
    OpDef(
        "filter_by_instag",
        ("Ins", "Ins_tag", "Filter_tag"),
        ("Out", "LossWeight", "IndexMap"),
        {"is_lod": True, "out_val_if_empty": 0},
        lambda ins, a: {
            "Out": [((-1,) + tuple(first(ins, "Ins").shape[1:]), first(ins, "Ins").dtype)],
            "LossWeight": [((-1, 1), "float32")],
            "IndexMap": [((-1, 3), "int64")],
        },
        _filter_by_instag,
        host_inputs=frozenset({"Ins_tag", "Filter_tag"}),
        grad=GradDef(("Ins", "Ins_tag", "Filter_tag"), out_grads=("Out",), in_grads=("Ins",)),
    )
)
