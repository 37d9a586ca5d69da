"""The fluid 1.8 profiler report, as text: a pure function of recorded events.

Layout, widths, number formatting, nesting, sorting and the Overhead / GpuMemCpy / Event Summary
blocks follow fluid 1.8.5's ``profiler_helper.h`` as spec section 1 records it. Torch-free.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Dict, List, NamedTuple, Optional, Sequence, Tuple

import numpy as np

ORDINARY, INNER_OP, UNIQUE_OP = 0, 1, 2
STATES = {"CPU": "CPU", "GPU": "CUDA", "All": "All"}
SORT_DOMAINS = {
    "default": "event first end time",
    "calls": "number of calls",
    "total": "total time",
    "min": "minimum time",
    "max": "maximum time",
    "ave": "average time",
}
_F32 = np.float32


class Event(NamedTuple):
    """One finished span: its annotated name (``mul/compute``), role, CPU span and GPU time (ns). A
    named tuple: the executor makes several per op while profiling."""

    name: str
    role: int
    start_ns: int
    end_ns: int
    gpu_ns: int = 0


@dataclass
class ThreadEvents:
    """The events one thread recorded, in the order they ended."""

    tid: int
    events: List[Event] = field(default_factory=list)


@dataclass
class _Item:
    name: str
    role: int
    calls: int = 0
    total: float = 0.0
    min: float = math.inf
    max: float = 0.0
    cpu: float = 0.0
    gpu: float = 0.0
    ratio: float = 0.0

    @property
    def ave(self) -> float:
        return self.total / self.calls if self.calls else 0.0


def fmt(value: float) -> str:
    """A double as C++ iostream prints it by default (6 significant digits, %g-like)."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return str(int(value))
    v = float(value)
    if math.isnan(v):
        return "-nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return f"{v:g}"


def _setw(text: str, width: int) -> str:
    return text.ljust(width)


# -- renaming of AllOpDetail instances (fluid's DealWithShowName) -------------------------------------
def show_names(threads: Sequence[ThreadEvents]) -> List[ThreadEvents]:
    """Replace each ``%first_output%`` segment by the instance number of its op type."""
    index: Dict[str, Dict[str, int]] = {}
    renamed: Dict[int, Dict[int, str]] = {}
    for t in threads:
        marked = [(i, e) for i, e in enumerate(t.events) if "%" in e.name]  # (the others keep their names)
        for i, e in sorted(marked, key=lambda p: (p[1].start_ns, -p[1].end_ns)):
            out, pos = [], 0
            while True:
                a = e.name.find("%", pos)
                if a < 0:
                    out.append(e.name[pos:])
                    break
                b = e.name.find("%", a + 1)
                if b < 0:
                    out.append(e.name[pos:])
                    break
                key = e.name[:a]
                seg = e.name[a : b + 1]
                ids = index.setdefault(key, {})
                if seg not in ids:
                    ids[seg] = len(ids)
                out.append(e.name[pos:a] + str(ids[seg]))
                pos = b + 1
            renamed.setdefault(t.tid, {})[i] = "".join(out)
    result = []
    for t in threads:
        events = list(t.events)
        for i, name in renamed.get(t.tid, {}).items():
            e = events[i]
            events[i] = Event(name, e.role, e.start_ns, e.end_ns, e.gpu_ns)
        result.append(ThreadEvents(t.tid, events))
    return result


