"""Initializers and ParamAttr: the startup ops they prepend and the values those ops produce."""

from __future__ import annotations

import math

import numpy as np
import pytest

import fluidcompat as fluid
from fluidcompat import initializer as init

L = fluid.layers


def init_value(shape, initializer, dtype="float32"):
    p = L.create_parameter(shape, dtype, default_initializer=initializer)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(fluid.default_startup_program())
    return np.array(fluid.global_scope().find_var(p.name).get_tensor())


def test_constant():
    np.testing.assert_array_equal(init_value([2, 3], init.Constant(1.5)), np.full((2, 3), 1.5, "float32"))


def test_uniform_and_seed():
    v = init_value([200, 50], init.Uniform(-0.3, 0.7, seed=5))
    assert v.min() >= -0.3 and v.max() < 0.7 and abs(v.mean() - 0.2) < 0.01
    op = fluid.default_startup_program().global_block().ops[0]
    assert (op.type, op.attr("min"), op.attr("max"), op.attr("seed")) == ("uniform_random", -0.3, 0.7, 5)


def test_normal_and_truncated():
    v = init_value([300, 100], init.Normal(1.0, 0.5))
    assert abs(v.mean() - 1.0) < 0.01 and abs(v.std() - 0.5) < 0.01
    t = init_value([300, 100], init.TruncatedNormal(0.0, 1.0))
    assert np.abs(t).max() <= 2.0 and 0.8 < t.std() < 0.9


@pytest.mark.parametrize("shape,fan_in,fan_out", [([30, 20], 30, 20), ([8, 4, 3, 3], 36, 72)])
def test_xavier(shape, fan_in, fan_out):
    limit = math.sqrt(6.0 / (fan_in + fan_out))
    v = init_value(shape, init.Xavier())
    assert np.abs(v).max() <= limit and np.abs(v).max() > 0.9 * limit
    op = fluid.default_startup_program().global_block().ops[0]
    assert op.type == "uniform_random" and op.attr("max") == pytest.approx(limit)
    n = init_value([400, 300], init.Xavier(uniform=False))
    assert abs(n.std() - math.sqrt(2.0 / 700)) < 0.002


def test_msra():
    v = init_value([50, 40], init.MSRA())
    assert np.abs(v).max() <= math.sqrt(6.0 / 50)
    n = init_value([500, 400], init.MSRA(uniform=False))
    assert abs(n.std() - math.sqrt(2.0 / 500)) < 0.003


def test_bilinear_matches_the_upsampling_kernel():
    v = init_value([2, 1, 4, 4], init.Bilinear())
    f = math.ceil(4 / 2.0)
    c = (2 * f - 1 - f % 2) / (2.0 * f)
    one = np.array([[(1 - abs(x / f - c)) * (1 - abs(y / f - c)) for x in range(4)] for y in range(4)], "float32")
    np.testing.assert_allclose(v[0, 0], one, rtol=1e-6)
    np.testing.assert_allclose(v[1, 0], one, rtol=1e-6)


def test_bilinear_op_goes_last_in_the_startup_program():
    """fluid 1.8.5 (recorded there): Bilinear appends its assign_value, the other initializers
    prepend their ops, so a parameter made after it still initialises first."""
    L.create_parameter([1, 1, 2, 2], "float32", name="up", default_initializer=init.Bilinear())
    L.create_parameter([3], "float32", name="after", default_initializer=init.Constant(1.0))
    ops = fluid.default_startup_program().global_block().ops
    assert [(op.type, op.output("Out")) for op in ops] == [("fill_constant", ["after"]), ("assign_value", ["up"])]


def test_numpy_array_initializer():
    a = np.arange(6, dtype="float32").reshape(2, 3)
    np.testing.assert_array_equal(init_value([2, 3], init.NumpyArrayInitializer(a)), a)
    with pytest.raises(ValueError, match=r"the array's shape must equal the parameter's"):
        L.create_parameter([3, 2], "float32", default_initializer=init.NumpyArrayInitializer(a))


def test_param_attr():
    x = fluid.data("x", [None, 3])
    attr = fluid.ParamAttr(
        name="my_w",
        initializer=init.Constant(0.25),
        learning_rate=0.5,
        regularizer=fluid.regularizer.L2Decay(0.1),
        trainable=False,
    )
    L.fc(x, 2, param_attr=attr, bias_attr=False)
    w = fluid.default_main_program().global_block().var("my_w")
    assert isinstance(w, fluid.Parameter) and not w.trainable and w.stop_gradient
    assert w.optimize_attr == {"learning_rate": 0.5}
    assert isinstance(w.regularizer, fluid.regularizer.L2Decay) and w.regularizer._regularization_coeff == 0.1
    assert not fluid.default_main_program().global_block().has_var("fc_0.b_0")
    with pytest.raises(TypeError, match="The type of 'name' in ParamAttr must be str"):
        fluid.ParamAttr(name=3)


def test_create_parameter_bias_default_is_zero():
    p = L.create_parameter([4], "float32", is_bias=True)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(fluid.default_startup_program())
    np.testing.assert_array_equal(np.array(fluid.global_scope().find_var(p.name).get_tensor()), np.zeros(4))
