"""``fluid.optimizer``: optimizers that append backward, clipping, regularization and update ops.

Each spells its ops, state variables (``learning_rate_0``, ``<param>_moment1_0``, ...) and their
startup initialisers as fluid 1.8 did. Torch-free.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Dict, List, Optional

from fluidcompat import collector, framework, places, unique_name
from fluidcompat.backward import append_backward
from fluidcompat.clip import GradientClipBase, append_gradient_clip_ops
from fluidcompat.dtypes import VarType
from fluidcompat.framework import Variable, default_main_program, program_guard
from fluidcompat.initializer import ConstantInitializer
from fluidcompat.layer_helper import LayerHelper
from fluidcompat.regularizer import append_regularization_ops

__all__ = [
    "SGD",
    "Momentum",
    "Adam",
    "Adamax",
    "Adagrad",
    "DecayedAdagrad",
    "Adadelta",
    "RMSProp",
    "Ftrl",
    "Lamb",
    "LarsMomentum",
    "SGDOptimizer",
    "MomentumOptimizer",
    "AdamOptimizer",
    "AdamaxOptimizer",
    "AdagradOptimizer",
    "DecayedAdagradOptimizer",
    "AdadeltaOptimizer",
    "RMSPropOptimizer",
    "FtrlOptimizer",
    "LambOptimizer",
    "LarsMomentumOptimizer",
    "Optimizer",
    "ExponentialMovingAverage",
    "ModelAverage",
    "LookaheadOptimizer",
    "RecomputeOptimizer",
    "Dpsgd",
    "DpsgdOptimizer",
    "PipelineOptimizer",
]


class Optimizer:
    """Base class: ``minimize(loss)`` = ``backward`` + ``apply_optimize``."""

    type = ""

    def __init__(self, learning_rate, parameter_list=None, regularization=None, grad_clip=None, name=None) -> None:
        if framework.in_dygraph_mode() and _is_schedule(learning_rate):
            pass
        elif not isinstance(learning_rate, (float, int, Variable)) or isinstance(learning_rate, bool):
            raise TypeError(f"learning rate should be float or Variable, got {type(learning_rate)} here")
        if grad_clip is not None and not isinstance(grad_clip, GradientClipBase):
            raise TypeError("'grad_clip' should be an instance of GradientClipBase's derived class")
        if framework.in_dygraph_mode() and parameter_list is None:
            raise AttributeError("parameter_list argument given to the Optimizer should not be None in dygraph mode.")
        self._learning_rate = learning_rate
        self._parameter_list = list(parameter_list) if parameter_list is not None else None
        self.regularization = regularization
        self._grad_clip = grad_clip
        self._name = name
        self._accumulators: Dict[str, Dict[str, Variable]] = defaultdict(dict)
        self._learning_rate_map: Dict[int, Variable] = {}
        self.helper: Optional[LayerHelper] = None
        self._param_device_map: Dict[str, str] = {}
        self._accumulators_holder: Dict[str, object] = {}

    # -- learning rate -----------------------------------------------------------------------
    def _global_learning_rate(self, program=None) -> Optional[Variable]:
        program = program or default_main_program()
        return self._learning_rate_map.get(id(program))

    def _create_global_learning_rate(self) -> None:
        program = default_main_program()
        if _is_schedule(self._learning_rate):  # dygraph: the schedule's rate for this step
            self._learning_rate_map[id(program)] = self._learning_rate()
            return
        if self._global_learning_rate(program) is not None:
            return
        if isinstance(self._learning_rate, Variable):
            self._learning_rate_map[id(program)] = self._learning_rate
            return
        from fluidcompat.layer_helper import fluid_layers

        self._learning_rate_map[id(program)] = fluid_layers.tensor.create_global_var(
            name=unique_name.generate("learning_rate"),
            shape=[1],
            value=float(self._learning_rate),
            dtype="float32",
            persistable=True,
        )

    def _create_param_lr(self, param_and_grad) -> Variable:
        param = param_and_grad[0]
        param_lr = param.optimize_attr.get("learning_rate", 1.0)
        lr = self._global_learning_rate()
        if param_lr == 1.0:
            return lr
        with default_main_program()._lr_schedule_guard(is_with_opt=True), framework.name_scope("scale_with_param_lr"):
            return lr * param_lr

    # -- accumulators --------------------------------------------------------------------------
    def _add_accumulator(self, name, param, dtype=None, fill_value=0.0, shape=None) -> Variable:
        if param.name in self._accumulators[name]:
            if framework.in_dygraph_mode():  # each minimize asks again
                return self._accumulators[name][param.name]
            raise ValueError(f"Accumulator {name} already exists for parameter {param.name}")
        helper = self.helper or LayerHelper(self.__class__.__name__)
        var = helper.create_global_variable(
            name=unique_name.generate(param.name + "_" + name),
            persistable=True,
            dtype=dtype or param.dtype,
            type=param.type if param.type != VarType.SELECTED_ROWS else VarType.LOD_TENSOR,
            shape=list(shape) if shape is not None else list(param.shape),
            belong_to_optimizer=True,
        )
        startup = framework.default_startup_program().global_block()
        svar = startup.create_var(name=var.name, shape=var.shape, dtype=var.dtype, persistable=True)
        with places.device_guard(self._param_device_map.get(param.name)):
            ConstantInitializer(value=float(fill_value))(svar, startup)
        if self._accumulators_holder:  # dygraph: state loaded by set_dict before it existed
            var.set_value(_as_array(self._accumulators_holder[_saved_name(var.name, self._accumulators_holder)]))
        self._accumulators[name][param.name] = var
        return var

    # -- dygraph state ---------------------------------------------------------------------------------
    def current_step_lr(self) -> float:
        """Dygraph: the learning rate of the last ``minimize`` (before the first: of the first).

        Compat: asking never advances a schedule; fluid 1.8 advanced a LinearLrWarmup's inner schedule."""
        last = self._global_learning_rate()
        if last is not None:
            return float(last.numpy()[0])
        if _is_schedule(self._learning_rate):
            return self._learning_rate._current()
        if isinstance(self._learning_rate, Variable):
            return float(self._learning_rate.numpy()[0])
        return float(self._learning_rate)

    def state_dict(self) -> Dict[str, Variable]:
        """Dygraph: the optimizer's state variables by name (empty before the first ``minimize``), and
        its learning-rate schedule's state (``LR_Scheduler``, ``global_step``)."""
        _dygraph_only("Optimizer.state_dict")
        state = {var.name: var for per_param in self._accumulators.values() for var in per_param.values()}
        lr = self._learning_rate
        if _is_schedule(lr):
            import numpy as np

            state["LR_Scheduler"] = lr.state_dict()
            if not isinstance(lr, dygraph_schedules._LearningRateEpochDecay):
                step = np.array([lr.step_num], "int32")
                state["global_step"] = dygraph_base.to_variable(step, name="global_step")
        return state

    def set_dict(self, state_dict) -> None:
        """Dygraph: load state saved by ``state_dict`` (numpy arrays or VarBases by name). Every value is
        checked before any is written; state not created yet is loaded when it is."""
        _dygraph_only("Optimizer.set_dict")
        lr = self._learning_rate
        step = None
        if _is_schedule(lr):
            if "LR_Scheduler" not in state_dict:
                raise ValueError("LR_Scheduler not in state dict: the optimizer has a learning-rate schedule")
            if not isinstance(lr, dygraph_schedules._LearningRateEpochDecay):
                if "global_step" not in state_dict:
                    raise ValueError(
                        "Global step not in state dict, Dygraph use LearningRateDecay, global_step must in state dict"
                    )
                step = _as_array(state_dict["global_step"]).reshape(-1)
                if step.shape != (1,):
                    raise ValueError(f"global step shape is (1,), the shape is {step.shape}")
        plan = []
        for per_param in self._accumulators.values():
            for var in per_param.values():
                value = _as_array(state_dict[_saved_name(var.name, state_dict)])
                mine = var.numpy()
                if value.shape != mine.shape or value.dtype != mine.dtype:
                    raise ValueError(
                        f"Parameter shape or dtype not match, Dygraph Parameter [ {var.name} ] need tensor with "
                        f"shape {mine.shape} dtype {mine.dtype} but load tensor with shape {value.shape} "
                        f"dtype {value.dtype}"
                    )
                plan.append((var, value))
        if _is_schedule(lr):
            lr.set_dict(state_dict["LR_Scheduler"])
            if step is not None:
                lr.step_num = int(step[0])
        self._accumulators_holder = dict(state_dict)
        for var, value in plan:
            var.set_value(value)

    load = set_dict

    def _get_accumulator(self, name, param) -> Variable:
        try:
            return self._accumulators[name][param.name]
        except KeyError:
            raise ValueError(f"Accumulator {name} does not exist for parameter {param.name}") from None

    def _create_accumulators(self, block, parameters) -> None:
        pass

    def _append_optimize_op(self, block, param_and_grad):
        raise NotImplementedError(f"{type(self).__name__} does not define its update op")

    def _finish_update(self, block, parameters_and_grads) -> None:
        pass

    # -- the passes ------------------------------------------------------------------------------
    def _update_param_device_map(self, block) -> None:
        """Each parameter's device: the ``op_device`` of the grad op that produces its gradient, so
        that its state and its update stay where the parameter lives (as in fluid 1.8)."""
        for op in block.ops:
            role_var = op.attrs.get("op_role_var") or []
            for name in role_var[::2]:
                if op.attrs.get("op_device") and name not in self._param_device_map:
                    self._param_device_map[name] = op.attrs["op_device"]

    def _create_optimization_pass(self, parameters_and_grads) -> List[framework.Operator]:
        block = default_main_program().global_block()
        start = len(block.ops)
        self.helper = LayerHelper(self.__class__.__name__)
        self._update_param_device_map(block)
        self._create_accumulators(block, [p for p, g in parameters_and_grads if p.trainable])
        self._create_global_learning_rate()
        for param_and_grad in parameters_and_grads:
            if param_and_grad[1] is None:
                continue
            # each parameter's ops go in their own name scope (/optimizer/, /optimizer_1/, ...), one
            # opened for a frozen parameter too, as fluid numbered them
            with default_main_program()._optimized_guard(list(param_and_grad)), framework.name_scope("optimizer"):
                if not param_and_grad[0].trainable:
                    continue
                with places.device_guard(self._param_device_map.get(param_and_grad[0].name)):
                    self._append_optimize_op(block, param_and_grad)
        self._finish_update(block, parameters_and_grads)
        return block.ops[start:]

    def backward(self, loss, startup_program=None, parameter_list=None, no_grad_set=None, callbacks=None):
        """Append the backward pass; returns ``[(param, grad)]``."""
        if tuple(loss.shape) != (1,):  # fluid 1.8's check, with its message
            raise ValueError(
                f"The loss.shape should be (1L,), but the current loss.shape is {tuple(loss.shape)}. Maybe that you "
                "should call fluid.layers.mean to process the current loss."
            )
        parameter_list = parameter_list if parameter_list is not None else self._parameter_list
        if callbacks is None:  # fluid 1.8: variables' error clips apply unless callbacks are given
            from fluidcompat.clip import error_clip_callback

            callbacks = [error_clip_callback]
        with program_guard(loss.block.program, startup_program or framework.default_startup_program()):
            return append_backward(loss, parameter_list, no_grad_set, callbacks)

    def apply_gradients(self, params_grads) -> List[framework.Operator]:
        """Clip, regularize and update; ops follow the parameters sorted by name, as in fluid."""
        params_grads = sorted(params_grads, key=lambda x: x[0].name)
        if self._grad_clip is not None:
            params_grads = self._grad_clip(params_grads)
        else:
            params_grads = append_gradient_clip_ops(params_grads)
        params_grads = append_regularization_ops(params_grads, self.regularization)
        return self._create_optimization_pass(params_grads)

    def apply_optimize(self, loss, startup_program, params_grads) -> List[framework.Operator]:
        with program_guard(loss.block.program, startup_program or framework.default_startup_program()):
            return self.apply_gradients(params_grads)

    @collector.pausing
    def minimize(self, loss, startup_program=None, parameter_list=None, no_grad_set=None):
        """Append backward and update ops for ``loss``; returns ``(optimize_ops, params_grads)``."""
        if not isinstance(loss, Variable):
            raise TypeError(f"The type of 'loss' in minimize must be Variable, but received {type(loss)}.")
        if framework.in_dygraph_mode():
            return self._dygraph_minimize(parameter_list)
        startup = startup_program or framework.default_startup_program()
        with framework.program_transaction(loss.block.program, startup):
            params_grads = self.backward(loss, startup_program, parameter_list, no_grad_set)
            optimize_ops = self.apply_optimize(loss, startup_program, params_grads)
        return optimize_ops, params_grads

    def _dygraph_minimize(self, parameter_list=None):
        """Dygraph: update each trainable parameter that has a gradient (from ``loss.backward()``)."""
        params = parameter_list if parameter_list is not None else self._parameter_list
        # an is_sparse embedding's rows go to the update as fluid's sparse kernels took them, unless a
        # clip or decay term comes first (those here take dense gradients)
        by_rows = self._grad_clip is None and self.regularization is None
        with dygraph_base.no_grad():
            params_grads = []
            for param in params:
                if not param.trainable:
                    continue
                grad = param._grad_ivar(sparse=by_rows and getattr(param, "regularizer", None) is None)
                if grad is not None:
                    params_grads.append((param, grad))
            if self._grad_clip is not None:
                params_grads = self._grad_clip(params_grads)
            else:
                params_grads = append_gradient_clip_ops(params_grads)
            params_grads = append_regularization_ops(params_grads, self.regularization)
            self._create_optimization_pass(params_grads)
        return [], params_grads

    def clear_gradients(self) -> None:
        """Dygraph: zero the gradients of the parameters this optimizer updates."""
        for p in self._parameter_list or ():
            if p.trainable:
                p.clear_gradient()

    def _update_op(self, block, op_type, param_and_grad, inputs, outputs, attrs=None):
        param, grad = param_and_grad
        ins = {"Param": [param], "Grad": [grad]}
        ins.update(inputs)
        outs = {"ParamOut": [param]}
        outs.update(outputs)
        return block.append_op(type=op_type, inputs=ins, outputs=outs, attrs=attrs or {})


