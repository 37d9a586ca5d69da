# Golden script: linear_chain_crf and crf_decoding on padded emissions with lengths: the negative log likelihood,
# the Viterbi path and the emissions' gradient as fluid 1.8.5 computed them.
import json

import numpy as np
import paddle.fluid as fluid
import paddle.fluid.layers as L

rng = np.random.RandomState(6)
# linear chain crf padded
emission = fluid.data("em", [2, 4, 3], "float32")
emission.stop_gradient = False
lab2 = L.assign(np.array([[0, 2, 1, 0], [1, 1, 0, 0]], "int64").reshape(2, 4, 1))
length = L.assign(np.array([4, 2], "int64"))
crf_cost = L.linear_chain_crf(
    emission,
    lab2,
    param_attr=fluid.ParamAttr(
        name="crfw",
        initializer=fluid.initializer.NumpyArrayInitializer(rng.uniform(-0.5, 0.5, (5, 3)).astype("float32")),
    ),
    length=length,
)
dec = L.crf_decoding(emission, param_attr=fluid.ParamAttr(name="crfw"), length=length)
g2 = fluid.gradients([L.reduce_sum(crf_cost)], [emission])[0]
exe = fluid.Executor(fluid.CPUPlace())
exe.run(fluid.default_startup_program())
res = exe.run(
    feed={"em": rng.uniform(-1, 1, (2, 4, 3)).astype("float32")}, fetch_list=[crf_cost, dec, g2], return_numpy=False
)
print(json.dumps([[np.array(r).dtype.name, np.round(np.array(r).astype("float64"), 5).tolist()] for r in res]))
