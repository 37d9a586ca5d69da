"""``fluid.regularizer``: L1/L2 weight decay added to gradients as fluid 1.8 did (``scale``/``sign`` + ``sum``)."""

from __future__ import annotations

import logging

from fluidcompat import framework
from fluidcompat.dtypes import VarType

__all__ = ["L1Decay", "L2Decay", "L1DecayRegularizer", "L2DecayRegularizer", "append_regularization_ops"]


class WeightDecayRegularizer:
    """Base class: ``__call__(param, grad, block)`` appends ops and returns the decay term."""

    def __call__(self, param, grad, block):
        raise NotImplementedError(f"{type(self).__name__} does not define its decay term")


class L2DecayRegularizer(WeightDecayRegularizer):
    """Adds ``coeff * param`` to the gradient."""

    def __init__(self, regularization_coeff: float = 0.0) -> None:
        self._regularization_coeff = regularization_coeff

    def __call__(self, param, grad, block):
        decay = block.create_var(dtype=param.dtype, shape=param.shape, lod_level=param.lod_level)
        block.append_op(
            type="scale",
            inputs={"X": [param]},
            outputs={"Out": [decay]},
            attrs={"scale": self._regularization_coeff},
        )
        return decay

    def __str__(self) -> str:
        return f"L2Decay, regularization_coeff={self._regularization_coeff:f}"


class L1DecayRegularizer(WeightDecayRegularizer):
    """Adds ``coeff * sign(param)`` to the gradient."""

    def __init__(self, regularization_coeff: float = 0.0) -> None:
        self._regularization_coeff = regularization_coeff

    def __call__(self, param, grad, block):
        decay = block.create_var(dtype=param.dtype, shape=param.shape, lod_level=param.lod_level)
        block.append_op(type="sign", inputs={"X": [param]}, outputs={"Out": [decay]})
        block.append_op(
            type="scale",
            inputs={"X": [decay]},
            outputs={"Out": [decay]},
            attrs={"scale": self._regularization_coeff},
        )
        return decay

    def __str__(self) -> str:
        return f"L1Decay, regularization_coeff={self._regularization_coeff:f}"


L1Decay = L1DecayRegularizer
L2Decay = L2DecayRegularizer


def append_regularization_ops(parameters_and_grads, regularization=None):
    """Add each parameter's decay term to its gradient; a ParamAttr regularizer wins over ``regularization``."""
    result = []
    warned = False
    with framework.name_scope("regularization"):  # one scope for all, opened every time as fluid did
        for param, grad in parameters_and_grads:
            if grad is None:
                result.append((param, grad))
                continue
            with param.block.program._optimized_guard([param, grad]):
                reg = param.regularizer if param.regularizer is not None else regularization
                if param.regularizer is not None and regularization is not None and not warned:
                    warned = True  # (fluid 1.8 logged it at INFO on the root logger: silent unless configured)
                    logging.info(
                        "If regularizer of a Parameter has been set by 'fluid.ParamAttr' or "
                        "'fluid.WeightNormParamAttr' already. The Regularization[%s] in Optimizer will not take "
                        "effect, and it will only be applied to other Parameters!" % regularization
                    )
                if reg is None:
                    result.append((param, grad))
                    continue
                block = grad.block
                term = reg(param, grad, block)
                new_grad = grad
                if grad.type == VarType.SELECTED_ROWS:
                    new_grad = block.create_var(
                        name=grad.name + "@NEWGRAD", dtype=param.dtype, shape=param.shape, type=VarType.LOD_TENSOR
                    )
                block.append_op(type="sum", inputs={"X": [grad, term]}, outputs={"Out": [new_grad]})
                result.append((param, new_grad))
    return result


def __getattr__(name):  # fluid 1.8 names fluidcompat lacks: UnsupportedAPIError
    if name.startswith("__"):
        raise AttributeError(name)
    from fluidcompat.fluid18_names import unsupported

    return unsupported("paddle.fluid.regularizer")(name)
