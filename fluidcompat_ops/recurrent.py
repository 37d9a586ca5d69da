"""fluid 1.8's recurrent ops over LoD sequences: lstm (``dynamic_lstm``), lstmp (``dynamic_lstmp``)
and gru (``dynamic_gru``), with hand-written backward passes for lstm and gru.

# NOTE: [Batch order]
# As fluid's LoD-to-batch reordering did, the sequences are sorted longest first and their rows laid
# out time step by time step: step t holds the rows of the n_t sequences longer than t, in a
# contiguous block. A step then works on the first n_t rows of the running state, without masks, and
# the backward pass walks the same blocks in reverse. The gates, cells and hidden states every step
# made are kept in that order (fluid's BatchGate / BatchCellPreAct / BatchHidden outputs), so the
# backward pass does not re-run the forward one; what it needs of them per row (activation
# derivatives) is computed for all rows at once before its loop, leaving a dozen small ops a step.
"""

from __future__ import annotations

from fluidcompat_ops.registry import GradDef, OpDef, register
from fluidcompat_ops.sequence import _last_level, lengths_of, lod_of, with_lod
from fluidcompat_ops.shapes import first

torch = None  # NOTE: [Lazy torch] in registry.py
F = None

_ACTIVATIONS = ("sigmoid", "tanh", "relu", "identity")


def _activation_name(a, key) -> str:
    name = a[key]
    if name not in _ACTIVATIONS:
        raise ValueError(f"{key} must be one of {sorted(_ACTIVATIONS)}. Received: {name!r}")
    return name


def _act(name, v):
    if name == "sigmoid":
        return torch.sigmoid(v)
    if name == "tanh":
        return torch.tanh(v)
    if name == "relu":
        return torch.relu(v)
    return v


def _act_grad(name, y):
    """The activation's derivative at the input that gave ``y`` (written with its output)."""
    if name == "sigmoid":
        return y * (1 - y)
    if name == "tanh":
        return 1 - y * y
    if name == "relu":
        return (y > 0).to(y.dtype)
    return torch.ones_like(y)


class _Batches:
    """The NOTE: [Batch order] layout of one LoD level (``reverse``: each sequence read backwards)."""

    def __init__(self, offsets, reverse: bool, device):
        lengths = lengths_of(offsets)
        self.order = sorted(range(len(lengths)), key=lambda s: -lengths[s])  # stable: ties keep their order
        sorted_lengths = [lengths[s] for s in self.order]
        steps = sorted_lengths[0] if sorted_lengths else 0
        self.sizes = [sum(1 for n in sorted_lengths if n > t) for t in range(steps)]
        self.starts = [0]
        for n in self.sizes:
            self.starts.append(self.starts[-1] + n)
        rows, prev = [], []
        for t, n in enumerate(self.sizes):
            for k in range(n):
                s = self.order[k]
                rows.append(offsets[s] + (lengths[s] - 1 - t if reverse else t))
                # the row before it in the same sequence: in the state of step t - 1, or the initial state
                prev.append(self.starts[t - 1] + k + len(lengths) if t else k)
        self.total = len(rows)
        self.rows = torch.tensor(rows, dtype=torch.int64, device=device)  # batch row -> input row
        self.prev = torch.tensor(prev, dtype=torch.int64, device=device)  # into cat([initial, states])
        self.order_t = torch.tensor(self.order, dtype=torch.int64, device=device)

    def gather(self, v):
        """Input rows in batch order."""
        return v.index_select(0, self.rows)

    def scatter(self, v):
        """Batch-order rows back in input order."""
        return torch.empty_like(v).index_copy_(0, self.rows, v)

    def previous(self, initial, states):
        """For each batch row, the state before it: ``initial`` (sequence order) at step 0."""
        return torch.cat([initial.index_select(0, self.order_t), states]).index_select(0, self.prev)

    def unsort(self, v):
        """Rows in sorted-sequence order back in the sequences' order."""
        return torch.empty_like(v).index_copy_(0, self.order_t, v)


def _initial(ins, slot, n, width, like):
    v = first(ins, slot)
    if v is None:
        return like.new_zeros((n, width))
    if tuple(v.shape) != (n, width):
        raise ValueError(f"{slot} must be [number of sequences, {width}] = [{n}, {width}]. Received: {list(v.shape)}")
    return v.to(like.dtype)


