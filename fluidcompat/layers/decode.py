"""Decoding: ``Decoder``, ``BeamSearchDecoder``, ``BasicDecoder`` with its helpers, and
``dynamic_decode``, which runs a decoder's ``step`` in a ``While`` loop until every entry has
finished or ``max_step_num`` is passed (``max_step_num + 1`` steps at most, as in fluid 1.8.5).

Deliberate difference from fluid 1.8.5 (measured with its own BeamSearchDecoder): fluid OR-ed each
step's finished flags into the previous step's *by position*, although beam search reorders its
beams every step. A live beam that moved into a slot where a finished one had been then counted as
finished: the loop could stop with beams still running, the returned ``sequence_lengths`` counted
slots rather than beams, and with ``is_test=True`` the flag was written back into the beam state, so
the beam was cut short and the translation changed. Here a decoder that tracks its own finished flags
(``tracks_own_finished``) is believed: the loop runs while any beam runs and ``sequence_lengths`` are
the beams' lengths, the same with ``is_test`` True or False. Where no beam moves into a finished
beam's slot, the results are fluid's (tests/golden/dynamic_decode).
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from fluidcompat.framework import Variable, layer, program_transaction
from fluidcompat.layer_helper import LayerHelper, check_dtype, check_variable
from fluidcompat.layers import utils as nest
from fluidcompat.layers._common import _listed, _one
from fluidcompat.layers.control_flow import in_parent_block
from fluidcompat.layers.rnn import swap_batch_time
from fluidcompat.param_attr import ParamAttr

__all__ = [
    "Decoder",
    "BeamSearchDecoder",
    "BasicDecoder",
    "DecodeHelper",
    "TrainingHelper",
    "GreedyEmbeddingHelper",
    "SampleEmbeddingHelper",
    "dynamic_decode",
    "beam_search",
    "beam_search_decode",
    "gather_tree",
    "ctc_greedy_decoder",
    "crf_decoding",
]

_INF = 1e9  # fluid's "infinity" for log-probabilities of beams that cannot be chosen


def _L():
    from fluidcompat.layer_helper import layers

    return layers


def _beside(x, beam_size):
    """``x`` ([batch, ...]) repeated per beam: [batch, beam_size, ...]."""
    L = _L()
    return L.expand(L.unsqueeze(x, [1]), [1, beam_size] + [1] * (len(x.shape) - 1))


class Decoder:
    """The interface ``dynamic_decode`` drives: ``initialize(inits) -> (inputs, states, finished)``,
    ``step(time, inputs, states, **kwargs) -> (outputs, next_states, next_inputs, finished)`` and
    optionally ``finalize(outputs, final_states, sequence_lengths) -> (outputs, states)``."""

    def initialize(self, inits):
        raise NotImplementedError

    def step(self, time, inputs, states, **kwargs):
        raise NotImplementedError

    def finalize(self, outputs, final_states, sequence_lengths):
        raise NotImplementedError

    @property
    def tracks_own_finished(self):
        """Whether ``step``'s finished flags are final (beam search reorders its entries, so its
        flags cannot be OR-ed with the previous step's by position)."""
        return False


