"""Shape manipulation ops: reshape2, transpose2, flatten2, squeeze2, unsqueeze2 (and the first-generation
reshape, transpose, flatten, squeeze and unsqueeze), concat, split, stack, unstack, unbind, expand,
expand_as, pad, pad2d, pad_constant_like, flip, reverse and roll.

fluid 1.8 still ran the first-generation ops (programs and inference models saved before the ``*2`` ops
with XShape replaced them). They share the ``*2`` ops' shape rules; their grads (``<type>_grad``, reading
X for its shape only) reshape dOut back to X's shape. fluid differentiated ``unbind`` with a ``stack`` op."""

from __future__ import annotations

from fluidcompat_ops.registry import GradDef, OpDef, _op, register
from fluidcompat_ops.shapes import _x, first, norm_axis, out, prod, prod_or_unknown, same_as
from fluidcompat_ops.tensor import _bounds

torch = None  # NOTE: [Lazy torch] in registry.py
F = None


# -- reshape, transpose, flatten, squeeze, unsqueeze ----------------------------------------------
def _reshape_target(in_shape, shape):
    res = []
    unknown = -1
    for i, d in enumerate(shape):
        if d == 0:
            if i >= len(in_shape):
                raise ValueError(f"shape[{i}] is 0 but X has only {len(in_shape)} dims. Received: shape={shape}")
            res.append(in_shape[i])
        elif d == -1:
            if unknown >= 0:
                raise ValueError(f"only one dimension of shape can be -1. Received: shape={shape}")
            unknown = i
            res.append(-1)
        elif d < -1:
            raise ValueError(f"shape dims must be >= -1. Received: shape={shape}")
        else:
            res.append(d)
    total = prod_or_unknown(in_shape)
    if unknown >= 0 and total >= 0:
        known = prod(d for d in res if d != -1)
        if known == 0 or total % known:
            raise ValueError(f"cannot reshape X of shape {tuple(in_shape)} to {shape}")
        res[unknown] = total // known
    elif unknown < 0 and total >= 0 and prod(res) != total:
        raise ValueError(
            f"the product of shape must equal X's element count. Received: X.shape={tuple(in_shape)}, shape={shape}"
        )
    return res


def _reshape_infer(ins, attrs):
    x = first(ins, "X")
    if ins.get("Shape") and attrs["shape"] and not ins.get("ShapeTensor"):
        # actual_shape: fluid infers from the shape attribute while building and uses the tensor when it runs
        res = _reshape_target(list(x.shape), list(attrs["shape"]))
    elif ins.get("Shape") or ins.get("ShapeTensor"):
        n = len(attrs["shape"]) or (first(ins, "Shape").shape[0] if ins.get("Shape") else len(ins["ShapeTensor"]))
        res = [-1] * max(n, 1)
    else:
        res = _reshape_target(list(x.shape), list(attrs["shape"]))
    return {"Out": [(res, x.dtype)], "XShape": [((0,) + tuple(x.shape), x.dtype)]}


def _with_xshape(x, y):
    # XShape holds X's dims behind a leading 0 and no data, as in fluid; grads read X's shape from it
    return {"Out": [y], "XShape": [x.new_empty((0,) + tuple(x.shape))]}


def _xshape_grad(ins, attrs):
    return {"X@GRAD": [ins["Out@GRAD"][0].reshape(ins["XShape"][0].shape[1:])]}


_XSHAPE_GRAD = GradDef(("XShape",), in_grads=("X",), kernel=_xshape_grad)


def _reshape_kernel(ins, attrs):
    x = ins["X"][0]
    shape = _bounds(ins, "Shape", "ShapeTensor", list(attrs["shape"]))
    return _with_xshape(x, x.reshape(_reshape_target(list(x.shape), shape)))


register(
    OpDef(
        "reshape2",
        ("X", "Shape", "ShapeTensor"),
        ("Out", "XShape"),
        {"shape": []},
        _reshape_infer,
        _reshape_kernel,
        host_inputs=frozenset({"Shape", "ShapeTensor"}),
        grad=_XSHAPE_GRAD,
    )
)


