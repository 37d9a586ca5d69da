"""``fluid.layers.rnn`` with ``RNNCell``, ``LSTMCell`` and ``GRUCell``.

The cells compute as fluid 1.8.5's ``BasicLSTMUnit``/``BasicGRUUnit`` did and name their parameters
as they did (``LSTMCell/BasicLSTMUnit_0.w_0``, ``GRUCell/BasicGRUUnit_0.w_1``, ...), so checkpoints
carry over. ``rnn`` unrolls the cell over the time steps when the program is built if their number is
known then, and otherwise runs it in a ``while`` op over the steps (fluid 1.8.5 ran a ``recurrent``
op; the values are the same).
"""

from __future__ import annotations

import copy

from fluidcompat import unique_name
from fluidcompat.framework import Variable, _warn_at_user, layer, program_transaction
from fluidcompat.layer_helper import LayerHelper
from fluidcompat.layers import utils as nest
from fluidcompat.param_attr import ParamAttr

__all__ = ["RNNCell", "LSTMCell", "GRUCell", "rnn", "lstm", "lstm_unit", "gru_unit"]


def swap_batch_time(x):
    """``x`` with its first two dimensions swapped (batch-major <-> time-major)."""
    from fluidcompat.layers import tensor

    return tensor.transpose(x, [1, 0] + list(range(2, len(x.shape))))


class RNNCell:
    """One step of a recurrent network: ``call(inputs, states) -> (outputs, new_states)``."""

    def call(self, inputs, states, **kwargs):
        raise NotImplementedError("RNNCell must implement the call function.")

    def __call__(self, inputs, states, **kwargs):
        return self.call(inputs, states, **kwargs)

    def get_initial_states(self, batch_ref, shape=None, dtype=None, init_value=0, batch_dim_idx=0):
        """Zero (or ``init_value``) states shaped ``[batch] + state_shape``, the batch taken from
        ``batch_ref`` (its first leaf) at ``batch_dim_idx``."""
        from fluidcompat.layer_helper import layers

        ref = nest.flatten(batch_ref)[0]
        shape = self.state_shape if shape is None else shape
        dtype = self.state_dtype if dtype is None else dtype

        def walk(s, d):
            if all(isinstance(n, int) for n in s):  # one state's shape
                return layers.fill_constant_batch_size_like(
                    input=ref, shape=[-1] + list(s), dtype=d, value=init_value, input_dim_idx=batch_dim_idx
                )
            ds = d if isinstance(d, (list, tuple)) else [d] * len(s)
            return [walk(part, dd) for part, dd in zip(s, ds)]

        return walk(shape, dtype)

    @property
    def state_shape(self):
        raise NotImplementedError("Please add implementaion for `state_shape` in the used cell.")

    @property
    def state_dtype(self):
        return "float32"


class _Unit:
    """The parameters of one cell, created at its first step (when the input size is known), named
    as fluid's dygraph layers named theirs: ``{name}/{Unit}_N.w_K`` / ``.b_K``."""

    def __init__(self, name, unit, param_attr, bias_attr, dtype) -> None:
        self.full_name = unique_name.generate(f"{name}/{unit}")
        self.param_attr, self.bias_attr, self.dtype = param_attr, bias_attr, dtype
        self.helper = LayerHelper(unit)

    def weight(self, shape, named_suffix=""):
        """A weight; ``named_suffix``: appended to the name the caller's attribute gives, if any
        (fluid's GRU unit: ``_gate`` / ``_candidate``)."""
        return self._create(self.param_attr, shape, "w", False, named_suffix)

    def bias(self, shape, named_suffix=""):
        return self._create(self.bias_attr, shape, "b", True, named_suffix)

    def _create(self, attr, shape, suffix, is_bias, named_suffix=""):
        attr = ParamAttr._to_attr(attr)
        if attr is not False and attr.name is None:
            attr = copy.copy(attr)  # the caller's attribute serves every weight of the cell
            attr.name = unique_name.generate(f"{self.full_name}.{suffix}")
        elif attr is not False and named_suffix:
            attr = copy.copy(attr)
            attr.name += named_suffix
        return self.helper.create_parameter(attr=attr, shape=shape, dtype=self.dtype, is_bias=is_bias)


