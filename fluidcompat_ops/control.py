"""Control-flow ops: ``conditional_block`` (runs its sub-block when Cond holds) and ``select_input``.

``conditional_block`` has no kernel: the interpreter runs its sub-block (see interpreter.py).
"""

from __future__ import annotations

from fluidcompat_ops.registry import OpDef, register
from fluidcompat_ops.shapes import first

torch = None  # NOTE: [Lazy torch] in registry.py
F = None

register(
    OpDef(
        "conditional_block",
        ("Cond", "Input"),
        ("Out", "Scope"),
        {"sub_block": -1, "is_scalar_condition": False, "skip_eager_deletion_vars": []},
        host_inputs=frozenset({"Cond"}),
        control=True,
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
    if mask is not None and tuple(mask.shape) not in ((1,), (-1,)):
        raise ValueError(f"select_input's Mask must hold one value. Received: Mask.shape={mask.shape}")
    return {"Out": [(xs[-1].shape, xs[-1].dtype)]}


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
    )
)