# fluid 1.8's first reshape and transpose: no XShape (the weight-norm programs fluid builds use them, and
# so may programs saved by older fluid); the gradient reads X's shape from X itself.
def _v1(infer):
    return lambda ins, attrs: {"Out": infer(ins, attrs)["Out"]}


register(
    OpDef(
        "reshape",
        ("X", "Shape"),
        ("Out",),
        {"shape": []},
        _v1(_reshape_infer),
        lambda ins, attrs: {"Out": _reshape_kernel(ins, attrs)["Out"]},
        host_inputs=frozenset({"Shape"}),
        grad=GradDef(
            ("X",),
            in_grads=("X",),
            kernel=lambda ins, a: {"X@GRAD": [ins["Out@GRAD"][0].reshape(ins["X"][0].shape)]},
            shape_only=("X",),
        ),
    )
)


def _transpose_infer(ins, attrs):
    x = first(ins, "X")
    perm = list(attrs["axis"])
    if sorted(perm) != list(range(len(x.shape))):
        raise ValueError(f"axis must be a permutation of the dims of X. Received: axis={perm}, X.shape={x.shape}")
    return {"Out": [([x.shape[p] for p in perm], x.dtype)], "XShape": [((0,) + tuple(x.shape), x.dtype)]}


register(
    OpDef(
        "transpose2",
        ("X",),
        ("Out", "XShape"),
        {"axis": []},
        _transpose_infer,
        lambda ins, attrs: _with_xshape(ins["X"][0], ins["X"][0].permute(list(attrs["axis"]))),
        grad=GradDef(("XShape",), in_grads=("X",), kernel=lambda ins, a: _transpose_grad(ins, a)),
    )
)


register(
    OpDef(
        "transpose",
        ("X",),
        ("Out",),
        {"axis": []},
        _v1(_transpose_infer),
        lambda ins, attrs: {"Out": [ins["X"][0].permute(list(attrs["axis"]))]},
        grad=GradDef((), in_grads=("X",), kernel=lambda ins, a: _transpose_grad(ins, a)),
    )
)


def _transpose_grad(ins, attrs):
    perm = list(attrs["axis"])
    inverse = [perm.index(i) for i in range(len(perm))]
    return {"X@GRAD": [ins["Out@GRAD"][0].permute(inverse)]}


def _flatten_shape(shape, axis):
    return [prod_or_unknown(shape[:axis]), prod_or_unknown(shape[axis:])]


def _flatten_infer(ins, attrs):
    x = first(ins, "X")
    axis = attrs["axis"]
    if not 0 <= axis <= len(x.shape):
        raise ValueError(f"axis must be in [0, {len(x.shape)}]. Received: axis={axis}")
    return {"Out": [(_flatten_shape(x.shape, axis), x.dtype)], "XShape": [((0,) + tuple(x.shape), x.dtype)]}


register(
    OpDef(
        "flatten2",
        ("X",),
        ("Out", "XShape"),
        {"axis": 1},
        _flatten_infer,
        lambda ins, attrs: _with_xshape(
            ins["X"][0], ins["X"][0].reshape(_flatten_shape(list(ins["X"][0].shape), attrs["axis"]))
        ),
        grad=_XSHAPE_GRAD,
    )
)


def _squeeze_dims(shape, axes):
    """``shape`` without the axes (all of size 1 when none are given). An axis of unknown size (-1, when
    a program is built) goes, as in fluid 1.8.5; one whose size is not 1 is refused, when built if it
    is known then (fluid 1.8.5 refused only when the program ran)."""
    rank = len(shape)
    if not axes:
        return [d for d in shape if d != 1]
    drop = {norm_axis(a, rank, "axes") for a in axes}
    for i in sorted(drop):
        if shape[i] not in (1, -1):
            raise ValueError(
                f"The size of axis that will be squeezed should be equal to 1. But current axis = {shape[i]},"
                f"input tensor's shape = {list(shape)}. (squeeze axes={list(axes)}: axis {i} has size {shape[i]})"
            )
    return [d for i, d in enumerate(shape) if i not in drop]


