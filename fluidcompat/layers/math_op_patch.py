"""Operators on Variables (``a + b``, ``x < y``, ``x.astype('int32')``) as fluid 1.8 patched them."""

from __future__ import annotations

from fluidcompat import unique_name
from fluidcompat.dtypes import INT_TYPES, VarType, to_vartype
from fluidcompat.framework import Variable


def _tmp(block, dtype):
    return block.create_var(name=unique_name.generate_with_ignorable_key("tmp"), dtype=dtype, persistable=False)


def _block(var):
    return var.block.program.current_block()


def _scale(var, scale, bias):
    out = _tmp(_block(var), var.dtype)
    _block(var).append_op(
        type="scale", inputs={"X": [var]}, outputs={"Out": [out]}, attrs={"scale": float(scale), "bias": float(bias)}
    )
    return out


def _fill(block, value, dtype, shape):
    out = _tmp(block, dtype)
    block.append_op(
        type="fill_constant",
        outputs={"Out": [out]},
        attrs={"dtype": int(dtype), "shape": list(shape), "value": float(value), "force_cpu": False},
    )
    out.stop_gradient = True
    return out


def _fill_batch(ref, value, dtype):
    block = _block(ref)
    out = _tmp(block, dtype)
    block.append_op(
        type="fill_constant_batch_size_like",
        inputs={"Input": [ref]},
        outputs={"Out": [out]},
        attrs={
            "shape": list(ref.shape),
            "value": float(value),
            "input_dim_idx": 0,
            "output_dim_idx": 0,
            "dtype": int(dtype),
            "force_cpu": False,
        },
    )
    out.stop_gradient = True
    return out


def astype(self, dtype):
    """Cast to ``dtype`` (op ``cast``)."""
    vt = to_vartype(dtype)
    out = _tmp(_block(self), vt)
    _block(self).append_op(
        type="cast",
        inputs={"X": [self]},
        outputs={"Out": [out]},
        attrs={"in_dtype": int(self.dtype), "out_dtype": int(vt)},
    )
    return out


_COMPARE = {"__lt__", "__le__", "__gt__", "__ge__", "__eq__", "__ne__"}


def _method(method_name, op_type, reverse=False, scalar=None):
    def impl(self, other):
        if scalar is not None and not (op_type == "elementwise_div" and self.dtype in INT_TYPES):
            if isinstance(other, float) and not isinstance(other, bool):
                if self.dtype in INT_TYPES and other != int(other):
                    raise TypeError(f"float value {other} cannot convert to integer")
                return scalar(self, other)
            if isinstance(other, int) and not isinstance(other, bool):
                return scalar(self, float(other))
        lhs_dtype = self.dtype
        if not isinstance(other, Variable):
            if reverse:
                if any(d < 0 for d in self.shape):
                    other = _fill_batch(self, other, lhs_dtype)
                else:
                    other = _fill(_block(self), other, lhs_dtype, self.shape)
            else:
                other = _fill(_block(self), other, lhs_dtype, [1])
        if other.dtype != lhs_dtype:
            other = astype(other, lhs_dtype)
        x, y = (other, self) if reverse else (self, other)
        out = _tmp(_block(self), VarType.BOOL if method_name in _COMPARE else lhs_dtype)
        axis = 0 if y.shape and y.shape[0] == -1 else -1
        _block(self).append_op(type=op_type, inputs={"X": [x], "Y": [y]}, outputs={"Out": [out]}, attrs={"axis": axis})
        return out

    impl.__name__ = method_name
    impl.__doc__ = f"``{op_type}`` of the two operands."
    return impl


_METHODS = [
    ("__add__", "elementwise_add", False, lambda v, s: _scale(v, 1.0, s)),
    ("__radd__", "elementwise_add", False, lambda v, s: _scale(v, 1.0, s)),
    ("__sub__", "elementwise_sub", False, lambda v, s: _scale(v, 1.0, -s)),
    ("__rsub__", "elementwise_sub", True, lambda v, s: _scale(v, -1.0, s)),
    ("__mul__", "elementwise_mul", False, lambda v, s: _scale(v, s, 0.0)),
    ("__rmul__", "elementwise_mul", False, lambda v, s: _scale(v, s, 0.0)),
    ("__truediv__", "elementwise_div", False, lambda v, s: _scale(v, 1.0 / s, 0.0)),
    ("__rtruediv__", "elementwise_div", True, None),
    ("__div__", "elementwise_div", False, lambda v, s: _scale(v, 1.0 / s, 0.0)),
    ("__pow__", "elementwise_pow", False, None),
    ("__rpow__", "elementwise_pow", True, None),
    ("__floordiv__", "elementwise_floordiv", False, None),
    ("__mod__", "elementwise_mod", False, None),
    ("__eq__", "equal", False, None),
    ("__ne__", "not_equal", False, None),
    ("__lt__", "less_than", False, None),
    ("__le__", "less_equal", False, None),
    ("__gt__", "greater_than", False, None),
    ("__ge__", "greater_equal", False, None),
]


_END = 10000000  # fluid's "to the end" for an open slice


