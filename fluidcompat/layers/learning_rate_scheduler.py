"""``fluid.layers`` learning-rate schedules: ops on a step counter that advances once per run."""

from __future__ import annotations

import math

from fluidcompat.dygraph import learning_rate_scheduler as dygraph_lr
from fluidcompat.framework import default_main_program, in_dygraph_mode
from fluidcompat.layers import nn, ops, tensor

__all__ = [
    "exponential_decay",
    "natural_exp_decay",
    "inverse_time_decay",
    "polynomial_decay",
    "piecewise_decay",
    "noam_decay",
    "cosine_decay",
    "linear_lr_warmup",
]


def _decay_step_counter(begin=0):
    counter = nn.autoincreased_step_counter(counter_name="@LR_DECAY_COUNTER@", begin=begin, step=1)
    return tensor.cast(counter, "float32")


def noam_decay(d_model, warmup_steps, learning_rate=1.0):
    """``lr * d_model**-0.5 * min(step**-0.5, warmup_steps**-1.5 * step)``."""
    if in_dygraph_mode():  # a schedule the optimizer asks at each minimize
        return dygraph_lr.NoamDecay(d_model, warmup_steps, learning_rate=learning_rate)
    with default_main_program()._lr_schedule_guard():
        step = _decay_step_counter(1)
        a = step**-0.5
        b = (warmup_steps**-1.5) * step
        return learning_rate * (d_model**-0.5) * nn.elementwise_min(a, b)


def _div(step, decay_steps, staircase):
    div = step / decay_steps
    return ops.floor(div) if staircase else div


def exponential_decay(learning_rate, decay_steps, decay_rate, staircase=False):
    """``lr * decay_rate ** (step / decay_steps)`` (floored when ``staircase``)."""
    if in_dygraph_mode():  # a schedule the optimizer asks at each minimize
        return dygraph_lr.ExponentialDecay(learning_rate, decay_steps, decay_rate, staircase)
    with default_main_program()._lr_schedule_guard():
        div = _div(_decay_step_counter(), decay_steps, staircase)
        return learning_rate * (decay_rate**div)


def natural_exp_decay(learning_rate, decay_steps, decay_rate, staircase=False):
    """``lr * exp(-decay_rate * step / decay_steps)``."""
    if in_dygraph_mode():  # a schedule the optimizer asks at each minimize
        return dygraph_lr.NaturalExpDecay(learning_rate, decay_steps, decay_rate, staircase)
    with default_main_program()._lr_schedule_guard():
        div = _div(_decay_step_counter(), decay_steps, staircase)
        return learning_rate * ops.exp(-1 * decay_rate * div)


def inverse_time_decay(learning_rate, decay_steps, decay_rate, staircase=False):
    """``lr / (1 + decay_rate * step / decay_steps)``."""
    if in_dygraph_mode():  # a schedule the optimizer asks at each minimize
        return dygraph_lr.InverseTimeDecay(learning_rate, decay_steps, decay_rate, staircase)
    with default_main_program()._lr_schedule_guard():
        div = _div(_decay_step_counter(), decay_steps, staircase)
        return learning_rate / (1 + decay_rate * div)


def polynomial_decay(learning_rate, decay_steps, end_learning_rate=0.0001, power=1.0, cycle=False):
    """``(lr - end) * (1 - step / decay_steps) ** power + end``.

    Compat: with ``cycle`` the first period is chosen by ``max(ceil(step / decay_steps), 1)``
    rather than fluid's Switch block; the values are the same.
    """
    if in_dygraph_mode():  # a schedule the optimizer asks at each minimize
        return dygraph_lr.PolynomialDecay(learning_rate, decay_steps, end_learning_rate, power, cycle)
    with default_main_program()._lr_schedule_guard():
        step = _decay_step_counter()
        if cycle:
            div = ops.ceil(step / decay_steps)
            one = tensor.fill_constant(shape=[1], dtype="float32", value=1.0)
            decay_steps = decay_steps * nn.elementwise_max(div, one)
        else:
            steps = tensor.fill_constant(shape=[1], dtype="float32", value=float(decay_steps))
            step = nn.elementwise_min(x=step, y=steps)
        return (learning_rate - end_learning_rate) * ((1 - step / decay_steps) ** power) + end_learning_rate


def piecewise_decay(boundaries, values):
    """``values[i]`` while ``boundaries[i-1] <= step < boundaries[i]``.

    Compat: built from comparisons and arithmetic rather than fluid's Switch block; the values
    are the same, and they land in fluid's persistable ``learning_rate`` (so checkpoints match).
    """
    if in_dygraph_mode():  # a schedule the optimizer asks at each minimize
        return dygraph_lr.PiecewiseDecay(boundaries, values, 0)
    if len(values) - len(boundaries) != 1:
        raise ValueError("len(values) - len(boundaries) should be 1")
    with default_main_program()._lr_schedule_guard():
        step = _decay_step_counter()
        lr = tensor.fill_constant(shape=[1], dtype="float32", value=float(values[0]))
        for bound, before, after in zip(boundaries, values, values[1:]):
            bound_var = tensor.fill_constant(shape=[1], dtype="float32", value=float(bound))
            passed = tensor.cast(step >= bound_var, "float32")
            lr = lr + passed * float(after - before)
        return _persisted(lr, "learning_rate")


def _persisted(lr, name: str):
    """``lr`` assigned to the persistable global variable ``name`` that fluid 1.8.5's Switch-built
    schedules wrote (saved with the persistables, so fluid's checkpoints and ours hold the same files)."""
    out = tensor.create_global_var(shape=[1], value=0.0, dtype=lr.dtype, persistable=True, name=name)
    tensor.assign(lr, out)
    return out


def cosine_decay(learning_rate, step_each_epoch, epochs):
    """``lr * 0.5 * (cos(floor(step / step_each_epoch) * pi / epochs) + 1)``."""
    if in_dygraph_mode():  # a schedule the optimizer asks at each minimize
        return dygraph_lr.CosineDecay(learning_rate, step_each_epoch, epochs)
    with default_main_program()._lr_schedule_guard():
        epoch = ops.floor(_decay_step_counter() / step_each_epoch)
        return learning_rate * 0.5 * (ops.cos(epoch * math.pi / epochs) + 1)


def linear_lr_warmup(learning_rate, warmup_steps, start_lr, end_lr):
    """Rise linearly from ``start_lr`` to ``end_lr`` over ``warmup_steps``, then ``learning_rate``.

    Compat: built from a comparison and arithmetic rather than fluid's Switch block; the value lands
    in fluid's persistable ``learning_rate_warmup``.
    """
    if in_dygraph_mode():  # a schedule the optimizer asks at each minimize
        return dygraph_lr.LinearLrWarmup(learning_rate, warmup_steps, start_lr, end_lr)
    with default_main_program()._lr_schedule_guard():
        step = _decay_step_counter()
        warm = start_lr + (end_lr - start_lr) * (step / float(warmup_steps))
        bound = tensor.fill_constant(shape=[1], dtype="float32", value=float(warmup_steps))
        in_warmup = tensor.cast(step < bound, "float32")
        if not hasattr(learning_rate, "block"):
            learning_rate = tensor.fill_constant(shape=[1], dtype="float32", value=float(learning_rate))
        return _persisted(in_warmup * warm + (1.0 - in_warmup) * learning_rate, "learning_rate_warmup")
