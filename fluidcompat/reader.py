"""Readers as fluid 1.8 had them: ``paddle.reader`` decorators (a reader is a function returning an
iterator of samples), ``paddle.batch``, and ``fluid.io.DataLoader`` / ``PyReader`` built from
generators, which yield feed dicts for ``Executor.run``."""

from __future__ import annotations

import itertools
import queue
import random
import threading
from typing import Callable, Iterable, Optional

import numpy as np

__all__ = [
    "ComposeNotAligned",
    "batch",
    "buffered",
    "cache",
    "chain",
    "compose",
    "firstn",
    "map_readers",
    "multiprocess_reader",
    "shuffle",
    "xmap_readers",
    "default_collate_fn",
    "DataLoader",
    "PyReader",
]


class ComposeNotAligned(ValueError):
    """``compose`` found readers of different lengths."""

    pass


def batch(reader, batch_size, drop_last=False):
    """A reader of lists of ``batch_size`` samples (the last shorter one kept unless ``drop_last``)."""
    batch_size = int(batch_size)
    if batch_size <= 0:
        raise ValueError(f"batch_size should be a positive integeral value, but got batch_size={batch_size}")

    def batch_reader():
        b = []
        for sample in reader():
            b.append(sample)
            if len(b) == batch_size:
                yield b
                b = []
        if b and not drop_last:
            yield b

    return batch_reader


def cache(reader):
    """Reads ``reader`` once, then serves its samples from memory."""
    all_data = tuple(reader())

    def cached():
        yield from all_data

    return cached


def chain(*readers):
    """The samples of each reader in turn."""

    def chained():
        yield from itertools.chain(*[r() for r in readers])

    return chained


def compose(*readers, **kwargs):
    """Samples of several readers side by side: tuples are spread, other samples kept whole."""
    check_alignment = kwargs.pop("check_alignment", True)

    def make_tuple(x):
        return x if isinstance(x, tuple) else (x,)

    def composed():
        its = [r() for r in readers]
        if not check_alignment:
            for outputs in zip(*its):
                yield sum((make_tuple(o) for o in outputs), ())
            return
        for outputs in itertools.zip_longest(*its):
            if any(o is None for o in outputs):
                raise ComposeNotAligned("outputs of readers are not aligned.")
            yield sum((make_tuple(o) for o in outputs), ())

    return composed


def firstn(reader, n):
    """The first ``n`` samples of ``reader``."""

    def first_n():
        yield from itertools.islice(reader(), n)

    return first_n


def map_readers(func, *readers):
    """``func`` over the samples of the readers, taken side by side."""

    def mapped():
        yield from map(func, *[r() for r in readers])

    return mapped


def shuffle(reader, buf_size):
    """Shuffles within windows of ``buf_size`` samples."""

    def shuffled():
        buf = []
        for sample in reader():
            buf.append(sample)
            if len(buf) >= buf_size:
                random.shuffle(buf)
                yield from buf
                buf = []
        if buf:
            random.shuffle(buf)
            yield from buf

    return shuffled


_END = object()


def buffered(reader, size):
    """Reads ahead up to ``size`` samples in a thread."""

    def read_worker(r, q):
        try:
            for d in r:
                q.put(d)
        finally:
            q.put(_END)

    def buffered_reader():
        q: queue.Queue = queue.Queue(maxsize=size)
        t = threading.Thread(target=read_worker, args=(reader(), q), daemon=True)
        t.start()
        while True:
            e = q.get()
            if e is _END:
                break
            yield e

    return buffered_reader


def xmap_readers(mapper, reader, process_num, buffer_size, order=False):
    """``mapper`` over the samples in ``process_num`` threads (in order when ``order``)."""
    from concurrent.futures import ThreadPoolExecutor

    def xreader():
        with ThreadPoolExecutor(max_workers=max(1, int(process_num))) as pool:
            if order:
                yield from pool.map(mapper, reader())
                return
            pending = []
            for sample in reader():
                pending.append(pool.submit(mapper, sample))
                if len(pending) >= buffer_size:
                    yield pending.pop(0).result()
            for f in pending:
                yield f.result()

    return xreader


