"""The order in which fluid 1.8.5 lists a block's variables.

NOTE: [Variable order]: fluid keeps a block's variables twice: in the Python ``Block.vars`` dict
and in the C++ ``BlockDesc``'s ``std::unordered_map``. A script sees the map's order wherever
fluid rebuilt the Python side from the C++ one: the gradients ``append_backward`` adds, every
variable of a program from ``clone``, ``clone(for_test=True)``, ``_prune`` or
``load_inference_model``, and the variables of a saved ``__model__``. That order is the iteration
order of libstdc++'s hash table as fluid 1.8.5's build compiled it: keys hashed by ``_Hash_bytes``
(seed 0xc70f6907), 11 buckets to begin with, the bucket count grown to the next prime of the
library's list at or above twice the old one once the elements would reach it, a key landing in an
empty bucket going to the front of the list and one landing in a used bucket going to the front of
that bucket's run. Each C++ copy of a program (and fluid copied some several times over) re-inserts
the variables in the order it found them, so the order shuffles again (``copied``).

Checked against fluid 1.8.5's own listings (tests/golden/var_order.py). Torch-free.
"""

from __future__ import annotations

import bisect
from typing import Dict, Iterable, List, Tuple

_M64 = (1 << 64) - 1
_MUL = (0xC6A4A793 << 32) + 0x5BD1E995
_SEED = 0xC70F6907

# libstdc++'s bucket counts (its prime list from 11 up); past the end, the next prime is computed
_PRIMES = [
    11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53, 59, 61, 67, 71, 73, 79, 83, 89, 97, 103, 109, 113,
    127, 137, 139, 149, 157, 167, 179, 193, 199, 211, 227, 241, 257, 277, 293, 313, 337, 359, 383, 409,
    439, 467, 503, 541, 577, 619, 661, 709, 761, 823, 887, 953, 1031, 1109, 1193, 1289, 1381, 1493, 1613,
    1741, 1879, 2029, 2179, 2357, 2549, 2753, 2971, 3209, 3469, 3739, 4027, 4349, 4703, 5087, 5503, 5953,
    6427, 6949, 7517, 8123, 8783, 9497, 10273, 11113, 12011, 12983, 14033, 15173, 16411, 17749, 19183,
    20753, 22447, 24281, 26267, 28411, 30727, 33223, 35933, 38873, 42043, 45481, 49201, 53201, 57557,
    62233, 67307, 72817, 78779, 85229, 92203, 99733, 107897, 116731, 126271, 136607, 147793, 159871,
    172933, 187091, 202409, 218971, 236897, 256279, 277261, 299951, 324503,
]  # fmt: skip

_hashes: Dict[str, int] = {}


def _shift_mix(v: int) -> int:
    return v ^ (v >> 47)


def key_hash(name: str) -> int:
    """libstdc++'s ``std::hash<std::string>`` of ``name`` (64-bit ``_Hash_bytes``)."""
    h = _hashes.get(name)
    if h is not None:
        return h
    data = name.encode()
    n = len(data)
    h = (_SEED ^ (n * _MUL)) & _M64
    whole = n & ~7
    for p in range(0, whole, 8):
        d = (_shift_mix((int.from_bytes(data[p : p + 8], "little") * _MUL) & _M64) * _MUL) & _M64
        h = ((h ^ d) * _MUL) & _M64
    if n & 7:
        h = ((h ^ int.from_bytes(data[whole:], "little")) * _MUL) & _M64
    h = _shift_mix((_shift_mix(h) * _MUL) & _M64)
    if len(_hashes) < 1 << 20:
        _hashes[name] = h
    return h


def _prime_at_least(n: int) -> int:
    i = bisect.bisect_left(_PRIMES, n)
    if i < len(_PRIMES):
        return _PRIMES[i]
    while any(n % d == 0 for d in range(2, int(n**0.5) + 1)):
        n += 1
    return n


class HashOrder:
    """A libstdc++ ``unordered_map`` / ``unordered_set`` of names, for its iteration order."""

    __slots__ = ("_buckets", "_runs", "_fronts", "_where")

    def __init__(self, names: Iterable[str] = ()) -> None:
        self._buckets = 11
        self._runs: Dict[int, List[str]] = {}  # bucket -> its keys, the front one last
        self._fronts: List[int] = []  # used buckets, the one at the list's front last
        self._where: Dict[str, int] = {}
        for name in names:
            self.insert(name)

    def __len__(self) -> int:
        return len(self._where)

    def __contains__(self, name: object) -> bool:
        return name in self._where

    def order(self) -> List[str]:
        return [n for b in reversed(self._fronts) for n in reversed(self._runs[b])]

    def _place(self, name: str) -> None:
        b = key_hash(name) % self._buckets
        run = self._runs.get(b)
        if run is None:
            self._fronts.append(b)
            self._runs[b] = [name]
        else:
            run.append(name)
        self._where[name] = b

    def _grow_for(self, adding: int) -> None:
        count = len(self._where)
        if count + adding < self._buckets:
            return
        old = self.order()
        self._buckets = _prime_at_least(max(count + adding + 1, 2 * self._buckets))
        self._runs, self._fronts, self._where = {}, [], {}
        for n in old:
            self._place(n)

    def insert(self, name: str) -> None:
        if name not in self._where:
            self._grow_for(1)
            self._place(name)

    def insert_range(self, names: List[str]) -> None:
        """``insert(first, last)``: the table is grown for all of them before the first goes in."""
        self._grow_for(len(names))
        for n in names:
            self.insert(n)

    def erase(self, name: str) -> None:
        b = self._where.pop(name, None)
        if b is None:
            return
        run = self._runs[b]
        run.remove(name)
        if not run:
            del self._runs[b]
            self._fronts.remove(b)


def copied(names: Iterable[str], times: int = 1) -> List[str]:
    """The order of a map filled in ``names``' order, and of its copies ``times - 1`` times over."""
    order = list(names)
    for _ in range(times):
        order = HashOrder(order).order()
    return order


def replay(events: Iterable[Tuple[str, bool]]) -> HashOrder:
    """The map after ``events``: ``(name, True)`` inserted, ``(name, False)`` erased."""
    table = HashOrder()
    for name, added in events:
        if added:
            table.insert(name)
        else:
            table.erase(name)
    return table
