"""``paddle.fluid.op``: fluid's ``Operator`` factory, one op built by hand and run on a scope, and the
``OpDesc`` builder of fluid's ``framework.proto`` messages.

``Operator("scale", X="x", Out="out", scale=2.0)`` makes an op of that type whose slots name
variables of a scope; ``op.run(scope, place)`` reads its inputs from the scope and writes its outputs
there, as fluid's C++ operator did. Keyword arguments are the op proto's slots (a name or a list of
names) and attributes. fluidcompat runs the op as a one-op program whose variables are the scope's
(all persistable), prepared once for each signature of its inputs (shapes, dtypes, LoD levels).

``get_all_op_protos()`` gives every op type's proto as a ``framework_pb2.OpProto`` message, and
``OpDescCreationMethod(op_proto)(**kwargs)`` makes a ``framework_pb2.OpDesc`` from keyword arguments
as fluid's did. Both import protobuf when called, not when this module is imported.
"""

from __future__ import annotations

from typing import Any, Dict, List, Tuple

from fluidcompat.dtypes import VarType
from fluidcompat_ops import protos
from fluidcompat_ops.grad import SelectedRows

__all__ = ["Operator", "OperatorFactory", "OpDescCreationMethod", "get_all_op_protos"]


def _pb_op_proto(proto: protos.OpProto):
    """One of fluidcompat's op protos as a ``framework_pb2.OpProto`` message."""
    from fluidcompat.proto import framework_pb2

    msg = framework_pb2.OpProto(type=proto.type, comment=proto.comment or "")
    for slots, into in ((proto.inputs, msg.inputs), (proto.outputs, msg.outputs)):
        for v in slots:
            into.add(
                name=v.name, comment=v.comment or "", duplicable=v.duplicable,
                intermediate=v.intermediate, dispensable=v.dispensable,
            )  # fmt: skip
    for a in proto.attrs:
        msg.attrs.add(name=a.name, type=a.type, comment=a.comment or "", generated=a.generated)
    return msg


def get_all_op_protos() -> list:
    """Every op type's proto as a ``framework_pb2.OpProto`` (fluid's ``paddle.fluid.op.get_all_op_protos``):
    fluid 1.8.5's op types and the forward ops fluidcompat adds, by type name."""
    return [_pb_op_proto(protos.get_op_proto(t)) for t in protos.all_proto_types()]


# framework.proto's AttrType code -> (OpDesc.Attr field, whether it is repeated)
_ATTR_FIELDS = {
    0: ("i", False),  # INT
    1: ("f", False),  # FLOAT
    2: ("s", False),  # STRING
    3: ("ints", True),  # INTS
    4: ("floats", True),  # FLOATS
    5: ("strings", True),  # STRINGS
    6: ("b", False),  # BOOLEAN
    7: ("bools", True),  # BOOLEANS
    9: ("l", False),  # LONG
    11: ("longs", True),  # LONGS
}


def _plain(value):
    """numpy arrays and scalars as Python lists and numbers (what protobuf's fields take)."""
    if hasattr(value, "tolist") and type(value).__module__ == "numpy":
        return value.tolist()
    return value


