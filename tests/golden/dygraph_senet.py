# Golden script: dygraph SE-ResNeXt / MobileNet pieces in the shape of PaddlePaddle models' dygraph models (fluid
# 1.8): grouped and depthwise Conv2D, squeeze-excitation (global pool, Linear, elementwise_mul
# axis=0), relu6, CosineDecay with Momentum, ExponentialDecay with RMSProp; seeded.
import json
import math

import numpy as np
import paddle.fluid as fluid
from paddle.fluid.dygraph.nn import BatchNorm, Conv2D, Linear, Pool2D


class ConvBN(fluid.dygraph.Layer):
    def __init__(self, cin, cout, k, stride=1, groups=1, act=None, use_cudnn=True):
        super(ConvBN, self).__init__()
        self._conv = Conv2D(
            cin,
            cout,
            k,
            stride=stride,
            padding=(k - 1) // 2,
            groups=groups,
            act=None,
            bias_attr=False,
            use_cudnn=use_cudnn,
        )
        self._bn = BatchNorm(cout, act=act)

    def forward(self, x):
        return self._bn(self._conv(x))


class SqueezeExcitation(fluid.dygraph.Layer):
    def __init__(self, num_channels, reduction_ratio):
        super(SqueezeExcitation, self).__init__()
        self._num_channels = num_channels
        self._pool = Pool2D(pool_size=0, pool_type="avg", global_pooling=True)
        stdv = 1.0 / math.sqrt(num_channels * 1.0)
        self._fc = Linear(
            num_channels,
            num_channels // reduction_ratio,
            param_attr=fluid.ParamAttr(initializer=fluid.initializer.Uniform(-stdv, stdv)),
            act="relu",
        )
        stdv = 1.0 / math.sqrt(num_channels / 16.0 * 1.0)
        self._excitation = Linear(
            num_channels // reduction_ratio,
            num_channels,
            param_attr=fluid.ParamAttr(initializer=fluid.initializer.Uniform(-stdv, stdv)),
            act="sigmoid",
        )

    def forward(self, input):
        y = self._pool(input)
        y = fluid.layers.reshape(y, shape=[-1, self._num_channels])
        y = self._fc(y)
        y = self._excitation(y)
        y = fluid.layers.elementwise_mul(x=input, y=y, axis=0)
        return y


class Net(fluid.dygraph.Layer):
    def __init__(self):
        super(Net, self).__init__()
        self.stem = ConvBN(3, 16, 3, stride=2, act="relu")
        self.grouped = ConvBN(16, 16, 3, groups=4, act="relu")
        self.se = SqueezeExcitation(16, 4)
        self.dw = ConvBN(16, 16, 3, groups=16, act=None, use_cudnn=False)
        self.pw = ConvBN(16, 32, 1, act=None)
        self.pool = Pool2D(pool_type="avg", global_pooling=True)
        self.fc = Linear(32, 4, act="softmax")

    def forward(self, x):
        y = self.se(self.grouped(self.stem(x)))
        y = fluid.layers.relu6(self.dw(y))
        y = fluid.layers.relu6(self.pw(y))
        y = fluid.layers.reshape(self.pool(y), [-1, 32])
        return self.fc(y)


out = {}
for opt_name in ("momentum_cosine", "rmsprop_exp"):
    with fluid.dygraph.guard(fluid.CPUPlace()):
        fluid.default_startup_program().random_seed = 21
        fluid.default_main_program().random_seed = 21
        net = Net()
        if opt_name == "momentum_cosine":
            opt = fluid.optimizer.Momentum(
                learning_rate=fluid.dygraph.CosineDecay(0.1, 2, 3),
                momentum=0.9,
                regularization=fluid.regularizer.L2Decay(1e-4),
                parameter_list=net.parameters(),
            )
        else:
            opt = fluid.optimizer.RMSProp(
                learning_rate=fluid.dygraph.ExponentialDecay(0.01, 2, 0.5, staircase=True),
                parameter_list=net.parameters(),
            )
        rng = np.random.RandomState(8)
        res = []
        for _ in range(5):
            img = fluid.dygraph.to_variable(rng.rand(4, 3, 16, 16).astype("float32"))
            label = fluid.dygraph.to_variable(rng.randint(0, 4, (4, 1)).astype("int64"))
            loss = fluid.layers.mean(fluid.layers.cross_entropy(net(img), label))
            loss.backward()
            opt.minimize(loss)
            net.clear_gradients()
            res.append([round(float(loss.numpy()), 5), round(float(opt.current_step_lr()), 7)])
        out[opt_name] = res
        out[opt_name + "_params"] = {k: round(float(np.abs(v.numpy()).sum()), 4) for k, v in net.state_dict().items()}
print(json.dumps(out))
