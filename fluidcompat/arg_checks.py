"""fluid 1.8's build-time checks of a layer's arguments (is it a Variable, of which dtype), with
fluid's messages. LayerHelper hands them out as fluid's ``layer_helper`` module did; initializers
use them below it."""

from __future__ import annotations

import warnings

from fluidcompat import framework


def check_variable(value, arg: str, api: str) -> None:
    if not isinstance(value, framework.Variable):
        raise TypeError(f"The type of '{arg}' in {api} must be {framework.Variable!r}, but received {type(value)!r}. ")


def refuse_false(attr, arg: str, where: str) -> None:
    """fluid 1.8's check for a layer whose op needs the parameter ``arg`` (param_attr / bias_attr)
    names: ``False`` would make none. Its message; a ValueError where fluid asserted."""
    if attr is False:
        raise ValueError(f"{arg} should not be False {where}.")


# the dtype names fluid's convert_dtype knew (its list in its messages too)
DTYPE_NAMES = ("bool", "float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8")


def convert_dtype(dtype) -> str:
    """fluid's ``convert_dtype``: a dtype's numpy name; as a string only one of those names (numpy's
    aliases such as 'float' and 'int', which ``fluid.data`` takes, are refused here, as fluid did)."""
    from fluidcompat.dtypes import np_name

    if isinstance(dtype, str):
        if dtype in DTYPE_NAMES:
            return dtype
        raise ValueError("dtype must be any of [bool, float16, float32, float64, int8, int16, int32, int64, uint8]")
    return np_name(dtype)


def check_dtype(value, arg: str, allowed, api: str, extra: str = "") -> None:
    """fluid's check of a dtype (a variable's, or a layer's ``dtype`` argument): ``allowed`` shows in
    the message as given (a list, or a tuple where fluid's layer wrote one). Skipped in dygraph mode,
    as fluid 1.8 skipped it."""
    if framework.in_dygraph_mode():
        return
    name = convert_dtype(value)
    if name == "float16":  # fluid 1.8's warning, whatever the place
        warnings.warn(f"The data type of '{arg}' in {api} only support float16 in GPU now. ", stacklevel=2)
    if name not in allowed:
        raise TypeError(f"The data type of '{arg}' in {api} must be {allowed!r}, but received {name}. {extra}")