def _as_array(value):
    import numpy as np

    return value.numpy() if hasattr(value, "numpy") else np.asarray(value)


def _saved_name(name: str, state) -> str:
    """The key of optimizer state ``name`` in a loaded ``state``: the same name, else the one that
    differs only in its unique-name counter (``w_0_moment1_0`` for ``w_0_moment1_1``: a second optimizer
    made in the same guard; fluid 1.8 refused to load there)."""
    if name in state:
        return name
    stem = name.rsplit("_", 1)[0]
    found = [k for k in state if k.rsplit("_", 1)[0] == stem]
    if len(found) != 1:
        raise ValueError(
            f"Optimizer set error, {name} should in state dict (the state given to set_dict has "
            f"{len(found)} entries for it)"
        )
    return found[0]


# fluidcompat.dygraph's base and learning_rate_scheduler modules, which fluidcompat/dygraph/__init__.py
# sets on its import: the optimizers step VarBases in dygraph mode and take its learning-rate schedules,
# and dygraph sits floors above (docs/architecture.md, the hooks). None before: no dygraph mode nor
# schedule can exist then.
dygraph_base = None
dygraph_schedules = None


def _is_schedule(value) -> bool:
    """Whether ``value`` is a dygraph learning-rate schedule (fluid.dygraph.PiecewiseDecay, ...)."""
    return dygraph_schedules is not None and isinstance(value, dygraph_schedules.LearningRateDecay)


