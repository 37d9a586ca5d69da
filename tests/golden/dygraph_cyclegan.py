# Golden script: dygraph CycleGAN pieces in the shape of PaddlePaddle models' dygraph/cycle_gan (fluid 1.8): a
# generator of Conv2D, InstanceNorm and Conv2DTranspose, a PatchGAN discriminator with leaky_relu,
# LSGAN losses with square / reduce_mean, two Adam optimizers with beta1=0.5, the fake image
# detached for the discriminator step; seeded.
import json

import numpy as np
import paddle.fluid as fluid
from paddle.fluid.dygraph import Conv2D, Conv2DTranspose, InstanceNorm, to_variable


class ConvIN(fluid.dygraph.Layer):
    def __init__(self, cin, cout, k, stride, padding, relu=True, leaky=0.0, norm=True, transpose=False):
        super(ConvIN, self).__init__()
        init = fluid.ParamAttr(initializer=fluid.initializer.NormalInitializer(loc=0.0, scale=0.02))
        # (no bias before a norm: its gradient is rounding noise)
        bias = False if norm else fluid.ParamAttr(initializer=fluid.initializer.Constant(0.0))
        if transpose:
            self.conv = Conv2DTranspose(cin, cout, k, stride=stride, padding=padding, param_attr=init, bias_attr=bias)
        else:
            self.conv = Conv2D(cin, cout, k, stride=stride, padding=padding, param_attr=init, bias_attr=bias)
        self.norm = InstanceNorm(cout) if norm else None
        self.relu, self.leaky = relu, leaky

    def forward(self, x):
        y = self.conv(x)
        if self.norm is not None:
            y = self.norm(y)
        if self.relu:
            y = fluid.layers.leaky_relu(y, alpha=self.leaky) if self.leaky else fluid.layers.relu(y)
        return y


class Generator(fluid.dygraph.Layer):
    def __init__(self):
        super(Generator, self).__init__()
        self.c1 = ConvIN(3, 8, 3, 1, 1)
        self.c2 = ConvIN(8, 16, 3, 2, 1)
        self.d1 = ConvIN(16, 8, 3, 2, 1, transpose=True)
        self.out = ConvIN(8, 3, 3, 1, 0, relu=False, norm=False)

    def forward(self, x):
        y = self.d1(self.c2(self.c1(x)))
        y = fluid.layers.pad2d(y, [1, 2, 1, 2], mode="reflect")
        return fluid.layers.tanh(self.out(y))


class Discriminator(fluid.dygraph.Layer):
    def __init__(self):
        super(Discriminator, self).__init__()
        self.c1 = ConvIN(3, 8, 4, 2, 1, leaky=0.2, norm=False)
        self.c2 = ConvIN(8, 16, 4, 2, 1, leaky=0.2)
        self.c3 = ConvIN(16, 1, 4, 1, 1, relu=False, norm=False)

    def forward(self, x):
        return self.c3(self.c2(self.c1(x)))


out = {}
with fluid.dygraph.guard(fluid.CPUPlace()):
    fluid.default_startup_program().random_seed = 17
    fluid.default_main_program().random_seed = 17
    G, D = Generator(), Discriminator()
    opt_g = fluid.optimizer.Adam(2e-4, beta1=0.5, parameter_list=G.parameters())
    opt_d = fluid.optimizer.Adam(2e-4, beta1=0.5, parameter_list=D.parameters())
    rng = np.random.RandomState(5)
    res = []
    for _ in range(4):
        a = to_variable(rng.uniform(-1, 1, (2, 3, 16, 16)).astype("float32"))
        b = to_variable(rng.uniform(-1, 1, (2, 3, 16, 16)).astype("float32"))
        fake = G(a)
        g_loss = fluid.layers.reduce_mean(fluid.layers.square(D(fake) - 1)) + 10.0 * fluid.layers.reduce_mean(
            fluid.layers.abs(fake - a)
        )
        g_loss.backward()
        opt_g.minimize(g_loss)
        G.clear_gradients()
        D.clear_gradients()
        fake_d = fake.detach()
        d_loss = (
            fluid.layers.reduce_mean(fluid.layers.square(D(fake_d)))
            + fluid.layers.reduce_mean(fluid.layers.square(D(b) - 1))
        ) * 0.5
        d_loss.backward()
        opt_d.minimize(d_loss)
        D.clear_gradients()
        res.append([round(float(g_loss.numpy()), 5), round(float(d_loss.numpy()), 5)])
    out["losses"] = res
    out["G_params"] = {k: round(float(np.abs(v.numpy()).sum()), 4) for k, v in G.state_dict().items()}
    out["D_params"] = {k: round(float(np.abs(v.numpy()).sum()), 4) for k, v in D.state_dict().items()}
print(json.dumps(out))
