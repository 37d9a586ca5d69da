"""``fluid.layers`` control flow: ``cond`` / ``case`` / ``switch_case``, ``While`` / ``while_loop``,
``Switch``, ``IfElse``, ``StaticRNN``, ``increment``, and ``Print`` / ``Assert`` / ``py_func``. fluid 1.8
kept comparisons and logical ops (defined in math.py), tensor arrays and rank tables (tensor_array.py)
here too; this module hands them out as fluid did."""

from __future__ import annotations

import contextlib
import functools

from fluidcompat import unique_name
from fluidcompat.dtypes import VarType, np_name
from fluidcompat.framework import Variable, default_main_program, in_dygraph_mode, layer
from fluidcompat.layer_helper import LayerHelper, check_dtype, check_variable
from fluidcompat.layers import utils as nest
from fluidcompat.layers.math import (  # noqa: F401  (fluid 1.8's control_flow names)
    equal,
    greater_equal,
    greater_than,
    less_equal,
    less_than,
    logical_and,
    logical_not,
    logical_or,
    logical_xor,
    not_equal,
)
from fluidcompat.layers.tensor_array import (  # noqa: F401  (fluid 1.8's control_flow names)
    array_length,
    array_read,
    array_to_lod_tensor,
    array_write,
    create_array,
    lod_rank_table,
    lod_tensor_to_array,
    max_sequence_len,
    reorder_lod_tensor_by_rank,
    shrink_memory,
    tensor_array_to_tensor,
)

__all__ = [
    "less_than",
    "less_equal",
    "greater_than",
    "greater_equal",
    "equal",
    "not_equal",
    "logical_and",
    "logical_or",
    "logical_not",
    "logical_xor",
    "increment",
    "create_array",
    "array_write",
    "array_read",
    "array_length",
    "tensor_array_to_tensor",
    "cond",
    "case",
    "switch_case",
    "select_input",
    "ConditionalBlock",
    "While",
    "while_loop",
    "Switch",
    "IfElse",
    "StaticRNN",
    "Print",
    "reorder_lod_tensor_by_rank",
    "Assert",
    "py_func",
]


@layer
def increment(x, value=1.0, in_place=True) -> Variable:
    """``x + value`` (op ``increment``), written back to ``x`` when ``in_place``."""
    helper = LayerHelper("increment", **locals())
    out = x if in_place else helper.create_variable_for_type_inference(dtype=x.dtype)
    helper.append_op(type="increment", inputs={"X": [x]}, outputs={"Out": [out]}, attrs={"step": float(value)})
    return out


# -- cond, case, switch_case: sub-blocks run by conditional_block ops, merged by select_input ----------
def _error_message(what, arg_name, op_name, right_value, error_value):
    return f"{what} of '{arg_name}' in {op_name} must be {right_value}, but received: {error_value}."


def _sub_block_parts(program):
    """For the control op that runs the current sub-block: the parent block, the sub-block's index,
    the parent's variables it reads before writing them (in order of first read), the parent's
    variables it writes (sorted by name), and a new step-scope variable in the parent."""
    inside = program.current_block()
    parent = program.block(inside.parent_idx)
    produced, reads = set(), []
    for op in inside.ops:
        for name in op.input_arg_names:
            if name not in produced and name not in reads:
                reads.append(name)
        produced.update(op.output_arg_names)
    found = [parent._find_var_recursive(n) for n in reads]
    written = [parent._find_var_recursive(n) for n in sorted(produced)]
    step_scope = parent.create_var(type=VarType.STEP_SCOPES)
    return parent, inside.idx, [v for v in found if v is not None], [v for v in written if v is not None], step_scope


class ConditionalBlock:
    """A sub-block of the current block, run by a ``conditional_block`` op when ``inputs`` hold."""

    def __init__(self, inputs, is_scalar_condition=False, name=None) -> None:
        self.inputs = list(inputs)
        self.is_scalar_condition = is_scalar_condition
        self.helper = LayerHelper("conditional_block", name=name)

    def block(self):
        return _SubBlockGuard(self)

    def complete(self) -> None:
        parent, sub_idx, reads, writes, step_scope = _sub_block_parts(self.helper.main_program)
        parent.append_op(
            type="conditional_block",
            inputs={"Cond": self.inputs, "Input": reads},
            outputs={"Out": writes, "Scope": [step_scope]},
            attrs={"sub_block": sub_idx, "is_scalar_condition": self.is_scalar_condition},
        )


class _SubBlockGuard:
    """Opens a sub-block of the current block; on a clean exit ``owner.complete()`` appends the
    control op that runs it to the parent block."""

    def __init__(self, owner) -> None:
        self.owner = owner

    def __enter__(self):
        self.owner.helper.main_program._create_block()
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        program = self.owner.helper.main_program
        if exc_type is None:
            self.owner.complete()
        program._rollback()
        return False


@contextlib.contextmanager
def in_parent_block(program):
    """Append to the block around the current sub-block (ops before its while op) meanwhile."""
    inside = program.current_block_idx
    program.current_block_idx = program.current_block().parent_idx
    try:
        yield
    finally:
        program.current_block_idx = inside


