# Golden script: StaticRNN with a boot memory, a shape/batch_ref memory, two outputs, and x's gradient;
# prints the outputs and the gradient as fluid 1.8.5 computed them.
import json

import numpy as np
import paddle.fluid as fluid
import paddle.fluid.layers as L

x = fluid.data("x", [4, 3, 5], "float32")  # [seq_len, batch, dim]
x.stop_gradient = False
boot = fluid.data("boot", [3, 6], "float32")
rnn = L.StaticRNN()
with rnn.step():
    word = rnn.step_input(x)
    prev = rnn.memory(init=boot)
    prev2 = rnn.memory(shape=[-1, 2], batch_ref=word, init_value=0.5)
    hidden = L.fc(
        input=[word, prev],
        size=6,
        act="tanh",
        param_attr=fluid.ParamAttr(initializer=fluid.initializer.Constant(0.1)),
        bias_attr=False,
    )
    h2 = prev2 * 2.0 + L.reduce_sum(word, dim=1, keep_dim=True)
    rnn.update_memory(prev, hidden)
    rnn.update_memory(prev2, h2)
    rnn.step_output(hidden)
    rnn.output(h2)
out, out2 = rnn()
print(out.shape, out2.shape)
loss = L.mean(out) + L.mean(out2)
g = fluid.gradients([loss], [x])[0]
exe = fluid.Executor(fluid.CPUPlace())
exe.run(fluid.default_startup_program())
rng = np.random.RandomState(0)
res = exe.run(
    feed={"x": rng.uniform(-1, 1, (4, 3, 5)).astype("float32"), "boot": rng.uniform(-1, 1, (3, 6)).astype("float32")},
    fetch_list=[out, out2, g],
)

print(json.dumps([np.round(r.astype("float64"), 5).tolist() for r in res]))
