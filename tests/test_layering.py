"""The floors of docs/architecture.md: a module imports (at module level or inside a function) only
from its own floor and those below, except the late bindings listed here, each with its reason."""

from __future__ import annotations

import ast
import functools
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGES = ("fluidcompat", "fluidcompat_ops")

# module prefixes by floor (the longest prefix decides; anything else of fluidcompat is floor 6)
FLOORS = {
    1: (
        "fluidcompat.dtypes", "fluidcompat.places", "fluidcompat.flags", "fluidcompat.unique_name",
        "fluidcompat.logging", "fluidcompat.wrapped_decorator", "fluidcompat.collector", "fluidcompat.progress",
        "fluidcompat.fluid18_names", "fluidcompat.safe_pickle", "fluidcompat.callsite", "fluidcompat.process_group",
        "fluidcompat.heap",
    ),
    2: (
        "fluidcompat.framework", "fluidcompat.descs", "fluidcompat.desc_order", "fluidcompat.lod_levels",
        "fluidcompat.param_attr", "fluidcompat.initializer", "fluidcompat.layer_helper", "fluidcompat.proto",
        "fluidcompat.variable", "fluidcompat.operator", "fluidcompat.transaction", "fluidcompat.checkpoint_files",
        "fluidcompat.arg_checks",
        "fluidcompat_ops.registry", "fluidcompat_ops.shapes", "fluidcompat_ops.protos",
    ),
    3: ("fluidcompat_ops",),
    4: (
        "fluidcompat.backward", "fluidcompat.optimizer", "fluidcompat.clip", "fluidcompat.regularizer",
        "fluidcompat.recompute", "fluidcompat.averaging", "fluidcompat.pipeline", "fluidcompat.transpiler",
        "fluidcompat.contrib.mixed_precision", "fluidcompat.contrib.quantize", "fluidcompat.contrib.extend_optimizer",
    ),
    5: ("fluidcompat.executor", "fluidcompat.profiler", "fluidcompat.compiler", "fluidcompat.parallel_executor"),
}  # fmt: skip

# (importer prefix, imported prefix): why the import goes up. docs/architecture.md lists the same.
LATE_BINDINGS = {
    ("fluidcompat.contrib.quantize", "fluidcompat.executor.scope"): "freezing reads the trained scale values",
    # run-time services the thin distributed and Python-op kernels stand on
    ("fluidcompat_ops.rpc", "fluidcompat.transpiler"): "send / recv kernels over the parameter-server client",
    ("fluidcompat_ops.rpc", "fluidcompat.communicator"): "the asynchronous communicator's queues",
    ("fluidcompat_ops.python", "fluidcompat.executor.scope"): "py_func / print read values by name",
}


# import circles (strongly connected modules) that stay, each with its reason; docs/architecture.md
# explains the same
_D2S = "fluidcompat.dygraph.dygraph_to_static"
EXPLAINED_CIRCLES = {
    frozenset({f"{_D2S}.utils", f"{_D2S}.static_analysis"}): (
        "fluid's own module layout: utils' IsControlFlowVisitor makes a StaticAnalysisVisitor, whose module "
        "reads helpers of utils"
    ),
}


def floor(module: str) -> int:
    best, level = "", 6
    for lvl, prefixes in FLOORS.items():
        for p in prefixes:
            if (module == p or module.startswith(p + ".")) and len(p) > len(best):
                best, level = p, lvl
    return level


def _modules():
    mods = {}
    for pkg in PACKAGES:
        for d, _, files in os.walk(os.path.join(ROOT, pkg)):
            if "__pycache__" in d:
                continue
            for f in files:
                if f.endswith(".py"):
                    path = os.path.join(d, f)
                    name = os.path.relpath(path, ROOT)[:-3].replace(os.sep, ".")
                    mods[name[: -len(".__init__")] if name.endswith(".__init__") else name] = path
    return mods


@functools.lru_cache(maxsize=None)
def _import_table():
    """module -> [(line, imported module)], each module's file parsed once for all the tests here."""
    mods = _modules()
    return {name: list(_imports(name, path, mods)) for name, path in mods.items()}


def _imports(name: str, path: str, mods):
    """(line, imported module) for each import of fluidcompat in ``path``."""
    tree = ast.parse(open(path).read(), path)
    is_pkg = path.endswith("__init__.py")
    for node in ast.walk(tree):
        targets = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".") if is_pkg else name.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module
            targets = [f"{target}.{a.name}" if f"{target}.{a.name}" in mods else target for a in node.names]
        for t in targets:
            parts = t.split(".")
            while parts and ".".join(parts) not in mods:
                parts.pop()
            if parts and ".".join(parts) != name:
                yield node.lineno, ".".join(parts)


