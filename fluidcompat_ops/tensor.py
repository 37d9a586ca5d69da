"""Tensor basics: feed, fetch, assign, assign_value, cast, shape, size, get_tensor_from_selected_rows and
merge_selected_rows; and helpers the op families share (``_tdtype``, ``half_as_fluid_cpu``, ``_to_dtype``,
``_bounds``)."""

from __future__ import annotations

from fluidcompat.dtypes import VarType
from fluidcompat_ops.registry import GradDef, OpDef, _op, register
from fluidcompat_ops.shapes import _x, first, out, same_as

torch = None  # NOTE: [Lazy torch] in registry.py
F = None
TORCH_DTYPES: dict = {}


def _tdtype(code):
    return TORCH_DTYPES[VarType(code)]


_HALF_MAX = 65504.0
_HALF_TINY = 2.0**-14  # the smallest normal float16
_HALF_MANTISSA_DROP = ~0x1FFF  # the 13 float32 mantissa bits float16 does not hold


def half_as_fluid_cpu(t: torch.Tensor) -> torch.Tensor:
    """``t`` as float16 the way fluid 1.8's CPU kernels converted (cast, fill_constant): rounded
    toward zero, subnormals too, and above 65504 infinite (torch rounds to nearest; fluid's GPU
    kernels did too)."""
    x = t.to(torch.float32)
    a = x.abs()
    normal = (x.view(torch.int32) & _HALF_MANTISSA_DROP).view(torch.float32)
    tiny = torch.trunc(x * 2.0**24) * 2.0**-24  # (float16's subnormal spacing)
    y = torch.where(a < _HALF_TINY, tiny, normal)
    y = torch.where(a > _HALF_MAX, torch.copysign(torch.full_like(x, float("inf")), x), y)
    return y.to(torch.float16)  # (exact: every value is on float16's grid now)


def _to_dtype(t: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """``t.to(dtype)``, float16 on the CPU as fluid's CPU kernels made it (half_as_fluid_cpu)."""
    if dtype == torch.float16 and t.dtype != torch.float16 and t.device.type == "cpu" and t.is_floating_point():
        return half_as_fluid_cpu(t)
    return t.to(dtype)


def _bounds(ins, tensor_slot, list_slot, default):
    t = first(ins, tensor_slot)
    if t is not None:
        return [int(v) for v in t.tolist()]
    lst = ins.get(list_slot)
    if lst:
        return [int(v.reshape(-1)[0]) for v in lst]
    return default


# -- feed / fetch: no kernel; the interpreter moves data between the holders and the scope ------
register(OpDef("feed", ("X",), ("Out",), {"col": 0}))
register(OpDef("fetch", ("X",), ("Out",), {"col": 0}))


# -- assign, assign_value, cast -------------------------------------------------------------------
def _copy(x):
    return list(x) if isinstance(x, list) else x.clone()  # a tensor array: NOTE: [Array values]


def _assign_grad_maker(op, out_grads, in_grads):
    return [("assign", {"X": out_grads["Out"]}, {"Out": in_grads["X"]}, {})]


register(
    OpDef(
        "assign",
        ("X",),
        ("Out",),
        {},
        same_as(),
        lambda ins, attrs: {"Out": [_copy(ins["X"][0])]},
        grad=GradDef(in_grads=("X",), maker=_assign_grad_maker),
        # fluid's assign takes no data transform and copies onto its input's place
        place_from_input="X",
        copies_on_device=True,
    )
)

_VALUE_ATTR = {
    VarType.FP32: "fp32_values",
    VarType.INT32: "int32_values",
    VarType.INT64: "int64_values",
    VarType.BOOL: "bool_values",
}


def _assign_value_kernel(ins, attrs):
    code = VarType(attrs["dtype"])
    values = attrs[_VALUE_ATTR[code]]
    t = torch.tensor(values, dtype=_tdtype(code), device=attrs["_device"])
    return {"Out": [t.reshape(attrs["shape"])]}


register(
    OpDef(
        "assign_value",
        (),
        ("Out",),
        {
            "shape": [],
            "dtype": int(VarType.FP32),
            "fp32_values": [],
            "int32_values": [],
            "int64_values": [],
            "bool_values": [],
        },
        lambda ins, attrs: out("Out", attrs["shape"], attrs["dtype"]),
        _assign_value_kernel,
    )
)

register(
    OpDef(
        "cast",
        ("X",),
        ("Out",),
        {"in_dtype": int(VarType.FP32), "out_dtype": int(VarType.FP32)},
        lambda ins, attrs: out("Out", ins["X"][0].shape, attrs["out_dtype"]),
        lambda ins, attrs: {"Out": [_to_dtype(ins["X"][0], _tdtype(attrs["out_dtype"]))]},
        grad=GradDef(in_grads=("X",), maker=lambda op, og, ig: _cast_grad_maker(op, og, ig)),
        place_from_input="X",
    )
)


# -- shape, size -----------------------------------------------------------------------------------
def _cast_grad_maker(op, out_grads, in_grads):
    # fluid differentiates cast with a cast back to the input's type
    attrs = {"in_dtype": op.attrs["out_dtype"], "out_dtype": op.attrs["in_dtype"]}
    return [("cast", {"X": out_grads["Out"]}, {"Out": in_grads["X"]}, attrs)]


def _shape_kernel(ins, attrs):
    return {"Out": [torch.tensor(list(ins["Input"][0].shape), dtype=torch.int32)]}


register(
    OpDef(
        "shape",
        ("Input",),
        ("Out",),
        {},
        lambda ins, attrs: out("Out", (len(ins["Input"][0].shape),), VarType.INT32),
        _shape_kernel,
        host_outputs=frozenset({"Out"}),
        no_buffer_inputs=frozenset({"Input"}),
    )
)


_op(
    "size",
    ("Input",),
    ("Out",),
    {},
    lambda ins, a: out("Out", (1,), "int64"),
    lambda ins, a: {"Out": [torch.tensor([ins["Input"][0].numel()], dtype=torch.int64)]},
    grad=False,
    no_buffer_inputs=frozenset({"Input"}),
    host_outputs=frozenset({"Out"}),
)


# -- get_tensor_from_selected_rows, merge_selected_rows --------------------------------------------
def _selected_rows_values(ins, a):
    from fluidcompat_ops.grad import SelectedRows

    x = _x(ins)
    return {"Out": [x.values if isinstance(x, SelectedRows) else x]}


def _merge_selected_rows(ins, a):
    from fluidcompat_ops.grad import SelectedRows

    x = _x(ins)
    return {"Out": [x.merged() if isinstance(x, SelectedRows) else x]}


_op(
    "get_tensor_from_selected_rows",
    ("X",),
    ("Out",),
    {},
    lambda ins, a: out("Out", (-1,) + tuple(first(ins, "X").shape[1:]), first(ins, "X").dtype),
    _selected_rows_values,
    grad=False,
)
_op("merge_selected_rows", ("X",), ("Out",), {}, same_as(), _merge_selected_rows, grad=False)
