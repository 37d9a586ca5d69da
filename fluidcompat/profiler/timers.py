"""Built-in timers (the legacy guide's ``REGISTER_TIMER_INFO`` / ``printAllStatus``): named wall-clock
timers as a context manager or decorator, and a status table of total/avg/max/min/count per name."""

from __future__ import annotations

import functools
import sys
import threading
import time
from dataclasses import dataclass
from typing import Dict, Optional, TextIO

__all__ = ["timer", "print_all_status", "reset_timers", "TimerStat"]


@dataclass
class TimerStat:
    count: int = 0
    total: float = 0.0
    max: float = 0.0
    min: float = float("inf")

    @property
    def avg(self) -> float:
        return self.total / self.count if self.count else 0.0


_STATS: Dict[str, TimerStat] = {}
_LOCK = threading.Lock()


class timer:
    """``with timer("forward"):`` or ``@timer("forward")``: time the block or call under ``name``."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._start = 0.0

    def __enter__(self) -> "timer":
        self._start = time.perf_counter()
        return self

    def __exit__(self, *exc) -> None:
        ms = (time.perf_counter() - self._start) * 1e3
        with _LOCK:
            s = _STATS.setdefault(self.name, TimerStat())
            s.count += 1
            s.total += ms
            s.max = max(s.max, ms)
            s.min = min(s.min, ms)

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with timer(self.name):
                return fn(*args, **kwargs)

        return wrapper


def status() -> Dict[str, TimerStat]:
    with _LOCK:
        return {k: TimerStat(v.count, v.total, v.max, v.min) for k, v in _STATS.items()}


def print_all_status(file: Optional[TextIO] = None) -> None:
    """Print one line per timer: total, average, max and min in ms, and the count."""
    out = file or sys.stdout
    stats = status()
    width = max([len(n) for n in stats] + [5]) + 2
    out.write(f"{'Timer':<{width}}{'total(ms)':>14}{'avg(ms)':>12}{'max(ms)':>12}{'min(ms)':>12}{'count':>8}\n")
    for name, s in stats.items():
        out.write(f"{name:<{width}}{s.total:>14.3f}{s.avg:>12.3f}{s.max:>12.3f}{s.min:>12.3f}{s.count:>8d}\n")


def reset_timers() -> None:
    with _LOCK:
        _STATS.clear()
