# Golden script: float16 on the CPU as fluid 1.8.5 made it: cast and fill_constant round toward zero
# (subnormals too; above 65504 infinite), and every initializer fills a float16 parameter through a
# float32 temporary and a cast (names, ops, seeded values). Prints a JSON report.
import json
import warnings

import numpy as np
import paddle.fluid as fluid

warnings.simplefilter("ignore")
out = {}
vals = np.array(
    [0.5303, 0.714285, -0.9507, 1.0 / 3, 65504.0, 65505.0, 65519.0, 65520.0, 70000.0, -70000.0, 1e-5, 6e-8, 3e-8,
     2.98e-8, 1e-8, -1e-5, 6.1e-5, 6.0e-5, 1.0009765625, 1.00048828125, 1.0004, 0.0, -0.0, float("inf"),
     float("nan"), 2049.0, 2051.0, 1e-4, 3.14159265],
    "float32",
)  # fmt: skip
with fluid.program_guard(fluid.Program(), fluid.Program()):
    x = fluid.data("x", [len(vals)])
    y = fluid.layers.cast(x, "float16")
    z = fluid.layers.fill_constant([2], "float16", 0.714285)
    exe = fluid.Executor(fluid.CPUPlace())
    a, b = exe.run(feed={"x": vals}, fetch_list=[y, z])
out["cast_bits"] = [int(v) for v in np.asarray(a).view(np.uint16)]
out["fill_bits"] = [int(v) for v in np.asarray(b).view(np.uint16)]
I = fluid.initializer
cases = [
    ("constant", I.Constant(0.5), [2, 3]),
    ("uniform", I.Uniform(-1, 1), [2, 3]),
    ("normal", I.Normal(0, 2), [2, 3]),
    ("truncated", I.TruncatedNormal(0, 1), [2, 3]),
    ("xavier", I.Xavier(), [2, 3]),
    ("xavier_n", I.Xavier(uniform=False), [2, 3]),
    ("msra", I.MSRA(), [2, 3]),
    ("numpy", I.NumpyArrayInitializer(np.arange(6, dtype="float32").reshape(2, 3) / 7), [2, 3]),
]
for name, init, shape in cases:
    main, startup = fluid.Program(), fluid.Program()
    startup.random_seed = 9
    with fluid.program_guard(main, startup):
        p = fluid.layers.create_parameter(shape, "float16", name="p_" + name, default_initializer=init)
    blk = startup.global_block()
    scope = fluid.Scope()
    fluid.Executor(fluid.CPUPlace()).run(startup, scope=scope)
    val = np.array(scope.find_var(p.name).get_tensor())
    out[name] = [
        [(op.type, op.input_arg_names, op.output_arg_names) for op in blk.ops],
        sorted((n, str(v.dtype)) for n, v in blk.vars.items()),
        str(val.dtype),
        [int(v) for v in val.view(np.uint16).reshape(-1)],
    ]
print(json.dumps(out))
