# Golden script: dygraph ResNet in the shape of PaddlePaddle models' dygraph/resnet (fluid 1.8): ConvBNLayer,
# BottleneckBlock with shortcut, Pool2D global average, Linear softmax; Momentum with L2Decay and
# piecewise decay; train and eval mode; seeded; small sizes.
import json
import math

import numpy as np
import paddle.fluid as fluid
from paddle.fluid.dygraph.nn import BatchNorm, Conv2D, Linear, Pool2D


class ConvBNLayer(fluid.dygraph.Layer):
    def __init__(self, num_channels, num_filters, filter_size, stride=1, groups=1, act=None):
        super(ConvBNLayer, self).__init__()
        self._conv = Conv2D(
            num_channels=num_channels,
            num_filters=num_filters,
            filter_size=filter_size,
            stride=stride,
            padding=(filter_size - 1) // 2,
            groups=groups,
            act=None,
            bias_attr=False,
        )
        self._batch_norm = BatchNorm(num_filters, act=act)

    def forward(self, inputs):
        y = self._conv(inputs)
        y = self._batch_norm(y)
        return y


class BottleneckBlock(fluid.dygraph.Layer):
    def __init__(self, num_channels, num_filters, stride, shortcut=True):
        super(BottleneckBlock, self).__init__()
        self.conv0 = ConvBNLayer(num_channels=num_channels, num_filters=num_filters, filter_size=1, act="relu")
        self.conv1 = ConvBNLayer(
            num_channels=num_filters, num_filters=num_filters, filter_size=3, stride=stride, act="relu"
        )
        self.conv2 = ConvBNLayer(num_channels=num_filters, num_filters=num_filters * 4, filter_size=1, act=None)
        if not shortcut:
            self.short = ConvBNLayer(
                num_channels=num_channels, num_filters=num_filters * 4, filter_size=1, stride=stride
            )
        self.shortcut = shortcut
        self._num_channels_out = num_filters * 4

    def forward(self, inputs):
        y = self.conv0(inputs)
        conv1 = self.conv1(y)
        conv2 = self.conv2(conv1)
        if self.shortcut:
            short = inputs
        else:
            short = self.short(inputs)
        y = fluid.layers.elementwise_add(x=short, y=conv2)
        layer_helper = fluid.layer_helper.LayerHelper(self.full_name(), act="relu")
        return layer_helper.append_activation(y)


class ResNet(fluid.dygraph.Layer):
    def __init__(self, depth=(1, 1), num_filters=(4, 8), class_dim=5):
        super(ResNet, self).__init__()
        self.conv = ConvBNLayer(num_channels=3, num_filters=8, filter_size=7, stride=2, act="relu")
        self.pool2d_max = Pool2D(pool_size=3, pool_stride=2, pool_padding=1, pool_type="max")
        self.bottleneck_block_list = []
        num_channels = 8
        for block in range(len(depth)):
            shortcut = False
            for i in range(depth[block]):
                bottleneck_block = self.add_sublayer(
                    "bb_%d_%d" % (block, i),
                    BottleneckBlock(
                        num_channels=num_channels,
                        num_filters=num_filters[block],
                        stride=2 if i == 0 and block != 0 else 1,
                        shortcut=shortcut,
                    ),
                )
                num_channels = bottleneck_block._num_channels_out
                self.bottleneck_block_list.append(bottleneck_block)
                shortcut = True
        self.pool2d_avg = Pool2D(pool_size=7, pool_type="avg", global_pooling=True)
        self.pool2d_avg_output = num_filters[-1] * 4 * 1 * 1
        stdv = 1.0 / math.sqrt(2048 * 1.0)
        self.out = Linear(
            self.pool2d_avg_output,
            class_dim,
            act="softmax",
            param_attr=fluid.param_attr.ParamAttr(initializer=fluid.initializer.Uniform(-stdv, stdv)),
        )

    def forward(self, inputs):
        y = self.conv(inputs)
        y = self.pool2d_max(y)
        for bottleneck_block in self.bottleneck_block_list:
            y = bottleneck_block(y)
        y = self.pool2d_avg(y)
        y = fluid.layers.reshape(y, shape=[-1, self.pool2d_avg_output])
        y = self.out(y)
        return y


out = {}
with fluid.dygraph.guard(fluid.CPUPlace()):
    fluid.default_startup_program().random_seed = 11
    fluid.default_main_program().random_seed = 11
    model = ResNet()
    opt = fluid.optimizer.Momentum(
        learning_rate=fluid.layers.piecewise_decay(boundaries=[2, 4], values=[0.1, 0.01, 0.001]),
        momentum=0.9,
        regularization=fluid.regularizer.L2Decay(1e-4),
        parameter_list=model.parameters(),
    )
    rng = np.random.RandomState(4)
    res = []
    for _ in range(5):
        img = fluid.dygraph.to_variable(rng.rand(4, 3, 32, 32).astype("float32"))
        label = fluid.dygraph.to_variable(rng.randint(0, 5, (4, 1)).astype("int64"))
        label.stop_gradient = True
        pred = model(img)
        loss = fluid.layers.mean(fluid.layers.cross_entropy(input=pred, label=label))
        acc1 = fluid.layers.accuracy(input=pred, label=label, k=1)
        loss.backward()
        opt.minimize(loss)
        model.clear_gradients()
        res.append([round(float(loss.numpy()), 5), float(acc1.numpy())])
    out["train"] = res
    model.eval()
    img = fluid.dygraph.to_variable(rng.rand(2, 3, 32, 32).astype("float32"))
    out["eval"] = np.round(model(img).numpy(), 5).tolist()
    sd = model.state_dict()
    out["keys"] = list(sd.keys())
    out["params"] = {k: round(float(np.abs(v.numpy()).sum()), 4) for k, v in sd.items()}
print(json.dumps(out))
