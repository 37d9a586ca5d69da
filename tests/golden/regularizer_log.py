# Golden script: a parameter's own regularizer beside the optimizer's: fluid 1.8.5 said so once at
# INFO on the root logger (silent unless logging is configured); here logging prints it to stdout.
# Prints text lines.
import logging
import sys

import paddle.fluid as fluid

print("before logging is configured")
x = fluid.data("x", [None, 4])
y = fluid.layers.fc(x, 2, param_attr=fluid.ParamAttr(regularizer=fluid.regularizer.L2Decay(0.1)))
fluid.optimizer.SGD(0.1, regularization=fluid.regularizer.L1Decay(0.2)).minimize(fluid.layers.mean(y))
root = logging.getLogger()
root.setLevel(logging.INFO)
handler = logging.StreamHandler(sys.stdout)
handler.setFormatter(logging.Formatter("%(levelname)s:%(name)s:%(message)s"))
root.addHandler(handler)
print("after")
with fluid.program_guard(fluid.Program(), fluid.Program()):
    x = fluid.data("x", [None, 4])
    h = fluid.layers.fc(x, 3, param_attr=fluid.ParamAttr(regularizer=fluid.regularizer.L1Decay(0.1)))
    y = fluid.layers.fc(h, 2, param_attr=fluid.ParamAttr(regularizer=fluid.regularizer.L2Decay(0.1)))
    fluid.optimizer.Adam(0.1, regularization=fluid.regularizer.L2Decay(0.3)).minimize(fluid.layers.mean(y))
print("done")
