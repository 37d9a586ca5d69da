"""``fluidcompat run [--device cpu|gpu] script.py [args]``: run a legacy fluid script unchanged."""

from __future__ import annotations

import argparse
import os
import runpy
import sys
import traceback
from typing import List, Optional

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


def _print_script_traceback(exc: BaseException, script: str) -> None:
    """Print the traceback as ``python script.py`` would: from the script's first frame on."""
    tb = exc.__traceback__
    script = os.path.abspath(script)
    while tb is not None and os.path.abspath(tb.tb_frame.f_code.co_filename) != script:
        tb = tb.tb_next
    traceback.print_exception(type(exc), exc, tb if tb is not None else exc.__traceback__)


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


def run_script(script: str, args: List[str], device: Optional[str]) -> int:
    if not _use_device(device):
        return 1
    if not os.path.isfile(script):
        sys.stderr.write(f"fluidcompat: error: can't open file '{script}': no such file\n")
        return 2
    install()
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
    except BaseException as e:  # noqa: BLE001  (reported as python would, then exit 1)
        cuda = _find_cuda_error(e)
        if cuda is not None:
            sys.stderr.write(f"fluidcompat: error: {cuda}\n")
            return 1
        missing = legacy_package_missing(e)
        if missing is not None:
            sys.stderr.write(missing + "\n")
            return 1
        _print_script_traceback(e, script)
        return 1
    finally:
        sys.stdout.flush()
    return 0


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


def main(argv: Optional[List[str]] = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["launch"]:
        from fluidcompat.launch import main as launch_main

        return launch_main(argv[1:])
    if argv[:1] == ["launch_ps"]:
        from fluidcompat.launch_ps import main as launch_ps_main

        return launch_ps_main(argv[1:])
    if argv[:1] == ["export"]:
        from fluidcompat.export.cli import main as export_main

        return export_main(argv[1:])
    if argv[:1] == ["run"] and "-m" in argv:
        at = argv.index("-m")
        device = None
        for i, a in enumerate(argv[1:at]):
            if a.startswith("--device"):
                device = a.split("=", 1)[1] if "=" in a else argv[1 + i + 1]
        if at + 1 >= len(argv):
            sys.stderr.write("fluidcompat run: error: -m needs a module name\n")
            return 2
        return run_module(argv[at + 1], argv[at + 2 :], device)
    parser = argparse.ArgumentParser(prog="fluidcompat", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser(
        "launch",
        add_help=False,
        help="run a script in several worker processes (data parallel; `fluidcompat launch --help`)",
    )
    sub.add_parser(
        "launch_ps",
        add_help=False,
        help="run a script as a parameter-server job (DistributeTranspiler; `fluidcompat launch_ps --help`)",
    )
    sub.add_parser(
        "export",
        add_help=False,
        help="export an inference model (or a script's) to ONNX, torch.export or a state_dict "
        "(`fluidcompat export --help`)",
    )
    run = sub.add_parser("run", help="run a fluid 1.x script with `import paddle.fluid` resolving to fluidcompat")
    run.add_argument(
        "--device",
        choices=["cpu", "gpu", places.EMULATED_GPU],
        default=None,
        help="cpu: run every GPU place and device_guard('gpu') on the CPU; emulated-gpu: plan, log and "
        "profile GPU places as on a GPU (its copies and GpuMemcpy events) with every tensor in host memory",
    )
    run.add_argument(
        "--explain-placement",
        action="store_true",
        help="before each program first runs, print where its ops run, the copies between devices, "
        "and the device_guard that would remove them (for the place the script asked for)",
    )
    run.add_argument("script", help="the script (or `-m MODULE`, e.g. -m paddle.distributed.launch)")
    run.add_argument("args", nargs=argparse.REMAINDER)
    ns = parser.parse_args(argv)
    if ns.command == "run":
        if ns.explain_placement:
            os.environ["FLUIDCOMPAT_EXPLAIN_PLACEMENT"] = "1"
        return run_script(ns.script, ns.args, ns.device)
    return 2


if __name__ == "__main__":
    sys.exit(main())
