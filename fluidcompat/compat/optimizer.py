"""``paddle.optimizer``: SGD, Momentum and Adam over a Layer's parameters (``parameters=``).

``step()`` applies the update with the kernels fluidcompat's static ``sgd`` / ``momentum`` / ``adam``
ops run, so dynamic and static training do the same arithmetic.
"""

from __future__ import annotations

from typing import Dict, List

import numpy as np

from fluidcompat.compat.device import Tensor

__all__ = ["Adam", "Momentum", "Optimizer", "SGD"]


def _torch():
    import torch

    return torch


class Optimizer:
    _op = ""

    def __init__(self, learning_rate=0.001, parameters=None, weight_decay=None, grad_clip=None, name=None) -> None:
        if parameters is None:
            raise ValueError(f"{type(self).__name__}: parameters= is required in dynamic mode: pass model.parameters()")
        self._parameter_list = list(parameters)
        for p in self._parameter_list:
            if not isinstance(p, Tensor):
                raise TypeError(f"{type(self).__name__}: parameters must be Tensors. Received: {type(p).__name__}")
        if not isinstance(learning_rate, (int, float)):
            raise TypeError(
                f"{type(self).__name__}: learning_rate must be a float (fluidcompat has no LRScheduler). "
                f"Received: {type(learning_rate).__name__}"
            )
        self._learning_rate = float(learning_rate)
        coeff = getattr(weight_decay, "_coeff", getattr(weight_decay, "regularization_coeff", weight_decay))
        self._weight_decay = float(coeff) if coeff is not None else 0.0
        if grad_clip is not None:
            raise ValueError(f"{type(self).__name__}: grad_clip is not supported in fluidcompat's dynamic mode")
        self._accumulators: Dict[str, Dict[int, object]] = {}

    def get_lr(self) -> float:
        return self._learning_rate

    def set_lr(self, value: float) -> None:
        self._learning_rate = float(value)

    def _state(self, key: str, p, make):
        table = self._accumulators.setdefault(key, {})
        if id(p) not in table:
            table[id(p)] = make()
        return table[id(p)]

    def _update(self, p, g, lr) -> None:
        from fluidcompat_ops import bind_torch, lookup

        bind_torch()
        ins, attrs = self._inputs(p, g, lr)
        outs = lookup(self._op).kernel(ins, attrs)
        self._store(p, outs)

    def _inputs(self, p, g, lr):
        return {"Param": [p], "Grad": [g], "LearningRate": [lr]}, {}

    def _store(self, p, outs) -> None:
        pass

    def step(self) -> None:
        """Update every parameter that has a gradient (the gradient plus ``weight_decay`` x parameter)."""
        torch = _torch()
        with torch.no_grad():
            for p in self._parameter_list:
                g = p._t.grad
                if g is None or p.stop_gradient:
                    continue
                if self._weight_decay:
                    g = g + self._weight_decay * p._t
                lr = torch.tensor([self._learning_rate], dtype=p._t.dtype, device=p._t.device)
                self._update(p._t, g, lr)

    def minimize(self, loss, startup_program=None, parameters=None, no_grad_set=None):
        """Apply the gradients ``loss.backward()`` left (it does not call backward, as in Paddle 2)."""
        self.step()
        return None, [(p, p.grad) for p in self._parameter_list]

    def clear_grad(self, set_to_zero: bool = True) -> None:
        for p in self._parameter_list:
            if p._t.grad is not None:
                if set_to_zero:
                    p._t.grad.zero_()
                else:
                    p._t.grad = None

    clear_gradients = clear_grad

    def state_dict(self) -> Dict[str, np.ndarray]:
        """Accumulators as ``<parameter name>_<accumulator>`` -> Tensor (on the parameter's place)."""
        out = {}
        params = {id(p._t): (getattr(p, "name", str(i)), p.place) for i, p in enumerate(self._parameter_list)}
        for key, table in self._accumulators.items():
            for pid, t in table.items():
                name, place = params[pid]
                out[f"{name}_{key}"] = Tensor(t.clone(), place, True)
        return out

    def set_state_dict(self, state_dict) -> None:
        for p in self._parameter_list:
            for key in list(self._accumulators) or self._state_keys():
                v = state_dict.get(f"{getattr(p, 'name', '')}_{key}")
                if v is not None:
                    arr = v.numpy() if isinstance(v, Tensor) else np.asarray(v)
                    t = _torch().from_numpy(np.ascontiguousarray(arr)).to(p._t.device)
                    self._accumulators.setdefault(key, {})[id(p._t)] = t

    def _state_keys(self) -> List[str]:
        return []


class SGD(Optimizer):
    _op = "sgd"

    def __init__(self, learning_rate=0.001, parameters=None, weight_decay=None, grad_clip=None, name=None) -> None:
        super().__init__(learning_rate, parameters, weight_decay, grad_clip, name)


class Momentum(Optimizer):
    _op = "momentum"

    def __init__(self, learning_rate=0.001, momentum=0.9, parameters=None, use_nesterov=False, weight_decay=None,
                 grad_clip=None, name=None) -> None:  # fmt: skip
        super().__init__(learning_rate, parameters, weight_decay, grad_clip, name)
        self._attrs = {"mu": float(momentum), "use_nesterov": bool(use_nesterov)}

    def _state_keys(self) -> List[str]:
        return ["velocity_0"]

    def _inputs(self, p, g, lr):
        v = self._state("velocity_0", p, lambda: _torch().zeros_like(p))
        return {"Param": [p], "Grad": [g], "Velocity": [v], "LearningRate": [lr]}, self._attrs


class Adam(Optimizer):
    _op = "adam"

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8, parameters=None, weight_decay=None,
                 grad_clip=None, name=None, lazy_mode=False) -> None:  # fmt: skip
        super().__init__(learning_rate, parameters, weight_decay, grad_clip, name)
        self._attrs = {"beta1": float(beta1), "beta2": float(beta2), "epsilon": float(epsilon), "lazy_mode": lazy_mode}

    def _state_keys(self) -> List[str]:
        return ["moment1_0", "moment2_0", "beta1_pow_acc_0", "beta2_pow_acc_0"]

    def _inputs(self, p, g, lr):
        torch = _torch()
        b1, b2 = self._attrs["beta1"], self._attrs["beta2"]
        ins = {
            "Param": [p],
            "Grad": [g],
            "LearningRate": [lr],
            "Moment1": [self._state("moment1_0", p, lambda: torch.zeros_like(p))],
            "Moment2": [self._state("moment2_0", p, lambda: torch.zeros_like(p))],
            "Beta1Pow": [
                self._state("beta1_pow_acc_0", p, lambda: torch.full([1], b1, dtype=p.dtype, device=p.device))
            ],
            "Beta2Pow": [
                self._state("beta2_pow_acc_0", p, lambda: torch.full([1], b2, dtype=p.dtype, device=p.device))
            ],
        }
        return ins, self._attrs

    def _store(self, p, outs) -> None:
        self._accumulators["beta1_pow_acc_0"][id(p)] = outs["Beta1PowOut"][0]
        self._accumulators["beta2_pow_acc_0"][id(p)] = outs["Beta2PowOut"][0]


def __getattr__(name):  # Paddle 2.x names fluidcompat lacks: what to use instead
    from fluidcompat.compat.names import module_getattr

    return module_getattr("paddle.optimizer")(name)
