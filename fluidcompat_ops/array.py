"""Tensor arrays (fluid's ``LOD_TENSOR_ARRAY``): ``write_to_array``, ``read_from_array``,
``lod_array_length`` and ``tensor_array_to_tensor``.

# NOTE: [Array values]
# An array's value is a Python list of tensors, ``None`` where no element was written. Kernels never
# change a list they are given: a write returns a new list. The interpreter may keep an old value of
# an array for a grad op (a loop overwrites it), and that value must stay what it was.
# An array's gradient is an array of the same length; elements nobody wrote a gradient for are
# ``None`` and read back as zeros. Every write of an array's gradient adds to what it holds:
# write_to_array in backward adds to the element already there, the interpreter adds what other
# ops write (tensor_array_to_tensor_grad, assign; Step.adds), and while_grad/conditional_block_grad
# add their results. So every contribution, whichever op and loop step wrote it, adds up in the
# one variable, and backward does not rename and sum array gradients as it does tensors'.
"""

from __future__ import annotations

from fluidcompat_ops.registry import GradDef, OpDef, register
from fluidcompat_ops.shapes import first, norm_axis, out

torch = None  # NOTE: [Lazy torch] in registry.py
F = None

_BACKWARD = 1  # OpRole.Backward


def _index(i, op: str) -> int:
    if i is None or i.numel() != 1:
        raise ValueError(f"{op}: the index I must hold one integer. Received: {None if i is None else list(i.shape)}")
    k = int(i.reshape(-1)[0])
    if k < 0:
        raise ValueError(f"{op}: the index I must be >= 0. Received: {k}")
    return k


def add_values(a, b):
    """``a + b`` for gradients: tensors, or arrays added element by element (None adds as zero)."""
    if a is None:
        return b
    if b is None:
        return a
    if isinstance(a, list) or isinstance(b, list):
        n = max(len(a), len(b))
        a, b = a + [None] * (n - len(a)), b + [None] * (n - len(b))
        return [add_values(x, y) for x, y in zip(a, b)]
    return a + b


def zeros_like(value):
    """Zeros shaped as a tensor or as each element of an array."""
    if isinstance(value, list):
        return [None if v is None else torch.zeros_like(v) for v in value]
    return torch.zeros_like(value)


def _write_kernel(ins, attrs):
    x, k = ins["X"][0], _index(ins["I"][0], "write_to_array")
    old = first(ins, "Out")
    if old is not None and not isinstance(old, list):
        raise ValueError("write_to_array: Out holds a tensor, not an array")
    arr = list(old or [])
    if len(arr) <= k:
        arr.extend([None] * (k + 1 - len(arr)))
    if int(attrs.get("op_role", 0)) & _BACKWARD:
        arr[k] = add_values(arr[k], x)
    else:
        arr[k] = x
    return {"Out": [arr]}


def _write_infer(ins, attrs):
    x = first(ins, "X")
    return out("Out", x.shape, x.dtype)


def _write_grad_maker(op, out_grads, in_grads):
    """d x = read_from_array(d array, I); X_W shapes the zeros when no gradient reached the element."""
    ins = {"X": out_grads["Out"], "I": op.inputs["I"], "X_W": op.inputs["X"]}
    return [("read_from_array", ins, {"Out": [in_grads["X"][0]]}, {})]


register(
    OpDef(
        "write_to_array",
        ("X", "I"),
        ("Out",),
        {},
        _write_infer,
        _write_kernel,
        host_inputs=frozenset({"I"}),
        reads_outputs=frozenset({"Out"}),
        grad=GradDef(in_grads=("X",), maker=_write_grad_maker),
        doc="Out[I] = X (a new array value; the old one is left as it was)",
    )
)


def _read_kernel(ins, attrs):
    arr, k = first(ins, "X"), _index(ins["I"][0], "read_from_array")
    shape_of = first(ins, "X_W")
    value = arr[k] if arr is not None and k < len(arr) else None
    if value is not None:  # an element lives where it was written; Out lives on the op's device
        return {"Out": [value.to(attrs["_device"])]}
    if shape_of is not None:  # a gradient array without this element: no gradient reached it
        return {"Out": [torch.zeros_like(shape_of)]}
    if arr is None:
        raise ValueError("read_from_array: the array X holds no value (nothing was written to it)")
    if k >= len(arr):
        raise IndexError(f"read_from_array: index {k} is out of range: the array X holds {len(arr)} elements")
    raise ValueError(f"read_from_array: element {k} of the array X was never written")


