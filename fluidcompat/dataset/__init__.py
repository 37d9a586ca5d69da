"""``paddle.dataset``: fluid 1.8's dataset readers over local files in fluid's cache layout
(``~/.cache/paddle/dataset/<name>/``). fluidcompat never downloads: a missing file is an error that
says where to put it (``image`` and ``flowers`` decode with OpenCV, as fluid did). ``python -m
fluidcompat.dataset.synthetic`` writes generated stand-ins for mnist and uci_housing there (for
trying scripts out; they are not the real data)."""

from fluidcompat.dataset import (  # noqa: F401
    cifar,
    common,
    conll05,
    flowers,
    image,
    imdb,
    imikolov,
    mnist,
    movielens,
    uci_housing,
    wmt14,
    wmt16,
)

__all__ = [
    "cifar",
    "common",
    "conll05",
    "flowers",
    "image",
    "imdb",
    "imikolov",
    "mnist",
    "movielens",
    "uci_housing",
    "wmt14",
    "wmt16",
]


def __getattr__(name):
    # ``paddle.fluid.dataset`` is this package too: its DatasetFactory, InMemoryDataset, QueueDataset
    if name in ("DatasetFactory", "InMemoryDataset", "QueueDataset", "DatasetBase"):
        from fluidcompat import fluid_dataset

        return getattr(fluid_dataset, name)
    raise AttributeError(f"module 'paddle.dataset' (fluidcompat) has no attribute '{name}'")
