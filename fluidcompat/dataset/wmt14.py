"""``paddle.dataset.wmt14``: the French-English WMT'14 subset of ``~/.cache/paddle/dataset/wmt14/
wmt14.tgz`` as (source ids, target ids, next target ids), with the dictionaries the archive carries,
as fluid 1.8 read it (pairs longer than 80 ids skipped)."""

from __future__ import annotations

import tarfile

from fluidcompat.dataset.common import data_file

__all__ = ["train", "test", "get_dict"]

URL_TRAIN = "http://paddlemodels.bj.bcebos.com/wmt/wmt14.tgz"
MD5_TRAIN = "0791583d57d5beb693b9414c5b36798c"

START = "<s>"
END = "<e>"
UNK = "<unk>"
UNK_IDX = 2


def _archive():
    return data_file("wmt14", "wmt14.tgz", URL_TRAIN)


def _member(tar, suffix):
    names = [m.name for m in tar if m.name.endswith(suffix)]
    if len(names) != 1:
        raise ValueError(f"paddle.dataset.wmt14: {tar.name} holds {len(names)} files named *{suffix}, expected 1")
    return tar.extractfile(names[0])


def __read_to_dict(tar_file, dict_size):
    def first(f):
        out = {}
        for i, line in enumerate(f):
            if i >= dict_size:
                break
            out[line.decode().strip()] = i
        return out

    with tarfile.open(tar_file, mode="r") as tar:
        return first(_member(tar, "src.dict")), first(_member(tar, "trg.dict"))


def reader_creator(tar_file, file_name, dict_size):
    def reader():
        src_dict, trg_dict = __read_to_dict(tar_file, dict_size)
        with tarfile.open(tar_file, mode="r") as tar:
            for name in [m.name for m in tar if m.name.endswith(file_name)]:
                for line in tar.extractfile(name):
                    parts = line.decode().strip().split("\t")
                    if len(parts) != 2:
                        continue
                    src_ids = [src_dict.get(w, UNK_IDX) for w in [START] + parts[0].split() + [END]]
                    trg_ids = [trg_dict.get(w, UNK_IDX) for w in parts[1].split()]
                    if len(src_ids) > 80 or len(trg_ids) > 80:
                        continue
                    yield src_ids, [trg_dict[START]] + trg_ids, trg_ids + [trg_dict[END]]

    return reader


def train(dict_size):
    return reader_creator(_archive(), "train/train", dict_size)


def test(dict_size):
    return reader_creator(_archive(), "test/test", dict_size)


def gen(dict_size):
    return reader_creator(_archive(), "gen/gen", dict_size)


def get_dict(dict_size, reverse=True):
    src_dict, trg_dict = __read_to_dict(_archive(), dict_size)
    if reverse:
        src_dict = {v: k for k, v in src_dict.items()}
        trg_dict = {v: k for k, v in trg_dict.items()}
    return src_dict, trg_dict


def fetch():
    _archive()
