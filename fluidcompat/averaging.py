"""``ExponentialMovingAverage`` and ``ModelAverage``: shadow parameters with apply/restore programs."""

from __future__ import annotations

import contextlib

from fluidcompat import unique_name
from fluidcompat.dtypes import VarType
from fluidcompat.framework import Program, _warn_at_user, default_main_program, name_scope, program_guard
from fluidcompat.initializer import ConstantInitializer
from fluidcompat.layer_helper import LayerHelper
from fluidcompat.layer_helper import fluid_layers as layers


def _global_var(name, shape, dtype, value):
    """A persistable variable of the default programs, zero-initialised by the startup program."""
    helper = LayerHelper("averaging")
    var = helper.create_global_variable(name=name, shape=shape, dtype=dtype, persistable=True)
    startup = helper.startup_program.global_block()
    ConstantInitializer(value)(startup.create_var(name=name, shape=shape, dtype=dtype, persistable=True), startup)
    var.stop_gradient = True
    return var


def _declare(block, var, persistable=None):
    """Declare ``var`` (of another program) in ``block`` and return the copy (made persistable if asked:
    a value that must outlive one run of ``block``'s program)."""
    if not block.has_var(var.name):
        block.vars[var.name] = var._copy_to(block)
        if persistable is not None:
            block.vars[var.name].persistable = persistable
    return block.var(var.name)


class ExponentialMovingAverage:
    """Keeps ``ema = decay * ema + (1 - decay) * param`` for every parameter; ``apply`` swaps the
    bias-corrected averages in, ``restore`` puts the parameters back.

    The variables are fluid 1.8.5's (``w_ema_0``, ``scheduled_ema_decay_rate``, ``@EMA_STEP_COUNTER@``)
    so that its checkpoints load, and so are the values: the bias correction divides by
    ``1 - decay ** steps`` with the current decay, and a ``thres_steps`` of an integer dtype leaves the
    decay constant (fluid's integer division).

    Compat: ``apply`` writes the corrected averages to the parameters only; fluid 1.8.5 also wrote them
    back into the averages, so that each later ``apply`` corrected them again.
    """

    _step_counter_name = "@EMA_STEP_COUNTER@"

    def __init__(self, decay=0.999, thres_steps=None, name=None) -> None:
        self._decay = decay
        self._thres_steps = thres_steps
        self._name = name if name is not None else ""
        main = default_main_program()
        self._decay_var = self._scheduled_decay(main)
        self._params_tmps = []
        for param in main.global_block().all_parameters():
            if param.do_model_average is not False:
                tmp = param.block.create_var(
                    name=unique_name.generate(self._name + param.name + ".ema_tmp"),
                    shape=param.shape,
                    dtype=param.dtype,
                    persistable=False,
                    stop_gradient=True,
                )
                self._params_tmps.append((param, tmp))
        self._ema_vars = {}
        for param, _ in self._params_tmps:
            self._ema_vars[param.name] = _global_var(
                unique_name.generate(self._name + param.name + "_ema"), param.shape, param.dtype, 0.0
            )
        self.apply_program = Program()
        with program_guard(self.apply_program):
            block = self.apply_program.global_block()
            counter = layers.create_global_var(
                shape=[1], value=0, dtype="int64", persistable=True, name=self._step_counter_name
            )
            steps = layers.cast(counter, "float32")
            decay_pow = layers.elementwise_pow(_declare(block, self._decay_var), steps)
            # before the first update there is nothing to correct: divide by 1
            unset = layers.cast(layers.less_equal(steps, layers.fill_constant([1], "float32", 0.0)), "float32")
            correction = 1.0 - decay_pow + unset
            for param, tmp in self._params_tmps:
                p, t = _declare(block, param), _declare(block, tmp, persistable=True)
                ema = _declare(block, self._ema_vars[param.name])
                layers.assign(input=p, output=t)
                layers.assign(input=ema / correction, output=p)
        self.restore_program = Program()
        with program_guard(self.restore_program):
            block = self.restore_program.global_block()
            for param, tmp in self._params_tmps:
                layers.assign(input=_declare(block, tmp, persistable=True), output=_declare(block, param))

    def _scheduled_decay(self, main):
        """``scheduled_ema_decay_rate``: the decay, or min((steps + 1) / (steps + 10), decay) each step."""
        with main._lr_schedule_guard():
            var = layers.create_global_var(
                shape=[1], value=self._decay, dtype="float32", persistable=True, name="scheduled_ema_decay_rate"
            )
            steps = self._thres_steps
            if steps is None:
                return var
            if steps.dtype not in (VarType.FP32, VarType.FP64):
                _warn_at_user(
                    f"ExponentialMovingAverage: thres_steps '{steps.name}' is an integer variable; as in fluid "
                    f"1.8.5, (thres_steps + 1) / (thres_steps + 10) is then an integer division and the decay "
                    f"stays {self._decay}. Cast thres_steps to float32 for the warm-up."
                )
                return var
            warm = (steps + 1.0) / (steps + 10.0)
            decay = layers.fill_constant(shape=[1], dtype=steps.dtype, value=self._decay)
            layers.assign(layers.cast(layers.elementwise_min(warm, decay), "float32"), var)
        return var

    def update(self) -> None:
        """Append the ops that update the averages; call after ``optimizer.minimize``."""
        main = default_main_program()
        layers.autoincreased_step_counter(counter_name=self._step_counter_name)
        with name_scope("moving_average"), main._optimized_guard([]):
            decay = self._decay_var
            for param, _ in self._params_tmps:
                ema = self._ema_vars[param.name]
                layers.assign(input=ema * decay + param * (1.0 - decay), output=ema)

    @contextlib.contextmanager
    def apply(self, executor, need_restore=True):
        """Run with the averaged parameters inside the block; restore them after unless told not to."""
        executor.run(self.apply_program)
        try:
            yield
        finally:
            if need_restore:
                self.restore(executor)

    def restore(self, executor) -> None:
        executor.run(self.restore_program)


