"""Paddle 2.x's dynamic API (fluidcompat/compat: tensor, nn, functional, optimizer, io, metric,
saving), each result checked against numpy."""

from __future__ import annotations

import os

import numpy as np
import pytest

from fluidcompat.compat import device, io, metric, nn, optimizer, saving
from fluidcompat.compat import functional as F
from fluidcompat.compat import tensor as T
from tests.test_samples import run_sample

rng = np.random.RandomState(3)


@pytest.fixture(autouse=True)
def fresh_device(monkeypatch):
    monkeypatch.setattr(device, "_device", None)
    monkeypatch.delenv("FLUIDCOMPAT_DEVICE", raising=False)


def t(a, stop_gradient=True):
    return device.to_tensor(np.asarray(a), stop_gradient=stop_gradient)


def np_log_softmax(x):
    z = x - x.max(axis=-1, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=-1, keepdims=True))


# -- tensors and autograd -------------------------------------------------------------------------
def test_math_and_reductions_match_numpy():
    a, b = rng.rand(3, 4).astype("float32"), rng.rand(4, 2).astype("float32")
    x, y = t(a), t(b)
    np.testing.assert_allclose(T.matmul(x, y).numpy(), a @ b, rtol=1e-6)
    np.testing.assert_allclose((x @ y).numpy(), a @ b, rtol=1e-6)
    np.testing.assert_allclose((x * 2 + 1 - x / 4).numpy(), a * 2 + 1 - a / 4, rtol=1e-6)
    np.testing.assert_allclose((1 - x).numpy(), 1 - a, rtol=1e-6)
    m = T.mean(x)
    assert m.shape == [1]  # whole-tensor reductions have shape [1] (Paddle 2.0 - 2.4)
    np.testing.assert_allclose(m.numpy(), [a.mean()], rtol=1e-6)
    np.testing.assert_allclose(T.sum(x, axis=1, keepdim=True).numpy(), a.sum(1, keepdims=True), rtol=1e-6)
    np.testing.assert_allclose(T.max(x, axis=0).numpy(), a.max(0))
    assert T.argmax(x, axis=1).numpy().tolist() == a.argmax(1).tolist()
    assert T.argmax(x, axis=1).dtype == "int64"
    assert T.reshape(x, [0, -1, 2]).shape == [3, 2, 2]  # 0 keeps that dimension
    assert T.flatten(t(rng.rand(2, 3, 4)), 1).shape == [2, 12]
    assert [s.shape for s in T.split(x, [1, -1], axis=1)] == [[3, 1], [3, 3]]
    assert T.concat([x, x], axis=0).shape == [6, 4]
    assert x[1:, 2].numpy().tolist() == a[1:, 2].tolist()
    assert float(T.mean(x)) == pytest.approx(float(a.mean()), rel=1e-6)


def test_reshape_to_a_shape_of_another_size_names_both():
    with pytest.raises(ValueError, match=r"shape \[3, 4\] \(12 elements\) cannot take the shape \[5, -1\]"):
        T.reshape(t(np.zeros((3, 4))), [5, -1])


def test_backward_fills_grads_of_tensors_that_need_them():
    a, w = rng.rand(5, 3).astype("float32"), rng.rand(3, 2).astype("float32")
    x, W = t(a), t(w, stop_gradient=False)
    loss = T.mean(F.relu(x @ W) ** 2)
    loss.backward()
    h = a @ w
    want = a.T @ (2 * h * (h > 0) / h.size)
    np.testing.assert_allclose(W.grad.numpy(), want, rtol=1e-5)
    assert x.grad is None and x.stop_gradient
    with pytest.raises(RuntimeError, match="stop_gradient=True"):
        T.mean(x).backward()
    loss2 = T.mean(x @ W)
    loss2.backward()  # gradients accumulate until cleared
    np.testing.assert_allclose(W.grad.numpy(), want + a.T @ np.full((5, 2), 1 / 10), rtol=1e-5)
    W.clear_grad()
    assert not W.grad.numpy().any()


