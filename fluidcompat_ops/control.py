"""Control-flow ops: ``conditional_block`` (runs its sub-block when Cond holds), ``while``,
``select_input``, and their gradients (``conditional_block_grad``, ``while_grad``, ``select_output``);
``is_empty``, split_lod_tensor / merge_lod_tensor, recurrent and get_places.

The sub-block ops have no kernel: the interpreter runs their blocks (see interpreter.py). Their grad
makers get a ``ctx`` from backward.py that differentiates a sub-block into a new grad block and says
which gradients that block writes.
"""

from __future__ import annotations

import dataclasses

from fluidcompat_ops.registry import GradDef, OpDef, _op, register
from fluidcompat_ops.sequence import lod_of, offsets_of, with_lod
from fluidcompat_ops.shapes import _x, first, out

EMPTY = "@EMPTY@"  # fluid's name for "no variable here" (framework.EMPTY_VAR_NAME)

torch = None  # NOTE: [Lazy torch] in registry.py
F = None


def _inner_grads(names, written, grad_of):
    """Per forward name, the gradient its grad block writes for it, or "" when it writes none."""
    return [grad_of(n) if grad_of(n) in written else "" for n in names]


def _conditional_block_grad_maker(op, out_grads, in_grads, ctx):
    """``conditional_block_grad``: the grad block of the sub-block, seeded with the outputs' grads, run
    when Cond held; each wanted input gradient is then copied out of it (zeros when the branch was not
    taken, or when the block writes none)."""
    outs = op.outputs.get("Out", [])
    seeds = {o: g for o, g in zip(outs, out_grads["Out"]) if g != EMPTY}
    sub, written = ctx.differentiate(op.attrs["sub_block"], seeds)
    inputs = {
        "Cond": op.inputs["Cond"],
        "Input": op.inputs["Input"],
        "Out": outs,
        "Out@GRAD": out_grads["Out"],
        "Scope": op.outputs.get("Scope", []),
    }
    attrs = {
        "sub_block": sub,
        "is_scalar_condition": op.attrs.get("is_scalar_condition", False),
        "inner_input_grads": _inner_grads(op.inputs["Input"], written, ctx.grad_name),
    }
    return [("conditional_block_grad", inputs, {"Input@GRAD": [g or EMPTY for g in in_grads["Input"]]}, attrs)]


def _while_grad_maker(op, out_grads, in_grads, ctx):
    """``while_grad``: the grad block of the loop body, run once per recorded step, last step first.
    Every differentiable loop-carried variable (read and written by the body) is a target seeded with
    ``name@GRAD``: the outer gradient before the last step, then what the step after wrote."""
    xs, outs = op.inputs.get("X", []), op.outputs.get("Out", [])
    seeds = {o: ctx.grad_name(o) for o, g in zip(outs, out_grads["Out"]) if g != EMPTY}
    seeds.update({x: ctx.grad_name(x) for x in xs if x in outs and ctx.differentiable(x)})
    sub, written = ctx.differentiate(op.attrs["sub_block"], seeds)
    inputs = {"X": xs, "Out": outs, "Out@GRAD": out_grads["Out"], "StepScopes": op.outputs.get("StepScopes", [])}
    attrs = {
        "sub_block": sub,
        "original_output_grad": [g for g in out_grads["Out"] if g != EMPTY],
        "inner_output_grads": [seeds.get(o, "") for o in outs],
        "inner_input_grads": _inner_grads(xs, written, ctx.grad_name),
    }
    return [("while_grad", inputs, {"X@GRAD": [g or EMPTY for g in in_grads["X"]]}, attrs)]


register(
    OpDef(
        "conditional_block",
        ("Cond", "Input"),
        ("Out", "Scope"),
        {"sub_block": -1, "is_scalar_condition": False, "skip_eager_deletion_vars": []},
        host_inputs=frozenset({"Cond"}),
        control=True,
        grad=GradDef(in_grads=("Input",), maker=_conditional_block_grad_maker),
    )
)

register(
    OpDef(
        "conditional_block_grad",
        ("Cond", "Input", "Out", "Out@GRAD", "Scope"),
        ("Input@GRAD",),
        {"sub_block": -1, "is_scalar_condition": False, "inner_input_grads": []},
        host_inputs=frozenset({"Cond"}),
        # a branch not taken wrote no Out, and its Out@GRAD is never set
        optional_inputs=frozenset({"Out", "Out@GRAD", "Scope"}),
        control=True,
        forward="conditional_block",
    )
)

