"""Ops whose output fluid 1.8 declared with one dtype and wrote with another: edit_distance's
distances (declared int64, float32 when run) and sampling_id's ids (declared with its ``dtype``
argument, float32 by default, int64 when run); a scale of the ids keeps the declared dtype, a cast
its own."""

import json

import numpy as np
import paddle.fluid as fluid

place = fluid.CPUPlace()
main, startup = fluid.Program(), fluid.Program()
with fluid.program_guard(main, startup):
    i = fluid.data("i", [None, 1], "int64", lod_level=1)
    d = fluid.data("d", [None, 4], "float32")
    e, n = fluid.layers.edit_distance(i, i)
    s = fluid.layers.sampling_id(fluid.layers.softmax(d))
    s2 = fluid.layers.sampling_id(fluid.layers.softmax(d), dtype="int64")
    c = fluid.layers.cast(s, "float64")
    ad = s + 1
exe = fluid.Executor(place)
exe.run(startup)
r = exe.run(
    main,
    feed={
        "i": fluid.create_lod_tensor(np.array([[1], [2], [3]], "int64"), [[1, 2]], place),
        "d": np.ones((3, 4), "float32"),
    },
    fetch_list=[e, n, s, s2, c, ad],
)
print(json.dumps({"static": [str(v.dtype) for v in (e, n, s, s2, c, ad)], "run": [str(np.array(v).dtype) for v in r]}))
