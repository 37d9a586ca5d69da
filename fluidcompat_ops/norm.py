"""Norms and distances: frobenius_norm, p_norm (fluid 1.8's ``paddle.norm``) and squared_l2_distance.

Their gradients are per-op VJPs of the forward kernels (fluid registered a ``<type>_grad`` for each).
"""

from __future__ import annotations

torch = None  # NOTE: [Lazy torch] in registry.py
F = None