class LSTMCell(RNNCell):
    """fluid 1.8.5's LSTM cell: gates ``i, j, f, o`` from ``[input, h] @ W + b``;
    ``c' = c * sigmoid(f + forget_bias) + sigmoid(i) * tanh(j)``, ``h' = tanh(c') * sigmoid(o)``."""

    def __init__(
        self,
        hidden_size,
        param_attr=None,
        bias_attr=None,
        gate_activation=None,
        activation=None,
        forget_bias=1.0,
        dtype="float32",
        name="LSTMCell",
    ) -> None:
        from fluidcompat.layer_helper import layers

        self.hidden_size = hidden_size
        self._unit = _Unit(name, "BasicLSTMUnit", param_attr, bias_attr, dtype)
        self._gate_activation = gate_activation or layers.sigmoid
        self._activation = activation or layers.tanh
        self._forget_bias = layers.fill_constant([1], dtype, forget_bias)
        self._forget_bias.stop_gradient = True
        self._weight = self._bias = None

    def call(self, inputs, states):
        from fluidcompat.layer_helper import layers as L

        pre_hidden, pre_cell = states
        if self._weight is None:
            size = inputs.shape[-1] + self.hidden_size
            self._weight = self._unit.weight([size, 4 * self.hidden_size])
            self._bias = self._unit.bias([4 * self.hidden_size])
        gates = L.elementwise_add(L.matmul(L.concat([inputs, pre_hidden], 1), self._weight), self._bias)
        i, j, f, o = L.split(gates, num_or_sections=4, dim=-1)
        new_cell = L.elementwise_add(
            L.elementwise_mul(pre_cell, self._gate_activation(L.elementwise_add(f, self._forget_bias))),
            L.elementwise_mul(self._gate_activation(i), self._activation(j)),
        )
        new_hidden = self._activation(new_cell) * self._gate_activation(o)
        return new_hidden, [new_hidden, new_cell]

    @property
    def state_shape(self):
        return [[self.hidden_size], [self.hidden_size]]


class GRUCell(RNNCell):
    """fluid 1.8.5's GRU cell: ``r, u`` from ``[input, h] @ W0 + b0``; candidate
    ``c = tanh([input, r * h] @ W1 + b1)``; ``h' = u * h + (1 - u) * c``."""

    def __init__(
        self, hidden_size, param_attr=None, bias_attr=None, gate_activation=None, activation=None, dtype="float32",
        name="GRUCell",
    ) -> None:  # fmt: skip
        from fluidcompat.layer_helper import layers

        self.hidden_size = hidden_size
        self._unit = _Unit(name, "BasicGRUUnit", param_attr, bias_attr, dtype)
        self._gate_activation = gate_activation or layers.sigmoid
        self._activation = activation or layers.tanh
        self._weights = None

    def call(self, inputs, states):
        from fluidcompat.layer_helper import layers as L

        pre_hidden = states
        if self._weights is None:
            size, h = inputs.shape[-1] + self.hidden_size, self.hidden_size
            gate_w, cand_w = self._unit.weight([size, 2 * h], "_gate"), self._unit.weight([size, h], "_candidate")
            gate_b, cand_b = self._unit.bias([2 * h], "_gate"), self._unit.bias([h], "_candidate")
            self._weights = (gate_w, cand_w, gate_b, cand_b)
        gate_w, cand_w, gate_b, cand_b = self._weights
        gates = L.matmul(L.concat([inputs, pre_hidden], 1), gate_w)
        gates = self._gate_activation(L.elementwise_add(gates, gate_b))
        r, u = L.split(gates, num_or_sections=2, dim=1)
        candidate = L.matmul(L.concat([inputs, r * pre_hidden], 1), cand_w)
        c = self._activation(L.elementwise_add(candidate, cand_b))
        new_hidden = u * pre_hidden + (1 - u) * c
        return new_hidden, new_hidden

    @property
    def state_shape(self):
        return [self.hidden_size]