class BeamSearchDecoder(Decoder):
    """Beam search over ``cell``: each step scores every (beam, token) by the beam's summed
    log-probability, keeps the ``beam_size`` best per batch entry, and gathers the cell states of
    the beams they extend. A finished beam can only emit ``end_token``, at no cost."""

    OutputWrapper = namedtuple("OutputWrapper", ("scores", "predicted_ids", "parent_ids"))
    StateWrapper = namedtuple("StateWrapper", ("cell_states", "log_probs", "finished", "lengths"))

    def __init__(self, cell, start_token, end_token, beam_size, embedding_fn=None, output_fn=None) -> None:
        self.cell = cell
        self.embedding_fn, self.output_fn = embedding_fn, output_fn
        self.start_token, self.end_token, self.beam_size = start_token, end_token, beam_size

    @staticmethod
    def tile_beam_merge_with_batch(x, beam_size):
        """``x`` ([batch, ...]) with each row repeated ``beam_size`` times: [batch * beam_size, ...].
        Dims unknown when building (a padded batch's time) stay unknown: the batch and beam dims go
        last, are merged by a reshape that copies the others (0), and come first again."""
        L = _L()
        tiled = _beside(x, beam_size)
        rank = len(tiled.shape)
        tiled = L.transpose(tiled, list(range(2, rank)) + [0, 1])
        merged = L.reshape(tiled, [0] * (rank - 2) + [-1])
        return L.transpose(merged, [rank - 2] + list(range(rank - 2)))

    def _split_batch_beams(self, x):
        return _L().reshape(x, [-1, self.beam_size] + list(x.shape[1:]))

    def _merge_batch_beams(self, x):
        return _L().reshape(x, [-1] + list(x.shape[2:]))

    def _expand_to_beam_size(self, x):
        return _beside(x, self.beam_size)

    def _gather(self, x, beam_indices):
        """``x[b, beam_indices[b, k]]`` for every batch entry b and beam k."""
        L = _L()
        ones = L.fill_constant_batch_size_like(beam_indices, [-1, self.beam_size], "int64", 1)
        batch_pos = L.cumsum(ones, axis=0, exclusive=True)
        return L.gather_nd(x, L.stack([batch_pos, beam_indices], axis=2))

    def initialize(self, initial_cell_states):
        """Start tokens, the cell states repeated per beam, log-probabilities 0 for beam 0 and
        ``-1e9`` for the others (so the first step expands beam 0 only)."""
        L = _L()
        cell_states = nest.map_structure(self._expand_to_beam_size, initial_cell_states)
        ref = nest.flatten(initial_cell_states)[0]
        ids = L.fill_constant_batch_size_like(ref, [-1, self.beam_size], "int64", self.start_token)
        first = L.fill_constant_batch_size_like(ref, [-1, 1], "float32", 0.0)
        rest = L.fill_constant_batch_size_like(ref, [-1, self.beam_size - 1], "float32", -_INF)
        log_probs = L.concat([first, rest], axis=1) if self.beam_size > 1 else first
        finished = L.fill_constant_batch_size_like(ref, [-1, self.beam_size], "bool", 0)
        lengths = L.fill_constant_batch_size_like(ref, [-1, self.beam_size], "int64", 0)
        inputs = self.embedding_fn(ids) if self.embedding_fn else ids
        return inputs, self.StateWrapper(cell_states, log_probs, finished, lengths), finished

    def _beam_search_step(self, time, logits, cell_states, state):
        L = _L()
        vocab = logits.shape[-1]
        step_log_probs = L.log(L.softmax(logits))
        # a finished beam: log-probability 0 for end_token, -1e9 for every other token
        row = np.full([vocab], -_INF, "float32")
        row[self.end_token] = 0.0
        only_end = L.assign(row)
        done = L.cast(state.finished, "float32")
        step_log_probs = L.elementwise_add(
            L.elementwise_mul(step_log_probs, L.scale(done, -1.0, 1.0), axis=0),
            L.elementwise_mul(L.unsqueeze(done, [2]), only_end, axis=-1),
        )
        log_probs = L.elementwise_add(step_log_probs, state.log_probs, axis=0)
        scores = L.reshape(log_probs, [-1, self.beam_size * vocab])
        top_scores, top_indices = L.topk(scores, k=self.beam_size)
        vocab_t = L.fill_constant([1], "int64", vocab)
        beam_indices = L.elementwise_floordiv(top_indices, vocab_t)
        token_indices = L.elementwise_mod(top_indices, vocab_t)
        next_cell_states = nest.map_structure(lambda x: self._gather(x, beam_indices), cell_states)
        was_finished = self._gather(state.finished, beam_indices)
        lengths = L.elementwise_add(
            self._gather(state.lengths, beam_indices), L.cast(L.logical_not(was_finished), "int64")
        )
        finished = L.logical_or(was_finished, L.equal(token_indices, L.fill_constant([1], "int64", self.end_token)))
        for v in (beam_indices, token_indices, finished, lengths):
            v.stop_gradient = True
        return (
            self.OutputWrapper(top_scores, token_indices, beam_indices),
            self.StateWrapper(next_cell_states, top_scores, finished, lengths),
        )

    def step(self, time, inputs, states, **kwargs):
        inputs = nest.map_structure(self._merge_batch_beams, inputs)
        cell_states = nest.map_structure(self._merge_batch_beams, states.cell_states)
        cell_outputs, next_cell_states = self.cell(inputs, cell_states, **kwargs)
        cell_outputs = nest.map_structure(self._split_batch_beams, cell_outputs)
        next_cell_states = nest.map_structure(self._split_batch_beams, next_cell_states)
        if self.output_fn is not None:
            cell_outputs = self.output_fn(cell_outputs)
        output, state = self._beam_search_step(time, cell_outputs, next_cell_states, states)
        ids = output.predicted_ids
        next_inputs = self.embedding_fn(ids) if self.embedding_fn else ids
        return output, state, next_inputs, state.finished

    def finalize(self, outputs, final_states, sequence_lengths):
        """Each final beam's tokens, traced back through the parents (``gather_tree``)."""
        return _L().gather_tree(outputs.predicted_ids, outputs.parent_ids), final_states

    @property
    def tracks_own_finished(self):
        return True