def _dygraph_only(api: str) -> None:
    if not framework.in_dygraph_mode():
        raise RuntimeError(f"{api} works only in dygraph mode (inside fluid.dygraph.guard())")


class SGDOptimizer(Optimizer):
    """``param -= lr * grad`` (op ``sgd``); a sparse gradient updates only its rows."""

    def __init__(self, learning_rate, parameter_list=None, regularization=None, grad_clip=None, name=None):
        super().__init__(learning_rate, parameter_list, regularization, grad_clip, name)
        self.type = "sgd"

    def _append_optimize_op(self, block, param_and_grad):
        return self._update_op(
            block, "sgd", param_and_grad, {"LearningRate": [self._create_param_lr(param_and_grad)]}, {}
        )


class DpsgdOptimizer(Optimizer):
    """Differentially private SGD (op ``dpsgd``): the gradient clipped to L2 norm ``clip`` plus
    Gaussian noise of std ``sigma`` divided by ``batch_size``."""

    def __init__(self, learning_rate=0.001, clip=0.9, batch_size=0.999, sigma=1e-8, parameter_list=None):
        super().__init__(learning_rate, parameter_list)
        self.type = "dpsgd"
        self._clip, self._batch_size, self._sigma = clip, batch_size, sigma
        self._seed = None

    def _append_optimize_op(self, block, param_and_grad):
        if self._seed is None:
            self._seed = 0
        attrs = {"clip": self._clip, "batch_size": self._batch_size, "sigma": self._sigma, "seed": self._seed}
        return self._update_op(
            block, "dpsgd", param_and_grad, {"LearningRate": [self._create_param_lr(param_and_grad)]}, {}, attrs
        )


