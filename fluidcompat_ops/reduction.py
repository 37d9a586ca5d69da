"""Reduction ops: reduce_sum, reduce_mean, reduce_max, reduce_min, reduce_prod, reduce_all,
reduce_any, mean, frobenius_norm and p_norm (fluid 1.8's ``paddle.norm``), and isfinite, isinf and
isnan (fluid 1.8's: one bool for the whole tensor)."""

from __future__ import annotations

from fluidcompat_ops.registry import GradDef, OpDef, _op, register
from fluidcompat_ops.shapes import _x, first, norm_axis, out, reduce_shape

torch = None  # NOTE: [Lazy torch] in registry.py
F = None


# -- mean ------------------------------------------------------------------------------------------
def _mean_grad(ins, attrs):
    x, g = ins["X"][0], ins["Out@GRAD"][0]
    return {"X@GRAD": [(g.reshape(()) / x.numel()).expand(x.shape)]}


register(
    OpDef(
        "mean",
        ("X",),
        ("Out",),
        {},
        lambda ins, attrs: out("Out", (1,), ins["X"][0].dtype),
        lambda ins, attrs: {"Out": [ins["X"][0].mean().reshape(1)]},
        grad=GradDef(("X",), kernel=_mean_grad),
    )
)


# -- reduce_sum, reduce_mean, reduce_max, reduce_min, reduce_prod ----------------------------------
def _reduce_infer(ins, attrs):
    x = first(ins, "X")
    shape = reduce_shape(x.shape, attrs["dim"], attrs["keep_dim"], attrs["reduce_all"])
    return out("Out", shape, x.dtype if attrs.get("out_dtype", -1) == -1 else attrs["out_dtype"])


def _reduce_kernel(fn):
    def kernel(ins, attrs):
        x = ins["X"][0]
        rank = x.dim()
        dims = list(range(rank)) if attrs["reduce_all"] else sorted({d % rank for d in attrs["dim"]})
        y = fn(x, dims, attrs["keep_dim"])
        if y.dim() == 0:
            y = y.reshape([1] * rank if attrs["keep_dim"] else [1])
        return {"Out": [y]}

    return kernel


def same_int_dtype(x):
    """``dtype=`` for a torch sum, product or cumulative sum that keeps an integer tensor's dtype (torch
    would widen int32 to int64; fluid's kernels keep it), None for floats."""
    return None if x.dtype.is_floating_point else x.dtype


def _prod(x, dims, keep):
    for d in sorted(dims, reverse=True):
        x = torch.prod(x, dim=d, keepdim=keep, dtype=same_int_dtype(x))
    return x


def _mean(x, dims, keep):
    if x.dtype.is_floating_point:
        return torch.mean(x, dim=dims, keepdim=keep)
    count = 1
    for d in dims:
        count *= x.shape[d]
    # fluid's integer mean: the sum divided by the count in integers (truncated)
    return torch.div(torch.sum(x, dim=dims, keepdim=keep, dtype=x.dtype), max(count, 1), rounding_mode="trunc")


def _reduce_extreme_grad(ins, attrs):
    """fluid's reduce_max / reduce_min gradient: dOut to every element equal to the result (each of tied
    elements gets all of it; a VJP through torch.amax shares it out)."""
    x, o, g = ins["X"][0], ins["Out"][0], ins["Out@GRAD"][0]
    rank = x.dim()
    dims = range(rank) if attrs["reduce_all"] else {d % rank for d in attrs["dim"]}
    kept = [1 if i in dims else n for i, n in enumerate(x.shape)]
    return {"X@GRAD": [(x == o.reshape(kept)) * g.reshape(kept)]}


_EXTREMES = ("reduce_max", "reduce_min")
_REDUCE = {
    "reduce_sum": lambda x, dims, keep: torch.sum(x, dim=dims, keepdim=keep, dtype=same_int_dtype(x)),
    "reduce_mean": _mean,
    "reduce_max": lambda x, dims, keep: torch.amax(x, dim=dims, keepdim=keep),
    "reduce_min": lambda x, dims, keep: torch.amin(x, dim=dims, keepdim=keep),
    "reduce_prod": _prod,
}
for _name, _fn in _REDUCE.items():
    register(
        OpDef(
            _name,
            ("X",),
            ("Out",),
            {"dim": [0], "keep_dim": False, "reduce_all": False, "in_dtype": -1, "out_dtype": -1},
            _reduce_infer,
            _reduce_kernel(_fn),
            grad=GradDef(("X", "Out"), kernel=_reduce_extreme_grad) if _name in _EXTREMES else GradDef(),
        )
    )


