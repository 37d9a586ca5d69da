"""fluid 1.x's contrib decoders: a ``StateCell`` holds named hidden states and an updater that
computes them from named inputs; a ``TrainingDecoder`` runs it over target sequences (a DynamicRNN,
the states its memories), a ``BeamSearchDecoder`` runs it in a While loop that grows beams (the
states and step values in tensor arrays), ending in ``beam_search_decode``.

The programs are fluid 1.8.5's (tests/golden/contrib_decoder). Unlike fluid 1.8.5, the
BeamSearchDecoder's ``beam_search`` uses the decoder's ``end_id`` (fluid passed 1 whatever it was
given) and ``StateCell.update_states`` switches an unswitched cell to its decoder (fluid raised a
TypeError there). Torch-free.
"""

from __future__ import annotations

import contextlib

from fluidcompat import layers, unique_name
from fluidcompat.dtypes import VarType
from fluidcompat.framework import Variable
from fluidcompat.layer_helper import LayerHelper

__all__ = ["InitState", "StateCell", "TrainingDecoder", "BeamSearchDecoder"]

_TRAINING, _BEAM_SEARCH = 1, 2


class InitState:
    """The initial value of one decoder state: ``init``, or a ``value``-filled tensor of ``shape``
    whose batch size is ``init_boot``'s. ``need_reorder``: a TrainingDecoder sorts it as its
    DynamicRNN sorts the sequences (set it when ``batch_size > 1``)."""

    def __init__(self, init=None, shape=None, value=0.0, init_boot=None, need_reorder=False, dtype="float32"):
        if init is None:
            if init_boot is None:
                raise ValueError("init_boot must be provided to infer the shape of InitState .\n")
            init = layers.fill_constant_batch_size_like(input=init_boot, value=value, shape=shape, dtype=dtype)
        self._init = init
        self._shape = shape
        self._value = value
        self._need_reorder = need_reorder
        self._dtype = dtype

    @property
    def value(self):
        return self._init

    @property
    def need_reorder(self):
        return self._need_reorder


class _RNNMemory:
    """A state carried by a TrainingDecoder: a memory of its DynamicRNN."""

    def __init__(self, rnn, init_state: InitState) -> None:
        self._rnn = rnn
        self._mem = rnn.memory(init=init_state.value, need_reorder=init_state.need_reorder)

    def get_state(self):
        return self._mem

    def update_state(self, state) -> None:
        self._rnn.update_memory(self._mem, state)


class _StepArray:
    """A state carried by a BeamSearchDecoder: a tensor array in the loop's parent block, written at
    a counter of its own (one entry per step, the initial value at 0)."""

    def __init__(self, block, init_state: InitState) -> None:
        self._array = block.create_var(
            name=unique_name.generate("array_state_array"), type=VarType.LOD_TENSOR_ARRAY, dtype=init_state.value.dtype
        )
        self._counter = block.create_var(
            name=unique_name.generate("array_state_counter"), type=VarType.LOD_TENSOR, dtype="int64"
        )
        block.append_op(
            type="fill_constant",
            outputs={"Out": [self._counter]},
            attrs={"shape": [1], "dtype": self._counter.dtype, "value": 0.0, "force_cpu": True},
        )
        self._counter.stop_gradient = True
        block.append_op(
            type="write_to_array",
            inputs={"X": [init_state.value], "I": [self._counter]},
            outputs={"Out": [self._array]},
        )

    def get_state(self):
        return layers.array_read(array=self._array, i=self._counter)

    def update_state(self, state) -> None:
        layers.increment(x=self._counter, value=1, in_place=True)
        layers.array_write(state, array=self._array, i=self._counter)


