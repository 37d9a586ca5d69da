"""``paddle.metric``: top-k ``accuracy`` on Paddle 2 tensors."""

from __future__ import annotations

from fluidcompat.compat.device import Tensor
from fluidcompat.compat.tensor import unwrap

__all__ = ["accuracy"]


def accuracy(input, label, k=1, correct=None, total=None, name=None) -> Tensor:
    """The fraction (float32, shape [1]) of rows of ``input`` whose top ``k`` scores include ``label``
    (int64, shape [N, 1] or [N])."""
    x, y = unwrap(input), unwrap(label)
    if y.dim() == 2 and y.shape[1] == 1:
        y = y[:, 0]
    if y.dim() != 1 or y.shape[0] != x.shape[0]:
        raise ValueError(
            f"accuracy: the label's shape {list(unwrap(label).shape)} should be [{x.shape[0]}, 1] for an input of "
            f"shape {list(x.shape)}"
        )
    top = x.detach().topk(int(k), dim=-1).indices
    hits = (top == y.reshape(-1, 1)).any(dim=1)
    n = hits.numel()
    acc = (hits.sum().float() / max(n, 1)).reshape(1)
    if correct is not None:
        correct._t.copy_(hits.sum().reshape(correct._t.shape).to(correct._t.dtype))
    if total is not None:
        total._t.fill_(n)
    return Tensor(acc, input.place, True)
