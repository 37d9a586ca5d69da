"""The translation of a declarative function's Python control flow (NOTE: [Declarative]).

``convert(func)`` rewrites the function's source: each ``if`` and ``while`` becomes a call to this
module's runtime with the branches and the loop as nested functions of the variables they assign.
At run time a condition that is a Variable of a static program builds ``layers.cond`` /
``layers.while_loop``; any other condition (a Python value, a dygraph VarBase) runs as plain Python,
so the function behaves as written. ``and``, ``or`` and ``not`` in a condition become logical ops
when their operands are Variables.

An ``if`` whose branches end in ``return`` (``if c: ...; return a`` then ``...; return b``)
becomes one if that sets the value to return; a ``while`` that ``break``s or ``continue``s gets
flags its condition and body test. A Python number a branch under a Variable condition assigns
becomes a Variable. Left as written (a Variable condition there stays the error naming it): loops
that ``return`` or ``yield``, loops with ``else``, ``for`` loops, and functions whose source is not
available. Torch-free.
"""

from __future__ import annotations

import ast
import functools
import inspect
import textwrap
import weakref
from typing import Dict, List, Tuple

from fluidcompat import framework

__all__ = ["convert", "converted_source"]


class _Undefined:
    """The value of a name a translated statement assigns but that had none before it."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"<'{self.name}' undefined: assigned only inside a translated if / while>"


# -- source rewriting ----------------------------------------------------------------------------------
def _assigned(nodes) -> List[str]:
    """Names the statements assign (not inside nested functions or classes), in order."""
    found: Dict[str, None] = {}

    class Visitor(ast.NodeVisitor):
        def visit_Name(self, node):
            if isinstance(node.ctx, ast.Store):
                found.setdefault(node.id, None)

        def visit_FunctionDef(self, node):
            found.setdefault(node.name, None)

        visit_AsyncFunctionDef = visit_FunctionDef

        def visit_ClassDef(self, node):
            found.setdefault(node.name, None)

        def visit_Lambda(self, node):
            pass

    for node in nodes:
        Visitor().visit(node)
    return [n for n in found if not n.startswith("__fc_")]  # not the functions of inner translations


def _escapes(nodes) -> bool:
    """Whether the statements leave the block other than by its end: a return or yield (inner loops
    included), a break or continue of this block's loop, or a global / nonlocal declaration."""
    leaves = (ast.Return, ast.Yield, ast.YieldFrom)
    nested = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
    if any(isinstance(n, leaves) for stmt in nodes if not isinstance(stmt, nested) for n in _walk_local(stmt)):
        return True
    return _contains(nodes, (ast.Break, ast.Continue, ast.Global, ast.Nonlocal))


def _call(attr: str, args) -> ast.Call:
    return ast.Call(func=ast.Attribute(ast.Name("__fc_rt", ast.Load()), attr, ast.Load()), args=args, keywords=[])


def _current_values(names) -> ast.Tuple:
    """``(__fc_rt.value(locals(), 'a'), ...)``: each name's value now, or an _Undefined."""
    locals_call = ast.Call(func=ast.Name("locals", ast.Load()), args=[], keywords=[])
    return ast.Tuple([_call("value", [locals_call, ast.Constant(n)]) for n in names], ast.Load())


def _function(name, params, body, returns) -> ast.FunctionDef:
    args = ast.arguments(posonlyargs=[], args=[ast.arg(p) for p in params], kwonlyargs=[], kw_defaults=[], defaults=[])
    result = ast.Return(ast.Tuple([ast.Name(n, ast.Load()) for n in returns], ast.Load()))
    return ast.FunctionDef(name=name, args=args, body=list(body) + [result], decorator_list=[], returns=None)


def _load_counts(node) -> Dict[str, int]:
    counts: Dict[str, int] = {}
    for n in _walk_local(node):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
            counts[n.id] = counts.get(n.id, 0) + 1
    return counts


