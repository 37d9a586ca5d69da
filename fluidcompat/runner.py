"""Running a user's script or module under fluidcompat: the ``paddle`` alias installed, the legacy
numpy / Pillow / Python names back, the device chosen, and a failure reported as python would (the
runner's own frames left out). ``fluidcompat run``, ``launch``'s workers and ``export script.py``
call ``run_script``; ``fluidcompat/__main__.py`` is the command line.
"""

from __future__ import annotations

import functools
import os
import runpy
import signal
import sys
import traceback
from typing import List, Optional, Tuple

from fluidcompat import places
from fluidcompat.compat import install, legacy_numpy, legacy_pillow, legacy_python

# what fluid 1.8.5's pip package installed with it and fluid-era scripts import (setup.cfg's extra
# `legacy`): import name -> pip name
LEGACY_PACKAGES = {
    "PIL": "Pillow",
    "matplotlib": "matplotlib",
    "scipy": "scipy",
    "cv2": "opencv-python-headless",
    "requests": "requests",
    "yaml": "PyYAML",
    "prettytable": "prettytable",
    "decorator": "decorator",
    "six": "six",
    "graphviz": "graphviz",
    "objgraph": "objgraph",
    "astor": "astor",
    "gast": "gast",
    "nltk": "nltk",
    "rarfile": "rarfile",
}


_DEVICES = ["cpu", "gpu", places.EMULATED_GPU]


def legacy_package_missing(exc: BaseException) -> Optional[str]:
    """The one-line error for a ModuleNotFoundError of a package fluid 1.8 installed with it (PIL,
    cv2, yaml, ...), or None for any other exception."""
    if not isinstance(exc, ModuleNotFoundError) or exc.name not in LEGACY_PACKAGES:
        return None  # (a missing submodule of an installed package, 'PIL.Foo', is not one)
    pip_name = LEGACY_PACKAGES[exc.name]
    named = f"'{exc.name}'" if pip_name == exc.name else f"'{exc.name}' ({pip_name})"
    return (
        f"fluidcompat: error: the script imports {named}, which fluid 1.8 installed with it: "
        "pip install 'fluidcompat[legacy]'"
    )


_PACKAGES = tuple(
    os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), p) + os.sep
    for p in ("fluidcompat", "fluidcompat_ops")
)


def _internal(tb) -> bool:
    return os.path.abspath(tb.tb_frame.f_code.co_filename).startswith(_PACKAGES)


def _print_script_traceback(exc: BaseException, script: str) -> None:
    """Print the traceback as ``python script.py`` would: from the script's first frame on, without
    the runner's frames (runpy's and this module's; a SyntaxError in the script itself, which has no
    frame of the script, prints as python prints it: the file, the line and the caret). The frames
    inside fluidcompat after the last frame of the user's code (the checks that raised) are one line,
    unless ``FLUIDCOMPAT_TRACEBACK=full``."""
    tb = exc.__traceback__
    script = os.path.abspath(script)
    while tb is not None and os.path.abspath(tb.tb_frame.f_code.co_filename) != script:
        tb = tb.tb_next
    if tb is None:  # the script has no frame: it did not compile (SyntaxError) or never ran
        tb = None if isinstance(exc, SyntaxError) else exc.__traceback__
    frames = []
    while tb is not None:
        frames.append(tb)
        tb = tb.tb_next
    hidden = 0
    chained = exc.__cause__ is not None or (exc.__context__ is not None and not exc.__suppress_context__)
    if os.environ.get("FLUIDCOMPAT_TRACEBACK") != "full" and not chained:  # (a chain prints whole)
        while len(frames) - hidden > 1 and _internal(frames[len(frames) - hidden - 1]):
            hidden += 1
    if not hidden:
        traceback.print_exception(type(exc), exc, frames[0] if frames else None)
        return
    shown = traceback.extract_tb(frames[0], limit=len(frames) - hidden)  # (with python's carets)
    lines = ["Traceback (most recent call last):\n", *shown.format()]
    lines.append(
        f"  ... {hidden} frame{'s' if hidden > 1 else ''} inside fluidcompat (FLUIDCOMPAT_TRACEBACK=full shows them)\n"
    )
    lines += traceback.format_exception_only(type(exc), exc)
    sys.stderr.write("".join(lines))


def _find_cuda_error(exc: BaseException) -> Optional[BaseException]:
    while exc is not None:
        if isinstance(exc, places.CUDAUnavailableError):
            return exc
        exc = exc.__cause__ or exc.__context__
    return None


def _use_device(device: Optional[str]) -> bool:
    """Apply ``--device`` for the run (False, with the reason on stderr, when it cannot be had)."""
    if device in ("cpu", places.EMULATED_GPU):
        os.environ[places.ENV_DEVICE] = device
    elif device == "gpu" and not places.cuda_available():
        sys.stderr.write("fluidcompat: error: --device gpu was asked for, but torch finds no CUDA device here\n")
        return False
    return True


def _exit_as_interrupted() -> int:
    """Leave as python leaves on Ctrl-C: killed by SIGINT (a shell shows exit status 130)."""
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    except (OSError, ValueError):  # no signals here (another thread, another platform)
        pass
    return 128 + signal.SIGINT


def _count_runs():
    """``--progress``: a counter of ``Executor.run`` calls (steps) and their rate on stderr; the
    returned object's ``close()`` prints the total."""
    from fluidcompat.executor.executor import Executor
    from fluidcompat.progress import StepCounter

    counter = StepCounter("exe.run", "steps")
    run = Executor.run

    @functools.wraps(run)
    def counted(self, *args, **kwargs):
        try:
            return run(self, *args, **kwargs)
        finally:
            counter.update()

    Executor.run = counted
    return counter


