"""``fluid.DataFeeder``: minibatches of samples (tuples, one field per feed variable) to feed dicts."""

from __future__ import annotations

import numpy as np

from fluidcompat.dtypes import np_name
from fluidcompat.framework import default_main_program, variables_of
from fluidcompat.lod_tensor import create_lod_tensor

__all__ = ["DataFeeder"]


class DataFeeder:
    """Converts a list of samples into ``{name: LoDTensor}`` for ``Executor.run(feed=...)``: field k of
    every sample is stacked into variable k's dtype and shape (batch dimension first)."""

    def __init__(self, feed_list, place, program=None):
        program = program or default_main_program()
        self.feed_vars = variables_of(
            program,
            feed_list,
            lambda name: f"DataFeeder: the feed variable '{name}' is not in the program",
            lambda v: f"Feed list should contain a list of variable. Received: {type(v)}",
        )
        self.feed_names = [v.name for v in self.feed_vars]
        self.feed_dtypes = [v.dtype for v in self.feed_vars]
        self.feed_shapes = [tuple(v.shape) for v in self.feed_vars]
        self.feed_lod_level = [v.lod_level for v in self.feed_vars]
        self.place = place

    def feed(self, iterable):
        columns = [[] for _ in self.feed_vars]
        for i, sample in enumerate(iterable):
            if len(sample) != len(self.feed_vars):
                raise ValueError(
                    f"The number of fields in data ({len(sample)}) does not match len(feed_list) "
                    f"({len(self.feed_vars)}) in sample {i}"
                )
            for col, field in zip(columns, sample):
                col.append(field)
        result = {}
        for var, col in zip(self.feed_vars, columns):
            lengths = []
            if var.lod_level:  # each sample's field is a sequence (of sequences ...): rows and their lengths
                col, lengths = _flattened(var, col)
            try:
                arr = np.asarray(col, dtype=np_name(var.dtype))
            except ValueError:
                shapes = [_shape_of(field) for field in col]
                k = next((k for k, s in enumerate(shapes) if s != shapes[0] or isinstance(s, str)), None)
                if k is None:
                    raise
                raise ValueError(
                    f"DataFeeder: the samples of '{var.name}' differ in shape: sample 0 has {shapes[0]}, "
                    f"sample {k} has {shapes[k]}"
                    if k
                    else f"DataFeeder: sample 0's field for '{var.name}' is {shapes[0]} (rows of different lengths)"
                ) from None
            shape = list(var.shape)
            if shape and all(d >= 0 for d in shape[1:]):
                want = [-1] + shape[1:]
                try:
                    arr = arr.reshape(want)
                except ValueError:
                    raise ValueError(
                        f"DataFeeder: the samples of '{var.name}' have shape {list(arr.shape[1:])}, which does not "
                        f"fit the variable's shape {shape}"
                    ) from None
            result[var.name] = create_lod_tensor(arr, lengths, self.place)
        return result

    def feed_parallel(self, iterable, num_places=None):
        """One feed dict per place from ``iterable``'s mini-batches (one a place: ``num_places`` of them,
        CPU_NUM or the visible GPUs by default), for a data-parallel CompiledProgram's feed list."""
        places = self._number_of_places(num_places)
        if len(iterable) != places:
            raise ValueError(
                "feed_parallel takes multiple mini-batches. Each mini-batch will be feed on each device. The number "
                "of devices and number of mini-batches must be same."
            )
        for batch in iterable:
            yield self.feed(batch)

    def _number_of_places(self, num_places) -> int:
        from fluidcompat import places

        return int(num_places) if num_places is not None else places.default_place_count(self.place)

    def decorate_reader(self, reader, multi_devices, num_places=None, drop_last=True):
        """``reader``'s mini-batches as feed dicts; ``multi_devices``: as lists of one dict per place
        (``num_places`` mini-batches a step; a last, shorter group is dropped, or refused without
        ``drop_last``)."""

        def decorated():
            if not multi_devices:
                for batch in reader():
                    yield self.feed(batch)
                return
            count = self._number_of_places(num_places)
            group = []
            for batch in reader():
                group.append(batch)
                if len(group) == count:
                    yield list(self.feed_parallel(group, count))
                    group = []
            if group and not drop_last:
                raise ValueError(
                    "The data batch which cannot fit for devices will be dropped is not implementation. Other "
                    "strategies are not implemented"
                )

        return decorated


def _shape_of(field):
    """A sample field's shape, or 'a ragged nesting' when its rows differ in length."""
    try:
        return list(np.shape(field))
    except ValueError:
        return "a ragged nesting"


def _flattened(var, samples):
    """The rows of ``var.lod_level``-deep nested sequences, and the sequence lengths of each level."""
    lengths = [[] for _ in range(var.lod_level)]
    level_items = list(samples)
    for depth in range(var.lod_level):
        nxt = []
        for seq in level_items:
            if not isinstance(seq, (list, tuple, np.ndarray)):
                raise ValueError(
                    f"DataFeeder: '{var.name}' has lod_level {var.lod_level}, so each sample's field must be a "
                    f"sequence nested {var.lod_level} deep. Received: {seq!r} at depth {depth}"
                )
            lengths[depth].append(len(seq))
            nxt.extend(seq)
        level_items = nxt
    return level_items, lengths


def __getattr__(name):  # fluid 1.8 names fluidcompat lacks: UnsupportedAPIError
    if name.startswith("__"):
        raise AttributeError(name)
    from fluidcompat.fluid18_names import unsupported

    return unsupported("paddle.fluid.data_feeder")(name)
