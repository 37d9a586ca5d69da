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

from fluidcompat.fluid18_names import _ALIASES, _PREFIXES, real_name  # noqa: F401  (compat.real_name)


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
