"""``fluid.layers``: thin functions that check arguments, create outputs and append ops."""

from fluidcompat.layers import (
    _docs,
    _dtype_checks,
    control_flow,
    decode,
    detection,
    distributions,
    extra,
    io,
    learning_rate_scheduler,
    loss,
    math_op_patch,
    metric_op,
    nn,
    ops,
    sequence_lod,
    tensor,
)
from fluidcompat.layers import rnn as _rnn_module  # the name `rnn` is the function, as in fluid
from fluidcompat.layers.control_flow import *  # noqa: F401,F403
from fluidcompat.layers.decode import *  # noqa: F401,F403
from fluidcompat.layers.detection import *  # noqa: F401,F403
from fluidcompat.layers.distributions import *  # noqa: F401,F403
from fluidcompat.layers.extra import *  # noqa: F401,F403
from fluidcompat.layers.io import *  # noqa: F401,F403
from fluidcompat.layers.learning_rate_scheduler import *  # noqa: F401,F403
from fluidcompat.layers.loss import *  # noqa: F401,F403
from fluidcompat.layers.nn import *  # noqa: F401,F403
from fluidcompat.layers.ops import *  # noqa: F401,F403
from fluidcompat.layers.rnn import *  # noqa: F401,F403
from fluidcompat.layers.sequence_lod import *  # noqa: F401,F403
from fluidcompat.layers.tensor import *  # noqa: F401,F403

_MODULES = (control_flow, detection, distributions, io, learning_rate_scheduler, loss, metric_op, nn, ops)
_MODULES += (sequence_lod, tensor)
math_op_patch.monkey_patch_variable()
_docs.apply(globals())
_dtype_checks.apply(globals(), "paddle.fluid.layers")

__all__ = (
    control_flow.__all__
    + decode.__all__
    + detection.__all__
    + distributions.__all__
    + extra.__all__
    + io.__all__
    + learning_rate_scheduler.__all__
    + loss.__all__
    + nn.__all__
    + ops.__all__
    + _rnn_module.__all__
    + sequence_lod.__all__
    + tensor.__all__
)


def _fill_fluid_modules():
    """Each ``fluid.layers.<module>`` holds the names fluid 1.8 defined there (``from
    paddle.fluid.layers.nn import cos_sim``), wherever fluidcompat defines them; a name the module
    defines itself stays its own."""
    from fluidcompat.coverage import fluid_names

    space = globals()
    modules = {m.__name__.split(".")[-1]: m for m in (_rnn_module, *_MODULES)}
    for fluid_module, names in fluid_names().items():
        prefix, _, short = fluid_module.rpartition(".")
        module = modules.get(short) if prefix == "paddle.fluid.layers" else None
        if module is None:
            continue
        for name in names:
            if name in space and not hasattr(module, name):
                setattr(module, name, space[name])
                module.__all__ = [*module.__all__, name]  # `from ...layers.nn import *` too


_fill_fluid_modules()


def __getattr__(name):  # fluid 1.8 names fluidcompat lacks: UnsupportedAPIError
    if name.startswith("__"):
        raise AttributeError(name)
    from fluidcompat.coverage import unsupported

    return unsupported("paddle.fluid.layers")(name)
