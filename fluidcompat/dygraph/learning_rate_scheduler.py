"""Dygraph learning-rate schedules: an optimizer given one asks it for the rate at each ``minimize``.

Each ``LearningRateDecay`` computes its rate in Python for the current ``step_num`` and hands the
optimizer a one-element VarBase; ``step_num`` then advances by ``step``. ``StepDecay``,
``MultiStepDecay`` and ``LambdaDecay`` advance per epoch instead (``epoch()``), and
``ReduceLROnPlateau`` when told a loss (``step(loss)``).
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from fluidcompat import unique_name

__all__ = [
    "NoamDecay",
    "PiecewiseDecay",
    "NaturalExpDecay",
    "ExponentialDecay",
    "InverseTimeDecay",
    "PolynomialDecay",
    "CosineDecay",
    "LinearLrWarmup",
    "ReduceLROnPlateau",
    "StepDecay",
    "MultiStepDecay",
    "LambdaDecay",
]


class LearningRateDecay:
    """Base class: ``step()`` gives the rate at ``step_num``; calling the schedule returns it as a
    VarBase and advances ``step_num`` by ``step``."""

    def __init__(self, begin=0, step=1, dtype="float32") -> None:
        self.step_num = begin
        self.step_size = step
        self.dtype = dtype

    def __call__(self):
        from fluidcompat.dygraph import jit

        if jit.in_declarative_build():  # fluid 1.8's translation called the static schedule instead
            from fluidcompat.dygraph.dygraph_to_static.runtime import static_learning_rate

            lr = static_learning_rate(self)
            if lr is not None:
                return lr
        lr = self.step()
        if not hasattr(lr, "numpy"):
            lr = self.create_lr_var(lr)
        self.step_num += self.step_size
        return lr

    def create_lr_var(self, lr):
        from fluidcompat.layers.tensor import create_global_var

        return create_global_var(
            name=unique_name.generate("learning_rate"), shape=[1], value=float(lr), dtype=self.dtype, persistable=False
        )

    def _state_keys(self):
        return ["step_num"]

    def state_dict(self):
        state = {}
        for key in self._state_keys():
            if key not in self.__dict__:
                continue
            value = self.__dict__[key]
            if hasattr(value, "numpy"):
                value = value.numpy()[0]
            state[key] = value
        return state

    def set_dict(self, state_dict) -> None:
        keys = self._state_keys()
        for key in keys:
            if key not in state_dict:
                raise RuntimeError(
                    "Please check whether state_dict is correct for optimizer. Can't find [ {} ] in state_dict".format(
                        key
                    )
                )
        for key in keys:
            self.__dict__[key] = state_dict[key]
        if len(state_dict) > len(keys):
            warnings.warn(
                "There are some unused values in state_dict. Maybe the optimizer have different "
                "'LearningRateDecay' when invoking state_dict and set_dict",
                stacklevel=2,
            )

    def step(self):
        raise NotImplementedError(f"{type(self).__name__} must define step()")

    def _current(self) -> float:
        """The rate the next call will give, without advancing."""
        lr = self.step()
        return float(lr.numpy()[0]) if hasattr(lr, "numpy") else float(lr)


class PiecewiseDecay(LearningRateDecay):
    """``values[i]`` while ``step_num < boundaries[i]``, then the last value."""

    def __init__(self, boundaries, values, begin, step=1, dtype="float32"):
        if len(values) != len(boundaries) + 1:
            raise ValueError(
                f"PiecewiseDecay needs one more value than boundaries: received {len(boundaries)} boundaries "
                f"and {len(values)} values"
            )
        super().__init__(begin, step, dtype)
        self.boundaries = list(boundaries)
        self.values = list(values)

    def step(self):
        for boundary, value in zip(self.boundaries, self.values):
            if self.step_num < boundary:
                return float(value)
        return float(self.values[-1])


class _RateDecay(LearningRateDecay):
    def __init__(self, learning_rate, decay_steps, decay_rate, staircase=False, begin=0, step=1, dtype="float32"):
        super().__init__(begin, step, dtype)
        self.learning_rate = learning_rate
        self.decay_steps = decay_steps
        self.decay_rate = decay_rate
        self.staircase = staircase

    def _div(self) -> float:
        div = self.step_num / self.decay_steps
        return math.floor(div) if self.staircase else div


class NaturalExpDecay(_RateDecay):
    """``learning_rate * exp(-decay_rate * step_num / decay_steps)`` (floored with staircase)."""

    def step(self):
        return self.learning_rate * math.exp(-1 * self.decay_rate * self._div())


class ExponentialDecay(_RateDecay):
    """``learning_rate * decay_rate ** (step_num / decay_steps)`` (floored with staircase)."""

    def step(self):
        return self.learning_rate * self.decay_rate ** self._div()


class InverseTimeDecay(_RateDecay):
    """``learning_rate / (1 + decay_rate * step_num / decay_steps)`` (floored with staircase)."""

    def step(self):
        return self.learning_rate / (1 + self.decay_rate * self._div())


class PolynomialDecay(LearningRateDecay):
    """From ``learning_rate`` to ``end_learning_rate`` over ``decay_steps`` as ``(1 - t) ** power``;
    with ``cycle`` the period grows to the next multiple of ``decay_steps``."""

    def __init__(
        self,
        learning_rate,
        decay_steps,
        end_learning_rate=0.0001,
        power=1.0,
        cycle=False,
        begin=0,
        step=1,
        dtype="float32",
    ):
        super().__init__(begin, step, dtype)
        self.learning_rate = learning_rate
        self.decay_steps = decay_steps
        self.end_learning_rate = end_learning_rate
        self.power = power
        self.cycle = cycle

    def step(self):
        n = self.step_num
        steps = self.decay_steps
        if self.cycle:
            div = math.ceil(n / float(self.decay_steps)) if n else 1.0
            steps = self.decay_steps * div
        else:
            n = min(n, self.decay_steps)
        return (self.learning_rate - self.end_learning_rate) * (1 - n / steps) ** self.power + self.end_learning_rate


class CosineDecay(LearningRateDecay):
    """``learning_rate * 0.5 * (cos(epoch * pi / epochs) + 1)``, epoch = ``floor(step_num / step_each_epoch)``."""

    def __init__(self, learning_rate, step_each_epoch, epochs, begin=0, step=1, dtype="float32"):
        super().__init__(begin, step, dtype)
        self.learning_rate = learning_rate
        self.step_each_epoch = step_each_epoch
        self.epochs = epochs

    def step(self):
        epoch = math.floor(self.step_num / self.step_each_epoch)
        return self.learning_rate * 0.5 * (math.cos(epoch * math.pi / self.epochs) + 1)


class NoamDecay(LearningRateDecay):
    """``learning_rate * d_model ** -0.5 * min(step_num ** -0.5, warmup_steps ** -1.5 * step_num)``."""

    def __init__(self, d_model, warmup_steps, begin=1, step=1, dtype="float32", learning_rate=1.0):
        super().__init__(begin, step, dtype)
        self.learning_rate = learning_rate
        self.d_model = d_model
        self.warmup_steps = warmup_steps

    def step(self):
        a = self.step_num**-0.5 if self.step_num > 0 else math.inf
        b = (self.warmup_steps**-1.5) * self.step_num
        return self.learning_rate * (self.d_model**-0.5) * min(a, b)


class LinearLrWarmup(LearningRateDecay):
    """From ``start_lr`` to ``end_lr`` linearly over ``warmup_steps``, then ``learning_rate`` (a number or
    another schedule, which runs on from there).

    Compat: the warm-up starts at ``start_lr`` as documented; fluid 1.8 started it at 0."""

    def __init__(self, learning_rate, warmup_steps, start_lr, end_lr, begin=1, step=1, dtype="float32"):
        if not isinstance(learning_rate, (float, int, LearningRateDecay)) or isinstance(learning_rate, bool):
            raise TypeError(
                "the type of learning_rate should be [int, float or LearningRateDecay], the current type is "
                f"{learning_rate}"
            )
        if not end_lr > start_lr:
            raise ValueError(f"end_lr {end_lr} must be greater than start_lr {start_lr}")
        super().__init__(begin, step, dtype)
        self.learning_rate = learning_rate
        self.warmup_steps = warmup_steps
        self.start_lr = float(start_lr)
        self.lr_ratio_before_warmup = (float(end_lr) - float(start_lr)) / float(warmup_steps)

    def step(self):
        # an inner schedule advances with this one from the start, as in fluid 1.8
        base = self.learning_rate() if isinstance(self.learning_rate, LearningRateDecay) else self.learning_rate
        return self._rate(base)

    def _rate(self, base):
        if self.step_num < self.warmup_steps:
            return self.start_lr + self.lr_ratio_before_warmup * self.step_num
        return base if hasattr(base, "numpy") else float(base)

    def _current(self) -> float:
        inner = self.learning_rate
        return _value(self._rate(inner._current() if isinstance(inner, LearningRateDecay) else inner))


def _value(v) -> float:
    return float(np.asarray(v.numpy()).reshape(-1)[0]) if hasattr(v, "numpy") else float(v)


class ReduceLROnPlateau(LearningRateDecay):
    """Multiply the rate by ``decay_rate`` when the loss given to ``step(loss)`` has not improved for
    ``patience`` epochs (then wait ``cooldown`` epochs), never below ``min_lr``."""

    def __init__(
        self,
        learning_rate,
        mode="min",
        decay_rate=0.1,
        patience=10,
        verbose=False,
        threshold=1e-4,
        threshold_mode="rel",
        cooldown=0,
        min_lr=0,
        eps=1e-8,
        dtype="float32",
    ):
        super().__init__(dtype=dtype)
        mode = mode.lower()
        if mode not in ("min", "max"):
            raise ValueError("mode " + mode + " is unknown!")
        if decay_rate >= 1.0:
            raise ValueError("new_lr = origin_lr * decay_rate and decay_rate should be < 1.0.")
        threshold_mode = threshold_mode.lower()
        if threshold_mode not in ("rel", "abs"):
            raise ValueError("threshold mode " + threshold_mode + " is unknown!")
        if not isinstance(learning_rate, (float, int)) and not hasattr(learning_rate, "numpy"):
            raise TypeError(
                "The type of 'learning_rate' in 'ReduceLROnPlateau' must be 'float, int, Variable', "
                f"but received {type(learning_rate)}."
            )
        self.mode = mode
        self.decay_rate = float(decay_rate)
        self.threshold_mode = threshold_mode
        self.learning_rate = _value(learning_rate)
        self.verbose = verbose
        self.patience = patience
        self.threshold = threshold
        self.cooldown = cooldown
        self.min_lr = float(min_lr)
        self.eps = eps
        self.cooldown_counter = 0
        self.best_loss = None
        self.num_bad_epochs = 0
        self.epoch_num = 0

    def _state_keys(self):
        return ["cooldown_counter", "best_loss", "num_bad_epochs", "epoch_num", "learning_rate"]

    def __call__(self):
        return self.create_lr_var(self.learning_rate)

    def _current(self) -> float:
        return float(self.learning_rate)

    def step(self, loss):
        shape = list(getattr(loss, "shape", []))
        if not hasattr(loss, "numpy") or shape != [1]:
            raise TypeError(
                f"ReduceLROnPlateau.step takes the loss as a Variable of shape [1] (fluid.layers.mean gives "
                f"one); received {type(loss).__name__} of shape {shape}"
            )
        current = _value(loss)
        self.epoch_num += 1
        if self.cooldown_counter > 0:
            self.cooldown_counter -= 1
            return
        if self.best_loss is None or self._is_better(current, self.best_loss):
            self.best_loss = current
            self.num_bad_epochs = 0
        else:
            self.num_bad_epochs += 1
        if self.num_bad_epochs > self.patience:
            self.cooldown_counter = self.cooldown
            self.num_bad_epochs = 0
            new_lr = max(self.learning_rate * self.decay_rate, self.min_lr)
            if self.learning_rate - new_lr > self.eps:
                if self.verbose:
                    print(f"Epoch {self.epoch_num}: reducing learning rate from {self.learning_rate} to {new_lr}.")
                self.learning_rate = new_lr

    def _is_better(self, current, best) -> bool:
        if self.mode == "min" and self.threshold_mode == "rel":
            return current < best - best * self.threshold
        if self.mode == "min":
            return current < best - self.threshold
        if self.threshold_mode == "rel":
            return current > best + best * self.threshold
        return current > best + self.threshold


class _LearningRateEpochDecay(LearningRateDecay):
    """Schedules that advance per epoch (``epoch()``), not per ``minimize``."""

    def __init__(self, learning_rate, dtype=None):
        if not isinstance(learning_rate, (float, int)) or isinstance(learning_rate, bool):
            raise TypeError(f"The type of 'learning_rate' must be 'float, int', but received {type(learning_rate)}.")
        if learning_rate < 0:
            raise ValueError(f"Invalid learning rate: {learning_rate}")
        self.base_lr = float(learning_rate)
        self.epoch_num = -1
        self.dtype = dtype or "float32"
        self.learning_rate = self.base_lr
        self.epoch()

    def _state_keys(self):
        return ["epoch_num", "learning_rate"]

    def __call__(self):
        return self.create_lr_var(self.learning_rate)

    def _current(self) -> float:
        return float(self.learning_rate)

    def epoch(self, epoch=None) -> None:
        """Advance to the next epoch (or to ``epoch``) and compute its rate."""
        self.epoch_num = self.epoch_num + 1 if epoch is None else epoch
        self.learning_rate = float(self.get_lr())

    def get_lr(self):
        raise NotImplementedError(f"{type(self).__name__} must define get_lr()")


class StepDecay(_LearningRateEpochDecay):
    """``learning_rate * decay_rate ** (epoch // step_size)``."""

    def __init__(self, learning_rate, step_size, decay_rate=0.1):
        if not isinstance(step_size, int):
            raise TypeError(f"The type of 'step_size' must be 'int', but received {type(step_size)}.")
        if decay_rate >= 1.0:
            raise ValueError("decay_rate should be < 1.0.")
        self.step_size = step_size
        self.decay_rate = decay_rate
        super().__init__(learning_rate)

    def get_lr(self):
        return self.base_lr * self.decay_rate ** (self.epoch_num // self.step_size)


class MultiStepDecay(_LearningRateEpochDecay):
    """``learning_rate * decay_rate ** (number of milestones passed)``."""

    def __init__(self, learning_rate, milestones, decay_rate=0.1):
        if not isinstance(milestones, (tuple, list)):
            raise TypeError(
                f"The type of 'milestones' in 'MultiStepDecay' must be 'tuple, list', but received {type(milestones)}."
            )
        if not all(milestones[i] < milestones[i + 1] for i in range(len(milestones) - 1)):
            raise ValueError("The elements of milestones must be incremented")
        if decay_rate >= 1.0:
            raise ValueError("decay_rate should be < 1.0.")
        self.milestones = list(milestones)
        self.decay_rate = decay_rate
        super().__init__(learning_rate)

    def get_lr(self):
        passed = sum(1 for m in self.milestones if self.epoch_num >= m)
        return self.base_lr * self.decay_rate**passed


class LambdaDecay(_LearningRateEpochDecay):
    """``learning_rate * lr_lambda(epoch)``."""

    def __init__(self, learning_rate, lr_lambda):
        if not callable(lr_lambda):
            raise TypeError(
                f"The type of 'lr_lambda' in 'LambdaDecay' must be 'function', but received {type(lr_lambda)}."
            )
        self.lr_lambda = lr_lambda
        super().__init__(learning_rate)

    def get_lr(self):
        return self.base_lr * self.lr_lambda(self.epoch_num)
