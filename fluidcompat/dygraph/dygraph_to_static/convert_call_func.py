"""``fluid.dygraph.dygraph_to_static.convert_call``: a callable as a translated function would call it.

A Python function or method of the user's (not fluidcompat's, numpy's or the standard library's)
comes back translated (``translator.convert``: its ``if`` / ``while`` / ``for`` on Variables build
static control flow); a Layer, a class, a builtin or a library function comes back as it is.
"""

from __future__ import annotations

import inspect
import os
import sys

__all__ = ["convert_call"]

_LIBRARY_PREFIXES = ("fluidcompat", "fluidcompat_ops", "numpy", "torch", "six", "builtins")
_STDLIB = os.path.dirname(os.__file__)


def _is_library(func) -> bool:
    module = inspect.getmodule(func)
    if module is None:
        return True
    name = module.__name__
    if name.split(".")[0] in _LIBRARY_PREFIXES or name in sys.builtin_module_names:
        return True
    path = getattr(module, "__file__", None) or ""
    return path.startswith(_STDLIB) and "site-packages" not in path


def convert_call(func):
    """``func`` translated when it is the user's Python function or method, else ``func``."""
    from fluidcompat.dygraph.dygraph_to_static.translator import convert

    target = getattr(func, "__func__", func)
    if not inspect.isfunction(target) or _is_library(target):
        return func
    if target.__name__ == "<lambda>":
        return func
    return convert(func)
