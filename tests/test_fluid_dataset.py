"""fluid.DatasetFactory datasets: slot-file parsing, batching, shuffling and the errors for bad files
(printing and training against fluid 1.8.5: test_goldens)."""

from __future__ import annotations

import numpy as np
import pytest

import fluidcompat as fluid

L = fluid.layers


def _slots():
    ids = fluid.data("ids", [None, 1], "int64", lod_level=1)
    dense = fluid.data("dense", [None, 2], "float32")
    return ids, dense


def _dataset(kind, files, slots, batch_size=2, pipe="cat"):
    dataset = fluid.DatasetFactory().create_dataset(kind)
    dataset.set_use_var(list(slots))
    dataset.set_batch_size(batch_size)
    dataset.set_pipe_command(pipe)
    dataset.set_filelist([str(f) for f in files])
    return dataset


def test_batches_hold_the_slots(tmp_path):
    """Sparse slots become LoD tensors (InMemoryDataset drops 0 ids, QueueDataset keeps them), dense slots
    rows; a last short batch is kept."""
    f = tmp_path / "a.txt"
    f.write_text("2 3 0 2 0.5 1.5\n1 7 2 2.0 3.0\n3 0 1 4 2 -1 0\n")
    slots = _slots()
    queue = list(_dataset("QueueDataset", [f], slots)._feeds(fluid.CPUPlace()))
    memory = _dataset("InMemoryDataset", [f], slots)
    memory.load_into_memory()
    assert memory.get_memory_data_size() == 3
    loaded = list(memory._feeds(fluid.CPUPlace()))
    assert len(queue) == len(loaded) == 2
    assert np.array(queue[0]["ids"]).ravel().tolist() == [3, 0, 7]
    assert queue[0]["ids"].recursive_sequence_lengths() == [[2, 1]]
    assert np.array(loaded[0]["ids"]).ravel().tolist() == [3, 7]
    assert loaded[0]["ids"].recursive_sequence_lengths() == [[1, 1]]
    assert np.array(loaded[1]["ids"]).ravel().tolist() == [1, 4]
    np.testing.assert_array_equal(queue[0]["dense"], np.array([[0.5, 1.5], [2.0, 3.0]], "float32"))
    np.testing.assert_array_equal(queue[1]["dense"], np.array([[-1.0, 0.0]], "float32"))


def test_local_shuffle_keeps_every_instance(tmp_path):
    f = tmp_path / "a.txt"
    f.write_text("".join(f"1 {i + 1} 2 {i}.0 {i}.5\n" for i in range(20)))
    dataset = _dataset("InMemoryDataset", [f], _slots(), batch_size=20)
    dataset.load_into_memory()
    dataset.local_shuffle()
    (feed,) = list(dataset._feeds(fluid.CPUPlace()))
    ids = np.array(feed["ids"]).ravel()
    assert sorted(ids.tolist()) == list(range(1, 21))
    np.testing.assert_array_equal(feed["dense"][:, 0], ids - 1)  # the slots of an instance stay together


@pytest.mark.parametrize(
    "line, message",
    [
        ("0 2 1.0 2.0", "'ids': the number of values can not be zero"),
        ("2 3 4 1 1.0", "'dense': a dense slot of shape \\[-1, 2\\] takes 2 values per instance, the line gives 1"),
        ("1 3 2 1.0", "slot 'dense': 2 values announced, 1 found"),
        ("1 x 2 1.0 2.0", "slot 'ids': the values \\['x'\\] are not all INT64 numbers"),
        ("1 3 2 1.0 2.0 9", ": 1 values left after the last slot"),
    ],
)
def test_bad_lines_are_named(tmp_path, line, message):
    f = tmp_path / "bad.txt"
    f.write_text(line + "\n")
    dataset = _dataset("QueueDataset", [f], _slots())
    with pytest.raises(ValueError, match=f"'{f}' line 1.*{message}"):
        list(dataset._feeds(fluid.CPUPlace()))


def test_a_failing_pipe_command_and_a_missing_file_are_named(tmp_path):
    f = tmp_path / "a.txt"
    f.write_text("1 3 2 1.0 2.0\n")
    with pytest.raises(RuntimeError, match="the pipe command 'exit 3' failed on .*a.txt' \\(exit 3\\)"):
        list(_dataset("QueueDataset", [f], _slots(), pipe="exit 3")._feeds(fluid.CPUPlace()))
    with pytest.raises(OSError, match="dataset file '.*missing.txt' cannot be read"):
        list(_dataset("QueueDataset", [tmp_path / "missing.txt"], _slots())._feeds(fluid.CPUPlace()))


def test_train_from_dataset_refuses_what_it_cannot_run(tmp_path):
    ids, dense = _slots()
    exe = fluid.Executor(fluid.CPUPlace())
    with pytest.raises(TypeError, match="dataset must come from fluid.DatasetFactory"):
        exe.train_from_dataset(fluid.default_main_program(), dataset=[1, 2])
    dataset = _dataset("InMemoryDataset", [], (ids, dense))
    with pytest.raises(ValueError, match="fetch_info has 2 labels for 1 fetch_list variables"):
        exe.train_from_dataset(dataset=dataset, fetch_list=[dense], fetch_info=["a", "b"])
    with pytest.warns(UserWarning, match="load_into_memory\\(\\) was not called"):
        exe.train_from_dataset(dataset=dataset, fetch_list=[dense])
    with pytest.raises(ValueError, match="only supports dtype=float32, float64, int32 and int64; variable 'b' is BOOL"):
        dataset.set_use_var([fluid.data("b", [None, 1], "bool")])


