"""fluid 1.8's recurrent ops: over LoD sequences lstm (``dynamic_lstm``), lstmp (``dynamic_lstmp``)
and gru (``dynamic_gru``), with hand-written backward passes for lstm and gru; the single steps
lstm_unit and gru_unit; and cudnn_lstm (``fluid.layers.lstm``: stacked LSTMs over [seq_len, batch, ...]).

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

import functools

import numpy as np

from fluidcompat_ops.registry import GradDef, OpDef, register
from fluidcompat_ops.sequence import _last_level, lengths_of, lod_of, with_lod
from fluidcompat_ops.shapes import _x, first

torch = None  # NOTE: [Lazy torch] in registry.py
F = None

_ACTIVATIONS = ("sigmoid", "tanh", "relu", "identity")


def _activation_name(a, key) -> str:
    name = a[key]
    if name not in _ACTIVATIONS:
        raise ValueError(f"{key} must be one of {sorted(_ACTIVATIONS)}. Received: {name!r}")
    return name


# NOTE: [Tanh by sigmoid]
# fluid's recurrent kernels compute tanh as 2 * sigmoid(2 v) - 1 (math/detail/activation_functions.h).
# The backward passes here do so where they take tanh of every row at once: torch's CPU tanh takes
# about ten times sigmoid's time (2.3 ns an element against 0.23 here; [1100, 128]: 300 us against
# 60 us for the formula). Inside the time loops, on a step's few rows, the formula's three extra ops
# cost what they save, and torch's tanh stays.
def _tanh_rows(v):
    return torch.sigmoid(v * 2).mul_(2).sub_(1)


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
    """The NOTE: [Batch order] layout of sequences that start at input rows ``starts`` and are
    ``lengths`` rows long (``reverse``: each sequence read backwards)."""

    def __init__(self, starts, lengths, reverse: bool, device):
        lengths = np.asarray(lengths, dtype=np.int64)
        n = len(lengths)
        order = np.argsort(-lengths, kind="stable")  # stable: ties keep their order
        sorted_lengths = lengths[order]
        steps = int(sorted_lengths[0]) if n else 0
        sizes = (sorted_lengths[None, :] > np.arange(steps)[:, None]).sum(1)  # sequences longer than t
        starts_b = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        t = np.repeat(np.arange(steps), sizes)  # each batch row's step ...
        k = np.arange(len(t)) - starts_b[t]  # ... and place in it
        seq = order[k]
        rows = np.asarray(starts, dtype=np.int64)[seq] + (lengths[seq] - 1 - t if reverse else t)  # -> input row
        ends = int(sizes[0]) if steps else 0  # the sequences that have rows, longest first
        last = starts_b[sorted_lengths[:ends] - 1] + np.arange(ends)
        self.order = order.tolist()
        self.sizes = sizes.tolist()
        self.starts = starts_b.tolist()
        self.total = len(rows)
        self.rows = torch.from_numpy(rows).to(device)  # batch row -> input row
        self.order_t = torch.from_numpy(order.astype(np.int64)).to(device)
        self.seq = torch.from_numpy(seq).to(device)  # batch row -> its sequence (input order)
        self.last = torch.from_numpy(last).to(device)  # each sequence with rows (sorted) -> its last batch row
        # the batch row before each row of steps 1.. (rows of step 0: 0, replaced by the initial
        # states), and the input row it was; where the sequences cover rows 0 .. total - 1 (LoD
        # input), each input row's batch row: an index_select puts rows back, about five times
        # faster than index_copy_ on the CPU
        before = np.where(t > 0, starts_b[np.maximum(t - 1, 0)] + k, 0)
        self.before = torch.from_numpy(before).to(device)
        self.before_rows = torch.from_numpy(rows[before] if len(rows) else rows).to(device)
        covers = len(rows) and rows.min() == 0 and rows.max() == len(rows) - 1
        self.inverse = torch.from_numpy(np.argsort(rows, kind="stable")).to(device) if covers else None

    def gather(self, v):
        """Input rows in batch order."""
        return v.index_select(0, self.rows)

    def scatter(self, v):
        """Batch-order rows back in input order."""
        if self.inverse is not None and v.shape[0] == self.total:
            return v.index_select(0, self.inverse)
        return torch.empty_like(v).index_copy_(0, self.rows, v)

    def previous(self, initial, states, input_order=False):
        """For each batch row, the state before it: ``states`` (batch order, or the input's rows with
        ``input_order``) of the step before, ``initial`` (sequence order) at step 0."""
        out = states.index_select(0, self.before_rows if input_order else self.before)
        n0 = self.sizes[0] if self.sizes else 0
        out[:n0] = initial.index_select(0, self.order_t[:n0])
        return out

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
    return _layout(tuple(_last_level(x, op_name, "Input(Input)")), reverse, x.device)


def _layout(offsets: tuple, reverse: bool, device) -> _Batches:
    return batch_layout(tuple(offsets[:-1]), tuple(lengths_of(offsets)), reverse, device)


@functools.lru_cache(maxsize=16)
def batch_layout(starts: tuple, lengths: tuple, reverse: bool, device) -> _Batches:
    """One layout of sequences, made once for the forward op and its grad op (and the other layers
    of a stacked LSTM over the same sequences, or a CRF over them): it is only read."""
    return _Batches(starts, lengths, reverse, device)


# -- lstm / lstmp ---------------------------------------------------------------------------------
def _lstm(ins, a):
    """fluid's lstm op and, with ProjWeight, its lstmp op (the recurrent state is the projection
    ``proj_activation(hidden @ ProjWeight)``, clipped to ``proj_clip``; the cell to ``cell_clip``).
    Gates in fluid's order: candidate, input, forget, output. NOTE: [Two LSTM loops]"""
    if first(ins, "ProjWeight") is None and not torch.is_grad_enabled():
        return _lstm_in_place(ins, a)
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


