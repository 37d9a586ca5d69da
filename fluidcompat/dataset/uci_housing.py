"""``paddle.dataset.uci_housing``: Boston housing samples (13 normalized features, price) from
``~/.cache/paddle/dataset/uci_housing/housing.data``, split 80/20 as fluid 1.8 did."""

from __future__ import annotations

import numpy as np

from fluidcompat.dataset.common import data_file

__all__ = ["train", "test", "feature_names"]

URL = "http://paddlemodels.bj.bcebos.com/uci_housing/housing.data"
feature_names = ["CRIM", "ZN", "INDUS", "CHAS", "NOX", "RM", "AGE", "DIS", "RAD", "TAX", "PTRATIO", "B", "LSTAT"]

_cache = {}


def load_data(filename, feature_num=14, ratio=0.8):
    if filename in _cache:
        return _cache[filename]
    data = np.fromfile(filename, sep=" ")
    data = data.reshape(data.shape[0] // feature_num, feature_num)
    maximums, minimums, avgs = data.max(axis=0), data.min(axis=0), data.sum(axis=0) / data.shape[0]
    for i in range(feature_num - 1):
        data[:, i] = (data[:, i] - avgs[i]) / (maximums[i] - minimums[i])
    offset = int(data.shape[0] * ratio)
    _cache[filename] = (data[:offset], data[offset:])
    return _cache[filename]


def _reader(part):
    def reader():
        data = load_data(data_file("uci_housing", "housing.data", URL))[part]
        for d in data:
            yield d[:-1], d[-1:]

    return reader


def train():
    return _reader(0)


def test():
    return _reader(1)
