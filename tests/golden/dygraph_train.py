# Dygraph models trained a few steps: parameter names, state dict keys, losses, gradients, values.
import json

import numpy as np
import paddle.fluid as fluid
from paddle.fluid.dygraph import (
    BatchNorm,
    Conv2D,
    Conv2DTranspose,
    Dropout,
    Embedding,
    GroupNorm,
    InstanceNorm,
    LayerNorm,
    Linear,
    Pool2D,
    PRelu,
    to_variable,
)


def r(a):
    return np.round(np.asarray(a, "float64").reshape(-1), 5).tolist()


class ConvNet(fluid.dygraph.Layer):
    def __init__(self):
        super(ConvNet, self).__init__()
        self.conv = Conv2D(2, 4, 3, padding=1, act="relu")
        self.bn = BatchNorm(4, momentum=0.8)
        self.pool = Pool2D(2, "max", 2)
        self.gn = GroupNorm(
            4, 2, param_attr=fluid.ParamAttr(name="gn_scale"), bias_attr=fluid.ParamAttr(name="gn_bias")
        )
        self.inorm = InstanceNorm(2)
        self.prelu = PRelu("channel", channel=4)
        self.deconv = Conv2DTranspose(4, 2, 2, stride=2, bias_attr=False)  # instance norm follows
        self.fc = Linear(2 * 8 * 8, 3, act="softmax")
        self.drop = Dropout(0.0)  # random in training: 0.25 only in eval (below)

    def forward(self, x):
        y = self.pool(self.bn(self.conv(x)))
        y = self.prelu(self.gn(y))
        y = self.inorm(self.deconv(y))
        y = self.drop(y)
        y = fluid.layers.reshape(y, [y.shape[0], -1])
        return self.fc(y)


class TextNet(fluid.dygraph.Layer):
    def __init__(self):
        super(TextNet, self).__init__()
        self.emb = Embedding([20, 6], padding_idx=0)
        self.ln = LayerNorm(6)
        self.fc = Linear(6, 2)

    def forward(self, ids):
        e = self.ln(self.emb(ids))
        return self.fc(fluid.layers.reduce_mean(e, dim=1))


def set_params(net):
    for k, p in enumerate(sorted(net.parameters(), key=lambda p: p.name)):
        value = np.random.RandomState(k).uniform(-0.5, 0.5, p.shape).astype("float32")
        if p.name.endswith("w_2"):  # a running variance: positive
            value = np.abs(value) + 0.5
        p.set_value(value)


def make_opt(name, params):
    if name == "sgd":
        return fluid.optimizer.SGD(0.1, parameter_list=params)
    if name == "momentum":
        return fluid.optimizer.Momentum(
            0.05, 0.9, parameter_list=params, regularization=fluid.regularizer.L2Decay(0.01)
        )
    if name == "adam":
        return fluid.optimizer.Adam(0.01, parameter_list=params, grad_clip=fluid.clip.GradientClipByGlobalNorm(0.5))
    if name == "rmsprop":
        return fluid.optimizer.RMSProp(0.01, parameter_list=params)
    if name == "adagrad":
        return fluid.optimizer.Adagrad(0.1, parameter_list=params, grad_clip=fluid.clip.GradientClipByValue(0.05))
    return fluid.optimizer.Lamb(0.01, parameter_list=params)


out = {}
rng = np.random.RandomState(0)
xs = rng.rand(4, 2, 8, 8).astype("float32")
ys = rng.randint(0, 3, (4, 1)).astype("int64")
ids = rng.randint(0, 20, (3, 5)).astype("int64")
ids[0, :2] = 0
labels = rng.randint(0, 2, (3, 1)).astype("int64")

for opt_name in ["sgd", "momentum", "adam", "rmsprop", "adagrad", "lamb"]:
    with fluid.dygraph.guard(fluid.CPUPlace()):
        net = ConvNet()
        set_params(net)
        case = {
            "params": [[p.name, p.shape, p.stop_gradient] for p in net.parameters()],
            "state_keys": list(net.state_dict().keys()),
        }
        opt = make_opt(opt_name, net.parameters())
        losses = []
        for step in range(3):
            prob = net(to_variable(xs))
            loss = fluid.layers.mean(fluid.layers.cross_entropy(prob, to_variable(ys)))
            loss.backward()
            if step == 0:
                case["grads"] = {p.name: r(p.gradient()) for p in net.parameters() if p.gradient() is not None}
            opt.minimize(loss)
            net.clear_gradients()
            losses.append(r(loss.numpy())[0])
        case["losses"] = losses
        case["values"] = {p.name: r(p.numpy()) for p in net.parameters()}
        case["opt_state"] = sorted(opt.state_dict().keys())
        net.drop._dropout_prob = 0.25
        net.eval()  # also stops recording gradients, as in fluid 1.8
        case["eval_grad"] = net(to_variable(xs)).stop_gradient
        case["eval"] = r(net(to_variable(xs)).numpy())
        out[opt_name] = case

with fluid.dygraph.guard(fluid.CPUPlace()):
    net = TextNet()
    set_params(net)
    opt = fluid.optimizer.Adam(0.05, parameter_list=net.parameters())
    losses = []
    for _ in range(4):
        logits = net(to_variable(ids))
        loss = fluid.layers.mean(fluid.layers.softmax_with_cross_entropy(logits, to_variable(labels)))
        loss.backward()
        opt.minimize(loss)
        net.clear_gradients()
        losses.append(r(loss.numpy())[0])
    out["text"] = {
        "params": [[p.name, p.shape] for p in net.parameters()],
        "losses": losses,
        "emb": r(net.emb.weight.numpy()),
    }

print(json.dumps(out, sort_keys=True))