class MomentumOptimizer(Optimizer):
    """Momentum (op ``momentum``), optionally Nesterov."""

    _velocity = "velocity"

    def __init__(
        self,
        learning_rate,
        momentum,
        parameter_list=None,
        use_nesterov=False,
        regularization=None,
        grad_clip=None,
        name=None,
    ):
        super().__init__(learning_rate, parameter_list, regularization, grad_clip, name)
        self.type = "momentum"
        self._momentum = momentum
        self._use_nesterov = bool(use_nesterov)

    def _create_accumulators(self, block, parameters):
        for p in parameters:
            self._add_accumulator(self._velocity, p)

    def _append_optimize_op(self, block, param_and_grad):
        v = self._get_accumulator(self._velocity, param_and_grad[0])
        return self._update_op(
            block,
            "momentum",
            param_and_grad,
            {"Velocity": [v], "LearningRate": [self._create_param_lr(param_and_grad)]},
            {"VelocityOut": [v]},
            {"mu": self._momentum, "use_nesterov": self._use_nesterov},
        )


class LarsMomentumOptimizer(MomentumOptimizer):
    """Momentum with a layer-wise adaptive rate (op ``lars_momentum``)."""

    def __init__(
        self,
        learning_rate,
        momentum,
        lars_coeff=0.001,
        lars_weight_decay=0.0005,
        parameter_list=None,
        regularization=None,
        grad_clip=None,
        name=None,
    ):
        super().__init__(learning_rate, momentum, parameter_list, False, regularization, grad_clip, name)
        self.type = "lars_momentum"
        self._lars_coeff = float(lars_coeff)
        self._lars_weight_decay = float(lars_weight_decay)

    def _append_optimize_op(self, block, param_and_grad):
        v = self._get_accumulator(self._velocity, param_and_grad[0])
        return self._update_op(
            block,
            "lars_momentum",
            param_and_grad,
            {"Velocity": [v], "LearningRate": [self._create_param_lr(param_and_grad)]},
            {"VelocityOut": [v]},
            {"mu": self._momentum, "lars_coeff": self._lars_coeff, "lars_weight_decay": self._lars_weight_decay},
        )


