"""Training-step benchmark cases: each a fluid program run by fluidcompat's Executor and the same math
in hand-written eager torch (autograd, in-place updates), both fetching the loss every step.

- MLP 784-128-10, batch 64, SGD
- LeNet-style CNN (conv5x5/20 + pool, conv5x5/50 + pool, fc 10), batch 32, Adam
- the docs' embedding program (1,000,000 x 150 table, l2_normalize, square error), batch 32, SGD,
  dense and ``is_sparse=True``
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

import fluidcompat as fluid


def _fresh():
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 1
    return main, startup


def _params(scope, main):
    """The fluid program's parameters as torch leaves (copies), in creation order."""
    return [
        torch.tensor(np.array(scope.find_var(p.name).get_tensor()), requires_grad=True) for p in main.all_parameters()
    ]


def _exe(startup, place):
    exe = fluid.Executor(place)
    exe.run(startup)
    return exe


def mlp_case(place=None, device="cpu", compiled=None):
    place = place or fluid.CPUPlace()
    main, startup = _fresh()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [None, 784], "float32")
        y = fluid.data("y", [None, 1], "int64")
        h = fluid.layers.fc(x, 128, act="relu")
        p = fluid.layers.fc(h, 10, act="softmax")
        loss = fluid.layers.mean(fluid.layers.cross_entropy(p, y))
        fluid.optimizer.SGD(learning_rate=0.01).minimize(loss)
    exe = _exe(startup, place)
    rng = np.random.RandomState(0)
    xs, ys = rng.rand(64, 784).astype("float32"), rng.randint(0, 10, (64, 1)).astype("int64")
    feed = {"x": xs, "y": ys}
    prog = compiled(main) if compiled else main

    def ours():
        exe.run(prog, feed=feed, fetch_list=[loss])

    w1, b1, w2, b2 = (t.detach().to(device).requires_grad_() for t in _params(fluid.global_scope(), main))
    params = [w1, b1, w2, b2]

    def theirs():
        xt, yt = torch.from_numpy(xs).to(device), torch.from_numpy(ys).to(device)
        h = torch.relu(xt @ w1 + b1)
        prob = torch.softmax(h @ w2 + b2, dim=1)
        loss_t = -torch.log(prob.gather(1, yt)).mean()
        loss_t.backward()
        with torch.no_grad():
            for q in params:
                q.sub_(q.grad, alpha=0.01)
                q.grad = None
        loss_t.item()

    return ours, theirs


def cnn_case(place=None, device="cpu", compiled=None):
    place = place or fluid.CPUPlace()
    main, startup = _fresh()
    with fluid.program_guard(main, startup):
        img = fluid.data("img", [None, 1, 28, 28], "float32")
        y = fluid.data("y", [None, 1], "int64")
        c1 = fluid.nets.simple_img_conv_pool(img, num_filters=20, filter_size=5, pool_size=2, pool_stride=2, act="relu")
        c2 = fluid.nets.simple_img_conv_pool(c1, num_filters=50, filter_size=5, pool_size=2, pool_stride=2, act="relu")
        p = fluid.layers.fc(c2, 10, act="softmax")
        loss = fluid.layers.mean(fluid.layers.cross_entropy(p, y))
        fluid.optimizer.Adam(learning_rate=0.001).minimize(loss)
    exe = _exe(startup, place)
    rng = np.random.RandomState(0)
    xs, ys = rng.rand(32, 1, 28, 28).astype("float32"), rng.randint(0, 10, (32, 1)).astype("int64")
    feed = {"img": xs, "y": ys}
    prog = compiled(main) if compiled else main

    def ours():
        exe.run(prog, feed=feed, fetch_list=[loss])

    k1, cb1, k2, cb2, w, b = (t.detach().to(device).requires_grad_() for t in _params(fluid.global_scope(), main))
    params = [k1, cb1, k2, cb2, w, b]
    opt = torch.optim.Adam(params, lr=0.001)

    def theirs():
        xt, yt = torch.from_numpy(xs).to(device), torch.from_numpy(ys).to(device)
        h = F.max_pool2d(torch.relu(F.conv2d(xt, k1, cb1)), 2, 2)
        h = F.max_pool2d(torch.relu(F.conv2d(h, k2, cb2)), 2, 2)
        prob = torch.softmax(h.flatten(1) @ w + b, dim=1)
        loss_t = -torch.log(prob.gather(1, yt)).mean()
        loss_t.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        loss_t.item()

    return ours, theirs


ROWS, DIM, BATCH = 1_000_000, 150, 32


def embedding_program(sparse: bool):
    main, startup = _fresh()
    with fluid.program_guard(main, startup):
        ids = fluid.data("ids", [BATCH, 1], "int64")
        label = fluid.layers.fill_constant(shape=[BATCH, 1, DIM], value=0.5, dtype="float32")
        emb = fluid.embedding(input=ids, size=(ROWS, DIM), is_sparse=sparse)
        out = fluid.layers.l2_normalize(x=emb, axis=-1)
        loss = fluid.layers.mean(fluid.layers.square_error_cost(input=out, label=label))
        fluid.optimizer.SGD(learning_rate=0.001).minimize(loss)
    return main, startup, loss


def embedding_torch(table: torch.Tensor, sparse: bool):
    """The embedding program in hand-written torch over ``table`` (a leaf that needs its grad)."""
    label = None

    def step(ids):
        nonlocal label
        if label is None or label.device != table.device:
            label = torch.full([BATCH, 1, DIM], 0.5, device=table.device)
        emb = F.embedding(ids, table, sparse=sparse)
        out = F.normalize(emb, dim=-1, eps=1e-10)
        loss_t = ((out - label) ** 2).mean()
        loss_t.backward()
        with torch.no_grad():
            table.add_(table.grad, alpha=-0.001)
        table.grad = None
        return loss_t.item()

    return step


def embedding_case(sparse: bool, place=None, device="cpu", compiled=None):
    place = place or fluid.CPUPlace()
    main, startup, loss = embedding_program(sparse)
    exe = _exe(startup, place)
    rng = np.random.RandomState(0)
    ids = rng.randint(0, ROWS, (BATCH, 1)).astype("int64")
    prog = compiled(main) if compiled else main

    def ours():
        exe.run(prog, feed={"ids": ids}, fetch_list=[loss])

    table = torch.empty(ROWS, DIM, device=device).uniform_(-0.05, 0.05).requires_grad_()
    step = embedding_torch(table, sparse)
    ids_t = torch.from_numpy(ids).to(device)

    def theirs():
        step(ids_t)

    return ours, theirs