def _read_infer(ins, attrs):
    x = first(ins, "X")
    return out("Out", x.shape, x.dtype)


def _read_grad_maker(op, out_grads, in_grads):
    """d array[I] += d Out."""
    return [("write_to_array", {"X": out_grads["Out"], "I": op.inputs["I"]}, {"Out": [in_grads["X"][0]]}, {})]


register(
    OpDef(
        "read_from_array",
        ("X", "I", "X_W"),
        ("Out",),
        {},
        _read_infer,
        _read_kernel,
        host_inputs=frozenset({"I"}),
        # arrays are never copied whole: the element read is moved to the op's device
        no_buffer_inputs=frozenset({"X", "X_W"}),
        optional_inputs=frozenset({"X", "X_W"}),
        grad=GradDef(in_grads=("X",), maker=_read_grad_maker),
        doc="Out = X[I]",
    )
)


def _length_kernel(ins, attrs):
    arr = first(ins, "X")
    return {"Out": [torch.tensor([len(arr or [])], dtype=torch.int64)]}


register(
    OpDef(
        "lod_array_length",
        ("X",),
        ("Out",),
        {},
        lambda ins, attrs: out("Out", (1,), "int64"),
        _length_kernel,
        host_outputs=frozenset({"Out"}),
        no_buffer_inputs=frozenset({"X"}),
        optional_inputs=frozenset({"X"}),
    )
)


def _elements(arr, op: str):
    if not arr:
        raise ValueError(f"{op}: the array X is empty")
    gaps = [k for k, v in enumerate(arr) if v is None]
    if gaps:
        raise ValueError(f"{op}: element {gaps[0]} of the array X (length {len(arr)}) was never written")
    return arr


def _to_tensor_kernel(ins, attrs):
    dev = attrs["_device"]  # elements live where they were written
    xs = [x.to(dev) for x in _elements(ins["X"][0], "tensor_array_to_tensor")]
    axis = attrs.get("axis", 1)
    rank = xs[0].dim()
    if attrs.get("use_stack"):
        axis = norm_axis(axis, rank + 1)
        out_t = torch.stack(xs, axis)
        # fluid 1.8.5: each element's size along axis (axis == rank: fluid read past the dims, and
        # crashed for a negative axis); here one slice per element there
        sizes = [x.shape[axis] if axis < rank else 1 for x in xs]
    else:
        out_t = torch.cat(xs, norm_axis(axis, rank))
        sizes = [x.shape[norm_axis(axis, rank)] for x in xs]
    return {"Out": [out_t], "OutIndex": [torch.tensor(sizes, dtype=torch.int32, device=dev)]}


def _to_tensor_infer(ins, attrs):
    x = first(ins, "X")
    shape = list(x.shape)
    axis = attrs.get("axis", 1)
    if attrs.get("use_stack"):
        shape.insert(norm_axis(axis, len(shape) + 1), -1)
    else:
        shape[norm_axis(axis, len(shape))] = -1
    return {"Out": [(tuple(shape), x.dtype)], "OutIndex": [((), "int32")]}


def _to_tensor_grad(ins, attrs):
    xs, g = ins["X"][0], ins["Out@GRAD"][0]
    rank = xs[0].dim()
    if attrs.get("use_stack"):
        parts = list(torch.unbind(g, norm_axis(attrs.get("axis", 1), rank + 1)))
    else:
        axis = norm_axis(attrs.get("axis", 1), rank)
        parts = list(torch.split(g, [x.shape[axis] for x in xs], axis))
    return {"X@GRAD": [parts]}


register(
    OpDef(
        "tensor_array_to_tensor",
        ("X",),
        ("Out", "OutIndex"),
        {"axis": 1, "use_stack": False},
        _to_tensor_infer,
        _to_tensor_kernel,
        no_buffer_inputs=frozenset({"X"}),
        grad=GradDef(inputs=("X",), in_grads=("X",), kernel=_to_tensor_grad),
        doc="the array's elements concatenated (or stacked) along axis; OutIndex: each one's size there",
    )
)