def _index_tensor(block, value):
    """A [1] int32 for a start / end / stride: ``value`` itself when a Variable, else a constant."""
    if isinstance(value, Variable):
        value.stop_gradient = True
        return value
    out = _tmp(block, VarType.INT32)
    block.append_op(
        type="fill_constant",
        outputs={"Out": [out]},
        attrs={"dtype": int(VarType.INT32), "shape": [1], "value": float(value), "force_cpu": True},
    )
    out.stop_gradient = True
    return out


def _getitem(self, item):
    """``x[i]``, ``x[a:b]``, ``x[a:b:s]``, ``x[::-1]`` and tuples of them, as fluid 1.8 built them:
    ``slice`` (an int index drops its axis: ``decrease_axis``), ``strided_slice`` for a step other
    than 1, ``reverse`` for ``::-1``. An index may be a Variable ([1] int). A step over a whole axis
    (``x[::2]``), which fluid 1.8's static mode refused with a bare AssertionError and its dygraph
    mode took, and open ends with a negative step, are numpy's."""
    items = list(item) if isinstance(item, tuple) else [item]
    if len(items) > len(self.shape):
        raise IndexError(f"too many indices for variable '{self.name}' of shape {list(self.shape)}: {len(items)}")
    # fluid built the slice in the variable's own block (an RNN's initial state sliced inside its step
    # is made before the loop); with a Variable index, in the current block, where the index lives
    block = _block(self) if any(isinstance(it, Variable) for it in items) else self.block
    axes, starts, ends, steps, decrease, reverse = [], [], [], [], [], []
    for dim, it in enumerate(items):
        if isinstance(it, slice):
            if it.start is None and it.stop is None and it.step in (None, 1):
                continue
            step = 1 if it.step is None else it.step
            if isinstance(step, int) and step == 0:
                raise IndexError(f"variable '{self.name}': slice step cannot be zero")
            if it.start is None and it.stop is None and isinstance(step, int) and step == -1:
                reverse.append(dim)
                continue
            backwards = isinstance(step, int) and step < 0
            axes.append(dim)
            # open ends: from the last element and past the first when the step is negative
            starts.append((-1 if backwards else 0) if it.start is None else it.start)
            ends.append((-_END if backwards else _END) if it.stop is None else it.stop)
            steps.append(step)
        elif isinstance(it, Variable) or (isinstance(it, int) and not isinstance(it, bool)):
            size = self.shape[dim]
            if isinstance(it, int) and size >= 0 and not -size <= it < size:
                raise IndexError(
                    f"index {it} is out of bounds for axis {dim} of variable '{self.name}' with size {size}"
                )
            axes.append(dim)
            decrease.append(dim)
            starts.append(it)
            steps.append(1)
            if isinstance(it, Variable):
                ends.append(it + 1)
            else:
                ends.append(it + 1 if it != -1 else _END)
        else:
            raise IndexError(
                f"variable '{self.name}' takes int, slice or Variable indices (and tuples of them); "
                f"received {type(it).__name__} at position {dim}"
            )
    out = self
    if axes:
        strided = any(s != 1 for s in steps)
        attrs = {"axes": axes, "decrease_axis": decrease, "infer_flags": [1] * len(axes)}
        inputs = {"Input": [self]}
        for key, slot, values in (("starts", "StartsTensorList", starts), ("ends", "EndsTensorList", ends)) + (
            (("strides", "StridesTensorList", steps),) if strided else ()
        ):
            if any(isinstance(v, Variable) for v in values):
                inputs[slot] = [_index_tensor(block, v) for v in values]
                attrs[key] = [-1 if isinstance(v, Variable) else v for v in values]
                attrs["infer_flags"] = [
                    -1 if isinstance(v, Variable) else f for v, f in zip(values, attrs["infer_flags"])
                ]
            else:
                attrs[key] = list(values)
        kind = "strided_slice" if strided else "slice"
        out = block.create_var(
            name=unique_name.generate_with_ignorable_key(f"{self.name}_{kind}"), dtype=self.dtype, persistable=False
        )
        block.append_op(type=kind, inputs=inputs, outputs={"Out": [out]}, attrs=attrs)
    if reverse:
        flipped = block.create_var(
            name=unique_name.generate_with_ignorable_key(f"{self.name}_slice_reverse"), dtype=self.dtype
        )
        block.append_op(type="reverse", inputs={"X": [out]}, outputs={"Out": [flipped]}, attrs={"axis": reverse})
        out = flipped
    return out


def _iter(self):
    """The rows of a variable whose first dimension is known (``x[0]``, ``x[1]``, ...)."""
    if not self.shape or self.shape[0] < 0:
        raise TypeError(
            f"variable '{self.name}' of shape {list(self.shape)} cannot be iterated: its first dimension is not "
            "known when the program is built; index it (x[i]) or use a While loop"
        )
    return (self[i] for i in range(self.shape[0]))


def monkey_patch_variable() -> None:
    for name, op_type, reverse, scalar in _METHODS:
        setattr(Variable, name, _method(name, op_type, reverse, scalar))
    Variable.__getitem__ = _getitem
    Variable.__iter__ = _iter
    Variable.__neg__ = lambda self: _scale(self, -1.0, 0.0)
    Variable.astype = astype
    Variable.__hash__ = object.__hash__
