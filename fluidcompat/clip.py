"""``fluid.clip``: gradient clipping by value, by norm and by global norm, as fluid 1.8 built it."""

from __future__ import annotations

from fluidcompat import framework
from fluidcompat.layer_helper import fluid_layers as layers
from fluidcompat.proto import VarType

__all__ = [
    "GradientClipByValue",
    "GradientClipByNorm",
    "GradientClipByGlobalNorm",
    "ErrorClipByValue",
    "error_clip_callback",
    "set_gradient_clip",
    "append_gradient_clip_ops",
]


class GradientClipBase:
    """Base class: calling it on ``[(param, grad)]`` appends the clip ops and returns the new pairs.
    ``need_clip(param) -> bool`` leaves out the parameters for which it is False."""

    def __init__(self, need_clip=None) -> None:
        if need_clip is not None and not callable(need_clip):
            raise TypeError(
                "The type of need_clip must be funciton, and it can filter out parameter that does't need gradient "
                "clip. This function must return True or False, and True means that clipping is required. Please "
                "refer to API documention of GradientClipByGlobalNorm / GradientClipByNorm /GradientClipByValue."
            )
        self._need_clip_func = need_clip

    def __call__(self, params_grads):
        with framework.name_scope("gradient_clip"):
            return self._static_clip(params_grads)

    def _static_clip(self, params_grads):
        raise NotImplementedError(f"{type(self).__name__} does not define how it clips")

    def _clipped(self, p) -> bool:
        need = getattr(self, "_need_clip_func", None)
        return getattr(p, "need_clip", True) and (need is None or bool(need(p)))


class GradientClipByValue(GradientClipBase):
    """Clip each gradient element to [min, max] (op ``clip``); ``min`` defaults to ``-max``."""

    def __init__(self, max: float, min: float = None, need_clip=None) -> None:
        super().__init__(need_clip)
        max = float(max)
        min = -max if min is None else float(min)
        if min > max:
            raise ValueError(f"max should be greater than min. Received: min={min}, max={max}")
        self.max, self.min = max, min

    def __str__(self) -> str:
        return f"Gradient Clip By Value, min = {self.min:f}, max={self.max:f}"

    def _static_clip(self, params_grads):
        result = []
        for p, g in params_grads:
            if g is None or not self._clipped(p):
                result.append((p, g))
                continue
            with p.block.program._optimized_guard([p, g]):
                result.append((p, layers.clip(x=g, min=self.min, max=self.max)))
        return result


class GradientClipByNorm(GradientClipBase):
    """Scale each gradient so its L2 norm is at most ``clip_norm`` (op ``clip_by_norm``)."""

    def __init__(self, clip_norm: float, need_clip=None) -> None:
        super().__init__(need_clip)
        self.clip_norm = float(clip_norm)

    def __str__(self) -> str:
        return f"Gradient Clip By Norm, clip_norm={self.clip_norm:f}"

    def _static_clip(self, params_grads):
        result = []
        for p, g in params_grads:
            if g is None or not self._clipped(p):
                result.append((p, g))
                continue
            with p.block.program._optimized_guard([p, g]):
                result.append((p, layers.clip_by_norm(x=g, max_norm=self.clip_norm)))
        return result


class GradientClipByGlobalNorm(GradientClipBase):
    """Scale all gradients by ``clip_norm / max(clip_norm, global_norm)``."""

    def __init__(self, clip_norm: float, group_name: str = "default_group", need_clip=None) -> None:
        super().__init__(need_clip)
        self.clip_norm = float(clip_norm)
        self.group_name = group_name

    def __str__(self) -> str:
        return f"Gradient Clip By GlobalNorm, global_norm={self.clip_norm:f}"

    def _static_clip(self, params_grads):
        squares = []
        last = None
        for p, g in params_grads:
            if g is None or not self._clipped(p):
                continue
            last = (p, g)
            with p.block.program._optimized_guard([p, g]):
                dense = g
                if g.type == VarType.SELECTED_ROWS:  # a sparse gradient: its rows, repeats summed
                    dense = layers.get_tensor_from_selected_rows(layers.merge_selected_rows(g))
                squares.append(layers.reduce_sum(input=layers.square(dense)))
        if not squares:
            return params_grads
        with last[0].block.program._optimized_guard(list(last)):
            global_norm = layers.sqrt(x=layers.sums(squares))
            max_norm = layers.fill_constant(shape=[1], dtype="float32", value=self.clip_norm)
            scale = layers.elementwise_div(x=max_norm, y=layers.elementwise_max(x=max_norm, y=global_norm))
        result = []
        for p, g in params_grads:
            if g is None or not self._clipped(p):
                result.append((p, g))
                continue
            with p.block.program._optimized_guard([p, g]):
                result.append((p, layers.elementwise_mul(x=g, y=scale)))
        return result


