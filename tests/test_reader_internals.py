"""fluid 1.8's reader internals that scripts and tests reach: the cleanup registrar, the multiprocess
loader's process loop, ragged batches, ``GeneratorLoader``, ``PyReader._loader`` and py_reader's queue."""

from __future__ import annotations

import multiprocessing
import queue
import signal
import threading

import numpy as np
import pytest

import fluidcompat as fluid
from fluidcompat import reader
from fluidcompat.executor.interpreter import EnforceNotMet
from fluidcompat_ops.python import EOFException


def test_cleanup_empties_the_registered_queues():
    q = queue.Queue(5)
    for i in range(5):
        q.put(i)
    reader.multiprocess_queue_set.add(q)
    try:
        reader._cleanup()
        assert q.empty()
    finally:
        reader.multiprocess_queue_set.discard(q)


def test_cleanup_registrar(monkeypatch):
    registered = []
    monkeypatch.setattr("atexit.register", registered.append)
    monkeypatch.setattr(reader.CleanupFuncRegistrar, "_registered_func_set", set())
    monkeypatch.setattr(reader.CleanupFuncRegistrar, "_executed_func_set", set())
    with pytest.raises(TypeError, match="5 is not callable"):
        reader.CleanupFuncRegistrar.register(5)
    calls = []
    old = signal.getsignal(signal.SIGUSR1)
    try:
        reader.CleanupFuncRegistrar.register(lambda: calls.append(1), signals=[signal.SIGUSR1])
        handler = signal.getsignal(signal.SIGUSR1)
        with pytest.raises(SystemExit) as exit_info:
            handler(signal.SIGUSR1, None)
        assert exit_info.value.code == signal.SIGUSR1 and calls == [1]
        registered[-1]()  # the atexit call: the function ran already, so not again
        assert calls == [1]
    finally:
        signal.signal(signal.SIGUSR1, old)


def _dygraph_loader(generator):
    with fluid.dygraph.guard():
        loader = fluid.io.DataLoader.from_generator(capacity=5, use_multiprocess=True)
        loader.set_batch_generator(generator, places=fluid.CPUPlace())
    return loader


def test_reader_process_loop_sends_tensors_through_a_process_queue():
    batches = [(np.full([2, 3], i, "float32"), np.arange(2).reshape(2, 1) + i) for i in range(3)]
    loader = _dygraph_loader(lambda: iter(batches))
    loader._data_queue = multiprocessing.get_context("fork").Queue(5)
    loader._reader_process_loop()
    for i in range(3):
        image, label = loader._data_queue.get(timeout=10)
        np.testing.assert_array_equal(np.array(image), batches[i][0])
        np.testing.assert_array_equal(np.array(label), batches[i][1])
    assert loader._data_queue.get(timeout=10) is None
    loader = _dygraph_loader(lambda: iter([None]))
    loader._data_queue = queue.Queue(5)
    with pytest.raises(EnforceNotMet, match="gave None"):
        loader._reader_process_loop()


def test_check_input_array_and_generator_loader_name():
    assert reader.GeneratorLoader is reader._GeneratorLoader
    arr = reader.GeneratorLoader._check_input_array([np.arange(2), np.arange(2)])
    assert arr.shape == (2, 2)
    with pytest.raises(TypeError, match="nested lists of different lengths"):
        reader.GeneratorLoader._check_input_array([np.arange(2), np.arange(3)])
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        x = fluid.data("x", [None, 2], "float32")
        py_reader = fluid.io.PyReader(feed_list=[x], capacity=2, iterable=True)
    assert py_reader._loader is py_reader
    py_reader.decorate_batch_generator(lambda: iter([[[[1.0, 2.0], [3.0]]]]), places=fluid.CPUPlace())
    # as fluid 1.8's: the reader's TypeError kills the loader's queue, and the iteration raises that
    with pytest.raises(EnforceNotMet, match="Blocking queue is killed .*TypeError: .*different lengths") as info:
        list(py_reader())
    assert isinstance(info.value.__cause__, TypeError)


def test_py_reader_queue_and_lod_levels():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        r = fluid.layers.py_reader(
            capacity=2, shapes=[[-1, 2], [-1, 1]], dtypes=["float32", "int64"], lod_levels=[1, 0]
        )
        x, y = fluid.layers.read_file(r)
    assert (x.lod_level, y.lod_level) == (1, 0)
    q = r.queue
    assert q.capacity() == 2 and q.size() == 0 and not q.is_closed()
    exe = fluid.Executor(fluid.CPUPlace())
    batches = [
        [
            fluid.create_lod_tensor(np.full([3, 2], i, "float32"), [[1, 2]], fluid.CPUPlace()),
            np.full([3, 1], i, "int64"),
        ]
        for i in range(4)
    ]

    def push():
        for b in batches:  # waits while two are queued
            q.push(b)
        q.close()

    t = threading.Thread(target=push)
    t.start()
    for i in range(4):
        xv, yv = exe.run(main, fetch_list=[x, y], return_numpy=False)
        np.testing.assert_array_equal(np.array(xv), np.full([3, 2], i, "float32"))
        assert xv.recursive_sequence_lengths() == [[1, 2]]
        np.testing.assert_array_equal(np.array(yv), np.full([3, 1], i))
    t.join()
    with pytest.raises(EOFException):
        exe.run(main, fetch_list=[x])
    assert q.push(batches[0]) is False  # closed


def test_dygraph_loader_iterable_only_and_timed(monkeypatch):
    with pytest.raises(ValueError, match="Please give value to capacity."):
        fluid.io.DataLoader.from_generator()
    with fluid.dygraph.guard():
        loader = fluid.io.DataLoader.from_generator(capacity=2, iterable=False)
        assert loader.iterable
        loader.set_batch_generator(lambda: iter([(np.ones([2, 2], "float32"),)]), places=fluid.CPUPlace())
        (batch,) = list(loader())
        np.testing.assert_array_equal(batch[0].numpy(), np.ones([2, 2]))
        monkeypatch.setattr(reader, "_QUEUE_GET_TIMEOUT", 0.2)
        stop = threading.Event()

        def slow():
            yield (np.ones([1], "float32"),)
            stop.wait(5)
            yield (np.ones([1], "float32"),)

        timed = fluid.io.DataLoader.from_generator(capacity=2, use_multiprocess=True)
        timed.set_batch_generator(slow, places=fluid.CPUPlace())
        got = []
        with pytest.raises(EnforceNotMet, match="Blocking queue is killed .*no batch came .* in 0.2 seconds"):
            for b in timed():
                got.append(b)
        stop.set()
        assert len(got) == 1
