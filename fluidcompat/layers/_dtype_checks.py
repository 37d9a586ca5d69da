"""fluid 1.8's build-time argument checks of its layers: which argument must be a Variable of which
dtypes (``fluid18_dtype_checks.json``, read from fluid 1.8.5's layer sources), with fluid's messages.

``apply`` wraps the layers of a namespace (``fluid.layers``; ``fluid.embedding``, the table's one
``paddle.fluid.input`` entry, checks itself in ``layers.nn``); a wrapped layer checks
its arguments while a static program is built and not in dygraph mode, as fluid 1.8 did. Without
them an integer input reached a float kernel and failed when the program ran, far from the line.
One widening: float64 passes wherever float32 does (fluid 1.8 kept some layers to float32; the
kernels here compute either), and the message stays fluid's."""

from __future__ import annotations

import functools
import inspect
import json
import os

from fluidcompat import framework
from fluidcompat.dtypes import VarType
from fluidcompat.layer_helper import check_dtype, check_variable

_TABLE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fluid18_dtype_checks.json")


def _checked(fn, checks):
    names = list(inspect.signature(fn).parameters)
    plan = [(names.index(param), param, label, dtypes, op) for param, label, dtypes, op in checks if param in names]
    if not plan:
        return fn

    @functools.wraps(fn)
    def layer(*args, **kwargs):
        if not framework.in_dygraph_mode():
            for index, param, label, dtypes, op in plan:
                value = args[index] if index < len(args) else kwargs.get(param)
                if value is not None:
                    check_variable(value, label, op)
                    if not (value.dtype == VarType.FP64 and "float32" in dtypes):
                        check_dtype(value.dtype, label, dtypes, op)
        return fn(*args, **kwargs)

    return layer


def apply(namespace: dict, module: str) -> None:
    """Wrap the layers of ``namespace`` that fluid 1.8's ``module`` checked."""
    with open(_TABLE) as f:
        table = json.load(f)[module]
    for name, checks in table.items():
        fn = namespace.get(name)
        if inspect.isfunction(fn):
            namespace[name] = _checked(fn, checks)
