"""``paddle.fluid.op``: fluid's ``Operator`` factory, one op built by hand and run on a scope.

``Operator("scale", X="x", Out="out", scale=2.0)`` makes an op of that type whose slots name
variables of a scope; ``op.run(scope, place)`` reads its inputs from the scope and writes its outputs
there, as fluid's C++ operator did. Keyword arguments are the op proto's slots (a name or a list of
names) and attributes. fluidcompat runs the op as a one-op program whose variables are the scope's
(all persistable), prepared once for each signature of its inputs (shapes, dtypes, LoD levels).
"""

from __future__ import annotations

from typing import Any, Dict, List, Tuple

from fluidcompat.dtypes import VarType
from fluidcompat_ops import protos
from fluidcompat_ops.grad import SelectedRows

__all__ = ["Operator", "OperatorFactory", "get_all_op_protos"]


def get_all_op_protos() -> list:
    """Every op type's proto (fluid's ``paddle.fluid.op.get_all_op_protos``)."""
    return [protos.get_op_proto(t) for t in protos.all_proto_types()]


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
        def slots(d):
            return ", ".join(f"{k}[{', '.join(v)}]" for k, v in d.items())

        attrs = ", ".join(f"{k}={v}" for k, v in sorted(self._attrs.items()))
        ins, outs = slots(self._inputs), slots(self._outputs)
        return f"Op({self._type}), inputs:{{{ins}}}, outputs:{{{outs}}}, attrs:{{{attrs}}}."

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
        proto = protos.get_op_proto(op_type)
        inputs: Dict[str, List[str]] = {}
        outputs: Dict[str, List[str]] = {}
        for slots, into in ((proto.inputs, inputs), (proto.outputs, outputs)):
            for slot in slots:
                value = kwargs.pop(slot.name, None)
                if value is None:
                    continue
                names = [value] if isinstance(value, str) else list(value)
                if not slot.duplicable and len(names) > 1:
                    raise ValueError(
                        f"Op {op_type}'s {'input' if into is inputs else 'output'} {slot.name} is not duplicable: "
                        f"it takes one variable. Received: {names}"
                    )
                into[slot.name] = [str(n) for n in names]
        return ScopeOperator(op_type, inputs, outputs, kwargs)

    @staticmethod
    def types() -> List[str]:
        return protos.all_proto_types()

    @staticmethod
    def get_op_info(op_type: str):
        return protos.get_op_proto(op_type)

    @staticmethod
    def get_op_input_names(op_type: str) -> List[str]:
        return [v.name for v in protos.get_op_proto(op_type).inputs]

    @staticmethod
    def get_op_output_names(op_type: str) -> List[str]:
        return [v.name for v in protos.get_op_proto(op_type).outputs]

    @staticmethod
    def get_op_inputs(op_type: str) -> List[Tuple[str, bool]]:
        return [(v.name, v.duplicable) for v in protos.get_op_proto(op_type).inputs]

    @staticmethod
    def get_op_outputs(op_type: str) -> List[Tuple[str, bool]]:
        return [(v.name, v.duplicable) for v in protos.get_op_proto(op_type).outputs]

    @staticmethod
    def get_op_attr_names(op_type: str) -> List[str]:
        return [a.name for a in protos.get_op_proto(op_type).attrs]


Operator = OperatorFactory()
