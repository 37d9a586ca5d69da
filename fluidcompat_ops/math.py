"""Elementwise and math ops: elementwise_add/sub/mul/div/min/max/pow/mod/floordiv, compare and
logical ops, scale, sum, matmul, mul, bmm, dot, cross, dist, addmm, cos_sim, kron, trace, cumsum,
bilinear_tensor_product, fsp, squared_l2_distance, clip, clip_by_norm, increment, sign and allclose."""

from __future__ import annotations

from fluidcompat import lod_levels
from fluidcompat.dtypes import VarType
from fluidcompat_ops.array import add_values
from fluidcompat_ops.grad import SelectedRows
from fluidcompat_ops.reduction import same_int_dtype
from fluidcompat_ops.registry import GradDef, OpDef, _op, register
from fluidcompat_ops.shapes import (
    _x,
    aligned_y_shape,
    broadcast_shapes,
    first,
    merge_dim,
    norm_axis,
    out,
    prod_or_unknown,
    same_as,
)

torch = None  # NOTE: [Lazy torch] in registry.py
F = None
TORCH_DTYPES: dict = {}


def _is_int(t) -> bool:
    return not t.dtype.is_floating_point and t.dtype != torch.bool


# -- elementwise ----------------------------------------------------------------------------------
def _align(x, y, axis):
    """View X and Y so that torch broadcasting gives fluid's ``axis`` broadcasting."""
    if y.dim() < x.dim():
        shape = aligned_y_shape(list(x.shape), list(y.shape), axis)
        if shape is not None:
            y = y.reshape(shape)
    elif x.dim() < y.dim():
        shape = aligned_y_shape(list(y.shape), list(x.shape), axis)
        if shape is not None:
            x = x.reshape(shape)
    return x, y


def _binary_infer(out_dtype=None):
    def infer(ins, attrs):
        x, y = first(ins, "X"), first(ins, "Y")
        if getattr(x, "type", None) == VarType.SELECTED_ROWS:
            if len(y.shape) != 1:
                raise ValueError(
                    "For elementwise_op, if X is Sparse, Y must be scalar. "
                    f"But reveived the size of Y = {len(y.shape)}."
                )
            if y.shape[0] != 1:
                raise ValueError(
                    "For elementwise_op, if X is Sparse(VarType.SELECTED_ROWS), Y must be scalar, the first "
                    f"dimension of Y should be 1. But reveived the first dimension of Y = {y.shape[0]}."
                )
            return out("Out", x.shape, x.dtype)
        shape = broadcast_shapes(x.shape, y.shape, attrs.get("axis", -1), "")
        return out("Out", shape, out_dtype if out_dtype is not None else x.dtype)

    return infer


def _binary_kernel(fn):
    def kernel(ins, attrs):
        x, y = _align(ins["X"][0], ins["Y"][0], attrs["axis"])
        return {"Out": [fn(x, y)]}

    kernel.__name__ = getattr(fn, "__name__", "kernel")
    return kernel


def _div(x, y):
    if _is_int(x):
        return torch.div(x, y, rounding_mode="trunc")
    return torch.div(x, y)


def _floordiv(x, y):
    if _is_int(x):
        return torch.div(x, y, rounding_mode="trunc")
    return torch.floor_divide(x, y)


def _pow(x, y):
    r = torch.pow(x, y)
    return r.to(x.dtype) if r.dtype != x.dtype else r


_ELEMENTWISE = {
    "elementwise_add": lambda x, y: torch.add(x, y),
    "elementwise_sub": lambda x, y: torch.sub(x, y),
    "elementwise_mul": lambda x, y: torch.mul(x, y),
    "elementwise_div": _div,
    "elementwise_max": lambda x, y: torch.maximum(x, y),
    "elementwise_min": lambda x, y: torch.minimum(x, y),
    "elementwise_pow": _pow,
    "elementwise_mod": lambda x, y: torch.fmod(x, y) if _is_int(x) else torch.remainder(x, y),
    "elementwise_floordiv": _floordiv,
}
_ELEMENTWISE_ATTRS = {"axis": -1, "use_mkldnn": False, "x_data_format": "", "y_data_format": ""}


def _sum_to(g, shape):
    """Sum a broadcast gradient back to ``shape``."""
    shape = tuple(shape)
    if tuple(g.shape) == shape:
        return g
    lead = g.dim() - len(shape)
    dims = list(range(lead)) + [lead + i for i, d in enumerate(shape) if d == 1 and g.shape[lead + i] != 1]
    return g.sum(dim=dims, keepdim=True).reshape(shape) if dims else g.reshape(shape)


