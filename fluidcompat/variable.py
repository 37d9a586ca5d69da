"""fluid's Variable and Parameter: a named slot of a Block (shape, dtype, persistable, stop_gradient),
and a trained one. Floor 2, below ``framework`` (which re-exports both): a Variable reaches its block
and program through ``var.block``.
"""

from __future__ import annotations

import sys
from typing import Any, Callable, Dict, Optional, Sequence, Tuple

from fluidcompat import descs, unique_name
from fluidcompat.callsite import LIB_DIRS
from fluidcompat.dtypes import VarType, np_name, to_vartype

# Whether a declarative function is building a static program (NOTE: [Declarative]): set by
# fluidcompat.dygraph.jit on its import; None before, when no such build can be running.
in_declarative_build: Optional[Callable[[], bool]] = None

GRAD_VAR_SUFFIX = "@GRAD"


def _shape_tuple(shape) -> Tuple[int, ...]:
    if shape is None:
        return ()
    return tuple(-1 if d is None else int(d) for d in shape)


def _refuse_set(name: str):
    def refuse(var, value) -> None:
        raise AttributeError(
            f"can't set attribute '{name}' of Variable '{var.name}': a variable keeps the {name} it was created "
            "with (fluid 1.8's is read-only too); make a new variable, e.g. with fluid.layers.reshape / cast"
        )

    return refuse


class Variable:
    """A named slot in a Block: shape, dtype, persistable, stop_gradient.

    Compat: ``str(var)`` is the readable one-line form; fluid 1.8 printed the protobuf text.
    """

    __module__ = "fluidcompat.framework"  # fluid's framework.Variable, as type names in errors show it
    __hash__ = object.__hash__

    def __init__(
        self,
        block,
        type: VarType = VarType.LOD_TENSOR,
        name: Optional[str] = None,
        shape: Optional[Sequence[int]] = None,
        dtype=None,
        lod_level: Optional[int] = None,
        capacity=None,
        persistable: Optional[bool] = None,
        error_clip=None,
        stop_gradient: bool = False,
        is_data: bool = False,
        need_check_feed: bool = False,
        belong_to_optimizer: bool = False,
        **kwargs: Any,
    ) -> None:
        self.block = block
        self.name = name if name is not None else unique_name.generate("_generated_var")
        self.type = type
        self._shape = _shape_tuple(shape)
        self._dtype = to_vartype(dtype) if dtype is not None else VarType.FP32
        self._lod_level = lod_level if lod_level is not None else 0
        self.persistable = bool(persistable)
        self.stop_gradient = stop_gradient
        self.is_data = is_data
        self.need_check_feed = need_check_feed
        self.error_clip = error_clip
        self.belong_to_optimizer = belong_to_optimizer
        self.op: Any = None  # the Operator that wrote it last (framework.Operator)

    @property
    def grad_name(self) -> str:
        return self.name + GRAD_VAR_SUFFIX

    def _set_error_clip(self, error_clip) -> None:
        """Clip this variable's gradient in the backward pass minimize appends (``clip.ErrorClipByValue``)."""
        self.error_clip = error_clip

    # dygraph's VarBase methods, which a static Variable refuses with fluid's message
    def _dygraph_only(name: str):  # noqa: N805  (a function making methods)
        def refuse(self, *args, **kwargs):
            raise ValueError(
                f"'{name}' should be called by imperative Varible in imperative mode, please use "
                "fluid.dygraph.guard() as context to run it in imperative mode"
            )

        refuse.__name__ = name
        return refuse

    numpy = _dygraph_only("numpy")
    backward = _dygraph_only("backward")
    gradient = _dygraph_only("gradient")
    clear_gradient = _dygraph_only("clear_gradient")
    detach = _dygraph_only("detach")
    set_value = _dygraph_only("set_value")
    del _dygraph_only

    # read-only, as in fluid 1.8 (its properties have no setter): fluidcompat itself sets the _ names
    shape = property(lambda self: self._shape, _refuse_set("shape"))
    dtype = property(lambda self: self._dtype, _refuse_set("dtype"))
    lod_level = property(lambda self: self._lod_level, _refuse_set("lod_level"))

    # fluid exposes these through the desc; scripts call them.
    def _set_shape(self, shape) -> None:
        self._shape = _shape_tuple(shape)

    @property
    def desc(self) -> "descs.VarDesc":
        return descs.VarDesc(self)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def _type_text(self) -> str:
        if self.type == VarType.LOD_TENSOR or self.type == VarType.SELECTED_ROWS:
            return (
                f"{self.type.name}.shape{tuple(self.shape)}.dtype({np_name(self.dtype)})"
                f".stop_gradient({self.stop_gradient})"
            )
        return self.type.name

    def to_string(self, throw_on_error: bool = True, with_details: bool = False) -> str:
        prefix = "persist " if self.persistable else ""
        return f"{prefix}var {self.name} : {self._type_text()}"

    def __str__(self) -> str:
        return self.to_string()

    __repr__ = __str__

    def __bool__(self) -> bool:
        # a Variable is true, as in fluid 1.8, except as a condition in a declarative function built
        # into a static program where fluidcompat did not translate it (NOTE: [Declarative])
        if (
            in_declarative_build is not None
            and in_declarative_build()
            and not sys._getframe(1).f_code.co_filename.startswith(LIB_DIRS)
        ):
            raise TypeError(
                f"Variable '{self.name}' is used as a Python condition (if / while / and / or / not) in a "
                "declarative function built into a static-graph program, where fluidcompat does not translate "
                "it into cond / while ops (a loop that returns, a while with else, a for loop, a condition "
                "in a nested function or outside if / while): write it with "
                "fluid.layers.cond / while_loop, or call the function in dygraph mode"
            )
        return True

    def _copy_to(self, block) -> "Variable":
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__)
        new.block = block
        new.op = None
        return new