class ModelAverage:
    """Averages each parameter over a sliding window of updates (op ``average_accumulates``);
    ``apply`` swaps the averages in, ``restore`` puts the parameters back."""

    def __init__(
        self, average_window_rate, min_average_window=10000, max_average_window=10000, regularization=None, name=None
    ) -> None:
        self.average_window = average_window_rate
        self.min_average_window = min_average_window
        self.max_average_window = max_average_window
        main = default_main_program()
        self._params = [p for p in main.global_block().all_parameters() if p.do_model_average is not False]
        self._state = {}
        for p in self._params:
            s = {
                "backup": _global_var(unique_name.generate(p.name + ".tmp"), p.shape, p.dtype, 0.0),
                "sum_1": _global_var(unique_name.generate(p.name + "_sum_1"), p.shape, p.dtype, 0.0),
                "sum_2": _global_var(unique_name.generate(p.name + "_sum_2"), p.shape, p.dtype, 0.0),
                "sum_3": _global_var(unique_name.generate(p.name + "_sum_3"), p.shape, p.dtype, 0.0),
            }
            for k in ("num_accumulates", "old_num_accumulates", "num_updates"):
                s[k] = _global_var(unique_name.generate(f"{p.name}_{k}"), [1], "int64", 0.0)
            self._state[p.name] = s
            with main._optimized_guard([p]):
                main.global_block().append_op(
                    type="average_accumulates",
                    inputs={
                        "param": [p],
                        "in_sum_1": [s["sum_1"]],
                        "in_sum_2": [s["sum_2"]],
                        "in_sum_3": [s["sum_3"]],
                        "in_num_accumulates": [s["num_accumulates"]],
                        "in_old_num_accumulates": [s["old_num_accumulates"]],
                        "in_num_updates": [s["num_updates"]],
                    },
                    outputs={
                        "out_sum_1": [s["sum_1"]],
                        "out_sum_2": [s["sum_2"]],
                        "out_sum_3": [s["sum_3"]],
                        "out_num_accumulates": [s["num_accumulates"]],
                        "out_old_num_accumulates": [s["old_num_accumulates"]],
                        "out_num_updates": [s["num_updates"]],
                    },
                    attrs={
                        "average_window": float(average_window_rate),
                        "min_average_window": min_average_window,
                        "max_average_window": max_average_window,
                    },
                )
        self.apply_program = Program()
        with program_guard(self.apply_program):
            block = self.apply_program.global_block()
            for p in self._params:
                s = {k: _declare(block, v) for k, v in self._state[p.name].items()}
                param = _declare(block, p)
                layers.assign(input=param, output=s["backup"])
                count = layers.cast(layers.sums([s["num_accumulates"], s["old_num_accumulates"]]), "float32")
                total = layers.sums([s["sum_1"], s["sum_2"], s["sum_3"]])
                layers.assign(input=layers.elementwise_div(total, count), output=param)
        self.restore_program = Program()
        with program_guard(self.restore_program):
            block = self.restore_program.global_block()
            for p in self._params:
                layers.assign(input=_declare(block, self._state[p.name]["backup"]), output=_declare(block, p))

    @contextlib.contextmanager
    def apply(self, executor, need_restore=True):
        executor.run(self.apply_program)
        try:
            yield
        finally:
            if need_restore:
                self.restore(executor)

    def restore(self, executor) -> None:
        executor.run(self.restore_program)
