"""Grad kernels shared by many ops: the generic per-op VJP and SelectedRows (sparse rows)."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any

from fluidcompat_ops import registry

torch = None  # NOTE: [Lazy torch] in registry.py
F = None


@dataclass
class SelectedRows:
    """A sparse gradient: ``values[i]`` is the gradient of row ``rows[i]`` of a [height, ...] table.

    Rows may repeat; consumers add repeated rows up.
    """

    rows: Any
    values: Any
    height: int

    requires_grad = False  # a gradient is not differentiated again (dygraph reads the flag)

    @property
    def shape(self):
        return (self.height,) + tuple(self.values.shape[1:])

    @property
    def dtype(self):
        return self.values.dtype

    @property
    def device(self):
        return self.values.device

    def to(self, device):
        return SelectedRows(self.rows.to(device), self.values.to(device), self.height)

    def merged(self) -> "SelectedRows":
        """The same gradient with each row once, in ascending order (repeated rows summed)."""
        rows, inverse = torch.unique(self.rows, sorted=True, return_inverse=True)
        shape = (rows.numel(),) + tuple(self.values.shape[1:])
        values = torch.zeros(shape, dtype=self.values.dtype, device=self.values.device)
        return SelectedRows(rows, values.index_add_(0, inverse, self.values), self.height)

    def to_dense(self):
        dense = torch.zeros(self.shape, dtype=self.values.dtype, device=self.values.device)
        return dense.index_add_(0, self.rows, self.values)

    def to_torch(self):
        """The same gradient as a torch sparse COO tensor (not coalesced: rows in this order). Made by
        the aten op itself: torch.sparse_coo_tensor reads the global invariant-check setting, and
        some torch versions warn each process that it was left unset."""
        v = self.values
        return torch.ops.aten._sparse_coo_tensor_with_dims_and_tensors(
            1, v.dim() - 1, list(self.shape), self.rows.reshape(1, -1), v,
            dtype=v.dtype, layout=torch.sparse_coo, device=v.device, is_coalesced=False,
        )  # fmt: skip


def _grad_free(t, outer: bool):
    """A leaf to differentiate ``t`` at. Under an outer autograd pass (``outer``: dygraph's
    ``create_graph``, or a grad-of-grad kernel re-running this one) a ``t`` that requires grad gets a
    differentiable alias, so the gradient found at it stays a function of ``t``; the alias is distinct,
    so one tensor in two slots gets each slot's own part."""
    from fluidcompat_ops.sequence import lod_of, with_lod

    leaf = t.view_as(t) if outer and t.requires_grad else t.detach().requires_grad_(True)
    return with_lod(leaf, lod_of(t))


def _vjp(fkernel, fwd_inputs, out_grads, ins, attrs, wanted):
    """``fkernel`` (forward slots ``fwd_inputs``) differentiated: ``<slot>@GRAD`` for each slot in
    ``wanted``, from the gradients ``ins['<out>@GRAD']`` of its outputs ``out_grads``. Under an outer
    autograd pass the result is differentiable again (``create_graph``)."""
    outer = torch.is_grad_enabled()
    fins = {}
    leaves = []
    for slot in fwd_inputs:
        vals = ins.get(slot, [])
        if slot in wanted:
            vals = [_grad_free(v, outer) if v is not None and v.is_floating_point() else v for v in vals]
            leaves.extend((slot, v) for v in vals)
        fins[slot] = vals
    with torch.enable_grad():
        outs = fkernel(fins, attrs)
    ys, gs = [], []
    for slot in out_grads:
        for y, g in zip(outs.get(slot, ()), ins.get(slot + "@GRAD", ())):
            if g is not None and y is not None and getattr(y, "requires_grad", False):
                ys.append(y)
                gs.append(g.reshape(y.shape).to(y.dtype))
    diff = [v for _, v in leaves if v is not None and v.requires_grad]
    if ys and diff:
        grads = iter(torch.autograd.grad(ys, diff, gs, allow_unused=True, create_graph=outer))
    else:
        grads = iter([None] * len(diff))
    result = {}
    for slot, v in leaves:
        g = next(grads) if v is not None and v.requires_grad else None
        if g is None and v is not None:
            g = torch.zeros_like(v)
        result.setdefault(slot + "@GRAD", []).append(g)
    return result