class DecodeHelper:
    """How ``BasicDecoder`` starts, picks each step's ids and feeds the next step:
    ``initialize() -> (inputs, finished)``, ``sample(time, outputs, states) -> ids``,
    ``next_inputs(time, outputs, states, sample_ids) -> (finished, next_inputs, next_states)``."""

    def initialize(self):
        raise NotImplementedError

    def sample(self, time, outputs, states):
        raise NotImplementedError

    def next_inputs(self, time, outputs, states, sample_ids):
        raise NotImplementedError


class TrainingHelper(DecodeHelper):
    """Teacher forcing: step t reads ``inputs`` at time t; an entry finishes at its
    ``sequence_length``; the sampled ids are the outputs' argmax."""

    def __init__(self, inputs, sequence_length, time_major=False) -> None:
        self.inputs, self.sequence_length, self.time_major = inputs, sequence_length, time_major
        self._time_major = inputs if time_major else nest.map_structure(swap_batch_time, inputs)

    def _at(self, time):
        """Every entry's input at ``time`` (an int64 [1] tensor), the last step's past the end."""
        L = _L()

        def one(x):
            steps = L.cast(L.slice(L.shape(x), axes=[0], starts=[0], ends=[1]), "int64")
            last = L.elementwise_sub(steps, L.fill_constant([1], "int64", 1))
            return L.squeeze(L.gather(x, L.elementwise_min(time, last)), [0])

        return nest.map_structure(one, self._time_major)

    def initialize(self):
        L = _L()
        finished = L.equal(self.sequence_length, L.zeros_like(self.sequence_length))
        return self._at(L.fill_constant([1], "int64", 0)), finished

    def sample(self, time, outputs, states):
        return _L().argmax(outputs, axis=-1)

    def next_inputs(self, time, outputs, states, sample_ids):
        L = _L()
        next_time = L.increment(time, 1.0, in_place=False)
        finished = L.less_equal(self.sequence_length, L.cast(next_time, self.sequence_length.dtype))
        return finished, self._at(next_time), states


class GreedyEmbeddingHelper(DecodeHelper):
    """Greedy decoding: each step's ids are the outputs' argmax, embedded by ``embedding_fn`` as the
    next inputs; an entry finishes when it emits ``end_token``."""

    def __init__(self, embedding_fn, start_tokens, end_token) -> None:
        self.embedding_fn, self.start_tokens, self.end_token = embedding_fn, start_tokens, end_token

    def initialize(self):
        L = _L()
        finished = L.fill_constant_batch_size_like(self.start_tokens, [-1], "bool", 0)
        return self.embedding_fn(self.start_tokens), finished

    def sample(self, time, outputs, states):
        return _L().argmax(outputs, axis=-1)

    def next_inputs(self, time, outputs, states, sample_ids):
        L = _L()
        finished = L.equal(sample_ids, L.fill_constant([1], sample_ids.dtype, self.end_token))
        return finished, self.embedding_fn(sample_ids), states