class AdamOptimizer(Optimizer):
    """Adam (op ``adam``, which also advances the beta powers)."""

    def __init__(
        self,
        learning_rate=0.001,
        beta1=0.9,
        beta2=0.999,
        epsilon=1e-8,
        parameter_list=None,
        regularization=None,
        grad_clip=None,
        name=None,
        lazy_mode=False,
    ):
        super().__init__(learning_rate, parameter_list, regularization, grad_clip, name)
        self.type = "adam"
        self._beta1, self._beta2, self._epsilon = beta1, beta2, epsilon
        self._lazy_mode = lazy_mode

    def _create_accumulators(self, block, parameters):
        for p in parameters:
            self._add_accumulator("moment1", p)
            self._add_accumulator("moment2", p)
            b1 = self._beta1 if not isinstance(self._beta1, Variable) else 0.9
            b2 = self._beta2 if not isinstance(self._beta2, Variable) else 0.999
            self._add_accumulator("beta1_pow_acc", p, fill_value=b1, shape=[1], dtype=VarType.FP32)
            self._add_accumulator("beta2_pow_acc", p, fill_value=b2, shape=[1], dtype=VarType.FP32)

    def _append_optimize_op(self, block, param_and_grad):
        p = param_and_grad[0]
        m1, m2 = self._get_accumulator("moment1", p), self._get_accumulator("moment2", p)
        b1p, b2p = self._get_accumulator("beta1_pow_acc", p), self._get_accumulator("beta2_pow_acc", p)
        inputs = {
            "LearningRate": [self._create_param_lr(param_and_grad)],
            "Moment1": [m1],
            "Moment2": [m2],
            "Beta1Pow": [b1p],
            "Beta2Pow": [b2p],
        }
        attrs = {"epsilon": self._epsilon, "lazy_mode": self._lazy_mode, "min_row_size_to_use_multithread": 1000}
        if isinstance(self._beta1, Variable):
            inputs["Beta1Tensor"] = [self._beta1]
        else:
            attrs["beta1"] = self._beta1
        if isinstance(self._beta2, Variable):
            inputs["Beta2Tensor"] = [self._beta2]
        else:
            attrs["beta2"] = self._beta2
        return self._update_op(
            block,
            "adam",
            param_and_grad,
            inputs,
            {"Moment1Out": [m1], "Moment2Out": [m2], "Beta1PowOut": [b1p], "Beta2PowOut": [b2p]},
            attrs,
        )


class AdamaxOptimizer(Optimizer):
    """Adamax (op ``adamax``; a ``scale`` op per parameter advances beta1's power afterwards)."""

    def __init__(
        self,
        learning_rate=0.001,
        beta1=0.9,
        beta2=0.999,
        epsilon=1e-8,
        parameter_list=None,
        regularization=None,
        grad_clip=None,
        name=None,
    ):
        super().__init__(learning_rate, parameter_list, regularization, grad_clip, name)
        self.type = "adamax"
        self._beta1, self._beta2, self._epsilon = beta1, beta2, epsilon

    def _create_accumulators(self, block, parameters):
        for p in parameters:
            self._add_accumulator("moment", p)
            self._add_accumulator("inf_norm", p)
            self._add_accumulator("beta1_pow_acc", p, fill_value=self._beta1, shape=[1], dtype=VarType.FP32)

    def _append_optimize_op(self, block, param_and_grad):
        p = param_and_grad[0]
        m, inf = self._get_accumulator("moment", p), self._get_accumulator("inf_norm", p)
        b1p = self._get_accumulator("beta1_pow_acc", p)
        return self._update_op(
            block,
            "adamax",
            param_and_grad,
            {
                "LearningRate": [self._create_param_lr(param_and_grad)],
                "Moment": [m],
                "InfNorm": [inf],
                "Beta1Pow": [b1p],
            },
            {"MomentOut": [m], "InfNormOut": [inf]},
            {"beta1": self._beta1, "beta2": self._beta2, "epsilon": self._epsilon},
        )

    def _finish_update(self, block, parameters_and_grads):
        for p, g in parameters_and_grads:
            if g is None or not p.trainable:
                continue
            with default_main_program()._optimized_guard([p, g]), framework.name_scope("adamx"):
                b1p = self._get_accumulator("beta1_pow_acc", p)
                block.append_op(type="scale", inputs={"X": [b1p]}, outputs={"Out": [b1p]}, attrs={"scale": self._beta1})


