"""VarBase and ParamBase: dygraph values, each a torch tensor that autograd follows.

A VarBase is a ``framework.Variable`` as well, so every layer function that checks for a Variable
takes one. Its shape and dtype are those of its tensor. ``stop_gradient=False`` on a leaf (a
parameter, or ``to_variable``'s result once the user clears it) makes torch track it; an op's
output tracks gradients when any input does, and keeps its gradient (``gradient()``) as fluid 1.8's
VarBases did.
"""

from __future__ import annotations

import warnings
from typing import Optional

import numpy as np

from fluidcompat import framework
from fluidcompat.dtypes import FLOAT_TYPES, VarType, as_long_long, np_dtype, to_vartype
from fluidcompat.logging import tensor_text

torch = None  # bound on first use (no torch import when building static programs)


def _torch():
    global torch
    if torch is None:
        from fluidcompat_ops import registry

        registry.bind_torch()
        import torch as _t

        torch = _t
    return torch


_VARTYPES = {}  # torch dtype -> VarType


def vartype_of(t) -> VarType:
    found = _VARTYPES.get(t.dtype)
    if found is None:
        from fluidcompat_ops.registry import TORCH_DTYPES

        _VARTYPES.update({td: vt for vt, td in TORCH_DTYPES.items()})
        found = _VARTYPES.get(t.dtype)
        if found is None:
            raise TypeError(f"dtype {t.dtype} has no fluid VarType")
    return found


def current_tracer():
    """The running dygraph tracer: none until dygraph/base.py, which imports this module and holds the
    tracer, puts its own ``current_tracer`` here."""
    return None


def _recorder():
    """The _ProgramRecorder of a running trace, or None (NOTE: [Program tracing])."""
    tracer = current_tracer()
    return None if tracer is None else tracer._recorder


def _note_read(v, how: str) -> None:
    """Tell a running trace that Python read ``v``'s value."""
    recorder = _recorder()
    if recorder is not None:
        recorder.note_read(v, how)