# NOTE: [Two LSTM loops]
# A time step of a small LSTM (hidden 32) costs a dozen torch calls of a few microseconds each, and
# their count is the time. Where no autograd records (the executor, dygraph's grad-kernel ops), the
# loops write into the batch-order buffers they return: one addmm onto the step's gate rows, the
# activations in place, the cell and hidden state with ``out=``, and no lists to concatenate at
# the end (forward about 17% faster, backward about 26%). Where autograd records (lstmp's gradient
# is its forward differentiated; a gradient of a gradient), the loops below them make new tensors.
def _act_in_place(name, v):
    if name == "sigmoid":
        v.sigmoid_()
    elif name == "tanh":
        v.tanh_()
    elif name == "relu":
        v.relu_()
    return v


def _lstm_operands(ins, a):
    """lstm's input, weight, bias, batch layout, width, activations, cell clip and sequence count."""
    x, w, b = ins["Input"][0], ins["Weight"][0], ins["Bias"][0]
    bt = _batches(x, "LSTMOp", a["is_reverse"])
    acts = tuple(_activation_name(a, k) for k in ("gate_activation", "cell_activation", "candidate_activation"))
    return x, w, b, bt, w.shape[1] // 4, acts, a.get("cell_clip", 0.0), len(bt.order)


def _lstm_in_place(ins, a):
    """lstm without autograd, into its output buffers (NOTE: [Two LSTM loops]). The gates' columns are
    viewed once; a step slices each view, and reads the state before it from the rows of the step
    before (the initial state at step 0)."""
    x, w, b, bt, d, (gate, cell_act, cand_act), cell_clip, n_seq = _lstm_operands(ins, a)
    h0 = _initial(ins, "H0", n_seq, d, x).index_select(0, bt.order_t)
    c0 = _initial(ins, "C0", n_seq, d, x).index_select(0, bt.order_t)
    bias = b.reshape(-1)
    gates_b = torch.add(bt.gather(x), bias[: 4 * d])  # each step adds its recurrent part in place
    cell_b, hidden_b = x.new_empty((bt.total, d)), x.new_empty((bt.total, d))
    g4 = gates_b.view(-1, 4, d)
    cands, ins_, forgets, outs = g4.unbind(1)  # candidate, input, forget, output
    in_forget = g4[:, 1:3]
    peep = bias[4 * d : 7 * d] if a["use_peepholes"] else None
    if peep is not None:
        w_if, w_o = peep[: 2 * d].view(2, d), peep[2 * d :]
    starts = bt.starts
    for t, n in enumerate(bt.sizes):
        lo, hi = starts[t], starts[t] + n
        if t:
            before = starts[t - 1]
            hp, cp = hidden_b[before : before + n], cell_b[before : before + n]
        else:
            hp, cp = h0[:n], c0[:n]
        gates_b[lo:hi].addmm_(hp, w)
        g_if = in_forget[lo:hi]
        if peep is not None:
            g_if.addcmul_(cp.unsqueeze(1), w_if)
        _act_in_place(gate, g_if)
        cand = _act_in_place(cand_act, cands[lo:hi])
        c = cell_b[lo:hi]
        torch.mul(forgets[lo:hi], cp, out=c)
        c.addcmul_(ins_[lo:hi], cand)
        if cell_clip > 0:
            c.clamp_(-cell_clip, cell_clip)
        g_o = outs[lo:hi]
        if peep is not None:
            g_o.addcmul_(c, w_o)
        _act_in_place(gate, g_o)
        torch.mul(g_o, _act(cell_act, c), out=hidden_b[lo:hi])
    lod = lod_of(x)
    return {
        "Hidden": [with_lod(bt.scatter(hidden_b), lod)],
        "Cell": [with_lod(bt.scatter(cell_b), lod)],
        "BatchGate": [gates_b],
        "BatchCellPreAct": [cell_b],
    }


