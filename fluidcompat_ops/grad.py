"""Grad kernels shared by many ops: the generic per-op VJP and SelectedRows (sparse rows)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

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


def _grad_free(t):
    from fluidcompat_ops.sequence import lod_of, with_lod

    return with_lod(t.detach().requires_grad_(True), lod_of(t))


def vjp_kernel(fwd, out_grads):
    """The grad of ``fwd`` by re-running its kernel under autograd (a per-op VJP).

    ``attrs['_wanted']`` names the forward input slots whose gradients are asked for.
    """
    fkernel = fwd.kernel
    fwd_inputs = fwd.inputs

    def kernel(ins, attrs):
        wanted = attrs["_wanted"]
        fins = {}
        leaves = []
        for slot in fwd_inputs:
            vals = ins.get(slot, [])
            if slot in wanted:
                vals = [_grad_free(v) if v is not None and v.is_floating_point() else v for v in vals]
                leaves.extend((slot, v) for v in vals)
            fins[slot] = vals
        with torch.enable_grad():
            outs = fkernel(fins, attrs)
        ys, gs = [], []
        for slot in out_grads:
            for y, g in zip(outs.get(slot, ()), ins.get(slot + "@GRAD", ())):
                if g is not None and y is not None and y.requires_grad:
                    ys.append(y)
                    gs.append(g.reshape(y.shape).to(y.dtype))
        diff = [v for _, v in leaves if v is not None and v.requires_grad]
        grads = iter(torch.autograd.grad(ys, diff, gs, allow_unused=True) if ys and diff else [None] * len(diff))
        result = {}
        for slot, v in leaves:
            g = next(grads) if v is not None and v.requires_grad else None
            if g is None and v is not None:
                g = torch.zeros_like(v)
            result.setdefault(slot + "@GRAD", []).append(g)
        return result

    kernel.__name__ = f"{fwd.type}_vjp"
    return kernel
