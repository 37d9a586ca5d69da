# Golden script: the warning fluid 1.8.5's dtype checks gave for float16 variables in a static
# program (whatever the place), and a refusal that follows it; resize's notice that actual_shape
# will be deprecated. Prints a JSON report.
import json
import warnings

import paddle.fluid as fluid

out = []
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    x = fluid.data("x", [None, 4], dtype="float16")
    fluid.layers.relu(x)
    fluid.layers.cast(x, "float32")
    fluid.layers.softmax(x)
    try:
        fluid.layers.one_hot(fluid.data("i", [None, 1], dtype="float16"), 3)
    except TypeError as e:
        out.append(["TypeError", str(e)])
    img = fluid.data("img", [None, 3, 4, 4])
    size = fluid.layers.fill_constant([2], "int32", 8)
    fluid.layers.resize_nearest(img, scale=2, actual_shape=size)
    fluid.layers.resize_bilinear(img, out_shape=[6, 6])
    out.append(["actual_shape stop_gradient", size.stop_gradient])
out += [[m.category.__name__, str(m.message)] for m in caught]
print(json.dumps(out))
