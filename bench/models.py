"""Fluid 1.8 models, fluidcompat against the real fluid 1.8.5, in one run (`make bench-models`).

Each model of `bench/fluid_models.py` runs twice, as separate processes on this machine: under
`fluidcompat run --device cpu` and under fluid 1.8.5 (`../shared/tools/fluid18`, CPU build). Both
start from the same parameters and feed the same batches. Printed per model: steps per second of
both, the ratio of time per step (fluidcompat / fluid 1.8.5; below 1 is faster), and whether the
losses of the first steps agree. The last line is the geometric mean of the ratios.

    python bench/models.py                     # every model
    python bench/models.py --only lstm_crf,gru4rec --steps 10
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SCRIPT = HERE / "fluid_models.py"
FLUID18 = ROOT.parent / "shared" / "tools" / "fluid18"

# Steps timed per model (after the warm-up steps): enough for a second or more a side here.
STEPS = {
    "fit_a_line": 300,
    "mnist_mlp": 200,
    "lenet": 30,
    "resnet_cifar": 15,
    "vgg_cifar": 10,
    "word2vec": 100,
    "movielens": 100,
    "text_cnn": 20,
    "stacked_lstm": 20,
    "lstm_crf": 20,
    "gru4rec": 30,
    "seq2seq": 30,
    "tagspace": 100,
}

# Losses agree when each of the first steps' is within this of the other engine's (relative): float32
# kernels that sum in another order drift apart a little more with every step.
LOSS_RTOL = 2e-3


def _run(cmd: list[str], timeout: float) -> dict:
    env = dict(os.environ, CPU_NUM="1", OMP_NUM_THREADS="1")
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, cwd=HERE)
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT ") :])
    tail = (proc.stdout + proc.stderr).strip().splitlines()[-5:]
    raise RuntimeError(f"{' '.join(cmd[:3])} ... gave no result (exit {proc.returncode}):\n" + "\n".join(tail))


def _engines(python: str) -> dict[str, list[str]]:
    fluidcompat = [python, "-m", "fluidcompat", "run", "--device", "cpu", str(SCRIPT)]
    return {"fluidcompat": fluidcompat, "fluid 1.8.5": [str(FLUID18), str(SCRIPT)]}


def _agree(a: list[float], b: list[float]) -> bool:
    return len(a) == len(b) and all(abs(x - y) <= LOSS_RTOL * max(abs(x), abs(y), 1e-6) for x, y in zip(a, b))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="comma-separated model names")
    parser.add_argument("--steps", type=int, default=0, help="timed steps for every model (default: per model)")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=900)
    args = parser.parse_args(argv)
    names = [n for n in STEPS if not args.only or n in args.only.split(",")]
    if not FLUID18.exists():
        print(f"fluid 1.8.5 runner not found at {FLUID18}", file=sys.stderr)
        return 2
    engines = _engines(sys.executable)
    print(f"# {'model':<14} {'fluidcompat':>14} {'fluid 1.8.5':>14} {'ratio':>7}  losses")
    ratios, bad = [], []
    for name in names:
        steps = args.steps or STEPS[name]
        runs = {}
        for engine, cmd in engines.items():
            runs[engine] = _run(cmd + [name, "--steps", str(steps), "--warmup", str(args.warmup)], args.timeout)
        ours = statistics.median(runs["fluidcompat"]["step_s"])
        theirs = statistics.median(runs["fluid 1.8.5"]["step_s"])
        ratio = ours / theirs
        ratios.append(ratio)
        same = _agree(runs["fluidcompat"]["losses"], runs["fluid 1.8.5"]["losses"])
        if not same:
            bad.append(name)
        print(
            f"  {name:<14} {1 / ours:>9.1f} st/s {1 / theirs:>9.1f} st/s {ratio:>7.2f}  "
            + ("same" if same else f"DIFFER {runs['fluidcompat']['losses']} vs {runs['fluid 1.8.5']['losses']}"),
            flush=True,
        )
    geo = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
    print(f"# geometric mean of the ratios: {geo:.2f} over {len(ratios)} models; slowest {max(ratios):.2f}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