def test_no_grad_records_nothing():
    W = t(rng.rand(2, 2).astype("float32"), stop_gradient=False)
    with T.no_grad():
        y = W * 2
    assert y.stop_gradient


# -- functional -----------------------------------------------------------------------------------
def test_cross_entropy_softmax_and_accuracy_match_numpy():
    logits = rng.randn(6, 5).astype("float32")
    label = rng.randint(0, 5, (6, 1)).astype("int64")
    nll = -np_log_softmax(logits)[np.arange(6), label[:, 0]]
    out = F.cross_entropy(t(logits), t(label), reduction="none")
    assert out.shape == [6, 1]  # the label's shape
    np.testing.assert_allclose(out.numpy()[:, 0], nll, rtol=1e-5)
    mean = F.cross_entropy(t(logits), t(label))
    assert mean.shape == [1]
    np.testing.assert_allclose(mean.numpy(), [nll.mean()], rtol=1e-5)
    np.testing.assert_allclose(
        F.cross_entropy(t(logits), t(label[:, 0]), reduction="sum").numpy(), [nll.sum()], rtol=1e-5
    )
    ignore = label.copy()
    ignore[0, 0] = -100
    np.testing.assert_allclose(F.cross_entropy(t(logits), t(ignore)).numpy(), [nll[1:].mean()], rtol=1e-5)
    np.testing.assert_allclose(F.softmax(t(logits)).numpy(), np.exp(np_log_softmax(logits)), rtol=1e-5)
    top2 = np.argsort(-logits, axis=1)[:, :2]
    for k, top in ((1, top2[:, :1]), (2, top2)):
        acc = metric.accuracy(t(logits), t(label), k=k)
        assert acc.dtype == "float32" and acc.shape == [1]
        assert float(acc) == pytest.approx((top == label).any(axis=1).mean())


def test_cross_entropy_names_bad_labels():
    logits = t(np.zeros((4, 3), "float32"))
    with pytest.raises(ValueError, match=r"a label is 3, beyond the 3 classes"):
        F.cross_entropy(logits, t(np.array([[0], [1], [2], [3]])))
    with pytest.raises(TypeError, match="hard labels must be int64"):
        F.cross_entropy(logits, t(np.zeros((4, 1), "float32")))
    with pytest.raises(ValueError, match=r"input has shape \[4, 3\] but the label \[5\]"):
        F.cross_entropy(logits, t(np.zeros(5, "int64")))


def conv_numpy(x, w, b, stride, pad):
    x = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    n, _, h, wd = x.shape
    o, _, kh, kw = w.shape
    oh, ow = (h - kh) // stride + 1, (wd - kw) // stride + 1
    out = np.zeros((n, o, oh, ow), "float64")
    for i in range(oh):
        for j in range(ow):
            patch = x[:, :, i * stride : i * stride + kh, j * stride : j * stride + kw]
            out[:, :, i, j] = np.tensordot(patch, w, axes=([1, 2, 3], [1, 2, 3]))
    return out + b.reshape(1, -1, 1, 1)


def test_conv2d_max_pool2d_and_linear_layers_match_numpy():
    device.seed(0)
    conv = nn.Conv2D(in_channels=2, out_channels=3, kernel_size=3, stride=1, padding=1)
    pool = nn.MaxPool2D(kernel_size=2, stride=2)
    fc = nn.Linear(in_features=12, out_features=4)
    x = rng.rand(2, 2, 4, 4).astype("float32")
    w, b = conv.weight.numpy(), conv.bias.numpy()
    assert w.shape == (3, 2, 3, 3) and not b.any()  # bias starts at zero
    c = conv_numpy(x, w, b, 1, 1)
    np.testing.assert_allclose(conv(t(x)).numpy(), c, rtol=1e-5, atol=1e-6)
    p = c.reshape(2, 3, 2, 2, 2, 2).max(axis=(3, 5))
    np.testing.assert_allclose(pool(conv(t(x))).numpy(), p, rtol=1e-5, atol=1e-6)
    flat = p.reshape(2, 12)
    np.testing.assert_allclose(fc(t(flat.astype("float32"))).numpy(), flat @ fc.weight.numpy(), rtol=1e-5, atol=1e-6)
    assert fc.weight.shape == [12, 4]  # [in_features, out_features], as in Paddle
    limit = np.sqrt(6 / (12 + 4))  # Xavier uniform
    assert np.abs(fc.weight.numpy()).max() <= limit


