"""fluid 1.8's docs examples that `import six` (paddlepaddle 1.8 installed it): py_func's example 1
network (tanh and its gradient in Python, six.moves.range), trained two SGD steps, and Program.clone's
print_prog walking the block's variables and op attributes with six.iteritems."""

import json

import numpy as np
import paddle.fluid as fluid
import six
from _golden import set_params


def tanh(x):
    return np.tanh(x)


def tanh_grad(y, dy):
    return np.array(dy) * (1 - np.square(np.array(y)))


def create_tmp_var(name, dtype, shape):
    return fluid.default_main_program().current_block().create_var(name=name, dtype=dtype, shape=shape)


def simple_net(img, label):
    hidden = img
    for idx in six.moves.range(2):
        hidden = fluid.layers.fc(hidden, size=6)
        new_hidden = create_tmp_var(name="hidden_{}".format(idx), dtype=hidden.dtype, shape=hidden.shape)
        hidden = fluid.layers.py_func(
            func=tanh, x=hidden, out=new_hidden, backward_func=tanh_grad, skip_vars_in_backward_input=hidden
        )
    prediction = fluid.layers.fc(hidden, size=3, act="softmax")
    loss = fluid.layers.cross_entropy(input=prediction, label=label)
    return fluid.layers.mean(loss)


img = fluid.data("img", [None, 4], "float32")
label = fluid.data("label", [None, 1], "int64")
loss = simple_net(img, label)
fluid.optimizer.SGD(0.5).minimize(loss)
exe = fluid.Executor(fluid.CPUPlace())
exe.run(fluid.default_startup_program())
set_params(fluid.default_main_program(), fluid.global_scope())
rng = np.random.RandomState(0)
feed = {"img": rng.rand(5, 4).astype("float32"), "label": rng.randint(0, 3, (5, 1)).astype("int64")}
out = {"losses": [round(float(exe.run(feed=feed, fetch_list=[loss])[0]), 5) for _ in range(2)]}

prog = fluid.default_main_program()
out["vars"] = [name for name, value in sorted(six.iteritems(prog.block(0).vars))]
out["py_func_attrs"] = [
    key
    for op in prog.block(0).ops
    if op.type == "py_func"
    for key, value in sorted(six.iteritems(op.all_attrs()))
    if key not in ["op_callstack", "op_role_var"]
][:8]
print(json.dumps(out))