class VarBase(framework.Variable):
    """A dygraph value: ``numpy()``, ``backward()``, ``gradient()``, ``stop_gradient``, operators."""

    __hash__ = object.__hash__

    def __init__(
        self,
        value=None,
        name: Optional[str] = None,
        stop_gradient: bool = True,
        persistable: bool = False,
        shape=None,
        dtype=None,
        block=None,
        type: VarType = VarType.LOD_TENSOR,
        lod_level: int = 0,
        **_ignored,
    ) -> None:
        from fluidcompat import unique_name

        self.block = block if block is not None else framework.default_main_program().current_block()
        self.name = name if name is not None else unique_name.generate("generated_var")
        self.type = type
        self._lod_level = lod_level or 0
        self.persistable = bool(persistable)
        self.error_clip = None
        self.is_data = False
        self.need_check_feed = False
        self.belong_to_optimizer = bool(_ignored.get("belong_to_optimizer", False))
        self.op = None
        self._decl_shape = framework._shape_tuple(shape)
        self._decl_dtype = to_vartype(dtype) if dtype is not None else VarType.FP32
        # an output created with stop_gradient=True stays out of the graph whatever its inputs
        self._forced_stop = bool(stop_gradient)
        self._stop_gradient = bool(stop_gradient)
        self._value = None
        if value is not None:
            self._set_tensor(value)

    # -- the tensor ------------------------------------------------------------------------------
    def _set_tensor(self, t) -> None:
        """Hold ``t``; a leaf that is not stop_gradient starts tracking gradients."""
        if self._stop_gradient or not t.is_floating_point():
            if t.requires_grad:
                t = t.detach()
            self._value = t
            return
        if t.requires_grad:
            if not t.is_leaf:
                t.retain_grad()
        else:
            t = t.detach().requires_grad_(True)
        self._value = t

    def _assign(self, t, stop: bool = False) -> None:
        """An op wrote ``t`` here (ParamOut, an output): updates keep a parameter's tensor."""
        old = self._value
        if (
            isinstance(self, ParamBase)
            and old is not None
            and old.requires_grad
            and old.shape == t.shape
            and old.dtype == t.dtype
        ):
            with torch.no_grad():
                old.copy_(t)
            return
        if isinstance(self, ParamBase):  # its initialization, or a statistic (batch_norm's mean)
            t = t.detach()
            if not self._stop_gradient and t.is_floating_point():
                t.requires_grad_(True)
            self._value = t
            return
        if stop or self._forced_stop or self.persistable or not t.requires_grad:
            self._value = t.detach() if t.requires_grad else t
            self._stop_gradient = True
            return
        self._stop_gradient = False
        if not t.is_leaf:
            t.retain_grad()
        self._value = t

    def _tensor(self):
        if self._value is None:
            raise ValueError(f"Variable '{self.name}' holds no value yet (no op has written it)")
        return self._value

    # -- Variable's fields, read from the tensor ---------------------------------------------------
    @property
    def shape(self):
        if self._value is None:
            return list(self._decl_shape)
        return list(self._value.shape)

    @shape.setter
    def shape(self, value) -> None:
        self._decl_shape = framework._shape_tuple(value)

    @property
    def dtype(self) -> VarType:
        if self._value is None:
            return self._decl_dtype
        return vartype_of(self._value)

    @dtype.setter
    def dtype(self, value) -> None:
        self._decl_dtype = to_vartype(value)

    @property
    def stop_gradient(self) -> bool:
        return self._stop_gradient

    @stop_gradient.setter
    def stop_gradient(self, value: bool) -> None:
        value = bool(value)
        self._stop_gradient = value
        self._forced_stop = value and self._forced_stop
        t = self._value
        if t is None:
            return
        if value:
            if t.requires_grad:
                self._value = t.detach()
        elif not t.requires_grad and t.is_floating_point():
            self._value = t.detach().requires_grad_(True)

    @property
    def trainable(self) -> bool:
        return not self._stop_gradient

    @trainable.setter
    def trainable(self, value: bool) -> None:
        self.stop_gradient = not value

    # -- the dygraph API -----------------------------------------------------------------------------
    def numpy(self) -> np.ndarray:
        """The value as a new numpy array; of one element, it converts to a number with ``float()`` /
        ``'%f' %`` as numpy arrays did before numpy 2.4 (fluid-era scripts print ``loss.numpy()`` so)."""
        from fluidcompat.executor.executor import fetched

        _note_read(self, "numpy()")
        return fetched(self._tensor().detach().cpu().numpy().copy())

    def value(self) -> "VarBase":
        return self

    def get_tensor(self):
        """The value as fluid's LoDTensor (``var.value().get_tensor()``): reads it, and sets its LoD."""
        from fluidcompat.executor.scope import HeldTensor

        return HeldTensor(self)

    def detach(self) -> "VarBase":
        """The same values, out of the graph (stop_gradient)."""
        out = VarBase(self._tensor().detach(), stop_gradient=True)
        recorder = _recorder()
        if recorder is not None:
            recorder.alias(out, self)  # the same variable in a traced program
        return out

    def backward(self, backward_strategy=None, retain_graph: bool = False) -> None:
        """Gradients of this value (all ones as its own gradient) into every VarBase it comes from."""
        tracer = current_tracer()
        if tracer is None:
            raise ValueError("VarBase.backward() is only available in dygraph mode (inside fluid.dygraph.guard())")
        t = self._tensor()
        if not t.requires_grad:
            if tracer._train_mode:  # constants only: fluid 1.8 did nothing (its docs' examples do this)
                warnings.warn(
                    f"Variable '{self.name}' does not depend on any value that needs a gradient (every input "
                    "has stop_gradient=True): backward() does nothing",
                    stacklevel=2,
                )
                return
            raise ValueError(
                f"Variable '{self.name}' does not depend on any value that needs a gradient (a Layer's eval() "
                "turned gradient recording off for every layer until a Layer's train() is called; fluid 1.8 "
                "then gave zero gradients silently): there is nothing to backward"
            )
        _forget_leaf_grads(t)
        t.backward(torch.ones_like(t), retain_graph=retain_graph)

    def _grad_tensor(self):
        t = self._value
        return None if t is None else t.grad

    def gradient(self):
        """This value's gradient from the last ``backward()`` calls (summed), or None; a sparse one (an
        ``is_sparse`` embedding's table) as fluid 1.8 gave it: ``(values, rows)``."""
        g = self._grad_tensor()
        if g is None:
            return None
        sparse = self._sparse_grad(g)
        if sparse is not None:
            # (the rows as numpy's own int64, as fluid's list of rows converted: its repr names no dtype)
            return sparse.values.detach().cpu().numpy().copy(), sparse.rows.cpu().numpy().copy()
        return as_long_long(dense_grad(g).detach().cpu().numpy().copy())

    def _sparse_grad(self, g):
        """The gradient as the sparse rows its ops gave it (NOTE: [Sparse gradients in dygraph]), or
        None where it is not only theirs (a dense contribution too, or none sparse). One op's rows
        come as it gave them (repeated rows repeated); several ops' are merged, as fluid 1.8 added
        sparse gradients up: each row once, ascending."""
        if not g.is_sparse:
            return None
        from fluidcompat_ops.grad import SelectedRows

        parts = getattr(self._value, "_fluidcompat_sparse", None) or []
        rows = torch.cat([p.rows for p in parts]) if parts else None
        if rows is None or rows.numel() != g._nnz():  # (not the ops' rows alone: the gradient's own)
            g = g.coalesce()
            return SelectedRows(g.indices()[0], g.values(), g.shape[0])
        rows = SelectedRows(rows, torch.cat([p.values for p in parts]), parts[0].height)
        return rows.merged() if len(parts) > 1 else rows

    def _grad_ivar(self, sparse: bool = False) -> Optional["VarBase"]:
        """The gradient as a VarBase; with ``sparse``, a SelectedRows one where it is sparse."""
        g = self._grad_tensor()
        if g is None:
            return None
        rows = self._sparse_grad(g) if sparse else None
        if rows is not None:
            return VarBase(
                rows, name=self.name + "@GRAD", stop_gradient=True, block=self.block, type=VarType.SELECTED_ROWS
            )
        return VarBase(dense_grad(g), name=self.name + "@GRAD", stop_gradient=True, block=self.block)

    def clear_gradient(self) -> None:
        """Zero this value's gradient (fluid 1.8 kept the gradient's buffer, set to zeros); a sparse
        one is emptied: gradient() gives None until the next backward(), as fluid 1.8's."""
        t = self._value
        if t is not None and t.grad is not None:
            if t.grad.is_sparse:
                t.grad = None
            else:
                t.grad.zero_()
        if t is not None and getattr(t, "_fluidcompat_sparse", None):
            t._fluidcompat_sparse = None

    def set_value(self, value) -> None:
        """Overwrite the values in place with ``value`` (a numpy array or VarBase) of the same shape and dtype."""
        if isinstance(value, VarBase):
            value = value.numpy()
        if not isinstance(value, np.ndarray):
            raise TypeError(
                f"Variable set_value function, arguments type only support Variable, numpy, VarBase. "
                f"Received: {type(value).__name__} for '{self.name}'"
            )
        mine = self._tensor()
        if tuple(value.shape) != tuple(mine.shape):
            raise ValueError(
                f"Variable Shape not match, Variable [ {self.name} ] need tensor with shape {tuple(mine.shape)} "
                f"but load set tensor with shape {tuple(value.shape)}"
            )
        if value.dtype != np_dtype(self.dtype):
            raise ValueError(
                f"Variable dtype not match, Variable [ {self.name} ] need tensor with dtype {np_dtype(self.dtype)}  "
                f"but load tensor with dtype {value.dtype}"
            )
        with torch.no_grad():
            mine.copy_(torch.from_numpy(np.ascontiguousarray(value)))

    def _numel(self) -> int:
        return int(self._tensor().numel())

    def __len__(self) -> int:
        return int(self._tensor().shape[0])

    def __float__(self) -> float:
        _note_read(self, "float()")
        return float(self._tensor().item())

    def __int__(self) -> int:
        _note_read(self, "int()")
        return int(self._tensor().item())

    def __index__(self) -> int:
        if self.dtype in FLOAT_TYPES:
            raise TypeError(f"Variable '{self.name}' of dtype {self.dtype.name} cannot be used as an index")
        _note_read(self, "an index")
        return int(self._tensor().item())

    def __bool__(self) -> bool:
        """Whether the one element is above 0 (fluid 1.8's test for ``if``/``while`` on a Variable)."""
        t = self._tensor()
        if t.numel() != 1:
            raise ValueError(
                "When Variable is used as the condition of if/while , Variable can only contain one element. "
                f"Variable '{self.name}' has shape {list(t.shape)}"
            )
        _note_read(self, "a condition")
        return bool(t.item() > 0)

    def to_string(self, throw_on_error: bool = True, with_details: bool = False) -> str:
        if self._value is None:
            return f"name {self.name}, no value"
        text = tensor_text(self._value, [], self.dtype)
        return f"name {self.name}, dtype: VarType.{self.dtype.name} shape: {list(self._value.shape)} {text}"

    __str__ = to_string

    def __repr__(self) -> str:
        return f"<fluidcompat VarBase {self.name} shape={self.shape} dtype={self.dtype.name}>"

    def _copy_to(self, block) -> "VarBase":
        return self