def _add_sub_grad(sign):
    def kernel(ins, attrs):
        x, y, g = ins["X"][0], ins["Y"][0], ins["Out@GRAD"][0]
        nd = x.dim()
        bias = y.dim() == 1 and nd >= 2 and y.shape[0] == x.shape[-1] and attrs["axis"] in (-1, nd - 1)
        if bias and g.shape == x.shape:
            # a bias over the last axis (fc): dY sums dOut over the other axes
            wanted = attrs["_wanted"]
            res = {}
            if "X" in wanted:
                res["X@GRAD"] = [g]
            if "Y" in wanted:
                gy = g.sum(dim=tuple(range(nd - 1)))
                res["Y@GRAD"] = [gy if sign > 0 else -gy]
            return res
        xa, ya = _align(x, y, attrs["axis"])
        wanted = attrs["_wanted"]
        res = {}
        if "X" in wanted:
            res["X@GRAD"] = [_sum_to(g, xa.shape).reshape(x.shape)]
        if "Y" in wanted:
            gy = _sum_to(g, ya.shape).reshape(y.shape)
            res["Y@GRAD"] = [gy if sign > 0 else -gy]
        return res

    return kernel


def _mul_elementwise_grad(ins, attrs):
    x, y, g = ins["X"][0], ins["Y"][0], ins["Out@GRAD"][0]
    xa, ya = _align(x, y, attrs["axis"])
    wanted = attrs["_wanted"]
    res = {}
    if "X" in wanted:
        res["X@GRAD"] = [_sum_to(g * ya, xa.shape).reshape(x.shape)]
    if "Y" in wanted:
        res["Y@GRAD"] = [_sum_to(g * xa, ya.shape).reshape(y.shape)]
    return res


def _max_min_grad(x_wins):
    """fluid's: dOut goes to X where ``x_wins(X, Y)`` (strictly greater for max, less for min), to Y
    elsewhere: a tie's gradient goes to Y whole (a VJP through torch.maximum halves it)."""

    def kernel(ins, attrs):
        x, y, g = ins["X"][0], ins["Y"][0], ins["Out@GRAD"][0]
        xa, ya = _align(x, y, attrs["axis"])
        to_x = x_wins(xa, ya)
        wanted = attrs["_wanted"]
        res = {}
        if "X" in wanted:
            res["X@GRAD"] = [_sum_to(g * to_x, xa.shape).reshape(x.shape)]
        if "Y" in wanted:
            res["Y@GRAD"] = [_sum_to(g * ~to_x, ya.shape).reshape(y.shape)]
        return res

    return kernel


_ELEMENTWISE_GRADS = {
    "elementwise_add": _add_sub_grad(1),
    "elementwise_sub": _add_sub_grad(-1),
    "elementwise_mul": _mul_elementwise_grad,
    "elementwise_max": _max_min_grad(lambda x, y: x > y),
    "elementwise_min": _max_min_grad(lambda x, y: x < y),
}
_TORCH_FN = {"elementwise_add": "add", "elementwise_sub": "sub", "elementwise_mul": "mul"}


def _sparse_x(op) -> bool:
    x = op.block._find_var_recursive(op.inputs["X"][0])
    return x is not None and x.type == VarType.SELECTED_ROWS


def _scale_rows(ins, attrs):
    """elementwise_mul of a SelectedRows by a one-element Y: its rows' values scaled (clipping sparse grads)."""
    x, y = ins["X"][0], ins["Y"][0]
    if not isinstance(x, SelectedRows):
        return {"Out": [torch.mul(*_align(x, y, attrs["axis"]))]}
    return {"Out": [SelectedRows(x.rows, x.values * y.reshape(()), x.height)]}


def _binary_specialize(name, fn):
    """axis=-1 is numpy's broadcasting: the kernel calls ``fn`` (add/sub/mul: torch's) on the inputs."""

    def specialize(attrs, slots):
        if name == "elementwise_mul" and _sparse_x(attrs["_op"]):
            return _scale_rows
        if attrs["axis"] != -1:
            return None
        f = getattr(torch, _TORCH_FN[name]) if name in _TORCH_FN else fn
        return lambda ins, attrs: {"Out": [f(ins["X"][0], ins["Y"][0])]}

    return specialize


_NO_GRAD = {"elementwise_mod", "elementwise_floordiv"}
for _name, _fn in _ELEMENTWISE.items():
    _grad = (
        None
        if _name in _NO_GRAD
        else GradDef(
            ("X", "Y"),
            kernel=_ELEMENTWISE_GRADS.get(_name),
            # add and sub's gradients need the inputs' shapes only (fluid's NoNeedBufferVars)
            shape_only=("X", "Y") if _name in ("elementwise_add", "elementwise_sub") else (),
            # the hand-written grads are torch ops: differentiable again (fluid's elementwise_*_grad_grad)
            double=True,
            grad_grad_slots={"X@GRAD": "X@GRAD", "Y@GRAD": "Y@GRAD"} if _name == "elementwise_mul" else {},
        )
    )
    register(
        OpDef(
            _name,
            ("X", "Y"),
            ("Out",),
            _ELEMENTWISE_ATTRS,
            _binary_infer(),
            _binary_kernel(_fn),
            grad=_grad,
            specialize=_binary_specialize(_name, _fn),
        )  # fmt: skip
    )


