"""Each test builds in fresh default programs, a fresh name counter and a fresh global scope.

`make test` runs the suite on pytest-xdist workers (one per core): a test takes its files from
``tmp_path``, its ports from the system (port 0) and its environment changes through ``monkeypatch``,
and the few that need a machine-wide resource say so with a fixture below."""

import fcntl
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

# On an xdist worker (one per core) torch and the tests' subprocesses take one thread each: a worker
# with a thread per core as well would put twice as many busy threads as cores on the machine.
if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ.setdefault("OMP_NUM_THREADS", "1")

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


@pytest.fixture
def one_large_table_at_a_time(tmp_path_factory):
    """Tests that run the docs' 10,000,000 x 150 embedding (a 5.6 GiB table; 6 to 12 GB at the peak) run
    one at a time over the xdist workers of a session: two at once pass the memory of a 24 GB machine."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        yield
        return
    # the workers' base temporary folders (popen-gw0, ...) share their parent, one per session
    with open(tmp_path_factory.getbasetemp().parent / "one_large_table_at_a_time.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


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
    """The tests of the large table first (on xdist one worker then runs them one after another at the
    start: worksteal gives each worker a contiguous part of the list, so none waits for the other's at
    the end); tests marked ``cuda`` are skipped where torch sees no CUDA device."""
    items.sort(key=lambda item: "one_large_table_at_a_time" not in getattr(item, "fixturenames", ()))
    from fluidcompat import places

    if places.cuda_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA device")
    for item in items:
        if "cuda" in item.keywords:
            item.add_marker(skip)
