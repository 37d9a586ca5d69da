"""What fluid 1.8.5's CPU kernels drew for a fixed seed: uniform_random / gaussian_random /
truncated_gaussian_random (float32 and float64, several seeds, a draw of 600,000 numbers past the
first chunk of 2^18), their batch_size_like forms, dropout masks (layer seed, program random_seed, a
negative seed), sampling_id, randint, randperm (glibc's rand), random_crop and shuffle_batch over runs, dpsgd's noise,
every initializer under Program.random_seed, and a seeded MLP with dropout trained three steps from
its own initialization (no parameters set by hand): losses and parameters; which layers' ops take
the program's seed."""

import contextlib
import io
import json

import numpy as np
import paddle.fluid as fluid

L = fluid.layers
place = fluid.CPUPlace()
out = {}


def r6(a):
    return np.round(np.asarray(a).astype("float64"), 6).reshape(-1).tolist()


main, startup = fluid.Program(), fluid.Program()
with fluid.program_guard(main, startup):
    x = fluid.data("x", [None, 5], "float32")
    ops = {
        "u1": L.uniform_random([7], min=0.0, max=1.0, seed=1),
        "u7": L.uniform_random([2, 3], min=-2.0, max=3.0, seed=7),
        "layer_u64": L.uniform_random([5], seed=7, dtype="float64"),
        "u_big": L.uniform_random([600000], seed=3),
        "g1": L.gaussian_random([7], seed=1),
        "g64": L.gaussian_random([5], mean=1.0, std=3.0, seed=7, dtype="float64"),
        "g_big": L.gaussian_random([600001], seed=5, mean=0.5, std=2.0),
        "ubsl": L.uniform_random_batch_size_like(x, [-1, 4], min=-1.0, max=2.0, seed=11),
        "gbsl": L.gaussian_random_batch_size_like(x, [-1, 4], mean=0.0, std=1.0, seed=11),
    }
exe = fluid.Executor(place)
got = exe.run(main, feed={"x": np.ones((3, 5), "float32")}, fetch_list=list(ops.values()))
for k, v in zip(ops, got):
    v = np.asarray(v)
    if v.size > 1000:
        picks = [0, 1, 2, 262143, 262144, 262145, 524288, v.size - 1]
        out[k] = [list(v.shape), str(v.dtype), r6(v.reshape(-1)[picks]), round(float(v.astype("float64").sum()), 2)]
    else:
        out[k] = [list(v.shape), str(v.dtype), r6(v)]

main, startup = fluid.Program(), fluid.Program()
with fluid.program_guard(main, startup):
    p = L.create_parameter([6], "float64", default_initializer=fluid.initializer.Uniform(-1, 1, seed=3))
    q = L.create_parameter([6], "float64", default_initializer=fluid.initializer.Normal(0.5, 2, seed=3))
exe.run(startup)
out["float64"] = [[str(np.asarray(v).dtype), r6(v)] for v in exe.run(main, fetch_list=[p, q])]

main, startup = fluid.Program(), fluid.Program()
with fluid.program_guard(main, startup):
    probs = fluid.data("probs", [None, 4], "float32")
    ints = [
        L.sampling_id(probs, seed=5),
        L.randint(0, 10, [8], seed=5),
        L.randint(-3, 1000, [3, 4], seed=9),
        L.randperm(8, seed=5),
        L.randperm(50, seed=-2),
    ]
p = np.tile(np.array([[0.1, 0.2, 0.3, 0.4]], "float32"), (10, 1))
out["ints"] = [np.asarray(v).tolist() for v in exe.run(main, feed={"probs": p}, fetch_list=ints)]

main, startup = fluid.Program(), fluid.Program()
with fluid.program_guard(main, startup):
    img = fluid.data("img", [None, 3, 6, 6], "float32")
    crops = [L.random_crop(img, [3, 2, 2], seed=7), L.random_crop(img, [2, 4, 3], seed=-123)]
exe.run(startup)
v = np.arange(4 * 3 * 6 * 6, dtype="float32").reshape(4, 3, 6, 6)
out["random_crop"] = [  # the corner of each crop, over three runs (each carries its seed on)
    [np.asarray(t)[:, :, 0, 0].tolist() for t in exe.run(main, feed={"img": v}, fetch_list=crops)] for _ in range(3)
]

np.random.seed(0)  # random_crop without a seed takes its seed from numpy's generator
main, startup = fluid.Program(), fluid.Program()
main.random_seed = startup.random_seed = 11
with fluid.program_guard(main, startup), contextlib.redirect_stdout(io.StringIO()):  # (nce prints)
    x = fluid.data("x", [None, 4], "float32")
    L.uniform_random([3])
    L.gaussian_random([3])
    L.uniform_random_batch_size_like(x, [-1, 2])
    L.sampling_id(L.softmax(x))
    L.randint(0, 5, [3])
    L.randperm(4)
    L.dropout(x, 0.3)
    L.random_crop(L.reshape(x, [-1, 2, 2]), [1, 1])
    L.nce(x, fluid.data("y", [None, 1], "int64"), 5)
    L.sampled_softmax_with_cross_entropy(x, fluid.data("z", [None, 1], "int64"), 2)
