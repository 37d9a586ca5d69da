"""``fluid.contrib``: the parts of fluid 1.8.5's contrib package that fluidcompat provides."""

from . import layers, mixed_precision  # noqa: F401  (fluid exposes the modules)
from .layers import BasicGRUUnit, BasicLSTMUnit, basic_gru, basic_lstm  # noqa: F401  (exported)

__all__ = ["mixed_precision", "BasicGRUUnit", "BasicLSTMUnit", "basic_gru", "basic_lstm"]


def __getattr__(name):  # fluid 1.8 names fluidcompat lacks: UnsupportedAPIError
    if name.startswith("__"):
        raise AttributeError(name)
    from fluidcompat.coverage import unsupported

    return unsupported("paddle.fluid.contrib")(name)