class StateCell:
    """Named hidden ``states`` (InitState objects) and named ``inputs`` (placeholders: None until
    ``compute_state`` sets them); the function given to ``state_updater`` computes the new states
    with ``get_input`` / ``get_state`` / ``set_state``; ``out_state`` names the state the decoder
    reads its output from. Entered by one decoder at a time."""

    def __init__(self, inputs, states, out_state, name=None):
        self._helper = LayerHelper("state_cell", name=name)
        self._cur_states = {}
        self._state_names = []
        for state_name, state in states.items():
            if not isinstance(state, InitState):
                raise ValueError("state must be an InitState object.")
            self._cur_states[state_name] = state
            self._state_names.append(state_name)
        self._inputs = inputs
        self._decoder = None
        self._switched = False
        self._holders = {}  # state name -> {id(decoder): its memory or array}
        self._state_updater = None
        self._out_state = out_state
        if out_state not in self._cur_states:
            raise ValueError("out_state must be one state in states")

    @property
    def _in_decoder(self) -> bool:
        return self._decoder is not None

    def _enter_decoder(self, decoder) -> None:
        if self._in_decoder:
            raise ValueError("StateCell has already entered a decoder.")
        self._decoder = decoder
        self._switched = False

    def _leave_decoder(self, decoder) -> None:
        if not self._in_decoder:
            raise ValueError("StateCell not in decoder, invalid leaving operation.")
        if self._decoder is not decoder:
            raise ValueError("Inconsistent decoder object in StateCell.")
        self._decoder = None
        self._switched = False

    def _switch_decoder(self) -> None:
        """Make each state the decoder's (a memory or a step array) on first use inside it."""
        if not self._in_decoder:
            raise ValueError("StateCell must be enter a decoder.")
        if self._switched:
            raise ValueError("StateCell already done switching.")
        key = id(self._decoder)
        for name in self._state_names:
            if name not in self._holders:
                state = self._cur_states[name]
                if not isinstance(state, InitState):
                    raise ValueError(f"Current type of state is {type(state)}, should be an InitState object.")
                if self._decoder.type == _TRAINING:
                    holder = _RNNMemory(self._decoder.dynamic_rnn, state)
                elif self._decoder.type == _BEAM_SEARCH:
                    holder = _StepArray(self._decoder._parent_block(), state)
                else:
                    raise ValueError("Unknown decoder type, only support [TRAINING, BEAM_SEARCH]")
                self._holders[name] = {key: holder}
            self._cur_states[name] = self._holders[name][key].get_state()
        self._switched = True

    def _ensure_switched(self) -> None:
        if self._in_decoder and not self._switched:
            self._switch_decoder()

    def get_state(self, state_name):
        """The current value of state ``state_name``."""
        self._ensure_switched()
        if state_name not in self._cur_states:
            raise ValueError(f"Unknown state {state_name}. Please make sure _switch_decoder() invoked.")
        return self._cur_states[state_name]

    def get_input(self, input_name):
        """The value ``compute_state`` gave input ``input_name``."""
        if input_name not in self._inputs or self._inputs[input_name] is None:
            raise ValueError(f"Invalid input {input_name}.")
        return self._inputs[input_name]

    def set_state(self, state_name, state_value):
        """Set state ``state_name`` (inside the updater)."""
        self._cur_states[state_name] = state_value

    def state_updater(self, updater):
        """Decorator: ``updater(state_cell)`` computes the new states."""
        self._state_updater = updater

        def _decorator(state_cell):
            if state_cell == self:
                raise TypeError("Updater should only accept a StateCell object as argument.")
            updater(state_cell)

        return _decorator

    def compute_state(self, inputs):
        """Set the named ``inputs`` and run the updater."""
        self._ensure_switched()
        for name, value in inputs.items():
            if name not in self._inputs:
                raise ValueError(f"Unknown input {name}. Please make sure {name} in input place holder.")
            self._inputs[name] = value
        if self._state_updater is None:
            raise ValueError("StateCell has no updater: decorate one with @state_cell.state_updater")
        self._state_updater(self)

    def update_states(self):
        """Hand the states set in this step on to the next one."""
        self._ensure_switched()
        key = id(self._decoder)
        for name, per_decoder in self._holders.items():
            if key not in per_decoder:
                raise ValueError("Unknown decoder object, please make sure switch_decoder been invoked.")
            per_decoder[key].update_state(self._cur_states[name])

    def out_state(self):
        """The value of the output state."""
        return self._cur_states[self._out_state]


