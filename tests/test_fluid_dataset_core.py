"""fluid 1.8's dataset extras: ins ids and content before the slots, InMemoryDataset's dense slots of
several rows, FileInstantDataset, slots_shuffle, core.Dataset / core.Fleet and FetchHandler."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

import fluidcompat as fluid
from fluidcompat import core
from fluidcompat.fluid_dataset import FetchHandlerMonitor


def _vars(dtype="int64", lod_level=1, n=2):
    return [fluid.data(f"s{i}", [None, 1], dtype, lod_level=lod_level) for i in range(n)]


def _memory(tmp_path, text, slots, **flags):
    f = tmp_path / "a.txt"
    f.write_text(text)
    dataset = fluid.DatasetFactory().create_dataset("InMemoryDataset")
    dataset.set_use_var(slots)
    dataset.set_batch_size(2)
    dataset.set_filelist([str(f)])
    for name, value in flags.items():
        getattr(dataset, f"set_{name}")(value)
    return dataset


def test_ins_id_and_content_come_before_the_slots(tmp_path):
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        slots = _vars()
    dataset = _memory(tmp_path, "1 a 1 x 1 5 2 6 7\n1 b 1 y 1 8 1 9\n", slots, parse_ins_id=True, parse_content=True)
    dataset.load_into_memory()
    (feed,) = list(dataset._feeds(fluid.CPUPlace()))
    assert np.array(feed["s0"]).ravel().tolist() == [5, 8]
    assert np.array(feed["s1"]).ravel().tolist() == [6, 7, 9]
    assert feed["s1"].recursive_sequence_lengths() == [[2, 1]]
    # without the flags the id is read as a slot's value
    plain = _memory(tmp_path, "1 a 1 5 1 6\n", slots)
    with pytest.raises(ValueError, match="slot 's0': the values \\['a'\\] are not all INT64 numbers"):
        plain.load_into_memory()
    bad = _memory(tmp_path, "2 a b 1 5 1 6\n", slots, parse_ins_id=True)
    with pytest.raises(ValueError, match="expected the ins id as '1 <ins id>' before the slots"):
        bad.load_into_memory()


def test_set_merge_by_lineid_parses_ins_ids(tmp_path):
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        slots = _vars()
    dataset = _memory(tmp_path, "1 id1 1 5 1 6\n1 id1 1 7 1 8\n", slots)
    dataset.set_merge_by_lineid(2)
    assert dataset.parse_ins_id and dataset.merge_size == 2
    dataset.load_into_memory()
    dataset.dataset.merge_by_lineid()
    assert dataset.get_memory_data_size() == 2  # fluid 1.8.5's CPU build kept both


def test_in_memory_dense_slot_of_several_rows(tmp_path):
    """As fluid 1.8.5's in-memory data feed: an instance's values are concatenated, one LoD offset per
    instance (QueueDataset still refuses a count that is not one row)."""
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        slots = _vars(lod_level=0)
    dataset = _memory(tmp_path, "2 3 3 1 1\n2 3 4 1 2\n1 9 1 0\n", slots)
    dataset.load_into_memory()
    first, second = list(dataset._feeds(fluid.CPUPlace()))
    assert np.array(first["s0"]).tolist() == [[3], [3], [3], [4]]
    assert first["s0"].lod() == [[0, 2, 4]]
    assert dataset._dense_lods(first)["s0"] == [[0, 2, 4]]
    np.testing.assert_array_equal(first["s1"], [[1], [2]])
    np.testing.assert_array_equal(second["s1"], [[0]])  # dense slots keep their 0 values
    queue = fluid.DatasetFactory().create_dataset("QueueDataset")
    queue.set_use_var(slots)
    queue.set_filelist(dataset.filelist)
    with pytest.raises(ValueError, match="takes 1 values per instance, the line gives 2"):
        list(queue._feeds(fluid.CPUPlace()))


def test_file_instant_dataset_streams(tmp_path):
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        slots = _vars()
    f = tmp_path / "a.txt"
    f.write_text("1 5 1 6\n1 0 1 8\n")
    dataset = fluid.DatasetFactory().create_dataset("FileInstantDataset")
    dataset.set_use_var(slots)
    dataset.set_batch_size(2)
    dataset.set_filelist([str(f)])
    (feed,) = list(dataset._feeds(fluid.CPUPlace()))
    assert np.array(feed["s0"]).ravel().tolist() == [5, 0]
    with pytest.raises(NotImplementedError, match="FileInstantDataset does not support local shuffle"):
        dataset.local_shuffle()
    with pytest.raises(ValueError, match="datafeed class MyOwnDataset does not exist"):
        fluid.DatasetFactory().create_dataset("MyOwnDataset")


def test_slots_shuffle_moves_one_slot_only(tmp_path):
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        slots = _vars()
    text = "".join(f"1 {i} 1 {100 + i}\n" for i in range(1, 41))
    dataset = _memory(tmp_path, text, slots)
    dataset.load_into_memory()
    dataset.slots_shuffle(["s0"])  # fea_eval not set: nothing moves
    assert [inst[0][0] for inst in dataset._memory] == list(range(1, 41))
    dataset.set_fea_eval(100, True)
    dataset.slots_shuffle(["s0"])
    s0 = [inst[0][0] for inst in dataset._memory]
    assert sorted(s0) == list(range(1, 41)) and s0 != list(range(1, 41))
    assert [inst[1][0] for inst in dataset._memory] == list(range(101, 141))
    with pytest.raises(ValueError, match="'nope' is not one of the dataset's slots"):
        dataset.slots_shuffle(["nope"])


def test_core_dataset_and_fleet():
    d = core.Dataset("MultiSlotDataset")
    assert (d.get_thread_num(), d.get_filelist(), d.get_trainer_num()) == (1, [], 1)
    assert d.get_hdfs_config() == ("", "") and d.get_download_cmd() == ""
    d.set_thread_num(12)
    d.set_filelist(["a.txt", "b.txt"])
    d.set_trainer_num(4)
    d.set_hdfs_config("fs", "ugi")
    d.set_download_cmd("./get")
    assert (d.get_thread_num(), d.get_filelist(), d.get_trainer_num()) == (12, ["a.txt", "b.txt"], 4)
    assert d.get_hdfs_config() == ("fs", "ugi") and d.get_download_cmd() == "./get"
    with pytest.raises(AttributeError, match="has no attribute 'nonsense'"):
        d.nonsense()
    dataset = fluid.DatasetFactory().create_dataset("InMemoryDataset")
    dataset.set_thread(3)
    dataset.set_download_cmd("cat")
    assert dataset.dataset.get_thread_num() == 3 and dataset.dataset.get_download_cmd() == "cat"
    fleet = core.Fleet()
    assert fleet.get_cache_threshold(0) == 0.0 and fleet.set_client2client_config(1, 1, 1) is None


def test_fetch_handler_gets_scope_values():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        w = fluid.layers.create_parameter([2], "float32", name="w", default_initializer=fluid.initializer.Constant(3.0))
    scope = fluid.Scope()
    with fluid.scope_guard(scope):
        fluid.Executor(fluid.CPUPlace()).run(startup)
    got, called = [], threading.Event()

    class Handler(fluid.executor.FetchHandler):
        def handler(self, res_dict):
            got.append(res_dict)
            called.set()

    with pytest.warns(UserWarning, match="the value of missing is not a Variable"):
        monitor = FetchHandlerMonitor(scope, Handler(var_dict={"w": w, "missing": "x"}, period_secs=0.01))
    monitor.start()
    assert called.wait(5)
    monitor.stop()
    np.testing.assert_array_equal(got[0]["w"], [3.0, 3.0])
    assert got[0]["missing"] is None
    n = len(got)
    time.sleep(0.05)
    assert len(got) == n  # stopped
    with pytest.raises(ValueError, match="needs var_dict"):
        fluid.executor.FetchHandler()