class OpDescCreationMethod:
    """``OpDescCreationMethod(op_proto)``: called with keyword arguments, gives the
    ``framework_pb2.OpDesc`` of an op of ``op_proto``'s type, as fluid's did.

    Every input and output slot of the proto gets an entry, in the proto's order, holding the names
    the keyword argument of its name gives (one name or a list; none when it is absent); a slot that
    is not duplicable takes at most one name. Attributes the keyword arguments give (not ``None``) are
    set with the proto's type, in the proto's order; generated attributes and keyword arguments that
    are neither a slot nor an attribute are left out.
    """

    def __init__(self, op_proto) -> None:
        from fluidcompat.proto import framework_pb2

        if not isinstance(op_proto, framework_pb2.OpProto):
            raise TypeError(
                "Type of op_proto should be OpProto in PaddlePaddle (paddle.fluid.proto.framework_pb2.OpProto). "
                f"Received: {type(op_proto).__name__}"
            )
        self.__op_proto__ = op_proto

    def __call__(self, *args, **kwargs):
        from fluidcompat.proto import framework_pb2

        if args:
            raise ValueError(f"Only keyword arguments are supported. Received {len(args)} positional: {args!r}")
        proto = self.__op_proto__
        op_desc = framework_pb2.OpDesc()
        for kind, slots, into in (("Input", proto.inputs, op_desc.inputs), ("Output", proto.outputs, op_desc.outputs)):
            for slot in slots:
                names = kwargs.get(slot.name)
                if names is None:
                    names = []
                elif isinstance(names, str) or not hasattr(names, "__iter__"):
                    names = [names]
                else:
                    names = list(names)
                if not slot.duplicable and len(names) > 1:
                    raise ValueError(
                        f"{kind} {slot.name} expects only one {kind.lower()}, but {len(names)} are given. "
                        f"Received: {names} (op {proto.type}; the slot is not duplicable)"
                    )
                bad = [n for n in names if not isinstance(n, str)]
                if bad:
                    raise TypeError(
                        f"{kind} {slot.name} of op {proto.type} takes variable names (str). "
                        f"Received: {bad[0]!r} ({type(bad[0]).__name__})"
                    )
                var = into.add()
                var.parameter = slot.name
                var.arguments.extend(names)
        op_desc.type = proto.type
        for attr in proto.attrs:
            value = kwargs.get(attr.name)
            if attr.generated or value is None:
                continue
            field = _ATTR_FIELDS.get(attr.type)
            if field is None:
                raise NotImplementedError(
                    f"A not supported attribute type: {framework_pb2.AttrType.Name(attr.type)} "
                    f"(attribute {attr.name} of op {proto.type}); OpDescCreationMethod sets "
                    f"{', '.join(framework_pb2.AttrType.Name(t) for t in _ATTR_FIELDS)}."
                )
            new_attr = op_desc.attrs.add()
            new_attr.name = attr.name
            new_attr.type = attr.type
            name, repeated = field
            value = _plain(value)
            try:
                if repeated:
                    getattr(new_attr, name).extend([_plain(v) for v in value])
                else:
                    setattr(new_attr, name, value)
            except (TypeError, ValueError) as e:
                raise type(e)(
                    f"Attribute {attr.name} of op {proto.type} is {framework_pb2.AttrType.Name(attr.type)}. "
                    f"Received: {value!r} ({e})"
                ) from None
        return op_desc


class ScopeOperator:
    """One op over a scope's variables (fluid's ``core.Operator``)."""

    def __init__(self, op_type: str, inputs: Dict[str, List[str]], outputs: Dict[str, List[str]], attrs: dict):
        self._type = op_type
        self._inputs = inputs
        self._outputs = outputs
        self._attrs = attrs
        self._programs: Dict[Any, Any] = {}

    # fluid's accessors
    def type(self) -> str:
        return self._type

    def input(self, name: str) -> str:
        names = self._inputs[name]
        if len(names) != 1:
            raise ValueError(f"Op {self._type}'s input {name} should contain only one variable.")
        return names[0]

    def output(self, name: str) -> str:
        names = self._outputs[name]
        if len(names) != 1:
            raise ValueError(f"Op {self._type}'s output {name} should contain only one variable.")
        return names[0]

    def inputs(self) -> Dict[str, List[str]]:
        return {k: list(v) for k, v in self._inputs.items()}

    def outputs(self) -> Dict[str, List[str]]:
        return {k: list(v) for k, v in self._outputs.items()}

    def input_vars(self) -> List[str]:
        return [n for names in self._inputs.values() for n in names]

    def output_vars(self) -> List[str]:
        return [n for names in self._outputs.values() for n in names]

    def no_intermediate_outputs(self) -> List[str]:
        proto = protos.get_op_proto(self._type)
        inter = {o.name for o in proto.outputs if o.intermediate}
        return [n for slot, names in self._outputs.items() if slot not in inter for n in names]

    def attr(self, name: str):
        return self._attrs[name]

    def support_gpu(self) -> bool:
        return True

    def __str__(self) -> str:
        """fluid's ``OperatorBase::DebugString``: every slot of the op's proto, by name, with the
        variables it names (none for a slot left out); no attributes."""
        proto = protos.get_op_proto(self._type)

        def slots(given, declared):
            names = sorted({v.name for v in declared} | set(given))
            return ", ".join(f"{k}[{', '.join(given.get(k, []))}]" for k in names)

        ins, outs = slots(self._inputs, proto.inputs), slots(self._outputs, proto.outputs)
        return f"Op({self._type}), inputs:{{{ins}}}, outputs:{{{outs}}}."

    __repr__ = __str__

    # running
    def _signature(self, scope) -> Tuple:
        sig = []
        for n in self.input_vars():
            sv = scope.find_var(n)
            t = sv.tensor._t if sv is not None else None
            rows = isinstance(t, SelectedRows)
            sig.append(None if t is None else (tuple(t.shape), t.dtype, len(sv.tensor._lod), rows))
        return tuple(sig)

    def _program(self, scope, sig):
        from fluidcompat.executor.scope import vartype_of_dtype
        from fluidcompat.framework import Program

        prog = Program()
        block = prog.global_block()
        for n, s in zip(self.input_vars(), sig):
            if block.has_var(n):
                continue
            if s is None:
                block.create_var(name=n, persistable=True)
            else:
                shape, dtype, lod_level, rows = s
                block.create_var(
                    name=n, shape=list(shape), dtype=vartype_of_dtype(dtype), lod_level=lod_level,
                    type=VarType.SELECTED_ROWS if rows else VarType.LOD_TENSOR, persistable=True,
                )  # fmt: skip
        for n in self.output_vars():
            if not block.has_var(n):
                block.create_var(name=n, persistable=True)
        block.append_op(type=self._type, inputs=self._inputs, outputs=self._outputs, attrs=dict(self._attrs))
        return prog

    def run(self, scope, place) -> None:
        """Run the op once: inputs from ``scope``, outputs written into it."""
        from fluidcompat.executor.executor import Executor

        sig = self._signature(scope)
        prog = self._programs.get(sig)
        if prog is None:
            if len(self._programs) > 16:
                self._programs.clear()
            prog = self._programs[sig] = self._program(scope, sig)
        key = type(place).__name__, getattr(place, "_device_id", None)
        exe = self.__dict__.get("_exe")
        if exe is None or self.__dict__.get("_exe_key") != key:
            exe = self._exe = Executor(place)
            self._exe_key = key
        exe.run(prog, feed={}, fetch_list=[], scope=scope)