# -- compare and logical -----------------------------------------------------------------------------
_COMPARE = {
    "less_than": lambda x, y: torch.lt(x, y),
    "less_equal": lambda x, y: torch.le(x, y),
    "greater_than": lambda x, y: torch.gt(x, y),
    "greater_equal": lambda x, y: torch.ge(x, y),
    "equal": lambda x, y: torch.eq(x, y),
    "not_equal": lambda x, y: torch.ne(x, y),
}
for _name, _fn in _COMPARE.items():
    register(
        OpDef(
            _name,
            ("X", "Y"),
            ("Out",),
            {"axis": -1, "force_cpu": False},
            _binary_infer(VarType.BOOL),
            _binary_kernel(_fn),
            cpu_attr="force_cpu",
            place_from_input="X",
        )
    )

_LOGICAL = {
    "logical_and": lambda x, y: torch.logical_and(x, y),
    "logical_or": lambda x, y: torch.logical_or(x, y),
    "logical_xor": lambda x, y: torch.logical_xor(x, y),
}
lod_levels.takes_x_lod(*_ELEMENTWISE, *_COMPARE, *_LOGICAL)


def _logical_kernel(fn):
    return lambda ins, attrs: {"Out": [fn(ins["X"][0], ins["Y"][0])]}


for _name, _fn in _LOGICAL.items():
    register(
        OpDef(_name, ("X", "Y"), ("Out",), {}, _binary_infer(VarType.BOOL), _logical_kernel(_fn), place_from_input="X")
    )
register(
    OpDef(
        "logical_not",
        ("X",),
        ("Out",),
        {},
        lambda ins, attrs: out("Out", ins["X"][0].shape, VarType.BOOL),
        lambda ins, attrs: {"Out": [torch.logical_not(ins["X"][0])]},
        place_from_input="X",
    )
)


# -- scale, sum ------------------------------------------------------------------------------------
def _scale_kernel(ins, attrs):
    x = ins["X"][0]
    st = first(ins, "ScaleTensor")
    s = st.reshape(-1)[0].item() if st is not None else attrs["scale"]
    b = attrs["bias"]
    if isinstance(x, SelectedRows):  # a sparse gradient (averaged on a parameter server): its rows' values
        if b:
            raise ValueError("scale: a bias cannot be added to a SelectedRows (sparse) X")
        return {"Out": [SelectedRows(x.rows, x.values * s, x.height)]}
    if _is_int(x):
        s, b = int(s), int(b)
    if attrs["bias_after_scale"]:
        y = x * s
        if b or y.is_floating_point():  # floats get the bias even when 0, as in fluid: -x of 0 is 0, not -0
            y.add_(b)  # x * s is a new tensor
    else:
        y = (x + b) * s
    return {"Out": [y if y.dtype == x.dtype else y.to(x.dtype)]}


register(
    OpDef(
        "scale",
        ("X", "ScaleTensor"),
        ("Out",),
        {"scale": 1.0, "bias": 0.0, "bias_after_scale": True},
        same_as(),
        _scale_kernel,
        grad=GradDef(in_grads=("X",), maker=lambda op, og, ig: _scale_grad_maker(op, og, ig)),
        host_inputs=frozenset({"ScaleTensor"}),  # read as a number on the host
    )
)


def _scale_grad_maker(op, out_grads, in_grads):
    # fluid differentiates scale with another scale op (no bias), by its ScaleTensor where it has one
    ins = {"X": out_grads["Out"]}
    if op.inputs.get("ScaleTensor"):
        ins["ScaleTensor"] = list(op.inputs["ScaleTensor"])
    return [("scale", ins, {"Out": in_grads["X"]}, {"scale": op.attrs["scale"], "bias": 0.0})]


def _sum_infer(ins, attrs):
    xs = ins["X"]
    if not xs:
        raise ValueError("sum needs at least one input")
    shape = list(xs[0].shape)
    for v in xs[1:]:
        if len(v.shape) != len(shape):
            raise ValueError(f"all inputs of sum must have the same shape. Received: {[tuple(x.shape) for x in xs]}")
        shape = [
            merge_dim(a, b, f"all inputs of sum must have the same shape. Received: {[tuple(x.shape) for x in xs]}")
            for a, b in zip(shape, v.shape)
        ]
    return out("Out", shape, xs[0].dtype)