def _batches(x, op_name, reverse):
    return _Batches(_last_level(x, op_name, "Input(Input)"), reverse, x.device)


# -- lstm / lstmp ---------------------------------------------------------------------------------
def _lstm(ins, a):
    """fluid's lstm op and, with ProjWeight, its lstmp op (the recurrent state is the projection
    ``proj_activation(hidden @ ProjWeight)``, clipped to ``proj_clip``; the cell to ``cell_clip``).
    Gates in fluid's order: candidate, input, forget, output."""
    x, w, b = ins["Input"][0], ins["Weight"][0], ins["Bias"][0]
    proj = first(ins, "ProjWeight")
    bt = _batches(x, "LSTMPOp" if proj is not None else "LSTMOp", a["is_reverse"])
    d = w.shape[1] // 4
    gate, cell_act, cand_act = (
        _activation_name(a, k) for k in ("gate_activation", "cell_activation", "candidate_activation")
    )
    proj_act = _activation_name(a, "proj_activation") if proj is not None else None
    cell_clip, proj_clip = a.get("cell_clip", 0.0), a.get("proj_clip", 0.0)
    n_seq = len(bt.order)
    r0 = _initial(ins, "H0", n_seq, w.shape[0], x)
    c0 = _initial(ins, "C0", n_seq, d, x)
    bias = b.reshape(-1)
    xb = bt.gather(x) + bias[: 4 * d]
    peep = bias[4 * d : 7 * d] if a["use_peepholes"] else None
    w_if = peep[: 2 * d] if peep is not None else None
    r, c = r0.index_select(0, bt.order_t), c0.index_select(0, bt.order_t)
    cands, ifs, os, cs, hs, rs = [], [], [], [], [], []
    for t, n in enumerate(bt.sizes):
        lo = bt.starts[t]
        g = torch.addmm(xb[lo : lo + n], r[:n], w)
        cp = c[:n]
        g_if = g[:, d : 3 * d]
        if peep is not None:
            g_if = torch.addcmul(g_if, cp.repeat(1, 2), w_if)
        s_if = _act(gate, g_if)
        cand = _act(cand_act, g[:, :d])
        c = torch.addcmul(s_if[:, d:] * cp, s_if[:, :d], cand)
        if cell_clip > 0:
            c = c.clamp(-cell_clip, cell_clip)
        g_o = g[:, 3 * d :]
        if peep is not None:
            g_o = torch.addcmul(g_o, c, peep[2 * d :])
        o = _act(gate, g_o)
        h = o * _act(cell_act, c)
        r = h
        if proj is not None:
            r = _act(proj_act, h @ proj)
            if proj_clip > 0:
                r = r.clamp(-proj_clip, proj_clip)
            rs.append(r)
        cands.append(cand)
        ifs.append(s_if)
        os.append(o)
        cs.append(c)
        hs.append(h)
    lod = lod_of(x)
    if not bt.total:
        empty = x.new_zeros((0, d))
        result = {"Cell": [empty], "BatchGate": [x.new_zeros((0, 4 * d))], "BatchCellPreAct": [empty]}
        result["Hidden" if proj is None else "Projection"] = [x.new_zeros((0, w.shape[0]))]
        if proj is not None:
            result["BatchHidden"] = [empty]
        return result
    cell_b, hidden_b = torch.cat(cs), torch.cat(hs)
    gates_b = torch.cat([torch.cat(cands), torch.cat(ifs), torch.cat(os)], dim=1)
    result = {"Cell": [with_lod(bt.scatter(cell_b), lod)], "BatchGate": [gates_b], "BatchCellPreAct": [cell_b]}
    if proj is None:
        result["Hidden"] = [with_lod(bt.scatter(hidden_b), lod)]
    else:
        result["Projection"] = [with_lod(bt.scatter(torch.cat(rs)), lod)]
        result["BatchHidden"] = [hidden_b]
    return result


