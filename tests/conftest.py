"""Each test builds in fresh default programs, a fresh name counter and a fresh global scope.

`make test` runs the suite on pytest-xdist workers (one per core): a test takes its files from
``tmp_path``, its ports from the system (port 0) and its environment changes through ``monkeypatch``,
and the few that need a machine-wide resource say so with a fixture below."""

import fcntl
import os
import shutil
import sys
import tempfile

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

# Under `make test` the suite inherits make's MAKELEVEL and MAKEFLAGS: a test that runs make would get a
# sub-make ("make[1]: ***", the outer make's jobserver) where a user typing the command gets make.
for _name in ("MAKELEVEL", "MAKEFLAGS", "MFLAGS"):
    os.environ.pop(_name, None)

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


# -x / --maxfail over xdist workers: xdist stops the worker whose test failed, but another worker runs
# every test already queued to it (with worksteal, up to half the suite). The controller marks the
# first failures in a file the workers look for after each test; a worker that finds it stops.
_STOP = {"file": None, "worker": False, "maxfail": 0, "failed": 0}


def pytest_configure(config):
    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None:
        _STOP.update(file=workerinput.get("fluidcompat_stop"), worker=True)
    elif config.getoption("dist", "no") != "no" and config.getoption("maxfail"):
        _STOP.update(file=os.path.join(tempfile.mkdtemp(prefix="fluidcompat-tests-"), "stop"))
        _STOP.update(maxfail=config.getoption("maxfail"))


def pytest_unconfigure(config):
    if _STOP["file"] and not _STOP["worker"]:
        shutil.rmtree(os.path.dirname(_STOP["file"]), ignore_errors=True)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):
    if _STOP["file"]:
        node.workerinput["fluidcompat_stop"] = _STOP["file"]


def pytest_runtest_logreport(report):
    if report.failed and _STOP["file"] and not _STOP["worker"]:
        _STOP["failed"] += 1
        if _STOP["failed"] >= _STOP["maxfail"]:
            open(_STOP["file"], "w").close()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    yield
    if _STOP["worker"] and _STOP["file"] and os.path.exists(_STOP["file"]):
        item.session.shouldstop = "a test failed on another worker (-x / --maxfail)"


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
