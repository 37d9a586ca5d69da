"""docs/compatibility.md is generated from the registry and fluid 1.8.5's name list, and is current;
missing fluid names raise NotImplementedError naming an alternative."""

from __future__ import annotations

import subprocess
import sys

import pytest

import fluidcompat as fluid
from fluidcompat import coverage


def test_compatibility_doc_is_current():
    with open(coverage.DOC) as f:
        written = f.read()
    assert written == coverage.render(), "docs/compatibility.md is stale: run python -m fluidcompat.coverage --write"


def test_readme_states_the_coverage_figure():
    sup, _, total = coverage.figures()
    with open(coverage.DOC.replace("docs/compatibility.md", "README.md")) as f:
        readme = f.read()
    assert f"{sup} of the {total} names" in readme


def test_every_name_marked_supported_resolves():
    for module, rows in coverage.table().items():
        mod = coverage._module_for(module)
        for name, st, _ in rows:
            if st != "missing":
                assert getattr(mod, name) is not None, f"{module}.{name}"


def test_missing_fluid_name_raises_not_implemented_with_alternative():
    with pytest.raises(
        NotImplementedError, match=r"paddle.fluid.load_op_library \(fluid 1.8\) is not supported.*py_func"
    ):
        getattr(fluid, "load_op_library")  # noqa: B009
    assert not hasattr(fluid, "load_op_library")  # still an AttributeError for hasattr
    with pytest.raises(AttributeError, match="has no attribute 'no_such_name'") as e:
        getattr(fluid.layers, "no_such_name")  # noqa: B009
    assert not isinstance(e.value, NotImplementedError)


def test_every_core_module_names_what_it_lacks():
    """Each core module answers a missing fluid 1.8 name with UnsupportedAPIError, not a bare
    AttributeError (fluid.nets.sequence_conv_pool gave one)."""
    for module, rows in coverage.table().items():
        mod = coverage._module_for(module)
        for name, st, _ in rows:
            if st == "missing":
                with pytest.raises(coverage.UnsupportedAPIError, match=rf"\.{name} \(fluid 1.8\)"):
                    getattr(mod, name)


def test_missing_name_in_a_script_reads_as_not_implemented(tmp_path):
    script = tmp_path / "legacy.py"
    script.write_text("import paddle.fluid as fluid\nfluid.load_op_library('custom_op.so')\n")
    proc = subprocess.run(
        [sys.executable, "-m", "fluidcompat", "run", "--device", "cpu", str(script)], capture_output=True, text=True
    )
    assert proc.returncode == 1
    assert "UnsupportedAPIError: paddle.fluid.load_op_library (fluid 1.8) is not supported" in proc.stderr
    assert "fluid.layers.py_func (a Python op" in proc.stderr


def test_every_supported_name_has_a_docstring():
    import inspect

    undocumented = []
    for module, rows in coverage.table().items():
        mod = coverage._module_for(module)
        for name, st, _ in rows:
            if st == "missing":
                continue
            obj = getattr(mod, name)
            if inspect.ismodule(obj):
                continue
            doc = obj.__doc__ if not inspect.isclass(obj) or obj.__doc__ != type.__doc__ else None
            if callable(obj) and not (doc or "").strip():
                undocumented.append(f"{module}.{name}")
    assert not undocumented, undocumented


def test_readme_states_the_op_count():
    """Forward op types with a kernel or a sub-block runner (grad ops not counted)."""
    from fluidcompat_ops import all_defs

    n = sum(1 for d in all_defs().values() if not d.forward and (d.kernel is not None or d.control))
    with open(coverage.DOC.replace("docs/compatibility.md", "README.md")) as f:
        assert f"- {n} forward op types and their grad ops" in f.read()


def test_layers_modules_hold_the_names_fluid_defined_in_them():
    """``from paddle.fluid.layers.nn import cos_sim``: fluidcompat defines cos_sim elsewhere; the
    module fluid defined it in hands out fluid.layers' own (checked) function."""
    from fluidcompat.layers import metric_op, nn, ops, tensor

    assert nn.cos_sim is fluid.layers.cos_sim and nn.crop_tensor is fluid.layers.crop_tensor
    assert tensor.arange is fluid.layers.arange and ops.gelu is fluid.layers.gelu
    assert metric_op.accuracy is fluid.layers.accuracy and "cos_sim" in nn.__all__
    assert nn.fc.__module__ == "fluidcompat.layers.nn"  # its own name stays
    for module, names in coverage.fluid_names().items():
        if module.startswith("paddle.fluid.layers."):
            mod = coverage._module_for(module)
            assert [n for n in names if hasattr(fluid.layers, n) and not hasattr(mod, n)] == [], module