def test_conv_and_linear_name_mismatched_inputs():
    with pytest.raises(ValueError, match=r"input has 3 channels but the weight .* expects 2"):
        nn.Conv2D(2, 3, 3)(t(np.zeros((1, 3, 5, 5), "float32")))
    with pytest.raises(ValueError, match=r"Linear\(12, 4\): the input's last dimension is 10"):
        nn.Linear(12, 4)(t(np.zeros((2, 10), "float32")))


# -- Layer ----------------------------------------------------------------------------------------
class Net(nn.Layer):
    def __init__(self):
        super(Net, self).__init__()
        self.fc1 = nn.Linear(4, 3)
        self.act = nn.ReLU()
        self.drop = nn.Dropout(0.5)
        self.fc2 = nn.Linear(3, 2, bias_attr=False)

    def forward(self, x):
        return self.fc2(self.drop(self.act(self.fc1(x))))


def test_layer_registers_parameters_and_sublayers():
    net = Net()
    assert list(net.state_dict()) == ["fc1.weight", "fc1.bias", "fc2.weight"]
    assert [p.shape for p in net.parameters()] == [[4, 3], [3], [3, 2]]
    assert all(not p.stop_gradient for p in net.parameters())
    assert [name for name, _ in net.named_sublayers()] == ["fc1", "act", "drop", "fc2"]
    assert net.fc1.weight.name.startswith("linear_") and net.fc1.weight.name.endswith(".w_0")
    net.eval()
    assert not net.drop.training
    x = t(rng.rand(8, 4).astype("float32"))
    np.testing.assert_array_equal(net(x).numpy(), net(x).numpy())  # no dropout in eval
    net.train()
    assert net.drop.training


def test_layer_without_super_init_says_so():
    class Bad(nn.Layer):
        def __init__(self):
            self.fc = nn.Linear(2, 2)

    with pytest.raises(RuntimeError, match=r"super\(Bad, self\).__init__\(\) should be called first"):
        Bad()


def test_state_dict_round_trip_and_shape_mismatch_changes_nothing(tmp_path):
    net, other = Net(), Net()
    path = str(tmp_path / "sub" / "net.pdparams")
    saving.save(net.state_dict(), path)
    loaded = saving.load(path)
    assert sorted(loaded) == ["fc1.bias", "fc1.weight", "fc2.weight"]
    other.set_state_dict(loaded)
    for k, v in net.state_dict().items():
        np.testing.assert_array_equal(other.state_dict()[k].numpy(), v.numpy())
    before = {k: v.numpy() for k, v in other.state_dict().items()}
    bad = dict(loaded)
    bad["fc1.bias"] = np.zeros(5, "float32")
    with pytest.raises(ValueError, match=r"'fc1.bias' has shape \[5\] in the state dict but \[3\]"):
        other.set_state_dict(bad)
    for k, v in other.state_dict().items():
        np.testing.assert_array_equal(v.numpy(), before[k])
    assert saving.load(path, return_numpy=True)["fc2.weight"].shape == (3, 2)
    with pytest.raises(ValueError, match="does not exist"):
        saving.load(str(tmp_path / "nope.pdparams"))
    assert os.listdir(tmp_path / "sub") == ["net.pdparams"]


# -- optimizers -----------------------------------------------------------------------------------
def _param(a):
    return nn.Parameter(device.to_tensor(a)._t.clone(), device.CPUPlace(), "p")


