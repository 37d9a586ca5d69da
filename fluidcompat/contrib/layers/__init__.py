"""``fluid.contrib.layers``: the recurrent layers (``basic_lstm``, ``basic_gru`` and their units)."""

from . import rnn_impl
from .rnn_impl import BasicGRUUnit, BasicLSTMUnit, basic_gru, basic_lstm  # noqa: F401  (exported)

__all__ = list(rnn_impl.__all__)


def __getattr__(name):  # fluid 1.8 names fluidcompat lacks: UnsupportedAPIError
    if name.startswith("__"):
        raise AttributeError(name)
    from fluidcompat.coverage import unsupported

    return unsupported("paddle.fluid.contrib")(name)
