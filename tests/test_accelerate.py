"""BuildStrategy.use_torch_compile and use_cuda_graph (fluidcompat/executor/accelerate.py): the same
values as the eager run, and a clean fallback with one message where they cannot run."""

from __future__ import annotations

import numpy as np
import pytest

import fluidcompat as fluid

rng = np.random.RandomState(5)
X = rng.rand(6, 8, 4).astype("float32")
Y = rng.rand(6, 8, 1).astype("float32")


def train(place, **strategy):
    """Four SGD steps of a small regression; returns the losses and the final weights."""
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 3
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [8, 4], "float32")
        y = fluid.data("y", [8, 1], "float32")
        h = fluid.layers.fc(x, 16, act="relu")
        loss = fluid.layers.mean(fluid.layers.square_error_cost(fluid.layers.fc(h, 1), y))
        fluid.optimizer.SGD(learning_rate=0.1).minimize(loss)
    exe = fluid.Executor(place)
    scope = fluid.Scope()
    with fluid.scope_guard(scope):
        exe.run(startup)
        prog = main
        if strategy:
            bs = fluid.BuildStrategy()
            for k, v in strategy.items():
                setattr(bs, k, v)
            prog = fluid.CompiledProgram(main, build_strategy=bs)
        losses = [float(exe.run(prog, feed={"x": X[i], "y": Y[i]}, fetch_list=[loss])[0]) for i in range(6)]
        weights = [np.array(scope.find_var(p.name).get_tensor()) for p in main.all_parameters()]
    return losses, weights


def assert_same(a, b, tol=1e-6):
    np.testing.assert_allclose(a[0], b[0], rtol=tol, atol=tol)
    assert len(a[1]) == len(b[1]) == 4
    for wa, wb in zip(a[1], b[1]):
        np.testing.assert_allclose(wa, wb, rtol=tol, atol=tol)


def test_torch_compile_trains_as_the_eager_run(capsys):
    eager = train(fluid.CPUPlace())
    compiled = train(fluid.CPUPlace(), use_torch_compile=True, torch_compile_backend="aot_eager")
    assert_same(compiled, eager, tol=1e-5)
    assert eager[0][-1] < eager[0][0]
    assert "runs eagerly" not in capsys.readouterr().err


def test_torch_compile_with_a_failing_backend_falls_back_with_a_message(capsys):
    eager = train(fluid.CPUPlace())
    fallback = train(fluid.CPUPlace(), use_torch_compile=True, torch_compile_backend="no_such_backend")
    assert_same(fallback, eager)
    err = capsys.readouterr().err
    assert err.count("fluidcompat: torch.compile could not compile the program") == 1
    assert "no_such_backend" in err and "it runs eagerly" in err


