"""The placement planner is pure: GPU plans are checked here without a GPU; CUDA runs are marked."""

from __future__ import annotations

import numpy as np
import pytest

import fluidcompat as fluid
from fluidcompat import places
from fluidcompat.executor.placement import plan_block

L = fluid.layers


def crop_program(guard_slice: bool):
    data1 = L.fill_constant(shape=[1, 3, 8, 8], value=0.5, dtype="float32")
    data2 = L.fill_constant(shape=[1, 3, 5, 5], value=0.5, dtype="float32")
    shape = L.shape(data2)
    if guard_slice:
        with fluid.device_guard("cpu"):
            shape = L.slice(shape, axes=[0], starts=[0], ends=[4])
    else:
        shape = L.slice(shape, axes=[0], starts=[0], ends=[4])
    return L.crop_tensor(data1, shape=shape)


@pytest.fixture(autouse=True)
def no_cpu_mode(monkeypatch):
    monkeypatch.delenv(places.ENV_DEVICE, raising=False)


def test_crop_program_copies_on_gpu():
    crop_program(guard_slice=False)
    plan = plan_block(fluid.default_main_program().global_block(), "cuda:0")
    assert [(p.op.type, p.device) for p in plan.ops] == [
        ("fill_constant", "cuda:0"),
        ("fill_constant", "cuda:0"),
        ("shape", "cuda:0"),
        ("slice", "cuda:0"),
        ("crop_tensor", "cuda:0"),
    ]
    assert [(p.op.type, c.var, c.kind) for p in plan.ops for c in p.copies] == [
        ("slice", "shape_0.tmp_0", "GpuMemcpySync:CPU->GPU"),
        ("crop_tensor", "slice_0.tmp_0", "GpuMemcpySync:GPU->CPU"),
    ]
    assert plan.locations["shape_0.tmp_0"] == "cpu"  # shape writes to host memory


def test_crop_program_guarded_slice_has_no_copies():
    crop_program(guard_slice=True)
    plan = plan_block(fluid.default_main_program().global_block(), "cuda:0")
    assert plan.copies == ()
    assert [p.device for p in plan.ops if p.op.type == "slice"] == ["cpu"]


def test_crop_program_on_cpu_has_no_copies():
    crop_program(guard_slice=False)
    assert plan_block(fluid.default_main_program().global_block(), fluid.CPUPlace()).copies == ()


def test_guarded_embedding_reads_its_table_on_the_cpu():
    ids = L.fill_constant(shape=[1], value=128, dtype="int64")
    with fluid.device_guard("cpu"):
        emb = fluid.embedding(input=ids, size=(1000, 8))
    L.mean(L.l2_normalize(emb, axis=-1))
    plan = plan_block(fluid.default_main_program().global_block(), "cuda:0")
    assert plan.externals["embedding_0.w_0"] == "cpu"
    assert [(p.op.type, c.var, c.kind) for p in plan.ops for c in p.copies] == [
        ("lookup_table_v2", "fill_constant_0.tmp_0", "GpuMemcpySync:GPU->CPU"),
        ("norm", "embedding_0.tmp_0", "GpuMemcpySync:CPU->GPU"),
    ]


def test_force_cpu_and_gpu_guards():
    x = fluid.data("x", [2])
    c = L.less_than(x, x, force_cpu=True)
    with fluid.device_guard("gpu:1"):
        r = L.relu(x)
    plan = plan_block(fluid.default_main_program().global_block(), "cuda:0", ["x"])
    devices = {p.op.output_arg_names[0]: p.device for p in plan.ops}
    assert devices[c.name] == "cpu" and devices[r.name] == "cuda:1"
    assert [c_.kind for c_ in plan.copies] == [
        "GpuMemcpySync:GPU->CPU",
        "GpuMemcpySync:GPU->CPU",
        "GpuMemcpyPeerSync:GPU->GPU",
    ]


@pytest.mark.cuda
@pytest.mark.skipif(not places.cuda_available(), reason="needs a CUDA device")
@pytest.mark.parametrize("guard_slice", [False, True])
def test_crop_program_runs_on_cuda(guard_slice):
    out = crop_program(guard_slice)
    exe = fluid.Executor(fluid.CUDAPlace(0))
    got = exe.run(fetch_list=[out])[0]
    np.testing.assert_array_equal(got, np.full((1, 3, 5, 5), 0.5, "float32"))
