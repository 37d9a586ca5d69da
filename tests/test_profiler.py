"""The profiler on real runs: reports, tracer options, sessions, bad arguments, files and timers."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import fluidcompat as fluid
from fluidcompat import profiler
from fluidcompat.profiler.events import RECORDER
from tests.report_rows import tables

L = fluid.layers


@pytest.fixture(autouse=True)
def profiler_off():
    yield
    if RECORDER.enabled:
        RECORDER.stop()


def two_layer_net():
    x = fluid.data("x", [None, 4])
    y = L.fc(L.fc(x, 3, act="relu"), 2)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(fluid.default_startup_program())
    return exe, y, {"x": np.ones((2, 4), "float32")}


def rows(text):
    """The last report's Event Summary rows as (name, calls)."""
    return [(name, n) for (_, name), n in tables(text)[-1][0].items()]


def test_context_report(capsys, tmp_path):
    exe, y, feed = two_layer_net()
    with profiler.profiler("CPU", "total", profile_path=str(tmp_path / "profile")):
        for _ in range(3):
            exe.run(feed=feed, fetch_list=[y])
    out = capsys.readouterr().out
    assert out.startswith("\n------------------------->     Profiling Report     <-------------------------\n\n")
    assert "Place: CPU\nTime unit: ms\nSorted by total time in descending order in the same thread\n" in out
    assert re.search(r"Total time: [\d.e-]+\n  Computation time       Total: ", out)
    assert "GpuMemcpy                Calls: 0           Total: 0           Ratio: 0%\n" in out
    got = dict(rows(out))
    assert got == {
        "thread0::feed": 3,
        "thread0::mul": 6,
        "thread0::elementwise_add": 6,
        "thread0::relu": 3,
        "thread0::fetch": 3,
    }
    assert not RECORDER.enabled and (tmp_path / "profile").stat().st_size > 0


def test_opdetail_and_allopdetail(capsys):
    exe, y, feed = two_layer_net()
    with profiler.profiler("All", None, "", "OpDetail"):
        exe.run(feed=feed, fetch_list=[y])
    out = capsys.readouterr().out
    assert "  thread0::mul/prepare_data" in out and "  thread0::mul/compute" in out
    assert "CPU Time (Ratio)        GPU Time (Ratio)" in out
    with profiler.profiler("CPU", None, "", "AllOpDetail"):
        exe.run(feed=feed, fetch_list=[y])
    out = capsys.readouterr().out
    assert re.search(r"\n  mul0 +1 ", out) and re.search(r"\n  mul1 +1 ", out)
    assert re.search(r"\n    mul0/compute +1 ", out)


def test_gpu_state_on_cpu_reads_zero(capsys):
    exe, y, feed = two_layer_net()
    with profiler.profiler("GPU", None, ""):
        exe.run(feed=feed, fetch_list=[y])
    out = capsys.readouterr().out
    assert "Place: CUDA" in out and re.search(r"thread0::mul +2 +0 +0 +0 +0 +-nan", out)


def test_start_stop_and_reset(capsys):
    exe, y, feed = two_layer_net()
    for i in range(10):
        if i == 2:
            profiler.start_profiler("All")
        if i == 5:
            profiler.reset_profiler()
        if i == 8:
            profiler.stop_profiler("calls", "")
        exe.run(feed=feed, fetch_list=[y])
    got = dict(rows(capsys.readouterr().out))
    assert got["thread0::mul"] == 6 and got["thread0::relu"] == 3  # iterations 5, 6, 7


def test_bad_arguments_keep_the_profiler_usable(capsys):
    exe, y, feed = two_layer_net()
    with pytest.raises(ValueError, match=r"^The state must be 'CPU' or 'GPU' or 'All'\.$"):
        profiler.start_profiler("cpu")
    with pytest.raises(ValueError, match=r"^tracer option must be 'Default', 'OpDetail', 'AllOpDetail'\.$"):
        profiler.start_profiler("CPU", "Detail")
    assert not RECORDER.enabled
    with pytest.raises(ValueError, match="The sorted_key must be None or in 'calls', 'total', 'max', 'min'"):
        with profiler.profiler("CPU", "time"):
            pass
    assert not RECORDER.enabled
    profiler.start_profiler("CPU")
    exe.run(feed=feed, fetch_list=[y])
    with pytest.raises(ValueError, match="The sorted_key must be None"):
        profiler.stop_profiler("time")
    assert RECORDER.enabled
    profiler.stop_profiler(None, "")
    assert "thread0::mul" in capsys.readouterr().out and not RECORDER.enabled
    with pytest.raises(ValueError, match=r"^The output mode must be 'kvp' or 'csv'\.$"):
        with profiler.cuda_profiler("out.txt", "json"):
            pass