@layer
def lstm(
    input, init_h, init_c, max_len, hidden_size, num_layers, dropout_prob=0.0, is_bidirec=False, is_test=False,
    name=None, default_initializer=None, seed=-1,
):  # fmt: skip
    """A multi-layer LSTM over a time-major ``input`` [seq_len, batch, input_size] (fluid 1.8's
    cuDNN LSTM, op ``cudnn_lstm``; here on any device). ``init_h`` / ``init_c``: [num_layers *
    directions, batch, hidden_size]. All weights are one flat parameter in cuDNN's order (see
    ``fluidcompat_ops.recurrent.cudnn_lstm_weight_size``). ``dropout_prob`` applies between layers.
    Returns (out [seq_len, batch, hidden_size * directions], last_h, last_c)."""
    from fluidcompat.dtypes import VarType, np_name
    from fluidcompat.layer_helper import check_dtype, check_variable
    from fluidcompat_ops.recurrent import cudnn_lstm_weight_size

    for value, arg in ((input, "input"), (init_h, "init_h"), (init_c, "init_c")):
        check_variable(value, arg, "lstm")
        check_dtype(value.dtype, arg, ["float32", "float64"], "lstm")
    for value, arg in ((max_len, "max_len"), (hidden_size, "hidden_size"), (num_layers, "num_layers")):
        if not isinstance(value, int) or isinstance(value, bool):
            raise TypeError(f"The type of '{arg}' in lstm must be <class 'int'>, but received {type(value)}. ")
    for value, arg in ((max_len, "max_len"), (hidden_size, "hidden_size"), (num_layers, "num_layers")):
        if value <= 0:
            raise ValueError(f"lstm: {arg} must be positive. Received {value}")
    if len(input.shape) != 3:
        raise ValueError(
            f"lstm: input '{input.name}' must be 3-D [seq_len, batch, input_size]. Received {list(input.shape)}"
        )
    if not 0.0 <= dropout_prob < 1.0:
        raise ValueError(f"lstm: dropout_prob must be in [0, 1). Received {dropout_prob}")
    helper = LayerHelper("cudnn_lstm", name=name)
    dtype = np_name(input.dtype)
    input_size = input.shape[-1]
    weight = helper.create_parameter(
        attr=None,
        shape=[cudnn_lstm_weight_size(input_size, hidden_size, num_layers, is_bidirec)],
        dtype=dtype,
        default_initializer=default_initializer,
    )
    out = helper.create_variable_for_type_inference(dtype)
    last_h = helper.create_variable_for_type_inference(dtype)
    last_c = helper.create_variable_for_type_inference(dtype)
    cache = helper.create_variable(persistable=True, type=VarType.RAW, stop_gradient=True)
    helper.append_op(
        type="cudnn_lstm",
        inputs={"Input": [input], "InitH": [init_h], "InitC": [init_c], "W": [weight], "Cache": [cache]},
        outputs={"Out": [out], "last_h": [last_h], "last_c": [last_c]},
        attrs={
            "max_len": max_len,
            "is_bidirec": bool(is_bidirec),
            "input_size": input_size,
            "hidden_size": hidden_size,
            "num_layers": num_layers,
            "is_test": bool(is_test),
            "dropout_prob": float(dropout_prob),
            "seed": int(seed),
        },
    )
    return out, last_h, last_c


@layer
def lstm_unit(x_t, hidden_t_prev, cell_t_prev, forget_bias=0.0, param_attr=None, bias_attr=None, name=None):
    """One LSTM step as fluid 1.8.5 built it: ``fc([x_t, h_prev], 4 * D)`` (gates i, f, o, g) and an
    ``lstm_unit`` op. Returns (hidden, cell)."""
    from fluidcompat.layer_helper import layers as L

    for v, what in ((x_t, "x_t"), (hidden_t_prev, "hidden_t_prev"), (cell_t_prev, "cell_t_prev")):
        if len(v.shape) != 2:
            raise ValueError(f"Rank of {what} must be 2. Received: {what} with shape {list(v.shape)}")
    batch = [v.shape[0] for v in (x_t, hidden_t_prev, cell_t_prev)]
    if len({b for b in batch if b >= 0}) > 1:
        raise ValueError(
            f"The 1st dimensions of x_t, hidden_t_prev and cell_t_prev must be the same. Received: {batch}"
        )
    if hidden_t_prev.shape[1] != cell_t_prev.shape[1]:
        raise ValueError(
            "The 2nd dimensions of hidden_t_prev and cell_t_prev must be the same. Received: "
            f"{hidden_t_prev.shape[1]} and {cell_t_prev.shape[1]}"
        )
    size = cell_t_prev.shape[1]
    gates = L.fc(L.concat([x_t, hidden_t_prev], axis=1), 4 * size, param_attr=param_attr, bias_attr=bias_attr)
    helper = LayerHelper("lstm_unit", name=name)
    c = helper.create_variable_for_type_inference(x_t.dtype)
    h = helper.create_variable_for_type_inference(x_t.dtype)
    helper.append_op(
        type="lstm_unit",
        inputs={"X": [gates], "C_prev": [cell_t_prev]},
        outputs={"C": [c], "H": [h]},
        attrs={"forget_bias": float(forget_bias)},
    )
    return h, c


