"""Which ops automatic mixed precision runs in float16 (white), keeps in float32 (black), or lets
follow their inputs (gray): fluid 1.8.5's default lists, and the user's changes to them."""

import copy

__all__ = ["AutoMixedPrecisionLists"]

# fluid 1.8.5's defaults
white_list = {"conv2d", "matmul", "mul"}

black_list = {
    "exp",
    "square",
    "log",
    "mean",
    "sum",
    "cos_sim",
    "softmax",
    "softmax_with_cross_entropy",
    "sigmoid_cross_entropy_with_logits",
    "cross_entropy",
    "cross_entropy2",
}

gray_list = {
    "elementwise_add",
    "elementwise_sub",
    "elementwise_mul",
    "elementwise_div",
    "elementwise_max",
    "elementwise_min",
    "elementwise_pow",
    "elementwise_mod",
    "elementwise_floordiv",
    "batch_norm",
    "tanh",
    "sigmoid",
    "lookup_table",
    "top_k",
    "pool2d",
    "pool3d",
    "dropout",
    "relu",
    "relu6",
    "leaky_relu",
    "soft_relu",
    "flatten2",
    "stack",
    "unstack",
    "uniform_random_batch_size_like",
    "gaussian_random",
    "gaussian_random_batch_size_like",
    "slice",
    "rank",
    "scale",
    "transpose2",
    "reshape2",
    "gather",
    "fill_constant",
    "get_tensor_from_selected_rows",
    "sign",
    "cast",
}


class AutoMixedPrecisionLists:
    """The white, black and gray op lists that ``rewrite_program`` follows.

    ``custom_white_list`` ops move to the white list and ``custom_black_list`` ops to the black list
    (from whichever list held them); an op in both is an error. ``custom_black_varnames``: ops that
    read or write one of these variables stay in float32 whatever their type.
    """

    def __init__(self, custom_white_list=None, custom_black_list=None, custom_black_varnames=None):
        self._custom_white_list = custom_white_list
        self._custom_black_list = custom_black_list
        self.white_list = copy.copy(white_list)
        self.black_list = copy.copy(black_list)
        self.gray_list = copy.copy(gray_list)
        self.black_varnames = copy.copy(custom_black_varnames)
        self._update_list()

    def _update_list(self) -> None:
        white = set(self._custom_white_list or ())
        black = set(self._custom_black_list or ())
        both = sorted(white & black)
        if both:
            raise ValueError(f"Custom white list overlap custom black list: {both} are in both")
        for op_type in white:
            self.black_list.discard(op_type)
            self.gray_list.discard(op_type)
            self.white_list.add(op_type)
        for op_type in black:
            self.white_list.discard(op_type)
            self.gray_list.discard(op_type)
            self.black_list.add(op_type)
