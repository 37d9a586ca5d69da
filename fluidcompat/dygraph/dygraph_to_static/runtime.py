"""What translated functions call at run time (NOTE: [Declarative]): a condition that is a Variable of
a static program builds ``layers.cond`` / ``layers.while_loop``, any other runs as plain Python."""

from __future__ import annotations

from fluidcompat import framework

# the variable a translated function's lifted return writes (translator.py)
_RETURN = "_fc_return_value"


class _Undefined:
    """The value of a name a translated statement assigns but that had none before it."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"<'{self.name}' undefined: assigned only inside a translated if / while>"


def value(scope: dict, name: str):
    return scope[name] if name in scope else _Undefined(name)


def _static(v) -> bool:
    """A Variable of a static program (not a dygraph VarBase)."""
    from fluidcompat.dygraph.varbase import VarBase

    return isinstance(v, framework.Variable) and not isinstance(v, VarBase)


def _as_bool(v):
    from fluidcompat.layer_helper import layers

    return v if v.dtype == framework.VarType.BOOL else layers.cast(v, "bool")


def _scalar_pred(v):
    """A condition as a bool Variable for cond. One known to hold several values (``y[0] < 10`` of a
    [n, m] ``y``) is reshaped to [1] when the program runs, which fails there if that branch is
    reached, as fluid 1.8 built it and failed at run time."""
    from fluidcompat.layer_helper import layers

    v = _as_bool(v)
    numel = 1
    for d in v.shape:
        numel *= d
    if numel == 1 or any(d < 0 for d in v.shape):
        return v
    one = layers.fill_constant([1], "int32", 1)
    return layers.cast(layers.reshape(layers.cast(v, "int32"), one), "bool")


def _chain(parts, op: str, stops_on: bool):
    """Python's ``and`` (``stops_on`` False) / ``or`` (True) over thunks, except that from the first
    Variable of a static program on every operand is evaluated and joined by ``op``."""
    from fluidcompat.layer_helper import layers

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
        from fluidcompat.layer_helper import layers

        return layers.logical_not(_as_bool(v))
    return not v


def _constant(v):
    from fluidcompat.layer_helper import layers

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


def ifelse(pred, true_fn, false_fn, values, names, lists=()):
    """A translated ``if``: ``layers.cond`` for a Variable of a static program, else Python's if.
    ``lists``: the names of lists the branches append to, tensor arrays under a Variable condition
    (written in place by the branches, not joined by cond)."""
    if not _static(pred):
        return true_fn(*values) if pred else false_fn(*values)
    from fluidcompat.layer_helper import layers

    values = _arrays_for(values, names, lists)
    arrays = {id(v) for v in values if _is_array(v)}

    def joins(leaf) -> bool:  # a Variable cond must join: not a tensor array the branch wrote in place
        return _static(leaf) and id(leaf) not in arrays

    outcomes = {}

    def branch(fn, key):
        def run():
            # a Python number or bool a branch assigns follows the condition as a Variable
            outcomes[key] = [_carry(v, n) if _number(v) else v for v, n in zip(fn(*values), names)]
            if len(outcomes) == 2:  # both built: the names must agree before cond joins them
                _check_branches(outcomes[True], outcomes[False], names, pred)
            return [leaf for leaf in _leaves(outcomes[key]) if joins(leaf)] or None

        return run

    joined = layers.cond(_scalar_pred(pred), branch(true_fn, True), branch(false_fn, False))
    if joined is None:
        joined = []
    elif not isinstance(joined, (list, tuple)):
        joined = [joined]
    joined = iter(joined)
    leaves = iter([next(joined) if joins(leaf) else leaf for leaf in _leaves(outcomes[True])])
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


def while_(cond_fn, body_fn, values, names, lists=()):
    """A translated ``while``: ``layers.while_loop`` over the Variables it changes when the condition
    is a Variable of a static program, else Python's while. ``lists``: the names of lists the loop
    appends to, tensor arrays under a Variable condition (written in place, not loop variables)."""
    first = cond_fn(*values)
    if not _static(first):
        while first:
            values = body_fn(*values)
            first = cond_fn(*values)
        return tuple(values)
    from fluidcompat.layer_helper import layers

    values = _arrays_for(values, names, lists)
    carried = [k for k, v in enumerate(values) if _static(v) and not _is_array(v)]
    numbers = set()  # loop variables made from Python numbers: their dtype follows the body's
    for k, v in enumerate(values):
        if k not in carried and not isinstance(v, _Undefined):
            carried_value = _carry(v, names[k])
            if carried_value is not None:
                values[k] = carried_value
                carried.append(k)
                numbers.add(k)
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
            if k in numbers and _static(after) and after.dtype != values[k].dtype:
                _retype(values[k], after.dtype)  # foo.c = 5 before, a float32 Variable in the loop
        return [result[k] for k in carried]

    if not carried:
        raise TypeError("A translated while on a Variable condition must change at least one Variable")
    out = layers.while_loop(cond, body, [values[k] for k in carried])
    result = list(values)
    for k, v in zip(carried, out):
        result[k] = v
    return tuple(result)


def _retype(var, dtype) -> None:
    """Make the fill_constant Variable ``var`` (a Python number carried into a loop) one of ``dtype``."""
    block = var.block
    for op in reversed(block.ops):
        if op.type == "fill_constant" and var.name in op.output_arg_names:
            op._set_attr("dtype", int(dtype))
            value = op.attr("value")
            integral = dtype in (framework.VarType.INT32, framework.VarType.INT64)
            op._set_attr("str_value", str(int(value)) if integral else str(float(value)))
            var.desc.set_dtype(dtype)
            return


def _number(v) -> bool:
    return isinstance(v, (bool, int, float))


def _carry(v, name):
    """A Python number a translated loop changes, as a Variable (fluid made one too)."""
    from fluidcompat.layer_helper import layers

    if isinstance(v, bool):
        return layers.fill_constant([1], "bool", v)
    if isinstance(v, int):
        return layers.fill_constant([1], "int64", v)
    if isinstance(v, float):
        return layers.fill_constant([1], "float32", v)
    return None


# -- .numpy(), conditional expressions, for over range ------------------------------------------------
def numpy(v):
    """``v.numpy()``, except that a Variable of a static program is itself (fluid 1.8's translation
    dropped ``.numpy()``)."""
    return v if _static(v) else v.numpy()


def ifexp(pred, true_fn, false_fn):
    """``true_fn() if pred else false_fn()``: ``layers.cond`` for a Variable of a static program."""
    if not _static(pred):
        return true_fn() if pred else false_fn()
    from fluidcompat.layer_helper import layers

    return layers.cond(_scalar_pred(pred), true_fn, false_fn)


class _StaticRange:
    """``range(start, stop, step)`` with Variable bounds: a translated for loop's position is the
    value itself, a Variable of the bounds' dtype, counting up while below ``stop``."""

    def __init__(self, args) -> None:
        from fluidcompat.layer_helper import layers

        dtype = next(a.dtype for a in args if _static(a))
        bounds = [a if not _static(a) or a.dtype == dtype else layers.cast(a, dtype) for a in args]
        bounds = [b if _static(b) else layers.fill_constant([1], dtype, int(b)) for b in bounds]
        if len(bounds) == 1:
            bounds = [layers.fill_constant([1], dtype, 0)] + bounds
        self.start, self.stop = bounds[0], bounds[1]
        self.step = bounds[2] if len(bounds) > 2 else 1