class _Translator(ast.NodeTransformer):
    def __init__(self, fdef) -> None:
        self.count = 0
        self.changed = False
        self.loads = _load_counts(fdef)  # of the function as written

    def _fresh(self, kind: str) -> str:
        self.count += 1
        return f"{kind}_{self.count}" if kind.startswith("_fc_") else f"__fc_{kind}_{self.count}"

    def _condition(self, test):
        """``and`` / ``or`` / ``not`` as runtime calls that make logical ops of Variables."""
        if isinstance(test, ast.BoolOp):
            parts = [self._condition(v) for v in test.values]
            kind = "and_" if isinstance(test.op, ast.And) else "or_"
            lambdas = [ast.Lambda(args=_function("x", [], [], []).args, body=p) for p in parts]
            return _call(kind, lambdas)
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            return _call("not_", [self._condition(test.operand)])
        return test

    # nested functions and classes keep their own control flow
    def visit_FunctionDef(self, node):
        return node

    visit_AsyncFunctionDef = visit_FunctionDef
    visit_ClassDef = visit_FunctionDef
    visit_Lambda = visit_FunctionDef

    def visit_If(self, node):
        inside = _load_counts(node)
        self.generic_visit(node)
        if _escapes(node.body + node.orelse):
            return node
        # what the branches assign and the function reads elsewhere (a name only used inside a
        # branch stays that branch's own)
        names = [
            n
            for n in _assigned(node.body + node.orelse)
            if n.startswith("_fc_") or self.loads.get(n, 0) > inside.get(n, 0)
        ]
        true_name, false_name = self._fresh("true"), self._fresh("false")
        true_fn = _function(true_name, names, node.body, names)
        false_fn = _function(false_name, names, node.orelse or [ast.Pass()], names)
        call = _call(
            "ifelse",
            [self._condition(node.test), ast.Name(true_name, ast.Load()), ast.Name(false_name, ast.Load()),
             _current_values(names), ast.Tuple([ast.Constant(n) for n in names], ast.Load())],
        )  # fmt: skip
        self.changed = True
        return [true_fn, false_fn, self._assign(names, call)]

    def visit_While(self, node):
        prefix = []
        if not node.orelse and not _returns_inside(node.body):
            prefix, node = _lift_loop_exits(node, self._fresh)
            self.changed = self.changed or bool(prefix)
        self.generic_visit(node)
        if node.orelse or _escapes(node.body):
            return prefix + [node] if prefix else node
        names = _assigned(node.body)
        cond_name, body_name = self._fresh("cond"), self._fresh("body")
        cond_fn = ast.FunctionDef(
            name=cond_name, args=_function("x", names, [], []).args, body=[ast.Return(self._condition(node.test))],
            decorator_list=[], returns=None,
        )  # fmt: skip
        body_fn = _function(body_name, names, node.body, names)
        call = _call(
            "while_",
            [ast.Name(cond_name, ast.Load()), ast.Name(body_name, ast.Load()), _current_values(names),
             ast.Tuple([ast.Constant(n) for n in names], ast.Load())],
        )  # fmt: skip
        self.changed = True
        return prefix + [cond_fn, body_fn, self._assign(names, call)]

    @staticmethod
    def _assign(names, call):
        if not names:
            return ast.Expr(call)
        target = ast.Tuple([ast.Name(n, ast.Store()) for n in names], ast.Store())
        return ast.Assign(targets=[target], value=call)


_RETURN = "_fc_return_value"


def _ends_in_return(stmts) -> bool:
    return bool(stmts) and isinstance(stmts[-1], ast.Return)


def _returns_inside(stmts) -> bool:
    """Whether a ``return`` sits among the statements (not in nested functions or classes)."""
    for stmt in stmts:
        for node in _walk_local(stmt):
            if isinstance(node, ast.Return):
                return True
    return False


def _walk_local(node):
    yield node
    for child in ast.iter_child_nodes(node):
        if not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            yield from _walk_local(child)