class _ReaderFailed:
    def __init__(self, text: str) -> None:
        self.text = text


def _read_into(reader, q) -> None:
    try:
        for sample in reader():
            q.put(sample)
    except Exception as e:  # noqa: BLE001  (reported to the parent, which raises it)
        q.put(_ReaderFailed(f"{type(e).__name__}: {e}"))
    finally:
        q.put(None)


def multiprocess_reader(readers, use_pipe=True, queue_size=1000):
    """The samples of several readers, each read in its own forked process (fluid's design); samples
    arrive in whatever order the processes produce them. ``use_pipe`` is accepted (one queue here)."""
    import multiprocessing

    def reader():
        ctx = multiprocessing.get_context("fork")
        q = ctx.Queue(maxsize=queue_size)
        procs = [ctx.Process(target=_read_into, args=(r, q), daemon=True) for r in readers]
        for p in procs:
            p.start()
        finished = 0
        try:
            while finished < len(readers):
                sample = q.get()
                if sample is None:
                    finished += 1
                elif isinstance(sample, _ReaderFailed):
                    raise RuntimeError(f"multiprocess_reader: a reader failed in its process: {sample.text}")
                else:
                    yield sample
        finally:
            for p in procs:
                p.join(timeout=1)
                if p.is_alive():
                    p.terminate()

    return reader


# -- the cleanup of fluid 1.8's multiprocess loaders (fluid.reader / fluid.multiprocess_utils) ----------
# the queues that loader processes fill; emptied at exit so that no process blocks on a full queue
multiprocess_queue_set: set = set()


def _clear_multiprocess_queue_set() -> None:
    for data_queue in list(multiprocess_queue_set):
        while True:
            try:
                data_queue.get_nowait()
            except queue.Empty:
                break


def _cleanup() -> None:
    """Empties the loaders' queues (fluid also closed its shared-memory files; there are none here)."""
    _clear_multiprocess_queue_set()


def _cleanup_mmap() -> None:
    """fluid closed the shared-memory files of its loader processes: none are made here."""


class CleanupFuncRegistrar:
    """Runs cleanup functions once, at exit or when one of the given signals arrives (then the process
    exits: ``KeyboardInterrupt`` for SIGINT, ``SystemExit(signum)`` otherwise). A handler that was set
    for such a signal before is run at exit instead."""

    _executed_func_set: set = set()
    _registered_func_set: set = set()

    @classmethod
    def register(cls, function, signals=()):
        import atexit
        import signal
        import sys

        if not callable(function):
            raise TypeError(f"{function} is not callable object.")

        def run_once():
            if function not in cls._executed_func_set:
                try:
                    function()
                finally:
                    cls._executed_func_set.add(function)

        def on_signal(signum=None, frame=None):
            run_once()
            if signum is None:  # called at exit, as another registration's earlier handler
                return
            if signum == signal.SIGINT:
                raise KeyboardInterrupt
            sys.exit(signum)

        for sig in set(signals):
            previous = signal.signal(sig, on_signal)
            if previous in (signal.SIG_DFL, signal.SIG_IGN, None):
                continue
            if sig == signal.SIGINT and previous is signal.default_int_handler:
                continue
            if previous not in cls._registered_func_set:
                atexit.register(previous)
                cls._registered_func_set.add(previous)
        if function not in cls._registered_func_set:
            atexit.register(run_once)
            cls._registered_func_set.add(function)


