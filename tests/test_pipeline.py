"""fluid.optimizer.PipelineOptimizer: the sections against fluid 1.8.5 (golden), their runs in turn
per batch, each on its place, and the errors for bad arguments."""

from __future__ import annotations

import numpy as np
import pytest

import fluidcompat as fluid
from fluidcompat import places
from fluidcompat.executor.executor import Executor
from tests.report_rows import tables


def test_sections_and_training_match_fluid():
    """Two and three cut points (SGD; Adam with a decayed learning rate) and an empty cut list: each
    section's ops, input and output sets and variables, the _pipeline_opt entries and minimize's None,
    as fluid 1.8.5; trained through the pipeline (2 epochs of 5 batches), every parameter equals
    fluid 1.8.5's training without it."""
    from tests.test_goldens import load, run_fluidcompat, run_lines

    want = load("pipeline_optimizer.json")
    assert run_fluidcompat("pipeline_optimizer.py") == want
    piped = __import__("json").loads("\n".join(run_lines("pipeline_optimizer.py", TRAIN_WITH_PIPELINE="1")))
    assert piped == want
    assert [len(want[k]["sections"]) for k in ("two", "three", "none")] == [3, 5, 1]


def _model(tmp_path, rows=12):
    rs = np.random.RandomState(5)
    data = tmp_path / "data.txt"
    data.write_text("".join("1 %d 1 %.3f\n" % (rs.randint(0, 6), rs.rand()) for _ in range(rows)))
    x = fluid.data("x", [None, 1], "int64")
    t = fluid.data("t", [None, 1], "float32")
    const = fluid.initializer.Constant
    emb = fluid.layers.embedding(x, [6, 2], param_attr=fluid.ParamAttr("emb", initializer=const(0.2)))
    pred = fluid.layers.fc(emb, 1, param_attr=fluid.ParamAttr("w", initializer=const(0.5)), bias_attr=False)
    loss = fluid.layers.reduce_mean(fluid.layers.square_error_cost(pred, t))
    dataset = fluid.DatasetFactory().create_dataset("QueueDataset")
    dataset.set_use_var([x, t])
    dataset.set_batch_size(4)
    dataset.set_filelist([str(data)])
    return emb, loss, dataset


def _numpy_training(tmp_path):
    """emb (6 x 2) and w (2 x 1) after SGD(0.1) over the data file in batches of 4, in numpy."""
    emb, w = np.full((6, 2), 0.2), np.full((2, 1), 0.5)
    rows = [line.split() for line in (tmp_path / "data.txt").read_text().splitlines()]
    ids = np.array([int(r[1]) for r in rows])
    ts = np.array([float(r[3]) for r in rows])[:, None]
    losses = []
    for b in range(0, len(rows), 4):
        i, t = ids[b : b + 4], ts[b : b + 4]
        e = emb[i]
        d = e @ w - t
        losses.append(float(np.mean(d**2)))
        g_pred = 2 * d / len(i)
        g_w, g_e = e.T @ g_pred, g_pred @ w.T
        w = w - 0.1 * g_w
        np.add.at(emb, i, -0.1 * g_e)
    return emb, w, losses


def test_sections_run_in_turn_with_numpy_values(tmp_path, monkeypatch, capsys):
    """train_from_dataset runs the 3 section programs per batch (never the whole program), hands
    each later section what it reads, prints the fetched loss as fluid did; values as numpy's."""
    emb, loss, dataset = _model(tmp_path)
    fluid.optimizer.PipelineOptimizer(
        fluid.optimizer.SGD(0.1), cut_list=[[emb], [loss]], place_list=[fluid.CPUPlace()] * 3,
        concurrency_list=[1, 1, 1],
    ).minimize(loss)  # fmt: skip
    main = fluid.default_main_program()
    sections = [s["program"] for s in main._pipeline_opt["section_program_list"]]
    ran = []
    real_run = Executor.run
    monkeypatch.setattr(Executor, "run", lambda self, prog, *a, **k: ran.append(prog) or real_run(self, prog, *a, **k))
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(fluid.default_startup_program())
    ran.clear()
    exe.train_from_dataset(main, dataset, fetch_list=[loss], fetch_info=["loss"], print_period=1)
    assert ran == sections * 3
    want_emb, want_w, want_losses = _numpy_training(tmp_path)
    scope = fluid.global_scope()
    np.testing.assert_allclose(np.array(scope.find_var("emb").get_tensor()), want_emb, rtol=1e-5)
    np.testing.assert_allclose(np.array(scope.find_var("w").get_tensor()), want_w, rtol=1e-5)
    out = capsys.readouterr().out.splitlines()
    printed = [float(line.split("[")[1].rstrip("]")) for line in out if "data:" in line]
    np.testing.assert_allclose(printed, want_losses, rtol=1e-4)