def _sum_kernel(ins, attrs):
    xs = [x for x in ins["X"] if x is not None]
    if any(isinstance(x, list) for x in xs):  # arrays: element by element
        acc = None
        for x in xs:
            acc = add_values(acc, x)
        return {"Out": [acc]}
    sparse = [x for x in xs if isinstance(x, SelectedRows)]
    dense = [x for x in xs if not isinstance(x, SelectedRows)]
    if sparse and not dense:
        # rows of sparse gradients concatenate; repeated rows add up where they are applied
        rows = torch.cat([s.rows for s in sparse])
        values = torch.cat([s.values for s in sparse])
        return {"Out": [SelectedRows(rows, values, sparse[0].height)]}
    acc = dense[0]
    for x in dense[1:]:
        acc = acc + x
    if len(dense) == 1 and not sparse:
        acc = acc.clone()
    for s in sparse:
        acc = acc.index_add(0, s.rows, s.values)
    return {"Out": [acc]}


def _scaled_copies(factor):
    """fluid differentiates sum (factor 1) and sign (factor 0) with one scale op of dOut per input."""

    def maker(op, out_grads, in_grads):
        return [("scale", {"X": out_grads["Out"]}, {"Out": [n]}, {"scale": factor}) for n in in_grads["X"] if n]

    return maker


register(
    OpDef(
        "sum",
        ("X",),
        ("Out",),
        {"use_mkldnn": False},
        _sum_infer,
        _sum_kernel,
        grad=GradDef(in_grads=("X",), maker=_scaled_copies(1.0)),
    )
)


# -- matmul, mul ----------------------------------------------------------------------------------------
def _matmul_shape(xs, ys, tx, ty):
    x, y = list(xs), list(ys)
    x1, y1 = len(x) == 1, len(y) == 1
    if x1:
        x = [1, x[0]]
    elif tx:
        x[-1], x[-2] = x[-2], x[-1]
    if y1:
        y = [y[0], 1]
    elif ty:
        y[-1], y[-2] = y[-2], y[-1]
    if x[-1] >= 0 and y[-2] >= 0 and x[-1] != y[-2]:
        raise ValueError(
            f"the inner dimensions of X and Y do not match (transpose_X={tx}, transpose_Y={ty}). "
            f"Received: X.shape={tuple(xs)}, Y.shape={tuple(ys)}"
        )
    bx, by = x[:-2], y[:-2]
    n = max(len(bx), len(by))
    bx = [1] * (n - len(bx)) + bx
    by = [1] * (n - len(by)) + by
    msg = f"the batch dimensions of X and Y do not broadcast. Received: X.shape={tuple(xs)}, Y.shape={tuple(ys)}"
    res = [merge_dim(a, b, msg) for a, b in zip(bx, by)] + [x[-2], y[-1]]
    if y1:
        res.pop()
    if x1:
        res.pop(-1 if y1 else -2)
    return res or [1]


def _heads(xs, ys, attrs):
    """fluid's multi-head matmul (head_number > 1, 2-D and 3-D operands): None for a plain matmul, else
    (mode, heads). Mode 1: X's width is Y's height, both cut in head_number parts along it; mode 2: X's
    width is head_number times Y's height, X cut along its width and Y along its columns. The parts'
    products lie side by side."""
    heads = attrs.get("head_number", 1)
    if heads <= 1 or len(xs) < 2 or len(ys) < 2:
        return None
    k = xs[-2] if attrs["transpose_X"] else xs[-1]
    rows = ys[-1] if attrs["transpose_Y"] else ys[-2]
    return (1 if k == rows or k < 0 or rows < 0 else 2), heads


def _head_shapes(xs, ys, attrs, heads):
    """The operands' shapes as one head's plain matmul sees them."""
    mode, h = heads
    xs, ys = list(xs), list(ys)
    xs[-2 if attrs["transpose_X"] else -1] //= h
    if mode == 1:
        ys[-1 if attrs["transpose_Y"] else -2] //= h
    else:
        ys[-2 if attrs["transpose_Y"] else -1] //= h
    return xs, ys


def _matmul_infer(ins, attrs):
    x, y = first(ins, "X"), first(ins, "Y")
    heads = _heads(x.shape, y.shape, attrs)
    xs, ys = (x.shape, y.shape) if heads is None else _head_shapes(x.shape, y.shape, attrs, heads)
    shape = _matmul_shape(xs, ys, attrs["transpose_X"], attrs["transpose_Y"])
    if heads is not None and shape[-1] >= 0:
        shape[-1] *= heads[1]
    return out("Out", shape, x.dtype)