class AdagradOptimizer(Optimizer):
    """Adagrad (op ``adagrad``)."""

    def __init__(
        self,
        learning_rate,
        epsilon=1.0e-6,
        parameter_list=None,
        regularization=None,
        grad_clip=None,
        name=None,
        initial_accumulator_value=0.0,
    ):
        super().__init__(learning_rate, parameter_list, regularization, grad_clip, name)
        self.type = "adagrad"
        self._epsilon = epsilon
        self.initial_accumulator_value = initial_accumulator_value

    def _create_accumulators(self, block, parameters):
        for p in parameters:
            self._add_accumulator("moment", p, fill_value=self.initial_accumulator_value)

    def _append_optimize_op(self, block, param_and_grad):
        m = self._get_accumulator("moment", param_and_grad[0])
        return self._update_op(
            block,
            "adagrad",
            param_and_grad,
            {"Moment": [m], "LearningRate": [self._create_param_lr(param_and_grad)]},
            {"MomentOut": [m]},
            {"epsilon": self._epsilon},
        )


class DecayedAdagradOptimizer(Optimizer):
    """Adagrad with a decaying accumulator (op ``decayed_adagrad``)."""

    def __init__(
        self,
        learning_rate,
        decay=0.95,
        epsilon=1.0e-6,
        parameter_list=None,
        regularization=None,
        grad_clip=None,
        name=None,
    ):
        super().__init__(learning_rate, parameter_list, regularization, grad_clip, name)
        self.type = "decayed_adagrad"
        self._decay, self._epsilon = decay, epsilon

    def _create_accumulators(self, block, parameters):
        for p in parameters:
            self._add_accumulator("moment", p)

    def _append_optimize_op(self, block, param_and_grad):
        m = self._get_accumulator("moment", param_and_grad[0])
        return self._update_op(
            block,
            "decayed_adagrad",
            param_and_grad,
            {"Moment": [m], "LearningRate": [self._create_param_lr(param_and_grad)]},
            {"MomentOut": [m]},
            {"epsilon": self._epsilon, "decay": self._decay},
        )


class AdadeltaOptimizer(Optimizer):
    """Adadelta (op ``adadelta``; it reads no learning rate)."""

    def __init__(
        self,
        learning_rate,
        epsilon=1.0e-6,
        rho=0.95,
        parameter_list=None,
        regularization=None,
        grad_clip=None,
        name=None,
    ):
        super().__init__(learning_rate, parameter_list, regularization, grad_clip, name)
        self.type = "adadelta"
        self._epsilon, self._rho = epsilon, rho

    def _create_accumulators(self, block, parameters):
        for p in parameters:
            self._add_accumulator("_avg_squared_grad", p)
            self._add_accumulator("_avg_squared_update", p)

    def _append_optimize_op(self, block, param_and_grad):
        p = param_and_grad[0]
        g2, u2 = self._get_accumulator("_avg_squared_grad", p), self._get_accumulator("_avg_squared_update", p)
        return self._update_op(
            block,
            "adadelta",
            param_and_grad,
            {"AvgSquaredGrad": [g2], "AvgSquaredUpdate": [u2]},
            {"AvgSquaredGradOut": [g2], "AvgSquaredUpdateOut": [u2]},
            {"epsilon": self._epsilon, "rho": self._rho},
        )