@layer
def gru_unit(input, hidden, size, param_attr=None, bias_attr=None, activation="tanh", gate_activation="sigmoid",
             origin_mode=False):  # fmt: skip
    """One GRU step over ``input``, x's projection of width ``size`` (3 * D): op ``gru_unit`` with a
    [D, 3D] weight and a [1, 3D] bias. Returns (hidden, reset hidden, gate).

    As in fluid 1.8.5, the op always uses tanh and sigmoid: another ``activation`` or
    ``gate_activation`` is ignored (with a warning)."""
    acts = ("identity", "sigmoid", "tanh", "relu")
    for value, what in ((activation, "activation"), (gate_activation, "gate_activation")):
        if value not in acts:
            raise ValueError(f"{what} must be one of {', '.join(acts)}. Received: {value!r}")
    if (activation, gate_activation) != ("tanh", "sigmoid"):
        _warn_at_user(
            f"gru_unit: fluid 1.8.5 ran every gru_unit with activation 'tanh' and gate_activation 'sigmoid'; "
            f"so does fluidcompat (received {activation!r}, {gate_activation!r})."
        )
    helper = LayerHelper("gru_unit")
    d = size // 3
    weight = helper.create_parameter(attr=param_attr, shape=[d, 3 * d], dtype=input.dtype)
    inputs = {"Input": [input], "HiddenPrev": [hidden], "Weight": [weight]}
    bias = helper.create_parameter(attr=bias_attr, shape=[1, 3 * d], dtype=input.dtype, is_bias=True)
    if bias is not None:
        inputs["Bias"] = [bias]
    gate = helper.create_variable_for_type_inference(input.dtype)
    reset = helper.create_variable_for_type_inference(input.dtype)
    new = helper.create_variable_for_type_inference(input.dtype)
    helper.append_op(
        type="gru_unit",
        inputs=inputs,
        outputs={"Gate": [gate], "ResetHiddenPrev": [reset], "Hidden": [new]},
        attrs={"activation": 2, "gate_activation": 1, "origin_mode": bool(origin_mode)},
    )
    return new, reset, gate


def rnn(cell, inputs, initial_states=None, sequence_length=None, time_major=False, is_reverse=False, **kwargs):
    """Run ``cell`` over the time steps (see ``_rnn``). A call that raises leaves the programs, the name
    counters and the cell (the parameters it creates at its first step) as they were."""
    kept = dict(vars(cell)) if hasattr(cell, "__dict__") else None
    try:
        with program_transaction():
            return _rnn(cell, inputs, initial_states, sequence_length, time_major, is_reverse, **kwargs)
    except BaseException:
        if kept is not None:
            vars(cell).clear()
            vars(cell).update(kept)
        raise


