"""``save_dygraph`` / ``load_dygraph``: a state dict in a pickle file (``.pdparams``, ``.pdopt``)."""

from __future__ import annotations

import os
import pickle

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
            model_dict[k] = v.numpy()
            names[k] = v.name
        else:
            model_dict[k] = v
    model_dict[_NAME_TABLE] = names
    file_name = model_path + suffix
    directory = os.path.dirname(file_name)
    if directory and not os.path.exists(directory):
        os.makedirs(directory)
    tmp = file_name + ".tmp"
    try:  # written whole, then renamed: a failure leaves the old file
        with open(tmp, "wb") as f:
            pickle.dump(model_dict, f, protocol=2)
        os.replace(tmp, file_name)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


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
    with open(params_path, "rb") as f:
        para_dict = pickle.load(f, encoding="latin1")
    if not keep_name_table:
        para_dict.pop(_NAME_TABLE, None)
    opti_dict = None
    if os.path.exists(prefix + ".pdopt"):
        with open(prefix + ".pdopt", "rb") as f:
            opti_dict = pickle.load(f, encoding="latin1")
    return para_dict, opti_dict
