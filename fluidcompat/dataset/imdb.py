"""``paddle.dataset.imdb``: IMDB reviews as (word ids, label) with label 0 for positive and 1 for
negative, from ``~/.cache/paddle/dataset/imdb/aclImdb_v1.tar.gz``, tokenized as fluid 1.8 did it
(punctuation dropped, lower-cased, split on whitespace; words are bytes)."""

from __future__ import annotations

import collections
import re
import string
import tarfile

from fluidcompat.dataset.common import data_file

__all__ = ["build_dict", "word_dict", "train", "test"]

URL = "http://ai.stanford.edu/%7Eamaas/data/sentiment/aclImdb_v1.tar.gz"
_DROP = string.punctuation.encode()


def _archive() -> str:
    return data_file("imdb", "aclImdb_v1.tar.gz", URL)


def tokenize(pattern):
    """The token lists of the archive's files whose names match ``pattern``, in archive order."""
    with tarfile.open(_archive()) as tar:
        for member in tar:
            if pattern.match(member.name):
                text = tar.extractfile(member).read().rstrip(b"\n\r")
                yield text.translate(None, _DROP).lower().split()


def build_dict(pattern, cutoff):
    """Words seen more than ``cutoff`` times, most frequent first (ties by the word), then ``<unk>``."""
    freq = collections.defaultdict(int)
    for doc in tokenize(pattern):
        for word in doc:
            freq[word] += 1
    kept = sorted((x for x in freq.items() if x[1] > cutoff), key=lambda x: (-x[1], x[0]))
    word_idx = {w: i for i, (w, _) in enumerate(kept)}
    word_idx["<unk>"] = len(kept)
    return word_idx


def reader_creator(pos_pattern, neg_pattern, word_idx):
    unk = word_idx["<unk>"]
    samples = [([word_idx.get(w, unk) for w in doc], 0) for doc in tokenize(pos_pattern)]
    samples += [([word_idx.get(w, unk) for w in doc], 1) for doc in tokenize(neg_pattern)]

    def reader():
        yield from samples

    return reader


def train(word_idx):
    return reader_creator(
        re.compile(r"aclImdb/train/pos/.*\.txt$"), re.compile(r"aclImdb/train/neg/.*\.txt$"), word_idx
    )


def test(word_idx):
    return reader_creator(re.compile(r"aclImdb/test/pos/.*\.txt$"), re.compile(r"aclImdb/test/neg/.*\.txt$"), word_idx)


def word_dict():
    return build_dict(re.compile(r"aclImdb/((train)|(test))/((pos)|(neg))/.*\.txt$"), 150)
