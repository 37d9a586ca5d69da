# Golden script: op_namescope of the ops of programs built under fluid.name_scope (the docs' example:
# a prefix opened again gets _1), and of the ops optimizers append: /regularization/ around the decay
# terms, /optimizer/, /optimizer_1/, ... per parameter (a frozen one counted too), /adamx/ for
# Adamax's beta-power update, scale_with_param_lr for a parameter's own learning rate, under an
# enclosing scope, and a second minimize. Backward ops are left out. Prints a JSON report.
import json

import paddle.fluid as fluid


def scopes(prog):
    roles = (1, 257)  # backward, and the loss gradient
    return [[op.type, op.attr("op_namescope")] for op in prog.global_block().ops if op.attr("op_role") not in roles]


report = {}
main, start = fluid.Program(), fluid.Program()
with fluid.program_guard(main, start):
    with fluid.name_scope("s1"):
        a = fluid.data(name="data", shape=[None, 1], dtype="float32")
        b = a + 1
        with fluid.name_scope("s2"):
            c = b * 1
        with fluid.name_scope("s3"):
            d = c / 1
    with fluid.name_scope("s1"):
        f = fluid.layers.pow(d, 2.0)
    with fluid.name_scope("s4"):
        g = f - 1
    with fluid.name_scope("s1"):
        with fluid.name_scope("s2"):
            h = g * 2
report["docs"] = scopes(main)

main, start = fluid.Program(), fluid.Program()
with fluid.program_guard(main, start):
    x = fluid.data(name="x", shape=[None, 4], dtype="float32")
    y = fluid.layers.fc(x, size=3, act="relu", param_attr=fluid.ParamAttr(learning_rate=2.0))
    y = fluid.layers.fc(y, size=2, param_attr=fluid.ParamAttr(trainable=False))
    loss = fluid.layers.mean(y)
    fluid.optimizer.Adam(
        0.1, regularization=fluid.regularizer.L2Decay(0.01), grad_clip=fluid.clip.GradientClipByGlobalNorm(1.0)
    ).minimize(loss)
report["adam"] = scopes(main)

main, start = fluid.Program(), fluid.Program()
with fluid.name_scope("outer"):
    with fluid.program_guard(main, start):
        z = fluid.layers.fc(fluid.data("z", [None, 2], "float32"), 2)
        loss = fluid.layers.mean(z)
        fluid.optimizer.Adamax(0.1).minimize(loss)
        fluid.optimizer.SGD(0.1, regularization=fluid.regularizer.L1Decay(0.1)).minimize(fluid.layers.mean(z * 2))
report["outer"] = scopes(main)
print(json.dumps(report))
