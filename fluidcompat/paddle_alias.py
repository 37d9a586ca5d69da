"""``import fluidcompat.paddle_alias``: the ``paddle`` alias outside ``fluidcompat run``.

``fluidcompat run`` makes ``import paddle`` / ``import paddle.fluid as fluid`` resolve to fluidcompat
for the script it runs. In a REPL, a Jupyter notebook, a web server or any program you start with
plain ``python``, import this module first, once::

    import fluidcompat.paddle_alias  # noqa: F401  (paddle -> fluidcompat from here on)
    import paddle.fluid as fluid

It installs the same import finder ``fluidcompat run`` does (``fluidcompat.compat.install``) and
nothing else: numpy's, Pillow's and Python's removed names that ``fluidcompat run`` puts back for
fluid-era scripts stay removed (``fluidcompat.compat.legacy_numpy.restore()`` and its siblings put
them back in the current process where a notebook needs them). A ``paddle`` module imported before
this one (a real paddlepaddle) is not mixed with fluidcompat: importing this module then raises
ImportError saying so.
"""

import sys

from fluidcompat.compat import install, real_name

_loaded = sys.modules.get("paddle")
if _loaded is not None and getattr(_loaded, "__name__", None) != real_name("paddle"):
    raise ImportError(
        "fluidcompat.paddle_alias: a real 'paddle' package is already imported in this process "
        f"({getattr(_loaded, '__file__', None) or _loaded!r}); import fluidcompat.paddle_alias before it, "
        "or run the script in a process of its own"
    )
install()