class LoDTensorBlockingQueue:
    """The queue of a ``fluid.layers.py_reader`` (``reader.queue``): ``push`` a batch (a LoDTensorArray or
    list of LoDTensors / arrays; it waits while ``capacity`` batches are queued), the read op pops one
    per run; after ``close()`` the batches left are read, then the run raises ``EOFException``."""

    _CLOSED = object()

    def __init__(self, capacity: int, name: str = "") -> None:
        self._capacity = int(capacity)
        self._queue: queue.Queue = queue.Queue(maxsize=max(self._capacity, 0))
        self._closed = False
        self._pushed = False
        self.name = name

    def push(self, lod_tensor_array) -> bool:
        if self._closed:
            return False
        self._pushed = True
        self._queue.put(list(lod_tensor_array))
        return True

    def _can_give(self, wait: float = 10.0) -> bool:
        """Whether a pop can end: something was pushed or the queue is closed; with another thread
        there that may push, after waiting up to ``wait`` seconds for it (a run waiting for ever on a
        reader never fed nor started is a hang)."""
        import threading
        import time

        deadline = time.monotonic() + wait
        while not (self._pushed or self._closed):
            if threading.active_count() <= 1 or time.monotonic() > deadline:
                return False
            time.sleep(0.01)
        return True

    def pop(self):
        from fluidcompat_ops.python import EOFException

        if self._closed and self._queue.empty():
            raise EOFException("There is no next data: the queue is closed.")
        item = self._queue.get()
        if item is self._CLOSED:
            self._queue.put(item)  # later pops end too
            raise EOFException("There is no next data: the queue is closed.")
        return item

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            try:
                self._queue.put_nowait(self._CLOSED)  # wakes a waiting pop
            except queue.Full:
                pass

    kill = close

    def is_closed(self) -> bool:
        return self._closed

    def size(self) -> int:
        return self._queue.qsize()

    def capacity(self) -> int:
        return self._capacity


_KEEP_DATA_LOADER_ORDER = True


def keep_data_loader_order(*args):
    """fluid 1.8's switch: with no argument, whether DataLoaders keep their batches in the
    generator's order across places; with one bool, sets it. Loaders here always keep the order, which
    is one of the orders an unordered loader may give."""
    global _KEEP_DATA_LOADER_ORDER
    if not args:
        return _KEEP_DATA_LOADER_ORDER
    if len(args) != 1 or not isinstance(args[0], bool):
        raise TypeError(f"keep_data_loader_order takes one bool, got {args!r}")
    _KEEP_DATA_LOADER_ORDER = args[0]
    return None


def default_collate_fn(batch):
    """Samples (tuples of fields) -> one stacked numpy array per field."""
    first = batch[0]
    if isinstance(first, np.ndarray):
        return [np.stack(batch, axis=0)]
    if isinstance(first, (int, float, np.number)):
        return [np.array(batch)]
    return [np.stack([np.asarray(s[k]) for s in batch], axis=0) for k in range(len(first))]


def collated_batches(reader):
    """A source of batches (lists of arrays) from a reader of sample lists."""
    return lambda: (default_collate_fn(samples) for samples in reader())


def array_batches(reader):
    """A source of batches (lists of arrays, LoDTensors kept with their LoD) from a reader of batches
    of arrays or LoDTensors."""
    check = _GeneratorLoader._check_input_array
    return lambda: (None if b is None else [f if hasattr(f, "lod") else check(f) for f in b] for b in reader())


def fed_batches(reader, feed_list):
    """A source of batches from a reader of sample lists, each field converted as DataFeeder does
    (sequences of ``lod_level > 0`` variables become LoDTensors)."""
    from fluidcompat.data_feeder import DataFeeder
    from fluidcompat.places import CPUPlace

    feeder = DataFeeder(feed_list, CPUPlace())
    return lambda: (list(feeder.feed(samples).values()) for samples in reader())


def _place_count(places) -> int:
    """How many places a DataLoader feeds at a time (one batch each)."""
    return len(places) if isinstance(places, (list, tuple)) and places else 1


_QUEUE_GET_TIMEOUT = 60  # seconds a dygraph multiprocess loader waits for a batch (fluid 1.8's)


