"""The Program IR: guards, names, clone, printing, validation, operators on Variables, rollback."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import fluidcompat as fluid
from fluidcompat.framework import OpRole

L = fluid.layers


def op_types(program=None):
    return [op.type for op in (program or fluid.default_main_program()).global_block().ops]


class TestProgramGuard:
    def test_guard_switches_and_restores(self):
        main, startup = fluid.Program(), fluid.Program()
        before = fluid.default_main_program()
        with fluid.program_guard(main, startup):
            assert fluid.default_main_program() is main
            assert fluid.default_startup_program() is startup
            L.fc(fluid.data("x", [None, 4]), 2)
        assert fluid.default_main_program() is before
        assert op_types(main) == ["mul", "elementwise_add"]
        assert op_types(startup) == ["fill_constant", "uniform_random"]  # initialisers are prepended

    def test_swapped_programs_as_in_the_docs(self):
        main, startup = fluid.Program(), fluid.Program()
        with fluid.program_guard(startup, main):
            v = L.fill_constant([1], "float32", 2.0)
        assert v.block.program is startup and op_types(startup) == ["fill_constant"]
        assert op_types(main) == []

    def test_type_error(self):
        with pytest.raises(TypeError, match="The type of 'main_program' in fluid.program_guard must be"):
            with fluid.program_guard("main"):
                pass

    def test_variables_of_another_program_are_declared(self):
        main, startup = fluid.Program(), fluid.Program()
        with fluid.program_guard(main, startup):
            x = fluid.data("x", [None, 4])
        y = L.relu(x)  # default program
        block = fluid.default_main_program().global_block()
        assert block.var("x").shape == (-1, 4)
        out = fluid.Executor(fluid.CPUPlace()).run(feed={"x": -np.ones((2, 4), "float32")}, fetch_list=[y])[0]
        np.testing.assert_array_equal(out, np.zeros((2, 4), "float32"))


class TestNames:
    def test_default_names(self):
        x = fluid.data("x", [None, 4])
        y = L.fc(x, 3)
        c = L.fill_constant([1], "int64", 3)
        t = x + 1.0
        block = fluid.default_main_program().global_block()
        assert [p.name for p in block.all_parameters()] == ["fc_0.w_0", "fc_0.b_0"]
        assert y.name == "fc_0.tmp_1"
        assert c.name == "fill_constant_0.tmp_0"
        assert t.name == "tmp_0"

    def test_unique_name_guard(self):
        with fluid.unique_name.guard():
            a = L.fill_constant([1], "float32", 1.0)
        with fluid.unique_name.guard():
            b = L.fill_constant([1], "float32", 1.0)
        assert a.name == b.name == "fill_constant_0.tmp_0"
        with fluid.unique_name.guard("pre_"):
            assert fluid.unique_name.generate("fc") == "pre_fc_0"

    def test_name_scope(self):
        x = fluid.data("x", [None, 4])
        with fluid.name_scope("block1"):
            L.relu(x)
            with fluid.name_scope("inner"):
                L.relu(x)
        L.relu(x)
        assert [op.attr("op_namescope") for op in fluid.default_main_program().global_block().ops] == [
            "/block1/",
            "/block1/inner/",
            "/",
        ]


class TestCloneAndPrint:
    def test_clone_for_test(self):
        x = fluid.data("x", [None, 4])
        d = L.dropout(L.fc(x, 3), 0.5)
        L.batch_norm(L.reshape(d, [-1, 3, 1, 1]))
        main = fluid.default_main_program()
        block = main.global_block()
        with main._backward_role_guard():
            g = block.create_var(name="x@GRAD", shape=[-1, 4])
            block.append_op(type="scale", inputs={"X": [x]}, outputs={"Out": [g]})
        test = main.clone(for_test=True)
        assert "scale" not in op_types(test) and not test.global_block().has_var("x@GRAD")
        assert [(op.type, op.attr("is_test")) for op in test.global_block().ops if op.has_attr("is_test")] == [
            ("dropout", True),
            ("batch_norm", True),
        ]
        assert all(not op.attr("is_test") for op in block.ops if op.has_attr("is_test"))
        assert main.global_block().ops[-1].attr("op_role") == OpRole.Backward
        plain = main.clone()
        assert op_types(plain) == op_types(main) and plain.global_block().ops[0] is not block.ops[0]

    def test_str_program(self):
        x = fluid.data("x", [None, 4])
        with fluid.device_guard("cpu"):
            L.fc(x, 3, act="relu")
        text = str(fluid.default_main_program())
        assert "var x : LOD_TENSOR.shape(-1, 4).dtype(float32).stop_gradient(True)" in text
        assert "persist trainable param fc_0.w_0 : LOD_TENSOR.shape(4, 3).dtype(float32)" in text
        lines = [ln.strip() for ln in text.splitlines() if "= mul(" in ln or "= relu(" in ln]
        assert lines[0].startswith("{Out=['fc_0.tmp_0']} = mul(inputs={X=['x'], Y=['fc_0.w_0']}")
        assert all(ln.endswith("op_device = cpu)") for ln in lines)

    def test_validate(self):
        x = fluid.data("x", [None, 4])
        L.relu(x)
        main = fluid.default_main_program()
        main.validate()
        main.global_block().ops[0].inputs["X"] = ["nowhere"]
        with pytest.raises(ValueError, match="input 'nowhere' \\(slot X\\) is not declared"):
            main.validate()

    def test_validate_unregistered(self):
        x = fluid.data("x", [None, 4])
        op = L.relu(x).op
        op.type = "no_such_op"
        with pytest.raises(ValueError, match="op type 'no_such_op' is not registered"):
            fluid.default_main_program().validate()

    def test_op_accessors(self):
        x = fluid.data("x", [None, 4])
        L.fc(x, 3)
        op = fluid.default_main_program().global_block().ops[0]
        assert (op.type, op.input("X"), op.output("Out")) == ("mul", ["x"], ["fc_0.tmp_0"])
        assert op.input_names == ["X", "Y"] and op.output_names == ["Out"]
        assert op.has_attr("x_num_col_dims") and op.attr("x_num_col_dims") == 1
        assert not op.has_attr("nope")
        block = fluid.default_main_program().global_block()
        assert isinstance(block.var("fc_0.w_0"), fluid.Parameter)
        with pytest.raises(ValueError, match="var nope not in this block"):
            block.var("nope")


class TestVariableOperators:
    def test_ops_emitted_as_fluid(self):
        # op types and attributes recorded from fluid 1.8.5
        x = fluid.data("x", [None, 4])
        i = fluid.data("i", [None, 4], "int64")
        cases = [
            (x + 1.0, "scale", {"scale": 1.0, "bias": 1.0}),
            (1.0 + x, "scale", {"bias": 1.0}),
            (x - 2, "scale", {"bias": -2.0}),
            (2 - x, "scale", {"scale": -1.0, "bias": 2.0}),
            (x * 3, "scale", {"scale": 3.0}),
            (x / 2, "scale", {"scale": 0.5}),
            (2 / x, "elementwise_div", {"axis": 0}),
            (x**2, "elementwise_pow", {"axis": -1}),
            (x + x, "elementwise_add", {"axis": 0}),
            (x < x, "less_than", {}),
            (x == x, "equal", {}),
            (x != x, "not_equal", {}),
            (-x, "scale", {"scale": -1.0}),
            (x.astype("int32"), "cast", {}),
            (i + 1, "scale", {}),
            (i / 2, "elementwise_div", {"axis": -1}),
            (x % 2, "elementwise_mod", {}),
            (x // 2, "elementwise_floordiv", {}),
            (x >= 1.0, "greater_equal", {}),
        ]
        for var, op_type, attrs in cases:
            assert var.op.type == op_type, (var.name, var.op.type)
            for k, v in attrs.items():
                assert var.op.attr(k) == v, (op_type, k)
        assert [c[0].name for c in cases[:6]] == [f"tmp_{k}" for k in range(6)]
        assert (x < x).dtype == fluid.core.VarDesc.VarType.BOOL
        assert x.astype("int32").dtype == fluid.core.VarDesc.VarType.INT32
        assert str(x.dtype) == "VarType.FP32"

    def test_int_by_float_scalar(self):
        i = fluid.data("i", [None, 4], "int64")
        with pytest.raises(TypeError, match="float value 2.5 cannot convert to integer"):
            i * 2.5

    def test_values(self):
        x = fluid.data("x", [2, 2])
        out = ((x + 1.0) * 2 - x / 2.0) ** 2.0
        v = np.array([[1, 2], [3, 4]], "float32")
        got = fluid.Executor(fluid.CPUPlace()).run(feed={"x": v}, fetch_list=[out, 3.0 / x, x > 2.0])
        np.testing.assert_allclose(got[0], ((v + 1) * 2 - v / 2) ** 2)
        np.testing.assert_allclose(got[1], 3.0 / v)
        np.testing.assert_array_equal(got[2], v > 2)


class TestRollbackAndBuildErrors:
    def snapshot(self):
        main, startup = fluid.default_main_program(), fluid.default_startup_program()
        return (str(main), str(startup), dict(fluid.unique_name.generator.ids))

    def test_unknown_activation_leaves_program(self):
        x = fluid.data("x", [None, 4])
        before = self.snapshot()
        with pytest.raises(ValueError, match="Unknown activation 'relux' in layer 'fc'"):
            L.fc(x, 3, act="relux")
        assert self.snapshot() == before
        y = L.fc(x, 3, act="relu")
        assert y.name == "fc_0.tmp_2"  # names as if the failed call never happened
        exe = fluid.Executor(fluid.CPUPlace())
        exe.run(fluid.default_startup_program())
        assert exe.run(feed={"x": np.ones((2, 4), "float32")}, fetch_list=[y])[0].shape == (2, 3)

    def test_failed_layer_after_others_leaves_the_startup_ops_it_put_first(self):
        # initializers go first in the startup program: the rollback must keep the ops that were there
        x = fluid.data("x", [None, 4])
        L.fc(L.fc(x, 3), 2)
        startup = fluid.default_startup_program().global_block()
        ops_before, before = list(startup.ops), self.snapshot()
        with pytest.raises(ValueError, match="Unknown activation"):
            L.fc(x, 5, act="relux")
        assert startup.ops == ops_before and all(a is b for a, b in zip(startup.ops, ops_before))
        assert self.snapshot() == before

    def test_shape_mismatch_names_op_and_shapes(self):
        a = fluid.data("a", [2, 3])
        b = fluid.data("b", [4, 5])
        before = self.snapshot()
        with pytest.raises(ValueError) as err:
            L.elementwise_add(a, b)
        msg = str(err.value)
        assert "elementwise_add" in msg and "(2, 3)" in msg and "(4, 5)" in msg
        assert self.snapshot() == before
        with pytest.raises(ValueError, match=r"Op 'mul'.*X.shape=\(2, 3\).*Y.shape=\(4, 5\)"):
            L.mul(a, b)
        with pytest.raises(ValueError, match=r"Op 'matmul'.*X.shape=\(2, 3\), Y.shape=\(4, 5\)"):
            L.matmul(a, b)
        assert self.snapshot() == before
        out = L.elementwise_add(a, a)
        v = np.ones((2, 3), "float32")
        np.testing.assert_array_equal(fluid.Executor(fluid.CPUPlace()).run(feed={"a": v}, fetch_list=[out])[0], 2 * v)

    def test_failed_parameter_layer_leaves_startup(self):
        img = fluid.data("img", [1, 3, 8, 8])
        before = self.snapshot()
        with pytest.raises(ValueError):
            L.conv2d(img, 4, 3, groups=2)  # 3 channels not divisible by 2
        with pytest.raises(ValueError, match="Unknown activation"):
            L.conv2d(img, 4, 3, act="nope")
        assert self.snapshot() == before


class TestDeviceGuard:
    def test_stamps_op_device(self):
        x = fluid.data("x", [None, 4])
        with fluid.device_guard("cpu"):
            a = L.relu(x)
            with fluid.device_guard("gpu"):
                b = L.relu(x)
            with fluid.device_guard("gpu:1"):
                c = L.relu(x)
            with fluid.device_guard(None):
                d = L.relu(x)
        e = L.relu(x)
        assert [v.op.attr("op_device") for v in (a, b, c, d, e)] == ["cpu", "gpu", "gpu:1", "", ""]

    @pytest.mark.parametrize("bad", ["tpu", "GPU", "cpu:0", "gpu:", 3])
    def test_rejects_bad_devices(self, bad):
        with pytest.raises(ValueError, match=f"But received {bad}"):
            with fluid.device_guard(bad):
                pass
        x = fluid.data("x", [2])
        y = L.relu(x)
        assert y.op.attr("op_device") == ""  # the failed guard left nothing behind
        out = fluid.Executor(fluid.CPUPlace()).run(feed={"x": np.array([-1, 2], "float32")}, fetch_list=[y])[0]
        assert out.tolist() == [0.0, 2.0]

    def test_op_without_kernel_warns(self):
        block = fluid.default_main_program().global_block()
        x = fluid.data("x", [2])
        out = block.create_var(name="out")
        with fluid.device_guard("cpu"), pytest.warns(UserWarning, match=r"The Op\(fetch\) is not support"):
            block.append_op(type="fetch", inputs={"X": [x]}, outputs={"Out": [out]})

    def test_force_cpu_warns(self):
        with fluid.device_guard("gpu"), pytest.warns(UserWarning, match=r"Attr\(force_cpu\) of Op\(fill_constant\)"):
            L.fill_constant([1], "float32", 1.0, force_cpu=True)


def test_build_time_modules_import_no_torch():
    """Building programs, inferring shapes and planning placement work with torch made unimportable."""
    code = textwrap.dedent("""
        import sys
        class Block:
            def find_spec(self, name, path=None, target=None):
                if name == "torch" or name.startswith("torch."):
                    raise ImportError("torch is blocked in this test")
        sys.meta_path.insert(0, Block())
        import fluidcompat as fluid
        from fluidcompat.executor import placement
        x = fluid.data("x", [None, 3, 8, 8])
        y = fluid.layers.pool2d(fluid.layers.conv2d(x, 4, 3, act="relu"), 2, pool_stride=2)
        s = fluid.layers.slice(fluid.layers.shape(y), axes=[0], starts=[0], ends=[4])
        z = fluid.layers.crop_tensor(y, shape=s)
        plan = placement.plan_block(fluid.default_main_program().global_block(), "cuda:0", ["x"])
        print(y.shape, len(plan.copies), "torch" in sys.modules)
    """)
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["(-1,", "4,", "3,", "3)", "2", "False"]


def test_variable_indexing_against_numpy_and_its_errors():
    """Indices as numpy takes them (an int64 Variable too, which fluid 1.8.5 refused: "holds int, but
    desires to be int64_t"; a step over a whole axis, which its static mode refused with a bare
    AssertionError and its dygraph mode took; open ends with a negative step, where fluid failed or
    gave nothing); what fluid did not index (None, Ellipsis, too many indices) is an error naming the
    variable."""
    x = fluid.data("x", [4, 5, 3], "float32")
    i = fluid.layers.fill_constant([1], "int64", 3)
    j = fluid.layers.fill_constant([1], "int32", 1)
    outs = [x[i], x[1:-1, ::-1], x[-2, 1:4:2, 0], x[:, :, 1], x[j:4:2, j], x[::2], x[:, ::-2], x[-1::-1, :0:-1]]
    xv = np.random.RandomState(0).rand(4, 5, 3).astype("float32")
    got = fluid.Executor(fluid.CPUPlace()).run(feed={"x": xv}, fetch_list=outs)
    wants = [xv[3], xv[1:-1, ::-1], xv[-2, 1:4:2, 0], xv[:, :, 1], xv[1:4:2, 1]]
    wants += [xv[::2], xv[:, ::-2], xv[-1::-1, :0:-1]]
    for g, want in zip(got, wants):
        np.testing.assert_array_equal(g, want)
    assert [o.shape for o in outs] == [(5, 3), (2, 5, 3), (2,), (4, 5), (-1, 3), (2, 5, 3), (4, 3, 3), (4, 4, 3)]
    before = len(fluid.default_main_program().global_block().ops)
    with pytest.raises(IndexError, match="too many indices for variable 'x' of shape \\[4, 5, 3\\]: 4"):
        x[0, 0, 0, 0]
    with pytest.raises(IndexError, match="variable 'x' takes int, slice or Variable indices .* NoneType at position 1"):
        x[0, None]
    with pytest.raises(IndexError, match="variable 'x' takes .* ellipsis at position 0"):
        x[..., 0]
    with pytest.raises(IndexError, match="variable 'x': slice step cannot be zero"):
        x[::0]
    # fluid 1.8.5 failed on x[4] when building ("end should greater than start"), so list(x) did too
    with pytest.raises(IndexError, match="index 4 is out of bounds for axis 0 of variable 'x' with size 4"):
        x[4]
    with pytest.raises(TypeError, match="variable 'free' of shape \\[-1, 2\\] cannot be iterated"):
        list(fluid.data("free", [None, 2], "float32"))
    assert len(fluid.default_main_program().global_block().ops) == before
    assert [r.shape for r in x] == [(5, 3)] * 4  # a known first dimension: its rows


def test_inserting_and_removing_ops_keeps_grad_ops_linked_to_their_forward_ops():
    """A grad op knows its forward op by position (for the values it must see); ops inserted or
    removed before it (QuantizeTranspiler, collective rewrites) move that position along."""
    x = fluid.data("x", [2, 3], "float32")
    x.stop_gradient = False
    y = fluid.layers.tanh(fluid.layers.sigmoid(x))
    fluid.backward.append_backward(fluid.layers.mean(y))
    block = fluid.default_main_program().global_block()

    def forward_of(grad_type):
        [g] = [op for op in block.ops if op.type == grad_type]
        return block.ops[g._fwd_at[1]].type

    assert forward_of("tanh_grad") == "tanh" and forward_of("sigmoid_grad") == "sigmoid"
    block._insert_op(0, type="assign", inputs={"X": [x]}, outputs={"Out": [block.create_var(name="x_copy")]})
    assert forward_of("tanh_grad") == "tanh" and forward_of("sigmoid_grad") == "sigmoid"
    block._remove_op(0)
    assert forward_of("tanh_grad") == "tanh" and forward_of("sigmoid_grad") == "sigmoid"
    at = [op.type for op in block.ops].index("sigmoid")
    block._remove_op(at)
    [g] = [op for op in block.ops if op.type == "sigmoid_grad"]
    assert g._fwd_at is None and forward_of("tanh_grad") == "tanh"


def test_static_variable_refuses_dygraph_methods_and_has_grad_name():
    """fluid 1.8.5's texts (recorded there): a static Variable's numpy() / backward() / ... say they
    need dygraph mode (fluidcompat raised AttributeError); grad_name is name@GRAD."""
    main = fluid.Program()
    with fluid.program_guard(main):
        x = fluid.data("x", [2], "float32")
    for name in ("numpy", "backward", "gradient", "clear_gradient", "detach"):
        with pytest.raises(ValueError, match=f"^'{name}' should be called by imperative Varible in imperative mode"):
            getattr(x, name)()
    with pytest.raises(ValueError, match="please use fluid.dygraph.guard"):
        x.set_value(np.ones(2, "float32"))
    assert x.grad_name == "x@GRAD" and main.global_block().backward_block_idx == -1


def test_static_variable_shape_dtype_and_lod_level_are_read_only():
    """As in fluid 1.8.5 ("can't set attribute"): setting them is refused naming the variable, and the
    variable and the layers built on it are as they were (a dtype set to a string broke later layers)."""
    main = fluid.Program()
    with fluid.program_guard(main):
        x = fluid.data("x", [None, 3], "float32")
        h = fluid.layers.fc(x, 2)
        for attr, value in (("shape", (3, 3)), ("dtype", "float64"), ("lod_level", 1)):
            with pytest.raises(AttributeError, match=f"can't set attribute '{attr}' of Variable '{h.name}'"):
                setattr(h, attr, value)
        assert (h.shape, h.dtype, h.lod_level) == ((-1, 2), fluid.core.VarDesc.VarType.FP32, 0)
        assert h.astype("float64").dtype == fluid.core.VarDesc.VarType.FP64
    h.persistable = True  # fluid lets this one be set
    assert h.persistable


def test_global_seed_seeds_this_and_later_programs():
    """fluid 1.8.5: Program.global_seed(5) sets the program's random_seed and that of every Program
    made after it, the default programs made before keep theirs."""
    before = fluid.Program()
    try:
        before.global_seed(5)
        assert before.random_seed == 5 and fluid.Program().random_seed == 5
    finally:
        fluid.Program().global_seed(0)
    assert fluid.Program().random_seed == 0


class TestDescOrder:
    """fluidcompat.desc_order: libstdc++'s hash table order, for fluid's variable order."""

    def test_hash_is_libstdcxx(self):
        from fluidcompat.desc_order import key_hash

        # std::hash<std::string> of g++ (libstdc++ _Hash_bytes, seed 0xc70f6907) for these keys
        assert key_hash("abc") == 3663726644998027833
        assert key_hash("") == 6142509188972423790
        assert key_hash("fc_0.w_0@GRAD") == 10891936241725706707

    def test_order_follows_buckets(self):
        from fluidcompat.desc_order import HashOrder, key_hash

        names = [f"v{i}" for i in range(10)]  # 11 buckets, no growth yet
        order = HashOrder(names).order()
        # a key in an empty bucket goes to the front; one in a used bucket to the front of its run
        expect: list = []
        for n in names:
            same = [i for i, m in enumerate(expect) if key_hash(m) % 11 == key_hash(n) % 11]
            expect.insert(same[0] if same else 0, n)
        assert order == expect

    def test_growth_and_erase(self):
        from fluidcompat.desc_order import HashOrder, key_hash

        table = HashOrder(f"n{i}" for i in range(11))  # the 11th key grows the table to 23 buckets
        assert table._buckets == 23
        assert sorted(table.order()) == sorted(f"n{i}" for i in range(11))
        runs = [key_hash(n) % 23 for n in table.order()]
        assert all(runs.index(b) + runs.count(b) - 1 == len(runs) - 1 - runs[::-1].index(b) for b in runs)
        table.erase("n3")
        table.erase("absent")
        assert "n3" not in table.order() and len(table) == 10


def test_list_attributes_are_read_as_copies_as_in_fluid():
    """``attr`` and ``all_attrs`` give a copy of a list attribute, as fluid's C++ attributes did: a
    script appending to one changes neither that op nor the others (ops built outside an optimizer
    share one empty op_role_var)."""
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        x = fluid.data("x", [None, 4], "float32")
        y = fluid.layers.relu(x)
        fluid.layers.scale(y, 2.0)
    relu, scale = main.global_block().ops
    role_var = relu.attr("op_role_var")
    role_var.append("w")
    relu.all_attrs()["op_role_var"].append("w")
    assert relu.attr("op_role_var") == [] and scale.attr("op_role_var") == []
    with fluid.program_guard(main, fluid.Program()):
        with main._optimized_guard(["p", "p@GRAD"]):
            z = fluid.layers.scale(x, 3.0)
    assert main.global_block().ops[-1].attr("op_role_var") == ["p", "p@GRAD"] and z is not None
    assert relu.attr("op_role_var") == []
