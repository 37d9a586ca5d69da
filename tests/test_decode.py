"""dynamic_decode and the decoders: numpy checks of the pieces, sampling, and refusals that leave the
program as it was (values against fluid 1.8.5: tests/test_goldens.py, golden dynamic_decode)."""

from __future__ import annotations

import numpy as np
import pytest

import fluidcompat as fluid

L = fluid.layers


def _run(build, feed, seed=None):
    main, startup = fluid.Program(), fluid.Program()
    if seed is not None:
        main.random_seed = startup.random_seed = seed
    with fluid.program_guard(main, startup):
        fetch = build()
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    with fluid.scope_guard(scope):
        if startup.global_block().ops:
            exe.run(startup)
        return exe.run(main, feed=feed, fetch_list=fetch)


def test_tile_beam_merge_with_batch_repeats_each_row():
    x = np.arange(12, dtype="float32").reshape(3, 2, 2)

    def build():
        v = fluid.data("x", [None, 2, 2], "float32")
        return [L.BeamSearchDecoder.tile_beam_merge_with_batch(v, 3)]

    (got,) = _run(build, {"x": x})
    np.testing.assert_array_equal(got, np.repeat(x, 3, axis=0))


def test_sample_embedding_helper_draws_ids_in_the_vocabulary_and_finishes_at_end_token():
    def build():
        enc = fluid.data("enc", [None, 4], "float32")
        start = L.fill_constant_batch_size_like(enc, [-1], "int64", 0)
        emb = lambda ids: fluid.embedding(ids, size=[7, 3])  # noqa: E731
        out = lambda x: L.fc(x, size=7)  # noqa: E731
        helper = L.SampleEmbeddingHelper(emb, start, end_token=2, softmax_temperature=0.5, seed=5)
        outs, _, lens = L.dynamic_decode(L.BasicDecoder(L.GRUCell(4), helper, output_fn=out), inits=enc,
                                         max_step_num=5, return_length=True)  # fmt: skip
        return [outs.sample_ids, outs.cell_outputs, lens]

    ids, logits, lens = _run(build, {"enc": np.random.RandomState(0).rand(6, 4).astype("float32")}, seed=3)
    assert ids.dtype == np.int64 and ids.shape[0] == 6 and 1 <= ids.shape[1] <= 6
    assert logits.shape == ids.shape + (7,)
    assert ((ids >= 0) & (ids < 7)).all()
    for row, n in zip(ids, lens):  # an entry's length counts its steps up to and with its end token
        ends = np.flatnonzero(row == 2)
        assert n == (ends[0] + 1 if len(ends) else ids.shape[1])


def test_dynamic_decode_refuses_what_is_not_a_decoder_and_leaves_the_program():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        enc = fluid.data("enc", [None, 4], "float32")
        before = len(main.global_block().ops), len(main.blocks)
        with pytest.raises(TypeError, match="decoder must be a fluid.layers.Decoder. Received: GRUCell"):
            L.dynamic_decode(L.GRUCell(4), inits=enc)
        with pytest.raises(ValueError, match="max_step_num must be None or an int >= 0. Received: -1"):
            L.dynamic_decode(L.BeamSearchDecoder(L.GRUCell(4), 0, 1, 2), inits=enc, max_step_num=-1)

        class Broken(L.Decoder):
            def initialize(self, inits):
                return inits, inits, L.fill_constant_batch_size_like(inits, [-1], "bool", 0)

            def step(self, time, inputs, states):
                raise RuntimeError("step failed")

        with pytest.raises(RuntimeError, match="step failed"):
            L.dynamic_decode(Broken(), inits=enc, max_step_num=3)
        assert (len(main.global_block().ops), len(main.blocks)) == before


def test_a_beam_search_program_saved_as_inference_model_decodes_the_same(tmp_path):
    """save_inference_model of a dynamic_decode program (a While sub-block with tensor arrays) and
    load_inference_model give the same ids as the program that was saved."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        enc = fluid.data("enc", [-1, 16], "float32")
        emb = lambda x: fluid.embedding(x, size=[50, 8])  # noqa: E731
        out = lambda x: L.fc(x, size=50, num_flatten_dims=len(x.shape) - 1, bias_attr=False)  # noqa: E731
        dec = L.BeamSearchDecoder(L.GRUCell(16), 0, 1, 3, embedding_fn=emb, output_fn=out)
        ids, _ = L.dynamic_decode(dec, inits=enc, max_step_num=6, is_test=True)
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    x = np.random.RandomState(1).rand(2, 16).astype("float32")
    with fluid.scope_guard(scope):
        exe.run(startup)
        (want,) = exe.run(main, feed={"enc": x}, fetch_list=[ids])
        fluid.io.save_inference_model(str(tmp_path), ["enc"], [ids], exe, main_program=main)
    with fluid.scope_guard(fluid.Scope()):
        prog, feeds, fetches = fluid.io.load_inference_model(str(tmp_path), exe)
        (got,) = exe.run(prog, feed={feeds[0]: x}, fetch_list=fetches)
    assert want.shape[0] == 2 and 1 <= want.shape[1] <= 7 and want.shape[2] == 3 and want.dtype == np.int64
    np.testing.assert_array_equal(got, want)


def test_training_helper_reads_inputs_whose_time_steps_are_known_only_at_run_time():
    """TrainingHelper over [batch, None, dim] inputs: step t reads time t (teacher forcing), the last
    step's read past the end stays in range; the outputs are the cell run over the inputs (numpy)."""

    def build():
        x = fluid.data("x", [None, None, 3], "float32")
        ln = fluid.data("len", [None], "int64")
        h0 = fluid.data("h0", [None, 4], "float32")
        cell = L.GRUCell(4, param_attr=fluid.initializer.Constant(0.1), bias_attr=fluid.initializer.Constant(0.0))
        outs, states, lens = L.dynamic_decode(
            L.BasicDecoder(cell, L.TrainingHelper(x, ln)), inits=h0, impute_finished=True, return_length=True
        )
        return [outs.cell_outputs, states, lens]

    rng = np.random.RandomState(2)
    x, h0 = rng.rand(2, 5, 3).astype("float32"), rng.rand(2, 4).astype("float32")
    lens_in = np.array([5, 3], "int64")
    out, final, lens = _run(build, {"x": x, "len": lens_in, "h0": h0})

    def gru(xt, h):  # every weight 0.1, biases 0
        g = 1 / (1 + np.exp(-(np.concatenate([xt, h], 1) @ np.full((7, 8), 0.1))))
        r, u = g[:, :4], g[:, 4:]
        c = np.tanh(np.concatenate([xt, r * h], 1) @ np.full((7, 4), 0.1))
        return u * h + (1 - u) * c

    h, want = h0, []
    for t in range(5):  # impute_finished: a finished entry's state stays, its outputs go on
        new = gru(x[:, t], h)
        want.append(new)
        h = np.where((t < lens_in)[:, None], new, h)
    np.testing.assert_allclose(out, np.stack(want, 1), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(lens, lens_in)
    np.testing.assert_allclose(final, h, rtol=1e-5, atol=1e-6)
