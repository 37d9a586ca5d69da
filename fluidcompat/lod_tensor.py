"""``fluid.create_lod_tensor`` and ``fluid.create_random_int_lodtensor``; ``LoDTensorArray``."""

from __future__ import annotations

import numpy as np

__all__ = ["create_lod_tensor", "create_random_int_lodtensor", "LoDTensorArray"]  # noqa: F822  (__getattr__)


def create_lod_tensor(data, recursive_seq_lens, place):
    """A LoDTensor of ``data`` (a numpy array, a list of sequences, or a LoDTensor) with the given
    sequence lengths. fluidcompat's ops read the dense data and ignore the LoD."""
    from fluidcompat.executor.scope import LoDTensor, _offsets

    if isinstance(data, LoDTensor):
        return create_lod_tensor(np.array(data), recursive_seq_lens, place)
    if isinstance(data, list):
        if [len(seq) for seq in data] != list(recursive_seq_lens[-1]):
            raise ValueError(
                "the provided recursive_seq_lens info is invalid: the lengths of the sequences in data "
                f"{[len(seq) for seq in data]} differ from its last level {list(recursive_seq_lens[-1])}"
            )
        flat = np.concatenate([np.asarray(seq) for seq in data]).reshape(-1, 1)
        data = flat.astype("int64") if np.issubdtype(flat.dtype, np.integer) else flat.astype("float32")
    data = np.asarray(data)
    lod = _offsets(recursive_seq_lens)
    if lod and lod[-1][-1] != data.shape[0]:
        raise ValueError(
            f"the provided recursive_seq_lens info is invalid: they cover {lod[-1][-1]} rows but data has "
            f"{data.shape[0]}"
        )
    t = LoDTensor()
    t.set(data, place)
    t.set_lod(lod)
    return t


def create_random_int_lodtensor(recursive_seq_lens, base_shape, place, low, high):
    """A LoDTensor of random integers in [low, high] with the given sequence lengths."""
    total = sum(int(n) for n in recursive_seq_lens[-1])
    data = np.random.randint(low, high + 1, [total] + list(base_shape)).astype("int64")
    return create_lod_tensor(data, recursive_seq_lens, place)


def __getattr__(name):  # LoDTensorArray lives beside LoDTensor in the scope, imported (with torch) when asked for
    if name == "LoDTensorArray":
        from fluidcompat.executor.scope import LoDTensorArray

        return LoDTensorArray
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