# -- std::sort (libstdc++ introsort), so that ties come out in fluid's order --------------------------------
def _std_sort(items: List, less: Callable) -> None:
    n = len(items)
    if n < 2:
        return

    def median_to_first(result, a, b, c):
        if less(items[a], items[b]):
            if less(items[b], items[c]):
                items[result], items[b] = items[b], items[result]
            elif less(items[a], items[c]):
                items[result], items[c] = items[c], items[result]
            else:
                items[result], items[a] = items[a], items[result]
        elif less(items[a], items[c]):
            items[result], items[a] = items[a], items[result]
        elif less(items[b], items[c]):
            items[result], items[c] = items[c], items[result]
        else:
            items[result], items[b] = items[b], items[result]

    def partition(first, last, pivot):
        while True:
            while less(items[first], items[pivot]):
                first += 1
            last -= 1
            while less(items[pivot], items[last]):
                last -= 1
            if not first < last:
                return first
            items[first], items[last] = items[last], items[first]
            first += 1

    def adjust_heap(first, hole, length, value):
        top = hole
        child = hole
        while child < (length - 1) // 2:
            child = 2 * (child + 1)
            if less(items[first + child], items[first + child - 1]):
                child -= 1
            items[first + hole] = items[first + child]
            hole = child
        if length % 2 == 0 and child == (length - 2) // 2:
            child = 2 * (child + 1)
            items[first + hole] = items[first + child - 1]
            hole = child - 1
        parent = (hole - 1) // 2
        while hole > top and less(items[first + parent], value):
            items[first + hole] = items[first + parent]
            hole = parent
            parent = (hole - 1) // 2
        items[first + hole] = value

    def heap_sort(first, last):
        length = last - first
        for parent in range((length - 2) // 2, -1, -1):
            adjust_heap(first, parent, length, items[first + parent])
        while last - first > 1:
            last -= 1
            value = items[last]
            items[last] = items[first]
            adjust_heap(first, 0, last - first, value)

    def introsort(first, last, depth):
        while last - first > 16:
            if depth == 0:
                heap_sort(first, last)
                return
            depth -= 1
            mid = first + (last - first) // 2
            median_to_first(first, first + 1, mid, last - 1)
            cut = partition(first + 1, last, first)
            introsort(cut, last, depth)
            last = cut

    def linear_insert(i):
        value = items[i]
        j = i - 1
        while less(value, items[j]):
            items[j + 1] = items[j]
            j -= 1
        items[j + 1] = value

    def insertion_sort(first, last):
        for i in range(first + 1, last):
            if less(items[i], items[first]):
                value = items[i]
                items[first + 1 : i + 1] = items[first:i]
                items[first] = value
            else:
                linear_insert(i)

    introsort(0, n, 2 * int(math.log2(n)))
    if n > 16:
        insertion_sort(0, 16)
        for i in range(16, n):
            linear_insert(i)
    else:
        insertion_sort(0, n)


_SORT_FIELDS = {"calls": "calls", "total": "total", "min": "min", "max": "max", "ave": "ave"}


def _sort(items: List[_Item], key: str) -> None:
    attr = _SORT_FIELDS.get(key)
    if attr is not None:
        _std_sort(items, lambda a, b: getattr(a, attr) > getattr(b, attr))


# -- analysis ---------------------------------------------------------------------------------------------
def _nth_slash_from_end(name: str, n: int) -> int:
    pos = len(name)
    for _ in range(n):
        pos = name.rfind("/", 0, pos)
        if pos < 0:
            return -1
    return pos


def _name_size(name: str, role: int, tracer: str) -> int:
    if role == INNER_OP and tracer != "Default" and name.count("/") >= 2:
        return len(name) - _nth_slash_from_end(name, 2) - 1
    if "/" in name and (role != INNER_OP or tracer == "Default"):
        return len(name) - name.rfind("/") - 1
    return len(name)


def _print_name(item: _Item, depth: int) -> str:
    pos = _nth_slash_from_end(item.name, 2 if item.role == INNER_OP else 1)
    return "  " * depth + item.name[pos + 1 if pos >= 0 else 0 :]


@dataclass
class _Table:
    main: List[_Item]
    sub: List[Tuple[str, _Item]]  # (parent name, child) in multimap order
    total: float


def _items(events: Sequence[Event], prefix: str, state: str) -> List[_Item]:
    """One item per event name (in the order the names first ended) with its calls, total, min, max,
    CPU and GPU time; the sums add the events in their order, as fluid did."""
    n = len(events)
    index: Dict[str, int] = {}
    ids = np.fromiter((index.setdefault(e.name, len(index)) for e in events), np.intp, n)
    if not n:
        return []
    cpu = np.fromiter((e.end_ns - e.start_ns for e in events), np.float64, n) / 1e6  # (as float(span) / 1e6)
    gpu = np.fromiter((e.gpu_ns for e in events), np.float64, n) / 1e6
    t = cpu if state == "CPU" else gpu if state == "GPU" else cpu + gpu
    count = len(index)
    calls = np.bincount(ids, minlength=count)
    order = np.argsort(ids, kind="stable")
    first = np.flatnonzero(np.r_[True, ids[order][1:] != ids[order][:-1]])  # each name's run in `order`
    columns = zip(
        calls.tolist(),
        np.bincount(ids, t, count).tolist(),  # (bincount adds the weights in their order)
        np.minimum.reduceat(t[order], first).tolist(),
        np.maximum(np.maximum.reduceat(t[order], first), 0.0).tolist(),
        np.bincount(ids, cpu, count).tolist(),
        np.bincount(ids, gpu, count).tolist(),
        order[first].tolist(),  # the first event of each name
    )
    names = list(index)
    return [
        _Item(prefix + names[k], events[i].role, c, total, lo, hi, c_cpu, c_gpu)
        for k, (c, total, lo, hi, c_cpu, c_gpu, i) in enumerate(columns)
    ]


def _analyze(events: Sequence[Event], prefix: str, state: str) -> _Table:
    ordered = _items(events, prefix, state)
    sub: List[Tuple[str, _Item]] = []
    is_child = [False] * len(ordered)
    for parent in ordered:
        f = parent.name
        for k, child in enumerate(ordered):
            c = child.name
            if (
                len(c) > len(f)
                and c.startswith(f)
                and not c.startswith(f + "_grad")
                and c[len(f)] == "/"
                and c.rfind("/") == len(f)
            ):
                sub.append((f, child))
                is_child[k] = True
    main = [it for it, child in zip(ordered, is_child) if not child]
    total = sum(it.total for it in main)
    for it in ordered:
        it.ratio = it.total / total if total else float("nan")
    return _Table(main, sorted(sub, key=lambda p: p[0]), total)


def _child_map(table: _Table, tracer: str) -> Dict[str, List[_Item]]:
    children: Dict[str, List[_Item]] = {}
    if tracer != "Default":
        for parent, child in table.sub:
            children.setdefault(parent, []).append(child)
        return children
    by_name = {child.name: child for _, child in table.sub}
    parent_of = {child.name: parent for parent, child in table.sub}
    for parent, child in table.sub:
        if "GpuMemcpy" in child.name:
            anc = parent
            while anc in by_name and by_name[anc].role != ORDINARY:
                anc = parent_of[anc]
            moved = _Item(
                anc + "/" + child.name[child.name.rfind("/") + 1 :],
                child.role,
                child.calls,
                child.total,
                child.min,
                child.max,
                child.cpu,
                child.gpu,
                child.ratio,
            )
            children.setdefault(anc, []).append(moved)
        elif child.role == ORDINARY:
            children.setdefault(parent, []).append(child)
    return children


def _overhead(table: _Table):
    compute = _F32(0.0)
    for _, child in table.sub:
        if "compute" in child.name and "compute/" not in child.name:
            compute = _F32(compute + _F32(child.ratio))
    framework = _F32(_F32(1.0) - compute)
    buckets = {"GpuMemcpyAsync": [0, 0.0, 0.0], "GpuMemcpySync": [0, 0.0, 0.0]}
    for it in table.main + [c for _, c in table.sub]:
        for key in ("GpuMemcpyAsync", "GpuMemcpySync"):
            if key in it.name:
                b = buckets[key]
                b[0] += it.calls
                b[1] += it.total
                b[2] += it.ratio
                break
    return compute, framework, buckets


def _banner(title: str, pad: int) -> str:
    return "-" * 25 + " " * pad + title + " " * pad + "-" * 25


def _rows(out: List[str], items: List[_Item], children, depth: int, width: int, key: str, all_state: bool) -> None:
    for it in items:
        cells = [_setw(_print_name(it, depth), width), _setw(str(it.calls), 12), _setw(fmt(it.total), 12)]
        if all_state:
            cells.append(_setw("%f (%f)" % (it.cpu, it.cpu / it.total if it.total else float("nan")), 24))
            cells.append(_setw("%f (%f)" % (it.gpu, it.gpu / it.total if it.total else float("nan")), 24))
        cells += [_setw(fmt(it.min), 12), _setw(fmt(it.max), 12), _setw(fmt(it.ave), 12), _setw(fmt(it.ratio), 12)]
        out.append("".join(cells) + "\n")
        kids = list(children.get(it.name, ()))
        if kids:
            _sort(kids, key)
            _rows(out, kids, children, depth + 1, width, key, all_state)


def _report(tables: List[_Table], width: int, state: str, key: str, tracer: str, merged: bool) -> str:
    out = ["\n" + "-" * 25 + ">     Profiling Report     <" + "-" * 25 + "\n\n"]
    if merged:
        out.append("Note! This Report merge all thread info into one.\n")
    out.append(
        f"Place: {STATES[state]}\nTime unit: ms\nSorted by {SORT_DOMAINS[key]} in descending order in the "
        "same thread\n\n"
    )
    if len(tables) == 1:
        table = tables[0]
        compute, framework, buckets = _overhead(table)
        out.append(f"Total time: {fmt(table.total)}\n")
        out.append(
            _setw("  Computation time", 25)
            + "Total: "
            + _setw(fmt(table.total * float(compute)), 12)
            + "Ratio: "
            + fmt(float(_F32(compute * _F32(100))))
            + "%\n"
        )
        out.append(
            _setw("  Framework overhead", 25)
            + "Total: "
            + _setw(fmt(table.total * float(framework)), 12)
            + "Ratio: "
            + fmt(float(_F32(framework * _F32(100))))
            + "%\n"
        )
        out.append("\n" + _banner("GpuMemCpy Summary", 5) + "\n\n")
        a, s = buckets["GpuMemcpyAsync"], buckets["GpuMemcpySync"]
        rows = [("GpuMemcpy", a[0] + s[0], a[1] + s[1], a[2] + s[2])]
        if a[0]:
            rows.append(("  GpuMemcpyAsync", a[0], a[1], a[2]))
        if s[0]:
            rows.append(("  GpuMemcpySync", s[0], s[1], s[2]))
        for name, calls, total, ratio in rows:
            out.append(
                _setw(name, 25)
                + "Calls: "
                + _setw(str(calls), 12)
                + "Total: "
                + _setw(fmt(total), 12)
                + "Ratio: "
                + fmt(ratio * 100)
                + "%\n"
            )
    out.append("\n" + _banner("Event Summary", 7) + "\n\n")
    header = _setw("Event", width) + _setw("Calls", 12) + _setw("Total", 12)
    if state == "All":
        header += _setw("CPU Time (Ratio)", 24) + _setw("GPU Time (Ratio)", 24)
    header += _setw("Min.", 12) + _setw("Max.", 12) + _setw("Ave.", 12) + _setw("Ratio.", 12)
    out.append(header + "\n")
    for table in tables:
        main = list(table.main)
        _sort(main, key)
        _rows(out, main, _child_map(table, tracer), 0, width, key, state == "All")
    return "".join(out)


def format_reports(
    threads: Sequence[ThreadEvents],
    state: str = "CPU",
    sorted_key: Optional[str] = None,
    tracer_option: str = "Default",
) -> str:
    """The text fluid 1.8 prints when profiling stops, for the per-thread event lists ``threads``
    (newest thread first): a merged report when two or more threads recorded, then the per-thread one."""
    key = sorted_key or "default"
    if key not in SORT_DOMAINS:
        raise ValueError("The sorted_key must be None or in 'calls', 'total', 'max', 'min' and 'ave'")
    threads = show_names(threads)
    result = []
    for merged in (True, False):
        if merged and len(threads) < 2:
            continue
        if merged:
            tables = [_analyze([e for t in threads for e in t.events], "", state)]
            names = {(e.name, e.role) for t in threads for e in t.events}
        else:
            tables = [_analyze(t.events, f"thread{t.tid}::", state) for t in threads]
            names = {(f"thread{t.tid}::" + n, r) for t in threads for n, r in {(e.name, e.role) for e in t.events}}
        width = max((_name_size(n, r, tracer_option) for n, r in names), default=0) + 8
        result.append(_report(tables, width, state, key, tracer_option, merged))
    return "".join(result)