def _copy_to_parent(var):
    if var is None:
        return None
    program = default_main_program()
    parent = program.block(program.current_block().parent_idx)
    out = parent.create_var(dtype=var.dtype, shape=var.shape, type=var.type)
    from fluidcompat.layers.creation import assign

    assign(var, out)
    return out


def _check_type(value, arg: str, types, api: str) -> None:
    """fluid 1.8.5's check_type, with its text."""
    if not isinstance(value, types):
        expected = types if isinstance(types, type) else tuple(types)
        raise TypeError(f"The type of '{arg}' in {api} must be {_type_text(expected)}, but received {type(value)}. ")


def _type_text(expected) -> str:
    names = {Variable: "<class 'paddle.fluid.framework.Variable'>"}
    if isinstance(expected, tuple):
        return "(" + ", ".join(names.get(t, str(t)) for t in expected) + ")"
    return names.get(expected, str(expected))


def _check_mask(mask, api: str) -> None:
    if not isinstance(mask, Variable):
        raise TypeError(
            f"The type of 'mask' in {api} must be (<class 'paddle.fluid.framework.Variable'>, <class "
            f"'paddle.fluid.core_avx.VarBase'>), but received {type(mask)}. "
        )
    check_dtype(mask.dtype, "mask", ["int32"], api)


def select_output(input, outputs, mask):
    """Write ``input`` into ``outputs[mask]`` (op ``select_output``)."""
    _check_type(input, "input", Variable, "select_output")
    _check_mask(mask, "select_output")
    _check_type(outputs, "outputs", (list, tuple), "select_output")
    helper = LayerHelper("select_output")
    helper.append_op(type="select_output", inputs={"X": [input], "Mask": [mask]}, outputs={"Out": list(outputs)})
    return outputs


def split_lod_tensor(input, mask, level=0):
    """The sequences (of LoD ``level``) of ``input`` whose ``mask`` row is true, and those whose row is
    false (op ``split_lod_tensor``)."""
    _check_type(input, "input", (Variable, list, tuple, type(None)), "fluid.layers.split_lod_tensor")
    _check_type(mask, "mask", (Variable, list), "fluid.layers.split_lod_tensor")
    _check_type(level, "level", int, "fluid.layers.split_lod_tensor")
    helper = LayerHelper("split_lod_tensor")
    out_true = helper.create_variable_for_type_inference(dtype=input.dtype)
    out_false = helper.create_variable_for_type_inference(dtype=input.dtype)
    helper.append_op(
        type="split_lod_tensor",
        inputs={"X": [input], "Mask": [mask]},
        outputs={"OutTrue": [out_true], "OutFalse": [out_false]},
        attrs={"level": level},
    )
    return out_true, out_false


def merge_lod_tensor(in_true, in_false, x, mask, level=0):
    """``in_true``'s and ``in_false``'s sequences back in ``x``'s order by ``mask`` (op ``merge_lod_tensor``)."""
    api = "fluid.layers.merge_lod_tensor"
    _check_type(in_true, "in_true", (Variable, list, tuple, type(None)), api)
    _check_type(in_false, "in_false", (Variable, list, tuple, type(None)), api)
    _check_type(x, "x", (Variable, list, tuple, type(None)), api)
    _check_type(mask, "mask", (Variable, list), api)
    _check_type(level, "level", int, api)
    return _merge_lod_tensor(in_true, in_false, x, mask, level)


def select_input(inputs, mask):
    """``inputs[mask]`` (op ``select_input``)."""
    _check_type(inputs, "inputs", (list, tuple), "select_input")
    _check_mask(mask, "select_input")
    helper = LayerHelper("select_input")
    out = helper.create_variable(dtype=inputs[1].dtype, shape=inputs[1].shape, type=inputs[1].type)
    helper.append_op(type="select_input", inputs={"X": list(inputs), "Mask": [mask]}, outputs={"Out": [out]})
    return out


