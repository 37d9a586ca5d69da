# Run once under fluid 1.8.5 (tools/fluid18): trains a dygraph conv + GroupNorm (default attributes:
# fluid 1.8.5 gave it no scale or bias) + Linear net one Adam step and saves its parameters and optimizer
# state to fluid18_saved/dygraph_groupnorm/ (what dygraph_groupnorm_load.py reads).
import os

import numpy as np
import paddle.fluid as fluid
from _groupnorm_net import Net

HERE = os.path.dirname(os.path.abspath(__file__))
with fluid.dygraph.guard(fluid.CPUPlace()):
    net = Net()
    for k, p in enumerate(sorted(net.parameters(), key=lambda p: p.name)):
        p.set_value(np.random.RandomState(k).uniform(-0.5, 0.5, p.shape).astype("float32"))
    opt = fluid.optimizer.Adam(0.01, parameter_list=net.parameters())
    x = fluid.dygraph.to_variable(np.random.RandomState(9).rand(2, 2, 5, 5).astype("float32"))
    loss = fluid.layers.reduce_mean(fluid.layers.square(net(x)))
    loss.backward()
    opt.minimize(loss)
    path = os.path.join(HERE, "fluid18_saved", "dygraph_groupnorm", "model")
    fluid.save_dygraph(net.state_dict(), path)
    fluid.save_dygraph(opt.state_dict(), path)
    print(sorted(net.state_dict()))
