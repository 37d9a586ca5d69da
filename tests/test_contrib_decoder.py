"""fluid.contrib.decoder (InitState, StateCell, TrainingDecoder, BeamSearchDecoder) against fluid
1.8.5 (golden contrib_decoder) and the errors for misuse."""

from __future__ import annotations

import pytest

import fluidcompat as fluid
from fluidcompat.contrib.decoder import BeamSearchDecoder, InitState, StateCell, TrainingDecoder

L = fluid.layers


def test_training_and_beam_search_match_fluid():
    """A StateCell encoder-decoder: the training decoder's softmax outputs and 3 SGD losses, the
    beam search program (every op of both blocks) and its ids, scores and LoDs over the trained
    parameters, and fluid's errors, as fluid 1.8.5. The training program differs where fluidcompat's
    DynamicRNN does (a While loop over padded sequences, not lod_rank_table / shrink_rnn_memory); the
    step's own ops are fluid's, in order."""
    from tests.test_goldens import load, run_fluidcompat

    want, got = load("contrib_decoder.json"), run_fluidcompat("contrib_decoder.py")
    for key in ("probs", "losses", "ids", "scores", "infer_ops", "infer_sub_ops", "infer_params", "errors"):
        assert got[key] == want[key], key
    assert want["ids"][0][0] == [0, 2, 4]  # 2 sources, 2 beams each
    step = ["mul", "mul", "sum", "elementwise_add", "tanh", "mul", "elementwise_add", "softmax"]
    ours = [t for t in got["train_sub_ops"][0] if t in step]
    assert ours[: len(step)] == [t for t in want["train_sub_ops"][0] if t in step] == step
    assert got["train_ops"][-8:] == want["train_ops"][-8:] == ["sgd"] * 8


def _cell():
    boot = L.data("boot", shape=[3], dtype="float32")
    cell = StateCell(
        inputs={"x": None}, states={"h": InitState(init_boot=boot, shape=[-1, 3], value=0.5)}, out_state="h"
    )

    @cell.state_updater
    def updater(c):
        c.set_state("h", L.fc([c.get_state("h"), c.get_input("x")], size=3, act="tanh"))

    return cell


def test_beam_search_uses_the_decoders_end_id():
    """fluid 1.8.5 passed end_id=1 to beam_search whatever the decoder was given; here the decoder's."""
    cell = _cell()
    ids = L.data("ids", shape=[1], dtype="int64", lod_level=2)
    scores = L.data("scores", shape=[1], dtype="float32", lod_level=2)
    decoder = BeamSearchDecoder(cell, ids, scores, target_dict_dim=6, word_dim=3, topk_size=2, max_len=3, end_id=4)
    decoder.decode()
    decoder()
    program = fluid.default_main_program()
    [search] = [op for b in program.blocks for op in b.ops if op.type == "beam_search"]
    [decode] = [op for op in program.global_block().ops if op.type == "beam_search_decode"]
    assert search.attrs["end_id"] == decode.attrs["end_id"] == 4


def test_misuse_is_named():
    cell = _cell()
    decoder = TrainingDecoder(cell)
    with pytest.raises(ValueError, match="Output of training decoder can only be visited outside the block"):
        decoder()
    with pytest.raises(ValueError, match="step_input should be invoked inside block of TrainingDecoder object"):
        decoder.step_input(L.data("w", shape=[3], dtype="float32", lod_level=1))
    with pytest.raises(ValueError, match="StateCell has already entered a decoder"):
        TrainingDecoder(cell)
    with pytest.raises(ValueError, match="Invalid input x"):
        cell.get_input("x")
    with pytest.raises(ValueError, match="Unknown input y"):
        with decoder.block():
            word = decoder.step_input(L.data("w2", shape=[3], dtype="float32", lod_level=1))
            decoder.state_cell.compute_state(inputs={"y": word})
    other = StateCell(inputs={"x": None}, states={"h": InitState(init=L.fill_constant([2, 3], "float32", 0.0))},
                      out_state="h")  # fmt: skip
    ids = L.data("ids", shape=[1], dtype="int64", lod_level=2)
    beam = BeamSearchDecoder(other, ids, ids, target_dict_dim=6, word_dim=3)
    with pytest.raises(ValueError, match="Output of BeamSearchDecoder object can only be visited outside the block"):
        beam()
    with pytest.raises(ValueError, match="read_array should be invoked inside block of BeamSearchDecoder object"):
        beam.read_array(ids)
    with beam.block():
        with pytest.raises(TypeError, match="The input argument `init` must be a Variable"):
            beam.read_array([1, 2])
        with pytest.raises(ValueError, match="Please invoke read_array before update_array"):
            beam.update_array(ids, ids)
        with pytest.raises(ValueError, match="StateCell has no updater"):
            other.compute_state(inputs={})