@layer
def cond(pred, true_fn=None, false_fn=None, name=None):
    """Run ``true_fn`` or ``false_fn`` as fluid 1.8 built it: two ``conditional_block`` sub-blocks
    (the second on ``logical_not(pred)``) whose outputs a ``select_input`` op merges."""
    check_variable(pred, "pred", "fluid.layers.cond")
    if pred.dtype != VarType.BOOL:
        raise TypeError(
            f"The data type of 'pred' in fluid.layers.cond must be ['bool'], but received {np_name(pred.dtype)}. "
        )
    numel = 1
    for d in pred.shape:
        numel *= d
    if numel != 1 and all(d >= 0 for d in pred.shape):
        raise ValueError(
            f"The pred of fluid.layers.cond must hold a single bool (shape [1]). Received: {pred.name} with shape "
            f"{tuple(pred.shape)}"
        )
    true_out = false_out = None
    if true_fn is not None:
        if not callable(true_fn):
            raise TypeError(f"The true_fn in cond must be callable, but received {type(true_fn).__name__}")
        with ConditionalBlock([pred], is_scalar_condition=True).block():
            origin = true_fn()
            if origin is not None:
                true_out = nest.pack_sequence_as(origin, [_copy_to_parent(v) for v in nest.flatten(origin)])
    if false_fn is not None:
        if not callable(false_fn):
            raise TypeError(f"The false_fn in cond must be callable, but received {type(false_fn).__name__}")
        with ConditionalBlock([logical_not(pred)], is_scalar_condition=True).block():
            origin = false_fn()
            if origin is not None:
                false_out = nest.pack_sequence_as(origin, [_copy_to_parent(v) for v in nest.flatten(origin)])
    if true_out is None and false_out is None:
        return None
    if true_out is None:
        raise ValueError(
            "Incompatible return values of true_fn and false_fn in cond: true_fn returns None while "
            "false_fn returns non-None"
        )
    if false_out is None:
        raise ValueError(
            "Incompatible return values of true_fn and false_fn in cond: true_fn returns non-None while "
            "false_fn returns None"
        )
    try:
        nest.assert_same_structure(true_out, false_out, check_types=False)
    except ValueError:
        raise ValueError(
            "Incompatible return values of true_fn and false_fn in cond: the two branches return "
            f"different structures. Received: {true_out!r} and {false_out!r}"
        ) from None
    from fluidcompat.layers.manipulation import cast

    mask = cast(pred, dtype="int32")
    merged = [select_input([f, t], mask) for f, t in zip(nest.flatten(false_out), nest.flatten(true_out))]
    return nest.pack_sequence_as(false_out, merged)


@layer
def case(pred_fn_pairs, default=None, name=None):
    """The first ``fn`` whose ``pred`` holds, else ``default``; without ``default`` the last pair's
    ``fn`` is the default, as in fluid 1.8."""
    if not isinstance(pred_fn_pairs, (list, tuple)):
        raise TypeError(
            f"The type of 'pred_fn_pairs' in case must be (<class 'list'>, <class 'tuple'>), but "
            f"received {type(pred_fn_pairs)}. "
        )
    for pair in pred_fn_pairs:
        if not isinstance(pair, tuple):
            raise TypeError(_error_message("The elements' type", "pred_fn_pairs", "case", tuple, type(pair)))
        if len(pair) != 2:
            raise TypeError(_error_message("The tuple's size", "pred_fn_pairs", "case", "2", f"{len(pair)}-tuple"))
        pred, fn = pair
        if not isinstance(pred, Variable):
            raise TypeError(_error_message("The pred's type", "pred_fn_pairs", "case", "boolean Variable", type(pred)))
        if not callable(fn):
            raise TypeError(f"The fn for {pred.name} of pred_fn_pairs in Op(case) must be callable.")
    pairs = list(pred_fn_pairs)
    if default is None:
        default = pairs[-1][1]
        pairs = pairs[:-1]
    elif not callable(default):
        raise TypeError("The default in Op(case) must be callable.")
    false_fn = default
    for pred, true_fn in reversed(pairs):
        false_fn = functools.partial(cond, pred=pred, true_fn=true_fn, false_fn=false_fn)
    return false_fn()


@layer
def switch_case(branch_index, branch_fns, default=None, name=None):
    """Run the function keyed by ``branch_index``; without ``default`` the largest key's function."""
    check_variable(branch_index, "branch_index", "switch_case")
    if np_name(branch_index.dtype) not in ("uint8", "int32", "int64"):
        raise TypeError(
            f"The data type of 'branch_index' in switch_case must be ['uint8', 'int32', 'int64'], but "
            f"received {np_name(branch_index.dtype)}. "
        )
    if branch_index.dtype != VarType.INT64:
        from fluidcompat.layers.manipulation import cast

        branch_index = cast(branch_index, "int64")
    if not isinstance(branch_fns, (list, tuple, dict)):
        raise TypeError(
            f"The type of 'branch_fns' in switch_case must be (<class 'list'>, <class 'tuple'>, "
            f"<class 'dict'>), but received {type(branch_fns)}. "
        )
    fns = list(branch_fns.items()) if isinstance(branch_fns, dict) else list(branch_fns)
    if all(callable(fn) for fn in fns):
        fns = list(enumerate(fns))
    keys = []
    for pair in fns:
        if not isinstance(pair, tuple):
            raise TypeError(_error_message("The elements' type", "branch_fns", "switch_case", tuple, type(branch_fns)))
        if len(pair) != 2:
            raise TypeError(_error_message("The tuple's size", "branch_fns", "switch_case", "2", f"{len(pair)}-tuple"))
        key, fn = pair
        if not isinstance(key, int):
            raise TypeError(_error_message("The key's type", "branch_fns", "switch_case", int, type(key)))
        if key in keys:
            raise ValueError(f"The key in 'branch_fns' must be unique, but '{key}' appears more than once.")
        keys.append(key)
        if not callable(fn):
            raise TypeError(
                _error_message(f"The type of function for key {key}", "branch_fns", "switch_case", "callable", type(fn))
            )
    if default is None:
        ordered = sorted(fns, key=lambda p: p[0])
        default = ordered[-1][1]
        fns = ordered[:-1]
    elif not callable(default):
        raise TypeError("The default in Op(case) must be callable.")
    from fluidcompat.layers.creation import fill_constant

    pairs = [(equal(branch_index, fill_constant(shape=[1], dtype="int64", value=k)), fn) for k, fn in fns]
    false_fn = default
    for pred, true_fn in pairs:  # fluid 1.8 nests them in this order (the last pair outermost)
        false_fn = functools.partial(cond, pred=pred, true_fn=true_fn, false_fn=false_fn)
    return false_fn()