class Parameter(Variable):
    """A persistable, trainable Variable created by a layer or ``create_parameter``."""

    __module__ = "fluidcompat.framework"

    def __init__(self, block, shape, dtype, **kwargs: Any) -> None:
        self.trainable = self._take_attrs(shape, dtype, kwargs)
        super().__init__(block, persistable=True, shape=shape, dtype=dtype, **kwargs)
        self.stop_gradient = not self.trainable

    def _take_attrs(self, shape, dtype, kwargs) -> bool:
        """Check the shape and dtype, and take the optimizer's attributes out of ``kwargs``; returns
        ``trainable`` (a dygraph ParamBase keeps it as ``not stop_gradient``)."""
        if shape is None:
            raise ValueError("The shape of Parameter should not be None")
        if dtype is None:
            raise ValueError("The dtype of Parameter should not be None")
        for d in shape:
            if d is None or int(d) < 0:
                raise ValueError(
                    f"Each dimension of a Parameter's shape must be greater than 0. Received: shape={list(shape)}"
                )
        self.optimize_attr = kwargs.pop("optimize_attr", {"learning_rate": 1.0})
        self.regularizer = kwargs.pop("regularizer", None)
        self.gradient_clip_attr = kwargs.pop("gradient_clip_attr", None)
        self.do_model_average = kwargs.pop("do_model_average", None)
        self.is_distributed = kwargs.pop("is_distributed", False)
        return kwargs.pop("trainable", True)

    def to_string(self, throw_on_error: bool = True, with_details: bool = False) -> str:
        tr = "trainable " if self.trainable else ""
        return f"persist {tr}param {self.name} : {self._type_text()}"

    __str__ = to_string
    __repr__ = to_string


# What a variable created again is checked for: (argument, its normal form, the variable's, fluid's
# words before "previous", what fluid calls it, fluid's ending); the spacing and full stops are fluid's.
_RECREATE_CHECKS = (
    ("type", VarType, lambda v: v.type, " The", "type", ""),
    ("shape", _shape_tuple, lambda v: tuple(v.shape), " the", "shape", "."),
    ("dtype", to_vartype, lambda v: v.dtype, " The", "data type", "."),
    ("lod_level", int, lambda v: v.lod_level, " The", "lod_level", ""),
    ("persistable", bool, lambda v: v.persistable, "The", "persistable", ""),
)


def _check_recreated(var: Variable, kwargs: Dict[str, Any]) -> None:
    """A variable created again by name must agree with the first in what the new call states
    (type, shape, dtype, lod_level, persistable), as fluid 1.8 checks, with its messages. Nothing is
    changed either way."""
    for key, normal, current, opening, what, ending in _RECREATE_CHECKS:
        if kwargs.get(key) is None:
            continue
        old, new = current(var), normal(kwargs[key])
        if new != old:
            raise ValueError(
                f"Variable {var.name} has been created before.{opening} previous {what} is {old}; the new {what} "
                f"is {new}. They are not matched{ending}"
            )
