"""fluid.contrib's recurrent layers built from basic ops: ``BasicGRUUnit``, ``BasicLSTMUnit`` (one
step) and ``basic_gru``, ``basic_lstm`` (multi-layer, optionally bidirectional, over padded batches
with ``sequence_length``). Parameters are named as fluid 1.8.5 named them, so its checkpoints load:
``{name}_layers_{i}/BasicLSTMUnit_0.w_0`` or, with a named ``param_attr``, ``{attr}_fw_w_{i}`` /
``{attr}_bw_w_{i}`` (GRU: ``..._gate`` and ``..._candidate``)."""

from __future__ import annotations

import copy

from fluidcompat import layers
from fluidcompat.framework import Variable
from fluidcompat.layers.rnn import GRUCell, LSTMCell
from fluidcompat.param_attr import ParamAttr

__all__ = ["BasicGRUUnit", "basic_gru", "BasicLSTMUnit", "basic_lstm"]


class BasicGRUUnit(GRUCell):
    """One GRU step: ``unit(input, pre_hidden) -> new_hidden``; the parameters are made at the first call
    (``{name_scope}/BasicGRUUnit_N.w_0`` gate weight, ``.w_1`` candidate weight, ``.b_0``, ``.b_1``)."""

    def __init__(
        self, name_scope, hidden_size, param_attr=None, bias_attr=None, gate_activation=None, activation=None,
        dtype="float32",
    ):  # fmt: skip
        super().__init__(hidden_size, param_attr, bias_attr, gate_activation, activation, dtype, name=name_scope)

    def __call__(self, input, pre_hidden):
        return self.forward(input, pre_hidden)

    def forward(self, input, pre_hidden):
        return self.call(input, pre_hidden)[0]

    def parameters(self):
        return list(self._weights or ())


class BasicLSTMUnit(LSTMCell):
    """One LSTM step: ``unit(input, pre_hidden, pre_cell) -> (new_hidden, new_cell)``; the parameters are
    made at the first call (``{name_scope}/BasicLSTMUnit_N.w_0`` and ``.b_0``)."""

    def __init__(
        self, name_scope, hidden_size, param_attr=None, bias_attr=None, gate_activation=None, activation=None,
        forget_bias=1.0, dtype="float32",
    ):  # fmt: skip
        super().__init__(
            hidden_size, param_attr, bias_attr, gate_activation, activation, forget_bias, dtype, name=name_scope
        )

    def __call__(self, input, pre_hidden, pre_cell):
        return self.forward(input, pre_hidden, pre_cell)

    def forward(self, input, pre_hidden, pre_cell):
        return self.call(input, [pre_hidden, pre_cell])[1]

    def parameters(self):
        return [p for p in (self._weight, self._bias) if p is not None]


def _layer_attr(attr, suffix):
    """A layer's copy of a named attribute with ``suffix`` added to the name; else the attribute."""
    attr = ParamAttr._to_attr(attr) if attr is not None else None
    if attr is not None and attr is not False and attr.name is not None:
        attr = copy.deepcopy(attr)
        attr.name += suffix
    return attr


def _units(make, name, num_layers, bidirectional, param_attr, bias_attr):
    """Per direction, the units of each layer, named as fluid 1.8.5 named them."""
    directions = [("fw", "_layers_")] + ([("bw", "_reverse_layers_")] if bidirectional else [])
    return [
        [
            make(name + infix + str(i), _layer_attr(param_attr, f"_{d}_w_{i}"), _layer_attr(bias_attr, f"_{d}_b_{i}"))
            for i in range(num_layers)
        ]
        for d, infix in directions
    ]


def _check(api, input, hidden_size, num_layers):
    if not isinstance(input, Variable):
        raise TypeError(f"{api}: input must be a Variable, received {type(input).__name__}")
    if len(input.shape) != 3:
        raise ValueError(f"{api}: input must be 3-D ([batch, time, size] or [time, batch, size]), received shape "
                         f"{list(input.shape)}")  # fmt: skip
    if not isinstance(hidden_size, int) or hidden_size <= 0 or not isinstance(num_layers, int) or num_layers <= 0:
        raise ValueError(
            f"{api}: hidden_size and num_layers must be positive ints, received {hidden_size}, {num_layers}"
        )


