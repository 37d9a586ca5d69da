"""Paddle 2.x's device API (fluidcompat/compat/device.py): places, get/set_device, to_tensor and the
Tensor's copies between places."""

from __future__ import annotations

import numpy as np
import pytest

from fluidcompat import places
from fluidcompat.compat import device as paddle
from tests.test_samples import run_sample


@pytest.fixture(autouse=True)
def fresh_device(monkeypatch):
    monkeypatch.setattr(paddle, "_device", None)


def test_seed_snippets_run_unchanged():
    assert run_sample("paddle2_get_device.py") == "device: gpu:0\n"  # --device cpu emulates a GPU
    assert run_sample("paddle2_places.py") == "Place(cpu)\nPlace(gpu:0)\n"


def test_to_tensor_dtype_shape_place_and_repr(monkeypatch):
    monkeypatch.delenv(places.ENV_DEVICE, raising=False)
    x = paddle.to_tensor(1.0, place=paddle.CPUPlace())
    # a Python number becomes shape [1], as in Paddle 2.0 - 2.4 (0-D tensors came later)
    assert (x.shape, x.dtype, str(x.place), x.stop_gradient) == ([1], "float32", "Place(cpu)", True)
    where = "gpu:0" if places.cuda_available() else "cpu"  # Paddle 2's default device
    assert repr(paddle.to_tensor([[1, 2], [3, 4]])) == (
        f"Tensor(shape=[2, 2], dtype=int64, place=Place({where}), stop_gradient=True,\n"
        "       [[1, 2],\n        [3, 4]])"
    )
    y = paddle.to_tensor(np.arange(3, dtype="float64"), dtype="float32", stop_gradient=False)
    assert y.dtype == "float32" and not y.stop_gradient
    np.testing.assert_array_equal(y.numpy(), [0.0, 1.0, 2.0])
    assert paddle.get_device() == where


def test_cuda_cpu_and_pinned_copies_in_cpu_mode(monkeypatch):
    monkeypatch.setenv(places.ENV_DEVICE, "cpu")
    x = paddle.to_tensor([1.0, 2.0], place=paddle.CPUPlace())
    y = x.cuda()
    assert str(y.place) == "Place(gpu:0)" and y is not x
    assert y.cuda() is y and y.cuda(0) is y  # already there: no copy
    assert str(y.cuda(1).place) == "Place(gpu:1)"
    z = y.cpu()
    assert str(z.place) == "Place(cpu)" and z.cpu() is z
    p = x.pin_memory()
    assert str(p.place) == "Place(gpu_pinned)"
    np.testing.assert_array_equal(p.cuda(blocking=False).numpy(), [1.0, 2.0])
    assert str(paddle.set_device("gpu")) == "Place(gpu:0)" and paddle.get_device() == "gpu:0"
    assert str(paddle.to_tensor(3).place) == "Place(gpu:0)"
    assert str(paddle.set_device("cpu")) == "Place(cpu)" and paddle.get_device() == "cpu"


def test_gpu_without_cuda_is_a_clear_error(monkeypatch):
    monkeypatch.delenv(places.ENV_DEVICE, raising=False)
    if places.cuda_available():
        pytest.skip("this machine has CUDA")
    x = paddle.to_tensor([1.0])
    with pytest.raises(places.CUDAUnavailableError, match=r"Place\(gpu:0\) needs CUDA.*--device cpu"):
        x.cuda()
    with pytest.raises(places.CUDAUnavailableError, match=r"Place\(gpu:0\) needs CUDA"):
        paddle.set_device("gpu:0")
    assert paddle.get_device() == "cpu"
    with pytest.raises(ValueError, match=r"like 'cpu', 'gpu' or 'gpu:x'.*Received: 'xpu:0'"):
        paddle.set_device("xpu:0")


def test_seed_repeats_random_numbers():
    import torch

    paddle.seed(7)
    a = torch.rand(3)
    paddle.seed(7)
    assert torch.equal(a, torch.rand(3))