def _matmul_kernel(ins, attrs):
    x, y = ins["X"][0], ins["Y"][0]
    heads = _heads(list(x.shape), list(y.shape), attrs)
    if heads is not None:
        xs, ys = _head_shapes(list(x.shape), list(y.shape), attrs, heads)
        shape = _matmul_shape(xs, ys, attrs["transpose_X"], attrs["transpose_Y"])
        shape[-1] *= heads[1]
    else:
        shape = _matmul_shape(list(x.shape), list(y.shape), attrs["transpose_X"], attrs["transpose_Y"])
    if attrs["transpose_X"] and x.dim() > 1:
        x = x.transpose(-1, -2)
    if attrs["transpose_Y"] and y.dim() > 1:
        y = y.transpose(-1, -2)
    if heads is not None:
        mode, h = heads
        parts = zip(x.chunk(h, -1), y.chunk(h, -2 if mode == 1 else -1))
        r = torch.cat([torch.matmul(a, b) for a, b in parts], -1)
    else:
        r = torch.matmul(x, y)
    if attrs["alpha"] != 1.0:
        r = r * attrs["alpha"]
    return {"Out": [r.reshape(shape)]}


register(
    OpDef(
        "matmul",
        ("X", "Y"),
        ("Out",),
        {"transpose_X": False, "transpose_Y": False, "alpha": 1.0},
        _matmul_infer,
        _matmul_kernel,
        grad=GradDef(),
    )
)


def _mul_infer(ins, attrs):
    x, y = first(ins, "X"), first(ins, "Y")
    xn, yn = attrs["x_num_col_dims"], attrs["y_num_col_dims"]
    if not 0 < xn < len(x.shape) + (len(x.shape) == 1) or not 0 < yn < len(y.shape) + (len(y.shape) == 1):
        raise ValueError(
            f"x_num_col_dims/y_num_col_dims out of range. Received: x_num_col_dims={xn}, X.shape={x.shape}, "
            f"y_num_col_dims={yn}, Y.shape={y.shape}"
        )
    k1, k2 = prod_or_unknown(x.shape[xn:]), prod_or_unknown(y.shape[:yn])
    if k1 >= 0 and k2 >= 0 and k1 != k2:
        raise ValueError(
            "the width of X (product of its dims from x_num_col_dims) must equal the height of Y. "
            f"Received: X.shape={x.shape}, x_num_col_dims={xn}, Y.shape={y.shape}, y_num_col_dims={yn}"
        )
    return out("Out", tuple(x.shape[:xn]) + tuple(y.shape[yn:]), x.dtype)


def _mul_kernel(ins, attrs):
    x, y = ins["X"][0], ins["Y"][0]
    xn, yn = attrs["x_num_col_dims"], attrs["y_num_col_dims"]
    xs, ys = x.shape, y.shape
    x2 = x.reshape(-1, _numel(xs[xn:])) if x.dim() != 2 or xn != 1 else x
    y2 = y.reshape(_numel(ys[:yn]), -1) if y.dim() != 2 or yn != 1 else y
    r = torch.mm(x2, y2)
    if x.dim() != 2 or y.dim() != 2:
        r = r.reshape(tuple(xs[:xn]) + tuple(ys[yn:]))
    return {"Out": [r]}


def _mul_grad(ins, attrs):
    x, y, g = ins["X"][0], ins["Y"][0], ins["Out@GRAD"][0]
    xn, yn = attrs["x_num_col_dims"], attrs["y_num_col_dims"]
    if xn == 1 and yn == 1 and x.dim() == 2 and y.dim() == 2 and g.dim() == 2:  # fc's case: no reshapes
        wanted = attrs["_wanted"]
        res = {}
        if "X" in wanted:
            res["X@GRAD"] = [torch.mm(g, y.t())]
        if "Y" in wanted:
            res["Y@GRAD"] = [torch.mm(x.t(), g)]
        return res
    x2 = x.reshape(-1, _numel(x.shape[xn:]))
    y2 = y.reshape(_numel(y.shape[:yn]), -1)
    g2 = g.reshape(x2.shape[0], y2.shape[1])
    wanted = attrs["_wanted"]
    res = {}
    if "X" in wanted:
        res["X@GRAD"] = [torch.mm(g2, y2.t()).reshape(x.shape)]
    if "Y" in wanted:
        res["Y@GRAD"] = [torch.mm(x2.t(), g2).reshape(y.shape)]
    return res


def _numel(dims):
    n = 1
    for d in dims:
        n *= d
    return n


register(
    OpDef(
        "mul",
        ("X", "Y"),
        ("Out",),
        {
            "x_num_col_dims": 1,
            "y_num_col_dims": 1,
            "scale_x": 1.0,
            "scale_y": [1.0],
            "scale_out": 1.0,
            "force_fp32_output": False,
        },
        _mul_infer,
        _mul_kernel,
        grad=GradDef(("X", "Y"), kernel=_mul_grad),
    )
)


