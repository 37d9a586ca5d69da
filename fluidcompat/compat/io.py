"""``paddle.io``: ``Dataset``, ``IterableDataset``, ``TensorDataset``, ``BatchSampler`` and the
``DataLoader`` that batches a dataset into lists of Tensors (``from_generator`` as in fluid)."""

from __future__ import annotations

import numpy as np

from fluidcompat import reader as _reader
from fluidcompat.compat.device import Tensor, to_tensor
from fluidcompat.reader import Dataset

__all__ = ["BatchSampler", "DataLoader", "Dataset", "IterableDataset", "TensorDataset"]


class IterableDataset(Dataset):
    """Stream-style data: subclasses define ``__iter__``."""

    def __iter__(self):
        raise NotImplementedError(f"{type(self).__name__} must define __iter__")


class TensorDataset(Dataset):
    """Samples are the rows of equally long tensors."""

    def __init__(self, tensors) -> None:
        lengths = {t.shape[0] for t in tensors}
        if len(lengths) != 1:
            raise ValueError(f"TensorDataset: the tensors have different first dimensions {sorted(lengths)}")
        self.tensors = [t.numpy() if isinstance(t, Tensor) else np.asarray(t) for t in tensors]

    def __getitem__(self, idx):
        return tuple(t[idx] for t in self.tensors)

    def __len__(self) -> int:
        return len(self.tensors[0])


class BatchSampler:
    """Index batches of ``dataset`` (or ``sampler``): ``batch_size`` each, shuffled with numpy's
    generator when ``shuffle``, the short last batch dropped when ``drop_last``."""

    def __init__(self, dataset=None, sampler=None, shuffle=False, batch_size=1, drop_last=False) -> None:
        if (dataset is None) == (sampler is None):
            raise ValueError("BatchSampler: give either dataset or sampler")
        if not isinstance(batch_size, int) or batch_size <= 0:
            raise ValueError(f"BatchSampler: batch_size should be a positive integer. Received: {batch_size!r}")
        self.dataset, self.sampler = dataset, sampler
        self.shuffle, self.batch_size, self.drop_last = shuffle, batch_size, drop_last

    def __iter__(self):
        if self.sampler is not None:
            indices = list(self.sampler)
        else:
            indices = np.random.permutation(len(self.dataset)).tolist() if self.shuffle else range(len(self.dataset))
        yield from _reader.batch(lambda: iter(indices), self.batch_size, self.drop_last)()

    def __len__(self) -> int:
        n = len(self.sampler) if self.sampler is not None else len(self.dataset)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)


class DataLoader(_reader.DataLoader):
    """Batches of ``dataset`` as lists of Tensors (one per sample field). Calling the loader gives
    the same iterator (``for data in loader():``). Workers are not used: ``num_workers`` is accepted."""

    def __init__(self, dataset, feed_list=None, places=None, return_list=True, batch_sampler=None, batch_size=1,
                 shuffle=False, drop_last=False, collate_fn=None, num_workers=0, use_buffer_reader=True,
                 use_shared_memory=True, timeout=0, worker_init_fn=None) -> None:  # fmt: skip
        if not isinstance(dataset, Dataset):
            raise TypeError(f"DataLoader: dataset must be a paddle.io.Dataset. Received: {type(dataset).__name__}")
        self.dataset = dataset
        self.collate_fn = collate_fn or _reader.default_collate_fn
        self.return_list = return_list
        if isinstance(dataset, IterableDataset):
            if shuffle or batch_sampler is not None:
                raise ValueError("DataLoader: an IterableDataset cannot be shuffled or given a batch_sampler")
            self.batch_sampler = None
            self.batch_size, self.drop_last = batch_size, drop_last
        elif batch_sampler is not None:
            self.batch_sampler = batch_sampler
        else:
            self.batch_sampler = BatchSampler(dataset, shuffle=shuffle, batch_size=batch_size, drop_last=drop_last)

    def _batches(self):
        if self.batch_sampler is not None:
            for indices in self.batch_sampler:
                yield self.collate_fn([self.dataset[i] for i in indices])
            return
        for samples in _reader.batch(lambda: iter(self.dataset), self.batch_size, self.drop_last)():
            yield self.collate_fn(samples)

    def __iter__(self):
        for fields in self._batches():
            if isinstance(fields, dict):
                yield {k: to_tensor(v) for k, v in fields.items()}
            else:
                yield [v if isinstance(v, Tensor) else to_tensor(v) for v in fields]

    def __call__(self):
        return self.__iter__()

    def __len__(self) -> int:
        if self.batch_sampler is None:
            raise TypeError("DataLoader over an IterableDataset has no length")
        return len(self.batch_sampler)
