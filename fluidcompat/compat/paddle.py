"""The ``paddle`` module as scripts run by ``fluidcompat run`` see it: ``paddle.fluid`` (fluidcompat
itself), the 1.x ``dataset`` / ``reader`` / ``batch``, and Paddle 2's device API, tensors, ``nn``,
``optimizer``, ``io``, ``metric``, ``distributed``, ``save`` / ``load``."""

import importlib

from fluidcompat.compat import _ALIASES
from fluidcompat.compat.check_import_scipy import check_import_scipy  # noqa: F401  (paddle.check_import_scipy)

__version__ = "1.8.5"
__path__: list = []  # a package, so that `import paddle.fluid` goes through the alias finder
full_version = __version__


_MODULES = {alias[len("paddle.") :]: real for alias, real in _ALIASES.items() if alias.count(".") == 1}
# name -> the module that defines it
_NAMES = {
    **{
        n: "fluidcompat.compat.device"
        for n in (
            "CPUPlace",
            "CUDAPlace",
            "CUDAPinnedPlace",
            "Tensor",
            "to_tensor",
            "seed",
            "is_compiled_with_cuda",
            "get_device",
            "set_device",
        )
    },  # fmt: skip
    **{n: "fluidcompat.compat.saving" for n in ("save", "load")},
    "DataParallel": "fluidcompat.compat.distributed",
    "ParamAttr": "fluidcompat.param_attr",
    "batch": "fluidcompat.reader",
}


def __getattr__(name):
    if name in _MODULES:
        return importlib.import_module(_MODULES[name])
    if name in _NAMES:
        return getattr(importlib.import_module(_NAMES[name]), name)
    tensor = importlib.import_module("fluidcompat.compat.tensor")
    if name in tensor.__all__:
        return getattr(tensor, name)
    if name in tensor.DTYPES:
        return tensor.DTYPES[name]
    from fluidcompat.compat.names import missing  # (paddle.vision, paddle.Model: what to use instead)

    raise missing("paddle", name)


_static = False


def enable_static() -> None:
    """Paddle 2's switch to static graphs: fluid programs run as they always do under fluidcompat."""
    global _static
    _static = True


def disable_static(place=None) -> None:
    global _static
    _static = False


def in_dynamic_mode() -> bool:
    return not _static