def test_cuda_graph_without_a_gpu_runs_eagerly_and_says_why(capsys, monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    eager = train(fluid.CPUPlace())
    graphed = train(fluid.CPUPlace(), use_cuda_graph=True)
    assert_same(graphed, eager)
    err = capsys.readouterr().err
    assert err.count("CUDA graph capture skipped: CUDA graphs need a GPU; the program runs eagerly") == 1


@pytest.mark.cuda
def test_cuda_graph_replays_the_training_step():
    eager = train(fluid.CUDAPlace(0))
    graphed = train(fluid.CUDAPlace(0), use_cuda_graph=True)
    assert_same(graphed, eager, tol=1e-5)


def graphed_fetches(place):
    """Five runs of ``3 * x`` under use_cuda_graph, each fetched as a LoDTensor (return_numpy=False)."""
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        x = fluid.data("x", [4], "float32")
        y = fluid.layers.scale(x, 3.0)
    bs = fluid.BuildStrategy()
    bs.use_cuda_graph = True
    prog = fluid.CompiledProgram(main, build_strategy=bs)
    exe = fluid.Executor(place)
    return [
        exe.run(prog, feed={"x": np.full(4, i, "float32")}, fetch_list=[y], return_numpy=False)[0] for i in range(5)
    ]


def assert_kept(fetched):
    for i, t in enumerate(fetched):
        np.testing.assert_array_equal(np.array(t), np.full(4, 3.0 * i, "float32"))


@pytest.mark.cuda
def test_cuda_graph_fetched_tensors_keep_their_values():
    """A LoDTensor fetched with return_numpy=False from a replay keeps its value after later replays."""
    assert_kept(graphed_fetches(fluid.CUDAPlace(0)))


@pytest.mark.cuda
def test_cuda_graph_skips_a_program_with_host_reads(capsys):
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        d1 = fluid.layers.fill_constant(shape=[1, 3, 8, 8], value=0.5, dtype="float32")
        d2 = fluid.layers.fill_constant(shape=[1, 3, 5, 5], value=0.5, dtype="float32")
        shape = fluid.layers.slice(fluid.layers.shape(d2), axes=[0], starts=[0], ends=[4])
        out = fluid.layers.crop_tensor(d1, shape=shape)
    bs = fluid.BuildStrategy()
    bs.use_cuda_graph = True
    exe = fluid.Executor(fluid.CUDAPlace(0))
    got = exe.run(fluid.CompiledProgram(main, build_strategy=bs), fetch_list=[out])[0]
    assert got.shape == (1, 3, 5, 5)
    assert "CUDA graph capture skipped" in capsys.readouterr().err


# -- which programs a CUDA graph can take (pure: plans for cuda:0, no GPU needed) --------------------
def gpu_steps(main, fed=()):
    from fluidcompat.executor.interpreter import PreparedBlock
    from fluidcompat.executor.placement import plan_block

    return PreparedBlock(plan_block(main.global_block(), "cuda:0", fed), keep=()).steps


def crop(guard, shape_from_feed=False):
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        d1 = fluid.layers.fill_constant(shape=[1, 3, 8, 8], value=0.5, dtype="float32")
        if shape_from_feed:
            shape = fluid.data("s", [4], "int32")
        else:
            d2 = fluid.layers.fill_constant(shape=[1, 3, 5, 5], value=0.5, dtype="float32")
            with fluid.device_guard(guard):
                shape = fluid.layers.slice(fluid.layers.shape(d2), axes=[0], starts=[0], ends=[4])
        fluid.layers.crop_tensor(d1, shape=shape)
    return main


def test_capturable_programs(monkeypatch):
    from fluidcompat.executor.accelerate import program_not_capturable

    monkeypatch.delenv("FLUIDCOMPAT_DEVICE", raising=False)
    # the tutorial's crop program: slice on the GPU means copies both ways
    why = program_not_capturable(gpu_steps(crop(None)))
    assert why == "op slice needs 'shape_0.tmp_0' copied (GpuMemcpySync:CPU->GPU) during the run"
    # slice guarded to the CPU: crop_tensor reads a host value fixed by the shapes: capturable
    assert program_not_capturable(gpu_steps(crop("cpu"))) is None
    # a shape fed at run time (on the GPU) would be read back to the host each run: refused
    assert program_not_capturable(gpu_steps(crop(None, shape_from_feed=True), fed=["s"])) == (
        "op crop_tensor needs 's' copied (GpuMemcpySync:GPU->CPU) during the run"
    )
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        x = fluid.data("x", [8, 4], "float32")
        loss = fluid.layers.mean(fluid.layers.fc(x, 2))
        fluid.optimizer.SGD(0.1).minimize(loss)
    assert program_not_capturable(gpu_steps(main, fed=["x"])) is None
    with fluid.program_guard(main, fluid.Program()):
        flag = fluid.layers.fill_constant([1], "bool", True)
        fluid.layers.cond(flag, lambda: fluid.layers.scale(loss, 2.0), lambda: fluid.layers.scale(loss, 3.0))
    assert program_not_capturable(gpu_steps(main, fed=["x"])) == "it has control flow (conditional_block)"


# -- the CUDA-graph runner's bookkeeping, with a stand-in graph on the CPU ---------------------------
class FakeGraph:
    """What CUDA graph capture and replay mean, on the CPU: the captured run's inputs and outputs are
    fixed tensors; capture records the run without its effects (in-place updates of the inputs are
    undone, as a real capture runs no kernels); replay runs it again over the same input tensors
    and writes into the same output tensors."""

    replays = 0
    real_captured = None  # CudaGraphed._captured (set by fake_capture)

    def __init__(self):
        self.runner = self.inputs = self.outputs = None

    def replay(self):
        work = dict(self.inputs)
        FakeGraph.real_captured(self.runner, work)  # the run and the copies to the host buffers
        for n, t in self.outputs.items():
            t.copy_(work[n])
        FakeGraph.replays += 1


def fake_capture(monkeypatch):
    """torch.cuda.graph(g) as a context that records into a FakeGraph."""
    import contextlib

    import torch

    from fluidcompat.executor import accelerate

    real_captured = FakeGraph.real_captured = accelerate.CudaGraphed._captured

    @contextlib.contextmanager
    def graph(g):
        recorded = {}

        def capturing(runner, env):
            tensors = {n: t for n, t in env.items() if torch.is_tensor(t)}
            saved = {n: t.clone() for n, t in tensors.items()}
            real_captured(runner, env)
            recorded.update(runner=runner, inputs=tensors, saved=saved, env=env)

        monkeypatch.setattr(accelerate.CudaGraphed, "_captured", capturing)
        try:
            yield
        finally:
            monkeypatch.setattr(accelerate.CudaGraphed, "_captured", real_captured)
        for n, t in recorded["inputs"].items():  # a capture runs nothing: undo in-place updates
            t.copy_(recorded["saved"][n])
        g.runner, g.inputs = recorded["runner"], recorded["inputs"]
        env = recorded["env"]
        g.outputs = {n: t for n, t in env.items() if torch.is_tensor(t) and g.inputs.get(n) is not t}

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a: None)
    monkeypatch.setattr(torch.cuda, "CUDAGraph", FakeGraph)
    monkeypatch.setattr(torch.cuda, "graph", graph)
    # the tensors live in host memory here: only the program's own limits apply
    monkeypatch.setattr(
        accelerate.CudaGraphed,
        "reason_not_capturable",
        lambda self, env: accelerate.program_not_capturable(self.prepared.steps),
    )


