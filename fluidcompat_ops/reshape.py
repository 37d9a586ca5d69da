"""First-generation shape ops fluid 1.8 still ran (programs and inference models saved before the
``*2`` ops with XShape replaced them): ``flatten``, ``squeeze``, ``unsqueeze``; and ``unbind``.

Their shape rules are the ``*2`` ops' in tensor.py; the grads (``<type>_grad``, reading X for its
shape only) reshape dOut back to X's shape. fluid differentiated ``unbind`` with a ``stack`` op.
"""

from __future__ import annotations

from fluidcompat_ops.registry import GradDef, OpDef, register
from fluidcompat_ops.shapes import first, norm_axis
from fluidcompat_ops.tensor import _flatten_shape, _squeeze_dims, _unsqueeze_axes, _unsqueeze_dims

torch = None  # NOTE: [Lazy torch] in registry.py
F = None


def _back_to_x(ins, attrs):
    return {"X@GRAD": [ins["Out@GRAD"][0].reshape(ins["X"][0].shape)]}


_TO_X_SHAPE = GradDef(("X",), in_grads=("X",), kernel=_back_to_x, shape_only=("X",))


def _flatten_infer(ins, attrs):
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
        _flatten_infer,
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


def _unsqueeze_infer(ins, attrs):
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
        _unsqueeze_infer,
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