# -- clip ------------------------------------------------------------------------------------------
def _clip_bounds(ins, attrs):
    mn, mx = first(ins, "Min"), first(ins, "Max")
    lo = mn.reshape(-1)[0].item() if mn is not None else attrs["min"]
    hi = mx.reshape(-1)[0].item() if mx is not None else attrs["max"]
    return lo, hi


def _clip_grad(ins, attrs):
    """fluid's: dOut strictly inside (min, max), 0 at and beyond the bounds."""
    lo, hi = _clip_bounds(ins, attrs)
    x, g = ins["X"][0], ins["Out@GRAD"][0]
    return {"X@GRAD": [g * ((x > lo) & (x < hi))]}


def _clip_kernel(ins, attrs):
    lo, hi = _clip_bounds(ins, attrs)
    x = ins["X"][0]
    if isinstance(x, SelectedRows):  # a sparse gradient: its rows merged, then clipped
        m = x.merged()
        return {"Out": [SelectedRows(m.rows, torch.clamp(m.values, lo, hi), m.height)]}
    return {"Out": [torch.clamp(x, lo, hi)]}


def _clip_infer(ins, attrs):
    if attrs["min"] > attrs["max"] and not ins.get("Min") and not ins.get("Max"):
        raise ValueError(
            f"max should be greater than or equal to min. Received: min={attrs['min']}, max={attrs['max']}"
        )
    return same_as()(ins, attrs)


register(
    OpDef(
        "clip",
        ("X", "Min", "Max"),
        ("Out",),
        {"min": 0.0, "max": 0.0},
        _clip_infer,
        _clip_kernel,
        host_inputs=frozenset({"Min", "Max"}),
        grad=GradDef(("X", "Min", "Max"), in_grads=("X",), kernel=_clip_grad),
    )
)


# -- increment, sign, clip_by_norm -----------------------------------------------------------------
def _increment_kernel(ins, attrs):
    x = ins["X"][0]
    step = attrs["step"]
    return {"Out": [x + (int(step) if _is_int(x) else step)]}


def _increment_infer(ins, attrs):
    x = first(ins, "X")
    if prod_or_unknown(x.shape) not in (1, -1):
        raise ValueError(f"increment needs a tensor with one element. Received: X.shape={x.shape}")
    return out("Out", x.shape, x.dtype)


register(OpDef("increment", ("X",), ("Out",), {"step": 1.0}, _increment_infer, _increment_kernel))


register(
    OpDef(
        "sign",
        ("X",),
        ("Out",),
        {},
        same_as(),
        lambda ins, attrs: {"Out": [torch.sign(ins["X"][0])]},
        grad=GradDef(in_grads=("X",), maker=_scaled_copies(0.0)),
    )
)


def _clip_by_norm_kernel(ins, attrs):
    x = ins["X"][0]
    max_norm = attrs["max_norm"]
    if isinstance(x, SelectedRows):  # a sparse gradient: the norm of its merged rows
        m = x.merged()
        scale = max_norm / torch.clamp(torch.linalg.vector_norm(m.values), min=max_norm)
        return {"Out": [SelectedRows(m.rows, m.values * scale, m.height)]}
    norm = torch.linalg.vector_norm(x)
    return {"Out": [x * (max_norm / torch.clamp(norm, min=max_norm))]}


register(OpDef("clip_by_norm", ("X",), ("Out",), {"max_norm": 1.0}, same_as(), _clip_by_norm_kernel))


# -- cumsum, kron, trace ---------------------------------------------------------------------------
def _cumsum(ins, a):
    x = _x(ins)
    axis = a["axis"]
    if a["reverse"]:
        x = torch.flip(x, [axis])
    y = torch.cumsum(x, axis, dtype=same_int_dtype(x))
    if a["exclusive"]:
        y = y - x
    if a["reverse"]:
        y = torch.flip(y, [axis])
    return {"Out": [y]}


def _cumsum_grad_maker(op, og, ig):
    # fluid differentiates cumsum with a cumsum the other way
    attrs = {"axis": op.attrs["axis"], "exclusive": op.attrs["exclusive"], "reverse": not op.attrs["reverse"]}
    return [("cumsum", {"X": og["Out"]}, {"Out": ig["X"]}, attrs)]


register(
    OpDef(
        "cumsum",
        ("X",),
        ("Out",),
        {"axis": -1, "exclusive": False, "reverse": False},
        same_as(),
        _cumsum,
        grad=GradDef(in_grads=("X",), maker=_cumsum_grad_maker),
    )
)


def _kron_infer(ins, a):
    x, y = first(ins, "X"), first(ins, "Y")
    rank = max(len(x.shape), len(y.shape))
    xs = [1] * (rank - len(x.shape)) + list(x.shape)
    ys = [1] * (rank - len(y.shape)) + list(y.shape)
    return out("Out", [p * q if p >= 0 and q >= 0 else -1 for p, q in zip(xs, ys)], x.dtype)


