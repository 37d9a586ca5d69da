"""The ``paddle`` module as scripts run by ``fluidcompat run`` see it."""

import importlib

__version__ = "1.8.5"
__path__: list = []  # a package, so that `import paddle.fluid` goes through the alias finder
full_version = __version__


_MODULES = {
    "fluid": "fluidcompat",
    "dataset": "fluidcompat.dataset",
    "reader": "fluidcompat.reader",
    "device": "fluidcompat.compat.device",
}
# Paddle 2's device API (fluidcompat/compat/device.py)
_DEVICE_NAMES = {"CPUPlace", "CUDAPlace", "CUDAPinnedPlace", "Tensor", "to_tensor", "seed", "is_compiled_with_cuda"}


def __getattr__(name):
    if name in _MODULES:
        return importlib.import_module(_MODULES[name])
    if name in _DEVICE_NAMES:
        return getattr(importlib.import_module("fluidcompat.compat.device"), name)
    if name == "batch":  # paddle.batch: the reader decorator
        return importlib.import_module("fluidcompat.reader").batch
    raise AttributeError(f"module 'paddle' (fluidcompat) has no attribute '{name}'")
