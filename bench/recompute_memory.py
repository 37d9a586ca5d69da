"""What recomputation saves: the activation bytes a deep MLP's training step holds from the forward pass
for the backward pass (16 fc+relu layers of 1024 units, batch 2048, SGD), plain and with recomputation
(a checkpoint every 4 layers). fluidcompat: the values live right after the loss op under the
executor's freeing plan (each value freed after its last reader), from ``RecomputeOptimizer``'s
program and the plain one; hand-written torch: the bytes autograd saves for backward
(``saved_tensors_hooks``), plain and with ``torch.utils.checkpoint`` over the same segments. Peak RSS
is not used: under glibc's heap it moved with the allocation pattern more than with what was live.
"""

from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

LAYERS, WIDTH, BATCH, EVERY = 16, 1024, 2048, 4


def fluid_held_mb(recompute: bool) -> float:
    import fluidcompat as fluid
    from fluidcompat.dtypes import np_name

    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data("x", [None, WIDTH], "float32")
        h, checkpoints = x, []
        for i in range(LAYERS):
            h = fluid.layers.fc(h, WIDTH, act="relu")
            if (i + 1) % EVERY == 0:
                checkpoints.append(h)
        loss = fluid.layers.mean(h)
        opt = fluid.optimizer.SGD(0.01)
        if recompute:
            opt = fluid.optimizer.RecomputeOptimizer(opt)
            opt._set_checkpoints(checkpoints)
        opt.minimize(loss)
    # the executor's own plan: what each step writes, frees and makes a shape-only stub
    block = main.global_block()
    steps = fluid.Executor(fluid.CPUPlace())._prepare(main, {"x"}, [loss.name]).steps
    at = next(i for i, s in enumerate(steps) if loss.name in s.plan.op.output_arg_names)
    live = set()
    for s in steps[: at + 1]:
        live.update(n for _, names in s.outs for n in names)
        live.difference_update(s.dels + s.stubs)
    held = 0
    for n in live:
        var = block._find_var_recursive(n)
        if var is None or var.persistable:
            continue
        count = 1
        for d in var.shape:
            count *= BATCH if d < 0 else d
        held += count * np.dtype(np_name(var.dtype)).itemsize
    return held / 2**20


def torch_held_mb(recompute: bool) -> float:
    import torch
    from torch.utils.checkpoint import checkpoint

    layers = [torch.nn.Sequential(torch.nn.Linear(WIDTH, WIDTH), torch.nn.ReLU()) for _ in range(LAYERS)]
    segments = [torch.nn.Sequential(*layers[i : i + EVERY]) for i in range(0, LAYERS, EVERY)]
    params = {id(p) for layer in layers for p in layer.parameters()}
    saved = {}

    def pack(t):
        if id(t) not in params:  # parameters are held anyway
            saved[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
        return t

    x = torch.rand(BATCH, WIDTH)
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        h = x
        for seg in segments:
            h = checkpoint(seg, h, use_reentrant=False) if recompute else seg(h)
        loss = h.mean()
    loss.backward()
    return sum(saved.values()) / 2**20


def main() -> None:
    for who, held in (("fluidcompat", fluid_held_mb), ("torch", torch_held_mb)):
        plain, again = held(False), held(True)
        name = f"deep MLP held for backward, {who}"
        print(f"{name:<38} plain {plain:6.0f} MB   recompute {again:6.0f} MB   ratio {again / plain:5.2f}")


if __name__ == "__main__":
    main()
