"""The ``paddle`` module as scripts run by ``fluidcompat run`` see it."""

import importlib

__version__ = "1.8.5"
__path__: list = []  # a package, so that `import paddle.fluid` goes through the alias finder
full_version = __version__


def __getattr__(name):
    if name == "fluid":
        return importlib.import_module("fluidcompat")
    raise AttributeError(f"module 'paddle' (fluidcompat) has no attribute '{name}'")
