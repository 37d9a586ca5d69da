"""The LoD each value carries when a program runs on LoDTensors: ~180 layers of the layer zoo fed
sequences (each fetched from its own pruned program), a program declaring no LoD (fluid.data) fed
LoDTensors (an embedding / fc / softmax chain, the word2vec book's net), fill_constant_batch_size_like
taking its batch from the LoD, sequence_scatter with fewer sequences than rows, and
add_position_encoding over LoD sequences (values and gradient)."""

import json
import sys

import numpy as np
import paddle.fluid as fluid
from _golden import flat
from _layer_zoo import STOPS_FLUID, build, lod_feed, run_pruned

place = fluid.CPUPlace()
L = fluid.layers
rng = np.random.RandomState(0)


def lt(a, lens):
    return fluid.create_lod_tensor(np.asarray(a), lens, place)


def zoo():
    outs, startup = build(startup_too=True)
    outs = {k: v for k, v in outs.items() if v is not None}
    main = next(iter(outs.values())).block.program
    feed = lod_feed(rng, place)
    exe = fluid.Executor(place)
    exe.run(startup)
    found = {}
    for k, v in sorted(outs.items()):
        if k in STOPS_FLUID:
            continue
        try:
            got = run_pruned(exe, main, [v], feed)[0]
            found[k] = [got.lod(), list(np.array(got).shape)] if hasattr(got, "lod") else ["array"]
        except Exception as e:
            found[k] = ["error", [ln for ln in str(e).splitlines() if "rror:" in ln][-1:]]
    return found


def undeclared():
    """fluid.data variables (lod_level 0) fed LoDTensors: the LoD travels on as in any program."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        w = fluid.data(name="w", shape=[None, 1], dtype="int64")
        x = fluid.data(name="x", shape=[None, 3], dtype="float32")
        e = L.embedding(w, size=[10, 3], param_attr="sw")
        e2 = L.embedding(w, size=[10, 3], param_attr="sw", is_sparse=True)
        c = L.concat([e, e2], axis=1)
        f = L.fc(c, size=4, act="sigmoid")
        s = L.fc(f, size=4, act="softmax")
        outs = dict(e=e, c=c, c0=L.concat([x, e2], axis=1), f=f, s=s, ce=L.cross_entropy(s, w), mean=L.mean(s),
                    tp=L.transpose(e, [1, 0]), st=L.stack([e, e2]), acc=L.accuracy(s, w),
                    fcbsl=L.fill_constant_batch_size_like(e, [-1, 2], "float32", 1.0))  # fmt: skip
    exe = fluid.Executor(place)
    exe.run(startup)
    found = []
    feeds = {
        "lod": {"w": lt(np.array([[0], [1], [2]], "int64"), [[1, 2]]), "x": lt(np.ones((3, 3), "float32"), [[2, 1]])},
        "dense": {"w": np.array([[0], [1], [2]], "int64"), "x": np.ones((3, 3), "float32")},
    }
    for run in ("lod", "dense", "lod"):  # the same program and names, fed with and without a LoD
        got = exe.run(main, feed=feeds[run], fetch_list=list(outs.values()), return_numpy=False)
        found.append({k: [v.lod(), list(np.array(v).shape)] for k, v in zip(outs, got)})
    return found


def batch_size_like():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        s = fluid.data("s", [None, 3], "float32", lod_level=2)
        s1 = fluid.data("s1", [None, 3], "float32", lod_level=1)
        x = fluid.data("x", [None, 5], "float32")
        ids = fluid.data("ids", [None, 1], "int64", lod_level=1)
        upd = fluid.data("upd", [None, 1], "float32", lod_level=1)
        outs = [
            L.fill_constant_batch_size_like(s, [-1, 2], "float32", 1.0),
            L.fill_constant_batch_size_like(s1, [-1, 2], "float32", 1.0),
            L.fill_constant_batch_size_like(s1, [3, -1], "float32", 1.0, input_dim_idx=0, output_dim_idx=1),
            L.fill_constant_batch_size_like(s1, [-1, 2], "float32", 1.0, input_dim_idx=1),
            L.uniform_random_batch_size_like(s1, [-1, 2]),
            L.sequence_scatter(x, ids, upd),
        ]
    exe = fluid.Executor(place)
    exe.run(startup)
    feed = {
        "s": lt(np.ones((5, 3), "float32"), [[1, 2], [2, 1, 2]]),
        "s1": lt(np.ones((5, 3), "float32"), [[2, 3]]),
        "x": np.zeros((4, 5), "float32"),
        "ids": lt(np.array([[0], [1], [4], [2], [2]], "int64"), [[3, 2]]),
        "upd": lt(np.arange(5, dtype="float32").reshape(5, 1), [[3, 2]]),
    }
    got = exe.run(main, feed=feed, fetch_list=outs, return_numpy=False)
    return [[v.lod(), list(np.array(v).shape)] for v in got[:-1]] + [flat(got[-1])]


def position_encoding():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [None, 6], "float32", lod_level=1)
        x.stop_gradient = False
        y = L.add_position_encoding(x, 0.5, 2.0)
        g = fluid.gradients(L.reduce_sum(y * y), [x])[0]
    exe = fluid.Executor(place)
    exe.run(startup)
    v = rng.uniform(-1, 1, (5, 6)).astype("float32")
    got = exe.run(main, feed={"x": lt(v, [[2, 3]])}, fetch_list=[y, g], return_numpy=False)
    return [flat(t) for t in got]


json.dump(
    {"zoo": zoo(), "undeclared": undeclared(), "batch_size_like": batch_size_like(), "position": position_encoding()},
    sys.stdout,
    indent=0,
    sort_keys=True,
)
