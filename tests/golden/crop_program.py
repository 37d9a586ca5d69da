# Golden script: the device_guard tutorial's crop program (seed 000), with and without slice guarded to
# the CPU, on a CPU place. Prints names, shapes, dtypes, values and each op's type and op_device as JSON.
import json
import sys

import paddle.fluid as fluid

report = {}
for guarded in (False, True):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        data1 = fluid.layers.fill_constant(shape=[1, 3, 8, 8], value=0.5, dtype="float32")
        data2 = fluid.layers.fill_constant(shape=[1, 3, 5, 5], value=0.5, dtype="float32")
        shape = fluid.layers.shape(data2)
        if guarded:
            with fluid.device_guard("cpu"):
                sliced = fluid.layers.slice(shape, axes=[0], starts=[0], ends=[4])
        else:
            sliced = fluid.layers.slice(shape, axes=[0], starts=[0], ends=[4])
        out = fluid.layers.crop_tensor(data1, shape=sliced)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    res = exe.run(main, fetch_list=[shape, sliced, out])
    entry = {"ops": [[op.type, op.attr("op_device")] for op in main.global_block().ops]}
    for var, r in zip([shape, sliced, out], res):
        entry[var.name] = {
            "build_shape": list(var.shape),
            "build_dtype": str(var.dtype),
            "shape": list(r.shape),
            "dtype": str(r.dtype),
            "values": r.astype("float64").reshape(-1).tolist(),
        }
    report["guarded" if guarded else "plain"] = entry
json.dump(report, sys.stdout, indent=0, sort_keys=True)
