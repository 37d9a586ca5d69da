"""fluid 1.8.5's public names per module, read from ``fluid18_api.json`` (beside this file); the
``paddle.*`` module names and the fluidcompat modules behind them; and the module ``__getattr__``
that names a fluid 1.8 API fluidcompat lacks (``UnsupportedAPIError``).

A floor-1 module (it imports nothing of fluidcompat at import time; ``unsupported`` imports the
module a name is asked of): every module of the package reads it, and ``fluidcompat.coverage``
(the report, ``python -m fluidcompat.coverage``) builds on it. Imported by the package, the report
module itself is not, so running it with ``-m`` gets no runpy warning about a module found in
``sys.modules`` before it ran.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
from typing import Dict, List, Optional

NAMES_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fluid18_api.json")

_names_cache: Dict[str, List[str]] = {}


def fluid_names() -> Dict[str, List[str]]:
    """fluid 1.8.5's public names per module."""
    if not _names_cache:
        with open(NAMES_FILE) as f:
            _names_cache.update(json.load(f))
    return _names_cache


# -- the paddle.* module names, and the names fluid 1.8 had that fluidcompat lacks ---------------
_ALIASES = {
    "paddle": "fluidcompat.compat.paddle",
    "paddle.fluid": "fluidcompat",
    "paddle.fluid.dataset": "fluidcompat.fluid_dataset",
    "paddle.dataset": "fluidcompat.dataset",
    "paddle.reader": "fluidcompat.reader",
    "paddle.compat": "fluidcompat.compat.py3compat",
    "paddle.version": "fluidcompat.compat.version",
    "paddle.check_import_scipy": "fluidcompat.compat.check_import_scipy",
    "paddle.utils": "fluidcompat.compat.utils",
    "paddle.utils.plot": "fluidcompat.compat.utils.plot",
    "paddle.device": "fluidcompat.compat.device",
    "paddle.nn": "fluidcompat.compat.nn",
    "paddle.nn.functional": "fluidcompat.compat.functional",
    "paddle.optimizer": "fluidcompat.compat.optimizer",
    "paddle.io": "fluidcompat.compat.io",
    "paddle.metric": "fluidcompat.compat.metric",
    "paddle.distributed": "fluidcompat.compat.distributed",
    "paddle.distributed.launch": "fluidcompat.launch",
    "paddle.distributed.launch_ps": "fluidcompat.launch_ps",
    "paddle.distributed.fs_wrapper": "fluidcompat.compat.fs_wrapper",
    "paddle.complex": "fluidcompat.compat.complex",
}
# packages whose submodules keep their names under fluidcompat (``paddle.complex.tensor.math``)
_PREFIXES = {
    "paddle.fluid.": "fluidcompat.",
    "paddle.dataset.": "fluidcompat.dataset.",
    "paddle.complex.": "fluidcompat.compat.complex.",
}


def real_name(fullname: str) -> Optional[str]:
    """The fluidcompat module behind a ``paddle...`` module name, or None."""
    if fullname in _ALIASES:
        return _ALIASES[fullname]
    for alias, real in _PREFIXES.items():
        if fullname.startswith(alias):
            return real + fullname[len(alias) :]
    return None


# For names fluidcompat lacks: the nearest thing it has.
ALTERNATIVES: Dict[str, str] = {
    "StaticRNN": "fluid.layers.While or while_loop over tensor arrays",
    "load_op_library": "fluid.layers.py_func (a Python op; fluid's C++ op libraries cannot load into torch)",
    "DGCMomentumOptimizer": "fluid.optimizer.MomentumOptimizer (DGC's update without its gradient compression, "
    "which saved bandwidth between GPUs)",
}


class UnsupportedAPIError(NotImplementedError, AttributeError):
    """A fluid 1.8 name fluidcompat does not have. An AttributeError too, so ``hasattr`` says False."""


def _submodule(fluid_module: str, name: str):
    """fluidcompat's module for ``<fluid_module>.<name>`` imported, or None when there is none."""
    real = real_name(fluid_module) if fluid_module != "paddle.fluid" else "fluidcompat"
    if real is None:
        return None
    try:
        found = importlib.util.find_spec(f"{real}.{name}")
    except ModuleNotFoundError:  # the module is not a package
        return None
    return importlib.import_module(f"{real}.{name}") if found is not None else None


def unsupported(fluid_module: str):
    """A module ``__getattr__``: fluid 1.8 names it lacks raise UnsupportedAPIError, others
    AttributeError."""
    layers = fluid_module == "paddle.fluid.layers"

    def __getattr__(name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        submodule = _submodule(fluid_module, name)
        if submodule is not None:  # fluid 1.8 imported its subpackages: fluid.layers.nn, fluid.incubate.fleet
            return submodule
        names = fluid_names()
        known = name in names.get(fluid_module, ()) or (
            fluid_module == "paddle.fluid" and name in names["paddle.fluid (dir)"]
        )
        if layers:
            known = known or any(name in v for k, v in names.items() if k.startswith("paddle.fluid.layers."))
        if known:
            hint = ALTERNATIVES.get(name)
            hint = f" The nearest supported: {hint}." if hint else ""
            raise UnsupportedAPIError(
                f"{fluid_module}.{name} (fluid 1.8) is not supported by fluidcompat yet.{hint} "
                "`python -m fluidcompat.coverage` lists what is."
            )
        raise AttributeError(f"module '{fluid_module}' (fluidcompat) has no attribute '{name}'")

    return __getattr__
