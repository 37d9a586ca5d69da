"""``fluid.dygraph.dygraph_to_static.variable_trans_func``: Python values as static-graph Variables.

``data_layer_not_check`` is a feed variable whose feeds are not checked against its shape and dtype
(a dygraph input may change length); ``to_static_variable`` makes a bool, float or int a
``[1]``-shaped Variable (bool, float64, int64) and leaves anything else as it is;
``create_fill_constant_node`` is the statement that does that in source.
"""

from __future__ import annotations

import gast

__all__ = [
    "create_fill_constant_node",
    "create_static_variable_gast_node",
    "data_layer_not_check",
    "to_static_variable",
    "to_static_variable_gast_node",
]


def data_layer_not_check(name, shape, dtype="float32", lod_level=0):
    """A global feed variable ``name`` (None in ``shape`` means -1, stop_gradient True) whose feeds are
    not checked."""
    from fluidcompat.layers.io import feed_var

    return feed_var(name, shape, dtype, lod_level, check_feed=False)


def _static_dtype(value):
    """fluid 1.8's dtype for a Python value made a Variable, or None for other values."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, float):
        return "float64"
    if isinstance(value, int):
        return "int64"
    return None


def to_static_variable(x):
    """A bool, float or int as a ``[1]`` Variable of fill_constant; anything else as it is."""
    dtype = _static_dtype(x)
    if dtype is None:
        return x
    from fluidcompat.layers.tensor import fill_constant

    return fill_constant(shape=[1], dtype=dtype, value=x)


def create_fill_constant_node(name, value):
    """``name = fluid.layers.fill_constant(shape=[1], dtype=..., value=value)`` as a gast statement;
    None for a value that is not a bool, float or int."""
    dtype = _static_dtype(value)
    if dtype is None:
        return None
    return gast.parse(f"{name} = fluid.layers.fill_constant(shape=[1], dtype='{dtype}', value={value})").body[0]


def to_static_variable_gast_node(name):
    source = f"{name} = fluid.dygraph.dygraph_to_static.variable_trans_func.to_static_variable({name})"
    return gast.parse(source).body[0]


def create_static_variable_gast_node(name):
    source = (
        f"{name} = fluid.dygraph.dygraph_to_static.variable_trans_func.data_layer_not_check("
        f"name='{name}', shape=[-1], dtype='float32')"
    )
    return gast.parse(source).body[0]