class RMSPropOptimizer(Optimizer):
    """RMSProp (op ``rmsprop``), optionally centered."""

    def __init__(
        self,
        learning_rate,
        rho=0.95,
        epsilon=1.0e-6,
        momentum=0.0,
        centered=False,
        parameter_list=None,
        regularization=None,
        grad_clip=None,
        name=None,
    ):
        super().__init__(learning_rate, parameter_list, regularization, grad_clip, name)
        if rho is None or epsilon is None or momentum is None:
            raise ValueError("rho, epsilon and momentum are not set.")
        self.type = "rmsprop"
        self._rho, self._epsilon, self._momentum, self._centered = rho, epsilon, momentum, centered

    def _create_accumulators(self, block, parameters):
        for p in parameters:
            self._add_accumulator("momentum", p)
            self._add_accumulator("mean_square", p)
            self._add_accumulator("mean_grad", p)

    def _append_optimize_op(self, block, param_and_grad):
        p = param_and_grad[0]
        mom, ms, mg = (self._get_accumulator(n, p) for n in ("momentum", "mean_square", "mean_grad"))
        return self._update_op(
            block,
            "rmsprop",
            param_and_grad,
            {
                "Moment": [mom],
                "MeanSquare": [ms],
                "MeanGrad": [mg],
                "LearningRate": [self._create_param_lr(param_and_grad)],
            },
            {"MomentOut": [mom], "MeanSquareOut": [ms], "MeanGradOut": [mg]},
            {"epsilon": self._epsilon, "decay": self._rho, "momentum": self._momentum, "centered": self._centered},
        )


class FtrlOptimizer(Optimizer):
    """FTRL-proximal (op ``ftrl``)."""

    def __init__(
        self,
        learning_rate,
        l1=0.0,
        l2=0.0,
        lr_power=-0.5,
        parameter_list=None,
        regularization=None,
        grad_clip=None,
        name=None,
    ):
        super().__init__(learning_rate, parameter_list, regularization, grad_clip, name)
        self.type = "ftrl"
        self._l1, self._l2, self._lr_power = l1, l2, lr_power

    def _create_accumulators(self, block, parameters):
        for p in parameters:
            self._add_accumulator("squared", p)
            self._add_accumulator("linear", p)

    def _append_optimize_op(self, block, param_and_grad):
        p = param_and_grad[0]
        sq, lin = self._get_accumulator("squared", p), self._get_accumulator("linear", p)
        return self._update_op(
            block,
            "ftrl",
            param_and_grad,
            {
                "SquaredAccumulator": [sq],
                "LinearAccumulator": [lin],
                "LearningRate": [self._create_param_lr(param_and_grad)],
            },
            {"SquaredAccumOut": [sq], "LinearAccumOut": [lin]},
            {"l1": self._l1, "l2": self._l2, "lr_power": self._lr_power},
        )


class LambOptimizer(AdamOptimizer):
    """LAMB (op ``lamb``).

    Compat: as in fluid 1.8, the beta powers are not advanced between steps.
    """

    def __init__(
        self,
        learning_rate=0.001,
        lamb_weight_decay=0.01,
        beta1=0.9,
        beta2=0.999,
        epsilon=1e-6,
        parameter_list=None,
        regularization=None,
        grad_clip=None,
        exclude_from_weight_decay_fn=None,
        name=None,
    ):
        super().__init__(learning_rate, beta1, beta2, epsilon, parameter_list, regularization, grad_clip, name)
        self.type = "lamb"
        self._weight_decay = lamb_weight_decay
        self._exclude_from_weight_decay_fn = exclude_from_weight_decay_fn

    def _append_optimize_op(self, block, param_and_grad):
        p = param_and_grad[0]
        m1, m2 = self._get_accumulator("moment1", p), self._get_accumulator("moment2", p)
        b1p, b2p = self._get_accumulator("beta1_pow_acc", p), self._get_accumulator("beta2_pow_acc", p)
        wd = self._weight_decay
        if self._exclude_from_weight_decay_fn is not None and self._exclude_from_weight_decay_fn(p):
            wd = 0.0
        return self._update_op(
            block,
            "lamb",
            param_and_grad,
            {
                "LearningRate": [self._create_param_lr(param_and_grad)],
                "Moment1": [m1],
                "Moment2": [m2],
                "Beta1Pow": [b1p],
                "Beta2Pow": [b2p],
            },
            {"Moment1Out": [m1], "Moment2Out": [m2]},
            {"beta1": self._beta1, "beta2": self._beta2, "epsilon": self._epsilon, "weight_decay": wd},
        )


SGD = SGDOptimizer
Dpsgd = DpsgdOptimizer
Momentum = MomentumOptimizer
Adam = AdamOptimizer
Adamax = AdamaxOptimizer
Adagrad = AdagradOptimizer
DecayedAdagrad = DecayedAdagradOptimizer
Adadelta = AdadeltaOptimizer
RMSProp = RMSPropOptimizer
Ftrl = FtrlOptimizer
Lamb = LambOptimizer
LarsMomentum = LarsMomentumOptimizer

from fluidcompat import pipeline as _pipeline  # noqa: E402
from fluidcompat.averaging import ExponentialMovingAverage, ModelAverage  # noqa: E402
from fluidcompat.pipeline import PipelineOptimizer  # noqa: E402

_pipeline.Optimizer = Optimizer  # what PipelineOptimizer wraps (pipeline.py sits beside, not above, this module)