register(
    OpDef(
        "while",
        ("X", "Condition"),
        ("Out", "StepScopes"),
        {"sub_block": -1, "is_test": False, "skip_eager_deletion_vars": []},
        host_inputs=frozenset({"Condition"}),
        control=True,
        grad=GradDef(in_grads=("X",), maker=_while_grad_maker),
    )
)

register(
    OpDef(
        "while_grad",
        ("X", "Out", "Out@GRAD", "StepScopes"),
        ("X@GRAD",),
        {
            "sub_block": -1,
            "original_output_grad": [],
            "inner_output_grads": [],
            "inner_input_grads": [],
            "skip_eager_deletion_vars": [],
        },
        optional_inputs=frozenset({"Out", "Out@GRAD"}),
        control=True,
        forward="while",
    )
)


def _select_input_kernel(ins, attrs):
    mask = int(ins["Mask"][0].reshape(-1)[0])
    xs = ins["X"]
    if not 0 <= mask < len(xs):
        raise ValueError(f"select_input: Mask must index X (0..{len(xs) - 1}). Received: {mask}")
    value = xs[mask]
    if value is None:
        raise ValueError(f"select_input: the selected input {mask} holds no value")
    return {"Out": [value]}


def _select_input_infer(ins, attrs):
    xs = ins["X"]
    mask = first(ins, "Mask")
    if mask is not None and tuple(mask.shape) not in ((1,), (-1,), (-1, 1), (1, 1)):
        raise ValueError(f"select_input's Mask must hold one value. Received: Mask.shape={mask.shape}")
    return {"Out": [(xs[-1].shape, xs[-1].dtype)]}


def _select_input_grad_maker(op, out_grads, in_grads):
    outs = {"Out": [g or EMPTY for g in in_grads["X"]]}
    return [("select_output", {"X": out_grads["Out"], "Mask": op.inputs["Mask"]}, outs, {})]


register(
    OpDef(
        "select_input",
        ("X", "Mask"),
        ("Out",),
        {},
        _select_input_infer,
        _select_input_kernel,
        host_inputs=frozenset({"Mask"}),
        optional_inputs=frozenset({"X"}),
        # fluid's kernel copied the chosen input into Out on its device (the article's event table has
        # GpuMemcpyAsync(same_gpu):GPU->GPU under select_input), as select_output's copies X
        copies_on_device=True,
        grad=GradDef(in_grads=("X",), maker=_select_input_grad_maker),
    )
)


def _select_output_kernel(ins, attrs):
    """``Out[Mask] = X``; the outputs before it hold no value (their branch did not run) and the
    ones after it are not written."""
    mask = int(ins["Mask"][0].reshape(-1)[0])
    if mask < 0:
        raise ValueError(f"select_output: Mask must index Out. Received: {mask}")
    return {"Out": [None] * mask + [ins["X"][0]]}


def _select_output_grad_maker(op, out_grads, in_grads):
    # fluid's: the selected output's gradient back through a select_input on the same Mask
    ins = {"X": [g or EMPTY for g in out_grads["Out"]], "Mask": op.inputs["Mask"]}
    return [("select_input", ins, {"Out": in_grads["X"]}, {})]


register(
    OpDef(
        "select_output",
        ("X", "Mask"),
        ("Out",),
        {},
        None,
        _select_output_kernel,
        host_inputs=frozenset({"Mask"}),
        copies_on_device=True,
        forward="select_input",
        grad=GradDef(in_grads=("X",), maker=_select_output_grad_maker),
    )
)


# -- split_lod_tensor / merge_lod_tensor: IfElse's row routing (no LoD: level 0 rows) ----------------
def _row_mask(mask, rows: int, op: str):
    m = mask.reshape(-1)
    if m.numel() != rows:
        raise ValueError(f"{op}: Mask must hold one value per row of X ({rows}). Received: {m.numel()} values")
    return m.to(torch.bool)