def _lift_returns(stmts):
    """``if c: ...; return a`` followed by ``...; return b`` (or an ``else`` ending in a return) as
    one if that assigns the value to return, then one return: so that the if can be translated."""
    for i, stmt in enumerate(stmts):
        if not isinstance(stmt, ast.If) or not _returns_inside([stmt]):
            continue
        body = _lift_returns(list(stmt.body))
        other = _lift_returns(list(stmt.orelse) if stmt.orelse else list(stmts[i + 1 :]))
        if not (_ends_in_return(body) and _ends_in_return(other)):
            return stmts
        if _returns_inside(body[:-1]) or _returns_inside(other[:-1]):
            return stmts
        for branch in (body, other):
            value = branch[-1].value if branch[-1].value is not None else ast.Constant(None)
            branch[-1] = ast.Assign(targets=[ast.Name(_RETURN, ast.Store())], value=value)
        lifted = ast.If(test=stmt.test, body=body, orelse=other)
        return list(stmts[:i]) + [lifted, ast.Return(ast.Name(_RETURN, ast.Load()))]
    return stmts


def _contains(stmts, kind) -> bool:
    """Whether a ``kind`` (Break / Continue) of this loop sits among the statements (not in inner
    loops, functions or classes)."""

    def walk(node):
        if isinstance(node, kind):
            return True
        if isinstance(node, (ast.For, ast.While, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            return False
        return any(walk(child) for child in ast.iter_child_nodes(node))

    return any(walk(s) for s in stmts)


def _flag_set(name):
    return ast.Assign(targets=[ast.Name(name, ast.Store())], value=ast.Constant(True))


def _not_flag(name):
    return ast.UnaryOp(ast.Not(), ast.Name(name, ast.Load()))


def _guard(stmts, kind, flag):
    """The statements with each ``kind`` statement setting ``flag`` and what follows it in its
    block running only while ``flag`` is not set."""
    out = []
    for i, stmt in enumerate(stmts):
        if isinstance(stmt, kind):
            out.append(_flag_set(flag))
            return out  # the rest of the block is not reached
        if isinstance(stmt, ast.If) and _contains([stmt], kind):
            out.append(
                ast.If(
                    test=stmt.test,
                    body=_guard(stmt.body, kind, flag) or [ast.Pass()],
                    orelse=_guard(stmt.orelse, kind, flag),
                )
            )
            rest = _guard(stmts[i + 1 :], kind, flag)
            if rest:
                out.append(ast.If(test=_not_flag(flag), body=rest, orelse=[]))
            return out
        out.append(stmt)
    return out


def _lift_loop_exits(loop, fresh):
    """A ``while`` whose body breaks or continues (through ifs, not inner loops) as one whose
    condition also tests a break flag and whose body skips the rest of a pass by a continue flag."""
    prefix = []
    body = list(loop.body)
    test = loop.test
    if _contains(body, ast.Continue):
        flag = fresh("_fc_continue")
        reset = ast.Assign(targets=[ast.Name(flag, ast.Store())], value=ast.Constant(False))
        body = [reset] + _guard(body, ast.Continue, flag)
    if _contains(body, ast.Break):
        flag = fresh("_fc_break")
        prefix.append(ast.Assign(targets=[ast.Name(flag, ast.Store())], value=ast.Constant(False)))
        body = _guard(body, ast.Break, flag)
        test = ast.BoolOp(ast.And(), [_not_flag(flag), loop.test])
    return prefix, ast.While(test=test, body=body, orelse=loop.orelse)


_CACHE: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _translate(func):
    """(translated function or None, its source or None)."""
    try:
        source = textwrap.dedent(inspect.getsource(func))
    except (OSError, TypeError):
        return None, None
    tree = ast.parse(source)
    defs = [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    if len(defs) != 1 or defs[0].name != func.__name__:
        return None, None
    fdef = defs[0]
    fdef.decorator_list = []
    fdef.body = _lift_returns(fdef.body)
    translator = _Translator(fdef)
    fdef.body = [s for stmt in fdef.body for s in _as_list(translator.visit(stmt))]
    if not translator.changed:
        return None, None
    freevars = list(func.__code__.co_freevars)
    factory = ast.FunctionDef(
        name="__fc_factory", args=_function("x", freevars, [], []).args,
        body=[fdef, ast.Return(ast.Name(fdef.name, ast.Load()))], decorator_list=[], returns=None,
    )  # fmt: skip
    module = ast.Module(body=[factory], type_ignores=[])
    ast.fix_missing_locations(module)
    code = compile(module, filename=f"<translated {func.__qualname__}>", mode="exec")
    namespace = dict(func.__globals__)
    namespace["__fc_rt"] = __import__(__name__, fromlist=["_"])
    exec(code, namespace)  # noqa: S102  (the function's own source, rewritten)
    cells = [c.cell_contents for c in (func.__closure__ or ())]
    translated = namespace["__fc_factory"](*cells)
    translated.__defaults__ = func.__defaults__
    translated.__kwdefaults__ = func.__kwdefaults__
    functools.update_wrapper(translated, func)
    return translated, ast.unparse(fdef)


def _as_list(node):
    return node if isinstance(node, list) else [node]


def convert(func):
    """``func`` with its ``if`` / ``while`` translated, or ``func`` itself when there is nothing to
    translate or no source to read."""
    target = getattr(func, "__func__", func)
    try:
        found = _CACHE.get(target)
    except TypeError:
        return func
    if found is None:
        found = _translate(target)
        _CACHE[target] = found
    translated = found[0]
    if translated is None:
        return func
    if hasattr(func, "__self__"):
        return translated.__get__(func.__self__)
    return translated


def converted_source(func) -> Tuple[bool, str]:
    """(whether it was translated, the source the function runs)."""
    convert(func)
    found = _CACHE.get(getattr(func, "__func__", func))
    if found is not None and found[1] is not None:
        return True, found[1]
    try:
        return False, textwrap.dedent(inspect.getsource(func))
    except (OSError, TypeError) as e:
        raise ValueError(f"The source of {getattr(func, '__qualname__', func)!r} is not available: {e}") from None


# -- runtime ----------------------------------------------------------------------------------------------
def value(scope: dict, name: str):
    return scope[name] if name in scope else _Undefined(name)


def _static(v) -> bool:
    """A Variable of a static program (not a dygraph VarBase)."""
    from fluidcompat.dygraph.varbase import VarBase

    return isinstance(v, framework.Variable) and not isinstance(v, VarBase)


def _as_bool(v):
    from fluidcompat import layers

    return v if v.dtype == framework.VarType.BOOL else layers.cast(v, "bool")


def _chain(parts, op: str, stops_on: bool):
    """Python's ``and`` (``stops_on`` False) / ``or`` (True) over thunks, except that from the first
    Variable of a static program on every operand is evaluated and joined by ``op``."""
    from fluidcompat import layers

    result = parts[0]()
    for part in parts[1:]:
        if _static(result):
            other = part()
            result = getattr(layers, op)(_as_bool(result), _as_bool(other) if _static(other) else _constant(other))
        elif bool(result) == stops_on:
            return result
        else:
            result = part()
    return result


def and_(*parts):
    return _chain(parts, "logical_and", False)


def or_(*parts):
    return _chain(parts, "logical_or", True)


def not_(v):
    if _static(v):
        from fluidcompat import layers

        return layers.logical_not(_as_bool(v))
    return not v


def _constant(v):
    from fluidcompat import layers

    return layers.fill_constant([1], "bool", bool(v))


def _leaves(v) -> list:
    """The values inside nested lists and tuples (a returned ``(y, z)``), in order."""
    if isinstance(v, (list, tuple)):
        return [leaf for item in v for leaf in _leaves(item)]
    return [v]


def _rebuild(template, leaves):
    if isinstance(template, (list, tuple)):
        return type(template)(_rebuild(item, leaves) for item in template)
    return next(leaves)


def ifelse(pred, true_fn, false_fn, values, names):
    """A translated ``if``: ``layers.cond`` for a Variable of a static program, else Python's if."""
    if not _static(pred):
        return true_fn(*values) if pred else false_fn(*values)
    from fluidcompat import layers

    outcomes = {}

    def branch(fn, key):
        def run():
            # a Python number or bool a branch assigns follows the condition as a Variable
            outcomes[key] = [_carry(v, n) if _number(v) else v for v, n in zip(fn(*values), names)]
            if len(outcomes) == 2:  # both built: the names must agree before cond joins them
                _check_branches(outcomes[True], outcomes[False], names, pred)
            return [leaf for leaf in _leaves(outcomes[key]) if _static(leaf)] or None

        return run

    joined = layers.cond(_as_bool(pred), branch(true_fn, True), branch(false_fn, False))
    if joined is None:
        joined = []
    elif not isinstance(joined, (list, tuple)):
        joined = [joined]
    joined = iter(joined)
    leaves = iter([next(joined) if _static(leaf) else leaf for leaf in _leaves(outcomes[True])])
    return tuple(_rebuild(value, leaves) for value in outcomes[True])


def _check_branches(after_true, after_false, names, pred) -> None:
    for name, a, b in zip(names, after_true, after_false):
        shown = "the value returned" if name == _RETURN else f"'{name}'"
        a_leaves, b_leaves = _leaves(a), _leaves(b)
        if len(a_leaves) != len(b_leaves):
            raise TypeError(
                f"{shown} holds {len(a_leaves)} values after one branch of the translated if on '{pred.name}' and "
                f"{len(b_leaves)} after the other: both branches must give it the same structure"
            )
        for x, y in zip(a_leaves, b_leaves):
            if _static(x) and _static(y):
                continue
            if _static(x) or _static(y):
                other = y if _static(x) else x
                raise TypeError(
                    f"{shown} is a Variable after one branch of the translated if on '{pred.name}' and {other!r} "
                    "after the other: give it a Variable value in both (or before the if)"
                )
            if not (x is y or (not isinstance(x, _Undefined) and x == y)):
                raise TypeError(
                    f"{shown} is {x!r} after one branch of the translated if on '{pred.name}' and {y!r} after "
                    "the other; a static program takes both branches, so a Python value changed in them cannot "
                    "follow the condition: make it a Variable"
                )


def while_(cond_fn, body_fn, values, names):
    """A translated ``while``: ``layers.while_loop`` over the Variables it changes when the condition
    is a Variable of a static program, else Python's while."""
    first = cond_fn(*values)
    if not _static(first):
        while first:
            values = body_fn(*values)
            first = cond_fn(*values)
        return tuple(values)
    from fluidcompat import layers

    values = list(values)
    carried = [k for k, v in enumerate(values) if _static(v)]
    for k, v in enumerate(values):
        if k not in carried and not isinstance(v, _Undefined):
            carried_value = _carry(v, names[k])
            if carried_value is not None:
                values[k] = carried_value
                carried.append(k)
    carried.sort()

    def full(loop_vars):
        current = list(values)
        for k, v in zip(carried, loop_vars):
            current[k] = v
        return current

    def cond(*loop_vars):
        return _as_bool(cond_fn(*full(loop_vars)))

    def body(*loop_vars):
        result = list(body_fn(*full(loop_vars)))
        for k, (before, after) in enumerate(zip(values, result)):
            if k not in carried and not isinstance(before, _Undefined) and after is not before:
                raise TypeError(
                    f"'{names[k]}' is {before!r} before the translated while and {after!r} after a pass; a loop "
                    "of a static program cannot change a Python value: make it a Variable"
                )
        return [result[k] for k in carried]

    if not carried:
        raise TypeError("A translated while on a Variable condition must change at least one Variable")
    out = layers.while_loop(cond, body, [values[k] for k in carried])
    result = list(values)
    for k, v in zip(carried, out):
        result[k] = v
    return tuple(result)


def _number(v) -> bool:
    return isinstance(v, (bool, int, float))


def _carry(v, name):
    """A Python number a translated loop changes, as a Variable (fluid made one too)."""
    from fluidcompat import layers

    if isinstance(v, bool):
        return layers.fill_constant([1], "bool", v)
    if isinstance(v, int):
        return layers.fill_constant([1], "int64", v)
    if isinstance(v, float):
        return layers.fill_constant([1], "float32", v)
    return None


def __getattr__(name):
    # fluid 1.8's scripts imported the translator from here: `from
    # paddle.fluid.dygraph.dygraph_to_static import ProgramTranslator` (it lives in dygraph.jit)
    if name == "ProgramTranslator":
        from fluidcompat.dygraph.jit import ProgramTranslator

        return ProgramTranslator
    raise AttributeError(f"module 'paddle.fluid.dygraph.dygraph_to_static' (fluidcompat) has no attribute '{name}'")