def test_sgd_and_adam_steps_match_numpy():
    a, g = rng.rand(3, 2).astype("float32"), rng.rand(3, 2).astype("float32")
    p = _param(a)
    sgd = optimizer.SGD(learning_rate=0.1, parameters=[p])
    (p * t(g)).sum().backward()
    sgd.step()
    np.testing.assert_allclose(p.numpy(), a - 0.1 * g, rtol=1e-6)

    p = _param(a)
    adam = optimizer.Adam(learning_rate=0.01, parameters=[p])
    want, m, v = a.astype("float64"), 0.0, 0.0
    for step in range(1, 4):
        (p * t(g)).sum().backward()
        adam.step()
        adam.clear_grad()
        m = 0.9 * m + 0.1 * g
        v = 0.999 * v + 0.001 * g * g
        lr = 0.01 * np.sqrt(1 - 0.999**step) / (1 - 0.9**step)
        want = want - lr * m / (np.sqrt(v) + 1e-8)
    np.testing.assert_allclose(p.numpy(), want, rtol=1e-5)


def test_optimizer_needs_parameters_in_dynamic_mode():
    with pytest.raises(ValueError, match="parameters= is required"):
        optimizer.SGD(learning_rate=0.1)


# -- data -----------------------------------------------------------------------------------------
class Digits(io.Dataset):
    def __init__(self, n):
        self.n = n

    def __getitem__(self, i):
        return np.full([1, 2, 2], i, "float32"), np.array([i % 10], "int64")

    def __len__(self):
        return self.n


def test_dataloader_batches_and_shuffles():
    loader = io.DataLoader(Digits(10), batch_size=4)
    batches = list(loader())  # callable, as the course uses it
    assert [b[0].shape for b in batches] == [[4, 1, 2, 2], [4, 1, 2, 2], [2, 1, 2, 2]]
    assert batches[2][1].numpy().tolist() == [[8], [9]] and batches[0][1].dtype == "int64"
    assert len(loader) == 3
    assert len(list(io.DataLoader(Digits(10), batch_size=4, drop_last=True))) == 2
    np.random.seed(0)
    seen = [int(v) for b in io.DataLoader(Digits(10), batch_size=4, shuffle=True) for v in b[0].numpy()[:, 0, 0, 0]]
    assert sorted(seen) == list(range(10)) and seen != list(range(10))
    with pytest.raises(TypeError, match="must be a paddle.io.Dataset"):
        io.DataLoader([1, 2, 3], batch_size=2)


# -- the seed's chapter ---------------------------------------------------------------------------
def test_mnist_chapter_trains_and_evaluates(generated_data_home, tmp_path):
    """Seed 003's MNIST training (Conv2D/MaxPool2D/Linear, SGD, DataLoader, save/load, eval) on the
    generated digits: the loss falls and the test accuracy clears 0.4 (chance: 0.1)."""
    out = run_sample("paddle2_mnist_train.py", env=generated_data_home, cwd=tmp_path)
    losses = [float(v) for v in __import__("re").findall(r"loss is: \[([\d.]+)\]", out)]
    assert len(losses) == 5 and losses[-1] < losses[0] * 0.7, out
    assert "\nepoch 4 took " in out and "gpu:0" not in out  # the epoch's time, no device (the CPU's work)
    accuracy = float(out.rsplit("test accuracy: ", 1)[1])
    assert accuracy > 0.4, out
    assert os.path.exists(tmp_path / "mnist.pdparams")


# -- on a GPU (skipped where torch sees no CUDA) ----------------------------------------------------
@pytest.mark.cuda
def test_training_step_on_cuda_matches_the_cpu():
    """The same Conv2D/MaxPool2D/Linear step on gpu:0 and on the CPU: outputs, gradients and the
    parameters after an Adam step agree; the GPU model's tensors live on cuda:0."""
    x = rng.rand(4, 1, 8, 8).astype("float32")
    y = rng.randint(0, 3, (4, 1)).astype("int64")

    def make():
        return nn.Sequential(nn.Conv2D(1, 2, 3, padding=1), nn.ReLU(), nn.MaxPool2D(2), nn.Flatten(), nn.Linear(32, 3))

    results = []
    state = None
    for where in ("cpu", "gpu:0"):
        device.set_device(where)
        net = make()
        if state is None:
            state = {k: v.numpy() for k, v in net.state_dict().items()}
        net.set_state_dict(state)
        opt = optimizer.Adam(learning_rate=0.01, parameters=net.parameters())
        loss = F.cross_entropy(net(t(x)), t(y))
        loss.backward()
        grads = [p.grad.numpy() for p in net.parameters()]
        opt.step()
        assert all(p._t.device.type == ("cuda" if where != "cpu" else "cpu") for p in net.parameters())
        results.append((loss.numpy(), grads, [p.numpy() for p in net.parameters()]))
    (l0, g0, p0), (l1, g1, p1) = results
    np.testing.assert_allclose(l1, l0, rtol=1e-4)
    for a, b in zip(g0 + p0, g1 + p1):
        np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-5)


