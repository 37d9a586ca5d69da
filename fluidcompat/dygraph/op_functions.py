"""``core.ops``: fluid 1.8's op functions for dygraph mode, ``core.ops.<type>(*inputs, *attrs)``.

Each takes the op's inputs positionally in its proto's order (a VarBase, a list of them for a
duplicable slot, or None for a slot left out), then its attributes as name, value pairs
(``core.ops.scale(x, "scale", 2.0)``), runs the op as ``block.append_op`` does in dygraph mode, and
returns its output VarBases in the proto's order: one VarBase (a list for a duplicable slot) where
the op has one output, a tuple where it has several.
"""

from __future__ import annotations

from fluidcompat_ops import protos


def _call(op_type: str, args):
    from fluidcompat import framework
    from fluidcompat.dygraph import base

    if base.current_tracer() is None:
        raise ValueError(f"core.ops.{op_type} runs only in dygraph mode (inside fluid.dygraph.guard())")
    proto = protos.get_op_proto(op_type)
    args = list(args)
    inputs = {}
    for slot in proto.inputs:
        if not args or isinstance(args[0], str):
            break
        value = args.pop(0)
        if value is not None:
            inputs[slot.name] = list(value) if isinstance(value, (list, tuple)) else [value]
    if len(args) % 2:
        raise ValueError(f"core.ops.{op_type}: attributes come as name, value pairs. Received: {args}")
    attrs = dict(zip(args[0::2], args[1::2]))
    block = framework.default_main_program().current_block()
    outputs = {}
    for slot in proto.outputs:
        count = len(inputs.get(slot.name, ())) or 1  # (a duplicable output as many as there are inputs)
        made = [block.create_var(stop_gradient=False) for _ in range(count if slot.duplicable else 1)]
        outputs[slot.name] = made
    block.append_op(type=op_type, inputs=inputs, outputs=outputs, attrs=attrs)
    result = [outputs[s.name] if s.duplicable else outputs[s.name][0] for s in proto.outputs]
    return result[0] if len(result) == 1 else tuple(result)


class OpFunctions:
    """``core.ops``: an attribute per op type (fluid 1.8's generated functions)."""

    def __getattr__(self, op_type: str):
        if op_type.startswith("__") or not protos.has_proto(op_type):
            raise AttributeError(f"module 'paddle.fluid.core.ops' has no attribute '{op_type}'")

        def op_function(*args):
            return _call(op_type, args)

        op_function.__name__ = op_type
        return op_function

    def __dir__(self):
        return protos.all_proto_types()
