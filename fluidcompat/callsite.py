"""Where in the user's script a call into fluidcompat came from: the first frame outside the library
(an op's call site, shown in its errors; the place a build-time warning points at). Floor 1."""

from __future__ import annotations

import contextlib
import linecache
import os
import sys
import warnings
from typing import Optional, Tuple

# Frames from these directories are library frames; an op's call site is the first frame outside.
_HERE = os.path.dirname(os.path.abspath(__file__))
_OPS = os.path.join(os.path.dirname(_HERE), "fluidcompat_ops")
LIB_DIRS = tuple(d + os.sep for d in (_HERE, _OPS, os.path.dirname(contextlib.__file__)))


def user_callsite() -> Optional[Tuple[str, int, str]]:
    frame = sys._getframe(2)
    while frame is not None:
        fname = frame.f_code.co_filename
        if not fname.startswith(LIB_DIRS) and not fname.startswith("<frozen"):
            line = linecache.getline(fname, frame.f_lineno).strip()
            return (fname, frame.f_lineno, line)
        frame = frame.f_back
    return None


def warn_at_user(message: str) -> None:
    """Warn with the location of the script line that is building the op."""
    site = user_callsite()
    if site is None:
        warnings.warn(message, stacklevel=2)
    else:
        warnings.warn_explicit(message, UserWarning, site[0], site[1])
