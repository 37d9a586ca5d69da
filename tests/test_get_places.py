"""``fluid.layers.device.get_places`` and the ``get_places`` op (fluid 1.8.5's PLACE_LIST of
``device_count`` places; its layer's names and deprecation notice recorded from fluid 1.8.5)."""

from __future__ import annotations

import os

import pytest
import torch

import fluidcompat as fluid
from fluidcompat.layers.device import get_places
from fluidcompat_ops import lookup
from fluidcompat_ops.registry import bind_torch


def _places(device_count, device_type, device="cpu"):
    bind_torch()
    attrs = {"device_count": device_count, "device_type": device_type, "_device": torch.device(device)}
    return lookup("get_places").kernel({}, attrs)["Out"][0]


def test_layer_makes_a_place_list_variable_and_the_op(capsys):
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        every = get_places()
        three = get_places(device_count=3, device_type="CPU")
    assert every.name == "get_places_0.out_0" and three.name == "get_places_1.out_0"
    assert every.type == fluid.core.VarDesc.VarType.PLACE_LIST
    first, second = main.global_block().ops
    assert (first.attr("device_count"), first.attr("device_type")) == (0, "AUTO")  # the op's defaults
    assert (second.attr("device_count"), second.attr("device_type")) == (3, "CPU")
    notice = "API get_places is deprecated since 0.15.0. Please use ParallelExecutor instead.\n"
    assert capsys.readouterr().err == notice * 2
    assert fluid.Executor(fluid.CPUPlace()).run(main) == []


def test_kernel_gives_the_places():
    assert _places(3, "CPU") == [fluid.CPUPlace()] * 3
    assert _places(0, "CPU") == [fluid.CPUPlace()] * os.cpu_count()  # one per core
    assert _places(2, "AUTO") == [fluid.CPUPlace()] * 2  # the executor's kind: CPU here


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the refusal on a machine without GPUs")
def test_cuda_places_without_gpus_are_refused():
    with pytest.raises(ValueError, match="cannot tell the GPU device count"):
        _places(0, "CUDA")
    with pytest.raises(ValueError, match="only 0 CUDA devices found, cannot set device_count to 2"):
        _places(2, "CUDA")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
def test_cuda_places():
    n = torch.cuda.device_count()
    assert _places(0, "CUDA") == [fluid.CUDAPlace(i) for i in range(n)]
    assert _places(1, "AUTO", "cuda:0") == [fluid.CUDAPlace(0)]


@pytest.mark.parametrize("count,kind,text", [(1, "XPU", "device_type must be one of"), (-1, "CPU", ">= 0")])
def test_bad_attributes_are_refused(count, kind, text):
    with pytest.raises(ValueError, match=text):
        _places(count, kind)
