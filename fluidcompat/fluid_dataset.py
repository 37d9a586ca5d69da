"""``fluid.DatasetFactory``, ``InMemoryDataset`` and ``QueueDataset``: the slot-file input of fluid 1.8's
``Executor.train_from_dataset`` (the CTR pipelines).

A data file holds one instance per line; per variable of ``set_use_var``, in order, a count and that
many values (``3 7 7 8`` is three ids). A variable with ``lod_level`` 1 is a sparse slot (its values
become one sequence of the instance), one with ``lod_level`` 0 a dense slot (exactly as many values as
one row holds). Files are read through ``set_pipe_command`` (``cat`` by default), file on stdin.
``InMemoryDataset`` drops the 0 values of sparse slots when it loads them, as fluid 1.8.5 did (0 is the
padding feasign); ``QueueDataset`` streams the files as they are. Runs are single-threaded here
(``set_thread`` is recorded; the batches are those of one thread).
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import warnings
from typing import Iterator, List

import numpy as np

from fluidcompat.dtypes import VarType, np_name
from fluidcompat.framework import Variable

__all__ = ["DatasetFactory", "InMemoryDataset", "QueueDataset", "FileInstantDataset"]

_VALUE_TYPES = {VarType.INT64: int, VarType.INT32: int, VarType.FP32: float, VarType.FP64: float}


def _pipe_env() -> dict:
    """The environment of a pipe command: ``python`` is this interpreter, in which ``import paddle``
    gives fluidcompat (a data generator script imports paddle.fluid.incubate.data_generator)."""
    from fluidcompat.compat import pipe_site

    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([os.path.dirname(sys.executable), env.get("PATH", "")])
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # where the fluidcompat package is
    env["PYTHONPATH"] = os.pathsep.join([pipe_site.DIR, root] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    return env


class CoreDataset:
    """fluid's ``core.Dataset(name)`` (``dataset.dataset`` of a Python dataset): the settings the C++
    dataset held, each with its getter. Reading is done by the Python datasets here, so the calls
    that drove fluid's readers (``merge_by_lineid``, ``generate_local_tables_unlock``, ...) only
    record what they were given."""

    def __init__(self, name="MultiSlotDataset"):
        self.name = name
        self._thread_num, self._trainer_num = 1, 1
        self._filelist: List[str] = []
        self._hdfs_config = ("", "")
        self._download_cmd = ""
        self._settings: dict = {}

    def set_thread_num(self, thread_num):
        self._thread_num = int(thread_num)

    def get_thread_num(self):
        return self._thread_num

    def set_trainer_num(self, trainer_num):
        self._trainer_num = int(trainer_num)

    def get_trainer_num(self):
        return self._trainer_num

    def set_filelist(self, filelist):
        self._filelist = list(filelist)

    def get_filelist(self):
        return list(self._filelist)

    def set_hdfs_config(self, fs_name, fs_ugi):
        self._hdfs_config = (fs_name, fs_ugi)

    def get_hdfs_config(self):
        return self._hdfs_config

    def set_download_cmd(self, download_cmd):
        self._download_cmd = download_cmd

    def get_download_cmd(self):
        return self._download_cmd

    def __getattr__(self, name):
        # the other setters of fluid's core.Dataset (set_merge_by_lineid, set_fea_eval, set_queue_num,
        # set_generate_unique_feasigns, ...) and its reader-driving calls: recorded, nothing to run
        if name.startswith("_"):
            raise AttributeError(name)
        if name in _CORE_DATASET_CALLS:
            return lambda *args: self._settings.__setitem__(name, args)
        raise AttributeError(f"'core.Dataset' (fluidcompat) has no attribute '{name}'")


_CORE_DATASET_CALLS = frozenset(
    "set_merge_by_lineid merge_by_lineid set_fea_eval slots_shuffle set_queue_num set_parse_ins_id "
    "set_parse_content set_parse_logkey set_merge_by_sid set_enable_pv_merge set_generate_unique_feasigns "
    "generate_local_tables_unlock set_fleet_send_batch_size set_fleet_send_sleep_seconds "
    "set_preload_thread_num set_data_feed_desc set_current_phase create_readers destroy_readers "
    "create_preload_readers destroy_preload_readers create_channel dynamic_adjust_channel_num "
    "dynamic_adjust_readers_num".split()
)


class CoreFleet:
    """fluid's ``core.Fleet()``, the client of a pslib parameter server. With no parameter server (as in
    fluid 1.8.5's own CPU build) its configuration calls do nothing and ``get_cache_threshold`` is 0.0."""

    def set_client2client_config(self, request_timeout_ms, connect_timeout_ms, max_retry):
        return None

    def get_cache_threshold(self, table_id):
        return 0.0