def _timed_batches(batches, timeout):
    """``batches`` read ahead in a daemon thread; TimeoutError when one takes over ``timeout`` seconds."""
    q: queue.Queue = queue.Queue(maxsize=2)

    def work():
        try:
            for b in batches:
                q.put((True, b))
            q.put((True, _END))
        except Exception as e:  # noqa: BLE001  (handed to the reading side)
            q.put((False, e))

    threading.Thread(target=work, daemon=True).start()
    while True:
        try:
            ok, item = q.get(timeout=timeout)
        except queue.Empty:
            raise TimeoutError(f"no batch came from the data reader in {timeout} seconds") from None
        if not ok:
            raise item
        if item is _END:
            return
        yield item


class _GeneratorLoader:
    """``DataLoader.from_generator``: iterating gives a list with one feed dict per place (``places``
    of set_*_generator: as many batches, one a place; without ``drop_last`` the last list may be
    shorter) or, with ``return_list``, the lists of arrays (in dygraph mode one batch's list of
    VarBases)."""

    def __init__(
        self,
        feed_list=None,
        capacity=None,
        use_double_buffer=True,
        iterable=True,
        return_list=False,
        drop_last=True,
        use_multiprocess=False,
    ):
        from fluidcompat.framework import in_dygraph_mode

        self._dygraph = in_dygraph_mode()
        # fluid 1.8's dygraph loader read its batches in another process, waiting at most
        # _QUEUE_GET_TIMEOUT seconds for each: so does this one (in a thread)
        self._timed = self._dygraph and use_multiprocess
        if self._dygraph:  # batches come as lists of VarBases, as in fluid 1.8's dygraph mode
            return_list = True
            if not iterable:
                import logging

                logging.warning("Please NOTE: imperative mode can support iterable mode only. Change to iterable mode.")
                iterable = True
        if not return_list and not feed_list:
            raise ValueError("feed_list should be set when return_list=False")
        self.feed_list = list(feed_list or [])
        self.return_list = return_list
        self.drop_last = drop_last
        self.iterable = iterable
        self._batches: Optional[Callable[[], Iterable]] = None
        self._places = 1
        self._state = None
        if not iterable:  # a read op at the start of the program pulls each batch (start()/reset())
            from fluidcompat import unique_name
            from fluidcompat.framework import default_main_program
            from fluidcompat_ops.python import ReaderState, register_callable

            self._state = ReaderState(unique_name.generate("data_loader"))
            self._state.source = lambda: self._batches()
            default_main_program().global_block()._prepend_op(
                type="read", outputs={"Out": self.feed_list}, attrs={"reader_id": register_callable(self._state)}
            )

    @classmethod
    def _check_input_array(cls, item):
        """``item`` as an ndarray; TypeError when it is ragged (nested lists of different lengths)."""
        try:
            arr = np.asarray(item)
        except ValueError:  # numpy >= 1.24 refuses ragged lists itself
            arr = None
        if arr is None or arr.dtype == object:
            raise TypeError(
                "Failed to convert input data to a regular ndarray: usually the data contains nested lists of "
                "different lengths. Check the reader function given to 'decorate_batch_generator' / "
                "'set_batch_generator', or convert such data with 'fluid.create_lod_tensor'."
            )
        return arr

    def _names(self):
        return [v.name if hasattr(v, "name") else str(v) for v in self.feed_list]

    def set_sample_generator(self, reader, batch_size, drop_last=True, places=None):
        return self.set_sample_list_generator(batch(reader, batch_size, drop_last), places)

    def set_sample_list_generator(self, reader, places=None):
        self._places = _place_count(places)
        if self.feed_list and not self._dygraph:
            # as fluid's DataFeeder converts them: each field to its variable's dtype and shape, sequences
            # of lod_level > 0 variables to LoDTensors
            self._batches = fed_batches(reader, self.feed_list)
        else:
            self._batches = collated_batches(reader)
        return self

    def set_batch_generator(self, reader, places=None):
        self._places = _place_count(places)
        self._batches = array_batches(reader)
        return self

    def __call__(self):
        return iter(self)

    def __iter__(self):
        if not self.iterable:
            raise TypeError(
                "a DataLoader with iterable=False is not iterable: call start(), then Executor.run "
                "until it raises fluid.core.EOFException, then reset()"
            )
        if self._batches is None:
            raise ValueError(
                "Data source of DataLoader has not set yet: call set_sample_generator, "
                "set_sample_list_generator or set_batch_generator first"
            )
        self._reset()  # a new pass starts from the generator's beginning
        self._live = self._iterate()
        return self._live

    def _reader_process_loop(self) -> None:
        """What fluid 1.8's ``use_multiprocess`` loader ran in its child process: every batch of the
        data source, as a list of LoDTensors, put into ``self._data_queue``, then None. The tensors
        cross a ``multiprocessing.Queue`` in shared memory (torch's reductions), as fluid's went through
        memory-mapped files: only handles go through the queue's pipe. (Loaders here read in this
        process; the method serves scripts that drive it themselves.)"""
        import torch.multiprocessing  # noqa: F401  (registers the shared-memory pickling of tensors)

        from fluidcompat.executor.errors import EnforceNotMet
        from fluidcompat.executor.scope import LoDTensor
        from fluidcompat.places import CPUPlace

        def as_tensor(a):
            if hasattr(a, "lod"):
                return a
            t = LoDTensor()
            t.set(np.asarray(a), CPUPlace())
            return t

        if self._batches is None:
            raise ValueError("Data source of DataLoader has not set yet")
        for arrays in self._batches():
            if arrays is None or any(a is None for a in arrays):
                raise EnforceNotMet(
                    "DataLoader: the batch generator gave None; it should give a list or tuple of arrays"
                )
            self._data_queue.put([as_tensor(a) for a in arrays])
        self._data_queue.put(None)

    def _reset(self) -> None:
        """Ends the pass in progress (one left by a ``break``): its generator is closed, so the next
        iteration reads the data source from its start."""
        live, self._live = getattr(self, "_live", None), None
        if live is not None:
            live.close()

    def _source(self):
        """The data source's batches; its failure (or, for a dygraph multiprocess loader, a batch
        that takes over _QUEUE_GET_TIMEOUT seconds) ends the iteration with EnforceNotMet, as fluid's
        killed blocking queue did. The source's own error is chained."""
        from fluidcompat.executor.errors import EnforceNotMet

        def killed(why):
            return EnforceNotMet(f"Blocking queue is killed because the data reader raises an exception: {why}")

        batches = _timed_batches(self._batches(), _QUEUE_GET_TIMEOUT) if self._timed else self._batches()
        while True:
            try:
                arrays = next(batches)
            except StopIteration:
                return
            except EnforceNotMet:
                raise
            except TimeoutError as e:
                raise killed(str(e)) from e
            except Exception as e:  # noqa: BLE001  (the reader's error, chained)
                raise killed(f"{type(e).__name__}: {e}") from e
            yield arrays

    def _iterate(self):
        names = self._names()
        group = []
        for arrays in self._source():
            if arrays is None:
                raise TypeError("DataLoader: the batch generator gave None; it should give a list or tuple of arrays")
            if self._dygraph:
                from fluidcompat.dygraph.base import to_variable

                yield [to_variable(np.asarray(a)) for a in arrays]
                continue
            if self.return_list:  # one list of arrays per place, as fluid 1.8's static mode
                group.append(list(arrays))
            elif len(arrays) != len(names):
                raise ValueError(
                    f"DataLoader: a batch has {len(arrays)} fields but feed_list names {len(names)} ({names})"
                )
            else:
                group.append(dict(zip(names, arrays)))
            if len(group) == self._places:
                yield group
                group = []
        if group and not self.drop_last:  # fewer batches than places left
            yield group

    def start(self):
        if self._state is None:
            raise TypeError("start() is for DataLoaders made with iterable=False; iterate this one instead")
        if self._batches is None:
            raise ValueError(
                "Data source of DataLoader has not set yet: call set_sample_generator, "
                "set_sample_list_generator or set_batch_generator first"
            )
        self._state.start()

    def reset(self):
        if self._state is None:
            raise TypeError("reset() is for DataLoaders made with iterable=False")
        self._state.reset()


