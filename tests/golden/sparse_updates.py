# Golden script: training steps whose updates fluid 1.8.5 computed its own way: a sparse embedding
# gradient under the three gradient clips (global norm merges the rows first) and under Adam (lazy
# and not: bias-corrected one step ahead), and Lamb (no bias correction; its beta powers never move).
import json

import numpy as np
import paddle.fluid as fluid

O = fluid.optimizer
C = fluid.clip
CASES = [
    ("clip_global_norm", lambda: O.SGD(0.5, grad_clip=C.GradientClipByGlobalNorm(0.05)), True),
    ("clip_norm", lambda: O.SGD(0.5, grad_clip=C.GradientClipByNorm(0.05)), True),
    ("clip_value", lambda: O.SGD(0.5, grad_clip=C.GradientClipByValue(0.001)), True),
    ("adam_sparse", lambda: O.Adam(0.1), True),
    ("adam_sparse_lazy", lambda: O.Adam(0.1, lazy_mode=True), True),
    ("adam_dense", lambda: O.Adam(0.1), False),
    ("lamb", lambda: O.Lamb(0.1), False),
    ("lamb_sparse", lambda: O.Lamb(0.1, lamb_weight_decay=0.05), True),
]
res = {}
for name, make, sparse in CASES:
    main, start = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, start):
        ids = fluid.data("ids", [None, 1], "int64")
        table = np.linspace(-0.5, 0.5, 40).reshape(10, 4).astype("float32")
        init = fluid.initializer.NumpyArrayInitializer
        emb_attr = fluid.ParamAttr("emb", initializer=init(table))
        e = fluid.embedding(ids, size=[10, 4], is_sparse=sparse, param_attr=emb_attr)
        w = np.linspace(-1, 1, 12).reshape(4, 3).astype("float32")
        h = fluid.layers.fc(
            e,
            3,
            param_attr=fluid.ParamAttr("fc_w", initializer=init(w)),
            bias_attr=fluid.ParamAttr("fc_b", initializer=fluid.initializer.Constant(0.1)),
        )
        cost = fluid.layers.mean(h * h)
        make().minimize(cost)
    scope = fluid.Scope()
    exe = fluid.Executor(fluid.CPUPlace())
    with fluid.scope_guard(scope):
        exe.run(start)
        losses = []
        for step in range(3):
            feed = np.array([[1], [3], [1], [7]][: 3 + step % 2], "int64")
            losses.append(float(exe.run(main, feed={"ids": feed}, fetch_list=[cost])[0][0]))
        res[name] = {
            "losses": losses,
            "emb": np.array(scope.find_var("emb").get_tensor()).tolist(),
            "fc_w": np.array(scope.find_var("fc_w").get_tensor()).tolist(),
        }
print(json.dumps(res))