def _lstm_grad(ins, a):
    """lstm's backward pass from the forward's batch-order gates and cells (NOTE: [Batch order])."""
    x, w, b = ins["Input"][0], ins["Weight"][0], ins["Bias"][0]
    bt = _batches(x, "LSTMOp", a["is_reverse"])
    d = w.shape[1] // 4
    gate, cell_act, cand_act = (
        _activation_name(a, k) for k in ("gate_activation", "cell_activation", "candidate_activation")
    )
    cell_clip = a.get("cell_clip", 0.0)
    n_seq = len(bt.order)
    h0 = _initial(ins, "H0", n_seq, d, x)
    c0 = _initial(ins, "C0", n_seq, d, x)
    bias = b.reshape(-1)
    peep = bias[4 * d : 7 * d] if a["use_peepholes"] else None
    gates, cell = ins["BatchGate"][0], ins["BatchCellPreAct"][0]
    cand, s_i, s_f, s_o = gates.split(d, dim=1)
    dhidden = first(ins, "Hidden@GRAD")
    dh_b = bt.gather(dhidden.reshape(-1, d).to(x.dtype)) if dhidden is not None else x.new_zeros((bt.total, d))
    dcell = first(ins, "Cell@GRAD")
    dc_b = bt.gather(dcell.reshape(-1, d).to(x.dtype)) if dcell is not None else None
    c_prev = bt.previous(c0, cell)
    tc = _act(cell_act, cell)
    # per row, what dh and dc turn into (NOTE: [Batch order]): dgo = dh * a_o, dc += dh * b_c,
    # [dgc, dgi, dgf] = dc * cif
    a_o = tc * _act_grad(gate, s_o)
    b_c = s_o * _act_grad(cell_act, tc)
    cif = torch.cat([s_i * _act_grad(cand_act, cand), cand * _act_grad(gate, s_i), c_prev * _act_grad(gate, s_f)], 1)
    if cell_clip > 0:
        b_c = b_c * (cell.abs() < cell_clip)
    w_t = w.t()
    dgates = torch.empty_like(gates)
    dh_run = x.new_zeros((n_seq, d))
    dc_run = x.new_zeros((n_seq, d))
    for t in range(len(bt.sizes) - 1, -1, -1):
        n, lo = bt.sizes[t], bt.starts[t]
        hi = lo + n
        dh = dh_b[lo:hi] + dh_run[:n]
        dc = torch.addcmul(dc_run[:n], dh, b_c[lo:hi])
        if dc_b is not None:
            dc = dc + dc_b[lo:hi]
        dgo = dh * a_o[lo:hi]
        if peep is not None:
            dc = torch.addcmul(dc, dgo, peep[2 * d :])
        dg3 = dc.repeat(1, 3) * cif[lo:hi]
        dc_prev = dc * s_f[lo:hi]
        if peep is not None:
            dc_prev = torch.addcmul(dc_prev, dg3[:, d : 2 * d], peep[:d])
            dc_prev = torch.addcmul(dc_prev, dg3[:, 2 * d :], peep[d : 2 * d])
        dc_run[:n] = dc_prev
        block = dgates[lo:hi]
        block[:, : 3 * d] = dg3
        block[:, 3 * d :] = dgo
        torch.mm(block, w_t, out=dh_run[:n])
    result = {"Input@GRAD": [bt.scatter(dgates)]}
    h_prev = bt.previous(h0, ins["Hidden"][0].reshape(-1, d).index_select(0, bt.rows))
    result["Weight@GRAD"] = [h_prev.t() @ dgates]
    dbias = [dgates.sum(0)]
    if peep is not None:
        dbias += [
            (dgates[:, d : 2 * d] * c_prev).sum(0),
            (dgates[:, 2 * d : 3 * d] * c_prev).sum(0),
            (dgates[:, 3 * d :] * cell).sum(0),
        ]
    result["Bias@GRAD"] = [torch.cat(dbias).reshape(b.shape)]
    if first(ins, "H0") is not None:
        result["H0@GRAD"] = [bt.unsort(dh_run)]
    if first(ins, "C0") is not None:
        result["C0@GRAD"] = [bt.unsort(dc_run)]
    return result


