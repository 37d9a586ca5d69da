"""``paddle.save`` / ``paddle.load``: state dicts (and nested lists/dicts of tensors) as a pickle of
numpy arrays, the layout Paddle 2.0 wrote for ``.pdparams`` / ``.pdopt``; written whole
(``checkpoint_files``), read without running code (``safe_pickle``)."""

from __future__ import annotations

import os
import pickle

import numpy as np

from fluidcompat import checkpoint_files, safe_pickle
from fluidcompat.compat.device import Tensor, to_tensor

__all__ = ["load", "save"]

_NAME_TABLE = "StructuredToParameterName@@"


def _to_numpy(obj):
    if isinstance(obj, Tensor):
        return np.asarray(obj.numpy()).view(np.ndarray)  # a plain array, which any numpy / Paddle unpickles
    if isinstance(obj, dict):
        return type(obj)((k, _to_numpy(v)) for k, v in obj.items())
    if isinstance(obj, (list, tuple)):
        return type(obj)(_to_numpy(v) for v in obj)
    return obj


def save(obj, path, protocol=4, **configs) -> None:
    """Write ``obj`` to ``path`` (its folder is created). A layer's state dict also records each
    structured name's parameter name, as Paddle does."""
    if not isinstance(path, str) or not path or path.endswith(("/", os.sep)):
        raise ValueError(f"paddle.save: path must be a file name, such as 'model.pdparams'. Received: {path!r}")
    if not isinstance(protocol, int) or not 2 <= protocol <= 4:
        raise ValueError(f"paddle.save: protocol must be 2, 3 or 4. Received: {protocol!r}")
    data = _to_numpy(obj)
    if isinstance(obj, dict) and obj and all(isinstance(v, Tensor) for v in obj.values()):
        names = {k: v.name for k, v in obj.items() if hasattr(v, "name")}
        if names:
            data[_NAME_TABLE] = names
    blob = pickle.dumps(data, protocol=protocol)  # fails here, before the file is touched
    checkpoint_files.write_file(path, blob)  # the folder is created; written whole, then renamed


def _to_tensors(obj, return_numpy):
    if isinstance(obj, tuple) and len(obj) == 2 and isinstance(obj[0], str) and isinstance(obj[1], np.ndarray):
        obj = obj[1]  # Paddle >= 2.1 pickles a tensor as (name, array)
    if isinstance(obj, np.ndarray):
        return obj if return_numpy else to_tensor(obj)
    if isinstance(obj, dict):
        return type(obj)((k, _to_tensors(v, return_numpy)) for k, v in obj.items() if k != _NAME_TABLE)
    if isinstance(obj, list):
        return [_to_tensors(v, return_numpy) for v in obj]
    return obj


def load(path, **configs):
    """What ``save`` wrote to ``path``, arrays as Tensors (``return_numpy=True``: numpy arrays)."""
    if not os.path.isfile(path):
        raise ValueError(f"paddle.load: the file '{path}' does not exist")
    try:
        data = checkpoint_files.load_file(path, lambda blob: safe_pickle.loads(blob, path))
    except (safe_pickle.UnsafePickleError, checkpoint_files.CheckpointError):
        raise
    except (pickle.UnpicklingError, EOFError) as e:
        raise ValueError(f"paddle.load: '{path}' is not a file paddle.save wrote ({e})") from None
    return _to_tensors(data, bool(configs.get("return_numpy", False)))
