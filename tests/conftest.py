"""Each test builds in fresh default programs, a fresh name counter and a fresh global scope."""

import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

import fluidcompat as fluid  # noqa: E402
from fluidcompat import framework, unique_name  # noqa: E402


@pytest.fixture(autouse=True)
def fresh_state():
    main = framework.switch_main_program(fluid.Program())
    startup = framework.switch_startup_program(fluid.Program())
    names = unique_name.switch()
    from fluidcompat.executor import scope as scope_mod

    old_scope = scope_mod._global_scope
    scope_mod._global_scope = scope_mod.Scope()
    yield
    framework.switch_main_program(main)
    framework.switch_startup_program(startup)
    unique_name.switch(*names)
    scope_mod._global_scope = old_scope


@pytest.fixture(scope="session")
def generated_data_home(tmp_path_factory):
    """A HOME whose ~/.cache/paddle/dataset holds the generated mnist and uci_housing."""
    home = tmp_path_factory.mktemp("home")
    from fluidcompat.dataset import synthetic

    synthetic.main(["--home", str(home / ".cache" / "paddle" / "dataset")])
    env = dict(os.environ)
    env["HOME"] = str(home)
    return env


def pytest_collection_modifyitems(config, items):
    """Tests marked ``cuda`` are skipped where torch sees no CUDA device."""
    from fluidcompat import places

    if places.cuda_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA device")
    for item in items:
        if "cuda" in item.keywords:
            item.add_marker(skip)
