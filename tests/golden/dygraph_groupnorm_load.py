# Loads fluid18_saved/dygraph_groupnorm/ (a fluid 1.8.5 dygraph checkpoint of conv + GroupNorm with
# default attributes + Linear, after one Adam step; dygraph_groupnorm_save.py wrote it) into the same
# net, prints its output, trains one more Adam step and prints the conv and fc parameters' sums.
import json
import os

import numpy as np
import paddle.fluid as fluid
from _groupnorm_net import Net

out = {}
path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fluid18_saved", "dygraph_groupnorm", "model")
with fluid.dygraph.guard(fluid.CPUPlace()):
    net = Net()
    opt = fluid.optimizer.Adam(0.01, parameter_list=net.parameters())
    params, opt_state = fluid.load_dygraph(path)
    out["saved"] = sorted(params)
    net.set_dict(params)
    opt.set_dict(opt_state)
    x = fluid.dygraph.to_variable(np.random.RandomState(9).rand(2, 2, 5, 5).astype("float32"))
    y = net(x)
    out["output"] = np.round(y.numpy().astype("float64"), 5).tolist()
    loss = fluid.layers.reduce_mean(fluid.layers.square(y))
    loss.backward()
    opt.minimize(loss)
    state = net.state_dict()
    out["after_step"] = {k: round(float(state[k].numpy().astype("float64").sum()), 5) for k in sorted(params)}
print(json.dumps(out, sort_keys=True))