class OperatorFactory:
    """``Operator(type, **slots_and_attrs)``: an op of ``type`` over a scope's variables."""

    def __call__(self, *args, **kwargs) -> ScopeOperator:
        if args:
            if len(args) != 1 or "type" in kwargs:
                raise ValueError("Operator takes only the op type as a positional argument")
            kwargs["type"] = args[0]
        op_type = kwargs.pop("type", None)
        if not isinstance(op_type, str):
            raise ValueError(f"Operator's type should be a string. Received: {op_type!r}")
        proto = self.get_op_info(op_type)
        inputs: Dict[str, List[str]] = {}
        outputs: Dict[str, List[str]] = {}
        for slots, into in ((proto.inputs, inputs), (proto.outputs, outputs)):
            for slot in slots:
                value = kwargs.pop(slot.name, None)
                if value is None:
                    continue
                names = [value] if isinstance(value, str) else list(value)
                if not slot.duplicable and len(names) > 1:
                    kind = "input" if into is inputs else "output"
                    raise ValueError(
                        f"{kind.capitalize()} {slot.name} expects only one {kind}, but {len(names)} are given. "
                        f"Received: {names} (op {op_type}; the slot is not duplicable)"
                    )
                into[slot.name] = [str(n) for n in names]
        return ScopeOperator(op_type, inputs, outputs, kwargs)

    @staticmethod
    def types() -> List[str]:
        return protos.all_proto_types()

    @staticmethod
    def get_op_info(op_type: str):
        if not protos.has_proto(op_type):
            raise ValueError(f"The operator: {op_type} is not registered.")
        return protos.get_op_proto(op_type)

    @staticmethod
    def get_op_input_names(op_type: str) -> List[str]:
        return [v.name for v in OperatorFactory.get_op_info(op_type).inputs]

    @staticmethod
    def get_op_output_names(op_type: str) -> List[str]:
        return [v.name for v in OperatorFactory.get_op_info(op_type).outputs]

    @staticmethod
    def get_op_inputs(op_type: str) -> List[Tuple[str, bool]]:
        return [(v.name, v.duplicable) for v in OperatorFactory.get_op_info(op_type).inputs]

    @staticmethod
    def get_op_outputs(op_type: str) -> List[Tuple[str, bool]]:
        return [(v.name, v.duplicable) for v in OperatorFactory.get_op_info(op_type).outputs]

    @staticmethod
    def get_op_attr_names(op_type: str) -> List[str]:
        return [a.name for a in OperatorFactory.get_op_info(op_type).attrs]


Operator = OperatorFactory()