@pytest.mark.cuda
def test_pinned_tensor_copies_to_the_gpu_without_blocking():
    x = device.to_tensor(rng.rand(256, 256).astype("float32"), place=device.CUDAPinnedPlace())
    assert str(x.place) == "Place(gpu_pinned)" and x._t.is_pinned()
    y = x.cuda(blocking=False)
    assert str(y.place) == "Place(gpu:0)" and y._t.device.type == "cuda"
    np.testing.assert_array_equal(y.numpy(), x.numpy())
    assert y.cuda() is y  # already there: no copy


def test_optimizer_state_round_trips(tmp_path):
    """Adam's moments and beta powers saved with paddle.save and set on a fresh optimizer continue
    the same trajectory."""
    a, g = rng.rand(2, 2).astype("float32"), rng.rand(2, 2).astype("float32")

    def step(opt, p):
        (p * t(g)).sum().backward()
        opt.step()
        opt.clear_grad()

    p1 = _param(a)
    o1 = optimizer.Adam(learning_rate=0.1, parameters=[p1])
    step(o1, p1)
    saving.save(o1.state_dict(), str(tmp_path / "opt.pdopt"))
    assert sorted(o1.state_dict()) == ["p_beta1_pow_acc_0", "p_beta2_pow_acc_0", "p_moment1_0", "p_moment2_0"]
    p2 = _param(p1.numpy())
    o2 = optimizer.Adam(learning_rate=0.1, parameters=[p2])
    o2.set_state_dict(saving.load(str(tmp_path / "opt.pdopt")))
    step(o1, p1)
    step(o2, p2)
    np.testing.assert_allclose(p2.numpy(), p1.numpy(), rtol=1e-6)


@pytest.mark.parametrize("opt", ["SGD", "Adam", "Momentum"])
def test_a_training_step_on_gpu_stays_on_its_device(monkeypatch, opt):
    """A Conv2D/MaxPool2D/Linear step with backward and an optimizer on gpu:0, run with torch's meta
    device standing in for the GPU: every parameter, gradient, optimizer state and result stays on
    that device (nothing made on the CPU and mixed in, which would fail on cuda:0)."""
    from tests.test_ops import meta_for_gpu

    meta_for_gpu(monkeypatch)
    monkeypatch.setattr(device, "_device", None)
    device.set_device("gpu:0")

    class Net(nn.Layer):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2D(1, 4, 3)
            self.pool = nn.MaxPool2D(2, 2)
            self.fc = nn.Linear(4 * 3 * 3, 10)

        def forward(self, x):
            return self.fc(T.flatten(self.pool(F.relu(self.conv(x))), 1))

    net = Net()
    step = getattr(optimizer, opt)(learning_rate=0.1, parameters=net.parameters())
    x = device.to_tensor(np.random.RandomState(0).rand(8, 1, 8, 8).astype("float32"))
    loss = T.mean((net(x) - 1.0) ** 2)
    loss.backward()
    step.step()
    step.clear_grad()
    assert loss._t.device.type == "meta"
    assert all(p._t.device.type == "meta" for p in net.parameters())
    state = [t for t in step.state_dict().values() if hasattr(t, "_t")]
    assert (len(state) > 0) == (opt != "SGD")
    assert all(t._t.device.type == "meta" for t in state)
