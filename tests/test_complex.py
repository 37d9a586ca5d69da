"""``paddle.complex``: fluid 1.8's layers over ComplexVariables, against numpy, in dygraph and static
programs; the error texts and result shapes recorded from fluid 1.8.5."""

from __future__ import annotations

import numpy as np
import pytest

import fluidcompat as fluid
import fluidcompat.dygraph as dg
from fluidcompat.compat import complex as cpx
from fluidcompat.complex_variable import ComplexVariable

rng = np.random.RandomState(7)


def cplx(*shape):
    return rng.uniform(-1, 1, shape) + 1j * rng.uniform(-1, 1, shape)


A, B, C = cplx(2, 3, 4), cplx(2, 3, 4), cplx(3, 4)
R, RT = rng.uniform(0.5, 2, (2, 3, 4)), rng.uniform(0.5, 2, (4,))

ELEMENTWISE = [
    (cpx.elementwise_add, np.add),
    (cpx.elementwise_sub, np.subtract),
    (cpx.elementwise_mul, np.multiply),
    (cpx.elementwise_div, np.divide),
]


def _dy(fn, *arrays, **kwargs):
    with dg.guard():
        return fn(*[dg.to_variable(a) for a in arrays], **kwargs).numpy()


@pytest.mark.parametrize("layer,ref", ELEMENTWISE, ids=lambda v: getattr(v, "__name__", ""))
@pytest.mark.parametrize(
    "x,y", [(A, B), (A, C), (A, R), (R, A), (A, RT), (R, C)], ids=["cc", "cc_bcast", "cr", "rc", "cr_bcast", "rc_bcast"]
)
def test_elementwise_matches_numpy(layer, ref, x, y):
    np.testing.assert_allclose(_dy(layer, x, y), ref(x, y), rtol=1e-10, atol=1e-12)


def test_elementwise_axis_broadcasts_from_that_dim():
    y = cplx(3)
    got = _dy(cpx.elementwise_mul, A, y, axis=1)
    np.testing.assert_allclose(got, A * y[None, :, None], rtol=1e-12)


def test_matmul_kron_trace_sum_reshape_transpose():
    x, y, r = cplx(2, 3), cplx(3, 2), rng.uniform(-1, 1, (3, 2))
    np.testing.assert_allclose(_dy(cpx.matmul, x, y), x @ y, rtol=1e-12)
    np.testing.assert_allclose(_dy(cpx.matmul, x, r), x @ r, rtol=1e-12)
    np.testing.assert_allclose(_dy(cpx.matmul, r, x), r @ x, rtol=1e-12)
    np.testing.assert_allclose(_dy(cpx.matmul, x, x, transpose_y=True, alpha=2.0), 2 * x @ x.T, rtol=1e-12)
    np.testing.assert_allclose(_dy(cpx.kron, x, y), np.kron(x, y), rtol=1e-12)
    np.testing.assert_allclose(_dy(cpx.kron, r, y), np.kron(r, y), rtol=1e-12)
    np.testing.assert_allclose(_dy(cpx.kron, x, r), np.kron(x, r), rtol=1e-12)
    sq = cplx(3, 3)
    np.testing.assert_allclose(_dy(cpx.trace, sq), [np.trace(sq)], rtol=1e-12)
    np.testing.assert_allclose(_dy(cpx.trace, A, offset=1, dim1=1, dim2=2), np.trace(A, 1, 1, 2), rtol=1e-12)
    np.testing.assert_allclose(_dy(cpx.sum, A), [A.sum()], rtol=1e-12)
    np.testing.assert_allclose(_dy(cpx.sum, A, dim=[1], keep_dim=True), A.sum(1, keepdims=True), rtol=1e-12)
    np.testing.assert_allclose(_dy(lambda v: cpx.reshape(v, [4, -1]), A), A.reshape(4, -1))
    np.testing.assert_allclose(_dy(lambda v: cpx.transpose(v, [2, 0, 1]), A), A.transpose(2, 0, 1))


def test_results_are_complex_variables_of_fluid_shapes_and_dtypes():
    """fluid 1.8.5: trace and a full sum give shape [1]; float32 parts make complex64."""
    with dg.guard():
        x = dg.to_variable(cplx(2, 3).astype("complex64"))
        for out, shape in [(cpx.trace(x), [1]), (cpx.sum(x), [1]), (cpx.transpose(x, [1, 0]), [3, 2])]:
            assert isinstance(out, ComplexVariable)
            assert list(out.shape) == shape and out.dtype == "complex64"
        assert cpx.reshape(x, [3, 2], inplace=True) is x  # its parts replaced


def test_named_results():
    """In a program, ``name`` names both parts' outputs as fluid's layers name theirs (recorded from
    fluid 1.8.5: ``s.tmp_0`` / ``s.tmp_1``)."""
    x = ComplexVariable(fluid.data("a", [2], "float64"), fluid.data("b", [2], "float64"))
    assert cpx.elementwise_add(x, x, name="s").name == {"real": "s.tmp_0", "imag": "s.tmp_1"}


@pytest.mark.parametrize(
    "call,text",
    [
        (lambda r: cpx.elementwise_add(r, r), "At least one inputs of layer complex.elementwise_add()"),
        (lambda r: cpx.matmul(r, r), "At least one inputs of layer complex.matmul()"),
        (lambda r: cpx.kron(r, r), "At least one inputs of layer complex.kron()"),
        (lambda r: cpx.trace(r), "The input of layer complex.trace()"),
        (lambda r: cpx.sum(r), "The input of layer complex.sum()"),
        (lambda r: cpx.reshape(r, [4]), "The input of layer complex.reshape()"),
        (lambda r: cpx.transpose(r, [1, 0]), "The input of layer complex.transpose()"),
    ],
)
def test_real_only_operands_are_refused_with_fluids_text(call, text):
    with dg.guard():
        r = dg.to_variable(np.ones((2, 2)))
        with pytest.raises(ValueError) as e:
            call(r)
    assert str(e.value) == text + " must be ComplexVariable, please use the layer for real numher instead."


def test_static_program():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        parts = [fluid.data(n, [2, 3, 4], "float64") for n in ("xr", "xi", "yr", "yi")]
        x, y = ComplexVariable(*parts[:2]), ComplexVariable(*parts[2:])
        outs = [layer(x, y) for layer, _ in ELEMENTWISE]
    feed = {"xr": A.real, "xi": A.imag, "yr": B.real, "yi": B.imag}
    got = fluid.Executor(fluid.CPUPlace()).run(main, feed=feed, fetch_list=[p for o in outs for p in (o.real, o.imag)])
    for i, (_, ref) in enumerate(ELEMENTWISE):
        np.testing.assert_allclose(got[2 * i] + 1j * got[2 * i + 1], ref(A, B), rtol=1e-10)


def test_paddle_complex_module_names():
    """The package as fluid 1.8.5 laid it out (``paddle.complex.tensor.math`` ...) and its ``__all__``."""
    assert cpx.__all__ == [
        "elementwise_add", "elementwise_sub", "elementwise_mul", "elementwise_div", "kron", "trace", "sum",
        "reshape", "transpose", "matmul",
    ]  # fmt: skip
    from fluidcompat.compat import real_name

    assert real_name("paddle.complex") == "fluidcompat.compat.complex"
    assert real_name("paddle.complex.tensor.math") == "fluidcompat.compat.complex.tensor.math"
    assert cpx.helper.is_complex(ComplexVariable.__new__(ComplexVariable)) and not cpx.helper.is_real(1.0)