def _units(x, level: int):
    """X's units of LoD ``level`` (its sequences there): per unit, its rows (start, end) and its
    recursive sequence lengths from ``level`` down; None when X has no LoD that deep."""
    lod = lod_of(x)
    if len(lod) <= level:
        return None
    units = []
    for i in range(len(lod[level]) - 1):
        a, b, lengths = i, i + 1, []
        for offsets in lod[level:]:
            lengths.append([offsets[j + 1] - offsets[j] for j in range(a, b)])
            a, b = offsets[a], offsets[b]
        units.append(((a, b), lengths))
    return units


def _joined(x, units):
    """The rows of ``units`` one after another, with their LoD."""
    if not units:
        return with_lod(x[:0], [])
    index = torch.cat([torch.arange(a, b, device=x.device) for (a, b), _ in units])
    levels = [[n for _, lengths in units for n in lengths[k]] for k in range(len(units[0][1]))]
    return with_lod(x[index], [offsets_of(level) for level in levels])


def _split_kernel(ins, attrs):
    """OutTrue: the rows (or, with a LoD, the sequences of LoD ``level``) of X where Mask holds, with
    their LoD; OutFalse the others."""
    x = ins["X"][0]
    units = _units(x, attrs["level"])
    if units is None:
        m = _row_mask(ins["Mask"][0], x.shape[0], "split_lod_tensor").to(x.device)
        return {"OutTrue": [x[m]], "OutFalse": [x[~m]]}
    m = _row_mask(ins["Mask"][0], len(units), "split_lod_tensor").tolist()
    return {
        "OutTrue": [_joined(x, [u for u, keep in zip(units, m) if keep])],
        "OutFalse": [_joined(x, [u for u, keep in zip(units, m) if not keep])],
    }


def _split_infer(ins, attrs):
    x = first(ins, "X")
    rows = (-1,) + tuple(x.shape[1:])
    return {"OutTrue": [(rows, x.dtype)], "OutFalse": [(rows, x.dtype)]}


def _split_grad_maker(op, out_grads, in_grads):
    ins = {
        "X": op.inputs["X"],
        "Mask": op.inputs["Mask"],
        "InTrue": out_grads["OutTrue"],
        "InFalse": out_grads["OutFalse"],
    }
    return [("merge_lod_tensor", ins, {"Out": in_grads["X"]}, {"level": 0})]


register(
    OpDef(
        "split_lod_tensor",
        ("X", "Mask"),
        ("OutTrue", "OutFalse"),
        {"level": 0},
        _split_infer,
        _split_kernel,
        grad=GradDef(out_grads=("OutTrue", "OutFalse"), in_grads=("X",), maker=_split_grad_maker),
        doc="the rows of X where Mask holds, and the others",
    )
)


def _merge_kernel(ins, attrs):
    """Rows of InTrue where Mask holds, of InFalse elsewhere (with X's LoD: its sequences of LoD
    ``level``, in X's order). A missing side (no gradient reached it) reads as zeros; with both
    missing, zeros shaped as X (the forward input, in a gradient)."""
    t, f = first(ins, "InTrue"), first(ins, "InFalse")
    x = ins["X"][0]
    if t is None and f is None:
        return {"Out": [torch.zeros_like(x)]}
    like = t if t is not None else f
    units = _units(x, attrs["level"])
    if units is not None:
        m = _row_mask(ins["Mask"][0], len(units), "merge_lod_tensor").tolist()
        parts, taken = [], {True: 0, False: 0}
        for ((a, b), _), keep in zip(units, m):
            side = t if keep else f
            n = b - a
            start = taken[keep]
            parts.append(side[start : start + n] if side is not None else like.new_zeros((n,) + tuple(like.shape[1:])))
            taken[keep] += n
        out_t = torch.cat(parts) if parts else like[:0]
        return {"Out": [with_lod(out_t, lod_of(x))]}
    m = _row_mask(ins["Mask"][0], ins["Mask"][0].numel(), "merge_lod_tensor").to(like.device)
    out_t = torch.zeros((m.numel(),) + tuple(like.shape[1:]), dtype=like.dtype, device=like.device)
    for part, rows in ((t, m), (f, ~m)):
        if part is None:
            continue
        if part.shape[0] != int(rows.sum()):
            side = "InTrue" if rows is m else "InFalse"
            raise ValueError(
                f"merge_lod_tensor: {side} has {part.shape[0]} rows but Mask selects {int(rows.sum())} for it"
            )
        out_t[rows] = part
    return {"Out": [out_t]}