class SampleEmbeddingHelper(GreedyEmbeddingHelper):
    """As ``GreedyEmbeddingHelper``, but each step's ids are drawn from ``softmax(outputs /
    softmax_temperature)`` (op ``sampling_id``)."""

    def __init__(self, embedding_fn, start_tokens, end_token, softmax_temperature=None, seed=None) -> None:
        super().__init__(embedding_fn, start_tokens, end_token)
        self.softmax_temperature, self.seed = softmax_temperature, seed

    def sample(self, time, outputs, states):
        L = _L()
        logits = outputs if self.softmax_temperature is None else L.scale(outputs, 1.0 / self.softmax_temperature)
        ids = L.sampling_id(L.softmax(logits), seed=self.seed or 0, dtype="int64")
        return L.cast(ids, "int64")


class BasicDecoder(Decoder):
    """``cell`` driven by a ``DecodeHelper``: each step's outputs are the cell outputs (through
    ``output_fn``) and the helper's sampled ids."""

    OutputWrapper = namedtuple("OutputWrapper", ("cell_outputs", "sample_ids"))

    def __init__(self, cell, helper, output_fn=None) -> None:
        self.cell, self.helper, self.output_fn = cell, helper, output_fn

    def initialize(self, initial_cell_states):
        inputs, finished = self.helper.initialize()
        return inputs, initial_cell_states, finished

    def step(self, time, inputs, states, **kwargs):
        cell_outputs, cell_states = self.cell(inputs, states, **kwargs)
        if self.output_fn is not None:
            cell_outputs = self.output_fn(cell_outputs)
        sample_ids = self.helper.sample(time, cell_outputs, cell_states)
        sample_ids.stop_gradient = True
        finished, next_inputs, next_states = self.helper.next_inputs(time, cell_outputs, cell_states, sample_ids)
        return self.OutputWrapper(cell_outputs, sample_ids), next_states, next_inputs, finished


def dynamic_decode(decoder, inits=None, max_step_num=None, output_time_major=False, impute_finished=False,
                   is_test=False, return_length=False, **kwargs):  # fmt: skip
    """Run ``decoder`` from ``decoder.initialize(inits)`` one ``step`` at a time (a While loop) until
    every entry has finished or ``max_step_num + 1`` steps have run. Returns (outputs stacked over
    the steps, batch-major unless ``output_time_major``; final states), plus each entry's length with
    ``return_length``. ``kwargs`` go to every ``step``. With ``impute_finished`` (for decoders that do
    not track their own finished flags), an entry keeps its states once it has finished."""
    if not isinstance(decoder, Decoder):
        raise TypeError(f"decoder must be a fluid.layers.Decoder. Received: {type(decoder).__name__}")
    if max_step_num is not None and (not isinstance(max_step_num, int) or max_step_num < 0):
        raise ValueError(f"max_step_num must be None or an int >= 0. Received: {max_step_num!r}")
    with program_transaction():
        return _dynamic_decode(
            decoder, inits, max_step_num, output_time_major, impute_finished, is_test, return_length, **kwargs
        )