# -- While, while_loop: a sub-block run by a ``while`` op as long as its Condition holds -----------------
def _check_single_bool(cond, op_name: str) -> None:
    check_variable(cond, "cond", op_name)
    if cond.dtype != VarType.BOOL:
        raise TypeError(f"The data type of 'cond' in {op_name} must be ['bool'], but received {np_name(cond.dtype)}. ")
    numel = functools.reduce(lambda a, b: a * b, cond.shape, 1)
    if numel != 1:
        raise TypeError(f"condition expected shape as [], but given shape as {list(cond.shape)}.")


class While:
    """``with While(cond).block(): ...`` runs the block while ``cond`` (a bool of one element, which
    the block must update) holds; built as fluid 1.8's ``while`` op."""

    def __init__(self, cond, is_test=False, name=None) -> None:
        _check_single_bool(cond, "fluid.layers.While")
        self.cond_var = cond
        self.is_test = is_test
        self.helper = LayerHelper("while", name=name)

    def block(self):
        return _SubBlockGuard(self)

    def complete(self) -> None:
        parent, sub_idx, reads, writes, step_scope = _sub_block_parts(self.helper.main_program)
        parent.append_op(
            type="while",
            inputs={"X": reads, "Condition": [self.cond_var]},
            outputs={"Out": writes, "StepScopes": [step_scope]},
            attrs={"sub_block": sub_idx, "is_test": self.is_test},
        )


@layer
def while_loop(cond, body, loop_vars, is_test=False, name=None):
    """Repeat ``loop_vars = body(*loop_vars)`` while ``cond(*loop_vars)`` holds (a ``while`` op whose
    sub-block assigns the body's results back to ``loop_vars``); returns ``loop_vars``."""
    from fluidcompat.layers.creation import assign

    if not callable(cond):
        raise TypeError("cond in while_loop should be callable")
    if not callable(body):
        raise TypeError("body in while_loop should be callable")
    if not isinstance(loop_vars, (list, tuple)):
        raise TypeError(f"The type of 'loop_vars' in while_loop must be (list, tuple), but received {type(loop_vars)}.")
    if len(loop_vars) == 0:
        raise ValueError("loop_vars in while_loop should not be empty")
    if in_dygraph_mode():  # fluid 1.8 ran the loop in Python over the values
        now = cond(*loop_vars)
        while bool(now.numpy().reshape(-1)[0]):
            outs = body(*loop_vars)
            outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
            if len(outs) != len(loop_vars):
                raise ValueError(
                    "body in while_loop should return the same arity (length and structure) and types as loop_vars"
                )
            now, loop_vars = cond(*outs), outs
        return loop_vars
    if any(isinstance(v, (list, tuple)) for v in loop_vars):  # nested loop variables, as fluid 1.8 took them
        from fluidcompat.layers.utils import flatten, pack_sequence_as

        structure = list(loop_vars)

        def flat_body(*flat):
            outs = body(*pack_sequence_as(structure, list(flat)))
            return flatten(list(outs) if isinstance(outs, (list, tuple)) else [outs])

        flat = while_loop(lambda *f: cond(*pack_sequence_as(structure, list(f))), flat_body, flatten(structure))
        return pack_sequence_as(structure, list(flat))
    pre_cond = cond(*loop_vars)
    if not isinstance(pre_cond, Variable):
        raise TypeError(
            f"The type of 'var of cond returned' in fluid.layers.while_loop must be <class 'Variable'>, "
            f"but received {type(pre_cond)}."
        )
    if functools.reduce(lambda a, b: a * b, pre_cond.shape, 1) != 1:
        raise TypeError(
            f"the shape of the variable returned by cond should be [1],but given shape as {list(pre_cond.shape)}."
        )
    loop = While(pre_cond, is_test, name)
    with loop.block():
        outs = body(*loop_vars)
        if not isinstance(outs, (list, tuple)):
            outs = [outs]
        if len(outs) != len(loop_vars):
            raise ValueError(
                "body in while_loop should return the same arity (length and structure) and types as loop_vars. "
                f"Received: {len(outs)} values for {len(loop_vars)} loop_vars"
            )
        for out, var in zip(outs, loop_vars):
            if not isinstance(out, Variable):
                raise TypeError(f"body in while_loop must return Variables. Received: {type(out).__name__}")
            if out.dtype != var.dtype or (
                len(out.shape) != len(var.shape)
                or any(a >= 0 and b >= 0 and a != b for a, b in zip(out.shape, var.shape))
            ):
                raise ValueError(
                    f"body in while_loop changes loop variable '{var.name}': it enters as "
                    f"{np_name(var.dtype)}{list(var.shape)} and the body returns {np_name(out.dtype)}{list(out.shape)} "
                    f"({out.name}). A loop variable must keep its shape and dtype."
                )
        now_cond = cond(*outs)
        for out, var in zip(outs, loop_vars):
            assign(out, var)
        assign(now_cond, pre_cond)
    return loop_vars


