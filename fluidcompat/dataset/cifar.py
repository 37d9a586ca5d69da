"""``paddle.dataset.cifar``: CIFAR-10/100 samples (image float32[3072] in [0, 1], label int) from the
python tarballs in ``~/.cache/paddle/dataset/cifar/``, as fluid 1.8 read them."""

from __future__ import annotations

import pickle
import tarfile

import numpy as np

from fluidcompat.dataset.common import data_file

__all__ = ["train10", "test10", "train100", "test100"]

URL_PREFIX = "https://dataset.bj.bcebos.com/cifar/"
CIFAR10, CIFAR100 = "cifar-10-python.tar.gz", "cifar-100-python.tar.gz"


def reader_creator(filename, sub_name, cycle=False):
    def read_batch(batch):
        data = batch.get(b"data", batch.get("data"))
        labels = batch.get(b"labels", batch.get("labels", batch.get(b"fine_labels", batch.get("fine_labels"))))
        for sample, label in zip(data, labels):
            yield (np.asarray(sample) / 255.0).astype(np.float32), int(label)

    def reader():
        while True:
            with tarfile.open(filename, mode="r") as f:
                names = [m.name for m in f if sub_name in m.name]
                for name in names:
                    batch = pickle.load(f.extractfile(name), encoding="bytes")
                    yield from read_batch(batch)
            if not cycle:
                break

    return reader


def train10(cycle=False):
    return reader_creator(data_file("cifar", CIFAR10, URL_PREFIX + CIFAR10), "data_batch", cycle)


def test10(cycle=False):
    return reader_creator(data_file("cifar", CIFAR10, URL_PREFIX + CIFAR10), "test_batch", cycle)


def train100():
    return reader_creator(data_file("cifar", CIFAR100, URL_PREFIX + CIFAR100), "train")


def test100():
    return reader_creator(data_file("cifar", CIFAR100, URL_PREFIX + CIFAR100), "test")
