"""fluid.contrib.mixed_precision as fluid 1.8.5 builds it: the ops and variable dtypes that decorate()
makes for an MLP (SGD, dynamic loss scaling) and a CNN (conv2d, batch_norm, pool2d, Adam, custom
lists, a black variable name, static loss scaling); the lists after custom changes and the overlap
error; and, as fluid 1.8.5's CPU build has no float16 kernels, a run with every white op moved to the
black list: the dynamic loss scaling over steps with finite and infinite gradients. Prints JSON; run
under fluid 1.8.5 (tools/fluid18) it wrote mixed_precision.json."""

import json

import numpy as np
import paddle.fluid as fluid
from paddle.fluid.contrib import mixed_precision as mp

L = fluid.layers
results = {}


def program_text(prog):
    block = prog.global_block()
    ops = [
        [
            op.type,
            {k: op.input(k) for k in op.input_names if op.input(k)},
            {k: op.output(k) for k in op.output_names if op.output(k)},
        ]
        for op in block.ops
    ]
    names = sorted({n for op in block.ops for n in op.input_arg_names + op.output_arg_names})
    dtypes = {}
    for n in names:
        if block.has_var(n) and block.var(n).type == fluid.core.VarDesc.VarType.LOD_TENSOR:
            dtypes[n] = str(block.var(n).dtype).split(".")[-1]
    return {"ops": ops, "dtypes": dtypes}


main, startup = fluid.Program(), fluid.Program()
with fluid.program_guard(main, startup):
    x = fluid.data("x", [None, 4], "float32")
    y = fluid.data("y", [None, 1], "int64")
    h = L.fc(x, 8, act="relu")
    p = L.fc(h, 3)
    loss = L.mean(L.softmax_with_cross_entropy(p, y))
    opt = mp.decorate(fluid.optimizer.SGD(0.1), init_loss_scaling=8.0)
    opt.minimize(loss)
results["mlp"] = program_text(main)
results["mlp"]["names"] = [opt.get_loss_scaling().name, opt.get_scaled_loss().name]

main, startup = fluid.Program(), fluid.Program()
with fluid.program_guard(main, startup):
    img = fluid.data("img", [None, 1, 8, 8], "float32")
    label = fluid.data("label", [None, 1], "int64")
    c = L.conv2d(img, 4, 3, padding=1)
    b = L.batch_norm(c, act="relu")
    pool = L.pool2d(b, 2, pool_stride=2)
    t = L.tanh(L.fc(pool, 16, param_attr=fluid.ParamAttr(name="fc_w")))
    s = L.elementwise_add(t, L.scale(t, 0.5))
    pred = L.fc(s, 10, act="softmax")
    loss = L.mean(L.cross_entropy(pred, label))
    lists = mp.AutoMixedPrecisionLists(custom_white_list={"tanh"}, custom_black_varnames={"fc_w"})
    opt = mp.decorate(fluid.optimizer.Adam(0.01), amp_lists=lists, use_dynamic_loss_scaling=False)
    opt.minimize(loss)
results["cnn"] = program_text(main)

lists = mp.AutoMixedPrecisionLists(custom_white_list={"softmax", "tanh"}, custom_black_list={"relu", "mul"})
results["lists"] = [sorted(lists.white_list), sorted(lists.black_list), sorted(lists.gray_list)]
try:
    mp.AutoMixedPrecisionLists(custom_white_list={"relu"}, custom_black_list={"relu"})
except ValueError as e:
    results["overlap_error"] = str(e)

# all in float32 (fluid's CPU build has no float16 mul): the loss-scaling rule over 8 steps
main, startup = fluid.Program(), fluid.Program()
main.random_seed = startup.random_seed = 3
with fluid.program_guard(main, startup):
    x = fluid.data("x", [None, 4], "float32")
    y = fluid.data("y", [None, 1], "float32")
    pred = L.fc(x, 1, param_attr=fluid.ParamAttr(name="w", initializer=fluid.initializer.Constant(0.1)), bias_attr="b")
    loss = L.mean(L.square_error_cost(pred, y))
    lists = mp.AutoMixedPrecisionLists(custom_black_list={"mul", "matmul", "conv2d"})
    opt = mp.decorate(
        fluid.optimizer.Momentum(0.01, 0.9),
        amp_lists=lists,
        init_loss_scaling=4.0,
        incr_every_n_steps=2,
        decr_every_n_nan_or_inf=1,
        incr_ratio=3.0,
        decr_ratio=0.1,
    )
    opt.minimize(loss)
results["fp32_ops"] = program_text(main)["ops"]
exe = fluid.Executor(fluid.CPUPlace())
exe.run(startup)
rng = np.random.RandomState(5)
steps = []
for step in range(9):
    xv = rng.rand(6, 4).astype("float32")
    if step in (3, 4, 5, 7):
        xv[1, 2] = np.inf
    yv = rng.rand(6, 1).astype("float32")
    got = exe.run(
        main,
        feed={"x": xv, "y": yv},
        fetch_list=[opt.get_loss_scaling(), opt._num_good_steps, opt._num_bad_steps, "w", "b"],
    )
    steps.append([np.round(np.array(g, "float64").ravel(), 6).tolist() for g in got])
results["scaling_steps"] = steps
print(json.dumps(results, sort_keys=True))