# -- Switch, IfElse ---------------------------------------------------------------------------------
class Switch:
    """``with Switch() as switch:`` then ``with switch.case(cond):`` blocks and an optional
    ``with switch.default():``: the first case whose bool scalar holds runs. Built as fluid 1.8 did:
    one ``conditional_block`` per case, its condition ``cond and not (any earlier cond)``."""

    def __init__(self, name=None) -> None:
        self.helper = LayerHelper("switch", name=name)
        self.inside_scope = False
        self.pre_not_conditions = []

    def case(self, condition):
        if not self.inside_scope:
            raise ValueError("case should be called inside with")
        check_variable(condition, "condition", "the member function case of fluid.layers.Switch")
        check_dtype(condition.dtype, "condition", ["bool"], "the member function case of fluid.layers.Switch")
        if not self.pre_not_conditions:
            block = ConditionalBlock([condition], is_scalar_condition=True)
            self.pre_not_conditions.append(logical_not(condition))
        else:
            pre_not = self.pre_not_conditions[-1]
            self.pre_not_conditions.append(logical_and(pre_not, logical_not(condition)))
            block = ConditionalBlock([logical_and(pre_not, condition)], is_scalar_condition=True)
        return block.block()

    def default(self):
        if not self.pre_not_conditions:
            raise ValueError("there should be at least one condition")
        return ConditionalBlock([self.pre_not_conditions[-1]], is_scalar_condition=True).block()

    def __enter__(self):
        self.inside_scope = True
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        self.inside_scope = False
        return False


class IfElse:
    """Row-wise if/else over a batch: ``cond`` is a bool [N, 1]; ``ie.input(x)`` inside
    ``ie.true_block()`` gives the rows of ``x`` where it holds (``false_block()``: the others), and
    ``ie()`` merges each branch's ``ie.output(...)`` back into N rows. Built as fluid 1.8 did, with
    ``split_lod_tensor``, two ``conditional_block`` ops and ``merge_lod_tensor`` (rows only, no LoD)."""

    OUT_IF_ELSE_BLOCKS = 0
    IN_IF_ELSE_TRUE_BLOCKS = 1
    IN_IF_ELSE_FALSE_BLOCKS = 2

    def __init__(self, cond, name=None) -> None:
        check_variable(cond, "cond", "fluid.layers.IfElse")
        if name is not None and not isinstance(name, str):
            raise TypeError(
                f"The type of 'name' in fluid.layers.IfElse must be (<class 'str'>, <class 'NoneType'>), but "
                f"received {type(name)}. "
            )
        self.helper = LayerHelper("ifelse", name=name)
        self.cond = cond
        self.input_table = {}
        self.status = IfElse.OUT_IF_ELSE_BLOCKS
        self.conditional_true_block = ConditionalBlock(inputs=[cond])
        self.conditional_false_block = ConditionalBlock(inputs=[cond])
        self.output_table = ([], [])  # (false outputs, true outputs)

    def _parent_block(self):
        program = self.helper.main_program
        return program.block(program.current_block().parent_idx)

    def input(self, x):
        if self.status == IfElse.OUT_IF_ELSE_BLOCKS:
            raise ValueError("input must in true/false blocks")
        if id(x) not in self.input_table:
            parent = self._parent_block()
            sides = [
                parent.create_var(
                    name=unique_name.generate_with_ignorable_key("ifelse_input" + self.helper.name), dtype=x.dtype
                )
                for _ in range(2)
            ]
            parent.append_op(
                type="split_lod_tensor",
                inputs={"X": [x], "Mask": [self.cond]},
                outputs={"OutTrue": [sides[0]], "OutFalse": [sides[1]]},
                attrs={"level": 0},
            )
            self.input_table[id(x)] = (sides[0], sides[1], x)  # x kept alive: its id stays its own
        out_true, out_false, _ = self.input_table[id(x)]
        return out_true if self.status == IfElse.IN_IF_ELSE_TRUE_BLOCKS else out_false

    def true_block(self):
        return _IfElseBlockGuard(True, self)

    def false_block(self):
        return _IfElseBlockGuard(False, self)

    def output(self, *outs):
        from fluidcompat.layers.creation import assign

        if self.status == IfElse.OUT_IF_ELSE_BLOCKS:
            raise ValueError("output can only be invoked in the sub-block")
        table = self.output_table[1 if self.status == IfElse.IN_IF_ELSE_TRUE_BLOCKS else 0]
        parent = self._parent_block()
        for each in outs:
            check_variable(each, "each output", "fluid.layers.IfElse.output")
            outside = parent.create_var(
                name=unique_name.generate_with_ignorable_key(f"{self.helper.name}_output"), dtype=each.dtype
            )
            table.append(outside)
            assign(each, outside)

    def __call__(self):
        if self.status != IfElse.OUT_IF_ELSE_BLOCKS:
            raise ValueError("IfElse::__call__ must be out of sub-block")
        false_len, true_len = map(len, self.output_table)
        if false_len == 0 and true_len == 0:
            raise ValueError("Must invoke true_block/false_block before __call__")
        if false_len != true_len and false_len != 0 and true_len != 0:
            raise ValueError(
                f"The output side must be same: the true block gave {true_len} outputs and the false block {false_len}"
            )
        if false_len == 0 or true_len == 0:
            return self.output_table[0 if false_len != 0 else 1]
        return [
            _merge_lod_tensor(true_var, false_var, self.cond, self.cond)
            for false_var, true_var in zip(*self.output_table)
        ]


