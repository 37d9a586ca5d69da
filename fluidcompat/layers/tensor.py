"""``fluid.layers.tensor``: the names fluid 1.8 defined in ``layers.tensor``, defined here by family
(creation, manipulation, indexing, math) and handed out from this module as in fluid."""

from __future__ import annotations

from typing import List, Optional  # noqa: F401  (this and the other helpers: names the module always had)

import numpy as np  # noqa: F401

from fluidcompat import unique_name  # noqa: F401
from fluidcompat.dtypes import INT_TYPES, VarType, to_vartype  # noqa: F401
from fluidcompat.framework import Variable, in_dygraph_mode, layer  # noqa: F401
from fluidcompat.initializer import ConstantInitializer, assign_value_attrs  # noqa: F401
from fluidcompat.layer_helper import (  # noqa: F401
    DTYPE_NAMES,
    LayerHelper,
    check_dtype,
    check_variable,
    convert_dtype,
)
from fluidcompat.layers.creation import (  # noqa: F401  # noqa: F401  (defined by family)
    FILL_DTYPES,
    assign,
    builtins_range,
    create_global_var,
    create_parameter,
    create_tensor,
    fill_constant,
    fill_constant_batch_size_like,
    gaussian_random,
    linspace,
    ones,
    ones_like,
    range,
    uniform_random,
    zeros,
    zeros_like,
)
from fluidcompat.layers.indexing import (  # noqa: F401  (defined by family)
    argmax,
    argmin,
    argsort,
    gather,
    scatter,
    slice,
    where,
)
from fluidcompat.layers.manipulation import (  # noqa: F401  (defined by family)
    cast,
    concat,
    crop_tensor,
    expand,
    flatten,
    pad,
    pad2d,
    reshape,
    shape,
    split,
    squeeze,
    stack,
    transpose,
    unsqueeze,
)
from fluidcompat.layers.math import sum, sums  # noqa: F401  (defined by family)
from fluidcompat.param_attr import ParamAttr  # noqa: F401

__all__ = [
    "fill_constant",
    "assign",
    "cast",
    "shape",
    "slice",
    "crop_tensor",
    "reshape",
    "transpose",
    "concat",
    "split",
    "squeeze",
    "unsqueeze",
    "stack",
    "expand",
    "gather",
    "scatter",
    "zeros",
    "ones",
    "zeros_like",
    "ones_like",
    "range",
    "linspace",
    "create_tensor",
    "create_parameter",
    "create_global_var",
    "fill_constant_batch_size_like",
    "argmax",
    "argmin",
    "argsort",
    "sums",
    "sum",
    "flatten",
    "pad",
    "pad2d",
    "where",
    "uniform_random",
    "gaussian_random",
]