def dense_grad(g):
    """A gradient as a dense tensor (an is_sparse embedding's table's is a sparse one: NOTE: [Sparse
    gradients in dygraph] in base.py)."""
    return g.to_dense() if g is not None and g.is_sparse else g


def _leaves(t):
    """The leaf tensors (parameters, inputs) whose gradients ``t``'s backward reaches."""
    seen = set()
    stack = [t.grad_fn]
    while stack:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        leaf = getattr(node, "variable", None)
        if leaf is not None:
            yield leaf
        stack.extend(n for n, _ in node.next_functions)


def leaf_sparse_parts(t) -> dict:
    """The leaves ``t`` depends on with the sparse gradient parts their ops left (to put back with
    restore_sparse_parts after a gradient computed outside backward())."""
    return {leaf: getattr(leaf, "_fluidcompat_sparse", None) for leaf in _leaves(t)}


def restore_sparse_parts(found: dict) -> None:
    for leaf, parts in found.items():
        leaf._fluidcompat_sparse = parts


def _forget_leaf_grads(t) -> None:
    """Drop the gradients of the leaves (parameters, inputs) that ``t`` depends on: in fluid 1.8 each
    ``backward()`` replaced their gradients instead of adding to them (torch adds)."""
    for leaf in _leaves(t):
        leaf.grad = None
        if getattr(leaf, "_fluidcompat_sparse", None):
            leaf._fluidcompat_sparse = None


class ParamBase(VarBase, framework.Parameter):
    """A dygraph parameter: persistable, trainable unless ``trainable=False``."""

    __hash__ = object.__hash__

    def __init__(self, shape, dtype, name: Optional[str] = None, block=None, **kwargs) -> None:
        trainable = self._take_attrs(shape, dtype, kwargs)
        stop = kwargs.pop("stop_gradient", False) or not trainable
        kwargs.pop("persistable", None)
        super().__init__(
            None, name=name, stop_gradient=stop, persistable=True, shape=shape, dtype=dtype, block=block, **kwargs
        )
        self._forced_stop = False

    def __repr__(self) -> str:
        return f"<fluidcompat ParamBase {self.name} shape={self.shape} dtype={self.dtype.name}>"