class DataLoader:
    """``fluid.io.DataLoader``: ``from_generator(...)`` and ``from_dataset(...)``."""

    @staticmethod
    def from_generator(
        feed_list=None,
        capacity=None,
        use_double_buffer=True,
        iterable=True,
        return_list=False,
        use_multiprocess=False,
        drop_last=True,
    ):
        if not capacity:
            raise ValueError("Please give value to capacity.")
        return _GeneratorLoader(
            feed_list, capacity, use_double_buffer, iterable, return_list, drop_last, use_multiprocess
        )

    @staticmethod
    def from_dataset(dataset, places, drop_last=True):
        """An iterable over a ``QueueDataset`` / ``InMemoryDataset``: per step a list with one feed
        dict (of LoDTensors) per place, for ``Executor.run(feed=...)``."""
        return _DatasetLoader(dataset, places, drop_last)

    def __init__(self, dataset, feed_list=None, places=None, return_list=False, batch_sampler=None, batch_size=1,
                 shuffle=False, drop_last=False, collate_fn=None, num_workers=0, use_buffer_reader=True,
                 use_shared_memory=True, timeout=0, worker_init_fn=None):  # fmt: skip
        """fluid 1.8's map-style loader: batches of ``dataset`` drawn by ``batch_sampler`` (or a
        ``BatchSampler(dataset, batch_size=, shuffle=, drop_last=)``) and merged by ``collate_fn``;
        iterating gives what ``from_generator``'s loader gives (a list with one feed dict per place of
        ``places``, a batch each, or with ``return_list`` lists; in dygraph mode a batch's VarBases).
        Samples load in this process: ``num_workers`` is accepted."""
        if not isinstance(dataset, Dataset):
            raise TypeError(
                "DataLoader: dataset should be subclass instance of paddle.io.Dataset. "
                f"Received: {type(dataset).__name__}"
            )
        if num_workers < 0 or timeout < 0:
            raise ValueError(f"DataLoader: num_workers and timeout must be >= 0. Received: {num_workers}, {timeout}")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or drop_last:
                raise ValueError(
                    "DataLoader: batch_size/shuffle/drop_last should not be set when batch_sampler is given"
                )
            self.batch_sampler = batch_sampler
        else:
            self.batch_sampler = BatchSampler(
                dataset=dataset, batch_size=batch_size, shuffle=shuffle, drop_last=drop_last
            )
        self.dataset = dataset
        self.collate_fn = collate_fn or default_collate_fn
        self.places = places
        self.num_workers = num_workers
        self._loader = _GeneratorLoader(feed_list, return_list=return_list)
        self._loader.set_batch_generator(
            lambda: (self.collate_fn([dataset[i] for i in indices]) for indices in self.batch_sampler), places
        )
        self.feed_list, self.return_list = self._loader.feed_list, self._loader.return_list

    def __len__(self) -> int:
        return len(self.batch_sampler)

    def __iter__(self):
        return iter(self._loader)

    def __call__(self):
        return self.__iter__()