def _lstm_grad(ins, a):
    """lstm's backward pass from the forward's batch-order gates and cells (NOTE: [Batch order])."""
    x, w, b, bt, d, (gate, cell_act, cand_act), cell_clip, n_seq = _lstm_operands(ins, a)
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
    tc = _tanh_rows(cell) if cell_act == "tanh" and not torch.is_grad_enabled() else _act(cell_act, cell)
    # per row, what dh and dc turn into (NOTE: [Batch order]): dgo = dh * a_o, dc += dh * b_c,
    # [dgc, dgi, dgf] = dc * cif
    a_o = tc * _act_grad(gate, s_o)
    b_c = s_o * _act_grad(cell_act, tc)
    cif = torch.cat([s_i * _act_grad(cand_act, cand), cand * _act_grad(gate, s_i), c_prev * _act_grad(gate, s_f)], 1)
    if cell_clip > 0:
        b_c = b_c * (cell.abs() < cell_clip)
    w_t = w.t()
    dgates = torch.empty_like(gates)
    if torch.is_grad_enabled():
        dh_run = x.new_zeros((n_seq, d))
        dc_run = x.new_zeros((n_seq, d))
        _lstm_grad_steps(bt, dgates, dh_run, dc_run, dh_b, dc_b, a_o, b_c, cif, s_f, peep, w_t)
    else:
        dh_run, dc_run = _lstm_grad_steps_in_place(bt, dgates, dh_b, dc_b, a_o, b_c, cif, s_f, peep, w_t, n_seq)
    result = {"Input@GRAD": [bt.scatter(dgates)]}
    h_prev = bt.previous(h0, ins["Hidden"][0].reshape(-1, d), input_order=True)
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


def _lstm_grad_steps(bt, dgates, dh_run, dc_run, dh_b, dc_b, a_o, b_c, cif, s_f, peep, w_t):
    """lstm_grad's loop where autograd records (NOTE: [Two LSTM loops]): new tensors each step."""
    d = dh_run.shape[1]
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