def _children_see_paddle() -> None:
    """Python processes the script starts (``subprocess.Popen([sys.executable, "server.py"])``, as
    fluid's distributed tests start their servers) get the ``paddle`` alias too: the directory whose
    ``sitecustomize`` installs it leads their ``PYTHONPATH``."""
    import fluidcompat
    from fluidcompat.compat import pipe_site

    root = os.path.dirname(os.path.dirname(os.path.abspath(fluidcompat.__file__)))
    paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [pipe_site.DIR, root] + [p for p in paths if p not in (pipe_site.DIR, root)]
    )


def run_script(script: str, args: List[str], device: Optional[str], progress: bool = False) -> int:
    if not _use_device(device):
        return 1
    if not os.path.isfile(script):
        sys.stderr.write(f"fluidcompat: error: can't open file '{script}': no such file\n")
        return 2
    install()
    counter = _count_runs() if progress else None
    _children_see_paddle()
    legacy_numpy.restore()  # np.float, np.int, np.NaN, ...: fluid-era scripts use them
    legacy_pillow.restore()  # Image.ANTIALIAS, ... (once the script imports PIL.Image)
    legacy_python.restore()  # collections.Iterable, time.clock
    sys.argv = [script] + list(args)
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    try:
        runpy.run_path(script, run_name="__main__")
    except SystemExit:
        raise
    except KeyboardInterrupt as e:  # Ctrl-C: python's traceback, then killed by SIGINT as python is
        if counter is not None:
            counter.close()
        _print_script_traceback(e, script)
        return _exit_as_interrupted()
    except BaseException as e:  # noqa: BLE001  (reported as python would, then exit 1)
        rpc = sys.modules.get("fluidcompat.transpiler.rpc")  # a trainer's servers see it gone, not done
        if rpc is not None:
            rpc.script_failed()
        cuda = _find_cuda_error(e)
        if cuda is not None:
            sys.stderr.write(f"fluidcompat: error: {cuda}{_misplaced_device_hint(args)}\n")
            return 1
        missing = legacy_package_missing(e)
        if missing is not None:
            sys.stderr.write(missing + "\n")
            return 1
        _print_script_traceback(e, script)
        return 1
    finally:
        if counter is not None:
            counter.close()
        sys.stdout.flush()
    return 0


def _misplaced_device_hint(script_args: List[str]) -> str:
    if any(a == "--device" or a.startswith("--device=") for a in script_args):
        return (
            " (the --device after the script's name went to the script, which names a --device of its own: "
            "put fluidcompat's before the script, `fluidcompat run --device cpu script.py`)"
        )
    return ""


# the run options a script's own arguments may carry by mistake: option -> takes a value
_RUN_OPTIONS = {"--device": True, "--explain-placement": False, "--progress": False}


def take_run_options(script: str, args: List[str]) -> Tuple[List[str], List[str]]:
    """(runner options, the script's arguments) from the arguments after the script's name: ``fluidcompat
    run x.py --device cpu`` means ``fluidcompat run --device cpu x.py`` when the option is the runner's
    and unambiguous: a valid ``--device`` value, before any ``--``, and an option the script's source never
    names (a script with its own ``--device`` keeps it)."""
    try:
        with open(script, "rb") as f:
            source = f.read().decode("utf-8", "replace")
    except OSError:
        return [], list(args)
    taken: List[str] = []
    rest: List[str] = []
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--":
            rest += args[i:]
            break
        name, eq, value = a.partition("=")
        if name in _RUN_OPTIONS and name not in source:
            if not _RUN_OPTIONS[name] and not eq:
                taken.append(a)
                i += 1
                continue
            if _RUN_OPTIONS[name]:
                if not eq and i + 1 < len(args):
                    value = args[i + 1]
                if value in _DEVICES:
                    taken += [name, value]
                    i += 1 if eq else 2
                    continue
        rest.append(a)
        i += 1
    return taken, rest


def version_line() -> str:
    """``fluidcompat --version``: fluidcompat's version, the fluid API it gives, torch's and Python's."""
    import fluidcompat

    try:
        from importlib.metadata import version

        torch_version = f"torch {version('torch')}"
    except Exception:  # noqa: BLE001  (not installed: the runner still says its own version)
        torch_version = "torch not installed"
    py = ".".join(map(str, sys.version_info[:3]))
    return f"fluidcompat {fluidcompat.__version__} (the fluid 1.8.5 API; {torch_version}, Python {py})"


def run_module(module: str, args: List[str], device: Optional[str]) -> int:
    """``fluidcompat run -m MODULE``: run a module as ``python -m`` would, ``paddle.X`` names included
    (``fluidcompat run -m paddle.distributed.launch train.py``)."""
    if not _use_device(device):
        return 1
    install()
    _children_see_paddle()
    legacy_numpy.restore()
    legacy_pillow.restore()
    legacy_python.restore()
    from fluidcompat.compat import real_name

    sys.argv = [module] + list(args)
    sys.path.insert(0, os.getcwd())  # as `python -m` does: the working directory's modules import
    try:
        runpy.run_module(real_name(module) or module, run_name="__main__", alter_sys=True)
    except SystemExit as e:  # as python -m does: a message (sys.exit("...")) goes to stderr, exit 1
        if e.code is None or isinstance(e.code, int):
            return e.code or 0
        sys.stderr.write(f"{e.code}\n")
        return 1
    except ModuleNotFoundError as e:
        missing = legacy_package_missing(e)
        if missing is None:
            raise  # python -m's traceback
        sys.stderr.write(missing + "\n")
        return 1
    return 0