def _merge_lod_tensor(in_true, in_false, x, mask, level=0):
    """The merge_lod_tensor op (IfElse's outputs, and the checked layer's)."""
    helper = LayerHelper("merge_lod_tensor")
    out = helper.create_variable_for_type_inference(dtype=in_true.dtype)
    helper.append_op(
        type="merge_lod_tensor",
        inputs={"X": [x], "Mask": [mask], "InTrue": [in_true], "InFalse": [in_false]},
        outputs={"Out": [out]},
        attrs={"level": level},
    )
    return out


class _IfElseBlockGuard:
    def __init__(self, is_true: bool, ifelse: IfElse) -> None:
        if ifelse.status != IfElse.OUT_IF_ELSE_BLOCKS:
            raise ValueError("You cannot invoke IfElse.block() inside a block")
        self.is_true = is_true
        self.ie = ifelse
        owner = ifelse.conditional_true_block if is_true else ifelse.conditional_false_block
        self.guard = owner.block()

    def __enter__(self):
        self.ie.status = IfElse.IN_IF_ELSE_TRUE_BLOCKS if self.is_true else IfElse.IN_IF_ELSE_FALSE_BLOCKS
        self.guard.__enter__()

    def __exit__(self, exc_type, exc, tb) -> bool:
        self.guard.__exit__(exc_type, exc, tb)
        self.ie.status = IfElse.OUT_IF_ELSE_BLOCKS
        return False


# -- Print, Assert, py_func: ops that hand tensors to Python ----------------------------------------
@layer
def Print(
    input,
    first_n=-1,
    message=None,
    summarize=20,
    print_tensor_name=True,
    print_tensor_type=True,
    print_tensor_shape=True,
    print_tensor_lod=True,
    print_phase="both",
) -> Variable:
    """``input`` unchanged, written to stdout each time the op runs (and its gradient in backward),
    as fluid 1.8's print op wrote it."""
    check_variable(input, "input", "fluid.layers.Print")
    check_dtype(input.dtype, "input", ["float32", "float64", "int32", "int64", "bool"], "fluid.layers.Print")
    if print_phase.upper() not in ("FORWARD", "BACKWARD", "BOTH"):
        raise ValueError(f"print_phase must be 'forward', 'backward' or 'both'. Received: {print_phase!r}")
    helper = LayerHelper("print_" + input.name, **locals())
    out = helper.create_variable_for_type_inference(dtype=input.dtype)
    helper.append_op(
        type="print",
        inputs={"In": [input]},
        outputs={"Out": [out]},
        attrs={
            "first_n": first_n,
            "summarize": summarize,
            "message": message or "",
            "print_tensor_name": print_tensor_name,
            "print_tensor_type": print_tensor_type,
            "print_tensor_shape": print_tensor_shape,
            "print_tensor_lod": print_tensor_lod,
            "print_phase": print_phase.upper(),
        },
    )
    return out


@layer
def Assert(cond, data=None, summarize=20, name=None):
    """Fail the run when the bool scalar ``cond`` is false, printing ``data`` (op ``assert``; fluid
    1.8 had no Assert: this is Paddle 2's)."""
    _check_single_bool(cond, "fluid.layers.Assert")
    helper = LayerHelper("assert", name=name)
    data = [] if data is None else list(data)
    for d in data:
        check_variable(d, "data", "fluid.layers.Assert")
    return helper.append_op(type="assert", inputs={"Cond": [cond], "Data": data}, attrs={"summarize": summarize})


@layer
def py_func(func, x, out, backward_func=None, skip_vars_in_backward_input=None):
    """``out = func(*x)`` run in Python on each pass (op ``py_func``): ``func`` gets LoDTensors and
    returns numpy arrays (or LoDTensors) for the Variables in ``out``, which the caller created;
    ``backward_func`` gets x, out and out's gradients (less ``skip_vars_in_backward_input``) and
    returns x's gradients."""
    from fluidcompat_ops.python import register_callable

    if not callable(func):
        raise TypeError("func must be a Python function")
    allowed = (list, tuple, Variable, type(None))
    for value, arg in ((x, "X"), (out, "Out")):
        if not isinstance(value, allowed):
            names = ", ".join(repr(t) for t in allowed)
            raise TypeError(f"The type of '{arg}' in py_func must be ({names}), but received {type(value)!r}. ")
    xs = [] if x is None else [x] if isinstance(x, Variable) else list(x)
    outs = [] if out is None else [out] if isinstance(out, Variable) else list(out)
    for v in xs + outs:
        check_variable(v, "each of x and out", "py_func")
    if backward_func is not None and not callable(backward_func):
        raise TypeError("backward_func must be a Python function")
    skip = skip_vars_in_backward_input
    skip = [] if skip is None else [skip] if isinstance(skip, Variable) else list(skip)
    known = {v.name for v in xs + outs}
    for v in skip:
        if v.name not in known:
            raise ValueError(f"Variable {v.name} is not found in forward inputs and outputs")
    helper = LayerHelper("py_func")
    helper.append_op(
        type="py_func",
        inputs={"X": xs},
        outputs={"Out": outs},
        attrs={
            "forward_callable_id": register_callable(func),
            "backward_callable_id": register_callable(backward_func) if backward_func is not None else -1,
            "backward_skip_vars": [v.name for v in skip],
        },
    )
    return out


