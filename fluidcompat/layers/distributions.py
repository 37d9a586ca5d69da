"""``fluid.layers.distributions``: Uniform, Normal, Categorical and MultivariateNormalDiag built from
ordinary layers, with fluid 1.8.5's formulas and output shapes.

Parameters are floats, lists or numpy arrays (made float32 variables, broadcast to one shape) or
Variables (then all of them: a batch whose size is known when the program runs). Sampling draws from
the executor's generator (``uniform_random`` / ``gaussian_random``), so the draws differ from fluid's.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from fluidcompat.framework import Variable
from fluidcompat.layer_helper import check_dtype, check_variable
from fluidcompat.layer_helper import fluid_layers as L  # the package (which imports this module), looked up when used

__all__ = ["Uniform", "Normal", "Categorical", "MultivariateNormalDiag"]

_NUMBERS = (float, np.ndarray, Variable, list)
_ARRAYS = (np.ndarray, Variable, list)


def _check_type(value, arg, types, api):
    if not isinstance(value, types):
        shown = repr(types) if isinstance(types, type) else "(" + ", ".join(repr(t) for t in types) + ")"
        raise TypeError(f"The type of '{arg}' in {api} must be {shown}, but received {type(value)!r}. ")


def _check_value(value, api):
    check_variable(value, "value", api)
    check_dtype(value.dtype, "value", ["float32", "float64"], api)


class Distribution:
    """The base: ``sample``, ``entropy``, ``log_prob``, ``kl_divergence``."""

    def sample(self):
        raise NotImplementedError

    def entropy(self):
        raise NotImplementedError

    def kl_divergence(self, other):
        raise NotImplementedError

    def log_prob(self, value):
        raise NotImplementedError

    @staticmethod
    def _all_variables(*args) -> bool:
        """Whether the parameters are Variables; a mix of Variables and numbers is an error."""
        kinds = {isinstance(a, Variable) for a in args}
        if len(kinds) > 1:
            raise ValueError("if one argument is Variable, all arguments should be Variable")
        return kinds == {True}

    @staticmethod
    def _to_variables(*args):
        """Float32 variables holding the parameters broadcast to one shape."""
        arrays = []
        for a in args:
            # (a float made a float64 array in fluid 1.8, a list numpy's own dtype: both were warned of)
            arr = np.zeros(1) + a if isinstance(a, float) else np.array(a)
            if arr.dtype != np.float32:
                warnings.warn(
                    "data type of argument only support float32, your argument will be convert to float32.",
                    stacklevel=4,
                )
                arr = arr.astype("float32")
            arrays.append(arr)
        return tuple(L.assign(np.ascontiguousarray(b)) for b in np.broadcast_arrays(*arrays))


class _LocScale(Distribution):
    """Uniform and Normal: two parameters, a batch shape, samples shaped ``shape + batch shape``."""

    api = ""
    names = ("", "")

    def __init__(self, a, b):
        _check_type(a, self.names[0], _NUMBERS, self.api)
        _check_type(b, self.names[1], _NUMBERS, self.api)
        self.all_arg_is_float = False
        self.batch_size_unknown = self._all_variables(a, b)
        if not self.batch_size_unknown:
            self.all_arg_is_float = isinstance(a, float) and isinstance(b, float)
            a, b = self._to_variables(a, b)
        setattr(self, self.names[0], a)
        setattr(self, self.names[1], b)

    def _params(self):
        return getattr(self, self.names[0]), getattr(self, self.names[1])

    def _draw(self, shape, seed, like):
        """Standard draws shaped ``shape``, or (``like``: a variable) shaped as ``like`` at run time."""
        raise NotImplementedError

    def _scale_shift(self, unit, base, axis):
        """``unit`` draws moved to the parameters' place and size (``base``: zeros shaped as the draws;
        ``axis``: where the parameters' dimensions start in them)."""
        raise NotImplementedError

    def sample(self, shape, seed=0):
        """Draws shaped ``shape + batch shape`` (just ``shape`` when both parameters were floats)."""
        _check_type(shape, "shape", list, "sample")
        _check_type(seed, "seed", int, "sample")
        a, b = self._params()
        batch_shape = list((a + b).shape)
        out_shape = shape + batch_shape
        if self.batch_size_unknown:
            # drawn as [shape, batch, ...] so that draw i of batch row b follows row b's parameters
            zero = L.fill_constant_batch_size_like(a + b, out_shape, a.dtype, 0.0, output_dim_idx=len(shape))
            return self._scale_shift(self._draw(None, seed, zero), zero, len(shape))
        zero = L.zeros(out_shape, dtype=a.dtype)
        out = self._scale_shift(self._draw(out_shape, seed, None), zero, -1)
        return L.reshape(out, shape) if self.all_arg_is_float else out


