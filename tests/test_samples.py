"""The user's documents' code samples in samples/, run with `fluidcompat run --device cpu`."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_sample(name: str) -> str:
    proc = subprocess.run(
        [sys.executable, "-m", "fluidcompat", "run", "--device", "cpu", os.path.join(ROOT, "samples", name)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def calls(report: str):
    table = report.split("Event Summary")[-1].splitlines()[3:]
    return {ln.split()[0]: int(ln.split()[1]) for ln in table if ln.strip()}


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


@pytest.mark.parametrize("name", ["device_guard_crop.py", "device_guard_crop_guarded.py"])
def test_crop_program_profiled(name):
    out = run_sample(name)
    assert_complete_report(out, "All", "total time")
    assert calls(out) == {
        "thread0::fill_constant": 20,
        "thread0::shape": 10,
        "thread0::slice": 10,
        "thread0::crop_tensor": 10,
        "thread0::fetch": 10,
    }


def test_start_stop_profiler_at_iterations_2_and_8():
    out = run_sample("profiler_start_stop.py")
    assert_complete_report(out, "All", "total time")
    assert calls(out) == {
        "thread0::fill_constant": 12,
        "thread0::shape": 6,
        "thread0::slice": 6,
        "thread0::crop_tensor": 6,
        "thread0::fetch": 6,
    }


def test_demo_sample():
    assert run_sample("demo_crop.py").splitlines() == [
        "crop_tensor_0.tmp_0 (1, 3, 5, 5) float32 37.5",
        "slice_0.tmp_0 [1 3 5 5] int32",
    ]
