"""``fluid.unique_name``: the counters behind fluid's default names (``fc_0``, ``fc_0.tmp_0``, ``tmp_3``)."""

from __future__ import annotations

import contextlib
from typing import Dict, Iterator, Optional


class UniqueNameGenerator:
    """Counts per key; ``generate('fc')`` gives ``fc_0``, then ``fc_1``."""

    def __init__(self, prefix: Optional[str] = None) -> None:
        self.ids: Dict[str, int] = {}
        self.prefix = prefix or ""
        # while a program transaction is open: each key's count before its first use in it (None:
        # absent), so a failed layer call can put the counters back without copying them all
        self._undo: Optional[Dict[str, Optional[int]]] = None

    def __call__(self, key: str) -> str:
        n = self.ids.get(key, 0)
        if self._undo is not None and key not in self._undo:
            self._undo[key] = self.ids.get(key)
        self.ids[key] = n + 1
        return f"{self.prefix}{key}_{n}"

    def _rollback(self, undo: Dict[str, Optional[int]]) -> None:
        for key, n in undo.items():
            if n is None:
                self.ids.pop(key, None)
            else:
                self.ids[key] = n


generator = UniqueNameGenerator()


def generate(key: str) -> str:
    """``key_N`` with N counting up per key: fluid's unique names (``fc_0``, ``tmp_3``)."""
    return generator(key)


def generate_with_ignorable_key(key: str) -> str:
    # fluid only differs from generate() in dygraph mode, which fluidcompat does not have.
    return generator(key)


class DygraphParameterNameChecker:
    """Remembers parameter names: ``checker(name)`` says whether ``name`` was seen before."""

    def __init__(self) -> None:
        self._name_set = set()

    def __call__(self, name: str) -> bool:
        if name in self._name_set:
            return True
        self._name_set.add(name)
        return False


dygraph_parameter_name_checker = DygraphParameterNameChecker()


def switch(new_generator: Optional[UniqueNameGenerator] = None, new_para_name_checker=None):
    """Replace the name generator and the parameter-name checker (fresh ones by default); returns
    the old pair, as fluid 1.8 (``switch(*old)`` puts them back)."""
    global generator, dygraph_parameter_name_checker
    old = (generator, dygraph_parameter_name_checker)
    generator = new_generator if new_generator is not None else UniqueNameGenerator()
    dygraph_parameter_name_checker = (
        new_para_name_checker if new_para_name_checker is not None else DygraphParameterNameChecker()
    )
    return old


@contextlib.contextmanager
def guard(new_generator=None) -> Iterator[None]:
    """Use a fresh (or the given) generator inside the block; a str or bytes is a name prefix."""
    if isinstance(new_generator, bytes):
        new_generator = new_generator.decode()
    if isinstance(new_generator, str):
        new_generator = UniqueNameGenerator(new_generator)
    old = switch(new_generator)
    try:
        yield
    finally:
        switch(*old)


def __getattr__(name):  # fluid 1.8 names fluidcompat lacks: UnsupportedAPIError
    if name.startswith("__"):
        raise AttributeError(name)
    from fluidcompat.fluid18_names import unsupported

    return unsupported("paddle.fluid.unique_name")(name)