def host_fetches(monkeypatch) -> list:
    """A list that gets, for each run of a CUDA-graph runner, whether its fetch came from the host
    buffers the graph filled (NOTE: [Fetches in the graph])."""
    from fluidcompat.executor import accelerate

    from_host = []
    real = accelerate.CudaGraphed.host_fetched

    def host_fetched(self, names):
        got = real(self, names)
        from_host.append(got is not None)
        return got

    monkeypatch.setattr(accelerate.CudaGraphed, "host_fetched", host_fetched)
    return from_host


def test_cuda_graph_runner_replays_as_the_eager_run(monkeypatch, capsys):
    """CudaGraphed's warm-up, capture and replays (new feeds copied into the captured inputs, weights
    updated in place, fetched values handed out as copies) train exactly as the eager run, with a
    stand-in graph that has CUDA graphs' semantics."""
    eager = train(fluid.CPUPlace())
    fake_capture(monkeypatch)
    FakeGraph.replays = 0
    from_host = host_fetches(monkeypatch)
    graphed = train(fluid.CPUPlace(), use_cuda_graph=True)
    assert "runs eagerly" not in capsys.readouterr().err
    assert FakeGraph.replays == 5  # six steps: one warm-up run, then capture + replay, then 4 replays
    # each replayed run's loss from the host buffer the graph copied it into (NOTE: [Fetches in the graph])
    assert from_host == [False] + [True] * 5
    assert_same(graphed, eager)


def test_cuda_graph_runner_hands_out_copies(monkeypatch, capsys):
    """With the stand-in graph: a LoDTensor fetched with return_numpy=False keeps its value after
    later replays (the graph's output buffer is overwritten by each replay)."""
    fake_capture(monkeypatch)
    FakeGraph.replays = 0
    kept = graphed_fetches(fluid.CPUPlace())
    assert FakeGraph.replays == 4 and "runs eagerly" not in capsys.readouterr().err
    assert_kept(kept)


def test_cuda_graph_runner_fetches_right_values_when_the_batch_changes(monkeypatch, capsys):
    """With the stand-in graph: a batch of another size captures the program anew; a fetched value
    whose shape differs from the warm-up run's is fetched from the graph's buffer instead of a host
    buffer made for the old shape (NOTE: [Fetches in the graph]), and every value is numpy's."""
    fake_capture(monkeypatch)
    from_host = host_fetches(monkeypatch)
    changing_batches(fluid.CPUPlace())
    assert "runs eagerly" not in capsys.readouterr().err
    # warm-up; capture and replays for batch 2; batch 3: y no longer fits its host buffer; batch 2 again
    assert from_host == [False, True, True, False, False, True]


def changing_batches(place) -> None:
    """``3 * x`` and its sum under use_cuda_graph, fed batches of 2, then 3, then 2 rows: numpy's values."""
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        x = fluid.data("x", [None, 4], "float32")
        y = fluid.layers.scale(x, 3.0)
        total = fluid.layers.reduce_sum(y)
    bs = fluid.BuildStrategy()
    bs.use_cuda_graph = True
    prog = fluid.CompiledProgram(main, build_strategy=bs)
    exe = fluid.Executor(place)
    for step, batch in enumerate([2, 2, 2, 3, 3, 2]):
        a = np.arange(batch * 4, dtype="float32").reshape(batch, 4) + step
        got_y, got_total = exe.run(prog, feed={"x": a}, fetch_list=[y, total])
        np.testing.assert_array_equal(got_y, a * 3)
        np.testing.assert_allclose(got_total, (a * 3).sum(), rtol=1e-6)


@pytest.mark.cuda
def test_cuda_graph_fetches_right_values_when_the_batch_changes():
    changing_batches(fluid.CUDAPlace(0))