class TrainingDecoder:
    """Runs a StateCell over target sequences: inside ``block()``, ``step_input`` / ``static_input``
    as a DynamicRNN's, the cell's ``compute_state`` and ``update_states``, and ``output``; after it,
    calling the decoder gives the outputs as LoD sequences."""

    BEFORE_DECODER, IN_DECODER, AFTER_DECODER = 0, 1, 2

    def __init__(self, state_cell, name=None):
        self._helper = LayerHelper("training_decoder", name=name)
        self._status = TrainingDecoder.BEFORE_DECODER
        self._dynamic_rnn = layers.DynamicRNN()
        self._type = _TRAINING
        self._state_cell = state_cell
        self._state_cell._enter_decoder(self)

    @contextlib.contextmanager
    def block(self):
        """The step of the decoder."""
        if self._status != TrainingDecoder.BEFORE_DECODER:
            raise ValueError("decoder.block() can only be invoked once")
        self._status = TrainingDecoder.IN_DECODER
        with self._dynamic_rnn.block():
            yield
        self._status = TrainingDecoder.AFTER_DECODER
        self._state_cell._leave_decoder(self)

    @property
    def state_cell(self):
        self._assert_in_block("state_cell")
        return self._state_cell

    @property
    def dynamic_rnn(self):
        return self._dynamic_rnn

    @property
    def type(self):
        return self._type

    def step_input(self, x):
        """One row per sequence per step of ``x``."""
        self._assert_in_block("step_input")
        return self._dynamic_rnn.step_input(x)

    def static_input(self, x):
        """``x`` whole at every step."""
        self._assert_in_block("static_input")
        return self._dynamic_rnn.static_input(x)

    def __call__(self, *args, **kwargs):
        if self._status != TrainingDecoder.AFTER_DECODER:
            raise ValueError("Output of training decoder can only be visited outside the block.")
        return self._dynamic_rnn(*args, **kwargs)

    def output(self, *outputs):
        """The step's outputs."""
        self._assert_in_block("output")
        self._dynamic_rnn.output(*outputs)

    def _assert_in_block(self, method):
        if self._status != TrainingDecoder.IN_DECODER:
            raise ValueError(f"{method} should be invoked inside block of TrainingDecoder object.")


