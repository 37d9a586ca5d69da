"""Build time against program size, and memory against a clone made every step.

- build: a training program of N ops (a chain of small fc layers, its backward and SGD; six ops a
  layer) built, then ``str(program)``, ``clone(for_test=True)`` and the executor's first run, each
  size in processes of its own (each phase's best of three); the ratio 20,000 ops / 2,000 ops
  (linear would be 10).
- clone: 3,000 training steps of a small regression model with ``main.clone(for_test=True)`` and a
  run of the clone every step (a fluid-era habit): the resident memory growth from step 100 to the
  end, under fluidcompat and under fluid 1.8.5 (``../shared/tools/fluid18``).

    .venv/bin/python bench/program_scaling.py [--sizes 2000,20000] [--steps 3000] [--no-fluid]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
FLUID18 = os.path.join(ROOT, "..", "shared", "tools", "fluid18")

BUILD = textwrap.dedent(
    """
    import json, sys, time
    import numpy as np
    import paddle.fluid as fluid

    ops_wanted = int(sys.argv[1])
    t = {}
    t0 = time.perf_counter()
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [None, 4], "float32")
        h = x
        for _ in range(max(1, (ops_wanted - 4) // 6)):
            h = fluid.layers.fc(h, 4)
        loss = fluid.layers.mean(h)
        fluid.optimizer.SGD(0.01).minimize(loss)
    t["build"] = time.perf_counter() - t0
    t0 = time.perf_counter(); str(main); t["str"] = time.perf_counter() - t0
    t0 = time.perf_counter(); main.clone(for_test=True); t["clone"] = time.perf_counter() - t0
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    t0 = time.perf_counter()
    exe.run(main, feed={"x": np.ones((2, 4), "float32")}, fetch_list=[loss])
    t["first_run"] = time.perf_counter() - t0
    t["ops"] = len(main.global_block().ops)
    print(json.dumps(t))
    """
)

CLONE = textwrap.dedent(
    """
    import json, os, sys
    import numpy as np
    import paddle.fluid as fluid

    def rss():
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [None, 13], "float32")
        y = fluid.data("y", [None, 1], "float32")
        p = fluid.layers.fc(fluid.layers.fc(x, 32, act="relu"), 1)
        loss = fluid.layers.mean(fluid.layers.square_error_cost(p, y))
        fluid.optimizer.SGD(0.01).minimize(loss)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    rng = np.random.RandomState(0)
    feed = {"x": rng.rand(16, 13).astype("float32"), "y": rng.rand(16, 1).astype("float32")}
    steps = int(sys.argv[1])
    for step in range(steps):
        test_prog = main.clone(for_test=True)
        exe.run(main, feed=feed, fetch_list=[loss])
        exe.run(test_prog, feed=feed, fetch_list=[loss])
        if step == 100:
            start = rss()
    print(json.dumps({"growth": rss() - start}))
    """
)


def _run(cmd, script: str, *args: str) -> dict:
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(script)
    try:
        env = dict(os.environ, CPU_NUM="1", OMP_NUM_THREADS="1")
        out = subprocess.run(cmd + [f.name, *args], capture_output=True, text=True, env=env, check=False)
    finally:
        os.unlink(f.name)
    for line in reversed(out.stdout.splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    raise RuntimeError(f"{' '.join(cmd)} failed:\n{out.stderr[-2000:]}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="2000,20000")
    ap.add_argument("--steps", type=int, default=3000)
    ap.add_argument("--repeat", type=int, default=3, help="processes per size (the best is shown)")
    ap.add_argument("--no-fluid", action="store_true", help="skip fluid 1.8.5")
    a = ap.parse_args()
    ours = [os.path.join(ROOT, ".venv", "bin", "fluidcompat"), "run", "--device", "cpu"]
    if not os.path.exists(ours[0]):
        ours = [sys.executable, "-m", "fluidcompat", "run", "--device", "cpu"]
    sizes = [int(s) for s in a.sizes.split(",")]
    rows = []
    for n in sizes:  # each phase's best of a.repeat processes (a busy machine only adds time)
        runs = [_run(ours, BUILD, str(n)) for _ in range(a.repeat)]
        rows.append({k: min(r[k] for r in runs) for k in runs[0]})
    print("# build (seconds)      ops    build      str    clone  first run")
    for r in rows:
        print(
            f"  fluidcompat  {r['ops']:>9,} {r['build']:8.2f} {r['str']:8.2f} {r['clone']:8.2f} {r['first_run']:10.2f}"
        )
    first, last = rows[0], rows[-1]
    for k in ("build", "str", "clone", "first_run"):
        print(f"# {k}: {last['ops']:,} ops / {first['ops']:,} ops = {last[k] / first[k]:.1f}x")
    total = [r["build"] + r["str"] + r["clone"] + r["first_run"] for r in rows]
    print(f"# all four: {total[-1] / total[0]:.1f}x (ops {last['ops'] / first['ops']:.1f}x)")
    growth = _run(ours, CLONE, str(a.steps))["growth"]
    print(
        f"# clone every step, {a.steps:,} steps, memory growth from step 100: fluidcompat {growth / 1e6:.2f} MB", end=""
    )
    if not a.no_fluid and os.path.exists(FLUID18):
        theirs = _run([FLUID18], CLONE, str(a.steps))["growth"]
        print(f", fluid 1.8.5 {theirs / 1e6:.2f} MB")
    else:
        print()


if __name__ == "__main__":
    main()
