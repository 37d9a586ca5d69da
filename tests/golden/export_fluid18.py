# Golden script for tests/test_export.py: two small models trained two SGD steps and saved with
# save_inference_model under argv[1]: `cnn` (conv, batch_norm, pools, dropout, fc; one file per
# parameter) and `rec` (embeddings + fc, an id and a dense input; parameters in one file, __params__).
# Run under real fluid 1.8.5 to record tests/golden/export_fluid18/ and export_fluid18.json (from tests/golden):
#   ../../../shared/tools/fluid18 export_fluid18.py export_fluid18 > export_fluid18.json
# Prints the inputs and the saved models' outputs (loaded back, two batch sizes) as JSON.
import json
import sys

import numpy as np
import paddle.fluid as fluid

out_dir = sys.argv[1]
rng = np.random.RandomState(7)
place = fluid.CPUPlace()
exe = fluid.Executor(place)


def cnn():
    img = fluid.data("img", [None, 1, 12, 12], "float32")
    label = fluid.data("label", [None, 1], "int64")
    c = fluid.layers.conv2d(img, 4, 3, act="relu")
    c = fluid.layers.batch_norm(c)
    c = fluid.layers.pool2d(c, 2, "max", 2)
    c = fluid.layers.conv2d(c, 8, 3, padding=1, act="relu")
    c = fluid.layers.pool2d(c, pool_type="avg", global_pooling=True)
    c = fluid.layers.dropout(c, 0.25)
    out = fluid.layers.fc(c, 5, act="softmax")
    loss = fluid.layers.mean(fluid.layers.cross_entropy(out, label))
    feeds = lambda n: {"img": rng.rand(n, 1, 12, 12).astype("float32"), "label": rng.randint(0, 5, (n, 1))}
    return ["img"], out, loss, feeds


def rec():
    uid = fluid.data("user_id", [None, 1], "int64")
    dense = fluid.data("dense", [None, 4], "float32")
    label = fluid.data("label", [None, 1], "float32")
    u = fluid.layers.embedding(uid, [20, 8])
    u = fluid.layers.fc(u, 8, act="tanh")
    d = fluid.layers.fc(dense, 8, act="relu")
    h = fluid.layers.concat([u, d], axis=1)
    out = fluid.layers.fc(h, 1, act="sigmoid")
    loss = fluid.layers.mean(fluid.layers.square_error_cost(out, label))
    feeds = lambda n: {
        "user_id": rng.randint(0, 20, (n, 1)).astype("int64"),
        "dense": rng.rand(n, 4).astype("float32"),
        "label": rng.rand(n, 1).astype("float32"),
    }
    return ["user_id", "dense"], out, loss, feeds


result = {}
for name, build, params_filename in (("cnn", cnn, None), ("rec", rec, "__params__")):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        feed_names, out, loss, feeds = build()
        fluid.optimizer.SGD(0.1).minimize(loss)
    scope = fluid.Scope()
    with fluid.scope_guard(scope):
        exe.run(startup)
        for _ in range(2):
            exe.run(main, feed=feeds(4), fetch_list=[loss])
        fluid.io.save_inference_model(
            out_dir + "/" + name, feed_names, [out], exe, main, params_filename=params_filename
        )
    with fluid.scope_guard(fluid.Scope()):
        program, names, targets = fluid.io.load_inference_model(
            out_dir + "/" + name, exe, params_filename=params_filename
        )
        cases = []
        for n in (3, 6):
            feed = {k: v for k, v in feeds(n).items() if k in names}
            got = exe.run(program, feed=feed, fetch_list=targets)[0]
            cases.append(
                {
                    "feed": {k: [str(v.dtype), list(v.shape), v.reshape(-1).tolist()] for k, v in feed.items()},
                    "out": [list(got.shape), got.reshape(-1).astype("float64").tolist()],
                }
            )
        result[name] = {"params_filename": params_filename, "feeds": names, "cases": cases}
json.dump(result, sys.stdout)
