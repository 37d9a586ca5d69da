"""``fluid.contrib.model_stat.summary``: a table of the parameters and FLOPs of a program's conv,
fc (``mul``), pool, batch_norm and activation ops, per sample, printed as fluid 1.8.5 printed it."""

from __future__ import annotations

from typing import List, Optional, Tuple

__all__ = ["summary"]

_ACTIVATIONS = ("sigmoid", "tanh", "relu", "leaky_relu", "prelu")


def _per_sample(shape) -> int:
    n = 1
    for d in shape[1:]:
        n *= d
    return n


def _count(block, op) -> Optional[Tuple[tuple, tuple, int, int]]:
    """(input shape, output shape, parameters, FLOPs) of one op, shapes without the batch; None for an
    op the summary does not count."""

    def shape(slot, output=False):
        names = op.output(slot) if output else op.input(slot)
        return tuple(block._var_recursive(names[0]).shape)

    if op.type in ("conv2d", "depthwise_conv2d"):
        c_out, c_in_per_group, k_h, k_w = shape("Filter")
        x, y = shape("Input"), shape("Output", True)
        kernel = k_h * k_w * c_in_per_group  # the filter holds each group's input channels already
        bias = 1 if op.input("Bias") else 0
        return x, y, c_out * (kernel + bias), 2 * y[2] * y[3] * c_out * (kernel + bias)  # a mul and an add
    if op.type == "pool2d":
        x, y = shape("X"), shape("Out", True)
        k = op.attr("ksize")
        return x, y, 0, y[1] * y[2] * y[3] * k[0] * k[1]
    if op.type == "mul":
        if "fc" not in op.output("Out")[0]:  # the mul of an fc layer (fluid's rule: by its output's name)
            return None
        k_in, k_out = shape("Y")
        return shape("X"), shape("Out", True), k_in * k_out + 1, k_in * k_out
    if op.type in _ACTIVATIONS:
        x, y = shape("X"), shape("Out", True)
        return x, y, 1 if op.type == "prelu" else 0, _per_sample(x)
    if op.type == "batch_norm":
        x, y = shape("X"), shape("Y", True)
        return x, y, 2 * x[1], 2 * _per_sample(x)  # gamma and beta; a mean and a deviation
    return None


def _table(header: List[str], rows: List[List[str]]) -> str:
    """A right-aligned text table with +---+ rules, as PrettyTable draws one."""
    widths = [max(len(r[i]) for r in [header] + rows) for i in range(len(header))]
    rule = "+" + "+".join("-" * (w + 2) for w in widths) + "+"

    def line(cells):
        return "|" + "|".join(" " + c.rjust(w) + " " for c, w in zip(cells, widths)) + "|"

    return "\n".join([rule, line(header), rule] + [line(r) for r in rows] + [rule])


def summary(main_prog) -> None:
    """Print each counted op of every block of ``main_prog``: its input and output shape (without the
    batch), parameters and FLOPs, then the totals."""
    rows, params, flops = [], 0, 0
    for block in main_prog.blocks:
        for op in block.ops:
            counted = _count(block, op)
            if counted is None:
                continue
            x, y, p, f = counted
            rows.append([str(len(rows)), op.type, str(tuple(x[1:])), str(tuple(y[1:])), str(int(p)), str(int(f))])
            params += int(p)
            flops += int(f)
    print(_table(["No.", "TYPE", "INPUT", "OUTPUT", "PARAMs", "FLOPs"], rows))
    print(f"Total PARAMs: {params}({params / 10**6:.4f}M)")
    print(f"Total FLOPs: {flops}({flops / 10**9:.2f}G)")
    print(
        "Notice: \n now supported ops include [Conv, DepthwiseConv, FC(mul), BatchNorm, Pool, "
        "Activation(sigmoid, tanh, relu, leaky_relu, prelu)]"
    )