_op("kron", ("X", "Y"), ("Out",), {}, _kron_infer, lambda ins, a: {"Out": [torch.kron(ins["X"][0], ins["Y"][0])]})


def _trace_infer(ins, a):
    x = first(ins, "Input")
    rank = len(x.shape)
    d1, d2 = norm_axis(a["dim1"], rank), norm_axis(a["dim2"], rank)
    shape = [s for i, s in enumerate(x.shape) if i not in (d1, d2)] or [1]
    return out("Out", shape, x.dtype)


def _trace(ins, a):
    x = ins["Input"][0]
    d = torch.diagonal(x, a["offset"], a["dim1"], a["dim2"]).sum(-1)
    return {"Out": [d.reshape(1) if d.dim() == 0 else d]}


_op("trace", ("Input",), ("Out",), {"offset": 0, "dim1": 0, "dim2": 1}, _trace_infer, _trace)


# -- bmm, dot, cross, dist, addmm, cos_sim ---------------------------------------------------------
def _bmm_infer(ins, a):
    x, y = first(ins, "X"), first(ins, "Y")
    if len(x.shape) != 3 or len(y.shape) != 3:
        raise ValueError(f"bmm needs 3-D inputs. Received: X {list(x.shape)}, Y {list(y.shape)}")
    if x.shape[2] >= 0 and y.shape[1] >= 0 and x.shape[2] != y.shape[1]:
        raise ValueError(f"bmm: X's last dim must equal Y's second. Received: X {list(x.shape)}, Y {list(y.shape)}")
    return out("Out", (x.shape[0], x.shape[1], y.shape[2]), x.dtype)


_op("bmm", ("X", "Y"), ("Out",), {}, _bmm_infer, lambda ins, a: {"Out": [torch.bmm(ins["X"][0], ins["Y"][0])]})


def _dot_infer(ins, a):
    x = first(ins, "X")
    return out("Out", list(x.shape[:-1]) + [1] if len(x.shape) > 1 else [1], x.dtype)


_op(
    "dot",
    ("X", "Y"),
    ("Out",),
    {},
    _dot_infer,
    lambda ins, a: {"Out": [(ins["X"][0] * ins["Y"][0]).sum(-1, keepdim=True)]},
)


def _cross(ins, a):
    x, y = ins["X"][0], ins["Y"][0]
    dim = a["dim"]
    if dim == -100:  # fluid's "not given": the first axis of size 3
        dim = next(i for i, s in enumerate(x.shape) if s == 3)
    return {"Out": [torch.linalg.cross(x, y, dim=dim)]}


_op("cross", ("X", "Y"), ("Out",), {"dim": -100}, same_as(), _cross)


def _dist(ins, a):
    d = (ins["X"][0] - ins["Y"][0]).reshape(-1)
    norm = torch.linalg.vector_norm(d, ord=a["p"]).reshape(1)
    if a["p"] == 0 and d.requires_grad:  # the count of non-zeros: zero gradients, as fluid's dist_grad gave
        norm = norm + (d * 0).sum()
    return {"Out": [norm]}


_op("dist", ("X", "Y"), ("Out",), {"p": 2.0}, lambda ins, a: out("Out", (1,), first(ins, "X").dtype), _dist)


def _addmm(ins, a):
    return {"Out": [a["Beta"] * ins["Input"][0] + a["Alpha"] * (ins["X"][0] @ ins["Y"][0])]}


def _addmm_infer(ins, a):
    x, y = first(ins, "X"), first(ins, "Y")
    return out("Out", (x.shape[0], y.shape[1]), x.dtype)


_op("addmm", ("Input", "X", "Y"), ("Out",), {"Alpha": 1.0, "Beta": 1.0}, _addmm_infer, _addmm)


def _rows(t):
    return t.reshape(t.shape[0], -1)


def _cos_sim(ins, a):
    """Norms at least 1e-4, as fluid's: a zero row's similarity is 0, not 0 / 0."""
    xf, yf = _rows(ins["X"][0]), _rows(ins["Y"][0])
    xn = torch.linalg.vector_norm(xf, dim=1, keepdim=True).clamp_min_(1e-4)
    yn = torch.linalg.vector_norm(yf, dim=1, keepdim=True).clamp_min_(1e-4)
    return {"Out": [(xf * yf).sum(1, keepdim=True) / (xn * yn)], "XNorm": [xn], "YNorm": [yn]}


