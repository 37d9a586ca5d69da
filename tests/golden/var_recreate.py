# Golden script: creating a variable again by name (data, create_var, create_parameter, a layer's
# named parameter) with a different type, shape, dtype, lod_level or persistable is refused with
# fluid's message, and the program keeps its variables; a layer given param_attr / bias_attr False
# where its op needs the parameter is refused. Prints {case: [type, message, vars before == after]}.
import json
import sys

import paddle.fluid as fluid
import paddle.fluid.layers as L
from paddle.fluid import core


def attempt(build):
    main, start = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, start):
        block = main.global_block()
        x = L.data("x", [2, 3, 4, 4], dtype="float32", append_batch_size=False)
        s = L.data("s", [-1, 8], dtype="float32", lod_level=1, append_batch_size=False)
        x.x5 = L.data("x5", [2, 3, 1, 4, 4], dtype="float32", append_batch_size=False)
        block.create_var(name="v", shape=[2, 3], dtype="float32")
        block.create_parameter(name="p", shape=[2], dtype="float32")
        before = sorted((n, list(v.shape), str(v.dtype), v.persistable) for n, v in block.vars.items())
        try:
            got = build(block, x, s)
            kind, msg = "ok", str(list(got.shape))
        except Exception as e:  # noqa: BLE001
            kind, msg = type(e).__name__, str(e).strip().splitlines()[-1]
        after = sorted((n, list(v.shape), str(v.dtype), v.persistable) for n, v in block.vars.items())
        return [kind, msg, before == after or kind == "ok"]


LOD_ARRAY = core.VarDesc.VarType.LOD_TENSOR_ARRAY
CASES = {
    "data_same": lambda b, x, s: L.data("x", [2, 3, 4, 4], dtype="float32", append_batch_size=False),
    "data_shape": lambda b, x, s: L.data("x", [3, 2], dtype="float32", append_batch_size=False),
    "data_dtype": lambda b, x, s: L.data("x", [2, 3, 4, 4], dtype="int64", append_batch_size=False),
    "data_lod": lambda b, x, s: L.data("x", [2, 3, 4, 4], dtype="float32", lod_level=1, append_batch_size=False),
    "fluid_data_shape": lambda b, x, s: fluid.data("s", [None, 9]),
    "var_same": lambda b, x, s: b.create_var(name="v", shape=(2, 3), dtype="float32", lod_level=0),
    "var_persistable": lambda b, x, s: b.create_var(name="v", persistable=True),
    "var_not_persistable": lambda b, x, s: b.create_var(name="v", persistable=False),
    "var_type": lambda b, x, s: b.create_var(name="v", type=LOD_ARRAY),
    "var_unknown_dim": lambda b, x, s: b.create_var(name="v", shape=[-1, 3]),
    "var_dtype": lambda b, x, s: b.create_var(name="v", dtype="float64"),
    "var_lod": lambda b, x, s: b.create_var(name="v", lod_level=2),
    "var_stop_gradient": lambda b, x, s: b.create_var(name="v", stop_gradient=True),
    "param_same": lambda b, x, s: b.create_parameter(name="p", shape=[2], dtype="float32"),
    "param_shape": lambda b, x, s: b.create_parameter(name="p", shape=[3], dtype="float32"),
    "param_dtype": lambda b, x, s: b.create_parameter(name="p", shape=[2], dtype="int64"),
    "param_over_var": lambda b, x, s: b.create_parameter(name="v", shape=[2, 3], dtype="float32"),
    "param_var_shape": lambda b, x, s: b.create_var(name="p", shape=[4]),
    "param_var_persistable": lambda b, x, s: b.create_var(name="p", shape=[2], persistable=False),
    "layer_param_shape": lambda b, x, s: L.fc(s, 4, param_attr=fluid.ParamAttr(name="p")),
    "create_parameter_shape": lambda b, x, s: L.create_parameter([3, 2], "float32", name="p"),
    "conv2d_param": lambda b, x, s: L.conv2d(x, 2, 3, param_attr=False),
    "conv3d_param": lambda b, x, s: L.conv3d(x.x5, 2, 1, param_attr=False),
    "batch_norm_bias": lambda b, x, s: L.batch_norm(x, bias_attr=False),
    "inplace_abn_bias": lambda b, x, s: L.inplace_abn(x, bias_attr=False),
    "instance_norm_bias": lambda b, x, s: L.instance_norm(x, bias_attr=False),
    "layer_norm_param": lambda b, x, s: L.layer_norm(x, param_attr=False),
    "layer_norm_bias": lambda b, x, s: L.layer_norm(x, bias_attr=False),
    "layer_norm_param_no_scale": lambda b, x, s: L.layer_norm(x, scale=False, param_attr=False),
    "conv2d_transpose_param": lambda b, x, s: L.conv2d_transpose(x, 2, filter_size=3, param_attr=False),
    "conv3d_transpose_param": lambda b, x, s: L.conv3d_transpose(x.x5, 2, filter_size=1, param_attr=False),
    "dynamic_lstm_bias": lambda b, x, s: L.dynamic_lstm(s, 8, bias_attr=False),
    "dynamic_lstmp_bias": lambda b, x, s: L.dynamic_lstmp(s, 8, 2, bias_attr=False),
    "dynamic_gru_bias": lambda b, x, s: L.dynamic_gru(L.fc(s, 6), 2, bias_attr=False),
}
json.dump({k: attempt(f) for k, f in CASES.items()}, sys.stdout, indent=1, sort_keys=True)
