"""Progress on stderr for work that takes more than a few seconds (tqdm).

- ``elapsed(what)``: one line when slow work starts and one with its time when it ends (only when it
  took over ``quiet_s`` seconds), with a ticking elapsed-time counter between them on a terminal
  (torch.compile's first run: tens of seconds to minutes, with nothing of its own to count).
- ``bar(total, desc)``: a counted bar (dataset generation: 7,000 images, about a second here).
- ``StepCounter``: steps and steps per second (``fluidcompat run --progress`` counts ``exe.run`` calls).

A floor-1 module: it imports nothing of fluidcompat. Everything goes to stderr, so a script's stdout
stays as it was.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from typing import Iterator, Optional

from tqdm import tqdm


def _tty() -> bool:
    return bool(getattr(sys.stderr, "isatty", lambda: False)())


@contextlib.contextmanager
def elapsed(what: str, quiet_s: float = 2.0) -> Iterator[None]:
    """Say ``fluidcompat: <what> ...`` on stderr once the work has taken ``quiet_s`` seconds, tick the
    elapsed time on a terminal, and say how long it took at the end."""
    start = time.perf_counter()
    done = threading.Event()
    shown = []

    def tick() -> None:
        if done.wait(quiet_s):
            return
        sys.stderr.write(f"fluidcompat: {what} ...\n")
        shown.append(True)
        if not _tty():
            return
        with tqdm(desc=f"  {what}", bar_format="{desc}: {elapsed}", file=sys.stderr, leave=False) as t:
            while not done.wait(0.5):
                t.refresh()

    thread = threading.Thread(target=tick, name="fluidcompat-progress", daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()
        if shown:
            sys.stderr.write(f"fluidcompat: {what}: done in {time.perf_counter() - start:.1f} s\n")


def bar(total: int, desc: str, unit: str = "it", delay_s: float = 1.0) -> tqdm:
    """A counted progress bar on stderr, on a terminal only, shown once the work has taken
    ``delay_s`` seconds (tqdm's ``delay``, tqdm 4.60+)."""
    return tqdm(total=total, desc=desc, unit=unit, file=sys.stderr, disable=not _tty(), leave=False, delay=delay_s)


class StepCounter:
    """Counts steps on stderr with their rate: ``exe.run: 1200 steps [00:09, 131.2 steps/s]``. On a
    terminal the line updates in place (at most twice a second); elsewhere (a log file) a line every
    ``log_every_s`` seconds. ``close()`` leaves a last line with the total."""

    def __init__(self, desc: str = "exe.run", unit: str = "steps", log_every_s: float = 30.0) -> None:
        self.desc = desc
        self.unit = unit
        self.count = 0
        self.start = time.perf_counter()
        self._tty = _tty()
        self._last_log = self.start
        self._log_every_s = log_every_s
        self._bar: Optional[tqdm] = None
        if self._tty:
            self._bar = tqdm(desc=desc, unit=" " + unit, file=sys.stderr, mininterval=0.5, leave=False)

    def update(self, n: int = 1) -> None:
        if not self.count:  # the rate counts from the first step (not from the script's imports)
            self.start = self._last_log = time.perf_counter()
        self.count += n
        if self._bar is not None:
            self._bar.update(n)
            return
        now = time.perf_counter()
        if now - self._last_log >= self._log_every_s:
            self._last_log = now
            sys.stderr.write(f"fluidcompat: {self.line()}\n")

    def line(self) -> str:
        took = time.perf_counter() - self.start
        rate = self.count / took if took > 0 else 0.0
        return f"{self.desc}: {self.count} {self.unit} in {took:.1f} s ({rate:.1f} {self.unit}/s)"

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None
        if self.count:
            sys.stderr.write(f"fluidcompat: {self.line()}\n")
