"""``paddle.dataset.wmt16``: the English-German Multi30k set of ``~/.cache/paddle/dataset/wmt16/
wmt16.tar.gz`` as (source ids, target ids, next target ids). The dictionaries are built from the
training set on first use and kept beside it (``wmt16/<lang>_<size>.dict``, fluid 1.8's files):
``<s>``, ``<e>``, ``<unk>``, then words by falling count (ties in order of first appearance)."""

from __future__ import annotations

import collections
import os
import tarfile

from fluidcompat.dataset.common import data_file

__all__ = ["train", "test", "validation", "fetch", "get_dict"]

DATA_URL = "http://paddlemodels.bj.bcebos.com/wmt/wmt16.tar.gz"
DATA_MD5 = "0c38be43600334966403524a40dcd81e"

TOTAL_EN_WORDS = 11250
TOTAL_DE_WORDS = 19220

START_MARK = "<s>"
END_MARK = "<e>"
UNK_MARK = "<unk>"


def _archive():
    return data_file("wmt16", "wmt16.tar.gz", DATA_URL)


def _pairs(tar_file, file_name):
    with tarfile.open(tar_file, mode="r") as tar:
        for line in tar.extractfile(file_name):
            parts = line.decode().strip().split("\t")
            if len(parts) == 2:
                yield parts


def __build_dict(tar_file, dict_size, save_path, lang):
    counts = collections.Counter()
    for en, de in _pairs(tar_file, "wmt16/train"):
        counts.update((en if lang == "en" else de).split())
    words = [START_MARK, END_MARK, UNK_MARK]
    words += [w for w, _ in sorted(counts.items(), key=lambda x: x[1], reverse=True)][: max(dict_size - 3, 0)]
    with open(save_path, "wb") as f:
        f.write("".join(w + "\n" for w in words).encode())


def __load_dict(tar_file, dict_size, lang, reverse=False):
    path = os.path.join(os.path.dirname(tar_file), f"{lang}_{dict_size}.dict")
    if not os.path.exists(path) or len(open(path, "rb").readlines()) != dict_size:
        __build_dict(tar_file, dict_size, path, lang)
    with open(path, "rb") as f:
        words = [line.strip().decode() for line in f]
    return dict(enumerate(words)) if reverse else {w: i for i, w in enumerate(words)}


def __get_dict_size(src_dict_size, trg_dict_size, src_lang):
    en, de = min(src_dict_size, TOTAL_EN_WORDS), min(trg_dict_size, TOTAL_DE_WORDS)
    if src_lang != "en":
        en, de = min(src_dict_size, TOTAL_DE_WORDS), min(trg_dict_size, TOTAL_EN_WORDS)
    return en, de


def reader_creator(tar_file, file_name, src_dict_size, trg_dict_size, src_lang):
    def reader():
        src_dict = __load_dict(tar_file, src_dict_size, src_lang)
        trg_dict = __load_dict(tar_file, trg_dict_size, "de" if src_lang == "en" else "en")
        start, end, unk = src_dict[START_MARK], src_dict[END_MARK], src_dict[UNK_MARK]
        src_col = 0 if src_lang == "en" else 1
        for parts in _pairs(tar_file, file_name):
            src_ids = [start] + [src_dict.get(w, unk) for w in parts[src_col].split()] + [end]
            trg_ids = [trg_dict.get(w, unk) for w in parts[1 - src_col].split()]
            yield src_ids, [start] + trg_ids, trg_ids + [end]

    return reader


def _creator(part, src_dict_size, trg_dict_size, src_lang):
    if src_lang not in ["en", "de"]:
        raise ValueError("An error language type.  Only support: en (for English); de(for Germany).")
    src_dict_size, trg_dict_size = __get_dict_size(src_dict_size, trg_dict_size, src_lang)
    return reader_creator(_archive(), "wmt16/" + part, src_dict_size, trg_dict_size, src_lang)


def train(src_dict_size, trg_dict_size, src_lang="en"):
    return _creator("train", src_dict_size, trg_dict_size, src_lang)


def test(src_dict_size, trg_dict_size, src_lang="en"):
    return _creator("test", src_dict_size, trg_dict_size, src_lang)


def validation(src_dict_size, trg_dict_size, src_lang="en"):
    return _creator("val", src_dict_size, trg_dict_size, src_lang)


def get_dict(lang, dict_size, reverse=False):
    """The ``lang`` dictionary of ``dict_size`` words (``reverse``: id -> word)."""
    dict_size = min(dict_size, TOTAL_EN_WORDS if lang == "en" else TOTAL_DE_WORDS)
    return __load_dict(_archive(), dict_size, lang, reverse)


def fetch():
    _archive()
