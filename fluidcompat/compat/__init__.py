"""The ``paddle`` import alias that ``fluidcompat run`` installs for a script.

No top-level ``paddle`` package is ever installed (it would shadow a real paddlepaddle): a
meta-path finder maps ``paddle`` to ``fluidcompat.compat.paddle`` and ``paddle.fluid[.X]`` to
``fluidcompat[.X]``, so ``import paddle.fluid as fluid`` gives the fluidcompat module itself.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
from typing import Optional

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


class _AliasFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, fullname, path, target=None):
        real = real_name(fullname)
        if real is None:
            return None
        try:
            if importlib.util.find_spec(real) is None:
                return None
        except ModuleNotFoundError:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec):
        return importlib.import_module(real_name(spec.name))

    def exec_module(self, module) -> None:
        pass


_finder = _AliasFinder()


def install() -> None:
    """Make ``import paddle`` and ``import paddle.fluid...`` resolve to fluidcompat."""
    if _finder not in sys.meta_path:
        sys.meta_path.insert(0, _finder)
