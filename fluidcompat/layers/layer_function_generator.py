"""``fluid.layers.layer_function_generator``: layer functions made from an op type's proto.

``generate_layer_fn(op_type)`` gives ``fn(*args, **kwargs)``: each input slot is taken from the
keyword of its snake_case name (``ScaleTensor`` -> ``scale_tensor``) or else from the next positional
argument; ``out=`` names the output variable (else a new one, of the inputs' dtype, or ``dtype=``, or
float32); ``act=`` appends an activation; the other keywords that the op declares are its attributes
(fluid dropped the rest, such as ``name``, the same way).
"""

from __future__ import annotations

import re

from fluidcompat.dtypes import to_vartype
from fluidcompat.framework import Variable, layer
from fluidcompat.layer_helper import LayerHelper
from fluidcompat_ops.protos import get_op_proto

__all__ = ["generate_layer_fn", "generate_activation_fn"]


def _snake(name: str) -> str:
    """``ScaleTensor`` -> ``scale_tensor``, ``X`` -> ``x`` (fluid's keyword names for op slots)."""
    s = re.sub(r"(.)([A-Z][a-z]+)", r"\1_\2", name)
    return re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", s).lower()


def generate_layer_fn(op_type: str):
    """A layer function for ``op_type``, whose proto must have one non-intermediate, non-duplicable
    output (and no duplicable intermediate one)."""
    proto = get_op_proto(op_type)
    main = [o for o in proto.outputs if not o.intermediate]
    extra = [o for o in proto.outputs if o.intermediate]
    if len(main) != 1:
        raise ValueError(
            f"generate_layer_fn: {op_type} has {len(main)} non-intermediate outputs "
            f"{[o.name for o in main]}; only an op with one can be generated"
        )
    if main[0].duplicable or any(o.duplicable for o in extra):
        raise ValueError(f"generate_layer_fn: {op_type} has a duplicable output; only ops without can be generated")
    out_slot = main[0].name
    declared = {a.name for a in proto.attrs}

    def fn(*args, **kwargs):
        rest = list(args)
        inputs, dtype = {}, None
        for slot in proto.inputs:
            value = kwargs.pop(_snake(slot.name), [])
            value = list(value) if isinstance(value, (list, tuple)) else [value]
            if not value and rest:
                value = [rest.pop(0)]
            for v in value:
                if not isinstance(v, Variable):
                    raise ValueError(
                        f"input of {op_type} must be variable. Received: {type(v).__name__} for {slot.name}"
                    )
                if dtype is None:
                    dtype = v.dtype
                elif v.dtype != dtype:
                    raise ValueError(f"operator {op_type} must input same dtype. {dtype} vs {v.dtype}")
            inputs[slot.name] = value
        if dtype is None:
            dtype = to_vartype(kwargs["dtype"]) if kwargs.get("dtype") is not None else to_vartype("float32")
        helper = LayerHelper(op_type, **kwargs)
        out = kwargs.pop(_snake(out_slot), None)
        if isinstance(out, (list, tuple)):
            out = out[0] if out else None
        if out is None:
            out = helper.create_variable_for_type_inference(dtype=dtype)
        outputs = {out_slot: [out]}
        for o in extra:
            outputs[o.name] = [helper.create_variable_for_type_inference(dtype=dtype)]
        attrs = {k: v for k, v in kwargs.items() if k in declared}
        helper.append_op(type=op_type, inputs=inputs, outputs=outputs, attrs=attrs)
        return helper.append_activation(out)

    fn.__name__ = fn.__qualname__ = op_type
    fn.__doc__ = f"The ``{op_type}`` op as a layer (inputs {[i.name for i in proto.inputs]}, output {out_slot})."
    return layer(fn)


def generate_activation_fn(op_type: str):
    """``fn(x, name=None)``: the one-input op ``op_type`` (``X`` -> ``Out``) as a layer."""
    from fluidcompat.layers.activation import _activation

    def fn(x, name=None):
        return _activation(op_type, x, name=name)

    fn.__name__ = fn.__qualname__ = op_type
    fn.__doc__ = f"Elementwise ``{op_type}`` (op ``{op_type}``)."
    return layer(fn)