def _lstm_infer(ins, a):
    x, w, proj = first(ins, "Input"), first(ins, "Weight"), first(ins, "ProjWeight")
    size = w.shape[1] // 4
    if x.shape[1] >= 0 and x.shape[1] != 4 * size:
        raise ValueError(
            f"The second dimension of Input(Input) of {'lstmp' if proj is not None else 'lstm'} must be 4 * the "
            f"hidden size ({4 * size}). Received: '{x.name}' of shape {list(x.shape)}"
        )
    rows = (x.shape[0], size)
    result = {
        "Cell": [(rows, x.dtype)],
        "BatchGate": [((x.shape[0], 4 * size), x.dtype)],
        "BatchCellPreAct": [(rows, x.dtype)],
    }
    if proj is None:
        result["Hidden"] = [(rows, x.dtype)]
    else:
        result["Projection"] = [((x.shape[0], proj.shape[1]), x.dtype)]
        result["BatchHidden"] = [(rows, x.dtype)]
    return result


_LSTM_ATTRS = {
    "use_peepholes": True,
    "is_reverse": False,
    "gate_activation": "sigmoid",
    "cell_activation": "tanh",
    "candidate_activation": "tanh",
}

register(
    OpDef(
        "lstm",
        ("Input", "H0", "C0", "Weight", "Bias"),
        ("Hidden", "Cell", "BatchGate", "BatchCellPreAct"),
        _LSTM_ATTRS,
        _lstm_infer,
        _lstm,
        grad=GradDef(
            ("Input", "H0", "C0", "Weight", "Bias", "Hidden", "BatchGate", "BatchCellPreAct"),
            out_grads=("Hidden", "Cell"),
            in_grads=("Input", "H0", "C0", "Weight", "Bias"),
            kernel=_lstm_grad,
        ),
    )
)
register(
    OpDef(
        "lstmp",
        ("Input", "H0", "C0", "Weight", "ProjWeight", "Bias"),
        ("Projection", "Cell", "BatchGate", "BatchCellPreAct", "BatchHidden"),
        {**_LSTM_ATTRS, "proj_activation": "tanh", "cell_clip": 0.0, "proj_clip": 0.0},
        _lstm_infer,
        _lstm,
        grad=GradDef(out_grads=("Projection", "Cell"), in_grads=("Input", "H0", "C0", "Weight", "ProjWeight", "Bias")),
    )
)


# -- gru ------------------------------------------------------------------------------------------
def _gru_weights(w):
    """The weight's memory holds the [size, 2 * size] update/reset weights, then the [size, size]
    candidate's."""
    size = w.shape[0]
    flat = w.reshape(-1)
    return flat[: 2 * size * size].reshape(size, 2 * size), flat[2 * size * size :].reshape(size, size)


def _gru(ins, a):
    x, w = ins["Input"][0], ins["Weight"][0]
    b = first(ins, "Bias")
    bt = _batches(x, "GRUOp", a["is_reverse"])
    d = w.shape[0]
    gate, act = _activation_name(a, "gate_activation"), _activation_name(a, "activation")
    w_ur, w_c = _gru_weights(w)
    xb = bt.gather(x)
    if b is not None:
        xb = xb + b.reshape(1, -1)
    n_seq = len(bt.order)
    h = _initial(ins, "H0", n_seq, d, x).index_select(0, bt.order_t)
    hs, urs, cands, resets = [], [], [], []
    for t, n in enumerate(bt.sizes):
        lo = bt.starts[t]
        hp = h[:n]
        ur = _act(gate, torch.addmm(xb[lo : lo + n, : 2 * d], hp, w_ur))
        u = ur[:, :d]
        reset_h = ur[:, d:] * hp
        cand = _act(act, torch.addmm(xb[lo : lo + n, 2 * d :], reset_h, w_c))
        if a["origin_mode"]:
            h = torch.addcmul(cand, u, hp - cand)
        else:
            h = torch.addcmul(hp, u, cand - hp)
        hs.append(h)
        urs.append(ur)
        cands.append(cand)
        resets.append(reset_h)
    if not bt.total:
        empty = x.new_zeros((0, d))
        return {"Hidden": [empty], "BatchGate": [x.new_zeros((0, 3 * d))], "BatchResetHiddenPrev": [empty],
                "BatchHidden": [empty]}  # fmt: skip
    hidden_b = torch.cat(hs)
    return {
        "Hidden": [with_lod(bt.scatter(hidden_b), lod_of(x))],
        "BatchGate": [torch.cat([torch.cat(urs), torch.cat(cands)], dim=1)],
        "BatchResetHiddenPrev": [torch.cat(resets)],
        "BatchHidden": [hidden_b],
    }


