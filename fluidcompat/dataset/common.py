"""Where fluid 1.8 kept its datasets, and the error for a file that is not there."""

from __future__ import annotations

import os

__all__ = ["DATA_HOME", "data_file"]

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
