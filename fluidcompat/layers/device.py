"""``fluid.layers.device``: ``get_places``, deprecated since fluid 0.15 (ParallelExecutor replaced the
parallel_do that read its places); fluid 1.8 kept it, outside ``fluid.layers``'s names."""

from __future__ import annotations

import sys

from fluidcompat import unique_name
from fluidcompat.dtypes import VarType
from fluidcompat.layer_helper import LayerHelper

__all__: list = []

_DEPRECATED = "API get_places is deprecated since 0.15.0. Please use ParallelExecutor instead."


def get_places(device_count=None, device_type=None):
    """A PLACE_LIST variable that a ``get_places`` op fills with ``device_count`` places (None or 0:
    every device) of ``device_type`` ("CPU", "CUDA", or None / "AUTO": the executor's kind)."""
    print(_DEPRECATED, file=sys.stderr)  # fluid's deprecated() told stderr at each call
    helper = LayerHelper("get_places", device_count=device_count, device_type=device_type)
    out = helper.create_variable(
        name=unique_name.generate_with_ignorable_key(helper.name + ".out"), type=VarType.PLACE_LIST
    )
    attrs = {}
    if device_count is not None:
        attrs["device_count"] = int(device_count)
    if device_type is not None:
        attrs["device_type"] = str(device_type)
    helper.append_op(type="get_places", outputs={"Out": [out]}, attrs=attrs)
    return out


get_places.__doc__ += f"\n\n    {_DEPRECATED}"