class BaseErrorClipAttr:
    """How the gradient of a variable (``var._set_error_clip(...)``) is clipped in the backward pass."""

    def _append_clip_op(self, block, grad_name: str) -> None:
        raise NotImplementedError()


class ErrorClipByValue(BaseErrorClipAttr):
    """Clip the gradient of the variable it is set on to [min, max] (min defaults to -max) as soon
    as the backward pass has made it, before it flows further back."""

    def __init__(self, max: float, min: float = None) -> None:
        self.max = float(max)
        self.min = -self.max if min is None else float(min)

    def __str__(self) -> str:
        return f"ByValue, min={self.min:f}, max={self.max:f}"

    def _append_clip_op(self, block, grad_name: str) -> None:
        block.append_op(
            type="clip",
            inputs={"X": [grad_name]},
            outputs={"Out": [grad_name]},
            attrs={"min": self.min, "max": self.max, "op_role": framework.OpRole.Backward},
        )


def error_clip_callback(block, context) -> None:
    """append_backward callback (the one minimize passes): after a grad op, clip each gradient it
    made whose forward variable has an error clip."""
    op = context["__current_op_desc__"]
    for grad in [n for n in op.output_arg_names() if n in context]:
        fwd = block._var_recursive(context[grad])
        error_clip = getattr(fwd, "error_clip", None)
        if error_clip is None:
            continue
        if not isinstance(error_clip, BaseErrorClipAttr):
            raise TypeError(
                "Variable's error_clip should be an instance of BaseErrorClipAttr or None. "
                f"Received: {type(error_clip).__name__} on variable '{fwd.name}'"
            )
        error_clip._append_clip_op(block, grad)


def set_gradient_clip(clip, param_list=None, program=None) -> None:
    """Clip the gradients of ``param_list`` (default: all parameters) of ``program`` with ``clip``
    in every optimizer that has no ``grad_clip`` of its own."""
    framework._warn_at_user(
        "Caution! 'set_gradient_clip' is not recommended and may be deprecated in future! We recommend a new "
        "strategy: set 'grad_clip' when initializing the 'optimizer'. This method can reduce the mistakes, please "
        "refer to documention of 'optimizer'."
    )
    if not isinstance(clip, GradientClipBase):
        raise TypeError("'clip' should be an instance of GradientClipBase's derived class")
    program = program or framework.default_main_program()
    names = None if param_list is None else {p if isinstance(p, str) else p.name for p in param_list}
    program._gradient_clip = (clip, names)


def append_gradient_clip_ops(params_grads):
    """Apply the clip set by ``set_gradient_clip`` (if any) to ``params_grads``."""
    if not params_grads:
        return params_grads
    program = params_grads[0][0].block.program
    setting = getattr(program, "_gradient_clip", None)
    if setting is None:
        return params_grads
    clip, names = setting
    chosen = [(p, g) for p, g in params_grads if names is None or p.name in names]
    if len(chosen) != len(params_grads):
        framework._warn_at_user(
            f"set_gradient_clip: clipping the gradients of {sorted(p.name for p, _ in chosen)} only. fluid 1.8.5 "
            "clipped no gradient at all when param_list left out a parameter that has one."
        )
    clipped = dict((p.name, g) for p, g in clip(chosen))
    return [(p, clipped.get(p.name, g)) for p, g in params_grads]


def __getattr__(name):  # fluid 1.8 names fluidcompat lacks: UnsupportedAPIError
    if name.startswith("__"):
        raise AttributeError(name)
    from fluidcompat.fluid18_names import unsupported

    return unsupported("paddle.fluid.clip")(name)
