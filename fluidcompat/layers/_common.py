"""Helpers the layer families share: ``_one`` appends an op with one output, ``_append`` an op with one
new variable per output slot, ``_listed`` makes an optional input a slot list."""

from __future__ import annotations

from fluidcompat.layer_helper import LayerHelper

__all__: list = []


def _one(op_type, inputs, attrs=None, dtype=None, out_slot="Out", name=None, helper_name=None, stop_gradient=False):
    """Append ``op_type`` with one output (dtype: the first input's unless given)."""
    helper = LayerHelper(helper_name or op_type, name=name)
    first_in = next(v[0] for v in inputs.values() if v)
    out = helper.create_variable_for_type_inference(dtype=dtype if dtype is not None else first_in.dtype)
    out.stop_gradient = stop_gradient
    helper.append_op(type=op_type, inputs=inputs, outputs={out_slot: [out]}, attrs=attrs or {})
    return out


def _append(op_type, inputs, outputs, attrs, name=None, dtype=None, stop_gradient=False, helper_name=None):
    """Append ``op_type`` with one new variable per output slot (dtype: ``dtype`` or the first
    input's, per slot when a dict; names from ``helper_name`` or the op type); returns them in
    ``outputs``' order."""
    helper = LayerHelper(helper_name or op_type, name=name)
    first_in = next(v[0] for v in inputs.values() if v)
    made = []
    for slot in outputs:
        d = dtype.get(slot, first_in.dtype) if isinstance(dtype, dict) else (dtype or first_in.dtype)
        v = helper.create_variable_for_type_inference(dtype=d)
        v.stop_gradient = stop_gradient
        made.append(v)
    helper.append_op(type=op_type, inputs=inputs, outputs={s: [v] for s, v in zip(outputs, made)}, attrs=attrs)
    return made


def _listed(v):
    return [v] if v is not None else []
