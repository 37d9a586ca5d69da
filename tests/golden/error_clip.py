# Golden script: error clipping of intermediate gradients (fluid.clip.ErrorClipByValue set on a
# variable with _set_error_clip, applied by minimize through error_clip_callback), and the context
# append_backward's callbacks receive (the grad-to-forward-variable map and the current op).
# Prints a JSON report.
import json

import numpy as np
import paddle.fluid as fluid

report = {}
place = fluid.CPUPlace()
X = np.random.RandomState(0).uniform(-1, 1, (4, 6)).astype("float32")
Y = np.array([[0], [1], [2], [1]], dtype="int64")


def build(clip):
    main, start = fluid.Program(), fluid.Program()
    main.random_seed = start.random_seed = 1
    with fluid.program_guard(main, start):
        x = fluid.data("x", [None, 6], "float32")
        y = fluid.data("y", [None, 1], "int64")
        init = fluid.initializer.NumpyArrayInitializer
        w1 = np.random.RandomState(1).uniform(-1, 1, (6, 5)).astype("float32")
        w2 = np.random.RandomState(2).uniform(-1, 1, (5, 3)).astype("float32")
        h = fluid.layers.fc(x, 5, act="relu", param_attr=fluid.ParamAttr(name="w1", initializer=init(w1)))
        p = fluid.layers.fc(h, 3, act="softmax", param_attr=fluid.ParamAttr(name="w2", initializer=init(w2)))
        loss = fluid.layers.mean(fluid.layers.cross_entropy(p, y))
        if clip is not None:
            main.block(0).var(h.name)._set_error_clip(fluid.clip.ErrorClipByValue(**clip))
        fluid.optimizer.SGD(0.5).minimize(loss)
    return main, start, h, loss


for key, clip in [("none", None), ("max_only", {"max": 0.02}), ("min_max", {"max": 0.05, "min": -0.01})]:
    main, start, h, loss = build(clip)
    exe = fluid.Executor(place)
    scope = fluid.Scope()
    with fluid.scope_guard(scope):
        exe.run(start)
        fetched = exe.run(main, feed={"x": X, "y": Y}, fetch_list=[h.name + "@GRAD", "w1@GRAD", "w2@GRAD", "w1"])
    report[key] = {
        "ops": [op.type for op in main.global_block().ops],
        "values": [np.round(np.array(v), 5).reshape(-1).tolist() for v in fetched],
        "test_ops": [op.type for op in main.clone(for_test=True).global_block().ops],
    }
report["str"] = str(fluid.clip.ErrorClipByValue(max=2.0, min=-1.0))

seen = []


def callback(block, context):
    op = context["__current_op_desc__"]
    grads = sorted((n, context[n]) for n in op.output_arg_names() if n in context)
    seen.append([op.type(), sorted(op.input_arg_names()), grads])


main, start = fluid.Program(), fluid.Program()
with fluid.program_guard(main, start):
    x = fluid.data("x", [None, 6], "float32")
    x.stop_gradient = False
    h = fluid.layers.fc(x, 5, act="tanh")
    loss = fluid.layers.reduce_mean(h * h)
    fluid.backward.append_backward(loss, callbacks=[callback])
report["callbacks"] = seen
print(json.dumps(report, sort_keys=True))
