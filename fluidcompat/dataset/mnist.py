"""``paddle.dataset.mnist``: samples (image float32[784] scaled to [-1, 1], label int) from the idx
files in ``~/.cache/paddle/dataset/mnist/``, as fluid 1.8 read them."""

from __future__ import annotations

import gzip

import numpy as np

from fluidcompat.dataset.common import data_file

__all__ = ["train", "test", "fetch"]

URL_PREFIX = "http://yann.lecun.com/exdb/mnist/"
TRAIN_IMAGE, TRAIN_LABEL = "train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz"
TEST_IMAGE, TEST_LABEL = "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"


def _read_idx(path: str, offset: int) -> np.ndarray:
    with gzip.open(path, "rb") as f:
        return np.frombuffer(f.read(), dtype=np.uint8, offset=offset)


def reader_creator(image_filename, label_filename, buffer_size=100):
    def reader():
        images = _read_idx(image_filename, 16)
        labels = _read_idx(label_filename, 8)
        images = images.reshape(-1, 28 * 28)
        if images.shape[0] != labels.shape[0]:
            raise ValueError(f"mnist: {images.shape[0]} images but {labels.shape[0]} labels")
        for start in range(0, labels.shape[0], buffer_size):
            chunk = images[start : start + buffer_size].astype("float32") / 255.0 * 2.0 - 1.0
            for i in range(chunk.shape[0]):
                yield chunk[i, :], int(labels[start + i])

    return reader


def train():
    return reader_creator(
        data_file("mnist", TRAIN_IMAGE, URL_PREFIX + TRAIN_IMAGE),
        data_file("mnist", TRAIN_LABEL, URL_PREFIX + TRAIN_LABEL),
    )


def test():
    return reader_creator(
        data_file("mnist", TEST_IMAGE, URL_PREFIX + TEST_IMAGE), data_file("mnist", TEST_LABEL, URL_PREFIX + TEST_LABEL)
    )


def fetch():
    """Make sure the four idx files are in the dataset cache (fluid downloaded them here)."""
    for name in (TRAIN_IMAGE, TRAIN_LABEL, TEST_IMAGE, TEST_LABEL):
        data_file("mnist", name, URL_PREFIX + name)
