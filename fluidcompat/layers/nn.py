"""``fluid.layers.nn``: fc, embedding, one_hot, dropout and bilinear_tensor_product. The rest of
fluid 1.8's ``layers.nn`` is defined by family (activation, math, reduction, creation, manipulation,
indexing, conv, norm, vision, losses, metrics, ...) and handed out from here as well: ``from
paddle.fluid.layers.nn import conv2d`` works as in fluid."""

from __future__ import annotations

import warnings  # noqa: F401  (this and the other unused helpers: names the module always had)

from fluidcompat import framework
from fluidcompat.dtypes import VarType, np_name, to_vartype  # noqa: F401
from fluidcompat.framework import Variable, layer
from fluidcompat.initializer import ConstantInitializer, NormalInitializer  # noqa: F401
from fluidcompat.layer_helper import LayerHelper, check_dtype, check_variable, refuse_false  # noqa: F401
from fluidcompat.layers.activation import (  # noqa: F401  (defined by family)
    cast_to,
    elu,
    gelu,
    hard_sigmoid,
    hard_swish,
    leaky_relu,
    log_softmax,
    relu,
    relu6,
    softmax,
    swish,
)
from fluidcompat.layers.conv import (  # noqa: F401  (defined by family)
    channel_bias,
    conv2d,
    conv2d_transpose,
    conv_filter,
    pool2d,
)
from fluidcompat.layers.creation import autoincreased_step_counter  # noqa: F401  (defined by family)
from fluidcompat.layers.indexing import topk  # noqa: F401  (defined by family)
from fluidcompat.layers.math import (  # noqa: F401  (defined by family)
    clip,
    clip_by_norm,
    elementwise_add,
    elementwise_div,
    elementwise_floordiv,
    elementwise_max,
    elementwise_min,
    elementwise_mod,
    elementwise_mul,
    elementwise_pow,
    elementwise_sub,
    matmul,
    mul,
    pow,
    scale,
)
from fluidcompat.layers.norm import (  # noqa: F401  (defined by family)
    append_batch_norm,
    batch_norm,
    bn_statistics,
    l2_normalize,
    layer_norm,
    normalized_by_batch,
)
from fluidcompat.layers.reduction import (  # noqa: F401  (defined by family)
    mean,
    reduce_max,
    reduce_mean,
    reduce_min,
    reduce_prod,
    reduce_sum,
)
from fluidcompat.param_attr import ParamAttr  # noqa: F401

__all__ = [
    "clip_by_norm",
    "autoincreased_step_counter",
    "fc",
    "mul",
    "matmul",
    "scale",
    "mean",
    "reduce_sum",
    "reduce_mean",
    "reduce_max",
    "reduce_min",
    "reduce_prod",
    "elementwise_add",
    "elementwise_sub",
    "elementwise_mul",
    "elementwise_div",
    "elementwise_max",
    "elementwise_min",
    "elementwise_pow",
    "elementwise_mod",
    "elementwise_floordiv",
    "softmax",
    "log_softmax",
    "clip",
    "l2_normalize",
    "topk",
    "one_hot",
    "embedding",
    "conv2d",
    "conv2d_transpose",
    "pool2d",
    "batch_norm",
    "layer_norm",
    "dropout",
    "relu",
    "pow",
    "leaky_relu",
    "elu",
    "relu6",
    "swish",
    "hard_sigmoid",
    "hard_swish",
    "gelu",
    "bilinear_tensor_product",
]


@layer
def fc(input, size, num_flatten_dims=1, param_attr=None, bias_attr=None, act=None, name=None) -> Variable:
    """Fully connected layer as fluid builds it: ``mul`` (+ ``sum``) + ``elementwise_add`` + activation."""
    if not hasattr(type(size), "__index__"):  # an int or a numpy int; fluid: set_shape's TypeError
        raise TypeError(f"fc: size must be an int (the number of output units). Received: size={size!r}")
    helper = LayerHelper("fc", **locals())
    inputs = [input] if isinstance(input, Variable) else list(input)
    for x in inputs:
        check_variable(x, "input", "fc")
        check_dtype(x.dtype, "input", ["float16", "float32", "float64"], "fc")
    attrs = param_attr if isinstance(param_attr, (list, tuple)) else [param_attr] * len(inputs)
    dtype = helper.input_dtype()
    mul_results = []
    for x, pattr in zip(inputs, attrs):
        if num_flatten_dims == -1:  # all but the last dim, as fluid 1.8.5 (taken from the first input on)
            num_flatten_dims = len(x.shape) - 1
        if num_flatten_dims >= len(x.shape) or num_flatten_dims < 1:
            raise ValueError(
                f"num_flatten_dims must be in [1, rank(input)). Received: num_flatten_dims={num_flatten_dims}, "
                f"input.shape={x.shape}"
            )
        in_features = 1
        for d in x.shape[num_flatten_dims:]:
            if d < 0:
                raise ValueError(f"fc needs known feature dims. Received: input.shape={x.shape}")
            in_features *= d
        w = helper.create_parameter(attr=pattr, shape=[in_features, size], dtype=dtype)
        tmp = helper.create_variable_for_type_inference(dtype)
        helper.append_op(
            type="mul",
            inputs={"X": [x], "Y": [w]},
            outputs={"Out": [tmp]},
            attrs={"x_num_col_dims": num_flatten_dims, "y_num_col_dims": 1},
        )
        mul_results.append(tmp)
    if len(mul_results) == 1:
        pre_bias = mul_results[0]
    else:
        pre_bias = helper.create_variable_for_type_inference(dtype)
        helper.append_op(
            type="sum", inputs={"X": mul_results}, outputs={"Out": [pre_bias]}, attrs={"use_mkldnn": False}
        )
    pre_act = helper.append_bias_op(pre_bias, dim_start=num_flatten_dims)
    return helper.append_activation(pre_act)


