"""im2sequence as OCR models of fluid 1.8 used it: each image's patches as one LoD sequence, without
and with input_image_size / out_stride (images smaller than the batch's tensor, padding, stride 2).
Prints JSON {case: [[lod, shape, values...]]}; run under fluid 1.8.5 (tools/fluid18) it wrote
im2sequence_lod.json. (fluid 1.8.5's im2sequence_grad failed with input_image_size: "Tensor's dims_
is out of bound", so no gradient is recorded.)"""

import json

import numpy as np
import paddle.fluid as fluid

L = fluid.layers
results = {}


def run(name, shape, sizes, k, s, p, out_stride):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [None] + shape[1:], "float32")
        sz = fluid.data("sz", [None, 2], "float32")
        size = sz if sizes is not None else None
        y = L.im2sequence(x, filter_size=k, stride=s, padding=p, input_image_size=size, out_stride=out_stride)
    exe = fluid.Executor(fluid.CPUPlace())
    xv = np.sin(np.arange(np.prod(shape)) * 0.37).reshape(shape).astype("float32")
    feed = {"x": xv}
    if sizes is not None:
        feed["sz"] = np.array(sizes, "float32")
    (r,) = exe.run(main, feed=feed, fetch_list=[y], return_numpy=False)
    results[name] = [[r.lod(), list(np.array(r).shape)] + np.array(r).reshape(-1).astype("float64").tolist()]


run("plain_k2", [3, 1, 4, 5], None, [2, 2], [1, 2], [0, 0, 0, 0], [1, 1])
run("sizes_k2s1", [2, 1, 4, 5], [[3, 4], [4, 5]], [2, 2], [1, 1], [0, 0, 0, 0], [1, 1])
run("sizes_k2s2_out_stride2", [2, 2, 6, 6], [[6, 4], [3, 5]], [2, 2], [2, 2], [0, 0, 0, 0], [2, 2])
run("sizes_k3_padded", [3, 1, 5, 5], [[5, 5], [2, 3], [4, 1]], [3, 3], [1, 1], [1, 1, 1, 1], [1, 1])
print(json.dumps(results, sort_keys=True))
