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
that ``return`` or ``yield``, loops with ``else``, ``for`` loops over anything but ``range(...)``,
and functions whose source is not available. ``for i in range(...)`` becomes a while over the
range (a while op when the range's bounds are Variables); ``a if c else b`` becomes a cond on a
Variable ``c``; ``x.numpy()`` of a Variable of a static program is ``x`` itself, as fluid 1.8's
translation dropped it. A list the function makes (``a = []``) and appends to or assigns an item of
inside a translated if / loop is carried as a variable, and becomes a tensor array under a Variable
condition; an attribute of an outside object assigned there (``foo.b = ...``) is carried too.
Torch-free.
"""

from __future__ import annotations

import ast
import functools
import inspect
import textwrap
import weakref
from typing import Dict, List, Tuple

from fluidcompat.dygraph.dygraph_to_static import runtime
from fluidcompat.dygraph.dygraph_to_static.runtime import _RETURN

__all__ = ["convert", "converted_source"]


# -- source rewriting ----------------------------------------------------------------------------------
def _assigned(nodes) -> List[str]:
    """Names the statements assign (not inside nested functions or classes), in order."""
    found: Dict[str, None] = {}

    attributes: Dict[str, None] = {}

    class Visitor(ast.NodeVisitor):
        def visit_Name(self, node):
            if isinstance(node.ctx, ast.Store):
                found.setdefault(node.id, None)

        def visit_Attribute(self, node):
            # ``foo.b = ...`` on an object from outside: carried as a variable too (fluid 1.8 did)
            if isinstance(node.ctx, ast.Store) and isinstance(node.value, ast.Name):
                attributes.setdefault(f"{node.value.id}.{node.attr}", None)
            self.generic_visit(node)

        def visit_FunctionDef(self, node):
            found.setdefault(node.name, None)

        visit_AsyncFunctionDef = visit_FunctionDef

        def visit_ClassDef(self, node):
            found.setdefault(node.name, None)

        def visit_Lambda(self, node):
            pass

    for node in nodes:
        Visitor().visit(node)
    names = [n for n in found if not n.startswith("__fc_")]  # not the functions of inner translations
    return names + [a for a in attributes if a.split(".")[0] not in found]


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


def _param(name: str) -> str:
    """The parameter a carried name takes in a translated branch or loop (``foo.b``: ``__fc_attr_foo__b``)."""
    return name if "." not in name else "__fc_attr_" + name.replace(".", "__")


def _attr_call(attr: str, name: str, *extra) -> ast.Call:
    obj, field = name.split(".")
    return _call(attr, [ast.Name(obj, ast.Load()), ast.Constant(field), *extra])


def _current_values(names) -> ast.Tuple:
    """``(__fc_rt.value(locals(), 'a'), __fc_rt.get_attr(foo, 'b'), ...)``: each carried name's value
    now, or an _Undefined."""
    locals_call = ast.Call(func=ast.Name("locals", ast.Load()), args=[], keywords=[])
    return ast.Tuple(
        [_attr_call("get_attr", n) if "." in n else _call("value", [locals_call, ast.Constant(n)]) for n in names],
        ast.Load(),
    )


def _prologue(params) -> list:
    """Statements giving the carried attributes their parameters' values."""
    return [ast.Expr(_attr_call("set_attr", n, ast.Name(_param(n), ast.Load()))) for n in params if "." in n]


def _function(name, params, body, returns) -> ast.FunctionDef:
    args = ast.arguments(
        posonlyargs=[], args=[ast.arg(_param(p)) for p in params], kwonlyargs=[], kw_defaults=[], defaults=[]
    )
    values = [_attr_call("get_attr", n) if "." in n else ast.Name(n, ast.Load()) for n in returns]
    result = ast.Return(ast.Tuple(values, ast.Load()))
    body = _prologue(params) + list(body) + [result]
    return ast.FunctionDef(name=name, args=args, body=body, decorator_list=[], returns=None)


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
        # names the function gives a list display (``a = []``)
        self.lists = {
            t.id
            for n in _walk_local(fdef)
            if isinstance(n, ast.Assign) and isinstance(n.value, ast.List)
            for t in n.targets
            if isinstance(t, ast.Name)
        }

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

    def visit_Lambda(self, node):
        node.body = self.visit(node.body)  # an expression: its conditional expressions and .numpy()
        return node

    def visit_Call(self, node):
        """``x.numpy()`` as ``__fc_rt.numpy(x)``: a Variable of a static program stays itself (fluid
        1.8's translation dropped ``.numpy()``: ``x.numpy()[0] > 5`` compares ``x[0]``)."""
        self.generic_visit(node)
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr == "numpy" and not node.args and not node.keywords:
            self.changed = True
            return _call("numpy", [func.value])
        return node

    def visit_IfExp(self, node):
        """``a if c else b`` as ``__fc_rt.ifexp(c, lambda: a, lambda: b)``: ``layers.cond`` on a Variable."""
        self.generic_visit(node)
        self.changed = True
        no_args = _function("x", [], [], []).args
        return _call(
            "ifexp", [self._condition(node.test), ast.Lambda(args=no_args, body=node.body),
                      ast.Lambda(args=no_args, body=node.orelse)],
        )  # fmt: skip

    def visit_For(self, node):
        """``for i in range(...)`` (no else, no return inside) as a while over the range's positions,
        which the runtime runs in Python for a Python range and as a while op for a range of
        Variables; other for loops stay as written."""
        it = node.iter
        plain = (
            isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range"
            and 1 <= len(it.args) <= 3 and not it.keywords and isinstance(node.target, ast.Name)
            and not node.orelse and not _returns_inside(node.body)
        )  # fmt: skip
        if not plain:
            self.generic_visit(node)
            return node
        rng, index = self._fresh("_fc_range"), self._fresh("_fc_index")
        target = node.target.id

        def rt(attr, *args):
            return _call(attr, [ast.Name(a, ast.Load()) if isinstance(a, str) else a for a in args])

        def assign(name, value):
            return ast.Assign(targets=[ast.Name(name, ast.Store())], value=value)

        locals_call = ast.Call(func=ast.Name("locals", ast.Load()), args=[], keywords=[])
        prefix = [
            assign(rng, _call("range_", [self.visit(a) for a in it.args])),
            assign(target, rt("range_target", rng, _call("value", [locals_call, ast.Constant(target)]))),
            assign(index, rt("range_start", rng)),
        ]
        body = [assign(target, rt("range_at", rng, index)), assign(index, rt("range_next", rng, index))]
        loop = ast.While(test=rt("range_has", rng, index), body=body + list(node.body), orelse=[])
        self.changed = True
        return prefix + _as_list(self.visit_While(loop))

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
            if n.startswith("_fc_") or "." in n or self.loads.get(n, 0) > inside.get(n, 0)
        ]
        true_name, false_name = self._fresh("true"), self._fresh("false")
        true_fn = _function(true_name, names, node.body, names)
        false_fn = _function(false_name, names, node.orelse or [ast.Pass()], names)
        call = _call(
            "ifelse",
            [self._condition(node.test), ast.Name(true_name, ast.Load()), ast.Name(false_name, ast.Load()),
             _current_values(names), ast.Tuple([ast.Constant(n) for n in names], ast.Load()),
             self._list_names(names)],
        )  # fmt: skip
        self.changed = True
        return [true_fn, false_fn] + _as_list(self._assign(names, call))

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
            name=cond_name, args=_function("x", names, [], []).args,
            body=_prologue(names) + [ast.Return(self._condition(node.test))], decorator_list=[], returns=None,
        )  # fmt: skip
        body_fn = _function(body_name, names, node.body, names)
        call = _call(
            "while_",
            [ast.Name(cond_name, ast.Load()), ast.Name(body_name, ast.Load()), _current_values(names),
             ast.Tuple([ast.Constant(n) for n in names], ast.Load()), self._list_names(names)],
        )  # fmt: skip
        self.changed = True
        return prefix + [cond_fn, body_fn] + _as_list(self._assign(names, call))

    @staticmethod
    def _assign(names, call):
        if not names:
            return ast.Expr(call)
        target = ast.Tuple([ast.Name(_param(n), ast.Store()) for n in names], ast.Store())
        return [ast.Assign(targets=[target], value=call)] + _prologue(names)

    # lists a translated if / loop appends to (``a = []`` ... ``a.append(x)``): the statements as
    # assignments of the list, so that it is carried, and a runtime that makes it a tensor array
    # when the condition is a Variable (fluid 1.8's translation made such lists tensor arrays)
    def visit_Expr(self, node):
        self.generic_visit(node)
        call = node.value
        if (
            isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "append"
            and isinstance(call.func.value, ast.Name) and call.func.value.id in self.lists
            and len(call.args) == 1 and not call.keywords
        ):  # fmt: skip
            name = call.func.value.id
            self.changed = True
            value = _call("list_append", [ast.Name(name, ast.Load()), call.args[0]])
            return ast.Assign(targets=[ast.Name(name, ast.Store())], value=value)
        return node

    def visit_Assign(self, node):
        self.generic_visit(node)
        target = node.targets[0] if len(node.targets) == 1 else None
        if (
            isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name)
            and target.value.id in self.lists and not isinstance(target.slice, (ast.Slice, ast.Tuple))
        ):  # fmt: skip
            name = target.value.id
            self.changed = True
            value = _call("list_setitem", [ast.Name(name, ast.Load()), target.slice, node.value])
            return ast.Assign(targets=[ast.Name(name, ast.Store())], value=value)
        return node

    def _list_names(self, names) -> ast.Tuple:
        return ast.Tuple([ast.Constant(n) for n in names if n in self.lists], ast.Load())


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
    namespace["__fc_rt"] = runtime
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