def test_data_feed_desc_reads_what_fluid_refused_and_names_errors(tmp_path):
    """A file setting pipe_command (fluid 1.8.5: "should not have multiple pipe_command fields"), a
    comment, and errors naming an unknown field, a wrong value and an unknown slot."""
    path = tmp_path / "feed.proto"
    path.write_text(
        '# a feed\nname: "MultiSlotDataFeed"\npipe_command: "zcat"\nmulti_slot_desc { slots { name: "w" } }\n'
    )
    desc = fluid.DataFeedDesc(str(path))
    desc.set_use_slots(["w"])
    assert desc.desc() == (
        'name: "MultiSlotDataFeed"\nmulti_slot_desc {\n  slots {\n    name: "w"\n    is_used: true\n  }\n}\n'
        'pipe_command: "zcat"\n'
    )
    with pytest.raises(ValueError, match="set_dense_slots: no slot named 'x'; the slots are \\['w'\\]"):
        desc.set_dense_slots(["x"])
    path.write_text("batch_size: many\n")
    with pytest.raises(ValueError, match="field 'batch_size' takes a int, received many"):
        fluid.DataFeedDesc(str(path))
    path.write_text("threads: 2\n")
    with pytest.raises(ValueError, match='"paddle.framework.DataFeedDesc" has no field named "threads"'):
        fluid.DataFeedDesc(str(path))


def test_data_loader_from_dataset_matches_fluid():
    """DataLoader.from_dataset over QueueDataset and InMemoryDataset: every batch's values and LoDs
    per epoch, drop_last, an InMemoryDataset dealt to two places, the losses of a model trained on
    the loader's feeds, as fluid 1.8.5; fluid's assertions are a TypeError and a ValueError here
    with the same words."""
    from tests.test_goldens import load, run_fluidcompat

    got, want = run_fluidcompat("dataset_loader.py"), load("dataset_loader.json")
    g_err, w_err = got.pop("errors"), want.pop("errors")
    assert got == want
    assert [e[0] for e in w_err] == ["AssertionError", "AssertionError"]
    assert g_err[0][0] == "TypeError" and g_err[0][1].startswith(w_err[0][1])
    assert g_err[1] == ["ValueError", w_err[1][1]]


def test_data_loader_from_dataset_queue_places_read_their_own_files(tmp_path):
    """Two places over a QueueDataset: place k reads files k, k + 2, ...; the steps end with the
    shorter stream; each iteration reads the files again; dygraph mode is refused."""
    files = []
    for k, rows in enumerate((3, 2)):
        path = tmp_path / f"part{k}.txt"
        path.write_text("".join(f"1 {10 * k + r} 2 {r}.0 {k}.5\n" for r in range(rows)))
        files.append(path)
    dataset = _dataset("QueueDataset", files, _slots(), batch_size=1)
    loader = fluid.io.DataLoader.from_dataset(dataset, fluid.cpu_places(2), drop_last=False)
    for _ in range(2):
        steps = [[np.array(d["ids"]).reshape(-1).tolist() for d in step] for step in loader]
        assert steps == [[[0], [10]], [[1], [11]]]
    step = next(iter(loader()))
    assert step[1]["dense"].lod() == [[0, 2]] and np.array(step[1]["dense"]).tolist() == [[0.0, 1.5]]
    with fluid.dygraph.guard(fluid.CPUPlace()):
        with pytest.raises(RuntimeError, match="not supported in dygraph mode"):
            fluid.io.DataLoader.from_dataset(dataset, fluid.cpu_places(1))


def test_loader_feeds_train_and_reductions_over_rows_drop_the_lod(tmp_path):
    """A dense slot's LoD (one offset per instance's values, as fluid's data feed gave it) does not
    reach a reduction over the rows, as in fluid 1.8.5 (which printed [[3.0], [16.0], [13.5]])."""
    for k, rows in enumerate((3, 2)):
        (tmp_path / f"part{k}.txt").write_text("".join(f"1 {10 * k + r} 2 {r}.0 {k}.5\n" for r in range(rows)))
    ids, dense = _slots()
    total = L.reduce_sum(dense) + L.reduce_sum(L.sequence_pool(L.cast(ids, "float32"), "sum"))
    dataset = _dataset("QueueDataset", sorted(tmp_path.iterdir()), (ids, dense), batch_size=2)
    loader = fluid.io.DataLoader.from_dataset(dataset, fluid.cpu_places(1), drop_last=False)
    exe = fluid.Executor(fluid.CPUPlace())
    assert [exe.run(feed=data, fetch_list=[total])[0].tolist() for data in loader] == [[3.0], [16.0], [13.5]]
