"""``paddle.complex.tensor``: the complex layers by family (math, manipulation, linalg)."""

from fluidcompat.compat.complex.tensor import linalg, manipulation, math
from fluidcompat.compat.complex.tensor.linalg import *  # noqa: F403
from fluidcompat.compat.complex.tensor.manipulation import *  # noqa: F403
from fluidcompat.compat.complex.tensor.math import *  # noqa: F403

__all__ = math.__all__ + manipulation.__all__ + linalg.__all__
