"""Dygraph training steps: a fluid.dygraph model trained by fluidcompat (ops traced onto torch eager,
torch autograd) against the same math in hand-written eager torch, both reading the loss every step.

- MLP 784-128-10 (Linear layers), batch 64, SGD
- LeNet-style CNN (Conv2D 5x5/20 + Pool2D, Conv2D 5x5/50 + Pool2D, Linear 10), batch 32, Adam
- an is_sparse Embedding 1,000,000 x 150, batch 32, SGD (torch: a sparse embedding gradient)

The dygraph guard stays open while the case runs (``enable_dygraph``); ``main`` closes it.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

import fluidcompat as fluid
from fluidcompat.dygraph import Conv2D, Linear, Pool2D, to_variable


def _leaves(layer, device):
    return [torch.tensor(p.numpy(), device=device, requires_grad=True) for p in layer.parameters()]


def _step(model, opt, x, y):
    def ours():
        prob = model(x)
        loss = fluid.layers.mean(fluid.layers.cross_entropy(prob, y))
        loss.backward()
        opt.minimize(loss)
        model.clear_gradients()
        loss.numpy()

    return ours


def mlp_case(device="cpu"):
    rng = np.random.RandomState(0)
    xs, ys = rng.rand(64, 784).astype("float32"), rng.randint(0, 10, (64, 1)).astype("int64")
    model = fluid.dygraph.Sequential(Linear(784, 128, act="relu"), Linear(128, 10, act="softmax"))
    opt = fluid.optimizer.SGD(0.01, parameter_list=model.parameters())
    ours = _step(model, opt, to_variable(xs), to_variable(ys))
    w1, b1, w2, b2 = params = _leaves(model, device)

    def theirs():
        xt, yt = torch.from_numpy(xs).to(device), torch.from_numpy(ys).to(device)
        prob = torch.softmax(torch.relu(xt @ w1 + b1) @ w2 + b2, dim=1)
        loss_t = -torch.log(prob.gather(1, yt)).mean()
        loss_t.backward()
        with torch.no_grad():
            for q in params:
                q.sub_(q.grad, alpha=0.01)
                q.grad = None
        loss_t.item()

    return ours, theirs


def cnn_case(device="cpu"):
    rng = np.random.RandomState(0)
    xs, ys = rng.rand(32, 1, 28, 28).astype("float32"), rng.randint(0, 10, (32, 1)).astype("int64")

    class LeNet(fluid.dygraph.Layer):
        def __init__(self):
            super().__init__()
            self.c1, self.p1 = Conv2D(1, 20, 5, act="relu"), Pool2D(2, "max", 2)
            self.c2, self.p2 = Conv2D(20, 50, 5, act="relu"), Pool2D(2, "max", 2)
            self.fc = Linear(800, 10, act="softmax")

        def forward(self, x):
            h = self.p2(self.c2(self.p1(self.c1(x))))
            return self.fc(fluid.layers.reshape(h, [-1, 800]))

    model = LeNet()
    opt = fluid.optimizer.Adam(0.001, parameter_list=model.parameters())
    ours = _step(model, opt, to_variable(xs), to_variable(ys))
    k1, cb1, k2, cb2, w, b = params = _leaves(model, device)
    topt = torch.optim.Adam(params, lr=0.001)

    def theirs():
        xt, yt = torch.from_numpy(xs).to(device), torch.from_numpy(ys).to(device)
        h = F.max_pool2d(torch.relu(F.conv2d(xt, k1, cb1)), 2, 2)
        h = F.max_pool2d(torch.relu(F.conv2d(h, k2, cb2)), 2, 2)
        prob = torch.softmax(h.flatten(1) @ w + b, dim=1)
        loss_t = -torch.log(prob.gather(1, yt)).mean()
        loss_t.backward()
        topt.step()
        topt.zero_grad(set_to_none=True)
        loss_t.item()

    return ours, theirs


def embedding_case(device="cpu"):
    rng = np.random.RandomState(0)
    ids = rng.randint(0, 1000000, (32, 1)).astype("int64")
    emb = fluid.dygraph.Embedding(size=[1000000, 150], is_sparse=True)
    opt = fluid.optimizer.SGD(0.01, parameter_list=emb.parameters())
    x = to_variable(ids)

    def ours():
        loss = fluid.layers.reduce_mean(emb(x))
        loss.backward()
        opt.minimize(loss)
        emb.clear_gradients()
        loss.numpy()

    (w,) = _leaves(emb, device)
    t_ids = torch.from_numpy(ids).reshape(-1).to(device)

    def theirs():
        loss_t = F.embedding(t_ids, w, sparse=True).mean()
        loss_t.backward()
        with torch.no_grad():
            w.sub_(w.grad, alpha=0.01)  # (a sparse gradient: its rows alone)
            w.grad = None
        loss_t.item()

    return ours, theirs


def main(compare) -> None:
    print("# fluid.dygraph training steps (traced onto torch eager) against hand-written eager torch")
    fluid.enable_dygraph(fluid.CPUPlace())
    try:
        compare("dygraph MLP 784-128-10 SGD, batch 64", *mlp_case(), steps=300)
        compare("dygraph LeNet CNN Adam, batch 32", *cnn_case(), steps=60)
        compare("dygraph embedding 1Mx150 is_sparse", *embedding_case(), steps=300)
    finally:
        fluid.disable_dygraph()


if __name__ == "__main__":
    import run_all

    torch.set_num_threads(1)
    main(run_all.compare)
