"""roi_perspective_transform as text-recognition scripts used it: quadrilateral rois (slanted,
reaching off the map, a rectangle) in two images warped to 3 x 5 and 4 x 4, at spatial_scale 1 and
0.5: the output, mask and transform matrices, and the input's gradient. Prints JSON; run under
fluid 1.8.5 (tools/fluid18) it wrote roi_perspective_transform.json."""

import json

import numpy as np
import paddle.fluid as fluid

L = fluid.layers
place = fluid.CPUPlace()
results = {}
X = np.random.RandomState(0).uniform(-1, 1, (2, 2, 8, 10)).astype("float32")
ROIS = np.array(
    [
        [1, 1, 6, 2, 7, 5, 0, 6],
        [2, 0.5, 8.5, 1, 8, 7, 1.5, 6.5],
        [0, 0, 9, 0, 9, 7, 0, 7],
        [-2, -1, 11, 0, 12, 9, -1, 8],
    ],
    "float32",
)
for name, h, w, scale in (("scale1_3x5", 3, 5, 1.0), ("scale_half_4x4", 4, 4, 0.5)):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [None, 2, 8, 10], "float32")
        x.stop_gradient = False
        rois = fluid.data("rois", [None, 8], "float32", lod_level=1)
        out, mask, matrix = L.roi_perspective_transform(x, rois, h, w, scale)
        fluid.backward.append_backward(L.reduce_sum(out * out))
    rv = ROIS * (2.0 if scale == 0.5 else 1.0)
    feed = {"x": X, "rois": fluid.create_lod_tensor(rv, [[2, 2]], place)}
    rs = fluid.Executor(place).run(main, feed=feed, fetch_list=[out, mask, matrix, "x@GRAD"], return_numpy=False)
    results[name] = [
        [r.lod(), list(np.array(r).shape)] + np.round(np.array(r).reshape(-1).astype("float64"), 6).tolist() for r in rs
    ]
print(json.dumps(results, sort_keys=True))
