"""fluid's C++ descs (``core.ProgramDesc``, ``BlockDesc``, ``OpDesc``, ``VarDesc``) over fluidcompat's
Program: ``program.desc``, ``block.desc``, ``op.desc``, ``var.desc`` and ``core.ProgramDesc()``.

fluid kept a program twice, its C++ desc and the Python objects over it, brought together by
``Program._sync_with_cpp()``. fluidcompat keeps it once: a desc is a view of the Python object, and
what is done through a desc is done to the program itself. An op made through ``block.desc.append_op()``
joins the block's ops at once, typeless until ``set_type`` / ``copy_from``; the program completes it
(its op definition, its outputs' links) at ``_sync_with_cpp()`` or when an Executor runs it.
"""

from __future__ import annotations

from typing import Any, List, Optional

from fluidcompat.dtypes import VarType, to_vartype

# The IR's Program and Operator, which a ``ProgramDesc()`` and ``block.desc.append_op()`` make: these
# views sit below framework.py, which sets both on its import (before any desc can exist).
Program: Any = None
Operator: Any = None


def _name(name) -> str:
    return name.decode() if isinstance(name, bytes) else name


def _shape(shape) -> tuple:
    return tuple(-1 if d is None else int(d) for d in shape)


class _View:
    """A desc over one object: equal to another desc over the same object."""

    __slots__ = ("_obj",)

    def __init__(self, obj) -> None:
        self._obj = obj

    def __eq__(self, other) -> bool:
        return type(other) is type(self) and other._obj is self._obj

    def __hash__(self) -> int:
        return id(self._obj)


class VarDesc(_View):
    """A Variable seen through fluid's ``core.VarDesc`` (``var.desc``, ``block.desc.var(name)``): getters
    and setters that act on the variable itself. ``VarDesc.VarType`` as ``core.VarDesc.VarType``."""

    VarType = VarType
    __slots__ = ()

    def _touch(self) -> None:
        self._obj.block.program._bump()

    def name(self) -> str:
        return self._obj.name

    def shape(self) -> List[int]:
        return list(self._obj.shape)

    def set_shape(self, shape) -> None:
        self._obj._shape = _shape(shape)
        self._touch()

    def dtype(self) -> VarType:
        return self._obj.dtype

    def set_dtype(self, dtype) -> None:
        self._obj._dtype = to_vartype(dtype)
        self._touch()

    def lod_level(self) -> int:
        return self._obj.lod_level

    def set_lod_level(self, level: int) -> None:
        self._obj._lod_level = int(level)

    # a reader's several tensors
    def shapes(self) -> List[List[int]]:
        return [list(s) for s in getattr(self._obj, "_shapes", [])]

    def set_shapes(self, shapes) -> None:
        self._obj._shapes = [_shape(s) for s in shapes]

    def dtypes(self) -> List[VarType]:
        return list(getattr(self._obj, "_dtypes", []))

    def set_dtypes(self, dtypes) -> None:
        self._obj._dtypes = [to_vartype(d) for d in dtypes]

    def lod_levels(self) -> List[int]:
        return list(getattr(self._obj, "_lod_levels", []))

    def set_lod_levels(self, levels) -> None:
        self._obj._lod_levels = [int(v) for v in levels]

    def type(self) -> VarType:
        return self._obj.type

    def set_type(self, type) -> None:
        self._obj.type = VarType(int(type))
        self._touch()

    def persistable(self) -> bool:
        return self._obj.persistable

    def set_persistable(self, persistable: bool) -> None:
        self._obj.persistable = bool(persistable)
        self._touch()

    def need_check_feed(self) -> bool:
        return self._obj.need_check_feed

    def set_need_check_feed(self, need: bool) -> None:
        self._obj.need_check_feed = bool(need)