class DatasetFactory:
    """``DatasetFactory().create_dataset("InMemoryDataset" | "QueueDataset" | "FileInstantDataset")``."""

    def create_dataset(self, datafeed_class="QueueDataset"):
        classes = {
            "QueueDataset": QueueDataset,
            "InMemoryDataset": InMemoryDataset,
            "FileInstantDataset": FileInstantDataset,
        }
        if datafeed_class not in classes:
            raise ValueError(f"datafeed class {datafeed_class} does not exist")
        return classes[datafeed_class]()


class DatasetBase:
    """What both datasets share: the slots, the files, the batch size."""

    _drops_zero_feasigns = False
    # whether a dense slot's line may give a multiple of its row's values (InMemoryDataset: fluid 1.8.5's
    # in-memory data feed concatenated them, one LoD offset per instance)
    _dense_counts_free = False
    _core_name = "MultiSlotDataset"

    def __init__(self):
        self.dataset = CoreDataset(self._core_name)
        self.parse_ins_id = False
        self.parse_content = False
        self.pipe_command = "cat"
        self.batch_size = 1
        self.thread_num = 1
        self.filelist: List[str] = []
        self.use_vars: List[Variable] = []
        self.hdfs_config = None

    # -- configuration -------------------------------------------------------------------------
    def set_pipe_command(self, pipe_command):
        """The shell command each file is piped through (the file on its stdin)."""
        self.pipe_command = pipe_command

    def set_batch_size(self, batch_size):
        if not isinstance(batch_size, int) or batch_size <= 0:
            raise ValueError(f"batch_size must be a positive int. Received: {batch_size!r}")
        self.batch_size = batch_size

    def set_thread(self, thread_num):
        """Recorded; fluidcompat reads and trains in one thread."""
        self.thread_num = thread_num
        self.dataset.set_thread_num(thread_num)

    def set_filelist(self, filelist):
        self.filelist = list(filelist)
        self.dataset.set_filelist(filelist)

    def set_use_var(self, var_list):
        """The slots, in the order a line gives them: Variables of int64/int32 (ids) or float32/float64."""
        for var in var_list:
            if not isinstance(var, Variable):
                raise TypeError(f"set_use_var takes Variables. Received: {type(var).__name__}")
            if var.dtype not in _VALUE_TYPES:
                raise ValueError(
                    f"Currently, fluid.dataset only supports dtype=float32, float64, int32 and int64; variable "
                    f"'{var.name}' is {var.dtype.name}"
                )
        self.use_vars = list(var_list)

    def set_hdfs_config(self, fs_name, fs_ugi):
        """Recorded; files are read with the pipe command (give one that reads HDFS paths)."""
        self.hdfs_config = (fs_name, fs_ugi)
        self.dataset.set_hdfs_config(fs_name, fs_ugi)

    def set_download_cmd(self, download_cmd):
        """Recorded (``dataset.dataset.get_download_cmd()``); files are read with the pipe command."""
        self.dataset.set_download_cmd(download_cmd)

    def set_rank_offset(self, rank_offset):
        self.rank_offset = rank_offset

    def set_fea_eval(self, record_candidate_size, fea_eval=True):
        """Enables ``slots_shuffle`` (``record_candidate_size`` is recorded)."""
        self.fea_eval = bool(fea_eval)
        self.record_candidate_size = record_candidate_size
        self.dataset.set_fea_eval(fea_eval, record_candidate_size)

    def desc(self) -> str:
        """The data feed's description, as text."""

        def slot(v):
            kind = "uint64" if v.dtype in (VarType.INT64, VarType.INT32) else "float"
            dense = "true" if v.lod_level == 0 else "false"
            return f'  slots {{ name: "{v.name}" type: "{kind}" is_dense: {dense} is_used: true }}'

        slots = "\n".join(slot(v) for v in self.use_vars)
        return (
            f'name: "{type(self).__name__}"\nbatch_size: {self.batch_size}\nmulti_slot_desc {{\n{slots}\n}}\n'
            f'pipe_command: "{self.pipe_command}"\nthread_num: {self.thread_num}\n'
        )

    # -- reading ----------------------------------------------------------------------------------
    def _lines(self, files=None) -> Iterator[tuple]:
        """(file, line number, text) of every line of every file (of ``files`` if given), through the
        pipe command."""
        env = _pipe_env()
        for path in self.filelist if files is None else files:
            try:
                with open(path, "rb") as f:
                    proc = subprocess.run(
                        self.pipe_command, shell=True, stdin=f, capture_output=True, check=False, env=env
                    )
            except OSError as e:
                raise OSError(f"dataset file '{path}' cannot be read: {e}") from None
            if proc.returncode != 0:
                raise RuntimeError(
                    f"the pipe command {self.pipe_command!r} failed on '{path}' (exit {proc.returncode}): "
                    f"{proc.stderr.decode(errors='replace').strip()}"
                )
            for n, text in enumerate(proc.stdout.decode().splitlines(), 1):
                if text.strip():
                    yield path, n, text

    def _parse(self, path, line_no, text) -> list:
        """One instance: per slot, its values (a list)."""
        if not self.use_vars:
            raise ValueError("set_use_var must name the slots before the dataset is read")
        tokens = text.split()
        pos, instance = 0, []
        for flag, what in ((self.parse_ins_id, "ins id"), (self.parse_content, "content")):
            if flag:  # fluid's parse_ins_id / parse_content: a count of 1, then a string, before the slots
                if tokens[pos : pos + 1] != ["1"] or len(tokens) < pos + 2:
                    raise ValueError(
                        f"'{path}' line {line_no}: expected the {what} as '1 <{what}>' before the slots, found "
                        f"{tokens[pos : pos + 2] or 'the line end'}"
                    )
                pos += 2
        for var in self.use_vars:
            where = f"'{path}' line {line_no}, slot '{var.name}'"
            try:
                count = int(tokens[pos])
            except (IndexError, ValueError):
                raise ValueError(
                    f"{where}: expected a count of values, found {tokens[pos : pos + 1] or 'the line end'}"
                ) from None
            if count <= 0:
                raise ValueError(f"{where}: the number of values can not be zero, you need padding it")
            values = tokens[pos + 1 : pos + 1 + count]
            if len(values) < count:
                raise ValueError(f"{where}: {count} values announced, {len(values)} found")
            cast = _VALUE_TYPES[var.dtype]
            try:
                values = [cast(v) for v in values]
            except ValueError:
                raise ValueError(f"{where}: the values {values} are not all {var.dtype.name} numbers") from None
            if var.lod_level == 0:
                row = int(np.prod([d for d in var.shape[1:]])) if len(var.shape) > 1 else 1
                if count != row and not (self._dense_counts_free and count % row == 0):
                    raise ValueError(
                        f"{where}: a dense slot of shape {list(var.shape)} takes {row} values per instance, "
                        f"the line gives {count}"
                    )
            elif self._drops_zero_feasigns:
                values = [v for v in values if v != 0]
            instance.append(values)
            pos += 1 + count
        if pos != len(tokens):
            raise ValueError(f"'{path}' line {line_no}: {len(tokens) - pos} values left after the last slot")
        return instance

    def _instances(self, files=None) -> Iterator[list]:
        for path, n, text in self._lines(files):
            yield self._parse(path, n, text)

    def _feeds(self, place, files=None, drop_last: bool = False) -> Iterator[dict]:
        """The feed dicts of the batches, in order (of ``files`` if given; a short last batch too
        unless ``drop_last``)."""
        batch = []
        for instance in self._instances(files):
            batch.append(instance)
            if len(batch) == self.batch_size:
                yield self._feed(batch, place)
                batch = []
        if batch and not drop_last:
            yield self._feed(batch, place)

    def _loader_steps(self, places, drop_last: bool) -> Iterator[list]:
        """What ``DataLoader.from_dataset`` yields: per step, one batch per place, each a dict of
        LoDTensors (a dense slot with one LoD offset per instance, as fluid's data feed gave it).
        The steps end with the first place whose stream runs out (``_place_streams``)."""
        streams = self._place_streams(places, drop_last)
        while True:
            step = []
            for k, stream in enumerate(streams):
                feed = next(stream, None)
                if feed is None:
                    return
                step.append(self._as_lod_tensors(feed, places[k]))
            yield step

    def _place_streams(self, places, drop_last: bool) -> list:
        """Per place its batches: place k reads the files k, k + n, ... and batches them itself."""
        n = len(places)
        return [self._feeds(p, self.filelist[k::n], drop_last) for k, p in enumerate(places)]

    def _as_lod_tensors(self, feed, place) -> dict:
        from fluidcompat.executor.scope import LoDTensor

        lods = self._dense_lods(feed)
        found = {}
        for name, value in feed.items():
            if not isinstance(value, LoDTensor):
                t = LoDTensor()
                t.set(value, place)
                t._lod = lods[name]  # per instance its values' offsets: fluid's, not rows' (no check)
                value = t
            found[name] = value
        return found

    def _dense_lods(self, feed) -> dict:
        """Per dense slot, the offsets of each instance's values in the batch: what fluid's data feed
        gave a dense slot as its LoD (seen when it is fetched and printed)."""
        lods = {}
        for var in self.use_vars:
            if var.lod_level == 0 and hasattr(feed[var.name], "lod"):  # rows of uneven counts (_feed)
                lods[var.name] = feed[var.name].lod()
            elif var.lod_level == 0:
                rows, row = feed[var.name].shape[0], int(np.prod(feed[var.name].shape[1:]))
                lods[var.name] = [[i * row for i in range(rows + 1)]]
        return lods

    def _feed(self, batch, place) -> dict:
        from fluidcompat.lod_tensor import create_lod_tensor

        feed = {}
        for k, var in enumerate(self.use_vars):
            dtype = np_name(var.dtype)
            counts = [len(inst[k]) for inst in batch]
            row = int(np.prod(var.shape[1:])) if len(var.shape) > 1 else 1
            if var.lod_level == 0 and all(c == row for c in counts):
                feed[var.name] = np.array([inst[k] for inst in batch], dtype).reshape(
                    [len(batch)] + list(var.shape[1:])
                )
            elif var.lod_level == 0:  # instances of several rows: concatenated, per instance a LoD offset
                from fluidcompat.executor.scope import LoDTensor

                data = np.array([v for inst in batch for v in inst[k]], dtype).reshape([-1] + list(var.shape[1:]))
                t = LoDTensor()
                t.set(data, place)
                t._lod = [np.cumsum([0] + counts).tolist()]  # offsets of values, as fluid's data feed gave
                feed[var.name] = t
            else:
                values = [v for inst in batch for v in inst[k]]
                lengths = [len(inst[k]) for inst in batch]
                data = np.array(values, dtype).reshape(-1, 1)
                feed[var.name] = create_lod_tensor(data, [lengths], place)
        return feed