# -- StaticRNN: a fixed-length recurrence, unrolled into the enclosing block --------------------------
class StaticRNN:
    """``with rnn.step():`` describes one time step over time-major inputs ([seq_len, batch, ...]):
    ``step_input``, ``memory`` / ``update_memory``, ``step_output``; ``rnn()`` gives the outputs
    stacked over time. fluid 1.8 ran the step block with a ``recurrent`` op. fluidcompat unrolls it
    when the block closes if the inputs' number of time steps is known then (every step is then
    ordinary ops), and otherwise runs it as the body of a ``while`` op over the steps."""

    def __init__(self, name=None) -> None:
        self.helper = LayerHelper("static_rnn", name=name)
        self.seq_len = None
        self.inputs = []  # (placeholder in the step block, outer time-major variable)
        self.memories = {}  # placeholder name -> [placeholder, init variable, updated variable]
        self.outputs = []
        self.results = None
        self._in_step = False

    def step(self):
        return _StaticRNNGuard(self)

    def _assert_in_step(self, what):
        if not self._in_step:
            raise ValueError(f"You must invoke {what} in rnn.step()")

    def step_input(self, x):
        self._assert_in_step("step_input")
        check_variable(x, "x", "fluid.layers.StaticRNN.step_input")
        if self.seq_len is None:
            self.seq_len = x.shape[0]
        elif x.shape[0] != -1 and self.seq_len != x.shape[0]:
            raise ValueError("Static RNN only take fix seq_len input")
        ipt = self.helper.main_program.current_block().create_var(
            name=unique_name.generate("static_rnn_step_input"), shape=tuple(x.shape[1:]), dtype=x.dtype
        )
        self.inputs.append((ipt, x))
        return ipt

    def memory(self, init=None, shape=None, batch_ref=None, init_value=0.0, init_batch_dim_idx=0, ref_batch_dim_idx=1):
        self._assert_in_step("memory")
        if init is None:
            if shape is None or batch_ref is None:
                raise ValueError("if init is None, memory at least need shape and batch_ref")
            outer_ref = next((x for ipt, x in self.inputs if ipt is batch_ref), batch_ref)
            program = self.helper.main_program
            inside = program.current_block_idx
            program.current_block_idx = program.current_block().parent_idx
            try:
                from fluidcompat.layers.creation import fill_constant_batch_size_like

                init = fill_constant_batch_size_like(
                    outer_ref, list(shape), batch_ref.dtype, init_value, ref_batch_dim_idx, init_batch_dim_idx
                )
            finally:
                program.current_block_idx = inside
        pre = self.helper.main_program.current_block().create_var(
            name=unique_name.generate("static_rnn_memory"), shape=tuple(init.shape), dtype=init.dtype
        )
        self.memories[pre.name] = [pre, init, None]
        return pre

    def update_memory(self, mem, var):
        self._assert_in_step("update_memory")
        if mem.name not in self.memories:
            raise ValueError(f"update_memory: '{mem.name}' is not a memory of this StaticRNN")
        check_variable(var, "var", "fluid.layers.StaticRNN.update_memory")
        self.memories[mem.name][2] = var

    def step_output(self, o):
        self._assert_in_step("step_output")
        check_variable(o, "o", "fluid.layers.StaticRNN.step_output")
        self.outputs.append(o)

    def output(self, *outputs):
        for o in outputs:
            self.step_output(o)

    def __call__(self, *args, **kwargs):
        if self.results is None:
            raise ValueError("RNN output can only be retrieved after rnn block")
        if not self.results:
            raise ValueError("RNN has no output")
        return self.results[0] if len(self.results) == 1 else self.results

    def _unroll(self, step_block) -> None:
        from fluidcompat.layers.indexing import slice as slice_
        from fluidcompat.layers.manipulation import squeeze, stack

        for pre, _, new in self.memories.values():
            if new is None:
                raise ValueError(f"StaticRNN: memory '{pre.name}' is never updated: call rnn.update_memory")
        if not self.inputs:
            raise ValueError("StaticRNN needs at least one rnn.step_input: it sets the number of time steps")
        ops = list(step_block.ops)
        for op in ops:
            if "sub_block" in op.attrs:
                raise NotImplementedError(f"StaticRNN: control flow ({op.type}) inside a step is not supported yet")
        if self.seq_len is None or self.seq_len < 0:
            self._loop(step_block)
            return
        parent = self.helper.main_program.current_block()
        local = set(step_block.vars)
        value = {name: init.name for name, (_, init, _) in self.memories.items()}
        per_step = [[] for _ in self.outputs]
        for t in range(self.seq_len):
            rename = dict(value)
            for ipt, x in self.inputs:
                rename[ipt.name] = squeeze(slice_(x, axes=[0], starts=[t], ends=[t + 1]), [0]).name
            for op in ops:
                ins = {s: [rename.get(n, n) for n in names] for s, names in op.inputs.items()}
                outs = {}
                for s, names in op.outputs.items():
                    new_names = []
                    for n in names:
                        if n in local:
                            v = step_block.vars[n]
                            new = parent.create_var(
                                name=unique_name.generate(f"{n}.step"), shape=v.shape, dtype=v.dtype, type=v.type
                            )
                            new.stop_gradient = v.stop_gradient
                            rename[n] = new.name
                        new_names.append(rename.get(n, n))
                    outs[s] = new_names
                attrs = {k: v for k, v in op.attrs.items() if k not in ("op_callstack",)}
                new_op = parent.append_op(type=op.type, inputs=ins, outputs=outs, attrs=attrs)
                new_op._callsite = op._callsite
            for name, (_, _, updated) in self.memories.items():
                value[name] = rename.get(updated.name, updated.name)
            for k, o in enumerate(self.outputs):
                per_step[k].append(parent.var(rename.get(o.name, o.name)))
        self.results = [stack(vs, axis=0) for vs in per_step]

    def _loop(self, step_block) -> None:
        """The step block as the body of a ``while`` op over the time steps, for inputs whose number of
        steps is known only when the program runs: step t reads row t of each input, the memories
        are loop variables, and each step output goes into a tensor array, stacked at the end."""
        from fluidcompat.layers.creation import assign, fill_constant
        from fluidcompat.layers.indexing import gather
        from fluidcompat.layers.indexing import slice as slice_
        from fluidcompat.layers.manipulation import cast, shape, squeeze

        steps = cast(slice_(shape(self.inputs[0][1]), axes=[0], starts=[0], ends=[1]), "int64")
        i = fill_constant([1], "int64", 0)
        cond = less_than(i, steps)
        # loop variables of their own, so that the initial values stay as they were
        loop_mems = {name: assign(init) for name, (_, init, _) in self.memories.items()}
        arrays = [create_array(o.dtype) for o in self.outputs]
        loop = While(cond)
        with loop.block():
            body = self.helper.main_program.current_block()
            rename = {name: v.name for name, v in loop_mems.items()}
            for ipt, x in self.inputs:
                rename[ipt.name] = squeeze(gather(x, i), [0]).name
            for op in step_block.ops:
                for n in op.output_arg_names:
                    if n in step_block.vars and n not in rename:
                        v = step_block.vars[n]
                        new = body.create_var(name=n, shape=v.shape, dtype=v.dtype, type=v.type, lod_level=v.lod_level)
                        new.stop_gradient = v.stop_gradient
                        rename[n] = n
                ins = {s: [rename.get(n, n) for n in names] for s, names in op.inputs.items()}
                outs = {s: [rename.get(n, n) for n in names] for s, names in op.outputs.items()}
                body.append_op(type=op.type, inputs=ins, outputs=outs, attrs=dict(op.attrs))._callsite = op._callsite
            for arr, o in zip(arrays, self.outputs):
                array_write(body._var_recursive(rename.get(o.name, o.name)), i, array=arr)
            # every new value is read before any memory is overwritten (one may be another's old value)
            mem_names = {v.name for v in loop_mems.values()}
            staged = []
            for name, (_, _, new) in self.memories.items():
                src = body._var_recursive(rename.get(new.name, new.name))
                staged.append((loop_mems[name], assign(src) if src.name in mem_names else src))
            for mem, src in staged:
                assign(src, mem)
            increment(i, in_place=True)
            less_than(i, steps, cond=cond)
        self.results = [tensor_array_to_tensor(arr, axis=0, use_stack=True)[0] for arr in arrays]


class _StaticRNNGuard:
    def __init__(self, rnn: StaticRNN) -> None:
        self.rnn = rnn

    def __enter__(self):
        from fluidcompat.framework import program_transaction

        # a step that fails (or cannot be unrolled) leaves the programs as they were
        self.transaction = program_transaction()
        self.transaction.__enter__()
        self.block = self.rnn.helper.main_program._create_block()
        self.rnn._in_step = True
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        program = self.rnn.helper.main_program
        self.rnn._in_step = False
        program._rollback()
        if program.blocks[-1] is self.block:  # the step block lives on only as its unrolled copies
            program.blocks.pop()
        try:
            if exc_type is None:
                self.rnn._unroll(self.block)
        except BaseException as e:
            self.transaction.__exit__(type(e), e, e.__traceback__)
            raise
        if exc_type is not None:
            self.transaction.__exit__(exc_type, exc, tb)
            return False
        self.transaction.__exit__(None, None, None)
        return False