def _squeeze_infer(ins, attrs):
    x = first(ins, "X")
    return {"Out": [(_squeeze_dims(x.shape, attrs["axes"]), x.dtype)], "XShape": [((0,) + tuple(x.shape), x.dtype)]}


register(
    OpDef(
        "squeeze2",
        ("X",),
        ("Out", "XShape"),
        {"axes": []},
        _squeeze_infer,
        lambda ins, attrs: _with_xshape(
            ins["X"][0], ins["X"][0].reshape(_squeeze_dims(list(ins["X"][0].shape), attrs["axes"]))
        ),
        grad=_XSHAPE_GRAD,
    )
)


def _unsqueeze_dims(shape, axes):
    res = list(shape)
    for a in axes:
        cur = len(res) + 1
        a = a + cur if a < 0 else a
        if not 0 <= a < cur:
            raise ValueError(f"axes out of range for rank {len(shape)}. Received: axes={axes}")
        res.insert(a, 1)
    return res


def _unsqueeze_axes(ins, attrs):
    return _bounds(ins, "AxesTensor", "AxesTensorList", list(attrs["axes"]))


def _unsqueeze_infer(ins, attrs):
    x = first(ins, "X")
    tensors = ins.get("AxesTensorList") or []
    if ins.get("AxesTensor") or tensors:  # the axes are known when the program runs
        n = len(tensors) or max(first(ins, "AxesTensor").shape[0], 0)
        rank = len(x.shape) + n if n else -1
        return {"Out": [([-1] * max(rank, 1), x.dtype)], "XShape": [((0,) + tuple(x.shape), x.dtype)]}
    return {
        "Out": [(_unsqueeze_dims(x.shape, attrs["axes"]), x.dtype)],
        "XShape": [((0,) + tuple(x.shape), x.dtype)],
    }


register(
    OpDef(
        "unsqueeze2",
        ("X", "AxesTensor", "AxesTensorList"),
        ("Out", "XShape"),
        {"axes": []},
        _unsqueeze_infer,
        lambda ins, attrs: _with_xshape(
            ins["X"][0], ins["X"][0].reshape(_unsqueeze_dims(list(ins["X"][0].shape), _unsqueeze_axes(ins, attrs)))
        ),
        host_inputs=frozenset({"AxesTensor", "AxesTensorList"}),
        grad=_XSHAPE_GRAD,
    )
)


# -- concat, split, stack, expand -----------------------------------------------------------------
def _concat_infer(ins, attrs):
    xs = ins["X"]
    if not xs:
        raise ValueError("concat needs at least one input")
    rank = len(xs[0].shape)
    if ins.get("AxisTensor"):  # the axis is known when the program runs: every dim may change
        return out("Out", [-1] * rank, xs[0].dtype)
    axis = norm_axis(attrs["axis"], rank)
    res = list(xs[0].shape)
    for v in xs[1:]:
        if len(v.shape) != rank:
            raise ValueError(f"all inputs must have the same rank. Received: {[tuple(x.shape) for x in xs]}")
        for i in range(rank):
            if i == axis:
                res[i] = -1 if res[i] < 0 or v.shape[i] < 0 else res[i] + v.shape[i]
            elif res[i] >= 0 and v.shape[i] >= 0 and res[i] != v.shape[i]:
                raise ValueError(
                    f"inputs must match in every dim but axis {axis}. Received: {[tuple(x.shape) for x in xs]}"
                )
    return out("Out", res, xs[0].dtype)


def _axis(ins, attrs) -> int:
    """concat's and split's axis: the AxisTensor's value when given (read when the program runs),
    else the attribute."""
    axis_t = first(ins, "AxisTensor")
    return int(axis_t.reshape(-1)[0]) if axis_t is not None else attrs["axis"]


def _concat_kernel(ins, attrs):
    return {"Out": [torch.cat(ins["X"], dim=_axis(ins, attrs))]}


def _concat_grad(ins, attrs):
    # the inputs' shapes only (fluid: NoNeedBufferVars)
    xs, g = ins["X"], ins["Out@GRAD"][0]
    axis = _axis(ins, attrs)
    axis = axis + g.dim() if axis < 0 else axis
    return {"X@GRAD": list(torch.split(g, [x.shape[axis] for x in xs], dim=axis))}