def _gru_grad(ins, a):
    """gru's backward pass from the forward's batch-order gates (NOTE: [Batch order])."""
    x, w = ins["Input"][0], ins["Weight"][0]
    b = first(ins, "Bias")
    bt = _batches(x, "GRUOp", a["is_reverse"])
    d = w.shape[0]
    gate, act = _activation_name(a, "gate_activation"), _activation_name(a, "activation")
    w_ur, w_c = _gru_weights(w)
    n_seq = len(bt.order)
    h0 = _initial(ins, "H0", n_seq, d, x)
    gates, reset_h, hidden_b = ins["BatchGate"][0], ins["BatchResetHiddenPrev"][0], ins["BatchHidden"][0]
    u, r, cand = gates.split(d, dim=1)
    h_prev = bt.previous(h0, hidden_b)
    dh_b = bt.gather(ins["Hidden@GRAD"][0].reshape(-1, d).to(x.dtype))
    # h = h_prev + u * (cand - h_prev) (origin_mode: cand + u * (h_prev - cand)), per row:
    # dgu = dh * a_u, dgc = dh * a_c, dh_prev gets dh * keep directly
    if a["origin_mode"]:
        a_u, a_c, keep = (h_prev - cand) * _act_grad(gate, u), (1 - u) * _act_grad(act, cand), u
    else:
        a_u, a_c, keep = (cand - h_prev) * _act_grad(gate, u), u * _act_grad(act, cand), 1 - u
    a_r = h_prev * _act_grad(gate, r)
    w_ur_t, w_c_t = w_ur.t(), w_c.t()
    dgates = torch.empty_like(gates)
    dh_run = x.new_zeros((n_seq, d))
    for t in range(len(bt.sizes) - 1, -1, -1):
        n, lo = bt.sizes[t], bt.starts[t]
        hi = lo + n
        dh = dh_b[lo:hi] + dh_run[:n]
        dgc = dh * a_c[lo:hi]
        d_reset = dgc @ w_c_t
        block = dgates[lo:hi]
        block[:, :d] = dh * a_u[lo:hi]
        block[:, d : 2 * d] = d_reset * a_r[lo:hi]
        block[:, 2 * d :] = dgc
        dh_prev = torch.addcmul(dh * keep[lo:hi], d_reset, r[lo:hi])
        dh_run[:n] = torch.addmm(dh_prev, block[:, : 2 * d], w_ur_t)
    result = {"Input@GRAD": [bt.scatter(dgates)]}
    dw_ur = h_prev.t() @ dgates[:, : 2 * d]
    dw_c = reset_h.t() @ dgates[:, 2 * d :]
    result["Weight@GRAD"] = [torch.cat([dw_ur.reshape(-1), dw_c.reshape(-1)]).reshape(w.shape)]
    if b is not None:
        result["Bias@GRAD"] = [dgates.sum(0).reshape(b.shape)]
    if first(ins, "H0") is not None:
        result["H0@GRAD"] = [bt.unsort(dh_run)]
    return result


def _gru_infer(ins, a):
    x, w = first(ins, "Input"), first(ins, "Weight")
    size = w.shape[0]
    if x.shape[1] >= 0 and x.shape[1] != 3 * size:
        raise ValueError(
            f"The second dimension of Input(Input) of gru must be 3 * the hidden size ({3 * size}). "
            f"Received: '{x.name}' of shape {list(x.shape)}"
        )
    rows = (x.shape[0], size)
    return {
        "Hidden": [(rows, x.dtype)],
        "BatchGate": [((x.shape[0], 3 * size), x.dtype)],
        "BatchResetHiddenPrev": [(rows, x.dtype)],
        "BatchHidden": [(rows, x.dtype)],
    }


register(
    OpDef(
        "gru",
        ("Input", "H0", "Weight", "Bias"),
        ("Hidden", "BatchGate", "BatchResetHiddenPrev", "BatchHidden"),
        {"activation": "tanh", "gate_activation": "sigmoid", "is_reverse": False, "origin_mode": False},
        _gru_infer,
        _gru,
        grad=GradDef(
            ("Input", "H0", "Weight", "Bias", "BatchGate", "BatchResetHiddenPrev", "BatchHidden"),
            out_grads=("Hidden",),
            in_grads=("Input", "H0", "Weight", "Bias"),
            kernel=_gru_grad,
        ),
    )
)
