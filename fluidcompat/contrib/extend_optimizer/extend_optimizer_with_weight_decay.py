"""``extend_with_decoupled_weight_decay(Adam)``: AdamW and its kind, as fluid 1.8.5 built them.

After the backward pass and before the optimizer's update, each decayed parameter becomes
``param - coeff * param`` (the coefficient is not scaled by the learning rate: Loshchilov & Hutter's
decoupled weight decay as fluid wrote it); the products are all taken before any parameter changes.
"""

from __future__ import annotations

from fluidcompat import framework
from fluidcompat.framework import Variable
from fluidcompat.optimizer import Optimizer

__all__ = ["extend_with_decoupled_weight_decay"]


class DecoupledWeightDecay:
    """The mixin: ``coeff`` (a float or a [1] Variable) and ``apply_decay_param_fun(name) -> bool``
    (which parameters decay; all when None)."""

    def __init__(self, coeff=0.0, apply_decay_param_fun=None, **kwargs):
        if not isinstance(coeff, (float, Variable)) or isinstance(coeff, bool):
            raise TypeError("coeff should be float or Variable.")
        self._params_name = set()
        self._apply_decay_param_fun = apply_decay_param_fun
        self._coeff = coeff
        super().__init__(**kwargs)

    def _scale_parameters(self, params_and_grads):
        """[(param, grad, coeff * param)] for the parameters that decay."""
        if isinstance(self._coeff, float) and self._coeff == 0.0:
            return []
        scaled = []
        for param, grad in params_and_grads:
            if grad is None:
                continue
            if self._apply_decay_param_fun is not None and not self._apply_decay_param_fun(param.name):
                continue
            if isinstance(self._coeff, Variable) and self._coeff.dtype != param.dtype:
                raise TypeError(
                    f"the type of coeff ({self._coeff.dtype.name}) and parameter '{param.name}' "
                    f"({param.dtype.name}) is not consistent."
                )
            with param.block.program._optimized_guard([param, grad]), framework.name_scope("weight decay"):
                if param.name in self._params_name:
                    raise ValueError(f"parameter '{param.name}' is decayed twice by one optimizer")
                scaled.append((param, grad, param * self._coeff))
                self._params_name.add(param.name)
        return scaled

    def minimize(self, loss, startup_program=None, parameter_list=None, no_grad_set=None):
        from fluidcompat.layer_helper import fluid_layers as layers

        if not isinstance(loss, Variable):
            raise TypeError(f"The type of 'loss' in minimize must be Variable, but received {type(loss)}.")
        startup = startup_program or framework.default_startup_program()
        with framework.program_transaction(loss.block.program, startup):
            params_grads = self.backward(
                loss, startup_program=startup_program, parameter_list=parameter_list, no_grad_set=no_grad_set
            )
            for param, grad, scaled in self._scale_parameters(params_grads):
                with param.block.program._optimized_guard([param, grad]), framework.name_scope("weight decay"):
                    layers.assign(layers.elementwise_sub(param, scaled), output=param)
            optimize_ops = self.apply_optimize(loss, startup_program=startup_program, params_grads=params_grads)
        return optimize_ops, params_grads

    def __str__(self):
        return " ".join(["Weight Decay, params:", ",".join(self._params_name)])


def extend_with_decoupled_weight_decay(base_optimizer):
    """A subclass of ``base_optimizer`` (an Optimizer class) taking ``weight_decay`` and
    ``apply_decay_param_fun`` first: ``extend_with_decoupled_weight_decay(fluid.optimizer.Adam)(
    weight_decay=0.01, learning_rate=1e-3)`` is AdamW."""
    if not isinstance(base_optimizer, type) or not issubclass(base_optimizer, Optimizer):
        raise TypeError("The input(base_optimizer) should be a derived class of Optimizer.")

    class OptimizerWithDecoupledWeightDecay(DecoupledWeightDecay, base_optimizer):
        def __init__(self, weight_decay, apply_decay_param_fun=None, **kwargs):
            super().__init__(weight_decay, apply_decay_param_fun, **kwargs)

    OptimizerWithDecoupledWeightDecay.__name__ = f"{base_optimizer.__name__}WithDecoupledWeightDecay"
    return OptimizerWithDecoupledWeightDecay
