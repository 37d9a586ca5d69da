"""fluid.layers distributions' samples against their laws (values against fluid 1.8.5: test_goldens)."""

from __future__ import annotations

import numpy as np
import pytest

import fluidcompat as fluid

L = fluid.layers


def test_samples_follow_their_laws():
    """Means and spreads of 20000 draws, per batch element, within 5 standard errors; Uniform draws
    stay in [low, high); a Variable-parameter batch samples per row."""
    lo = fluid.data("lo", [None, 2], "float32")
    hi = fluid.data("hi", [None, 2], "float32")
    u = L.Uniform([1.0, -2.0], [3.0, -1.5]).sample([20000])
    n = L.Normal([0.5, -1.0], [2.0, 0.3]).sample([20000])
    uv = L.Uniform(lo, hi).sample([20000])
    feed = {"lo": np.array([[0.0, 5.0]], "float32"), "hi": np.array([[1.0, 6.0]], "float32")}
    a, b, c = fluid.Executor(fluid.CPUPlace()).run(feed=feed, fetch_list=[u, n, uv])
    assert a.shape == (20000, 2) and b.shape == (20000, 2) and c.shape == (20000, 1, 2)
    assert (a[:, 0] >= 1).all() and (a[:, 0] < 3).all() and (a[:, 1] >= -2).all() and (a[:, 1] < -1.5).all()
    width = np.array([2.0, 0.5])
    assert (np.abs(a.mean(0) - [2.0, -1.75]) < 5 * width / np.sqrt(12 * 20000)).all()
    np.testing.assert_allclose(a.std(0), width / np.sqrt(12), rtol=0.03)
    assert (np.abs(b.mean(0) - [0.5, -1.0]) < 5 * np.array([2.0, 0.3]) / np.sqrt(20000)).all()
    np.testing.assert_allclose(b.std(0), [2.0, 0.3], rtol=0.03)
    np.testing.assert_allclose(c[:, 0].mean(0), [0.5, 5.5], atol=5 / np.sqrt(12 * 20000))


def test_float64_arrays_are_made_float32_with_a_warning():
    with pytest.warns(UserWarning, match="data type of argument only support float32"):
        d = L.Normal(np.array([0.0, 1.0]), np.array([1.0, 2.0]))
    assert d.loc.dtype == d.scale.dtype == fluid.core.VarDesc.VarType.FP32


def test_parameters_by_keyword():
    """fluid's docs build them by keyword: Normal(loc=, scale=), Uniform(low=, high=)."""
    n = L.Normal(loc=[1.0, 2.0], scale=[11.0, 22.0])
    u = L.Uniform(low=0.0, high=4.0)
    ent_n, ent_u = fluid.Executor(fluid.CPUPlace()).run(fetch_list=[n.entropy(), u.entropy()])
    np.testing.assert_allclose(ent_n, 0.5 + 0.5 * np.log(2 * np.pi) + np.log([11.0, 22.0]), rtol=1e-6)
    np.testing.assert_allclose(ent_u, np.log(4.0), rtol=1e-6)
