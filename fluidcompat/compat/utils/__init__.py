"""``paddle.utils``: the ``Ploter`` of the fluid book's training scripts."""

from fluidcompat.compat.utils.plot import Ploter

__all__ = ["Ploter"]