def _merge_infer(ins, attrs):
    like = first(ins, "InTrue")
    like = first(ins, "InFalse") if like is None else like
    return {"Out": [(like.shape, like.dtype)]}


def _merge_grad_maker(op, out_grads, in_grads):
    outs = {"OutTrue": [in_grads["InTrue"][0] or EMPTY], "OutFalse": [in_grads["InFalse"][0] or EMPTY]}
    return [("split_lod_tensor", {"X": out_grads["Out"], "Mask": op.inputs["Mask"]}, outs, {"level": 0})]


_MERGE = register(
    OpDef(
        "merge_lod_tensor",
        ("X", "Mask", "InTrue", "InFalse"),
        ("Out",),
        {"level": 0},
        _merge_infer,
        _merge_kernel,
        no_buffer_inputs=frozenset({"X"}),
        optional_inputs=frozenset({"InTrue", "InFalse"}),
        grad=GradDef(in_grads=("InTrue", "InFalse"), maker=_merge_grad_maker),
        doc="the rows of InTrue where Mask holds and of InFalse elsewhere",
    )
)
# fluid's inference form of merge_lod_tensor: the same merge, no gradient
register(dataclasses.replace(_MERGE, type="merge_lod_tensor_infer", grad=None))


# -- recurrent (fluid 1.8's StaticRNN, as programs saved by fluid 1.8 hold it) ---------------------------
# fluidcompat's own StaticRNN unrolls its step or runs it in a while op; the recurrent op is here so that
# programs fluid 1.8 built and saved run. Forward only (inference models).
register(
    OpDef(
        "recurrent",
        ("inputs", "initial_states", "parameters"),
        ("outputs", "step_scopes"),
        {
            "sub_block": -1,
            "ex_states": [],
            "states": [],
            "reverse": False,
            "is_train": True,
            "has_states": False,
            "skip_eager_deletion_vars": [],
        },
        control=True,
    )
)

register(
    OpDef(
        "rnn_memory_helper",
        ("X",),
        ("Out",),
        {"dtype": 5},
        lambda ins, a: {"Out": [(first(ins, "X").shape, first(ins, "X").dtype)]},
        lambda ins, a: {"Out": [ins["X"][0]]},
    )
)


# -- get_places: the places a (long gone) parallel_do would split its batch over --------------------
_DEVICE_TYPES = ("AUTO", "CUDA", "CPU")


def _get_places_kernel(ins, a):
    """Out = ``device_count`` places (0: every GPU, or one CPUPlace per CPU core) of ``device_type``
    (AUTO: the executor's kind of device), as fluid's PlaceList."""
    import os

    from fluidcompat.places import CPUPlace, CUDAPlace

    kind, count = a["device_type"], int(a["device_count"])
    if kind not in _DEVICE_TYPES:
        raise ValueError(f"get_places: device_type must be one of {list(_DEVICE_TYPES)}. Received: {kind!r}")
    if count < 0:
        raise ValueError(f"get_places: device_count must be >= 0 (0: every device). Received: {count}")
    gpu = a["_device"].type == "cuda" if kind == "AUTO" else kind == "CUDA"
    gpus = torch.cuda.device_count()
    if count == 0:
        count = gpus if gpu else (os.cpu_count() or 0)
    if count == 0:
        raise ValueError(f"get_places: cannot tell the {'GPU' if gpu else 'CPU'} device count (none found)")
    if gpu and count > gpus:
        raise ValueError(f"get_places: only {gpus} CUDA devices found, cannot set device_count to {count}")
    return {"Out": [[CUDAPlace(i) for i in range(count)] if gpu else [CPUPlace() for _ in range(count)]]}


register(
    OpDef(
        "get_places",
        (),
        ("Out",),
        {"device_count": 0, "device_type": "AUTO"},
        None,
        _get_places_kernel,
        host_outputs=frozenset({"Out"}),
        doc="Out = a list of device_count places of device_type (fluid's PlaceList)",
    )
)


# -- is_empty --------------------------------------------------------------------------------------
_op(
    "is_empty",
    ("X",),
    ("Out",),
    {},
    lambda ins, a: out("Out", (1,), "bool"),
    lambda ins, a: {"Out": [torch.tensor([_x(ins).numel() == 0])]},
    grad=False,
    no_buffer_inputs=frozenset({"X"}),
    host_outputs=frozenset({"Out"}),
)
