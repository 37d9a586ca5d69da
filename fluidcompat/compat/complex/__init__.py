"""``paddle.complex``: fluid 1.8's layers over complex values, each a ``ComplexVariable`` (a real and an
imaginary Variable), in dygraph and in static programs. Each layer takes at least one ComplexVariable
(a real Variable may stand for the other operand) and builds its result from fluid's real layers."""

from fluidcompat.compat.complex import helper, tensor  # noqa: F401  (paddle.complex.helper, .tensor)
from fluidcompat.compat.complex.tensor import *  # noqa: F403
from fluidcompat.compat.complex.tensor import __all__ as _tensor_all

__all__ = list(_tensor_all)
del _tensor_all