class Dataset:
    """Map-style data (``fluid.io.Dataset``, ``paddle.io.Dataset``): subclasses define
    ``__getitem__(idx)`` (a sample: a tuple of fields) and ``__len__``."""

    def __getitem__(self, idx):
        raise NotImplementedError(f"{type(self).__name__} must define __getitem__")

    def __len__(self) -> int:
        raise NotImplementedError(f"{type(self).__name__} must define __len__")


class BatchSampler:
    """fluid 1.8's ``fluid.io.BatchSampler``: lists of ``batch_size`` indices of ``dataset`` (or of
    the given ``indices``), shuffled in place by numpy's generator each pass when ``shuffle``, the
    short last batch kept unless ``drop_last``."""

    def __init__(self, dataset=None, indices=None, shuffle=False, batch_size=1, drop_last=False):
        if (dataset is None) == (indices is None):
            raise ValueError("BatchSampler: give either dataset or indices")
        if dataset is not None and not isinstance(dataset, Dataset):
            raise TypeError(f"BatchSampler: dataset should be an instance of paddle.io.Dataset. Received: {dataset!r}")
        if indices is not None and not isinstance(indices, (list, tuple)):
            raise TypeError(f"BatchSampler: indices should be a list or tuple, but got {type(indices)}")
        if not isinstance(batch_size, int) or batch_size <= 0:
            raise ValueError(f"BatchSampler: batch_size should be a positive integer, but got {batch_size!r}")
        for name, flag in (("shuffle", shuffle), ("drop_last", drop_last)):
            if not isinstance(flag, bool):
                raise TypeError(f"BatchSampler: {name} should be a boolean value, but got {type(flag)}")
        self.indices = list(range(len(dataset))) if dataset is not None else list(indices)
        self.shuffle, self.batch_size, self.drop_last = shuffle, batch_size, drop_last

    def __iter__(self):
        if self.shuffle:
            np.random.shuffle(self.indices)
        yield from batch(lambda: iter(self.indices), self.batch_size, self.drop_last)()

    def __len__(self) -> int:
        n = len(self.indices)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)