# -- isfinite, isinf, isnan ------------------------------------------------------------------------
def _all_of(fn):
    return lambda ins, a: {"Out": [fn(_x(ins)).reshape(1)]}


for _name, _fn in (
    ("isfinite", lambda x: torch.isfinite(x).all()),
    ("isinf", lambda x: torch.isinf(x).any()),
    ("isnan", lambda x: torch.isnan(x).any()),
):
    _op(_name, ("X",), ("Out",), {}, lambda ins, a: out("Out", (1,), "bool"), _all_of(_fn), grad=False)


# -- reduce_all, reduce_any ------------------------------------------------------------------------
def _reduce_dims(x, a):
    return list(range(x.dim())) if a["reduce_all"] or not a["dim"] else list(a["dim"])


def _reduced(x, y, a):
    return y.reshape(1) if y.dim() == 0 else y


def _bool_reduce_infer(ins, a):
    from fluidcompat_ops.shapes import reduce_shape

    x = first(ins, "X")
    shape = reduce_shape(x.shape, a["dim"], a["keep_dim"], a["reduce_all"] or not a["dim"])
    return out("Out", shape or (1,), a.get("_dtype", x.dtype))


_REDUCE_ATTRS = {"dim": [0], "keep_dim": False, "reduce_all": False}


def _bool_reduce(kind):
    def kernel(ins, a):
        x = _x(ins).bool()
        dims = _reduce_dims(x, a)
        y = x
        for d in sorted((norm_axis(d, x.dim()) for d in dims), reverse=True):
            y = (y.all if kind == "all" else y.any)(d, keepdim=a["keep_dim"])
        return {"Out": [_reduced(x, y, a)]}

    return kernel


_op("reduce_all", ("X",), ("Out",), dict(_REDUCE_ATTRS), _bool_reduce_infer, _bool_reduce("all"), grad=False)
_op("reduce_any", ("X",), ("Out",), dict(_REDUCE_ATTRS), _bool_reduce_infer, _bool_reduce("any"), grad=False)


# -- frobenius_norm, p_norm ------------------------------------------------------------------------
def _frobenius_infer(ins, attrs):
    x = first(ins, "X")
    shape = reduce_shape(x.shape, attrs["dim"], attrs["keep_dim"], attrs["reduce_all"])
    return {"Out": [(shape, x.dtype)]}


def _frobenius_norm(ins, attrs):
    """sqrt(sum X^2) over ``dim`` (every dim with reduce_all), a reduce op's shape rules."""
    x = ins["X"][0]
    rank = x.dim()
    dims = list(range(rank)) if attrs["reduce_all"] else sorted({d % rank for d in attrs["dim"]})
    y = torch.sqrt(torch.sum(x * x, dim=dims, keepdim=attrs["keep_dim"]))
    if y.dim() == 0:
        y = y.reshape([1] * rank if attrs["keep_dim"] else [1])
    return {"Out": [y]}


register(
    OpDef(
        "frobenius_norm",
        ("X",),
        ("Out",),
        {"dim": [0], "keep_dim": False, "reduce_all": False, "in_dtype": -1, "out_dtype": -1},
        _frobenius_infer,
        _frobenius_norm,
        grad=GradDef(("X", "Out")),
    )
)


def _p_norm_infer(ins, attrs):
    x = first(ins, "X")
    axis = norm_axis(attrs["axis"], len(x.shape))
    if attrs["keepdim"]:
        shape = tuple(1 if i == axis else d for i, d in enumerate(x.shape))
    else:
        shape = tuple(d for i, d in enumerate(x.shape) if i != axis) or (1,)
    return {"Out": [(shape, x.dtype)]}


def _p_norm(ins, attrs):
    """(sum |X|^porder)^(1 / porder) along ``axis``."""
    x = ins["X"][0]
    y = torch.linalg.vector_norm(x, ord=attrs["porder"], dim=attrs["axis"], keepdim=attrs["keepdim"])
    return {"Out": [y.reshape(1) if y.dim() == 0 else y]}


register(
    OpDef(
        "p_norm",
        ("X",),
        ("Out",),
        {"porder": 2.0, "axis": -1, "epsilon": 1e-12, "keepdim": False},
        _p_norm_infer,
        _p_norm,
        grad=GradDef(("X", "Out")),
    )
)