def test_exception_in_the_block_still_prints(capsys):
    exe, y, feed = two_layer_net()
    with pytest.raises(KeyError):
        with profiler.profiler("CPU", None, ""):
            exe.run(feed=feed, fetch_list=[y])
            raise KeyError("boom")
    assert "thread0::mul" in capsys.readouterr().out and not RECORDER.enabled


def test_profile_file_to_chrome_trace(tmp_path, capsys):
    exe, y, feed = two_layer_net()
    with profiler.profiler("CPU", None, str(tmp_path / "profile"), "OpDetail"):
        exe.run(feed=feed, fetch_list=[y])
    capsys.readouterr()
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "fluidcompat.timeline",
            "--profile_path",
            str(tmp_path / "profile"),
            "--timeline_path",
            str(tmp_path / "timeline"),
        ],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    trace = json.load(open(tmp_path / "timeline"))
    names = [e["name"] for e in trace["traceEvents"] if e["ph"] == "X"]
    assert "mul" in names and "mul/compute" in names and "feed" in names
    spans = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    assert all(e["dur"] >= 0 and e["tid"] == 0 for e in spans)
    assert any(e["name"] == "process_name" and e["args"]["name"] == "trainer: CPU ops" for e in trace["traceEvents"])


def test_timers(capsys):
    profiler.reset_timers()

    @profiler.timer("decorated")
    def work():
        return sum(range(1000))

    for _ in range(3):
        work()
    with profiler.timer("block"):
        work()
    profiler.print_all_status()
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == ["Timer", "total(ms)", "avg(ms)", "max(ms)", "min(ms)", "count"]
    counts = {ln.split()[0]: int(ln.split()[-1]) for ln in out[1:]}
    assert counts == {"decorated": 4, "block": 1}


def test_cuda_profiler_without_cuda_warns():
    if fluid.places.cuda_available():
        pytest.skip("checks the machine without CUDA")
    with pytest.warns(UserWarning, match="no CUDA device"):
        with profiler.cuda_profiler("out.txt"):
            pass


