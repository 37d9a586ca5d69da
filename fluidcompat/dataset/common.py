"""Where fluid 1.8 kept its datasets, the error for a file that is not there, and fluid's helpers to
split a reader into pickle files and read a trainer's share of them back."""

from __future__ import annotations

import glob
import hashlib
import os
import pickle

from fluidcompat.reader import batch

__all__ = ["DATA_HOME", "data_file", "download", "md5file", "split", "cluster_files_reader"]

DATA_HOME = os.path.expanduser("~/.cache/paddle/dataset")


def data_file(module: str, filename: str, url: str) -> str:
    """The path of ``filename`` of dataset ``module``; an error naming the place when it is missing."""
    path = os.path.join(os.path.expanduser("~/.cache/paddle/dataset"), module, filename)
    if not os.path.exists(path):
        raise FileNotFoundError(
            f"paddle.dataset.{module}: {path} is missing. fluidcompat does not download datasets: put the file "
            f"there (fluid 1.8 fetched it from {url}), or run `python -m fluidcompat.dataset.synthetic` to write "
            "generated stand-in data for mnist and uci_housing."
        )
    return path


def download(url, module_name, md5sum, save_name=None):
    """The path where fluid 1.8 saved ``url`` (``DATA_HOME/module_name/<last part of url>``), which must
    be there already: nothing is downloaded and the md5 sum is not checked (stand-in data passes)."""
    return data_file(module_name, save_name or url.split("/")[-1], url)


def md5file(fname):
    digest = hashlib.md5()
    with open(fname, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def split(reader, line_count, suffix="%05d.pickle", dumper=pickle.dump):
    """The samples of reader creator ``reader`` into files ``suffix % 0``, ``suffix % 1``, ... of
    ``line_count`` samples each (the last may hold fewer), each a list written by ``dumper(list, f)``
    to a binary file."""
    if not callable(dumper):
        raise TypeError("dumper should be callable.")
    if line_count < 1:
        raise ValueError(f"split: line_count must be at least 1, received {line_count}")
    for index, lines in enumerate(batch(reader, line_count)()):
        with open(suffix % index, "wb") as f:
            dumper(lines, f)


def cluster_files_reader(files_pattern, trainer_count, trainer_id, loader=pickle.load):
    """A reader of the samples in trainer ``trainer_id``'s share of the files matching
    ``files_pattern`` (sorted; every ``trainer_count``-th from the ``trainer_id``-th), each file read
    by ``loader(f)`` from a binary file."""

    def reader():
        if not callable(loader):
            raise TypeError("loader should be callable.")
        mine = [fn for idx, fn in enumerate(sorted(glob.glob(files_pattern))) if idx % trainer_count == trainer_id]
        for fn in mine:
            print(f"append file: {fn}")
        for fn in mine:
            with open(fn, "rb") as f:
                yield from loader(f)

    return reader