class Uniform(_LocScale):
    """Uniform on [low, high): ``entropy = log(high - low)``; ``log_prob`` is -inf outside."""

    api = "Uniform"
    names = ("low", "high")

    def __init__(self, low, high):
        super().__init__(low, high)

    def _draw(self, shape, seed, like):
        if like is None:
            return L.uniform_random(shape, min=0.0, max=1.0, seed=seed)
        # the batch dimension of ``like`` is its first unknown one
        at = list(like.shape).index(-1)
        return L.uniform_random_batch_size_like(
            like, list(like.shape), input_dim_idx=at, output_dim_idx=at, min=0.0, max=1.0, seed=seed
        )

    def _scale_shift(self, unit, base, axis):
        width = L.elementwise_sub(L.elementwise_add(base, self.high, axis=axis), self.low, axis=axis)
        return L.elementwise_add(L.elementwise_mul(unit, width), self.low, axis=axis)

    def log_prob(self, value):
        _check_value(value, "log_prob")
        inside = L.cast(L.less_than(self.low, value), value.dtype) * L.cast(L.less_than(value, self.high), value.dtype)
        return L.log(inside) - L.log(self.high - self.low)

    def entropy(self):
        return L.log(self.high - self.low)


class Normal(_LocScale):
    """Normal(loc, scale): entropy, log_prob and the KL divergence to another Normal."""

    api = "Normal"
    names = ("loc", "scale")

    def __init__(self, loc, scale):
        super().__init__(loc, scale)

    def _draw(self, shape, seed, like):
        return L.gaussian_random(shape if like is None else L.shape(like), mean=0.0, std=1.0, seed=seed)

    def _scale_shift(self, unit, base, axis):
        spread = L.elementwise_add(base, self.scale, axis=axis)
        return L.elementwise_add(L.elementwise_mul(unit, spread), self.loc, axis=axis)

    def entropy(self):
        s = self.loc + self.scale
        zero = L.fill_constant_batch_size_like(s, list(s.shape), self.loc.dtype, 0.0)
        return 0.5 + 0.5 * math.log(2 * math.pi) + L.log(self.scale + zero)

    def log_prob(self, value):
        _check_value(value, "log_prob")
        d = value - self.loc
        return (
            -1.0 * (d * d) / (2.0 * (self.scale * self.scale)) - L.log(self.scale) - math.log(math.sqrt(2.0 * math.pi))
        )

    def kl_divergence(self, other):
        _check_type(other, "other", Normal, "kl_divergence")
        ratio = self.scale / other.scale
        ratio = ratio * ratio
        t = (self.loc - other.loc) / other.scale
        return 0.5 * (ratio + t * t - 1.0 - L.log(ratio))


class Categorical(Distribution):
    """A categorical distribution over the last axis of ``logits``: entropy and KL divergence."""

    def __init__(self, logits):
        _check_type(logits, "logits", _ARRAYS, "Categorical")
        self.logits = logits if self._all_variables(logits) else self._to_variables(logits)[0]

    @staticmethod
    def _normalized(logits):
        """(logits - max, their exp's sum over the last axis)."""
        shifted = logits - L.reduce_max(logits, dim=-1, keep_dim=True)
        return shifted, L.reduce_sum(L.exp(shifted), dim=-1, keep_dim=True)

    def entropy(self):
        logits, z = self._normalized(self.logits)
        prob = L.exp(logits) / z
        return -1.0 * L.reduce_sum(prob * (logits - L.log(z)), dim=-1, keep_dim=True)

    def kl_divergence(self, other):
        _check_type(other, "other", Categorical, "kl_divergence")
        logits, z = self._normalized(self.logits)
        other_logits, other_z = self._normalized(other.logits)
        prob = L.exp(logits) / z
        return L.reduce_sum(prob * (logits - L.log(z) - other_logits + L.log(other_z)), dim=-1, keep_dim=True)


class MultivariateNormalDiag(Distribution):
    """A multivariate normal with a diagonal covariance matrix ``scale`` ([k, k]): entropy and the KL
    divergence to another (shapes as fluid 1.8.5 gave them)."""

    def __init__(self, loc, scale):
        _check_type(loc, "loc", _ARRAYS, "MultivariateNormalDiag")
        _check_type(scale, "scale", _ARRAYS, "MultivariateNormalDiag")
        if self._all_variables(loc, scale):
            self.loc, self.scale = loc, scale
        else:
            self.loc, self.scale = self._to_variables(loc, scale)

    def _ones(self, value):
        """(all ones shaped as ``value``, the identity matrix of its size)."""
        shape = list(value.shape)
        return L.ones(shape, self.loc.dtype), L.diag(L.ones([shape[0]], self.loc.dtype))

    def _det(self, value):
        ones, eye = self._ones(value)
        return L.reduce_prod(value + ones - eye)  # the diagonal's product

    def _inv(self, value):
        ones, eye = self._ones(value)
        return L.elementwise_pow(value, ones - 2 * eye)  # 1 / the diagonal, 1 elsewhere

    def entropy(self):
        return 0.5 * (self.scale.shape[0] * (1.0 + math.log(2 * math.pi)) + L.log(self._det(self.scale)))

    def kl_divergence(self, other):
        _check_type(other, "other", MultivariateNormalDiag, "kl_divergence")
        trace = L.reduce_sum(self._inv(other.scale) * self.scale)
        diff = other.loc - self.loc
        quad = L.matmul(L.matmul(diff, self._inv(other.scale)), diff)
        log_ratio = L.log(self._det(other.scale)) - L.log(self._det(self.scale))
        return 0.5 * (trace + quad - list(self.scale.shape)[0] + log_ratio)