class _DatasetLoader:
    """``DataLoader.from_dataset``'s loader: each iteration reads the dataset's files (or memory) again."""

    def __init__(self, dataset, places, drop_last) -> None:
        import logging

        from fluidcompat import framework
        from fluidcompat.fluid_dataset import DatasetBase, InMemoryDataset

        if not isinstance(dataset, DatasetBase):
            raise TypeError(f"dataset must be type of DatasetBase. Received: {type(dataset).__name__}")
        if framework.in_dygraph_mode():
            raise RuntimeError("DatasetLoader is not supported in dygraph mode yet")
        places = list(places) if isinstance(places, (list, tuple)) else [places]
        if not places:
            raise ValueError("DataLoader.from_dataset: places is empty; give at least one place")
        if len(dataset.filelist) < len(places):
            raise ValueError(
                f"Filelist number of dataset {len(dataset.filelist)} must be not less than place number {len(places)}"
            )
        if dataset.thread_num != 0 and dataset.thread_num != len(places):
            logging.warning("thread_num %s which is set in Dataset is ignored", dataset.thread_num)
        dataset.set_thread(len(places))
        if isinstance(dataset, InMemoryDataset) and (getattr(dataset, "queue_num", None) or 0) > len(places):
            logging.warning("queue_num %s which is set in Dataset is ignored", dataset.queue_num)
            dataset.set_queue_num(len(places))
        self._dataset, self._places, self._drop_last = dataset, places, bool(drop_last)

    def __iter__(self):
        return self._dataset._loader_steps(self._places, self._drop_last)

    def __call__(self):
        return self


class PyReader(_GeneratorLoader):
    """``fluid.io.PyReader`` (iterable): ``decorate_sample_generator`` / ``decorate_sample_list_generator``
    / ``decorate_batch_generator``."""

    def __init__(self, feed_list=None, capacity=None, use_double_buffer=True, iterable=True, return_list=False):
        super().__init__(feed_list, capacity, use_double_buffer, iterable, return_list)

    @property
    def _loader(self):
        """fluid's PyReader held its DataLoader here; this one is its own."""
        return self

    def decorate_sample_generator(self, sample_generator, batch_size, drop_last=True, places=None):
        return self.set_sample_generator(sample_generator, batch_size, drop_last, places)

    def decorate_sample_list_generator(self, reader, places=None):
        return self.set_sample_list_generator(reader, places)

    def decorate_batch_generator(self, reader, places=None):
        return self.set_batch_generator(reader, places)


GeneratorLoader = _GeneratorLoader  # fluid 1.8's name of from_generator's loader class