def range_(*args):
    """``range(*args)``, or a _StaticRange when a bound is a Variable of a static program."""
    if any(_static(a) for a in args):
        return _StaticRange(args)
    return range(*args)


def range_target(r, current):
    """The loop variable before a translated for: the range's start for Variable bounds (it is
    carried through the while op), else its value before the loop."""
    if isinstance(r, _StaticRange):
        from fluidcompat.layer_helper import layers

        return layers.assign(r.start)
    return current


def range_start(r):
    if isinstance(r, _StaticRange):
        from fluidcompat.layer_helper import layers

        return layers.assign(r.start)
    return 0


def range_has(r, position):
    if isinstance(r, _StaticRange):
        return position < r.stop
    return position < len(r)


def range_at(r, position):
    return position if isinstance(r, _StaticRange) else r[position]


def range_next(r, position):
    return position + r.step if isinstance(r, _StaticRange) else position + 1


# -- dygraph learning-rate schedules called while a declarative function builds a static program ----------
# fluid 1.8's translation turned ``fluid.dygraph.CosineDecay(...)()`` into ``fluid.layers.cosine_decay(...)``:
# the schedule's static counterpart, computed from the global step counter as the program runs.
_STATIC_SCHEDULES = {
    "CosineDecay": ("cosine_decay", ("learning_rate", "step_each_epoch", "epochs")),
    "ExponentialDecay": ("exponential_decay", ("learning_rate", "decay_steps", "decay_rate", "staircase")),
    "InverseTimeDecay": ("inverse_time_decay", ("learning_rate", "decay_steps", "decay_rate", "staircase")),
    "NaturalExpDecay": ("natural_exp_decay", ("learning_rate", "decay_steps", "decay_rate", "staircase")),
    "NoamDecay": ("noam_decay", ("d_model", "warmup_steps", "learning_rate")),
    "PiecewiseDecay": ("piecewise_decay", ("boundaries", "values")),
    "PolynomialDecay": ("polynomial_decay", ("learning_rate", "decay_steps", "end_learning_rate", "power", "cycle")),
}


