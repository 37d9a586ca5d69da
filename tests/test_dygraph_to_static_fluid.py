"""fluid 1.8's dygraph-to-static modules (utils, static_analysis, ifelse_transformer, loop_transformer,
variable_trans_func) and the translation of declarative functions built into static programs:
``.numpy()`` conditions, conditional expressions, ``for`` over a range of Variables with break /
continue, lists and attributes changed under a Variable condition, dygraph layers and learning-rate
schedules in a static build; values checked against plain Python / numpy."""

import inspect
import textwrap

import numpy as np
import pytest

import fluidcompat as fluid
from fluidcompat.dygraph.jit import dygraph_to_static_func


def _run(build, fetch_count=1):
    """Build ``build()`` into fresh programs, run startup and main, return the fetched values."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        outs = build()
    outs = outs if isinstance(outs, (list, tuple)) else [outs]
    exe = fluid.Executor(fluid.CPUPlace())
    if startup.global_block().ops:
        exe.run(startup)
    return exe.run(main, fetch_list=list(outs)[:fetch_count] if fetch_count else list(outs))


# -- the analysis modules ----------------------------------------------------------------------------------
def test_utils_index_source_and_api_kinds():
    gast = pytest.importorskip("gast")
    from fluidcompat.dygraph.dygraph_to_static.utils import (
        ast_to_func,
        ast_to_source_code,
        index_in_list,
        is_dygraph_api,
        is_numpy_api,
        is_paddle_api,
    )

    assert [index_in_list([1, 2, 3], v) for v in (1, 3, 7)] == [0, 2, -1]
    with pytest.raises(TypeError, match="Type of ast_root should be gast.AST or ast.AST"):
        ast_to_source_code("x = 1")

    def add(x, y):
        return x * 10 + y

    func, path = ast_to_func(gast.parse(textwrap.dedent(inspect.getsource(add))), add)
    assert func(3, 4) == 34 and path.endswith(".py")

    def call(src):
        return gast.parse(src).body[0].value

    assert is_dygraph_api(call("fluid.dygraph.to_variable(x)")) is True
    assert is_dygraph_api(call("fluid.layers.relu(x)")) is False
    assert is_paddle_api(call("fluid.layers.relu(x)")) is True
    assert is_paddle_api(call("len(x)")) is False
    assert is_numpy_api(call("np.random.uniform(0, 1)")) is True
    assert is_numpy_api(call("undefined_name(1)")) is False


def test_static_analysis_types_and_lattice():
    gast = pytest.importorskip("gast")
    from fluidcompat.dygraph.dygraph_to_static import NodeVarType, StaticAnalysisVisitor

    t = NodeVarType
    assert t.binary_op_output_type(t.INT, t.FLOAT) == t.FLOAT
    assert t.binary_op_output_type(t.UNKNOWN, t.TENSOR) == t.TENSOR
    assert t.binary_op_output_type(t.NUMPY_NDARRAY, t.TENSOR) == t.UNKNOWN
    assert t.binary_op_output_type(t.STRING, t.INT) == t.UNKNOWN
    source = """
    def f(x, k=2.0):
        a = 1
        b = a * k
        c = fluid.dygraph.to_variable(x)
        d = fluid.layers.relu(c)
        e = np.random.uniform(0, 1, [2])
        g = a < b
        h = None
    """
    visitor = StaticAnalysisVisitor(gast.parse(textwrap.dedent(source)))
    env = visitor.get_var_env()
    assert len(env.cur_scope.sub_scopes) == 1
    env.cur_scope = env.cur_scope.sub_scopes[0]
    assert env.get_scope_var_type() == {
        "k": {t.FLOAT},
        "a": {t.INT},
        "b": {t.FLOAT},
        "c": {t.TENSOR},
        "d": {t.PADDLE_RETURN_TYPES},
        "e": {t.NUMPY_NDARRAY},
        "g": {t.BOOLEAN},
        "h": {t.NONE},
    }
    # every node wrapped once, children under their parents
    root = visitor.get_node_wrapper_root()
    assert visitor.get_node_to_wrapper_map()[root.node] is root
    assert all(child.parent is root for child in root.children)


def test_name_ids_and_if_condition():
    gast = pytest.importorskip("gast")
    from fluidcompat.dygraph.dygraph_to_static.ifelse_transformer import IfConditionVisitor, get_name_ids
    from fluidcompat.dygraph.dygraph_to_static.static_analysis import StaticAnalysisVisitor

    source = """
    def f(x, y):
        z = x + y
        if z > 0:
            z = z * 2
        return z
    """
    ids = get_name_ids([gast.parse(textwrap.dedent(source))])
    kinds = {name: [type(c).__name__ for c in ctxs] for name, ctxs in ids.items()}
    assert kinds == {"x": ["Param", "Load"], "y": ["Param", "Load"], "z": ["Store", "Load", "Load", "Store"]}

    plain = IfConditionVisitor(gast.parse("x is None").body[0].value)
    assert not plain.is_control_flow() and plain.transform()[1] == []
    code = """
    def foo(x):
        n = fluid.layers.shape(x)
        if x is not None and n[0] > 16 or 2 > 1:
            x = x + 1
    """
    tree = gast.parse(textwrap.dedent(code))
    test = tree.body[0].body[1].test
    visitor = IfConditionVisitor(test, StaticAnalysisVisitor(tree))
    assert visitor.is_control_flow()
    new_test, assigns = visitor.transform()
    # bool(x is not None) as a tensor, logical_and with n[0] > 16, bool(2 > 1), logical_or
    assert isinstance(new_test, gast.Name) and len(assigns) == 4
    with pytest.raises(AssertionError, match="Type of input node should be gast.AST"):
        IfConditionVisitor("a + b")


def test_loop_variable_names():
    gast = pytest.importorskip("gast")
    from fluidcompat.dygraph.dygraph_to_static.loop_transformer import NameVisitor

    source = """
    def f(n):
        scale = 2
        total = fluid.layers.fill_constant([1], 'int64', 0)
        for i in range(n):
            total = total + i * scale
            last = total
        return last
    """
    tree = gast.parse(textwrap.dedent(source))
    loop = next(node for node in gast.walk(tree) if isinstance(node, gast.For))
    loop_vars, created = NameVisitor(tree).get_loop_var_names(loop)
    # scale: a read-only Python number, not a loop variable; last: made in the loop, read after it
    assert loop_vars == {"i", "n", "total", "last"} and created == {"last"}


def test_variable_trans_func():
    pytest.importorskip("gast")
    from fluidcompat.dygraph.dygraph_to_static.utils import ast_to_source_code
    from fluidcompat.dygraph.dygraph_to_static.variable_trans_func import (
        create_fill_constant_node,
        data_layer_not_check,
        to_static_variable,
    )

    want = {
        ("a", 1.5): "a = fluid.layers.fill_constant(shape=[1], dtype='float64', value=1.5)",
        ("b", False): "b = fluid.layers.fill_constant(shape=[1], dtype='bool', value=False)",
        ("c", 7): "c = fluid.layers.fill_constant(shape=[1], dtype='int64', value=7)",
    }
    for (name, value), source in want.items():
        assert ast_to_source_code(create_fill_constant_node(name, value)).strip() == source
    assert create_fill_constant_node("d", None) is None and create_fill_constant_node("d", [1]) is None
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        d = data_layer_not_check("d", (None, 2))
        three = to_static_variable(3)
        assert to_static_variable("s") == "s"
    assert d.shape == (-1, 2) and d.name == "d"
    feed = np.arange(6, dtype="float32").reshape(2, 3)  # not checked against the declared shape
    got_d, got_three = fluid.Executor(fluid.CPUPlace()).run(main, feed={"d": feed}, fetch_list=[d, three])
    np.testing.assert_array_equal(got_d, feed)
    assert got_three.dtype == np.int64 and int(got_three[0]) == 3


def test_package_names_fluid_scripts_import():
    from fluidcompat.dygraph import dygraph_to_static as d2s
    from fluidcompat.dygraph.jit import ProgramTranslator

    assert d2s.ProgramTranslator is ProgramTranslator
    assert d2s.program_translator.ProgramTranslator is ProgramTranslator
    assert d2s.convert_function_with_cache(_numpy_condition) is d2s.convert_function_with_cache(_numpy_condition)
    assert fluid.core.VarBase is fluid.dygraph.VarBase


# -- translation of declarative functions built into static programs ---------------------------------------
def _numpy_condition(x):
    if fluid.layers.mean(x).numpy()[0] > 0.5:
        x = x - 1.0
    else:
        x = x + 1.0
    return x


def _conditional_expression(x):
    flag = fluid.layers.reduce_sum(x) > 0
    twice = lambda v: v * 2.0 if flag else v - 3.0  # noqa: E731
    return twice(x)


def _sum_even_until(limit, n):
    total = fluid.layers.fill_constant([1], "int64", 0)
    for i in range(n):
        if i % 2 > 0:
            continue
        if i > limit:
            break
        total = total + i
    return total


def _collect(x, n):
    items = []
    for i in range(n):
        items.append(x * fluid.layers.cast(i, "float32"))
    return fluid.layers.stack(items, axis=0)


class _Holder:
    def __init__(self):
        self.value = 5


def _attribute_in_loop(x):
    holder = _Holder()
    i = fluid.layers.fill_constant([1], "int64", 0)
    while i < 3:
        holder.value = fluid.layers.reduce_sum(x) + fluid.layers.cast(i, "float32")
        i = i + 1
    return holder.value


@pytest.mark.parametrize("value", [0.9, 0.1])
def test_numpy_condition_follows_the_value(value):
    x_np = np.full([2, 3], value, "float32")
    (got,) = _run(lambda: dygraph_to_static_func(_numpy_condition)(fluid.layers.assign(x_np)))
    np.testing.assert_allclose(got, x_np - 1.0 if value > 0.5 else x_np + 1.0)


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_conditional_expression_on_a_variable(sign):
    x_np = np.array([1.0, 2.0], "float32") * sign
    (got,) = _run(lambda: dygraph_to_static_func(_conditional_expression)(fluid.layers.assign(x_np)))
    np.testing.assert_allclose(got, x_np * 2.0 if sign > 0 else x_np - 3.0)


def test_for_over_a_variable_range_with_break_and_continue():
    def build():
        n = fluid.layers.fill_constant([1], "int64", 20)
        return dygraph_to_static_func(_sum_even_until)(7, n)

    (got,) = _run(build)
    assert int(got[0]) == sum(i for i in range(20) if i % 2 == 0 and i <= 7)
    # a Python range stays a Python loop
    (got,) = _run(lambda: dygraph_to_static_func(_sum_even_until)(7, 20))
    assert int(got[0]) == 12


def test_list_appended_in_a_variable_loop_is_a_tensor_array():
    x_np = np.array([1.0, 2.0, 3.0], "float32")

    def build():
        n = fluid.layers.fill_constant([1], "int32", 4)
        return dygraph_to_static_func(_collect)(fluid.layers.assign(x_np), n)

    (got,) = _run(build)
    np.testing.assert_allclose(got, np.stack([x_np * i for i in range(4)]))


def test_attribute_assigned_in_a_variable_loop_is_carried():
    x_np = np.array([1.0, 2.5], "float32")
    (got,) = _run(lambda: dygraph_to_static_func(_attribute_in_loop)(fluid.layers.assign(x_np)))
    np.testing.assert_allclose(got, [x_np.sum() + 2.0])


def test_dygraph_layer_and_schedule_in_a_static_build():
    def net(x):
        fc = fluid.dygraph.Linear(3, 2, param_attr=fluid.initializer.Constant(0.5), bias_attr=False)
        return fc(x), fc.parameters(), fluid.dygraph.ExponentialDecay(0.1, 10, 0.5)()

    x_np = np.arange(6, dtype="float32").reshape(2, 3)
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        out, params, lr = dygraph_to_static_func(net)(fluid.layers.assign(x_np))
    assert [tuple(p.shape) for p in params] == [(3, 2)] and params[0].name in main.global_block().vars
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    got, got_lr = exe.run(main, fetch_list=[out, lr])
    np.testing.assert_allclose(got, x_np @ np.full((3, 2), 0.5, "float32"))
    with fluid.dygraph.guard(fluid.CPUPlace()):
        want_lr = fluid.dygraph.ExponentialDecay(0.1, 10, 0.5)().numpy()
    np.testing.assert_allclose(got_lr, want_lr, rtol=1e-6)


def test_concat_and_stack_of_a_tensor_array():
    x_np = np.arange(6, dtype="float32").reshape(2, 3)

    def build():
        array = fluid.layers.create_array("float32")
        x = fluid.layers.assign(x_np)
        for k in range(2):
            fluid.layers.array_write(x + float(k), fluid.layers.fill_constant([1], "int64", k), array)
        return fluid.layers.concat(array, axis=0), fluid.layers.stack(array, axis=1)

    joined, stacked = _run(build, fetch_count=0)
    np.testing.assert_allclose(joined, np.concatenate([x_np, x_np + 1]))
    np.testing.assert_allclose(stacked, np.stack([x_np, x_np + 1], axis=1))


def test_while_loop_over_nested_loop_variables_in_both_modes():
    """fluid 1.8's while_loop took lists among its loop variables, and ran in Python in dygraph mode."""
    x_np = np.array([1.0, 2.0], "float32")

    def loop(x):
        def cond(i, ys):
            return i < 3

        def body(i, ys):
            return [i + 1, [y * 2.0 for y in ys]]

        i = fluid.layers.fill_constant([1], "int64", 0)
        i, ys = fluid.layers.while_loop(cond, body, [i, [x, x + 1.0]])
        return ys[0], ys[1], i

    got = _run(lambda: loop(fluid.layers.assign(x_np)), fetch_count=0)
    with fluid.dygraph.guard(fluid.CPUPlace()):
        dygraph = [v.numpy() for v in loop(fluid.dygraph.to_variable(x_np))]
    for want in (got, dygraph):
        np.testing.assert_allclose(want[0], x_np * 8)
        np.testing.assert_allclose(want[1], (x_np + 1) * 8)
        assert int(want[2][0]) == 3