register(
    OpDef(
        "concat",
        ("X", "AxisTensor"),
        ("Out",),
        {"axis": 0},
        _concat_infer,
        _concat_kernel,
        host_inputs=frozenset({"AxisTensor"}),
        grad=GradDef(kernel=_concat_grad, shape_only=("X",)),
    )
)


def _split_sizes(shape, axis, num, sections):
    """The pieces' sizes along ``axis`` (fluid's checks and texts)."""
    dim = shape[axis]
    if sections:
        secs = list(sections)
        if -1 in secs and dim >= 0:
            secs[secs.index(-1)] = dim - sum(s for s in secs if s != -1)
        if dim >= 0 and sum(secs) != dim:
            raise ValueError(
                "Sum of Attr(num_or_sections) must be equal to the input's size along the split dimension. But "
                f"received Attr(num_or_sections) = {list(sections)}, input(X)'s shape = {list(shape)}, "
                f"Attr(dim) = {axis}."
            )
        return secs
    if dim >= 0 and dim % num:
        raise ValueError(
            "The input's size along the split dimension must be evenly divisible by Attr(num_or_sections). But "
            f"received Attr(num_or_sections) = {num}, input(X)'s shape = {list(shape)}, Attr(dim) = {axis}."
        )
    return [dim // num if dim >= 0 else -1] * num


def _with_dim(shape, axis, size):
    shape = list(shape)
    shape[axis] = size
    return shape


def _split_infer(ins, attrs):
    x = first(ins, "X")
    n_out = attrs["num"] or len(attrs["sections"])
    if ins.get("AxisTensor"):  # as fluid: nothing known until the axis is
        return {"Out": [([-1] * len(x.shape), x.dtype)] * n_out}
    axis = norm_axis(attrs["axis"], len(x.shape))
    if ins.get("SectionsTensorList"):  # the sections given as numbers are known (-1: a Variable's)
        return {"Out": [(_with_dim(x.shape, axis, s), x.dtype) for s in attrs["sections"]]}
    sizes = _split_sizes(x.shape, axis, attrs["num"], attrs["sections"])
    return {"Out": [(_with_dim(x.shape, axis, s), x.dtype) for s in sizes]}


def _split_kernel(ins, attrs):
    x = ins["X"][0]
    axis = _axis(ins, attrs) % x.dim()
    tensors = ins.get("SectionsTensorList")
    sections = [int(t.reshape(-1)[0]) for t in tensors] if tensors else attrs["sections"]
    sizes = _split_sizes(list(x.shape), axis, attrs["num"], sections)
    return {"Out": list(torch.split(x, sizes, dim=axis))}


def _split_grad_maker(op, out_grads, in_grads):
    """fluid differentiates split with a concat of the pieces' gradients (a piece without one has
    its zeros by then: GradDef.fill_missing)."""
    ins = {"X": out_grads["Out"]}
    if op.inputs.get("AxisTensor"):
        ins["AxisTensor"] = list(op.inputs["AxisTensor"])
    attrs = {k: op.attrs[k] for k in ("axis", "num", "sections") if k in op.attrs}
    return [("concat", ins, {"Out": in_grads["X"]}, attrs)]


register(
    OpDef(
        "split",
        ("X", "AxisTensor", "SectionsTensorList"),
        ("Out",),
        {"axis": 0, "num": 0, "sections": []},
        _split_infer,
        _split_kernel,
        host_inputs=frozenset({"AxisTensor", "SectionsTensorList"}),
        grad=GradDef(in_grads=("X",), maker=_split_grad_maker, fill_missing=True),
    )
)


def _stack_infer(ins, attrs):
    xs = ins["X"]
    shape = list(xs[0].shape)
    for v in xs[1:]:
        if list(v.shape) != shape:
            raise ValueError(f"all inputs of stack must have the same shape. Received: {[tuple(x.shape) for x in xs]}")
    axis = attrs["axis"]
    axis = axis + len(shape) + 1 if axis < 0 else axis
    shape.insert(axis, len(xs))
    return out("Y", shape, xs[0].dtype)


register(
    OpDef(
        "stack",
        ("X",),
        ("Y",),
        {"axis": 0},
        _stack_infer,
        lambda ins, attrs: {"Y": [torch.stack(ins["X"], dim=attrs["axis"])]},
        grad=GradDef(out_grads=("Y",)),
    )
)


def _expand_infer(ins, attrs):
    x = first(ins, "X")
    times = attrs["expand_times"]
    if ins.get("ExpandTimes"):
        return out("Out", [-1] * len(x.shape), x.dtype)
    if ins.get("expand_times_tensor"):  # the times given as numbers are known (-1: a Variable's)
        return out("Out", [d * t if d >= 0 and t >= 0 else -1 for d, t in zip(x.shape, times)], x.dtype)
    if len(times) != len(x.shape):
        raise ValueError(
            f"expand_times must have one value per dim of X. Received: expand_times={times}, X.shape={x.shape}"
        )
    return out("Out", [d * t if d >= 0 else -1 for d, t in zip(x.shape, times)], x.dtype)


def _expand_kernel(ins, attrs):
    times = _bounds(ins, "ExpandTimes", "expand_times_tensor", list(attrs["expand_times"]))
    return {"Out": [ins["X"][0].repeat(times)]}


register(
    OpDef(
        "expand",
        ("X", "ExpandTimes", "expand_times_tensor"),
        ("Out",),
        {"expand_times": []},
        _expand_infer,
        _expand_kernel,
        host_inputs=frozenset({"ExpandTimes", "expand_times_tensor"}),
        grad=GradDef(),
    )
)


# -- pad, pad2d ------------------------------------------------------------------------------------------
def _pad_infer(ins, attrs):
    x = first(ins, "X")
    p = attrs["paddings"]
    if len(p) != 2 * len(x.shape):
        raise ValueError(f"paddings must have 2 * rank(X) values. Received: paddings={p}, X.shape={x.shape}")
    return out("Out", [d + p[2 * i] + p[2 * i + 1] if d >= 0 else -1 for i, d in enumerate(x.shape)], x.dtype)


def _pad_kernel(ins, attrs):
    p = attrs["paddings"]
    torch_pad = []
    for i in reversed(range(len(p) // 2)):
        torch_pad += [p[2 * i], p[2 * i + 1]]
    return {"Out": [F.pad(ins["X"][0], torch_pad, value=attrs["pad_value"])]}


register(OpDef("pad", ("X",), ("Out",), {"paddings": [], "pad_value": 0.0}, _pad_infer, _pad_kernel, grad=GradDef()))


def _pad2d_infer(ins, attrs):
    x = first(ins, "X")
    if len(x.shape) != 4:
        raise ValueError(f"The size of Input(X)'s dimension should be equal to 4, but received {len(x.shape)}. ")
    p = attrs["paddings"]
    shape = list(x.shape)
    h, w = (2, 3) if attrs["data_format"] == "NCHW" else (1, 2)
    if ins.get("Paddings"):
        shape[h] = shape[w] = -1
    else:
        shape[h] = shape[h] + p[0] + p[1] if shape[h] >= 0 else -1
        shape[w] = shape[w] + p[2] + p[3] if shape[w] >= 0 else -1
    return out("Out", shape, x.dtype)


_PAD_MODES = {"constant": "constant", "reflect": "reflect", "edge": "replicate"}


def _pad2d_kernel(ins, attrs):
    x = ins["X"][0]
    p = _bounds(ins, "Paddings", "", list(attrs["paddings"]))
    nhwc = attrs["data_format"] == "NHWC"
    if nhwc:
        x = x.permute(0, 3, 1, 2)
    mode = _PAD_MODES[attrs["mode"]]
    kw = {"value": attrs["pad_value"]} if mode == "constant" else {}
    y = F.pad(x, [p[2], p[3], p[0], p[1]], mode=mode, **kw)
    return {"Out": [y.permute(0, 2, 3, 1) if nhwc else y]}


register(
    OpDef(
        "pad2d",
        ("X", "Paddings"),
        ("Out",),
        {"paddings": [0, 0, 0, 0], "mode": "constant", "pad_value": 0.0, "data_format": "NCHW"},
        _pad2d_infer,
        _pad2d_kernel,
        host_inputs=frozenset({"Paddings"}),
        grad=GradDef(),
    )
)


# -- flatten, squeeze, unsqueeze: the first generation (no XShape) ---------------------------------
def _back_to_x(ins, attrs):
    return {"X@GRAD": [ins["Out@GRAD"][0].reshape(ins["X"][0].shape)]}


_TO_X_SHAPE = GradDef(("X",), in_grads=("X",), kernel=_back_to_x, shape_only=("X",))


def _flatten_v1_infer(ins, attrs):
    x = first(ins, "X")
    axis = attrs["axis"]
    if not 0 <= axis <= len(x.shape):
        raise ValueError(f"The axis should be in [0, {len(x.shape)}]. Received: axis={axis}")
    return {"Out": [(_flatten_shape(x.shape, axis), x.dtype)]}


register(
    OpDef(
        "flatten",
        ("X",),
        ("Out",),
        {"axis": 1},
        _flatten_v1_infer,
        lambda ins, a: {"Out": [ins["X"][0].reshape(_flatten_shape(list(ins["X"][0].shape), a["axis"]))]},
        grad=_TO_X_SHAPE,
    )
)

register(
    OpDef(
        "squeeze",
        ("X",),
        ("Out",),
        {"axes": []},
        lambda ins, a: {"Out": [(_squeeze_dims(first(ins, "X").shape, a["axes"]), first(ins, "X").dtype)]},
        lambda ins, a: {"Out": [ins["X"][0].reshape(_squeeze_dims(list(ins["X"][0].shape), a["axes"]))]},
        grad=_TO_X_SHAPE,
    )
)


def _unsqueeze_v1_infer(ins, attrs):
    x = first(ins, "X")
    tensors = ins.get("AxesTensorList") or []
    if ins.get("AxesTensor") or tensors:  # the axes are known when the program runs
        n = len(tensors) or max(first(ins, "AxesTensor").shape[0], 0)
        return {"Out": [([-1] * max(len(x.shape) + n if n else 1, 1), x.dtype)]}
    return {"Out": [(_unsqueeze_dims(x.shape, attrs["axes"]), x.dtype)]}


register(
    OpDef(
        "unsqueeze",
        ("X", "AxesTensor", "AxesTensorList"),
        ("Out",),
        {"axes": []},
        _unsqueeze_v1_infer,
        lambda ins, a: {
            "Out": [ins["X"][0].reshape(_unsqueeze_dims(list(ins["X"][0].shape), _unsqueeze_axes(ins, a)))]
        },
        host_inputs=frozenset({"AxesTensor", "AxesTensorList"}),
        grad=_TO_X_SHAPE,
    )
)


# -- unbind ----------------------------------------------------------------------------------------------
def _unbind_infer(ins, attrs):
    x = first(ins, "X")
    axis = norm_axis(attrs["axis"], len(x.shape))
    shape = tuple(d for i, d in enumerate(x.shape) if i != axis)
    return {"Out": [(shape, x.dtype)] * max(x.shape[axis], 0)}


def _unbind_grad_maker(op, out_grads, in_grads):
    """A stack of every piece's gradient (a piece without one has its zeros by then: fill_missing)."""
    return [("stack", {"X": out_grads["Out"]}, {"Y": in_grads["X"]}, {"axis": op.attrs["axis"]})]


register(
    OpDef(
        "unbind",
        ("X",),
        ("Out",),
        {"axis": 0},
        _unbind_infer,
        lambda ins, a: {"Out": list(torch.unbind(ins["X"][0], a["axis"]))},
        grad=GradDef(in_grads=("X",), maker=_unbind_grad_maker, fill_missing=True),
    )
)


# -- flip, reverse, roll ---------------------------------------------------------------------------
# fluid differentiates flip with a flip of the same dims
register(
    OpDef(
        "flip",
        ("X",),
        ("Out",),
        {"dims": []},
        same_as(),
        lambda ins, a: {"Out": [torch.flip(_x(ins), list(a["dims"]))]},
        grad=GradDef(
            in_grads=("X",),
            maker=lambda op, og, ig: [("flip", {"X": og["Out"]}, {"Out": ig["X"]}, {"dims": op.attrs["dims"]})],
        ),
    )
)
# fluid 1.8's layers.reverse and x[::-1]; axis: an int or a list. Its gradient is a reverse too.
register(
    OpDef(
        "reverse",
        ("X",),
        ("Out",),
        {"axis": []},
        same_as(),
        lambda ins, a: {"Out": [torch.flip(_x(ins), [a["axis"]] if isinstance(a["axis"], int) else list(a["axis"]))]},
        grad=GradDef(
            in_grads=("X",),
            maker=lambda op, og, ig: [("reverse", {"X": og["Out"]}, {"Out": ig["X"]}, {"axis": op.attrs["axis"]})],
        ),
    )
)
_op(
    "roll",
    ("X",),
    ("Out",),
    {"shifts": [], "dims": []},
    same_as(),
    lambda ins, a: {"Out": [torch.roll(_x(ins), list(a["shifts"]), list(a["dims"]) or None)]},
)


# -- unstack ---------------------------------------------------------------------------------------
def _unstack_infer(ins, a):
    x = first(ins, "X")
    axis = norm_axis(a["axis"], len(x.shape))
    shape = [s for i, s in enumerate(x.shape) if i != axis]
    return {"Y": [(shape, x.dtype)] * a["num"]}


def _unstack(ins, a):
    return {"Y": list(torch.unbind(_x(ins), a["axis"]))}


def _unstack_grad(ins, a):
    return {"X@GRAD": [torch.stack(list(ins["Y@GRAD"]), a["axis"])]}


def _unstack_grad_maker(op, og, ig):
    """unstack_grad stacks every piece's gradient (a piece without one has its zeros by then:
    GradDef.fill_missing); fluid's reads no forward input."""
    attrs = {"axis": op.attrs["axis"], "num": op.attrs["num"]}
    return [("unstack_grad", {"Y@GRAD": og["Y"]}, {"X@GRAD": ig["X"]}, attrs)]


register(
    OpDef(
        "unstack",
        ("X",),
        ("Y",),
        {"axis": 0, "num": 0},
        _unstack_infer,
        _unstack,
        grad=GradDef(out_grads=("Y",), in_grads=("X",), maker=_unstack_grad_maker, fill_missing=True),
    )
)
register(OpDef("unstack_grad", ("Y@GRAD",), ("X@GRAD",), {"axis": 0, "num": 0}, None, _unstack_grad, forward="unstack"))


# -- expand_as, pad_constant_like ------------------------------------------------------------------
def _expand_as_infer(ins, a):
    x, t = first(ins, "X"), first(ins, "target_tensor")
    if len(x.shape) != len(t.shape):
        raise ValueError(
            "The rank of Input(target_tensor) must be equal to the rank of Input(X). But received Input(X): "
            f"input rank {len(x.shape)}, input shape {list(x.shape)}; received Input(target_tensor): input rank "
            f"{len(t.shape)}, input shape {list(t.shape)}."
        )
    return out("Out", t.shape, x.dtype)


def _expand_as(ins, a):
    x, t = _x(ins), ins["target_tensor"][0]
    reps = [ts // xs for ts, xs in zip(t.shape, x.shape)]
    return {"Out": [x.repeat(reps)]}


_op(
    "expand_as",
    ("X", "target_tensor"),
    ("Out",),
    {},
    _expand_as_infer,
    _expand_as,
    no_buffer_inputs=frozenset({"target_tensor"}),
)


def _pad_constant_like(ins, a):
    x, y = ins["X"][0], ins["Y"][0]
    pads = []
    for xs, ys in reversed(list(zip(x.shape, y.shape))):
        pads += [0, xs - ys]
    return {"Out": [F.pad(y, pads, value=a["pad_value"])]}


_op(
    "pad_constant_like",
    ("X", "Y"),
    ("Out",),
    {"pad_value": 0.0},
    lambda ins, a: out("Out", first(ins, "X").shape, first(ins, "Y").dtype),
    _pad_constant_like,
    no_buffer_inputs=frozenset({"X"}),
)
