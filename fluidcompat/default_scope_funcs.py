"""``paddle.fluid.default_scope_funcs``: a stack of scopes per thread, the global scope at its bottom,
and functions that act on its top (``var``, ``find_var``, ``enter_local_scope`` ...)."""

from __future__ import annotations

import threading

from fluidcompat.executor.scope import global_scope

__all__ = ["get_cur_scope", "enter_local_scope", "leave_local_scope", "var", "find_var", "scoped_function"]

_local = threading.local()


def _stack() -> list:
    if not hasattr(_local, "stack"):
        _local.stack = [global_scope()]
    return _local.stack


def get_cur_scope():
    """The scope on top of this thread's stack."""
    return _stack()[-1]


def enter_local_scope() -> None:
    """Push a new child of the current scope."""
    _stack().append(get_cur_scope().new_scope())


def leave_local_scope() -> None:
    """Pop the current scope (and drop its children)."""
    stack = _stack()
    if len(stack) == 1:
        raise RuntimeError("leave_local_scope: there is no local scope to leave (only the global scope is left)")
    stack.pop()
    stack[-1].drop_kids()


def var(name: str):
    """The current scope's variable ``name``, made there if absent."""
    return get_cur_scope().var(name)


def find_var(name: str):
    """The variable ``name`` in the current scope or its parents, or None."""
    return get_cur_scope().find_var(name)


def scoped_function(func):
    """Run ``func`` in a new local scope, left afterwards whatever happens."""
    enter_local_scope()
    try:
        func()
    finally:
        leave_local_scope()
