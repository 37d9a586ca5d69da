"""``fluid.contrib``: the parts of fluid 1.8.5's contrib package that fluidcompat provides."""

from . import mixed_precision

__all__ = ["mixed_precision"]


def __getattr__(name):  # fluid 1.8 names fluidcompat lacks: UnsupportedAPIError
    if name.startswith("__"):
        raise AttributeError(name)
    from fluidcompat.coverage import unsupported

    return unsupported("paddle.fluid.contrib")(name)