def _cos_sim_grad(ins, a):
    """fluid's: dX = dOut * (Y / (|X| |Y|) - Out * X / |X|^2), dY alike (summed over X's rows when Y has
    one row), with the norms the forward op kept."""
    x, y = ins["X"][0], ins["Y"][0]
    xf, yf, z, g = _rows(x), _rows(y), ins["Out"][0], ins["Out@GRAD"][0]
    xn, yn = ins["XNorm"][0], ins["YNorm"][0]
    prod = xn * yn
    dx = g * (yf / prod - z * xf / (xn * xn))
    dy = g * (xf / prod - z * yf / (yn * yn))
    if yf.shape[0] != xf.shape[0]:
        dy = dy.sum(0, keepdim=True)
    return {"X@GRAD": [dx.reshape(x.shape)], "Y@GRAD": [dy.reshape(y.shape)]}


def _cos_sim_infer(ins, a):
    x, y = first(ins, "X"), first(ins, "Y")
    n = x.shape[0]
    return {"Out": [((n, 1), x.dtype)], "XNorm": [((n, 1), x.dtype)], "YNorm": [((y.shape[0], 1), x.dtype)]}


register(
    OpDef(
        "cos_sim",
        ("X", "Y"),
        ("Out", "XNorm", "YNorm"),
        {},
        _cos_sim_infer,
        _cos_sim,
        grad=GradDef(("X", "Y", "Out", "XNorm", "YNorm"), in_grads=("X", "Y"), kernel=_cos_sim_grad),
    )
)


# -- allclose --------------------------------------------------------------------------------------
def _allclose(ins, a):
    x, y = ins["Input"][0], ins["Other"][0]
    # on the device, without reading the answer back to the host
    ok = torch.isclose(x, y, rtol=float(a["rtol"]), atol=float(a["atol"]), equal_nan=a["equal_nan"]).all()
    return {"Out": [ok.reshape(1)]}


_op(
    "allclose",
    ("Input", "Other"),
    ("Out",),
    {"rtol": 1e-05, "atol": 1e-08, "equal_nan": False},
    lambda ins, a: out("Out", (1,), "bool"),
    _allclose,
    grad=False,
)


# -- bilinear_tensor_product, fsp ------------------------------------------------------------------
def _bilinear_tp(ins, a):
    x, y, w, b = ins["X"][0], ins["Y"][0], ins["Weight"][0], first(ins, "Bias")
    out_t = torch.einsum("ni,kij,nj->nk", x, w, y)
    return {"Out": [out_t + b.reshape(1, -1) if b is not None else out_t]}


_op(
    "bilinear_tensor_product",
    ("X", "Y", "Weight", "Bias"),
    ("Out",),
    {},
    lambda ins, a: out("Out", (first(ins, "X").shape[0], first(ins, "Weight").shape[0]), first(ins, "X").dtype),
    _bilinear_tp,
)


def _fsp(ins, a):
    x, y = ins["X"][0], ins["Y"][0]
    n, c1, h, w = x.shape
    return {"Out": [torch.bmm(x.reshape(n, c1, h * w), y.reshape(n, y.shape[1], h * w).transpose(1, 2)) / (h * w)]}


_op(
    "fsp",
    ("X", "Y"),
    ("Out",),
    {},
    lambda ins, a: out(
        "Out", (first(ins, "X").shape[0], first(ins, "X").shape[1], first(ins, "Y").shape[1]), first(ins, "X").dtype
    ),
    _fsp,
)


# -- squared_l2_distance ---------------------------------------------------------------------------
def _sq_l2_infer(ins, attrs):
    x, y = first(ins, "X"), first(ins, "Y")
    if len(x.shape) != len(y.shape):
        raise ValueError(
            f"Input(X) and Input(Y) must have the same rank. Received: X.shape={x.shape}, Y.shape={y.shape}"
        )
    if y.shape[0] not in (1, -1) and x.shape[0] >= 0 and y.shape[0] != x.shape[0]:
        raise ValueError(
            f"Y's first dimension must be 1 or X's first dimension. Received: X.shape={x.shape}, Y.shape={y.shape}"
        )
    width = prod_or_unknown(x.shape[1:])
    return {"sub_result": [((x.shape[0], width), x.dtype)], "Out": [((x.shape[0], 1), x.dtype)]}


def _squared_l2_distance(ins, attrs):
    """sub_result = X - Y as [N, the rest] (Y of one row is every row's), Out = its rows' sums of squares."""
    x, y = ins["X"][0], ins["Y"][0]
    sub = x.reshape(x.shape[0], -1) - y.reshape(y.shape[0], -1)
    return {"sub_result": [sub], "Out": [torch.sum(sub * sub, dim=1, keepdim=True)]}


register(
    OpDef(
        "squared_l2_distance",
        ("X", "Y"),
        ("sub_result", "Out"),
        {},
        _sq_l2_infer,
        _squared_l2_distance,
        grad=GradDef(("X", "Y", "sub_result")),
    )
)
