"""``save_dygraph`` / ``load_dygraph``: a state dict in a pickle file (``.pdparams``, ``.pdopt``),
written whole (``checkpoint_files``) and read without running code (``safe_pickle``)."""

from __future__ import annotations

import os
import pickle

import numpy as np

from fluidcompat import checkpoint_files, safe_pickle
from fluidcompat.dygraph.varbase import ParamBase, VarBase

__all__ = ["save_dygraph", "load_dygraph"]

_NAME_TABLE = "StructuredToParameterName@@"


def save_dygraph(state_dict, model_path: str) -> None:
    """Write ``state_dict`` to ``model_path + '.pdparams'`` (a layer's) or ``'.pdopt'`` (an optimizer's)."""
    if os.path.basename(model_path) == "":
        raise ValueError(
            "The input model_path MUST be format of dirname/filename [dirname\\filename in Windows system], "
            f"but received filename is empty string. (model_path={model_path!r})"
        )
    if len(state_dict) == 0:
        raise ValueError("state_dict is empty, no need to save")
    first = next(iter(state_dict.values()))
    suffix = ".pdparams" if isinstance(first, ParamBase) else ".pdopt"
    model_dict, names = {}, {}
    for k, v in state_dict.items():
        if isinstance(v, VarBase):
            model_dict[k] = np.asarray(v.numpy()).view(np.ndarray)  # a plain array, as fluid pickled
            names[k] = v.name
        else:
            model_dict[k] = v
    model_dict[_NAME_TABLE] = names
    data = pickle.dumps(model_dict, protocol=2)  # fails here, before the file is touched
    checkpoint_files.write_file(model_path + suffix, data)  # written whole, then renamed


def load_dygraph(model_path: str, keep_name_table: bool = False):
    """``(parameters, optimizer_state)`` saved by ``save_dygraph`` under ``model_path`` (the second None
    when there is no ``.pdopt``)."""
    prefix = model_path
    if prefix.endswith(".pdparams"):
        prefix = prefix[: -len(".pdparams")]
    elif prefix.endswith(".pdopt"):
        prefix = prefix[: -len(".pdopt")]
    params_path = prefix + ".pdparams"
    if not os.path.exists(params_path):
        raise RuntimeError(f"Parameter file [ {params_path} ] not exists")
    para_dict = _load(params_path)
    if not keep_name_table:
        para_dict.pop(_NAME_TABLE, None)
    opti_dict = None
    if os.path.exists(prefix + ".pdopt"):
        opti_dict = _load(prefix + ".pdopt")
    return para_dict, opti_dict


def _load(path: str) -> dict:
    """The dict pickled in ``path``: UnpicklingError / EOFError naming the file when it is truncated,
    UnsafePickleError when it names a class a checkpoint does not hold."""
    data = checkpoint_files.load_file(path, lambda blob: safe_pickle.loads(blob, path))
    if not isinstance(data, dict):
        raise pickle.UnpicklingError(f"{path} does not hold a state dict (it holds a {type(data).__name__})")
    return data
