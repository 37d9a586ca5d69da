"""``paddle.dataset.imikolov``: the Penn Treebank from ``~/.cache/paddle/dataset/imikolov/
simple-examples.tgz`` as n-grams of word ids (``DataType.NGRAM``) or (source, target) id sequences
(``DataType.SEQ``), as fluid 1.8 read it (words decoded to str)."""

from __future__ import annotations

import collections
import tarfile

from fluidcompat.dataset.common import data_file

__all__ = ["DataType", "build_dict", "train", "test"]

URL = "http://www.fit.vutbr.cz/~imikolov/rnnlm/simple-examples.tgz"
TRAIN = "./simple-examples/data/ptb.train.txt"
VALID = "./simple-examples/data/ptb.valid.txt"


class DataType:
    NGRAM = 1
    SEQ = 2


def _archive() -> str:
    return data_file("imikolov", "simple-examples.tgz", URL)


def _lines(tar, name):
    for raw in tar.extractfile(name):
        yield raw.decode("utf-8")


def word_count(lines, word_freq=None):
    word_freq = collections.defaultdict(int) if word_freq is None else word_freq
    for line in lines:
        for w in line.strip().split():
            word_freq[w] += 1
        word_freq["<s>"] += 1
        word_freq["<e>"] += 1
    return word_freq


def build_dict(min_word_freq=50):
    """Words of the train and valid sets seen more than ``min_word_freq`` times, most frequent first
    (ties by the word), then ``<unk>``."""
    with tarfile.open(_archive()) as tar:
        freq = word_count(_lines(tar, VALID), word_count(_lines(tar, TRAIN)))
    freq.pop("<unk>", None)
    kept = sorted((x for x in freq.items() if x[1] > min_word_freq), key=lambda x: (-x[1], x[0]))
    word_idx = {w: i for i, (w, _) in enumerate(kept)}
    word_idx["<unk>"] = len(kept)
    return word_idx


def reader_creator(filename, word_idx, n, data_type):
    def reader():
        unk = word_idx["<unk>"]
        with tarfile.open(_archive()) as tar:
            for line in _lines(tar, filename):
                if data_type == DataType.NGRAM:
                    if n <= -1:
                        raise ValueError("Invalid gram length")
                    words = ["<s>"] + line.strip().split() + ["<e>"]
                    if len(words) >= n:
                        ids = [word_idx.get(w, unk) for w in words]
                        for i in range(n, len(ids) + 1):
                            yield tuple(ids[i - n : i])
                elif data_type == DataType.SEQ:
                    ids = [word_idx.get(w, unk) for w in line.strip().split()]
                    src, trg = [word_idx["<s>"]] + ids, ids + [word_idx["<e>"]]
                    if n > 0 and len(src) > n:
                        continue
                    yield src, trg
                else:
                    raise ValueError(f"Unknown data type {data_type!r}")

    return reader


def train(word_idx, n, data_type=DataType.NGRAM):
    return reader_creator(TRAIN, word_idx, n, data_type)


def test(word_idx, n, data_type=DataType.NGRAM):
    return reader_creator(VALID, word_idx, n, data_type)
