"""glog-style verbose logs controlled by ``GLOG_v`` and ``GLOG_vmodule`` (``operator=3,fetch_op=3``).

As glog does, the variables are read once, when first needed (``refresh()`` reads them again);
the executor then asks one cached flag per run, and with logging off no line is ever formatted.
Torch-free.
"""

from __future__ import annotations

import datetime
import os
import sys
import threading
from typing import Dict, Optional, Tuple

from fluidcompat.dtypes import CPP_NAMES, VarType

__all__ = ["vlog_level", "VLog", "var_debug", "place_text"]

_cache: Optional[Tuple[Dict[str, int], int, int]] = None


def refresh() -> None:
    """Read ``GLOG_v`` and ``GLOG_vmodule`` again."""
    global _cache
    v, vmodule = os.environ.get("GLOG_v", ""), os.environ.get("GLOG_vmodule", "")
    modules = {}
    for part in vmodule.split(","):
        name, _, level = part.partition("=")
        if name.strip() and level.strip().lstrip("-").isdigit():
            modules[name.strip()] = int(level)
    default = int(v) if v.strip().lstrip("-").isdigit() else 0
    _cache = (modules, default, max([default] + list(modules.values())))


def _settings() -> Tuple[Dict[str, int], int]:
    if _cache is None:
        refresh()
    return _cache[0], _cache[1]


def vlog_level(module: str) -> int:
    """The verbosity in force for a source module (``operator``, ``feed_op``, ``fetch_op``, ...)."""
    modules, default = _settings()
    return modules.get(module, default)


def any_vlog(level: int = 3) -> bool:
    if _cache is None:
        refresh()
    return _cache[2] >= level


class VLog:
    """Writes fluid's VLOG lines for the modules switched on at ``level``."""

    FILES = {
        "operator": "operator.cc",
        "feed_op": "feed_op.cc",
        "fetch_op": "fetch_op.cc",
        "tensor_util": "tensor_util.cc",
        "data_device_transform": "data_device_transform.cc",
        "eager_deletion_op_handle": "eager_deletion_op_handle.cc",
        "scope": "scope.cc",
    }

    def __init__(self, level: int = 3) -> None:
        from fluidcompat import places

        self.on = {m for m in self.FILES if vlog_level(m) >= level}
        self.pid = os.getpid()
        self.files = dict(self.FILES)
        if places.is_compiled_with_cuda():  # a CUDA build logs its tensor copies from tensor_util.cu
            self.files["tensor_util"] = "tensor_util.cu"

    def __call__(self, module: str, line: int, text: str) -> None:
        if module not in self.on:
            return
        now = datetime.datetime.now()
        tid = threading.get_native_id() if hasattr(threading, "get_native_id") else self.pid
        sys.stderr.write(f"I{now:%m%d %H:%M:%S}.{now.microsecond:06d} {tid} {self.files[module]}:{line}] {text}\n")


def dims_text(shape) -> str:
    return ", ".join(str(d) for d in shape)


def cpp_number(v) -> str:
    """A number as C++'s ostream printed it in fluid's texts (the print op, LoDTensor texts)."""
    if isinstance(v, bool):
        return "1" if v else "0"
    if isinstance(v, float):
        return f"{v:g}"  # C++ ostream's default: 6 significant digits
    return str(v)


def var_debug(name: str, value, vartype_of, lod_of) -> str:
    """``name:float[3, 4]({})`` as fluid's ``DebugStringEx`` prints a variable in a scope (``vartype_of``
    and ``lod_of`` read a value's type and LoD)."""
    if value is None:
        return f"{name}[uninited]"
    if isinstance(value, list):
        return f"{name}:[-1]({{{{}}}})"
    if not hasattr(value, "dtype") or not hasattr(value, "shape"):
        return f"{name}[uninited]"
    rows = f"[row_size={value.rows.shape[0]}]" if hasattr(value, "rows") else ""
    return f"{name}{rows}:{CPP_NAMES[vartype_of(value)]}[{dims_text(value.shape)}]({lod_text(lod_of(value))})"


def lod_text(lod) -> str:
    """A LoD as fluid printed it in logs and LoDTensor texts: ``{{0, 2, 5}}``, ``{}`` for none."""
    return "{" + ", ".join("{" + ", ".join(map(str, level)) + "}" for level in lod) + "}"


def tensor_text(t, lod, vartype) -> str:
    """A tensor as fluid's ``operator<<`` printed a LoDTensor (``str(tensor)``, dygraph ``print``):
    numbers as C++'s ostream printed them, (u)int8 as characters."""
    dtype = "::paddle::platform::float16" if CPP_NAMES[vartype] == "float16" else CPP_NAMES[vartype]
    values = t.detach().cpu().reshape(-1).tolist()
    chars = vartype in (VarType.INT8, VarType.UINT8)
    data = " ".join(chr(int(v) % 256) if chars else cpp_number(v) for v in values)
    return f"\tlod: {lod_text(lod)}\n\tdim: {dims_text(t.shape)}\n\tlayout: NCHW\n\tdtype: {dtype}\n\tdata: [{data}]\n"


def place_text(device) -> str:
    """``CPUPlace`` or ``CUDAPlace(N)`` for a torch device (or its string)."""
    text = str(device)
    if text.startswith("cuda"):
        return f"CUDAPlace({text.split(':')[1] if ':' in text else 0})"
    return "CPUPlace"