def _dynamic_decode(decoder, inits, max_step_num, output_time_major, impute_finished, is_test, return_length,
                    **kwargs):  # fmt: skip
    L = _L()
    inputs, states, finished = decoder.initialize(inits)
    # the loop's own copies, updated in place at the end of each step
    inputs = nest.map_structure(L.assign, inputs)
    states = nest.map_structure(L.assign, states)
    finished = L.assign(finished)
    finished.stop_gradient = True
    lengths = L.cast(L.zeros_like(finished), "int64")
    lengths.stop_gradient = True
    step = L.fill_constant([1], "int64", 0)
    limit = L.fill_constant([1], "int64", max_step_num) if max_step_num is not None else None
    cond = L.logical_not(L.reduce_all(finished))
    loop = L.While(cond, is_test=is_test)
    program = loop.helper.main_program
    with loop.block():
        outputs, next_states, next_inputs, next_finished = decoder.step(step, inputs, states, **kwargs)
        own = getattr(next_states, "lengths", None) if decoder.tracks_own_finished else None
        if isinstance(own, Variable):  # the decoder's own lengths (beam search reorders its entries)
            next_lengths = own
        else:
            next_lengths = L.elementwise_add(lengths, L.cast(L.logical_not(finished), "int64"))
        if not decoder.tracks_own_finished:
            next_finished = L.logical_or(next_finished, finished)
            if impute_finished:  # a finished entry keeps its states

                def keep(new, old):
                    mask = L.cast(finished, new.dtype)
                    return L.elementwise_add(
                        L.elementwise_mul(new, L.scale(mask, -1.0, 1.0), axis=0), L.elementwise_mul(old, mask, axis=0)
                    )

                next_states = nest.map_structure(keep, next_states, states)
        with in_parent_block(program):
            arrays = nest.map_structure(lambda x: L.create_array(x.dtype), outputs)
        nest.map_structure(lambda x, arr: L.array_write(x, step, array=arr), outputs, arrays)
        L.increment(step, 1.0, in_place=True)
        L.assign(next_finished, finished)
        L.assign(next_lengths, lengths)
        nest.map_structure(L.assign, next_inputs, inputs)
        nest.map_structure(L.assign, next_states, states)
        running = L.logical_not(L.reduce_all(finished))
        if limit is not None:
            running = L.logical_and(running, L.less_equal(step, limit))
        L.assign(running, cond)
    outputs = nest.map_structure(lambda arr: L.tensor_array_to_tensor(arr, axis=0, use_stack=True)[0], arrays)
    final_states = states
    try:
        outputs, final_states = decoder.finalize(outputs, final_states, lengths)
    except NotImplementedError:
        pass
    if not output_time_major:
        outputs = nest.map_structure(swap_batch_time, outputs)
    return (outputs, final_states, lengths) if return_length else (outputs, final_states)


def beam_search(
    pre_ids,
    pre_scores,
    ids,
    scores,
    beam_size,
    end_id,
    level=0,
    is_accumulated=True,
    name=None,
    return_parent_idx=False,
):
    """One step of LoD beam search (the While-loop decoders of fluid 1.x): of each source sentence's
    candidates (``ids`` with their ``scores``, a row per prefix; with ``ids`` None a candidate's id is
    its column) the best ``beam_size``; a prefix that ended with ``end_id`` offers only ``end_id`` at
    its score. ``scores`` are accumulated log-probabilities, or probabilities with ``is_accumulated``
    False (then ``pre_scores + log(scores)``). Returns ``selected_ids`` and ``selected_scores`` [rows, 1]
    with the 2-level LoD (sources, prefixes) the next step reads, and with ``return_parent_idx`` each
    row's prefix (int32)."""
    check_variable(pre_ids, "pre_ids", "beam_search")
    check_dtype(pre_ids.dtype, "pre_ids", ["int64"], "beam_search")
    check_variable(pre_scores, "pre_scores", "beam_search")
    check_dtype(pre_scores.dtype, "pre_scores", ["float32", "float64"], "beam_search")
    if ids is not None and not isinstance(ids, Variable):
        raise TypeError(f"The type of 'ids' in beam_search must be (Variable, NoneType), but received {type(ids)!r}. ")
    check_variable(scores, "scores", "beam_search")
    check_dtype(scores.dtype, "scores", ["float32", "float64"], "beam_search")
    helper = LayerHelper("beam_search", name=name)
    inputs = {"pre_ids": [pre_ids], "pre_scores": [pre_scores], "scores": [scores]}
    if ids is not None:
        inputs["ids"] = [ids]
    selected_scores = helper.create_variable_for_type_inference(dtype=pre_scores.dtype)
    selected_ids = helper.create_variable_for_type_inference(dtype=pre_ids.dtype)
    parent_idx = helper.create_variable_for_type_inference(dtype="int32")
    helper.append_op(
        type="beam_search",
        inputs=inputs,
        outputs={"selected_ids": [selected_ids], "selected_scores": [selected_scores], "parent_idx": [parent_idx]},
        attrs={"level": level, "beam_size": beam_size, "end_id": end_id, "is_accumulated": is_accumulated},
    )
    if return_parent_idx:
        return selected_ids, selected_scores, parent_idx
    return selected_ids, selected_scores


