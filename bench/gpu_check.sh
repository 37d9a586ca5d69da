#!/usr/bin/env bash
# The GPU checks of the placement and speed work, as one command for a lent GPU machine:
#   bash bench/gpu_check.sh          logs under $OUT (default /tmp/gpu_check), a summary on stdout
# 1. the tests marked `cuda`, and beside them (other cores) the rest of the suite, on a machine that
#    has CUDA; 2. the docs' samples on gpu:0 with their GpuMemCpy Summary and the placement plan;
# 3. the cuda:0 benchmark table (CUDA graphs, torch.compile, GPU peak memory), the devices
#    chapter's table, the launch counts and prices, and where the host's time goes (host_profile.log). Each stage has its own time limit (T_TESTS, T_BENCH seconds), so one that
#    hangs leaves the others' results. Uses pytest-xdist and pytest-timeout where installed.
#    OTHER_TESTS=FILE: instead of the rest of the suite, the test ids FILE lists (one a line);
#    BENCH_ARGS: more arguments for run_all.py (--no-compile).
set -u
OUT=${OUT:-/tmp/gpu_check}
mkdir -p "$OUT"
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
PY=${PY:-python3}

{
    date -u
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
    $PY -c 'import sys, torch, numpy; print("python", sys.version.split()[0], "torch", torch.__version__,
        "numpy", numpy.__version__, torch.cuda.get_device_name(0), "cpus", __import__("os").cpu_count())'
} 2>&1 | tee "$OUT/info.txt"

# the console script (test_launcher runs it), over this checkout; nothing is fetched
$PY -m pip install -q --no-deps --no-build-isolation --no-index -e . >"$OUT/install.log" 2>&1 ||
    echo "(pip install -e . failed: see install.log; the console-script tests will fail)"

pytest_args=(-p no:logging -p no:cacheprovider -v)
other=(-m "not cuda" tests)
[ -n "${OTHER_TESTS:-}" ] && mapfile -t other <"$OTHER_TESTS"
parallel() { $PY -c 'import xdist' 2>/dev/null && echo "-n $1"; }
$PY -c 'import pytest_timeout' 2>/dev/null && pytest_args+=(--timeout 150)
export OMP_NUM_THREADS=2 # 14 test processes share the cores
# shellcheck disable=SC2046
timeout "${T_TESTS:-180}" $PY -m pytest "${pytest_args[@]}" -m cuda $(parallel 6) tests >"$OUT/cuda_tests.log" 2>&1 &
# shellcheck disable=SC2046
timeout "${T_TESTS:-180}" $PY -m pytest "${pytest_args[@]}" $(parallel 8) "${other[@]}" >"$OUT/other_tests.log" 2>&1 &
wait
unset OMP_NUM_THREADS

{
    for s in device_guard_crop device_guard_crop_guarded control_flow_case control_flow_case_guarded; do
        echo "=== samples/$s.py --device gpu"
        timeout 60 $PY -m fluidcompat run --device gpu samples/$s.py 2>&1
        echo "=== rc $?"
    done
    echo "=== samples/device_guard_crop.py --device gpu --explain-placement (plan only, stderr)"
    timeout 60 $PY -m fluidcompat run --device gpu --explain-placement samples/device_guard_crop.py 2>&1 >/dev/null
} >"$OUT/reports.txt"

# shellcheck disable=SC2086
timeout "${T_BENCH:-170}" $PY bench/run_all.py --cuda-only ${BENCH_ARGS:-} >"$OUT/bench.log" 2>&1
echo "=== rc $?" >>"$OUT/bench.log"
timeout 40 $PY bench/paddle2_devices.py >>"$OUT/bench.log" 2>&1
timeout 60 $PY bench/gpu_launches.py >>"$OUT/bench.log" 2>&1
timeout 90 $PY bench/gpu_host_profile.py >"$OUT/host_profile.log" 2>&1

echo "##### summary"
for log in cuda_tests other_tests; do
    echo "--- $log: $(grep -c 'PASSED' "$OUT/$log.log") passed"
    grep -E 'FAILED|ERROR' "$OUT/$log.log" | sed 's/^\[gw[0-9]*\] \[ *[0-9]*%\] //' | sort -u | head -60
    tail -n 2 "$OUT/$log.log"
done
echo "--- GpuMemCpy Summary per sample"
grep -E '^=== |GpuMemcpy|synchronous copies' "$OUT/reports.txt"
echo "--- bench"
cat "$OUT/bench.log"
