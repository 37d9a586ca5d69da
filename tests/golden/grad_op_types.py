# Which grad ops fluid 1.8 appends for about eighty layers (its grad op makers: split -> concat,
# flip -> flip, cumsum -> cumsum the other way, a fill_zeros_like for a piece of split / unstack the
# loss does not use, ...) and the gradient each gives a [4, 6] parameter. Left out: layers whose
# grad ops fluid appended for nothing (a sum over gradients nothing wrote; a cast back to bool),
# and dropout(is_test=True), whose grad fluid could not build.
import json

import numpy as np
import paddle.fluid as fluid

L = fluid.layers
VALUES = (np.arange(24, dtype="float32").reshape(4, 6) * 7 % 11 / 11 + 0.05).astype("float32")
cases = {
    "split": lambda x: L.split(x, 2, dim=1)[0],
    "split3": lambda x: L.split(x, [1, 2, 3], dim=1)[1],
    "unstack": lambda x: L.unstack(x, axis=0)[0],
    "stack": lambda x: L.stack([x, x * 2.0], axis=0),
    "concat": lambda x: L.concat([x, x], axis=1),
    "sums": lambda x: L.sums([x, x * 3.0]),
    "scale": lambda x: L.scale(x, 2.0, 1.0),
    "assign": lambda x: L.assign(x),
    "reshape": lambda x: L.reshape(x, [-1]),
    "flatten": lambda x: L.flatten(x),
    "squeeze": lambda x: L.squeeze(L.unsqueeze(x, [0]), [0]),
    "transpose": lambda x: L.transpose(x, [1, 0]),
    "expand": lambda x: L.expand(x, [2, 1]),
    "slice": lambda x: L.slice(x, [1], [1], [3]),
    "strided_slice": lambda x: L.strided_slice(x, [1], [0], [6], [2]),
    "gather": lambda x: L.gather(x, L.assign(np.array([0, 2], "int32"))),
    "gather_nd": lambda x: L.gather_nd(x, L.assign(np.array([[0, 1], [2, 3]], "int32"))),
    "scatter": lambda x: L.scatter(x, L.assign(np.array([1], "int64")), L.slice(x, [0], [0], [1])),
    "pad": lambda x: L.pad(x, [0, 1, 1, 0]),
    "crop": lambda x: L.crop(x, shape=[2, 2]),
    "crop_tensor": lambda x: L.crop_tensor(x, shape=[2, 2]),
    "reverse": lambda x: L.reverse(x, [0]),
    "flip": lambda x: L.flip(x, [1]),
    "roll": lambda x: L.roll(x, 1, 0),
    "cast": lambda x: L.cast(L.cast(x, "float64"), "float32"),
    "elementwise_sub": lambda x: L.elementwise_sub(x, x * 2.0),
    "elementwise_div": lambda x: L.elementwise_div(x, x + 3.0),
    "elementwise_max": lambda x: L.elementwise_max(x, x * 0.5),
    "elementwise_pow": lambda x: L.elementwise_pow(x + 2.0, x),
    "matmul": lambda x: L.matmul(x, x, transpose_y=True),
    "mul": lambda x: L.mul(x, L.transpose(x, [1, 0])),
    "sum_reduce": lambda x: L.reduce_sum(x, 1),
    "mean_reduce": lambda x: L.reduce_mean(x, 0),
    "max_reduce": lambda x: L.reduce_max(x, 1),
    "prod_reduce": lambda x: L.reduce_prod(x, 1),
    "softmax": lambda x: L.softmax(x),
    "log_softmax": lambda x: L.log(L.softmax(x)),
    "sigmoid": lambda x: L.sigmoid(x),
    "tanh": lambda x: L.tanh(x),
    "relu": lambda x: L.relu(x),
    "abs": lambda x: L.abs(x),
    "sqrt": lambda x: L.sqrt(x + 1.0),
    "square": lambda x: L.square(x),
    "exp": lambda x: L.exp(x),
    "pow": lambda x: L.pow(x, 2.0),
    "clip": lambda x: L.clip(x, 0.2, 0.8),
    "clip_by_norm": lambda x: L.clip_by_norm(x, 1.0),
    "l2_normalize": lambda x: L.l2_normalize(x, 1),
    "layer_norm": lambda x: L.layer_norm(x),
    "sign": lambda x: L.sign(x) * x,
    "topk": lambda x: L.topk(x, 2)[0],
    "argsort": lambda x: L.argsort(x, axis=1)[0],
    "cumsum": lambda x: L.cumsum(x, axis=1),
    "unsqueeze": lambda x: L.unsqueeze(x, [1]),
    "tile_like_expand": lambda x: L.expand(L.unsqueeze(x, [0]), [3, 1, 1]),
    "sequence_free_lookup": lambda x: (
        L.embedding(L.assign(np.array([[1], [2]], "int64")), size=[5, 3]) * 1.0 + L.reduce_sum(x)
    ),
    "one_hot_mul": lambda x: L.elementwise_mul(
        x, L.cast(L.one_hot(L.assign(np.array([[1], [2], [0], [3]], "int64")), 6), "float32")
    ),
    "multiplex": lambda x: L.multiplex([x, x * 2.0], L.assign(np.array([[0], [1], [0], [1]], "int32"))),
    "smooth_l1": lambda x: L.smooth_l1(x, x * 0.5),
    "huber": lambda x: L.huber_loss(L.reduce_sum(x, 1, keep_dim=True), L.assign(np.ones((4, 1), "float32")), 1.0),
    "sigmoid_ce": lambda x: L.sigmoid_cross_entropy_with_logits(x, L.assign(np.ones((4, 6), "float32") * 0.5)),
    "softmax_ce": lambda x: L.softmax_with_cross_entropy(x, L.assign(np.array([[1], [2], [0], [3]], "int64"))),
    "cross_entropy": lambda x: L.cross_entropy(L.softmax(x), L.assign(np.array([[1], [2], [0], [3]], "int64"))),
    "mse": lambda x: L.mse_loss(x, x * 0.3),
    "bpr": lambda x: L.bpr_loss(L.softmax(x), L.assign(np.array([[1], [2], [0], [3]], "int64"))),
    "label_smooth": lambda x: L.label_smooth(L.softmax(x), epsilon=0.1),
    "lrn_like_norm": lambda x: L.reduce_sum(L.square(x)),
    "maxout": lambda x: L.maxout(L.reshape(x, [4, 6, 1, 1]), 2),
    "pixel_shuffle": lambda x: L.pixel_shuffle(L.reshape(x, [1, 4, 2, 3]), 2),
    "shuffle_channel": lambda x: L.shuffle_channel(L.reshape(x, [1, 4, 2, 3]), 2),
    "unfold": lambda x: L.unfold(L.reshape(x, [1, 1, 4, 6]), [2, 2]),
    "temporal_shift": lambda x: L.temporal_shift(L.reshape(x, [2, 2, 2, 3]), 2),
}
out = {}
for name, fn in cases.items():
    main, startup = fluid.Program(), fluid.Program()
    try:
        with fluid.program_guard(main, startup), fluid.unique_name.guard():
            init = fluid.initializer.NumpyArrayInitializer(VALUES)
            x = fluid.layers.create_parameter([4, 6], "float32", name="x", default_initializer=init)
            y = fn(x)
            loss = L.mean(y)
            fluid.backward.append_backward(loss)
        ops = [op.type for op in main.global_block().ops]
        i = ops.index("fill_constant", ops.index("mean")) if "mean" in ops else 0
        exe = fluid.Executor(fluid.CPUPlace())
        scope = fluid.Scope()
        if not main.global_block().has_var("x@GRAD"):
            out[name] = [ops[i + 1 :], "no gradient"]
            continue
        with fluid.scope_guard(scope):
            exe.run(startup)
            (g,) = exe.run(main, fetch_list=["x@GRAD"])
        out[name] = [ops[i + 1 :], np.round(np.array(g).astype("float64").reshape(-1), 5).tolist()]
    except Exception as e:
        out[name] = ["error", type(e).__name__]
print(json.dumps(out, sort_keys=True))