def static_learning_rate(schedule):
    """The static-graph learning rate of a dygraph schedule (``layers.<name>_decay`` with its
    settings), or None for a schedule fluid 1.8 could not translate."""
    found = _STATIC_SCHEDULES.get(type(schedule).__name__)
    if found is None:
        return None
    from fluidcompat.layer_helper import layers

    name, args = found
    return getattr(layers, name)(**{a: getattr(schedule, a) for a in args})


# -- lists appended to under a Variable condition: tensor arrays ----------------------------------------
def _is_array(v) -> bool:
    return _static(v) and v.type == framework.VarType.LOD_TENSOR_ARRAY


def _arrays_for(values, names, lists) -> list:
    """``values`` with each list named in ``lists`` (empty, or of Variables) as a tensor array."""
    values = list(values)
    if not lists:
        return values
    from fluidcompat.layer_helper import layers

    for k, (v, n) in enumerate(zip(values, names)):
        if n in lists and isinstance(v, list) and all(_static(e) for e in v):
            array = layers.create_array(v[0].dtype if v else "float32")
            for i, e in enumerate(v):
                layers.array_write(e, layers.fill_constant([1], "int64", i), array)
            values[k] = array
    return values


def _array_index(i):
    from fluidcompat.layer_helper import layers

    if _static(i):
        return i if i.dtype == framework.VarType.INT64 else layers.cast(i, "int64")
    return layers.fill_constant([1], "int64", int(i))


def list_append(a, v):
    """``a.append(v)``; a tensor array gets ``v`` written at its end."""
    if _is_array(a):
        from fluidcompat.layer_helper import layers

        layers.array_write(v, layers.array_length(a), a)
        return a
    a.append(v)
    return a


def list_setitem(a, i, v):
    """``a[i] = v``; in a tensor array ``v`` is written at ``i``."""
    if _is_array(a):
        from fluidcompat.layer_helper import layers

        layers.array_write(v, _array_index(i), a)
        return a
    a[i] = v
    return a


# -- attributes a translated if / loop assigns (``foo.b = ...``) -----------------------------------------
def get_attr(obj, name):
    return getattr(obj, name) if hasattr(obj, name) else _Undefined(name)


def set_attr(obj, name, value) -> None:
    if not isinstance(value, _Undefined):
        setattr(obj, name, value)