def _lstm_grad_steps_in_place(bt, dgates, dh_b, dc_b, a_o, b_c, cif, s_f, peep, w_t, n_seq):
    """lstm_grad's loop without autograd, into ``dgates`` (NOTE: [Two LSTM loops]). ``dh_b`` / ``dc_b``
    hold each batch row's gradient at its hidden state / cell from outside (used up, or None): each
    step adds what it passes back into the rows of the step before (an addmm, an addcmul), so a step
    is four small ops and a matmul. What a row's cell gradient becomes is folded per row before the
    loop: dc += dh * (b_c + a_o * peephole_o), and the previous cell's share of it is dc * (forget gate
    + the input and forget gates' derivatives times their peepholes). Returns the gradient at the
    initial hidden states and cells, in sorted-sequence order."""
    d = a_o.shape[1]
    dg4 = dgates.view(-1, 4, d)
    cif3 = cif.view(-1, 3, d)
    to_cell, to_prev = b_c, s_f
    if peep is not None:
        to_cell = torch.addcmul(b_c, a_o, peep[2 * d :])
        to_prev = torch.addcmul(torch.addcmul(s_f, cif3[:, 1], peep[:d]), cif3[:, 2], peep[d : 2 * d])
    dc_b = dc_b if dc_b is not None else torch.zeros_like(a_o)
    sizes, starts = bt.sizes, bt.starts
    d_cif, d_out = dg4[:, :3], dg4[:, 3]
    for t in range(len(sizes) - 1, -1, -1):
        n, lo = sizes[t], starts[t]
        hi = lo + n
        dh, dc = dh_b[lo:hi], dc_b[lo:hi]
        torch.mul(dh, a_o[lo:hi], out=d_out[lo:hi])
        dc.addcmul_(dh, to_cell[lo:hi])
        torch.mul(dc.unsqueeze(1), cif3[lo:hi], out=d_cif[lo:hi])
        if t:
            before = starts[t - 1]
            dc_b[before : before + n].addcmul_(dc, to_prev[lo:hi])
            dh_b[before : before + n].addmm_(dgates[lo:hi], w_t)
    n0 = sizes[0] if sizes else 0
    dh0, dc0 = a_o.new_zeros((n_seq, d)), a_o.new_zeros((n_seq, d))
    torch.mm(dgates[:n0], w_t, out=dh0[:n0])
    torch.mul(dc_b[:n0], to_prev[:n0], out=dc0[:n0])
    return dh0, dc0


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


def _gru_inputs(ins, a):
    """What gru and its grad read first: the input, the bias (or None), the batch order, the hidden
    size, the gate and candidate activations' names and the two weights (_gru_weights)."""
    x, w = ins["Input"][0], ins["Weight"][0]
    bt = _batches(x, "GRUOp", a["is_reverse"])
    gate, act = _activation_name(a, "gate_activation"), _activation_name(a, "activation")
    return (x, first(ins, "Bias"), bt, w.shape[0], gate, act, *_gru_weights(w))


def _gru(ins, a):
    if not torch.is_grad_enabled():
        return _gru_in_place(ins, a)
    x, b, bt, d, gate, act, w_ur, w_c = _gru_inputs(ins, a)
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


def _gru_in_place(ins, a):
    """gru without autograd, into its output buffers (NOTE: [Two LSTM loops]): each step adds its
    recurrent parts onto the gate columns of its rows and activates them in place."""
    x, b, bt, d, gate, act, w_ur, w_c = _gru_inputs(ins, a)
    gates_b = bt.gather(x) if b is None else torch.add(bt.gather(x), b.reshape(1, -1))
    h0 = _initial(ins, "H0", len(bt.order), d, x).index_select(0, bt.order_t)
    reset_b, hidden_b = x.new_empty((bt.total, d)), x.new_empty((bt.total, d))
    updates, resets, cands = gates_b[:, :d], gates_b[:, d : 2 * d], gates_b[:, 2 * d :]
    both = gates_b[:, : 2 * d]
    starts = bt.starts
    for t, n in enumerate(bt.sizes):
        lo, hi = starts[t], starts[t] + n
        hp = hidden_b[starts[t - 1] : starts[t - 1] + n] if t else h0[:n]
        ur = both[lo:hi]
        _act_in_place(gate, ur.addmm_(hp, w_ur))
        reset_h = reset_b[lo:hi]
        torch.mul(resets[lo:hi], hp, out=reset_h)
        cand = _act_in_place(act, cands[lo:hi].addmm_(reset_h, w_c))
        h = hidden_b[lo:hi]
        if a["origin_mode"]:  # cand + u * (hp - cand)
            torch.addcmul(cand, updates[lo:hi], hp - cand, out=h)
        else:  # hp + u * (cand - hp)
            torch.addcmul(hp, updates[lo:hi], cand - hp, out=h)
    return {
        "Hidden": [with_lod(bt.scatter(hidden_b), lod_of(x))],
        "BatchGate": [gates_b],
        "BatchResetHiddenPrev": [reset_b],
        "BatchHidden": [hidden_b],
    }


