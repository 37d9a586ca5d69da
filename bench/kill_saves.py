"""SIGKILL during checkpoint saves (issue 41): every checkpoint must load as one step or be refused,
and the next save must leave no temporary file.

For each save API a forked child saves step after step (every persistable variable filled with the
step's number) until the parent kills it with SIGKILL at a random moment within about two saves. The
parent then loads the checkpoint with the matching load API into a scope filled with NaN and sorts the
outcome: ``whole`` (every variable holds one step), ``refused`` (the load raised an error naming the
checkpoint's folder or file, and the scope is still NaN), ``mixed`` (variables of different steps:
the failure this guards against) or ``other`` (any other error, or a refused load that changed the
scope). Then it saves once more itself and counts the ``.tmp-`` files left in the folder.

    .venv/bin/python bench/kill_saves.py [--trials 20] [--seed 0] [--dir /tmp/x]

Linux only (fork, SIGKILL).
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import sys
import tempfile
import time

import numpy as np

APIS = ("save_persistables", "save_params", "save_vars", "save_vars_filename", "fluid_save")


def build(width: int = 64, layers: int = 6):
    """A program of ``layers`` fc layers trained with Adam (about 10 persistables a layer)."""
    import fluidcompat as fluid

    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        h = fluid.data("x", [None, width], "float32")
        for _ in range(layers):
            h = fluid.layers.fc(h, width, act="relu")
        loss = fluid.layers.mean(h)
        fluid.optimizer.Adam(0.01).minimize(loss)
    return main


class Harness:
    def __init__(self, api: str, root: str, program=None) -> None:
        import fluidcompat as fluid

        self.fluid, self.api = fluid, api
        self.program = program if program is not None else build()
        self.exe = fluid.Executor(fluid.CPUPlace())
        self.dir = os.path.join(root, api)
        persistable = [v for v in self.program.list_vars() if fluid.io.is_persistable(v)]
        if api == "save_params":
            self.loaded = [v for v in persistable if fluid.io.is_parameter(v)]
        elif api == "save_vars":
            self.loaded = persistable[::2]  # a chosen list of variables
        else:
            self.loaded = persistable
        self.all = persistable

    def fill(self, value: float) -> None:
        scope, place = self.fluid.global_scope(), self.fluid.CPUPlace()
        for v in self.all:
            scope.var(v.name).get_tensor().set(np.full(v.shape, value, dtype="float32"), place)

    def save(self) -> None:
        io, exe, d, prog = self.fluid.io, self.exe, self.dir, self.program
        if self.api == "save_persistables":
            io.save_persistables(exe, d, prog)
        elif self.api == "save_params":
            io.save_params(exe, d, prog)
        elif self.api == "save_vars":
            io.save_vars(exe, d, prog, vars=self.loaded)
        elif self.api == "save_vars_filename":
            io.save_vars(exe, d, prog, vars=self.loaded, filename="all_vars")
        else:
            self.fluid.save(prog, os.path.join(d, "model"))

    def load(self) -> None:
        io, exe, d, prog = self.fluid.io, self.exe, self.dir, self.program
        if self.api == "save_persistables":
            io.load_persistables(exe, d, prog)
        elif self.api == "save_params":
            io.load_params(exe, d, prog)
        elif self.api == "save_vars":
            io.load_vars(exe, d, prog, vars=self.loaded)
        elif self.api == "save_vars_filename":
            io.load_vars(exe, d, prog, vars=self.loaded, filename="all_vars")
        else:
            self.fluid.load(prog, os.path.join(d, "model"), exe)

    def values(self):
        scope = self.fluid.global_scope()
        return np.concatenate([np.array(scope.find_var(v.name).get_tensor()).reshape(-1) for v in self.loaded])

    def outcome(self) -> str:
        """Load the checkpoint into a NaN-filled scope and sort the result."""
        self.fill(float("nan"))
        try:
            self.load()
        except Exception as e:  # noqa: BLE001 (sorted below)
            untouched = bool(np.isnan(self.values()).all())
            return "refused" if untouched and self.dir in str(e) else f"other: {type(e).__name__}: {e}"
        steps = np.unique(self.values())
        return "whole" if len(steps) == 1 and not np.isnan(steps[0]) else f"mixed: steps {steps.tolist()[:6]}"

    def leftovers(self):
        return [n for n in os.listdir(self.dir) if n.startswith(".tmp-")]

    def timed_save(self) -> float:
        t = time.perf_counter()
        self.save()
        return time.perf_counter() - t

    def trial(self, rng: random.Random, k: int, save_time: float) -> dict:
        first = 1000.0 * (k + 1)
        pid = os.fork()
        if pid == 0:  # the child saves until it is killed
            try:
                step = first
                while True:
                    self.fill(step)
                    self.save()
                    step += 1
            finally:
                os._exit(0)
        time.sleep(rng.uniform(0.05, 2.5) * save_time)
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        result = {"outcome": self.outcome(), "left_by_kill": len(self.leftovers())}
        self.fill(-float(k + 1))  # the next save, here
        self.save()
        result["left_after_next_save"] = self.leftovers()
        if self.outcome() != "whole" or self.values()[0] != -float(k + 1):
            result["outcome"] += " (and the next save did not load back)"
        return result


def run(api: str, trials: int, root: str, seed: int = 0, program=None) -> dict:
    """``trials`` kill trials of ``api`` under ``root``; counts of outcomes and leftover files."""
    h = Harness(api, root, program)
    h.fill(-0.5)
    save_time = min(h.timed_save() for _ in range(3))
    rng = random.Random(seed)
    counts = {
        "whole": 0,
        "refused": 0,
        "mixed": 0,
        "other": 0,
        "killed_with_tmp_files": 0,
        "tmp_files_after_next_save": 0,
    }
    details = []
    for k in range(trials):
        r = h.trial(rng, k, save_time)
        kind = r["outcome"].split(":")[0].split(" ")[0]
        counts[kind if kind in counts else "other"] += 1
        counts["killed_with_tmp_files"] += bool(r["left_by_kill"])
        counts["tmp_files_after_next_save"] += len(r["left_after_next_save"])
        if kind not in ("whole", "refused"):
            details.append(r["outcome"])
    counts["save_ms"] = round(1000 * save_time, 1)
    counts["details"] = details[:5]
    return counts


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trials", type=int, default=20)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--dir", default=None)
    ap.add_argument("--api", action="append", choices=APIS)
    args = ap.parse_args()
    root = args.dir or tempfile.mkdtemp(prefix="kill_saves-")
    bad = 0
    for api in args.api or APIS:
        c = run(api, args.trials, root, args.seed)
        bad += c["mixed"] + c["other"] + c["tmp_files_after_next_save"]
        print(api, c, flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