class InMemoryDataset(DatasetBase):
    """The instances loaded into memory (``load_into_memory``), then shuffled if asked and batched."""

    _drops_zero_feasigns = True
    _dense_counts_free = True

    def __init__(self):
        super().__init__()
        self._memory: List[list] = []
        self._loaded = False

    def load_into_memory(self):
        self._memory = list(self._instances())
        self._loaded = True

    def preload_into_memory(self, thread_num=None):
        self.load_into_memory()

    def wait_preload_done(self):
        pass

    def local_shuffle(self):
        random.shuffle(self._memory)

    def global_shuffle(self, fleet=None, thread_num=12):
        """One process: the same as ``local_shuffle``."""
        random.shuffle(self._memory)

    def release_memory(self):
        self._memory = []
        self._loaded = False

    def get_memory_data_size(self, fleet=None):
        return len(self._memory)

    def get_shuffle_data_size(self, fleet=None):
        return len(self._memory)

    def set_queue_num(self, queue_num):
        self.queue_num = queue_num

    def set_parse_ins_id(self, parse_ins_id):
        self.parse_ins_id = parse_ins_id

    def set_parse_content(self, parse_content):
        self.parse_content = parse_content

    def set_fleet_send_batch_size(self, fleet_send_batch_size=1024):
        self.fleet_send_batch_size = fleet_send_batch_size

    def set_fleet_send_sleep_seconds(self, fleet_send_sleep_seconds=0):
        self.fleet_send_sleep_seconds = fleet_send_sleep_seconds

    def set_merge_by_lineid(self, merge_size=2):
        """Recorded, and the lines' ins ids are parsed from then on (as fluid 1.8.5). The instances in
        memory are not merged: fluid 1.8.5's CPU build left them as they were."""
        self.dataset.set_merge_by_lineid(merge_size)
        self.merge_by_lineid = True
        self.merge_size = merge_size
        self.parse_ins_id = True

    def set_generate_unique_feasigns(self, generate_uni_feasigns, shard_num):
        """Recorded (the local tables of a pslib parameter server)."""
        self.dataset.set_generate_unique_feasigns(generate_uni_feasigns)
        self.gen_uni_feasigns, self.local_shard_num = generate_uni_feasigns, shard_num

    def generate_local_tables_unlock(self, table_id, fea_dim, read_thread_num, consume_thread_num, shard_num):
        """Recorded: the local tables belong to a pslib parameter server, which is not here."""
        self.dataset.generate_local_tables_unlock(table_id, fea_dim, read_thread_num, consume_thread_num, shard_num)

    def slots_shuffle(self, slots):
        """With ``set_fea_eval`` on: the values of each named slot are shuffled across the instances in
        memory (each instance keeps its other slots), the way fluid measured a slot's importance.
        Without it, nothing happens."""
        if not getattr(self, "fea_eval", False):
            return
        names = [v.name for v in self.use_vars]
        for slot in set(slots):
            if slot not in names:
                raise ValueError(f"slots_shuffle: '{slot}' is not one of the dataset's slots {names}")
            k = names.index(slot)
            column = [inst[k] for inst in self._memory]
            random.shuffle(column)
            for inst, values in zip(self._memory, column):
                inst[k] = values

    def _instances(self, files=None) -> Iterator[list]:
        if self._loaded:
            return iter(self._memory)
        return super()._instances(files)

    def _place_streams(self, places, drop_last: bool) -> list:
        """The memory's batches dealt to the places in turn (one stream shared by all of them), so a
        last round with a batch for fewer places is not given."""
        return [self._feeds(places[0], drop_last=drop_last)] * len(places)

    def _feeds(self, place, files=None, drop_last: bool = False):
        if not self._loaded:
            warnings.warn(
                "InMemoryDataset: load_into_memory() was not called, so it holds no data: nothing to train on",
                stacklevel=3,
            )
            return iter(())
        return super()._feeds(place, files, drop_last)


