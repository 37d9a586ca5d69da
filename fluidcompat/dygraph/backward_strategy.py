"""``fluid.dygraph.BackwardStrategy``: how fluid 1.8's dygraph summed gradients."""

__all__ = ["BackwardStrategy"]


class BackwardStrategy:
    """``sort_sum_gradient``: fluid 1.8 summed a value's gradients in a fixed order when set. torch's
    autograd sums them as it goes; the flag is kept for scripts that set it."""

    def __init__(self) -> None:
        self.sort_sum_gradient = False