def _under(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def _binding(importer: str, imported: str):
    """The ``LATE_BINDINGS`` entry that allows ``importer`` to import ``imported``, or None."""
    return next((ab for ab in LATE_BINDINGS if _under(importer, ab[0]) and _under(imported, ab[1])), None)


def up_imports():
    mods = _modules()
    table = _import_table()
    found = []
    for name, path in sorted(mods.items()):
        for line, target in table[name]:
            if floor(target) > floor(name) and _binding(name, target) is None:
                found.append(f"{os.path.relpath(path, ROOT)}:{line}: {name} (floor {floor(name)}) imports "
                             f"{target} (floor {floor(target)})")  # fmt: skip
    return found


def test_no_module_imports_a_floor_above_its_own():
    found = up_imports()
    assert not found, "imports that go up a floor (docs/architecture.md):\n" + "\n".join(found)


def test_every_late_binding_is_still_needed():
    used = {
        _binding(name, target)
        for name, imports in _import_table().items()
        for _, target in imports
        if floor(target) > floor(name)
    }
    assert set(LATE_BINDINGS) <= used, f"late bindings no longer used: {sorted(set(LATE_BINDINGS) - used)}"


def _circles(graph):
    """The strongly connected sets of ``graph`` (module -> imported modules) of more than one module
    (Tarjan's algorithm)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            circle = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                circle.add(w)
                if w == v:
                    break
            if len(circle) > 1:
                found.append(frozenset(circle))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def import_circles():
    """Each import circle, module-level and in-function imports alike: modules that import each other,
    directly or through others."""
    return _circles({name: {t for _, t in imports} for name, imports in _import_table().items()})


def test_no_import_circle_but_the_explained_ones():
    mods = _modules()
    unexplained = [c for c in import_circles() if c not in EXPLAINED_CIRCLES]
    report = []
    for c in unexplained:
        report.append(f"{len(c)} modules: {sorted(c)}")
        report += sorted(
            {
                f"  {os.path.relpath(mods[m], ROOT)}:{line}: {m} imports {t}"
                for m in c
                for line, t in _import_table()[m]
                if t in c
            }
        )
    assert not unexplained, "import circles (docs/architecture.md):\n" + "\n".join(report)


def test_every_explained_circle_is_still_there():
    assert set(EXPLAINED_CIRCLES) <= set(import_circles())


def test_circles_are_found():
    """The search itself: a circle through three modules, a self-import and a chain that is none."""
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": {"d", "e"}, "e": set()}
    assert _circles(graph) == [frozenset("abc")]


# the hooks of docs/architecture.md: (lower module, attribute) a higher module sets on its import
HOOKS = [
    ("fluidcompat_ops.registry", "_GENERIC_GRADS"),
    ("fluidcompat.descs", "Program"),
    ("fluidcompat.descs", "Operator"),
    ("fluidcompat.variable", "in_declarative_build"),
    ("fluidcompat.layer_helper", "layers"),
    ("fluidcompat.pipeline", "Optimizer"),
    ("fluidcompat.optimizer", "dygraph_base"),
    ("fluidcompat.optimizer", "dygraph_schedules"),
]


@pytest.mark.parametrize("first", ["fluidcompat.framework", "fluidcompat_ops", "fluidcompat.layer_helper"])
def test_importing_a_low_module_alone_sets_every_hook(first):
    """A script importing only a low module gets what the hooks serve: importing any module of the
    package runs fluidcompat/__init__, which imports the modules that set them."""
    code = (
        f"import importlib, {first}\n"
        f"hooks = {HOOKS!r}\n"
        "unset = [f'{m}.{a}' for m, a in hooks if getattr(importlib.import_module(m), a) is None]\n"
        "from fluidcompat.dygraph import base, varbase\n"
        "assert varbase.current_tracer is base.current_tracer, 'varbase.current_tracer'\n"
        "assert not unset, unset\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


@pytest.mark.parametrize("pkg", PACKAGES)
def test_no_module_over_1200_lines(pkg):
    long = []
    for name, path in _modules().items():
        if name.split(".")[0] == pkg:
            with open(path) as f:
                n = sum(1 for _ in f)
            if n > 1200:
                long.append(f"{name}: {n} lines")
    assert not long, long
