"""``fluid.contrib``: the parts of fluid 1.8.5's contrib package that fluidcompat provides."""

from . import (  # noqa: F401  (fluid exposes the modules)
    decoder,
    extend_optimizer,
    layers,
    memory_usage_calc,
    mixed_precision,
    model_stat,
    op_frequence,
    quantize,
    reader,
)
from .decoder import *  # noqa: F401,F403  (its __all__)
from .extend_optimizer import extend_with_decoupled_weight_decay
from .layers import *  # noqa: F401,F403  (its __all__)
from .memory_usage_calc import memory_usage
from .mixed_precision import *  # noqa: F401,F403  (decorate, AutoMixedPrecisionLists: fluid's contrib had them)
from .model_stat import summary  # noqa: F401  (fluid's contrib imported model_stat's names)
from .op_frequence import op_freq_statistic
from .quantize import *  # noqa: F401,F403  (its __all__)
from .reader import *  # noqa: F401,F403  (its __all__)

__all__ = (
    ["mixed_precision", "extend_with_decoupled_weight_decay", "memory_usage", "op_freq_statistic"]
    + list(layers.__all__)
    + list(decoder.__all__)
    + list(reader.__all__)
    + list(quantize.__all__)
)


def __getattr__(name):  # fluid 1.8 names fluidcompat lacks: UnsupportedAPIError
    if name.startswith("__"):
        raise AttributeError(name)
    from fluidcompat.fluid18_names import unsupported

    return unsupported("paddle.fluid.contrib")(name)