class QueueDataset(DatasetBase):
    """The files streamed as they are read, in order."""

    _shuffle_name = "QueueDataset"

    def local_shuffle(self):
        raise NotImplementedError(
            f"{self._shuffle_name} does not support local shuffle, please use InMemoryDataset for local_shuffle"
        )

    def global_shuffle(self, fleet=None):
        raise NotImplementedError(
            f"{self._shuffle_name} does not support global shuffle, please use InMemoryDataset for global_shuffle"
        )


class FileInstantDataset(QueueDataset):
    """fluid 1.8's ``FileInstantDataset``: the files streamed as they are read, like ``QueueDataset``."""

    _shuffle_name = "FileInstantDataset"


class FetchHandler:
    """``fluid.executor.FetchHandler(var_dict, period_secs)``: given to ``train_from_dataset``, it is
    called every ``period_secs`` seconds of training with ``{key: numpy value or None}`` of the
    variables of ``var_dict`` (``{key: Variable}``) read from the scope. Subclass it to replace
    ``handler``; the default prints each array's first row."""

    def __init__(self, var_dict=None, period_secs=60):
        if var_dict is None:
            raise ValueError("FetchHandler needs var_dict: {key: Variable}")
        self.var_dict = var_dict
        self.period_secs = period_secs

    def handler(self, res_dict):
        for key, value in res_dict.items():
            if isinstance(value, np.ndarray):
                sys.stdout.write(f"{key}[0]: {value[0]} ")
        sys.stdout.write("\n")

    @staticmethod
    def help():
        print(
            "Subclass fluid.executor.FetchHandler and define handler(self, res_dict), which gets\n"
            "{key: numpy array or None} every period_secs seconds; construct it with\n"
            "var_dict={key: Variable} and pass it as train_from_dataset(..., fetch_handler=handler)."
        )