def test_a_gpu_section_runs_on_the_gpu(tmp_path, monkeypatch, capsys):
    """place_list [CPU, GPU, CPU] (GPU emulated): the GPU section's parameters are the ones to
    synchronise, its ops run on cuda:0 with the copies onto it in the report, and the values are
    numpy's."""
    monkeypatch.setenv(places.ENV_DEVICE, places.EMULATED_GPU)
    from fluidcompat import profiler

    emb, loss, dataset = _model(tmp_path)
    fluid.optimizer.PipelineOptimizer(
        fluid.optimizer.SGD(0.1), cut_list=[[emb], [loss]], concurrency_list=[1, 1, 1],
        place_list=[fluid.CPUPlace(), fluid.CUDAPlace(0), fluid.CPUPlace()],
    ).minimize(loss)  # fmt: skip
    main = fluid.default_main_program()
    assert main._pipeline_opt["param_need_sync"] == ["w"]
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(fluid.default_startup_program())
    with profiler.profiler("All", "total"):
        exe.train_from_dataset(main, dataset)
    [(rows, memcpy)] = tables(capsys.readouterr().out)
    assert rows[("", "thread0::mul")] == 3  # the GPU section's forward op, once a batch
    # its two inputs from the other places (the embedding rows and the target) onto the GPU each batch
    assert rows[("thread0::feed", "GpuMemcpyAsync:CUDAPinned->GPU")] == int(dict(memcpy)["GpuMemcpyAsync"]) == 6
    want_emb, want_w, _ = _numpy_training(tmp_path)
    np.testing.assert_allclose(np.array(fluid.global_scope().find_var("w").get_tensor()), want_w, rtol=1e-5)
    np.testing.assert_allclose(np.array(fluid.global_scope().find_var("emb").get_tensor()), want_emb, rtol=1e-5)


@pytest.mark.parametrize(
    "kwargs, error, words",
    [
        (dict(cut_list=None), TypeError, "cut_list must be a list"),
        (dict(cut_list=[["emb"], ["loss"]]), TypeError, "cut_list[0] must hold Variables"),
        (dict(place_list=[fluid.CPUPlace()] * 2), ValueError, "2 cut points make 3 sections, so place_list needs 3"),
        (dict(concurrency_list=[1, 0, 1]), ValueError, "concurrency_list must hold positive ints. Received: 0"),
        (dict(place_list=["cpu"] * 3), TypeError, "place_list must hold places"),
        (dict(optimizer="sgd"), TypeError, "optimizer must be a fluid.optimizer Optimizer"),
    ],
)
def test_bad_arguments_are_named(tmp_path, kwargs, error, words):
    emb, loss, _ = _model(tmp_path)
    args = dict(optimizer=fluid.optimizer.SGD(0.1), cut_list=[[emb], [loss]], place_list=[fluid.CPUPlace()] * 3,
                concurrency_list=[1, 1, 1])  # fmt: skip
    args.update(kwargs)
    with pytest.raises(error, match=__import__("re").escape(words)):
        fluid.optimizer.PipelineOptimizer(**args)


def test_a_cut_from_another_program_leaves_the_program_as_it_was(tmp_path):
    emb, loss, _ = _model(tmp_path)
    main = fluid.default_main_program()
    before = [op.type for op in main.global_block().ops]
    other = fluid.Program()
    with fluid.program_guard(other, fluid.Program()):
        stray = fluid.data("stray", [None, 2], "float32")
    pipe = fluid.optimizer.PipelineOptimizer(
        fluid.optimizer.SGD(0.1), cut_list=[[stray], [loss]], place_list=[fluid.CPUPlace()] * 3,
        concurrency_list=[1, 1, 1],
    )  # fmt: skip
    with pytest.raises(ValueError, match="cut_list\\[0\\] variable 'stray' is not in the loss's program"):
        pipe.minimize(loss)
    assert [op.type for op in main.global_block().ops] == before
    assert main._pipeline_opt is None


def test_dygraph_is_refused():
    sgd = fluid.optimizer.SGD(0.1)
    with fluid.dygraph.guard():
        with pytest.raises(Exception, match="In dygraph, don't support PipelineOptimizer"):
            fluid.optimizer.PipelineOptimizer(sgd, [], [fluid.CPUPlace()], [1])


@pytest.mark.cuda
def test_a_gpu_section_on_cuda_gives_numpy_values(tmp_path):
    """place_list [CPU, cuda:0, CPU] on a real GPU: the middle section's ops run there, the values
    are numpy's."""
    emb, loss, dataset = _model(tmp_path)
    fluid.optimizer.PipelineOptimizer(
        fluid.optimizer.SGD(0.1), cut_list=[[emb], [loss]], concurrency_list=[1, 1, 1],
        place_list=[fluid.CPUPlace(), fluid.CUDAPlace(0), fluid.CPUPlace()],
    ).minimize(loss)  # fmt: skip
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(fluid.default_startup_program())
    exe.train_from_dataset(fluid.default_main_program(), dataset)
    want_emb, want_w, _ = _numpy_training(tmp_path)
    np.testing.assert_allclose(np.array(fluid.global_scope().find_var("w").get_tensor()), want_w, rtol=1e-5)
    np.testing.assert_allclose(np.array(fluid.global_scope().find_var("emb").get_tensor()), want_emb, rtol=1e-5)
