"""``fluid.nets``: small networks composed of layers, as fluid 1.8 composed them."""

from __future__ import annotations

from fluidcompat import layers

__all__ = ["simple_img_conv_pool", "img_conv_group", "sequence_conv_pool", "glu", "scaled_dot_product_attention"]


def simple_img_conv_pool(
    input,
    num_filters,
    filter_size,
    pool_size,
    pool_stride,
    pool_padding=0,
    pool_type="max",
    global_pooling=False,
    conv_stride=1,
    conv_padding=0,
    conv_dilation=1,
    conv_groups=1,
    param_attr=None,
    bias_attr=None,
    act=None,
    use_cudnn=True,
):
    """conv2d then pool2d."""
    conv_out = layers.conv2d(
        input=input,
        num_filters=num_filters,
        filter_size=filter_size,
        stride=conv_stride,
        padding=conv_padding,
        dilation=conv_dilation,
        groups=conv_groups,
        param_attr=param_attr,
        bias_attr=bias_attr,
        act=act,
        use_cudnn=use_cudnn,
    )
    return layers.pool2d(
        input=conv_out,
        pool_size=pool_size,
        pool_type=pool_type,
        pool_stride=pool_stride,
        pool_padding=pool_padding,
        global_pooling=global_pooling,
        use_cudnn=use_cudnn,
    )


def img_conv_group(
    input,
    conv_num_filter,
    pool_size,
    conv_padding=1,
    conv_filter_size=3,
    conv_act=None,
    param_attr=None,
    conv_with_batchnorm=False,
    conv_batchnorm_drop_rate=0.0,
    pool_stride=1,
    pool_type="max",
    use_cudnn=True,
):
    """A VGG block: len(conv_num_filter) conv2d layers (each optionally with batch_norm and dropout),
    then pool2d."""
    tmp = input
    n = len(conv_num_filter)

    def per_layer(v):
        return list(v) if isinstance(v, (list, tuple)) else [v] * n

    conv_padding, conv_filter_size, param_attr = (
        per_layer(conv_padding),
        per_layer(conv_filter_size),
        per_layer(param_attr),
    )
    conv_with_batchnorm, drop_rate = per_layer(conv_with_batchnorm), per_layer(conv_batchnorm_drop_rate)
    for i in range(n):
        local_act = None if conv_with_batchnorm[i] else conv_act
        tmp = layers.conv2d(
            input=tmp,
            num_filters=conv_num_filter[i],
            filter_size=conv_filter_size[i],
            padding=conv_padding[i],
            param_attr=param_attr[i],
            act=local_act,
            use_cudnn=use_cudnn,
        )
        if conv_with_batchnorm[i]:
            tmp = layers.batch_norm(input=tmp, act=conv_act)
            if abs(drop_rate[i]) > 1e-5:
                tmp = layers.dropout(x=tmp, dropout_prob=drop_rate[i])
    return layers.pool2d(
        input=tmp, pool_size=pool_size, pool_type=pool_type, pool_stride=pool_stride, use_cudnn=use_cudnn
    )


def sequence_conv_pool(
    input, num_filters, filter_size, param_attr=None, act="sigmoid", pool_type="max", bias_attr=None
):
    """sequence_conv over each sequence of ``input``, then sequence_pool of each sequence."""
    conv_out = layers.sequence_conv(
        input=input,
        num_filters=num_filters,
        filter_size=filter_size,
        param_attr=param_attr,
        bias_attr=bias_attr,
        act=act,
    )
    return layers.sequence_pool(input=conv_out, pool_type=pool_type)


def glu(input, dim=-1):
    """Gated linear unit: the first half of ``input`` along ``dim`` times sigmoid of the second."""
    a, b = layers.split(input, num_or_sections=2, dim=dim)
    return layers.elementwise_mul(a, layers.sigmoid(b))


def scaled_dot_product_attention(queries, keys, values, num_heads=1, dropout_rate=0.0):
    """Multi-head scaled dot-product attention over [batch, length, size] queries, keys and values;
    with more than one head each input is first projected by an ``fc`` (weights and bias), as fluid 1.8."""
    if not (len(queries.shape) == len(keys.shape) == len(values.shape) == 3):
        raise ValueError("Inputs queries, keys and values should all be 3-D tensors.")
    if queries.shape[-1] != keys.shape[-1]:
        raise ValueError("The hidden size of queries and keys should be the same.")
    if keys.shape[-2] != values.shape[-2]:
        raise ValueError("The max sequence length in query batch and in key batch should be the same.")
    if keys.shape[-1] % num_heads != 0:
        raise ValueError(
            f"The hidden size of keys ({keys.shape[-1]}) must be divisible by the number of attention heads "
            f"({num_heads})."
        )
    if values.shape[-1] % num_heads != 0:
        raise ValueError(
            f"The hidden size of values ({values.shape[-1]}) must be divisible by the number of attention heads "
            f"({num_heads})."
        )

    def split_heads(x):
        if num_heads == 1:
            return x
        size = x.shape[-1]
        x = layers.reshape(x, [0, 0, num_heads, size // num_heads])
        return layers.transpose(x, [0, 2, 1, 3])

    def combine_heads(x):
        if num_heads == 1:
            return x
        x = layers.transpose(x, [0, 2, 1, 3])
        return layers.reshape(x, [0, 0, x.shape[2] * x.shape[3]])

    inputs = (queries, keys, values)
    if num_heads > 1:  # as fluid 1.8: each input projected (an fc over its last dim) before the split
        inputs = tuple(layers.fc(input=x, size=x.shape[-1], num_flatten_dims=2) for x in inputs)
    q, k, v = (split_heads(x) for x in inputs)
    key_dim_per_head = keys.shape[-1] // num_heads
    scaled_q = layers.scale(x=q, scale=key_dim_per_head**-0.5)
    product = layers.matmul(x=scaled_q, y=k, transpose_y=True)
    # softmax over the last dim, built as fluid's: reshaped to 2-D with the activation, and back
    flat = layers.reshape(x=product, shape=[-1, product.shape[-1]], act="softmax")
    weights = layers.reshape(x=flat, shape=list(product.shape))
    if dropout_rate:
        weights = layers.dropout(weights, dropout_prob=dropout_rate, is_test=False)
    ctx_multiheads = layers.matmul(weights, v)
    return combine_heads(ctx_multiheads)


def __getattr__(name):  # fluid 1.8 names fluidcompat lacks: UnsupportedAPIError
    if name.startswith("__"):
        raise AttributeError(name)
    from fluidcompat.fluid18_names import unsupported

    return unsupported("paddle.fluid.nets")(name)