class LookaheadOptimizer:
    """Lookahead (Zhang et al. 2019) around an inner optimizer, built as fluid 1.8 built it: after the
    inner update, every k-th step sets slow = alpha * fast + (1 - alpha) * slow and fast = slow, in a
    Switch over ``step % k == 0``. The slow copies start as the parameters' initial values."""

    def __init__(self, inner_optimizer, alpha=0.5, k=5):
        if inner_optimizer is None:
            raise ValueError("inner optimizer can not be None")
        if not 0.0 <= alpha <= 1.0:
            raise ValueError(f"alpha should be larger or equal to 0.0, and less or equal than 1.0. Received: {alpha}")
        if not isinstance(k, int) or k <= 0:
            raise ValueError(f"k should be a positive integer. Received: {k!r}")
        self.inner_optimizer = inner_optimizer
        self.alpha = alpha
        self.k = k
        self.type = "lookahead"

    def minimize(self, loss, startup_program=None):
        from fluidcompat.layer_helper import fluid_layers as layers

        startup = startup_program or framework.default_startup_program()
        main = loss.block.program
        with framework.program_transaction(main, startup):
            mini_out = self.inner_optimizer.minimize(loss, startup_program=startup)
            block = main.global_block()
            params = [p for p in block.all_parameters() if p.trainable]
            slow = {}
            for p in params:
                name = p.name + "@SLOW"
                slow[p.name] = block.create_var(name=name, shape=p.shape, dtype=p.dtype, persistable=True)
                sb = startup.global_block()
                sb.create_var(name=name, shape=p.shape, dtype=p.dtype, persistable=True)
                sb.append_op(type="assign", inputs={"X": [sb.var(p.name)]}, outputs={"Out": [sb.var(name)]})
            with program_guard(main, startup):
                step = layers.create_global_var(
                    name=unique_name.generate("lookahead_step"), shape=[1], value=0, dtype="int32", persistable=True
                )
                layers.increment(step, value=1.0, in_place=True)
                k_var = layers.fill_constant([1], "int32", self.k)
                zero = layers.fill_constant([1], "int32", 0)
                cond = layers.equal(layers.elementwise_mod(step, k_var), zero)
                with layers.Switch() as switch:
                    with switch.case(cond):
                        for p in params:
                            s = slow[p.name]
                            tmp = layers.elementwise_add(layers.scale(p, self.alpha), layers.scale(s, 1.0 - self.alpha))
                            layers.assign(tmp, s)
                            layers.assign(tmp, p)
                    with switch.default():
                        pass
        return mini_out


class RecomputeOptimizer(Optimizer):
    """Recompute around an inner optimizer: the backward pass computes the forward ops between the
    checkpoints again instead of keeping their outputs (fluid 1.8.5's program; the same values with
    less memory held between the forward and the backward pass)."""

    def __init__(self, optimizer):
        self._optimizer = optimizer
        self._checkpoints = None
        self.type = "recompute"

    def _set_checkpoints(self, checkpoints):
        self._checkpoints = list(checkpoints)

    def load(self, stat_dict):
        raise NotImplementedError("load function is not supported by Recompute Optimizer for now")

    def backward(self, loss, startup_program=None, parameter_list=None, no_grad_set=None, callbacks=None):
        if self._checkpoints is None:
            raise ValueError("You should call _set_checkpoints first")
        parameter_list = parameter_list if parameter_list is not None else self._optimizer._parameter_list
        with program_guard(loss.block.program, startup_program or framework.default_startup_program()):
            return append_backward(loss, parameter_list, no_grad_set, callbacks, checkpoints=self._checkpoints)

    def apply_gradients(self, params_grads):
        return self._optimizer.apply_gradients(params_grads)

    def apply_optimize(self, loss, startup_program, params_grads):
        return self._optimizer.apply_optimize(loss, startup_program, params_grads)

    def minimize(self, loss, startup_program=None, parameter_list=None, no_grad_set=None):
        if not isinstance(loss, Variable):
            raise TypeError("The loss should be an Variable.")
        if self._checkpoints is None:
            raise ValueError("You should call _set_checkpoints first")
        startup = startup_program or framework.default_startup_program()
        with framework.program_transaction(loss.block.program, startup, deep=True):
            params_grads = self.backward(loss, startup_program, parameter_list, no_grad_set)
            optimize_ops = self.apply_optimize(loss, startup_program, params_grads)
        return optimize_ops, params_grads


def __getattr__(name):  # fluid 1.8 names fluidcompat lacks: UnsupportedAPIError
    if name.startswith("__"):
        raise AttributeError(name)
    from fluidcompat.fluid18_names import unsupported

    return unsupported("paddle.fluid.optimizer")(name)