def _gru_grad(ins, a):
    """gru's backward pass from the forward's batch-order gates (NOTE: [Batch order])."""
    x, b, bt, d, gate, act, w_ur, w_c = _gru_inputs(ins, a)
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
    if torch.is_grad_enabled():
        dh_run = _gru_grad_steps(bt, dgates, dh_b, a_u, a_c, a_r, keep, r, w_ur_t, w_c_t, n_seq)
    else:
        dh_run = _gru_grad_steps_in_place(bt, dgates, dh_b, a_u, a_c, a_r, keep, r, w_ur_t, w_c_t, n_seq)
    result = {"Input@GRAD": [bt.scatter(dgates)]}
    dw_ur = h_prev.t() @ dgates[:, : 2 * d]
    dw_c = reset_h.t() @ dgates[:, 2 * d :]
    result["Weight@GRAD"] = [torch.cat([dw_ur.reshape(-1), dw_c.reshape(-1)]).reshape(ins["Weight"][0].shape)]
    if b is not None:
        result["Bias@GRAD"] = [dgates.sum(0).reshape(b.shape)]
    if first(ins, "H0") is not None:
        result["H0@GRAD"] = [bt.unsort(dh_run)]
    return result


def _gru_grad_steps(bt, dgates, dh_b, a_u, a_c, a_r, keep, r, w_ur_t, w_c_t, n_seq):
    """gru_grad's loop where autograd records: new tensors each step. Returns the gradient at the
    initial states (sorted-sequence order)."""
    d = a_u.shape[1]
    dh_run = a_u.new_zeros((n_seq, d))
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
    return dh_run


def _gru_grad_steps_in_place(bt, dgates, dh_b, a_u, a_c, a_r, keep, r, w_ur_t, w_c_t, n_seq):
    """gru_grad's loop without autograd, into ``dgates`` (NOTE: [Two LSTM loops]): each step adds the
    gradient it passes back into the rows of the step before in ``dh_b`` (used up). Returns the
    gradient at the initial states (sorted-sequence order)."""
    d = a_u.shape[1]
    d_update, d_reset_gate, d_cand, d_both = dgates[:, :d], dgates[:, d : 2 * d], dgates[:, 2 * d :], dgates[:, : 2 * d]
    d_reset = a_u.new_empty((bt.sizes[0] if bt.sizes else 0, d))
    dh0 = a_u.new_zeros((n_seq, d))
    sizes, starts = bt.sizes, bt.starts
    for t in range(len(sizes) - 1, -1, -1):
        n, lo = sizes[t], starts[t]
        hi = lo + n
        dh, dr = dh_b[lo:hi], d_reset[:n]
        dgc = d_cand[lo:hi]
        torch.mul(dh, a_c[lo:hi], out=dgc)
        torch.mm(dgc, w_c_t, out=dr)
        torch.mul(dh, a_u[lo:hi], out=d_update[lo:hi])
        torch.mul(dr, a_r[lo:hi], out=d_reset_gate[lo:hi])
        into = dh_b[starts[t - 1] : starts[t - 1] + n] if t else dh0[:n]
        into.addcmul_(dh, keep[lo:hi]).addcmul_(dr, r[lo:hi]).addmm_(d_both[lo:hi], w_ur_t)
    return dh0


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


# -- lstm_unit -------------------------------------------------------------------------------------
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


# -- gru_unit --------------------------------------------------------------------------------------
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
