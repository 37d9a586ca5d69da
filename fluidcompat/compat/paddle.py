"""The ``paddle`` module as scripts run by ``fluidcompat run`` see it."""

import importlib

__version__ = "1.8.5"
__path__: list = []  # a package, so that `import paddle.fluid` goes through the alias finder
full_version = __version__


_MODULES = {"fluid": "fluidcompat", "dataset": "fluidcompat.dataset", "reader": "fluidcompat.reader"}


def __getattr__(name):
    if name in _MODULES:
        return importlib.import_module(_MODULES[name])
    if name == "batch":  # paddle.batch: the reader decorator
        return importlib.import_module("fluidcompat.reader").batch
    raise AttributeError(f"module 'paddle' (fluidcompat) has no attribute '{name}'")
