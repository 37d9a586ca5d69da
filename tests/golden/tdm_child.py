# fluid.contrib.layers.tdm_child: the children of tree nodes and their leaf masks (node 0 as padding,
# a child without an item id not a leaf), output shapes for [N, 1] and [N, 3] ids.
import json

import numpy as np
import paddle.fluid as fluid

tree_info = np.array(
    [[0, 0, 0, 1, 2], [0, 1, 0, 3, 4], [0, 1, 0, 5, 6], [0, 2, 1, 0, 0], [1, 2, 1, 0, 0], [2, 2, 2, 0, 0]]
    + [[3, 2, 2, 0, 0]],
    "int32",
)
out = {}
for shape in ([None, 1], [None, 3]):  # int32 ids: fluid 1.8.5 could not initialize an int64 tree from numpy
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", shape, "int32")
        attr = fluid.ParamAttr(initializer=fluid.initializer.NumpyArrayInitializer(tree_info))
        child, mask = fluid.contrib.layers.tdm_child(x, 7, 2, param_attr=attr, dtype="int32")
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    ids = np.array([[0], [1], [2], [3], [6]], "int32") if shape[1] == 1 else np.array([[0, 1, 2], [3, 4, 6]], "int32")
    c, m = exe.run(main, feed={"x": ids}, fetch_list=[child, mask])
    out["int32_%d" % shape[1]] = [list(c.shape), str(c.dtype), c.tolist(), m.tolist(), list(child.shape), str(m.dtype)]
print(json.dumps(out))
