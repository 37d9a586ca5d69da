"""The user's documents' code samples in samples/, run with `fluidcompat run --device cpu`."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from tests.report_rows import tables

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


GOLDEN = os.path.join(ROOT, "tests", "golden")


def run_sample(name: str, env=None, stderr=False, cwd=ROOT, device="cpu"):
    proc = subprocess.run(
        [sys.executable, "-m", "fluidcompat", "run", "--device", device, os.path.join(ROOT, "samples", name)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=cwd,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    return (proc.stdout, proc.stderr) if stderr else proc.stdout


def golden(path: str) -> str:
    with open(os.path.join(GOLDEN, path)) as f:
        return f.read()


def same_events_as_fluid(got: str, want: str) -> None:
    """The same reports as fluid 1.8.5 printed for a CompiledProgram (its parallel executor): the
    merged table's events and calls, and the per-thread table: the executor thread's rows as fluid's
    thread0, the ops on one worker list where fluid spread them over its worker threads."""
    got_tables, want_tables = tables(got), tables(want)
    assert len(got_tables) == len(want_tables) == 2
    assert got_tables[0] == want_tables[0]

    def one_worker(name):
        thread, _, event = name.partition("::")
        return name if thread in ("", "thread0") or not event else "thread1::" + event

    per_thread = {}
    for (parent, name), n in want_tables[1][0].items():
        key = (one_worker(parent), one_worker(name))
        per_thread[key] = per_thread.get(key, 0) + n
    assert got_tables[1][0] == per_thread


def assert_complete_report(out: str, place: str, sort: str):
    assert out.startswith("\n------------------------->     Profiling Report     <-------------------------\n\n")
    assert f"Place: {place}\nTime unit: ms\nSorted by {sort} in descending order in the same thread\n\n" in out
    assert re.search(
        r"Total time: [\d.e-]+\n  Computation time       Total: [\d.e-]+ +Ratio: [\d.e-]+%\n"
        r"  Framework overhead     Total: [\d.e-]+ +Ratio: [\d.e-]+%\n",
        out,
    )
    assert "GpuMemcpy                Calls: 0           Total: 0           Ratio: 0%\n" in out
    assert "CPU Time (Ratio)        GPU Time (Ratio)" in out


@pytest.mark.parametrize(
    "name,want",
    [("device_guard_crop.py", "seed_s000_2_cpu.txt"), ("device_guard_crop_guarded.py", "seed_s000_3_cpu.txt")],
)
def test_crop_program_profiled(name, want):
    """The docs' crop program runs a CompiledProgram: the merged and the per-thread reports, with the
    parallel executor's events (Prepare, InitLocalVars, ScopeBufferedMonitor, eager_deletion, Fetch)."""
    out = run_sample(name)
    assert_complete_report(out, "All", "total time")
    same_events_as_fluid(out, golden("profiler/" + want))


def test_start_stop_profiler_at_iterations_2_and_8():
    out = run_sample("profiler_start_stop.py")
    assert_complete_report(out, "All", "total time")
    same_events_as_fluid(out, golden("profiler/seed_s004_start_stop_cpu.txt"))


@pytest.mark.parametrize(
    "name,want",
    [
        ("device_guard_crop.py", "seed_s000_docs_gpu.txt"),
        ("device_guard_crop_guarded.py", "seed_s000_docs_gpu_guarded.txt"),
    ],
)
def test_crop_program_on_an_emulated_gpu_reads_as_the_docs_report(name, want):
    """With --device emulated-gpu the crop program's merged report has the events, nesting and calls of
    the docs' report from a GPU: GpuMemcpySync under slice and crop_tensor (gone with slice guarded),
    GpuMemcpyAsync under Fetch, and the same GpuMemCpy Summary counts."""
    out = run_sample(name, device="emulated-gpu")
    (rows, memcpy), _ = tables(out)
    [(want_rows, want_memcpy)] = tables(golden("docs_reports/" + want))
    assert rows == want_rows
    assert memcpy == want_memcpy


@pytest.mark.parametrize(
    "name,want",
    [
        ("control_flow_case.py", "seed_s004_case_gpu.txt"),
        ("control_flow_case_guarded.py", "seed_s004_case_gpu_guarded.txt"),
    ],
)
def test_control_flow_program_on_an_emulated_gpu_reads_as_the_article(name, want):
    """The profiler article's control-flow program (seed 004) with --device emulated-gpu: every count of
    its GpuMemCpy Summary (1,200 / 800 / 400; guarded 600 / 400 / 200) and the calls of every event row,
    select_input's copy of the chosen branch on the device included."""
    [(rows, memcpy)] = tables(run_sample(name, device="emulated-gpu"))
    [(want_rows, want_memcpy)] = tables(golden("docs_reports/" + want))
    assert memcpy == want_memcpy
    assert rows == want_rows


def test_demo_sample():
    assert run_sample("demo_crop.py").splitlines() == [
        "crop_tensor_0.tmp_0 (1, 3, 5, 5) float32 37.5",
        "slice_0.tmp_0 [1 3 5 5] int32",
    ]


@pytest.mark.usefixtures("one_large_table_at_a_time")
@pytest.mark.parametrize("name", ["docs_embedding.py", "docs_embedding_guarded.py"])
def test_docs_embedding_programs_train_a_step(name):
    """The 10,000,000 x 150 embedding (a 5.6 GiB table) and its SGD step run on the CPU; the programs
    print nothing."""
    out, err = run_sample(name, stderr=True)
    assert out == ""
    assert err == "fluidcompat: device cpu requested: GPU places and device_guard('gpu') run on the CPU\n"


def test_fit_a_line_learns(generated_data_home):
    out = run_sample("fit_a_line.py", env=generated_data_home)
    first, last = map(float, re.search(r"test loss went from ([\d.]+) to ([\d.]+)", out).groups())
    assert last < first / 5


@pytest.mark.parametrize("name,floor", [("recognize_digits_mlp.py", 0.5), ("recognize_digits_conv.py", 0.4)])
def test_recognize_digits_learns(generated_data_home, name, floor):
    """On the generated digits (chance: 0.1) the test accuracy the script prints clears the floor."""
    out = run_sample(name, env=generated_data_home)
    accuracy = float(re.findall(r"test accuracy ([\d.]+)", out)[-1])
    assert accuracy > floor, out


def test_samples_without_data_name_the_missing_file(tmp_path):
    env = dict(os.environ)
    env["HOME"] = str(tmp_path)
    proc = subprocess.run(
        [sys.executable, "-m", "fluidcompat", "run", "--device", "cpu", os.path.join(ROOT, "samples", "fit_a_line.py")],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert proc.returncode == 1
    want = f"{tmp_path}/.cache/paddle/dataset/uci_housing/housing.data is missing. fluidcompat does not download"
    assert want in proc.stderr


def test_every_sample_is_run_by_a_test():
    tested = {
        "control_flow_case.py",  # tests/test_control_flow.py
        "control_flow_case_guarded.py",
        "demo_crop.py",
        "device_guard_crop.py",
        "device_guard_crop_guarded.py",
        "profiler_start_stop.py",
        "docs_embedding.py",
        "docs_embedding_guarded.py",
        "fit_a_line.py",
        "recognize_digits_mlp.py",
        "recognize_digits_conv.py",
        "paddle2_get_device.py",  # tests/test_paddle2_device.py
        "paddle2_places.py",
        "paddle2_mnist_train.py",  # tests/test_paddle2_dynamic.py
        "paddle2_data_parallel.py",  # tests/test_distributed.py
    }
    assert set(os.listdir(os.path.join(ROOT, "samples"))) - {"__pycache__"} == tested