class OpDesc(_View):
    """An Operator seen through fluid's ``core.OpDesc`` (``op.desc``, the ``__current_op_desc__`` of
    append_backward's callbacks): ``type()``, ``input(slot)``, ``output_arg_names()``, ``attr(name)``,
    ``_set_attr(name, value)`` ... act on the op itself."""

    __slots__ = ()

    @property
    def _op(self):
        return self._obj

    def _touch(self) -> None:
        block = self._obj.block
        if block is not None:
            block.program._desc_dirty = True
            block.program._bump()

    def type(self) -> str:
        return self._obj.type

    def set_type(self, op_type: str) -> None:
        from fluidcompat_ops import registry

        self._obj.type = op_type
        self._obj._def = registry.lookup(op_type) if registry.has(op_type) else None
        self._touch()

    def input(self, slot: str) -> List[str]:
        return self._obj.input(slot)

    def output(self, slot: str) -> List[str]:
        return self._obj.output(slot)

    def input_names(self) -> List[str]:
        return self._obj.input_names

    def output_names(self) -> List[str]:
        return self._obj.output_names

    def input_arg_names(self) -> List[str]:
        return self._obj.input_arg_names

    def output_arg_names(self) -> List[str]:
        return self._obj.output_arg_names

    def set_input(self, slot: str, names: List[str]) -> None:
        self._obj.inputs[slot] = [_name(n) for n in names]
        self._touch()

    def set_output(self, slot: str, names: List[str]) -> None:
        self._obj.outputs[slot] = [_name(n) for n in names]
        self._touch()

    def attr_names(self) -> List[str]:
        return self._obj.attr_names

    def has_attr(self, name: str) -> bool:
        return self._obj.has_attr(name)

    def attr(self, name: str) -> Any:
        return self._obj.attr(name)

    def attr_type(self, name: str):
        return self._obj.attr_type(name)

    def _set_attr(self, name: str, value: Any) -> None:
        self._obj.attrs[name] = value
        self._touch()

    set_attr = _set_attr

    def set_block_attr(self, name: str, block: "BlockDesc") -> None:
        self._set_attr(name, block._obj)

    def _block_attr_id(self, name: str) -> int:
        return self._obj.attrs[name].idx

    def check_attrs(self) -> None:
        """Give the op the default of every attribute of its type it lacks (fluid's attribute checker)."""
        opdef = self._obj._def
        if opdef is not None:
            for k, v in opdef.attrs.items():
                self._obj.attrs.setdefault(k, v)

    def _rename_input(self, old: str, new: str) -> None:
        self._obj._rename_input(old, new)

    def _rename_output(self, old: str, new: str) -> None:
        self._obj._rename_output(old, new)

    def copy_from(self, other: "OpDesc") -> None:
        """Make this op a copy of ``other`` (type, slots, attributes)."""
        src, op = other._obj, self._obj
        op.type, op._def = src.type, src._def
        op.inputs = {k: list(v) for k, v in src.inputs.items()}
        op.outputs = {k: list(v) for k, v in src.outputs.items()}
        op.attrs = dict(src.attrs)
        self._touch()

    def infer_shape(self, block_desc=None) -> None:
        """Infer the outputs' shapes and dtypes from the inputs' (done when the op was appended; again
        here for an op made through the desc API)."""
        op = self._obj
        block = op.block if op.block is not None else getattr(block_desc, "_obj", None)
        if block is None:
            return
        if op._def is None:
            from fluidcompat_ops import registry

            op._def = registry.lookup(op.type)
        block._infer(op)

    def infer_var_type(self, block_desc=None) -> None:
        """Output variable types follow from the op when it is appended; nothing is left to infer."""


class BlockDesc(_View):
    """A Block seen through fluid's ``core.BlockDesc``: its variables and ops, ``append_op()`` an empty
    op to fill (``set_type``, ``set_input`` ... or ``copy_from``)."""

    __slots__ = ()

    @property
    def id(self) -> int:
        return self._obj.idx

    @property
    def parent(self) -> int:
        return self._obj.parent_idx

    def op_size(self) -> int:
        return len(self._obj.ops)

    def op(self, index: int) -> OpDesc:
        return self._obj.ops[index].desc

    def has_var(self, name) -> bool:
        return _name(name) in self._obj.vars

    def var(self, name) -> VarDesc:
        """The block's variable of this name, made (as fluid's VarDesc: a LoDTensor of float32) if absent."""
        name = _name(name)
        v = self._obj.vars.get(name)
        return (v if v is not None else self._obj.create_var(name=name)).desc

    def find_var(self, name) -> Optional[VarDesc]:
        v = self._obj.vars.get(_name(name))
        return None if v is None else v.desc

    def find_var_recursive(self, name) -> Optional[VarDesc]:
        v = self._obj._find_var_recursive(_name(name))
        return None if v is None else v.desc

    def all_vars(self) -> List[VarDesc]:
        return [v.desc for v in self._obj.vars.values()]

    def _new_op(self):
        self._obj.program._desc_dirty = True
        self._obj.program._bump()
        return Operator(self._obj, "", {}, {}, {}, None)

    def append_op(self) -> OpDesc:
        op = self._new_op()
        self._obj.ops.append(op)
        return op.desc

    def _prepend_op(self) -> OpDesc:
        from fluidcompat import transaction

        op = self._new_op()
        transaction.before_structure_edit(self._obj)
        self._obj.ops.insert(0, op)
        self._obj._shift_forward_links(0, 1)
        return op.desc

    def _remove_op(self, start: int, end: int) -> None:
        for _ in range(start, end):
            self._obj._remove_op(start)


class ProgramDesc(_View):
    """A Program seen through fluid's ``core.ProgramDesc``; ``ProgramDesc()`` makes a new, empty one
    and ``ProgramDesc(bytes)`` reads a serialized one."""

    __slots__ = ()

    def __init__(self, program=None) -> None:
        if program is None:
            program = Program()
        elif isinstance(program, (bytes, bytearray)):
            program = Program.parse_from_string(bytes(program))
        elif isinstance(program, ProgramDesc):
            program = program._obj.clone()
        super().__init__(program)

    def block(self, index: int) -> BlockDesc:
        return self._obj.block(index).desc

    def num_blocks(self) -> int:
        return len(self._obj.blocks)

    def append_block(self, parent: BlockDesc) -> BlockDesc:
        program = self._obj
        current = program.current_block_idx
        block = program._create_block(parent_idx=parent.id)
        program.current_block_idx = current
        return block.desc

    def serialize_to_string(self) -> bytes:
        from fluidcompat import proto

        return proto.program_to_bytes(self._obj)

    def flush(self) -> None:
        """fluid wrote its Python-side changes into the desc here; they are the same object."""