def vjp_kernel(fwd, out_grads):
    """The grad of ``fwd`` by re-running its kernel under autograd (a per-op VJP).

    ``attrs['_wanted']`` names the forward input slots whose gradients are asked for.
    """
    fkernel = fwd.kernel
    fwd_inputs = fwd.inputs

    def kernel(ins, attrs):
        return _vjp(fkernel, fwd_inputs, out_grads, ins, attrs, attrs["_wanted"])

    kernel.__name__ = f"{fwd.type}_vjp"
    return kernel


# NOTE: [Grad of grad]
# fluid 1.8's double grad (``fluid.gradients`` of a gradient, gradient_checker.double_grad_check):
# a grad op G = ``<type>_grad`` whose kernel torch can differentiate (the generic VJP, or a hand-written
# kernel of torch ops marked ``GradDef(double=True)``) gets a GradDef of its own, so backward appends
# ``<type>_grad_grad``: G's kernel re-run under autograd, a VJP again. Its slots are named as fluid
# named its double grad ops: G's inputs as they are except a gradient ``S@GRAD``, which is ``DS``; the
# gradients of G's outputs ``S@GRAD@GRAD`` are ``DDS``; its outputs, the gradients of G's inputs, ``DS``
# (of ``S``) and ``DDS`` (of ``S@GRAD``), unless the forward GradDef's ``grad_grad_slots`` renames one.


def grad_grad_slot(name: str, overrides) -> str:
    """The double grad op's slot for a generic slot name (see NOTE: [Grad of grad])."""
    if name in overrides:
        return overrides[name]
    if name.endswith("@GRAD@GRAD"):
        return "DD" + name[: -len("@GRAD@GRAD")]
    if name.endswith("@GRAD"):
        return "D" + name[: -len("@GRAD")]
    return name


def grad_of_grad_kernel(gop, names):
    """The kernel of G's grad op (G: the grad OpDef ``gop``): a VJP of G's kernel. ``names`` maps the
    generic slot names (G's inputs, ``<G output>@GRAD``; ``<G input>@GRAD``) to the op's."""
    gkernel = gop.kernel
    g_inputs = gop.inputs
    g_outputs = gop.outputs  # '<fwd input>@GRAD'
    to_generic = {v: k for k, v in names.items() if k in g_inputs or k[: -len("@GRAD")] in g_outputs}
    out_generic = {v: k for k, v in names.items() if k[: -len("@GRAD")] in g_inputs}
    differentiable = tuple(s for s in g_inputs if s not in gop.host_inputs and s not in gop.no_buffer_inputs)

    def kernel(ins, attrs):
        gins = {to_generic.get(s, s): v for s, v in ins.items()}
        op = attrs.get("_op")
        if op is not None:
            wanted = frozenset(
                out_generic[s][: -len("@GRAD")] for s, ns in op.outputs.items() if ns and s in out_generic
            )
        else:
            wanted = frozenset(differentiable)
        # G computes the gradients whose own gradients came in
        g_wanted = frozenset(
            s[: -len("@GRAD")] for s in g_outputs if any(t is not None for t in gins.get(s + "@GRAD", ()))
        )
        gattrs = dict(attrs)
        gattrs["_wanted"] = g_wanted
        got = _vjp(gkernel, g_inputs, g_outputs, gins, gattrs, wanted)
        return {names.get(s, s): v for s, v in got.items()}

    kernel.__name__ = f"{gop.type}_grad_vjp"
    return kernel


# the registry makes the generic grads of the ops registered from now on with this module's kernels
registry.install_generic_grads(sys.modules[__name__])