def _rnn(cell, inputs, initial_states, sequence_length, time_major, is_reverse, **kwargs):
    """Run ``cell`` over the time steps of ``inputs`` ([batch, time, ...], or [time, batch, ...] with
    ``time_major``). With ``sequence_length``, a step past a sequence's end keeps its states (its
    outputs are computed all the same, as in fluid). Returns (outputs stacked over time, final states).
    """
    from fluidcompat.layer_helper import layers as L

    if not callable(cell) or not hasattr(cell, "call"):
        raise TypeError(f"cell must be an RNNCell. Received: {type(cell).__name__}")
    flat_inputs = nest.flatten(inputs)
    for x in flat_inputs:
        if not isinstance(x, Variable):
            raise TypeError(f"rnn's inputs must be Variables. Received: {type(x).__name__}")
    if initial_states is None:
        initial_states = cell.get_initial_states(batch_ref=inputs, batch_dim_idx=1 if time_major else 0)
    if not time_major:
        inputs = nest.map_structure(swap_batch_time, inputs)
    steps = nest.flatten(inputs)[0].shape[0]
    if steps is None or steps < 0:
        outputs, states = _rnn_loop(cell, inputs, initial_states, sequence_length, is_reverse, **kwargs)
        if not time_major:
            outputs = nest.map_structure(swap_batch_time, outputs)
        return outputs, states
    mask = None
    if sequence_length is not None:
        dtype = nest.flatten(initial_states)[0].dtype
        mask = L.transpose(L.sequence_mask(sequence_length, maxlen=steps, dtype=dtype), [1, 0])
    order = range(steps - 1, -1, -1) if is_reverse else range(steps)
    states, outputs = initial_states, {}
    for t in order:
        step_in = nest.map_structure(lambda x: L.squeeze(L.slice(x, axes=[0], starts=[t], ends=[t + 1]), [0]), inputs)
        out, new_states = cell(step_in, states, **kwargs)
        if mask is not None:
            m = L.squeeze(L.slice(mask, axes=[0], starts=[t], ends=[t + 1]), [0])
            new_states = _keep_past_end(states, new_states, m)
        states, outputs[t] = new_states, out
    stacked = nest.map_structure(lambda *per_step: L.stack(list(per_step), axis=0), *[outputs[t] for t in range(steps)])
    if not time_major:
        stacked = nest.map_structure(swap_batch_time, stacked)
    return stacked, states


def _keep_past_end(states, new_states, m):
    """The states of a step where ``m`` ([batch] of 1 and 0) says each sequence still runs: past its
    end a sequence keeps its states, in fluid's form new * m - old * (m - 1)."""
    from fluidcompat.layer_helper import layers as L

    return nest.map_structure(
        lambda old, new: L.elementwise_sub(
            L.elementwise_mul(new, m, axis=0), L.elementwise_mul(old, L.scale(m, bias=-1.0), axis=0)
        ),
        states,
        new_states,
    )


def _rnn_loop(cell, inputs, initial_states, sequence_length, is_reverse, **kwargs):
    """``_rnn`` over time-major ``inputs`` whose number of time steps is known only when the program
    runs: the cell in a StaticRNN step (a ``while`` op over the steps), as fluid 1.8.5 built it.
    Returns (time-major outputs, final states)."""
    from fluidcompat.layer_helper import layers as L

    first = nest.flatten(inputs)[0]
    mask = None
    if sequence_length is not None:
        dtype = nest.flatten(initial_states)[0].dtype
        steps = L.slice(L.shape(first), axes=[0], starts=[0], ends=[1])
        mask = L.transpose(L.sequence_mask(sequence_length, maxlen=steps, dtype=dtype), [1, 0])
    if is_reverse:
        inputs = nest.map_structure(lambda x: L.reverse(x, axis=[0]), inputs)
        mask = None if mask is None else L.reverse(mask, axis=[0])
    loop = L.StaticRNN()
    with loop.step():
        step_in = nest.map_structure(loop.step_input, inputs)
        states = nest.map_structure(lambda s: loop.memory(init=s), initial_states)
        out, new_states = cell(step_in, states, **kwargs)
        if mask is not None:
            new_states = _keep_past_end(states, new_states, loop.step_input(mask))
        nest.map_structure(loop.update_memory, states, new_states)
        flat_out, flat_states = nest.flatten(out), nest.flatten(new_states)
        for v in flat_out + flat_states:
            loop.step_output(v)
    stacked = loop.results
    outs = iter(stacked[: len(flat_out)])
    last = iter(L.squeeze(L.slice(s, axes=[0], starts=[-1], ends=[2**31 - 1]), [0]) for s in stacked[len(flat_out) :])
    outputs = nest.map_structure(lambda _: next(outs), out)
    if is_reverse:
        outputs = nest.map_structure(lambda x: L.reverse(x, axis=[0]), outputs)
    return outputs, nest.map_structure(lambda _: next(last), new_states)