def beam_search_decode(ids, scores, beam_size, end_id, name=None):
    """The sentences of a LoD beam search: ``ids`` and ``scores`` are the tensor arrays of the steps'
    ``beam_search`` outputs (step 0: the initial ids and scores). Each source's sentences are traced
    back from its last step with candidates, best final score first, one ``end_id`` kept at a
    sentence's end. Returns ``(sentence_ids, sentence_scores)``: 1-D, with the LoD levels (sources,
    sentences)."""
    check_variable(ids, "ids", "beam_search_encode")
    check_dtype(ids.dtype, "ids", ["int64"], "beam_search_encode")
    check_variable(scores, "scores", "beam_search_encode")
    check_dtype(scores.dtype, "scores", ["float32"], "beam_search_encode")
    helper = LayerHelper("beam_search_decode", name=name)
    sentence_ids = helper.create_variable_for_type_inference(dtype=ids.dtype)
    sentence_scores = helper.create_variable_for_type_inference(dtype=ids.dtype)
    helper.append_op(
        type="beam_search_decode",
        inputs={"Ids": [ids], "Scores": [scores]},
        outputs={"SentenceIds": [sentence_ids], "SentenceScores": [sentence_scores]},
        attrs={"beam_size": beam_size, "end_id": end_id},
    )
    return sentence_ids, sentence_scores


# -- decoding layers: beam search's back-trace, CTC's best path, the CRF's Viterbi path ----------------
@layer
def gather_tree(ids, parents):
    return _one("gather_tree", {"Ids": [ids], "Parents": [parents]}, stop_gradient=True)


@layer
def ctc_greedy_decoder(input, blank, input_length=None, padding_value=0, name=None):
    """Best path: argmax per step, repeats merged, blanks removed. Of LoD probabilities [rows, classes]
    it returns the decoded LoD sequences [rows, 1] (one row -1 when all come out empty); of padded
    [batch, time, classes] with ``input_length``, (decoded [batch, time] padded, lengths [batch, 1])."""
    from fluidcompat.layers.indexing import topk
    from fluidcompat.layers.manipulation import squeeze

    _, ids = topk(input, k=1)
    helper = LayerHelper("ctc_greedy_decoder", name=name)
    if input_length is None:
        decoded = helper.create_variable_for_type_inference(dtype="int64")
        helper.append_op(
            type="ctc_align",
            inputs={"Input": [ids]},
            outputs={"Output": [decoded]},
            attrs={"merge_repeated": True, "blank": blank},
        )
        return decoded
    ids = squeeze(ids, [2])
    out = helper.create_variable_for_type_inference(dtype="int64")
    out_len = helper.create_variable_for_type_inference(dtype="int64")
    helper.append_op(
        type="ctc_align",
        inputs={"Input": [ids], "InputLength": [input_length]},
        outputs={"Output": [out], "OutputLength": [out_len]},
        attrs={"merge_repeated": True, "blank": blank, "padding_value": padding_value},
    )
    return out, out_len


@layer
def crf_decoding(input, param_attr, label=None, length=None):
    """The Viterbi tag path under the transition parameter named by ``param_attr`` (or, with
    ``label``, 1 where the path agrees with it); padded input with ``length``, or LoD sequences
    without it (the path is then [rows, 1] with the input's LoD)."""
    helper = LayerHelper("crf_decoding")
    name = param_attr.name if isinstance(param_attr, ParamAttr) else param_attr
    transition = helper.main_program.global_block().var(name)
    path = helper.create_variable_for_type_inference(dtype="int64")
    ins = {"Emission": [input], "Transition": [transition], "Length": _listed(length)}
    if label is not None:
        ins["Label"] = [label]
    helper.append_op(type="crf_decoding", inputs=ins, outputs={"ViterbiPath": [path]})
    return path
