"""sequence_pad / sequence_unpad: the hand-written grad kernels (fluidcompat_ops/sequence.py) against
torch autograd through the forward kernels, over ragged LoDs with empty sequences, rows of more than
one dimension, and (unpad) a transposed X as DynamicRNN's outputs give it."""

import numpy as np
import pytest
import torch

from fluidcompat_ops import bind_torch, lookup
from fluidcompat_ops.sequence import offsets_of, with_lod

bind_torch()

LENGTHS = ([2, 0, 4, 1], [3, 3, 1], [5], [0, 2])


def _grads(op_type, ins, attrs, out_slot, wrt):
    """(autograd's gradient of sum(Out * G) at ``wrt``, the grad kernel's) for a random G."""
    opdef = lookup(op_type)
    attrs = {**opdef.attrs, **attrs}
    leaf = ins[wrt][0].detach().requires_grad_(True)
    fins = {**ins, wrt: [with_lod(leaf, getattr(ins[wrt][0], "_lod", []))]}
    out = opdef.kernel(fins, attrs)[out_slot][0]
    g = torch.tensor(np.random.RandomState(2).randn(*out.shape))
    (want,) = torch.autograd.grad((out * g).sum(), [leaf])
    gdef = lookup(op_type + "_grad")
    gins = {s: ins[s] for s in gdef.inputs if s in ins}
    gins[out_slot + "@GRAD"] = [g]
    with torch.no_grad():
        got = gdef.kernel(gins, attrs)[wrt + "@GRAD"][0]
    return want, got


@pytest.mark.parametrize("lengths", LENGTHS)
@pytest.mark.parametrize("step", [(3,), (2, 2)])
def test_sequence_pad_grad_matches_autograd(lengths, step):
    x = with_lod(torch.tensor(np.random.RandomState(1).randn(sum(lengths), *step)), [offsets_of(lengths)])
    ins = {"X": [x], "PadValue": [torch.tensor([0.5], dtype=torch.float64)]}
    want, got = _grads("sequence_pad", ins, {"padded_length": max(lengths) + 1}, "Out", "X")
    assert got.shape == x.shape
    np.testing.assert_array_equal(got.numpy(), want.numpy())


@pytest.mark.parametrize("lengths", LENGTHS)
@pytest.mark.parametrize("transposed", [False, True])
def test_sequence_unpad_grad_matches_autograd(lengths, transposed):
    n, steps = len(lengths), max(lengths) + 1
    v = torch.tensor(np.random.RandomState(3).randn(steps, n, 3))
    x = v.transpose(0, 1) if transposed else v.reshape(n, steps, 3)
    ins = {"X": [x], "Length": [torch.tensor(lengths, dtype=torch.int64)]}
    out = lookup("sequence_unpad").kernel(ins, {})["Out"][0]
    want_rows = np.concatenate([x.numpy()[i, :k] for i, k in enumerate(lengths)])
    np.testing.assert_array_equal(out.numpy(), want_rows)
    want, got = _grads("sequence_unpad", ins, {}, "Out", "X")
    assert got.shape == x.shape
    np.testing.assert_array_equal(got.numpy(), want.numpy())
