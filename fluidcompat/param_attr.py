"""``fluid.ParamAttr``: how a layer creates its parameters."""

from __future__ import annotations

from typing import Any, Dict, Optional


class ParamAttr:
    """Name, initializer, learning rate, regularizer and trainability of a parameter."""

    def __init__(
        self,
        name: Optional[str] = None,
        initializer=None,
        learning_rate: float = 1.0,
        regularizer=None,
        trainable: bool = True,
        do_model_average: bool = True,
    ) -> None:
        if name is not None and not isinstance(name, str):
            raise TypeError(f"The type of 'name' in ParamAttr must be str, but received {type(name)}.")
        self.name = name
        self.initializer = initializer
        self.learning_rate = learning_rate
        self.regularizer = regularizer
        self.trainable = trainable
        self.do_model_average = do_model_average

    def _set_default_initializer(self, initializer) -> None:
        if self.initializer is None:
            self.initializer = initializer

    def _to_kwargs(self, with_initializer: bool = False) -> Dict[str, Any]:
        kwargs = {
            "name": self.name,
            "optimize_attr": {"learning_rate": self.learning_rate},
            "regularizer": self.regularizer,
            "trainable": self.trainable,
            "do_model_average": self.do_model_average,
        }
        if with_initializer:
            kwargs["initializer"] = self.initializer
        return kwargs

    @staticmethod
    def _to_attr(arg):
        """Normalise what layers accept for param_attr/bias_attr: None, str, Initializer, ParamAttr, bool."""
        from fluidcompat.initializer import Initializer

        if arg is None:
            return ParamAttr()
        if isinstance(arg, (list, tuple)):
            return [ParamAttr._to_attr(a) for a in arg]
        if isinstance(arg, ParamAttr):
            return arg
        if isinstance(arg, str):
            return ParamAttr(name=arg)
        if isinstance(arg, Initializer):
            return ParamAttr(initializer=arg)
        if isinstance(arg, bool):
            return ParamAttr() if arg else False
        raise TypeError(f"{type(arg)} cast to ParamAttr")


class WeightNormParamAttr(ParamAttr):
    """A parameter ``w = g * v / ||v||`` (the norm over every dim but ``dim``) trained as ``g`` and
    ``v``, as fluid 1.8 built it in static programs (``LayerHelper._weight_normalized``); in dygraph
    mode a plain parameter."""

    # every weight-normalised parameter made, as fluid 1.8 kept them
    params_with_weight_norm: list = []

    def __init__(self, dim=None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.dim = dim


def __getattr__(name):  # fluid 1.8 names fluidcompat lacks: UnsupportedAPIError
    if name.startswith("__"):
        raise AttributeError(name)
    from fluidcompat.fluid18_names import unsupported

    return unsupported("paddle.fluid.param_attr")(name)
