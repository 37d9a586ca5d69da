"""row_conv over LoD sequences (future_context_size 1, 2 and 3, one with relu, a sequence shorter
than the context): the output with its LoD and the gradients of its sum of squares for the input and
the filter. fluid 1.8.5 failed on an empty sequence ("The start row index must be lesser than the
end row index"), so none is fed. Prints JSON; run under fluid 1.8.5 (tools/fluid18) it wrote
row_conv_lod.json."""

import json

import numpy as np
import paddle.fluid as fluid

L = fluid.layers
results = {}
for name, lens, k, act in (("k2", [3, 1, 4, 1], 2, None), ("k1_relu", [2, 5], 1, "relu"), ("k3_long", [6], 3, None)):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [None, 3], "float32", lod_level=1)
        x.stop_gradient = False
        y = L.row_conv(
            x,
            future_context_size=k,
            param_attr=fluid.ParamAttr(
                name="rc_w",
                initializer=fluid.initializer.NumpyArrayInitializer(
                    np.sin(np.arange((k + 1) * 3)).reshape(k + 1, 3).astype("float32")
                ),
            ),
            act=act,
        )
        fluid.backward.append_backward(L.reduce_sum(y * y))
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    rows = sum(lens)
    xv = np.cos(np.arange(rows * 3) * 0.9).reshape(rows, 3).astype("float32")
    rs = exe.run(
        main,
        feed={"x": fluid.create_lod_tensor(xv, [lens], fluid.CPUPlace())},
        fetch_list=[y, "x@GRAD", "rc_w@GRAD"],
        return_numpy=False,
    )
    results[name] = [
        [r.lod(), list(np.array(r).shape)] + np.array(r).reshape(-1).astype("float64").tolist() for r in rs
    ]
print(json.dumps(results, sort_keys=True))
