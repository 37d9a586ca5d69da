"""LoD beam_search and beam_search_decode: a numpy check of the selection on random scores, what
fluid 1.8.5 crashed on, and refusals that name the problem (values against fluid 1.8.5:
tests/test_goldens.py, golden beam_search_lod)."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

import fluidcompat as fluid

L = fluid.layers
PLACE = fluid.CPUPlace()
GOLDEN = os.path.join(os.path.dirname(__file__), "golden", "beam_search_lod.json")


def _lod_tensor(data, offsets, dtype, width=1):
    lens = [[b - a for a, b in zip(level, level[1:])] for level in offsets]
    return fluid.create_lod_tensor(np.asarray(data, dtype).reshape(-1, width), lens, PLACE)


def _fetch(main, feed, fetch):
    exe = fluid.Executor(PLACE)
    with fluid.scope_guard(fluid.Scope()):
        return exe.run(main, feed=feed, fetch_list=fetch, return_numpy=False)


def _search_program(width, beam_size, end_id):
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        pre_ids = fluid.data("pre_ids", [None, 1], "int64", lod_level=2)
        pre_scores = fluid.data("pre_scores", [None, 1], "float32", lod_level=2)
        ids = fluid.data("ids", [None, width], "int64", lod_level=2)
        scores = fluid.data("scores", [None, width], "float32", lod_level=2)
        outs = L.beam_search(pre_ids, pre_scores, ids, scores, beam_size, end_id, return_parent_idx=True)
    return main, list(outs)


def test_beam_search_keeps_each_sources_best_candidates_grouped_by_prefix():
    rng = np.random.RandomState(3)
    prefixes = [3, 1, 2, 4]  # per source
    rows, width, beam_size, end_id = sum(prefixes), 5, 3, 99
    sources = np.concatenate([[0], np.cumsum(prefixes)]).tolist()
    lod = [sources, list(range(rows + 1))]
    ids = rng.randint(0, 50, (rows, width))
    scores = rng.permutation(rows * width).reshape(rows, width).astype("float32") * -0.1  # distinct
    main, outs = _search_program(width, beam_size, end_id)
    feed = {
        "pre_ids": _lod_tensor(rng.randint(0, 50, rows), lod, "int64"),
        "pre_scores": _lod_tensor(np.zeros(rows), lod, "float32"),
        "ids": _lod_tensor(ids, lod, "int64", width),
        "scores": _lod_tensor(scores, lod, "float32", width),
    }
    sel_ids, sel_scores, parents = _fetch(main, feed, outs)
    # numpy: per source the beam_size best (row, column) by score, listed by row, best first in a row
    want_rows = []
    for s in range(len(prefixes)):
        block = scores[sources[s] : sources[s + 1]]
        best = np.argsort(-block, axis=None, kind="stable")[:beam_size]
        picked = [(sources[s] + i // width, i % width) for i in best]
        want_rows += sorted(picked, key=lambda rc: (rc[0], -scores[rc]))
    np.testing.assert_array_equal(np.array(sel_ids).ravel(), [ids[rc] for rc in want_rows])
    np.testing.assert_allclose(np.array(sel_scores).ravel(), [scores[rc] for rc in want_rows])
    np.testing.assert_array_equal(np.array(parents), [r for r, _ in want_rows])
    per_prefix = np.bincount([r for r, _ in want_rows], minlength=rows)
    assert sel_ids.lod() == [sources, np.concatenate([[0], np.cumsum(per_prefix)]).tolist()]


def _decode_program(steps, beam_size, end_id):
    main, feed = fluid.Program(), {}
    with fluid.program_guard(main, fluid.Program()):
        id_array, score_array = L.create_array("int64"), L.create_array("float32")
        for t, (step_ids, step_scores, offsets) in enumerate(steps):
            i = L.fill_constant([1], "int64", t)
            L.array_write(fluid.data("i%d" % t, [None, 1], "int64", lod_level=2), i, array=id_array)
            L.array_write(fluid.data("s%d" % t, [None, 1], "float32", lod_level=2), i, array=score_array)
            feed["i%d" % t] = _lod_tensor(step_ids, offsets, "int64")
            feed["s%d" % t] = _lod_tensor(step_scores, offsets, "float32")
        outs = L.beam_search_decode(id_array, score_array, beam_size, end_id)
    return main, feed, list(outs)


def test_decode_with_fewer_candidates_than_beam_size_gives_the_sentences_there_are():
    """fluid 1.8.5 crashed (segmentation fault) when a source had fewer candidates than beam_size;
    here its sentences are those fluid gave with beam_size equal to the candidates (recorded)."""
    steps = [([0, 0], [0, 0], [[0, 1, 2], [0, 1, 2]]), ([3, 4, 5, 6], [-1, -2, -0.5, -0.7], [[0, 1, 2], [0, 2, 4]])]
    with open(GOLDEN) as f:
        want = json.load(f)["decode_two_candidates"]
    main, feed, outs = _decode_program(steps, 3, 1)
    for got, (lod, shape, *values) in zip(_fetch(main, feed, outs), want):
        assert (got.lod(), list(np.array(got).shape)) == (lod, shape)
        np.testing.assert_allclose(np.array(got).ravel(), values, rtol=1e-6)


def test_beam_search_without_lod_names_the_input_and_leaves_the_scope():
    """fluid 1.8.5 crashed (segmentation fault) on scores without a LoD."""
    main, outs = _search_program(2, 2, 0)
    lod = [[0, 1], [0, 1]]
    scope = fluid.Scope()
    feed = {
        "pre_ids": _lod_tensor([1], lod, "int64"),
        "pre_scores": _lod_tensor([0.0], lod, "float32"),
        "ids": _lod_tensor([[1, 2]], lod, "int64", 2),
        "scores": np.array([[-1.0, -2.0]], "float32"),
    }
    before = str(main)
    with (
        fluid.scope_guard(scope),
        pytest.raises(fluid.core.EnforceNotMet, match=r"beam_search: Input\(scores\) must carry a LoD of 2"),
    ):
        fluid.Executor(PLACE).run(main, feed=feed, fetch_list=outs)
    assert str(main) == before
    feed["scores"] = _lod_tensor([[-1.0, -2.0]], lod, "float32", 2)
    with fluid.scope_guard(scope):
        sel_ids = fluid.Executor(PLACE).run(main, feed=feed, fetch_list=outs[:1], return_numpy=False)[0]
    assert np.array(sel_ids).ravel().tolist() == [1, 2] and sel_ids.lod() == [[0, 1], [0, 2]]


def test_beam_search_refuses_wrong_dtypes_before_adding_an_op():
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        pre_ids = fluid.data("pre_ids", [None, 1], "float32", lod_level=2)
        scores = fluid.data("scores", [None, 2], "float32", lod_level=2)
        n = len(main.global_block().ops)
        with pytest.raises(TypeError, match=r"'pre_ids' in beam_search must be \['int64'\], but received float32"):
            L.beam_search(pre_ids, scores, None, scores, 2, 0)
        with pytest.raises(TypeError, match=r"'ids' in beam_search must be \(Variable, NoneType\)"):
            L.beam_search(L.cast(pre_ids, "int64"), scores, [1, 2], scores, 2, 0)
        m = len(main.global_block().ops)
        arr = L.create_array("float32")
        with pytest.raises(TypeError, match=r"'ids' in beam_search_encode must be \['int64'\], but received float32"):
            L.beam_search_decode(arr, arr, 2, 0)
    assert n + 1 == m and [op.type for op in main.global_block().ops][n:] == ["cast"]


def test_decode_refuses_arrays_of_different_lengths():
    main, feed, _ = _decode_program([([0], [0.0], [[0, 1], [0, 1]]), ([3], [-1.0], [[0, 1], [0, 1]])], 2, 1)
    with fluid.program_guard(main, fluid.Program()):
        ids = L.create_array("int64")
        scores = L.create_array("float32")
        zero = L.fill_constant([1], "int64", 0)
        L.array_write(main.global_block().var("i0"), zero, array=ids)
        L.array_write(main.global_block().var("s0"), zero, array=scores)
        L.array_write(main.global_block().var("s1"), L.fill_constant([1], "int64", 1), array=scores)
        outs = L.beam_search_decode(ids, scores, 2, 1)
    with pytest.raises(fluid.core.EnforceNotMet, match="Ids and Scores must hold as many steps; received 1 and 2"):
        _fetch(main, feed, list(outs))
