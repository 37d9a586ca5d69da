# Golden script: argument forms fluid 1.8.5's layers took that fluidcompat refused or misread:
# diag_embed of a numpy array in dygraph mode, randint with a shape holding Variables or given as one,
# unique_name.switch returning (generator, parameter-name checker) and taking both back, and a label
# declared with dtype 'int' (numpy's int64) fed int64 to accuracy. Prints a JSON report.
import json

import numpy as np
import paddle.fluid as fluid

report = {}
with fluid.dygraph.guard():
    arr = np.arange(6, dtype="float32").reshape(2, 3)
    report["diag_embed"] = [
        fluid.layers.diag_embed(arr).numpy().tolist(),
        fluid.layers.diag_embed(arr, offset=1, dim1=0, dim2=2).numpy().shape,
    ]

main, start = fluid.Program(), fluid.Program()
with fluid.program_guard(main, start):
    rows = fluid.layers.fill_constant([1], "int64", 2)
    cols = fluid.layers.fill_constant([1], "int32", 4)
    a = fluid.layers.randint(-3, 3, shape=[rows, cols], dtype="int32")
    dims = fluid.data("dims", [2], "int64")
    b = fluid.layers.randint(0, 5, shape=dims)
    c = fluid.layers.randint(7)
    report["randint_declared"] = [list(a.shape), list(b.shape), list(c.shape), str(a.dtype), str(b.dtype)]
exe = fluid.Executor(fluid.CPUPlace())
ra, rb, rc = exe.run(main, feed={"dims": np.array([3, 2], "int64")}, fetch_list=[a, b, c])
report["randint_run"] = [
    [list(ra.shape), bool(((ra >= -3) & (ra < 3)).all())],
    [list(rb.shape), bool(((rb >= 0) & (rb < 5)).all())],
    [list(rc.shape), bool(((rc >= 0) & (rc < 7)).all())],
]

first = [fluid.unique_name.generate("fc"), fluid.unique_name.generate("fc")]
old = fluid.unique_name.switch()
inside = fluid.unique_name.generate("fc")
back = fluid.unique_name.switch(*old)
report["switch"] = [first, inside, fluid.unique_name.generate("fc"), len(old), type(back[1]).__name__]

main, start = fluid.Program(), fluid.Program()
with fluid.program_guard(main, start):
    x = fluid.data("x", [-1, 4], "float32")
    label = fluid.data("label", [-1, 1], dtype="int")
    prob = fluid.layers.softmax(x)
    acc = fluid.layers.accuracy(prob, label, k=2)
    report["int_label"] = str(label.dtype)
xs = np.array([[0.1, 0.5, 0.2, 0.2], [0.7, 0.1, 0.1, 0.1], [0.2, 0.2, 0.5, 0.1]], "float32")
(r,) = exe.run(main, feed={"x": xs, "label": np.array([[1], [2], [2]])}, fetch_list=[acc])
report["accuracy"] = float(r[0])
print(json.dumps(report))
