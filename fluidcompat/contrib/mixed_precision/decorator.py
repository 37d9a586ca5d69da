"""``fluid.contrib.mixed_precision.decorate``: an optimizer that trains in mixed precision.

Built as fluid 1.8.5 built it: the forward ops are split into float16 and float32 ones with casts
between them (``rewrite_program``), the loss is multiplied by a loss-scaling variable before the
backward pass and the float32 parameter gradients divided by it after; with dynamic loss scaling a
step whose gradients are not all finite zeroes them and the scaling adapts. Parameters (the master
weights) and the optimizer's state stay in float32.
"""

from __future__ import annotations

from fluidcompat import framework, unique_name
from fluidcompat.framework import Variable, default_main_program, default_startup_program
from fluidcompat.layer_helper import fluid_layers as layers

from .fp16_lists import AutoMixedPrecisionLists
from .fp16_utils import rewrite_program, update_loss_scaling, update_role_var_grad

__all__ = ["decorate"]


class OptimizerWithMixedPrecision:
    """An optimizer plus mixed-precision training: ``minimize``, ``backward`` and ``apply_gradients``
    as a plain optimizer has them, and ``get_loss_scaling()`` / ``get_scaled_loss()``."""

    def __init__(
        self,
        optimizer,
        amp_lists,
        init_loss_scaling,
        use_dynamic_loss_scaling,
        incr_every_n_steps,
        decr_every_n_nan_or_inf,
        incr_ratio,
        decr_ratio,
    ):
        self._optimizer = optimizer
        self._amp_lists = amp_lists
        self._params_grads = None
        self._train_program = default_main_program()
        self._startup_prog = default_startup_program()
        self._scaled_loss = None
        self._loss_scaling = layers.create_global_var(
            name=unique_name.generate("loss_scaling"),
            shape=[1],
            value=init_loss_scaling,
            dtype="float32",
            persistable=True,
        )
        self._use_dynamic_loss_scaling = use_dynamic_loss_scaling
        if use_dynamic_loss_scaling:
            self._incr_every_n_steps = layers.fill_constant(shape=[1], dtype="int32", value=incr_every_n_steps)
            self._decr_every_n_nan_or_inf = layers.fill_constant(
                shape=[1], dtype="int32", value=decr_every_n_nan_or_inf
            )
            self._incr_ratio = incr_ratio
            self._decr_ratio = decr_ratio
            self._num_good_steps = layers.create_global_var(
                name=unique_name.generate("num_good_steps"), shape=[1], value=0, dtype="int32", persistable=True
            )
            self._num_bad_steps = layers.create_global_var(
                name=unique_name.generate("num_bad_steps"), shape=[1], value=0, dtype="int32", persistable=True
            )
        # the learning rate is made now, in float32 like the master weights it updates
        optimizer._create_global_learning_rate()

    def get_loss_scaling(self) -> Variable:
        """The loss-scaling variable (float32, shape [1]); fetch it to see its value."""
        return self._loss_scaling

    def get_scaled_loss(self) -> Variable:
        """The loss times the loss scaling, the variable the backward pass starts from."""
        return self._scaled_loss

    def backward(self, loss, startup_program=None, parameter_list=None, no_grad_set=None, callbacks=None):
        """Rewrite the forward ops into float16 / float32, scale the loss and append the backward pass.
        Returns ``[(param, grad / loss_scaling)]``."""
        rewrite_program(self._train_program, self._amp_lists)
        self._scaled_loss = loss * self._loss_scaling
        self._params_grads = self._optimizer.backward(
            self._scaled_loss, startup_program, parameter_list, no_grad_set, callbacks
        )
        update_role_var_grad(self._train_program, self._params_grads)
        scaled = []
        for p, g in self._params_grads:
            with self._train_program._optimized_guard([p, g]):
                scaled.append([p, g / self._loss_scaling])
        return scaled

    def apply_gradients(self, scaled_params_grads):
        """With dynamic loss scaling, check the gradients, update the scaling and zero the gradients of
        a non-finite step; then the wrapped optimizer's update ops. Returns those ops."""
        if self._use_dynamic_loss_scaling:
            sums = [layers.reduce_sum(g) for _, g in scaled_params_grads]
            is_overall_finite = layers.isfinite(layers.reduce_sum(layers.concat(sums)))
            update_loss_scaling(
                is_overall_finite,
                self._loss_scaling,
                self._num_good_steps,
                self._num_bad_steps,
                self._incr_every_n_steps,
                self._decr_every_n_nan_or_inf,
                self._incr_ratio,
                self._decr_ratio,
            )
            # the update ops go in the global block, so only the zeroing is conditional
            with layers.Switch() as switch:
                with switch.case(is_overall_finite):
                    pass
                with switch.default():
                    for _, g in scaled_params_grads:
                        layers.assign(layers.zeros_like(g), g)
        return self._optimizer.apply_gradients(scaled_params_grads)

    def minimize(self, loss, startup_program=None, parameter_list=None, no_grad_set=None):
        """``backward`` then ``apply_gradients``; returns ``(optimize_ops, scaled_params_grads)``. A
        failure leaves both programs as they were."""
        if not isinstance(loss, Variable):
            raise TypeError(f"The type of 'loss' in minimize must be Variable, but received {type(loss)}.")
        if loss.block.program is not self._train_program:
            raise ValueError(
                f"The loss '{loss.name}' is not in the program that was the default main program when "
                "decorate() was called; call decorate() inside the same program_guard as the network"
            )
        startup = startup_program or self._startup_prog
        with framework.program_transaction(self._train_program, startup, deep=True):
            scaled = self.backward(
                loss, startup_program=startup_program, parameter_list=parameter_list, no_grad_set=no_grad_set
            )
            optimize_ops = self.apply_gradients(scaled)
        return optimize_ops, scaled


def decorate(
    optimizer,
    amp_lists=None,
    init_loss_scaling=2**15,
    incr_every_n_steps=1000,
    decr_every_n_nan_or_inf=2,
    incr_ratio=2.0,
    decr_ratio=0.8,
    use_dynamic_loss_scaling=True,
):
    """Wrap ``optimizer`` for mixed-precision training (fluid 1.8.5's defaults). ``amp_lists``: an
    ``AutoMixedPrecisionLists`` (default lists when None)."""
    if not all(hasattr(optimizer, m) for m in ("backward", "apply_gradients", "_create_global_learning_rate")):
        raise TypeError(f"decorate() needs a fluid.optimizer Optimizer, but received {type(optimizer)}")
    if amp_lists is None:
        amp_lists = AutoMixedPrecisionLists()
    elif not isinstance(amp_lists, AutoMixedPrecisionLists):
        raise TypeError(f"amp_lists must be an AutoMixedPrecisionLists or None, but received {type(amp_lists)}")
    return OptimizerWithMixedPrecision(
        optimizer,
        amp_lists,
        init_loss_scaling,
        use_dynamic_loss_scaling,
        incr_every_n_steps,
        decr_every_n_nan_or_inf,
        incr_ratio,
        decr_ratio,
    )
