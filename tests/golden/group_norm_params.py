# Golden script: static group_norm makes its scale and bias only when param_attr / bias_attr are given
# (fluid 1.8.5's layer tests them for truth), so a program's parameters, the persistables a checkpoint
# holds and the values after training steps are fluid's.
import json

import numpy as np
import paddle.fluid as fluid

out = {}
for case, kwargs in [
    ("defaults", {}),
    ("scale only", {"param_attr": fluid.ParamAttr(name="gn_scale")}),
    ("both", {"param_attr": "gn_w", "bias_attr": fluid.ParamAttr(initializer=fluid.initializer.Constant(0.5))}),
    ("bias False", {"param_attr": True, "bias_attr": False}),
]:
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [None, 4, 2, 2], "float32")
        h = fluid.layers.conv2d(
            x, 4, 1, param_attr=fluid.ParamAttr(initializer=fluid.initializer.Constant(0.3)), bias_attr=False
        )
        y = fluid.layers.group_norm(h * x, groups=2, **kwargs)
        loss = fluid.layers.reduce_mean(fluid.layers.square(y - 1.0))
        fluid.optimizer.SGD(0.5).minimize(loss)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    xs = np.random.RandomState(0).rand(3, 4, 2, 2).astype("float32")
    losses = [float(exe.run(main, feed={"x": xs}, fetch_list=[loss])[0][0]) for _ in range(3)]
    params = sorted(p.name for p in main.global_block().all_parameters())
    gn = [op for op in main.global_block().ops if op.type == "group_norm"][0]
    out[case] = {
        "params": params,
        "inputs": sorted(k for k in gn.input_names if gn.input(k)),
        "losses": losses,
        "values": {p: np.array(fluid.global_scope().find_var(p).get_tensor()).reshape(-1).tolist() for p in params},
    }
print(json.dumps(out))