def test_vlog_lines_match_fluid():
    """GLOG_vmodule=operator=3,...: the same lines as fluid 1.8.5 printed, minus time and thread id."""
    import os

    golden = os.path.join(os.path.dirname(os.path.abspath(__file__)), "golden")
    env = dict(os.environ, GLOG_vmodule="operator=3,feed_op=3,fetch_op=3,tensor_util=3")
    env.pop(fluid.places.ENV_DEVICE, None)  # fluid's CPU build printed these (tensor_util.cc)
    proc = subprocess.run(
        [sys.executable, "-m", "fluidcompat", "run", os.path.join(golden, "vlog_ops.py")],
        capture_output=True,
        text=True,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr

    def messages(text):
        return [
            re.sub(r"^I\d{4} [\d:.]+ \d+ (\w+\.c[cu]:\d+)\] ", r"\1] ", ln)
            for ln in text.splitlines()
            if re.match(r"I\d{4} ", ln)
        ]

    with open(os.path.join(golden, "vlog_ops.txt")) as f:
        text = f.read()
    if fluid.places.cuda_available():  # fluid's CUDA build logged its copies from tensor_util.cu
        text = text.replace("tensor_util.cc:", "tensor_util.cu:")
    assert messages(proc.stderr) == messages(text)


def test_vlog_off_by_default(capfd):
    exe, y, feed = two_layer_net()
    exe.run(feed=feed, fetch_list=[y])
    assert "operator.cc" not in capfd.readouterr().err


def _crop_program_on_cuda(monkeypatch):
    """The docs' crop program (no device guard) and an Executor on CUDAPlace(0)."""
    monkeypatch.delenv(fluid.places.ENV_DEVICE, raising=False)
    data1 = L.fill_constant(shape=[1, 3, 8, 8], value=0.5, dtype="float32")
    data2 = L.fill_constant(shape=[1, 3, 5, 5], value=0.5, dtype="float32")
    shape = L.slice(L.shape(data2), axes=[0], starts=[0], ends=[4])
    return L.crop_tensor(data1, shape=shape), fluid.Executor(fluid.CUDAPlace(0))


@pytest.mark.cuda
@pytest.mark.skipif(not fluid.places.cuda_available(), reason="needs a CUDA device")
def test_gpu_times_and_copies_on_cuda(capsys, monkeypatch):
    """On a GPU: compute phases get CUDA-event times, and the crop program's two copies show up."""
    out, exe = _crop_program_on_cuda(monkeypatch)
    with profiler.profiler("All", None, "", "OpDetail"):
        for _ in range(3):
            exe.run(fetch_list=[out])
    text = capsys.readouterr().out
    # per run: the two planned copies and the fetch's copy to the host (fluid's fetch op, TensorCopySync)
    assert re.search(r"GpuMemcpySync +Calls: 9 ", text)
    assert "GpuMemcpySync:CPU->GPU" in text and "GpuMemcpySync:GPU->CPU" in text
    compute = [ln for ln in text.splitlines() if "thread0::crop_tensor/compute" in ln][0]
    assert not re.search(r"0\.000000 \(0\.000000\) +\S+ +\S+ +\S+ +\S+ *$", compute)


@pytest.mark.cuda
@pytest.mark.skipif(not fluid.places.cuda_available(), reason="needs a CUDA device")
def test_gpu_times_on_op_rows_on_cuda(capsys, monkeypatch):
    """The docs' report on a GPU (state 'All', Default tracer, a CompiledProgram): the GPU Time column
    of each op with a kernel or a copy and of Fetch is not zero, and Fetch's equals its copy's, as in
    fluid 1.8.5's report in the docs (NOTE: [Timing GPU ops])."""
    out, exe = _crop_program_on_cuda(monkeypatch)
    compiled = fluid.CompiledProgram(fluid.default_main_program())
    with profiler.profiler("All", "total"):
        for _ in range(3):
            exe.run(compiled, fetch_list=[out])
    merged = capsys.readouterr().out.split("Profiling Report")[1]
    gpu = {}
    for ln in merged.split("Event Summary")[1].splitlines()[3:]:
        row = re.match(r" *(\S.*?) {2,}\d+ +\S+ +\S+ \(\S+\) +(\S+) \(", ln)
        if row is None:
            break
        gpu.setdefault(row.group(1), []).append(float(row.group(2)))
    for name in ("fill_constant", "slice", "crop_tensor", "Fetch", "GpuMemcpySync:CPU->GPU", "GpuMemcpySync:GPU->CPU"):
        assert gpu[name][0] > 0, (name, gpu)
    assert gpu["Fetch"] == gpu["GpuMemcpyAsync:GPU->CPU"]


def _run_script(tmp_path, body: str, **env: str) -> str:
    """What a profiling script (``body`` after the imports) prints under ``fluidcompat run``, in a
    subprocess: the profiler's thread lists last the process."""
    script = tmp_path / "script.py"
    script.write_text(
        "import numpy as np\nimport paddle.fluid as fluid\nimport paddle.fluid.profiler as profiler\n" + body
    )
    command = [sys.executable, "-m", "fluidcompat", "run", str(script)]
    proc = subprocess.run(command, capture_output=True, text=True, env=dict(os.environ, **env))
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_a_session_after_a_compiled_program_prints_both_reports(tmp_path):
    """As in fluid 1.8.5 (tests/golden/profiler/second_session_after_pe.txt): once a CompiledProgram
    was profiled, a later plain Executor session prints the merged report and the per-thread one,
    whose rows are all the executor thread's. (In a subprocess: the thread lists last the process.)"""
    stdout = _run_script(
        tmp_path,
        "x = fluid.data('x', [None, 4])\n"
        "y = fluid.layers.fc(x, 2)\n"
        "exe = fluid.Executor(fluid.CPUPlace())\n"
        "exe.run(fluid.default_startup_program())\n"
        "feed = {'x': np.ones((3, 4), 'float32')}\n"
        "with profiler.profiler('CPU', None):\n"
        "    exe.run(fluid.CompiledProgram(fluid.default_main_program()), feed=feed, fetch_list=[y])\n"
        "print('=== second session')\n"
        "with profiler.profiler('CPU', None):\n"
        "    exe.run(feed=feed, fetch_list=[y])\n",
    )
    first, second = stdout.split("=== second session")
    for out in (first, second):
        assert out.count("Profiling Report") == 2
        assert out.count("Note! This Report merge all thread info into one.") == 1
    merged, per_thread = tables(second)
    assert set(merged[0]) == {("", n) for n in ("feed", "mul", "elementwise_add", "fetch")}
    assert set(per_thread[0]) == {("", "thread0::" + n) for n in ("feed", "mul", "elementwise_add", "fetch")}
    assert ("", "thread1::Fetch") in tables(first)[1][0]


# a training program compiled with_data_parallel, for the scripts below
_TRAIN = (
    "x = fluid.data('x', [None, 4])\n"
    "loss = fluid.layers.mean(fluid.layers.fc(x, 2))\n"
    "fluid.optimizer.SGD(0.1).minimize(loss)\n"
    "exe = fluid.Executor(fluid.CPUPlace())\n"
    "exe.run(fluid.default_startup_program())\n"
    "train = fluid.CompiledProgram(fluid.default_main_program()).with_data_parallel(loss_name=loss.name)\n"
)


def test_a_data_parallel_run_on_two_places_records_each_place_on_its_worker(tmp_path):
    """CPU_NUM=2 (tests/golden/profiler/cpu_parallel_executor_2threads.txt is such a run in fluid 1.8.5):
    the merged report and the per-thread one; each place's forward and backward ops on a worker list of
    its own, the all-reduce of the gradients, the optimizer and the fetch on place 0's, the parallel
    executor's spans on the calling thread, the loss gradient's fill as 'Scale LossGrad' (one event, no
    phases). fluid ran the optimizer on every place; fluidcompat runs it once."""
    stdout = _run_script(
        tmp_path,
        _TRAIN + "with profiler.profiler('CPU', 'calls'):\n"
        "    for _ in range(3):\n"
        "        print(exe.run(train, feed={'x': np.ones((4, 4), 'float32')}, fetch_list=[loss])[0].shape)\n",
        CPU_NUM="2",
    )
    assert stdout.count("(2,)") == 3
    (merged, _), (per_thread, _) = tables(stdout)
    forward = ("mul", "elementwise_add", "mean", "mean_grad", "elementwise_add_grad", "mul_grad")
    for op in forward:
        assert merged[("", op)] == 6 and per_thread[("", "thread1::" + op)] == per_thread[("", "thread2::" + op)] == 3
    assert per_thread[("", "thread1::sgd")] == 6 and ("", "thread2::sgd") not in per_thread
    assert per_thread[("", "thread1::fused_all_reduce")] == 3 and per_thread[("", "thread1::Fetch")] == 3
    spans = ("FastThreadedSSAGraphExecutorPrepare", "ScopeBufferedMonitor::pre_local_exec_scopes_process")
    assert all(per_thread[("", "thread0::" + s)] == 3 for s in spans)
    assert per_thread[("", "thread0::InitLocalVars")] == 1
    assert merged[("", "Scale LossGrad")] == 6 and per_thread[("", "thread2::Scale LossGrad")] == 3
    assert not any(name.startswith(("fill_constant", "scale")) for _, name in merged)


def test_a_compiled_training_program_shows_scale_lossgrad(tmp_path):
    """fluid 1.8.5's parallel executor on one place (CPU_NUM=1): the loss gradient's fill is a
    'Scale LossGrad' event without phases, not fill_constant (OpDetail shows no children for it)."""
    stdout = _run_script(
        tmp_path,
        _TRAIN + "for tracer in ('Default', 'OpDetail'):\n"
        "    with profiler.profiler('CPU', 'calls', tracer_option=tracer):\n"
        "        for _ in range(3):\n"
        "            exe.run(train, feed={'x': np.ones((4, 4), 'float32')}, fetch_list=[loss])\n",
        CPU_NUM="1",
    )
    reports = tables(stdout)
    assert len(reports) == 4  # merged and per thread, per session
    for rows, _ in reports[::2]:
        assert rows[("", "Scale LossGrad")] == 3 and not any("fill_constant" in name for _, name in rows)
        assert not any(parent == "Scale LossGrad" for parent, _ in rows)
    assert ("mean", "mean/compute") in reports[2][0]
