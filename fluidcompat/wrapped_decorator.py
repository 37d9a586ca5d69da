"""``paddle.fluid.wrapped_decorator``: decorators that keep the decorated function's signature."""

from __future__ import annotations

import contextlib
import functools

__all__ = ["wrap_decorator", "signature_safe_contextmanager"]


def wrap_decorator(decorator_func):
    """A decorator made from ``decorator_func`` whose results keep the decorated function's name, doc
    and signature (``functools.wraps``)."""

    def decorator(func):
        wrapped = decorator_func(func)
        return functools.wraps(func)(wrapped) if callable(wrapped) else wrapped

    return decorator


signature_safe_contextmanager = contextlib.contextmanager
