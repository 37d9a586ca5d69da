"""Reading the pickled checkpoint files (``.pdparams``, ``.pdopt``, ``paddle.save``'s files) without
running code from them.

``pickle.load`` calls whatever a file names, so loading a checkpoint from elsewhere could run any
code (fluid 1.8 loaded them so). Here a file may name only what fluid 1.8.5 and fluidcompat write in
these files: numpy arrays, dtypes and scalars (``numpy.core.multiarray._reconstruct``,
``numpy.ndarray``, ``numpy.dtype``, ``_codecs.encode`` for their bytes under protocol 2;
``numpy.frombuffer`` / ``numpy.reshape`` as fluidcompat's portable arrays), ``OrderedDict`` and the
built-in containers, strings and numbers. A file naming anything else is refused with
:class:`UnsafePickleError`, which names the file and the class. ``FLUIDCOMPAT_UNSAFE_PICKLE=1`` in
the environment loads such a file anyway (only for files you trust).

Floor 1: imports numpy and the standard library only.
"""

from __future__ import annotations

import _compat_pickle
import io
import os
import pickle

__all__ = ["UNSAFE_ENV", "UnsafePickleError", "load_file", "loads"]

UNSAFE_ENV = "FLUIDCOMPAT_UNSAFE_PICKLE"

_NUMPY_NAMES = {
    ("multiarray", "_reconstruct"),
    ("multiarray", "scalar"),
    ("numeric", "_frombuffer"),
}
_ALLOWED = {
    ("numpy", "ndarray"),
    ("numpy", "dtype"),
    ("numpy", "frombuffer"),
    ("numpy", "reshape"),
    ("_codecs", "encode"),
    ("collections", "OrderedDict"),
    ("builtins", "set"),
    ("builtins", "frozenset"),
    ("builtins", "complex"),
    ("builtins", "bytearray"),
    ("builtins", "slice"),
    ("builtins", "range"),
}
for _core in ("numpy.core", "numpy._core"):
    for _mod, _name in _NUMPY_NAMES:
        _ALLOWED.add((f"{_core}.{_mod}", _name))
# numpy 2 pickles dtypes of fixed-size types by their class (numpy.dtypes.Float32DType, ...)
_ALLOWED_PREFIXES = (("numpy.dtypes", "DType"),)


class UnsafePickleError(pickle.UnpicklingError):
    """A checkpoint file names a class or function that loading it would call."""


def _allowed(module: str, name: str) -> bool:
    if (module, name) in _compat_pickle.NAME_MAPPING:  # Python 2 names, as protocol 2 writes them
        module, name = _compat_pickle.NAME_MAPPING[(module, name)]
    elif module in _compat_pickle.IMPORT_MAPPING:
        module = _compat_pickle.IMPORT_MAPPING[module]
    if (module, name) in _ALLOWED:
        return True
    return any(module == m and name.endswith(suffix) for m, suffix in _ALLOWED_PREFIXES)


class _RestrictedUnpickler(pickle.Unpickler):
    def __init__(self, f, path: str) -> None:
        super().__init__(f, encoding="latin1")
        self._path = path

    def find_class(self, module, name):
        if (module, name) == ("fluidcompat.executor.executor", "FetchedArray"):
            return _ndarray()  # earlier fluidcompat pickled fetched arrays by their class: plain arrays here
        if not _allowed(module, name):
            raise UnsafePickleError(
                f"{self._path}: the file names '{module}.{name}', which a checkpoint does not hold (only numpy "
                f"arrays, dicts, lists, tuples, strings and numbers load). Loading it could run code: if you "
                f"trust the file, set {UNSAFE_ENV}=1 to load it with pickle."
            )
        return super().find_class(module, name)

    def persistent_load(self, pid):
        raise UnsafePickleError(f"{self._path}: the file holds a persistent id ({pid!r}), which a checkpoint does not")


def _ndarray():
    import numpy

    return numpy.ndarray


def _unsafe_allowed() -> bool:
    return os.environ.get(UNSAFE_ENV, "").strip().lower() in ("1", "true", "yes", "on")


def loads(data: bytes, path: str):
    """Unpickle ``data``, the bytes of the file ``path`` (named in errors), through the restricted
    unpickler. A truncated or damaged file raises pickle's own error type (UnpicklingError, EOFError)
    with the file's path in the message."""
    f = io.BytesIO(data)
    try:
        if _unsafe_allowed():
            return pickle.load(f, encoding="latin1")
        return _RestrictedUnpickler(f, path).load()
    except UnsafePickleError:
        raise
    except (pickle.UnpicklingError, EOFError) as e:
        detail = str(e) or "the file ends early"
        raise type(e)(f"{path}: not a complete checkpoint file ({detail})") from None


def load_file(path: str):
    """Unpickle the file at ``path`` (see :func:`loads`)."""
    with open(path, "rb") as f:
        data = f.read()
    return loads(data, path)