out["seed_attrs"] = [  # which layers take Program.random_seed (fluid's: dropout only)
    [op.type] + [op.attr(a) for a in ("seed", "startup_seed", "fix_seed") if op.has_attr(a)]
    for op in main.global_block().ops
]

main, startup = fluid.Program(), fluid.Program()
with fluid.program_guard(main, startup):
    x = fluid.data("x", [None, 3], "float32")
    y = L.fc(x, 2, param_attr=fluid.ParamAttr(initializer=fluid.initializer.Constant(0.5)), bias_attr=False)
    dp_loss = L.mean(y)
    dpsgd = fluid.optimizer.Dpsgd(learning_rate=0.1, clip=0.5, batch_size=4.0, sigma=2.0)
    dpsgd._seed = 7  # (fluid's way to fix its noise)
    dpsgd.minimize(dp_loss)
scope = fluid.Scope()
exe.run(startup, scope=scope)
dp_steps = []
for _ in range(2):
    exe.run(main, feed={"x": np.ones((2, 3), "float32")}, fetch_list=[dp_loss], scope=scope)
    dp_steps.append(r6(np.array(scope.find_var(main.global_block().all_parameters()[0].name).get_tensor())))
out["dpsgd"] = dp_steps

main, startup = fluid.Program(), fluid.Program()
with fluid.program_guard(main, startup):
    rows = fluid.data("rows", [None, 2], "float32")
    shuffled = fluid.contrib.layers.shuffle_batch(rows, seed=5)
exe.run(startup)
v = np.arange(20, dtype="float32").reshape(10, 2)
out["shuffle_batch"] = [
    np.asarray(exe.run(main, feed={"rows": v}, fetch_list=[shuffled])[0])[:, 0].tolist() for _ in range(3)
]

drops = {}
for name, seed, prog_seed, impl in (
    ("seed1", 1, 0, "upscale_in_train"),
    ("seed123", 123, 0, "downgrade_in_infer"),
    ("negative", -5, 0, "upscale_in_train"),
    ("program", None, 33, "downgrade_in_infer"),
):
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = prog_seed
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [None, 7], "float32")
        y = L.dropout(x, 0.35, seed=seed, dropout_implementation=impl)
    (r,) = exe.run(main, feed={"x": np.ones((4, 7), "float32")}, fetch_list=[y])
    drops[name] = r6(r)
out["dropout"] = drops

main, startup = fluid.Program(), fluid.Program()
main.random_seed = startup.random_seed = 90
init = fluid.initializer
with fluid.program_guard(main, startup):
    x = fluid.data("x", [None, 4], "float32")
    y = L.fc(x, 3)
    L.fc(y, 2, param_attr=fluid.ParamAttr(initializer=init.Normal(0.0, 2.0)))
    L.fc(y, 2, param_attr=fluid.ParamAttr(initializer=init.TruncatedNormal(0.5, 2.0)))
    L.fc(y, 2, param_attr=fluid.ParamAttr(initializer=init.Uniform(-0.3, 0.7)))
    L.fc(y, 2, param_attr=fluid.ParamAttr(initializer=init.Xavier(uniform=False)))
    L.embedding(fluid.data("i", [None, 1], "int64"), [5, 3])
    im = fluid.data("im", [None, 2, 4, 4], "float32")
    L.conv2d(im, 2, 3, param_attr=fluid.ParamAttr(initializer=init.MSRA()))
    L.conv2d(im, 2, 3, param_attr=fluid.ParamAttr(initializer=init.MSRA(uniform=False)))
scope = fluid.Scope()
exe.run(startup, scope=scope)
out["initializers"] = {
    p.name: r6(np.array(scope.find_var(p.name).get_tensor())) for p in main.global_block().all_parameters()
}

main, startup = fluid.Program(), fluid.Program()
main.random_seed = startup.random_seed = 90
with fluid.program_guard(main, startup):
    img = fluid.data("img", [None, 16], "float32")
    label = fluid.data("label", [None, 1], "int64")
    h = L.fc(img, 12, act="relu")
    h = L.dropout(h, 0.3)
    pred = L.fc(h, 4, act="softmax")
    loss = L.mean(L.cross_entropy(pred, label))
    fluid.optimizer.Adam(0.01).minimize(loss)
scope = fluid.Scope()
rng = np.random.RandomState(0)
with fluid.scope_guard(scope):
    exe.run(startup)
    losses = []
    for _ in range(3):
        feed = {
            "img": rng.uniform(-1, 1, (6, 16)).astype("float32"),
            "label": rng.randint(0, 4, (6, 1)).astype("int64"),
        }
        (lv,) = exe.run(main, feed=feed, fetch_list=[loss])
        losses.append(r6(lv))
    first = main.global_block().all_parameters()[0].name
    out["mlp"] = {"losses": losses, "first": r6(np.array(scope.find_var(first).get_tensor()))[:24]}
print(json.dumps(out))
