# Golden script: the warning fluid 1.8.5's dtype checks gave for float16 variables in a static
# program (whatever the place), and a refusal that follows it. Prints a JSON report.
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
out += [[m.category.__name__, str(m.message)] for m in caught]
print(json.dumps(out))
