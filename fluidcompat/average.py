"""``fluid.average``: the weighted running mean fluid 1.x training loops kept of fetched losses
and accuracies (deprecated there in favour of ``fluid.metrics``, and still in the tutorials)."""

from __future__ import annotations

import warnings
from numbers import Number

import numpy as np

__all__ = ["WeightedAverage"]


def _plain_number(value) -> bool:
    return (
        isinstance(value, Number)
        and not isinstance(value, bool)
        or (isinstance(value, np.ndarray) and value.shape == (1,))
    )


class WeightedAverage:
    """``add(value, weight)`` values (numbers or arrays) with numeric weights; ``eval()`` is
    sum(value * weight) / sum(weight), elementwise for arrays."""

    def __init__(self) -> None:
        warnings.warn(
            f"The {type(self).__name__} is deprecated, please use fluid.metrics.Accuracy instead.",
            Warning,
            stacklevel=2,
        )
        self.reset()

    def reset(self) -> None:
        self.numerator = None
        self.denominator = None

    def add(self, value, weight) -> None:
        if not (_plain_number(value) or isinstance(value, np.ndarray)):
            raise ValueError("The 'value' must be a number(int, float) or a numpy ndarray.")
        if not _plain_number(weight):
            raise ValueError("The 'weight' must be a number(int, float).")
        if self.numerator is None:
            self.numerator, self.denominator = value * weight, weight
        else:
            self.numerator = self.numerator + value * weight
            self.denominator = self.denominator + weight

    def eval(self):
        if self.numerator is None:
            raise ValueError("There is no data to be averaged in WeightedAverage.")
        return self.numerator / self.denominator
