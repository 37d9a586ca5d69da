"""``fluid.contrib.layers``: the recurrent layers (``basic_lstm``, ``basic_gru`` and their units) and
the op layers of ``nn`` (fused_elemwise_activation, partial_concat, shuffle_batch, ...)."""

from . import metric_op, nn, rnn_impl
from .metric_op import ctr_metric_bundle  # noqa: F401  (exported)
from .nn import *  # noqa: F401,F403
from .rnn_impl import BasicGRUUnit, BasicLSTMUnit, basic_gru, basic_lstm  # noqa: F401  (exported)

__all__ = list(rnn_impl.__all__) + list(nn.__all__) + list(metric_op.__all__)


def __getattr__(name):  # fluid 1.8 names fluidcompat lacks: UnsupportedAPIError
    if name.startswith("__"):
        raise AttributeError(name)
    from fluidcompat.fluid18_names import unsupported

    return unsupported("paddle.fluid.contrib")(name)