def _run(units, input, inits, hidden_size, num_layers, sequence_length, dropout_prob, batch_first, dropout_kw):
    """The layers over the time steps in both directions: (outputs, [final state per kind]). ``inits``:
    per state kind (hidden, cell) the initial values [num_layers * directions, batch, hidden] or None."""
    if batch_first:
        input = layers.transpose(input, [1, 0, 2])
    mask = None
    if sequence_length is not None:
        steps = layers.slice(layers.shape(input), axes=[0], starts=[0], ends=[1])
        mask = layers.transpose(layers.sequence_mask(sequence_length, maxlen=steps, dtype="float32"), [1, 0])
    directions = len(units)
    inits = [
        None if init is None else layers.reshape(init, shape=[num_layers, directions, -1, hidden_size])
        for init in inits
    ]
    kinds = len(inits)

    def one_direction(rnn_input, unit_list, step_mask_input, d):
        rnn = layers.StaticRNN()
        with rnn.step():
            step_input = rnn.step_input(rnn_input)
            step_mask = rnn.step_input(step_mask_input) if step_mask_input is not None else None
            for i in range(num_layers):
                pre = []
                for init in inits:
                    if init is not None:
                        pre.append(rnn.memory(init=init[i, d]))
                    else:
                        pre.append(rnn.memory(batch_ref=rnn_input, shape=[-1, hidden_size]))
                new = unit_list[i](step_input, *pre)
                new = list(new) if kinds > 1 else [new]
                if step_mask is not None:  # past a sequence's end the states stay
                    new = [
                        layers.elementwise_mul(n, step_mask, axis=0) - layers.elementwise_mul(p, step_mask - 1, axis=0)
                        for n, p in zip(new, pre)
                    ]
                for p, n in zip(pre, new):
                    rnn.update_memory(p, n)
                    rnn.step_output(n)
                step_input = new[0]
                if dropout_prob is not None and dropout_prob > 0.0:
                    step_input = layers.dropout(step_input, dropout_prob=dropout_prob, **dropout_kw)
            rnn.step_output(step_input)
        out = rnn()
        finals = []
        for k in range(kinds):
            last = [out[i * kinds + k][-1] for i in range(num_layers)]
            finals.append(layers.reshape(layers.concat(last, axis=0), shape=[num_layers, -1, hidden_size]))
        return out[-1], finals

    fw_out, fw_finals = one_direction(input, units[0], mask, 0)
    if directions == 1:
        rnn_out, finals = fw_out, fw_finals
    else:
        bw_out, bw_finals = one_direction(
            layers.reverse(input, axis=[0]), units[1], None if mask is None else layers.reverse(mask, axis=[0]), 1
        )
        rnn_out = layers.concat([fw_out, layers.reverse(bw_out, axis=[0])], axis=2)
        finals = [
            layers.reshape(layers.concat([f, b], axis=1), shape=[num_layers * 2, -1, hidden_size])
            for f, b in zip(fw_finals, bw_finals)
        ]
    if batch_first:
        rnn_out = layers.transpose(rnn_out, [1, 0, 2])
    return rnn_out, finals


def basic_gru(
    input, init_hidden, hidden_size, num_layers=1, sequence_length=None, dropout_prob=0.0, bidirectional=False,
    batch_first=True, param_attr=None, bias_attr=None, gate_activation=None, activation=None, dtype="float32",
    name="basic_gru",
):  # fmt: skip
    """A GRU of ``num_layers`` layers over ``input`` ([batch, time, size], or [time, batch, size] with
    ``batch_first=False``); the number of time steps may be unknown until the program runs. Returns
    (outputs [batch, time, hidden * directions], last hidden [num_layers * directions, batch, hidden]).
    With ``sequence_length`` ([batch] int), the states stay as they were past each sequence's end."""
    _check("basic_gru", input, hidden_size, num_layers)

    def make(unit_name, w, b):
        return BasicGRUUnit(unit_name, hidden_size, w, b, gate_activation, activation, dtype)

    units = _units(make, name, num_layers, bidirectional, param_attr, bias_attr)
    out, (last_hidden,) = _run(
        units, input, [init_hidden], hidden_size, num_layers, sequence_length, dropout_prob, batch_first,
        {},
    )  # fmt: skip
    return out, last_hidden


def basic_lstm(
    input, init_hidden, init_cell, hidden_size, num_layers=1, sequence_length=None, dropout_prob=0.0,
    bidirectional=False, batch_first=True, param_attr=None, bias_attr=None, gate_activation=None, activation=None,
    forget_bias=1.0, dtype="float32", name="basic_lstm",
):  # fmt: skip
    """An LSTM of ``num_layers`` layers over ``input`` (as ``basic_gru``). Returns (outputs, last hidden,
    last cell), the last two [num_layers * directions, batch, hidden]. Dropout between layers is
    ``upscale_in_train``, as in fluid 1.8.5."""
    _check("basic_lstm", input, hidden_size, num_layers)
    if (init_hidden is None) != (init_cell is None):
        raise ValueError("basic_lstm: give both init_hidden and init_cell, or neither")

    def make(unit_name, w, b):
        return BasicLSTMUnit(unit_name, hidden_size, w, b, gate_activation, activation, forget_bias, dtype)

    units = _units(make, name, num_layers, bidirectional, param_attr, bias_attr)
    out, (last_hidden, last_cell) = _run(
        units, input, [init_hidden, init_cell], hidden_size, num_layers, sequence_length, dropout_prob,
        batch_first, {"dropout_implementation": "upscale_in_train"},
    )  # fmt: skip
    return out, last_hidden, last_cell
