# Golden script: the dtype arguments of fluid 1.8.5's layers: numpy's reading of a name where fluid
# took it ('float' is float64, 'int' int64: fluid.data, create_var, eye, gaussian_random), fluid's
# refusal of those names where it checked the argument ('dtype must be any of ...'), and its checks
# of the allowed types (cast, fill_constant, ones, zeros, range, create_tensor, create_parameter,
# create_global_var, uniform_random, randint, randn, randperm, the batch_size_like draws, embedding,
# full_like, fill_constant_batch_size_like, linspace); in dygraph mode fluid checked none of them.
# Prints a JSON report.
import json

import numpy as np
import paddle.fluid as fluid

L = fluid.layers
calls = {
    "create_tensor": lambda d: L.create_tensor(d),
    "create_parameter": lambda d: L.create_parameter([2], d),
    "create_global_var": lambda d: L.create_global_var([2], 1.0, d),
    "cast": lambda d: L.cast(fluid.data("x", [2], "float32"), d),
    "fill_constant": lambda d: L.fill_constant([2], d, 1.0),
    "ones": lambda d: L.ones([2], d),
    "zeros": lambda d: L.zeros([2], d),
    "range": lambda d: L.range(0, 4, 1, d),
    "uniform_random": lambda d: L.uniform_random([2], d),
    "randint": lambda d: L.randint(0, 4, [2], dtype=d),
    "randn": lambda d: L.randn([2], dtype=d),
    "randperm": lambda d: L.randperm(4, dtype=d),
    "gaussian_bsl": lambda d: L.gaussian_random_batch_size_like(
        fluid.data("y", [None, 2], "float32"), [-1, 2], dtype=d
    ),
    "uniform_bsl": lambda d: L.uniform_random_batch_size_like(fluid.data("z", [None, 2], "float32"), [-1, 2], dtype=d),
    "embedding": lambda d: L.embedding(fluid.data("w", [None, 1], "int64"), [5, 2], dtype=d),
    "full_like": lambda d: L.full_like(fluid.data("v", [2], "float32"), 1.0, dtype=d),
    "fill_constant_bsl": lambda d: L.fill_constant_batch_size_like(
        fluid.data("u", [None, 2], "float32"), [-1, 2], d, 1.0
    ),
    "linspace": lambda d: L.linspace(0, 1, 4, d),
    "eye": lambda d: L.eye(2, dtype=d),
    "data": lambda d: fluid.data("q", [2], d),
    "gaussian_random": lambda d: L.gaussian_random([2], dtype=d),
    "create_var": lambda d: fluid.default_main_program().global_block().create_var(name="cv", dtype=d, shape=[1]),
}
out = {}
for name, fn in calls.items():
    for d in ["float", "int", "uint8", "int8", "int16", "float16", "bool", "float64", "int32"]:
        with fluid.program_guard(fluid.Program(), fluid.Program()):
            try:
                v = fn(d)
                v = v[0] if isinstance(v, (list, tuple)) else v
                out[f"{name} {d}"] = str(v.dtype)
            except Exception as e:
                out[f"{name} {d}"] = f"{type(e).__name__}: {str(e)[:200]}"
with fluid.dygraph.guard():
    out["dygraph cast float"] = str(L.cast(fluid.dygraph.to_variable(np.ones([2], "float32")), "float").dtype)
    out["dygraph cast int"] = str(L.cast(fluid.dygraph.to_variable(np.ones([2], "float32")), "int").dtype)
print(json.dumps(out, indent=0))