class BeamSearchDecoder:
    """Beam search with a StateCell: from ``init_ids`` / ``init_scores`` (2-level LoD), each step
    embeds the previous ids (a ``[target_dict_dim, word_dim]`` table), computes the states, scores
    the next words (fc + softmax), keeps ``topk_size`` per beam and ``beam_size`` per source, for at
    most ``max_len`` steps or until every beam has ended; calling the decoder gives
    ``beam_search_decode``'s (ids, scores). ``decode()`` builds all of it; ``block()``,
    ``read_array`` and ``update_array`` build a custom step."""

    BEFORE_BEAM_SEARCH_DECODER, IN_BEAM_SEARCH_DECODER, AFTER_BEAM_SEARCH_DECODER = 0, 1, 2

    def __init__(
        self, state_cell, init_ids, init_scores, target_dict_dim, word_dim, input_var_dict=None, topk_size=50,
        sparse_emb=True, max_len=100, beam_size=1, end_id=1, name=None,
    ):  # fmt: skip
        self._helper = LayerHelper("beam_search_decoder", name=name)
        self._counter = layers.zeros(shape=[1], dtype="int64")
        self._counter.stop_gradient = True
        self._type = _BEAM_SEARCH
        self._max_len = layers.fill_constant(shape=[1], dtype="int64", value=max_len)
        self._cond = layers.less_than(x=self._counter, y=layers.fill_constant(shape=[1], dtype="int64", value=max_len))
        self._while_op = layers.While(self._cond)
        self._state_cell = state_cell
        self._state_cell._enter_decoder(self)
        self._status = BeamSearchDecoder.BEFORE_BEAM_SEARCH_DECODER
        self._zero_idx = layers.fill_constant(shape=[1], value=0, dtype="int64", force_cpu=True)
        self._array_dict = {}
        self._array_link = []
        self._ids_array = None
        self._scores_array = None
        self._beam_size = beam_size
        self._end_id = end_id
        self._init_ids = init_ids
        self._init_scores = init_scores
        self._target_dict_dim = target_dict_dim
        self._topk_size = topk_size
        self._sparse_emb = sparse_emb
        self._word_dim = word_dim
        self._input_var_dict = dict(input_var_dict or {})

    @contextlib.contextmanager
    def block(self):
        """The loop's step; at its end the counter moves on and the updated arrays are written."""
        if self._status != BeamSearchDecoder.BEFORE_BEAM_SEARCH_DECODER:
            raise ValueError("block() can only be invoke once.")
        self._status = BeamSearchDecoder.IN_BEAM_SEARCH_DECODER
        with self._while_op.block():
            yield
            with layers.Switch() as switch:
                with switch.case(self._cond):
                    layers.increment(x=self._counter, value=1.0, in_place=True)
                    for value, array in self._array_link:
                        layers.array_write(x=value, i=self._counter, array=array)
                    layers.less_than(x=self._counter, y=self._max_len, cond=self._cond)
        self._status = BeamSearchDecoder.AFTER_BEAM_SEARCH_DECODER
        self._state_cell._leave_decoder(self)

    @property
    def type(self):
        return self._type

    def early_stop(self):
        """End the loop after this step."""
        layers.fill_constant(shape=[1], value=0, dtype="bool", force_cpu=True, out=self._cond)

    def decode(self):
        """Build the beam search step."""
        with self.block():
            prev_ids = self.read_array(init=self._init_ids, is_ids=True)
            prev_scores = self.read_array(init=self._init_scores, is_scores=True)
            prev_ids_embedding = layers.embedding(
                input=prev_ids, size=[self._target_dict_dim, self._word_dim], dtype="float32",
                is_sparse=self._sparse_emb,
            )  # fmt: skip
            feed_dict, update_dict = {}, {}
            for name, init_var in self._input_var_dict.items():
                if name not in self.state_cell._inputs:
                    raise ValueError("Variable " + name + " not found in StateCell!\n")
                read_var = self.read_array(init=init_var)
                update_dict[name] = read_var
                feed_dict[name] = layers.sequence_expand(read_var, prev_scores)
            for state_name in self._state_cell._state_names:
                prev_state = self.state_cell.get_state(state_name)
                self.state_cell.set_state(state_name, layers.sequence_expand(prev_state, prev_scores))
            for name in self._state_cell._inputs:
                feed_dict.setdefault(name, prev_ids_embedding)
            self.state_cell.compute_state(inputs=feed_dict)
            current_state = layers.lod_reset(x=self.state_cell.out_state(), y=prev_scores)
            scores = layers.fc(input=current_state, size=self._target_dict_dim, act="softmax")
            topk_scores, topk_indices = layers.topk(scores, k=self._topk_size)
            accu_scores = layers.elementwise_add(
                x=layers.log(x=topk_scores), y=layers.reshape(prev_scores, shape=[-1]), axis=0
            )
            selected_ids, selected_scores = layers.beam_search(
                prev_ids, prev_scores, topk_indices, accu_scores, self._beam_size, end_id=self._end_id, level=0
            )
            with layers.Switch() as switch:
                with switch.case(layers.is_empty(selected_ids)):
                    self.early_stop()
                with switch.default():
                    self.state_cell.update_states()
                    self.update_array(prev_ids, selected_ids)
                    self.update_array(prev_scores, selected_scores)
                    for name, var in update_dict.items():
                        self.update_array(var, feed_dict[name])

    def read_array(self, init, is_ids=False, is_scores=False):
        """A tensor array in the parent block starting with ``init``; returns its entry for this step."""
        self._assert_in_block("read_array")
        if is_ids and is_scores:
            raise ValueError("Shouldn't mark current array be ids array and scores array at the same time.")
        if not isinstance(init, Variable):
            raise TypeError("The input argument `init` must be a Variable.")
        parent = self._parent_block()
        array = parent.create_var(
            name=unique_name.generate("beam_search_decoder_array"), type=VarType.LOD_TENSOR_ARRAY, dtype=init.dtype
        )
        parent.append_op(type="write_to_array", inputs={"X": [init], "I": [self._zero_idx]}, outputs={"Out": [array]})
        if is_ids:
            self._ids_array = array
        elif is_scores:
            self._scores_array = array
        value = layers.array_read(array=array, i=self._counter)
        self._array_dict[value.name] = array
        return value

    def update_array(self, array, value):
        """Write ``value`` as the next step's entry of the array ``array`` was read from."""
        self._assert_in_block("update_array")
        if not isinstance(array, Variable):
            raise TypeError("The input argument `array` of  must be a Variable.")
        if not isinstance(value, Variable):
            raise TypeError("The input argument `value` of must be a Variable.")
        target = self._array_dict.get(array.name)
        if target is None:
            raise ValueError("Please invoke read_array before update_array.")
        self._array_link.append((value, target))

    def __call__(self):
        if self._status != BeamSearchDecoder.AFTER_BEAM_SEARCH_DECODER:
            raise ValueError("Output of BeamSearchDecoder object can only be visited outside the block.")
        return layers.beam_search_decode(
            ids=self._ids_array, scores=self._scores_array, beam_size=self._beam_size, end_id=self._end_id
        )

    @property
    def state_cell(self):
        self._assert_in_block("state_cell")
        return self._state_cell

    def _parent_block(self):
        program = self._helper.main_program
        parent_idx = program.current_block().parent_idx
        if parent_idx < 0:
            raise ValueError(f"Invalid block with index {parent_idx}.")
        return program.block(parent_idx)

    def _assert_in_block(self, method):
        if self._status != BeamSearchDecoder.IN_BEAM_SEARCH_DECODER:
            raise ValueError(f"{method} should be invoked inside block of BeamSearchDecoder object.")