class FetchHandlerMonitor:
    """Calls a FetchHandler every ``period_secs`` seconds in a thread, between ``start()`` and ``stop()``.
    A ``var_dict`` value that is not a Variable is warned about and reported as None."""

    def __init__(self, scope, fetch_handler) -> None:
        import threading

        self._scope, self._handler = scope, fetch_handler
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._keys = self._names()  # warned about here, in the caller's thread

    def _names(self) -> dict:
        found = {}
        var_dict = self._handler.var_dict
        keys = var_dict if isinstance(var_dict, dict) else {}
        if not isinstance(var_dict, dict):
            warnings.warn(
                f"FetchHandler: var_dict should be {{key: Variable}}, got {type(var_dict).__name__}", stacklevel=4
            )
        for key in keys:
            if isinstance(var_dict[key], Variable):
                found[key] = var_dict[key].name
            else:
                warnings.warn(f"FetchHandler: the value of {key} is not a Variable", stacklevel=4)
                found[key] = None
        return found

    def _values(self, names: dict) -> dict:
        res = {}
        for key, name in names.items():
            var = self._scope.find_var(name) if name is not None else None
            tensor = var.get_tensor() if var is not None else None
            if tensor is None or not tensor._is_initialized():
                res[key] = None
                continue
            if tensor.lod():
                raise RuntimeError(
                    f"FetchHandler: '{name}' holds LoD information, which a numpy array cannot keep; "
                    "fetch another variable"
                )
            res[key] = np.array(tensor)
        return res

    def _loop(self) -> None:
        while not self._stopped.wait(self._handler.period_secs):
            self._handler.handler(self._values(self._keys))

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stopped.set()
        self._thread.join()