def _one_hot(op_type, input, depth, allow_out_of_range):
    helper = LayerHelper(op_type)
    out = helper.create_variable_for_type_inference(dtype=VarType.FP32)
    inputs = {"X": [input]}
    attrs = {"allow_out_of_range": allow_out_of_range}
    if isinstance(depth, Variable):
        depth.stop_gradient = True
        inputs["depth_tensor"] = [depth]
    else:
        attrs["depth"] = depth
    helper.append_op(type=op_type, inputs=inputs, outputs={"Out": [out]}, attrs=attrs)
    out.stop_gradient = True
    return out


@layer
def one_hot(input, depth, allow_out_of_range=False) -> Variable:
    """One-hot of ids whose last dim is 1 (op ``one_hot``): output replaces that dim by ``depth``."""
    check_variable(input, "input", "one_hot")
    check_dtype(input.dtype, "input", ["int32", "int64"], "one_hot")
    if not isinstance(depth, (int, Variable)):  # fluid 1.8.5's check and text
        raise TypeError(
            "The type of 'depth' in one_hot must be ((<class 'int'>,), <class 'paddle.fluid.framework.Variable'>), "
            f"but received {type(depth)}. "
        )
    return _one_hot("one_hot", input, depth, allow_out_of_range)


@layer
def one_hot_v2(input, depth, allow_out_of_range=False) -> Variable:
    """``fluid.one_hot`` (op ``one_hot_v2``): output appends a ``depth`` dim."""
    return _one_hot("one_hot_v2", input, depth, allow_out_of_range)


def _embedding(op_type, api, input, size, is_sparse, is_distributed, padding_idx, param_attr, dtype):
    check_variable(input, "input", api)
    if op_type == "lookup_table_v2":
        check_dtype(input.dtype, "input", ["int64"], api)
    check_dtype(dtype, "dtype", ["float16", "float32", "float64"], api)
    helper = LayerHelper("embedding", param_attr=param_attr)
    w = helper.create_parameter(attr=param_attr, shape=list(size), dtype=to_vartype(dtype), is_bias=False)
    out = helper.create_variable_for_type_inference(to_vartype(dtype))
    if padding_idx is None:
        padding_idx = -1
    elif padding_idx < 0:
        padding_idx = size[0] + padding_idx
    helper.append_op(
        type=op_type,
        inputs={"Ids": [input], "W": [w]},
        outputs={"Out": [out]},
        attrs={
            "is_sparse": is_sparse,
            "is_distributed": is_distributed,
            "padding_idx": padding_idx,
            # as fluid 1.8: a sparse table of a parameter-server job is looked up on the servers
            "remote_prefetch": bool(is_sparse and not is_distributed),
        },
    )
    return out


@layer
def embedding(
    input, size, is_sparse=False, is_distributed=False, padding_idx=None, param_attr=None, dtype="float32"
) -> Variable:
    """``fluid.layers.embedding`` (op ``lookup_table``): ids' last dim must be 1."""
    return _embedding(
        "lookup_table", "fluid.layers.embedding", input, size, is_sparse, is_distributed, padding_idx, param_attr, dtype
    )


@layer
def embedding_v2(
    input, size, is_sparse=False, is_distributed=False, padding_idx=None, param_attr=None, dtype="float32"
) -> Variable:
    """``fluid.embedding`` (op ``lookup_table_v2``): output shape is ids.shape + [size[1]]."""
    return _embedding(
        "lookup_table_v2", "fluid.embedding", input, size, is_sparse, is_distributed, padding_idx, param_attr, dtype
    )


@layer
def dropout(x, dropout_prob, is_test=False, seed=None, name=None, dropout_implementation="downgrade_in_infer"):
    check_variable(x, "x", "dropout")
    if dropout_implementation not in ("downgrade_in_infer", "upscale_in_train"):
        raise ValueError(
            "dropout_implementation must be 'downgrade_in_infer' or 'upscale_in_train'. "
            f"Received: dropout_implementation={dropout_implementation!r}"
        )
    helper = LayerHelper("dropout", **locals())
    tracer = framework._dygraph_tracer()
    if tracer is not None and not tracer._train_mode:  # dygraph eval mode (fluid 1.8 read only this)
        is_test = True
    if not seed and helper.main_program.random_seed:
        seed = helper.main_program.random_seed
    out = helper.create_variable_for_type_inference(dtype=x.dtype)
    mask = helper.create_variable_for_type_inference(dtype=VarType.UINT8, stop_gradient=True)
    helper.append_op(
        type="dropout",
        inputs={"X": [x]},
        outputs={"Out": [out], "Mask": [mask]},
        attrs={
            "dropout_prob": float(dropout_prob),
            "is_test": is_test,
            "fix_seed": seed is not None,
            "seed": seed if seed is not None else 0,
            "dropout_implementation": dropout_implementation,
        },
    )
    return out


@layer
def bilinear_tensor_product(x, y, size, act=None, name=None, param_attr=None, bias_attr=None):
    helper = LayerHelper("bilinear_tensor_product", act=act, name=name)
    w = helper.create_parameter(attr=param_attr, shape=[size, x.shape[1], y.shape[1]], dtype=x.dtype)
    ins = {"X": [x], "Y": [y], "Weight": [w]}
    bias = helper.create_parameter(attr=bias_attr, shape=[1, size], dtype=x.dtype, is_bias=True)
    if bias is not None:
        ins["Bias"] = [bias]
    out = helper.create_variable_for_type_inference(dtype=x.dtype)
    helper.append_op(type="bilinear_tensor_product", inputs=ins, outputs={"Out": [out]})
    return helper.append_activation(out)
