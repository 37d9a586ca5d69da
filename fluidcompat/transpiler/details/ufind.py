"""``UnionFind``: disjoint sets of hashable elements (fluid's memory-optimize transpiler used it)."""

from __future__ import annotations

from typing import Dict, Iterable, List, Optional

__all__ = ["UnionFind"]


class UnionFind:
    """Disjoint sets over the elements given at construction; an element not given has root -1."""

    def __init__(self, elementes: Optional[Iterable] = None) -> None:  # fluid's (misspelt) argument name
        self._index: Dict[object, int] = {}
        self._parents: List[int] = []
        for e in elementes or ():
            self._index[e] = len(self._parents)
            self._parents.append(len(self._parents))

    def find(self, x) -> int:
        """The index of ``x``'s set's root (-1 when ``x`` is not an element); halves the path walked."""
        i = self._index.get(x)
        if i is None:
            return -1
        parents = self._parents
        while parents[i] != i:
            parents[i] = parents[parents[i]]
            i = parents[i]
        return i

    def union(self, x, y) -> None:
        """Join the sets of ``x`` and ``y`` (both elements: fluid's rewired an unrelated element otherwise)."""
        rx, ry = self.find(x), self.find(y)
        for e, r in ((x, rx), (y, ry)):
            if r == -1:
                raise ValueError(f"UnionFind.union: {e!r} is not one of the elements the UnionFind was made with")
        if rx != ry:
            self._parents[rx] = ry

    def is_connected(self, x, y) -> bool:
        """Whether ``x`` and ``y`` are in one set (two non-elements are: both have root -1)."""
        return self.find(x) == self.find(y)
