"""``fluidcompat run [--device cpu|gpu] script.py [args]``: run a legacy fluid script unchanged."""

from __future__ import annotations

import argparse
import os
import sys
from typing import List, Optional

from fluidcompat.runner import (  # noqa: F401  (LEGACY_PACKAGES, legacy_package_missing: this module's API too)
    _DEVICES,
    LEGACY_PACKAGES,
    legacy_package_missing,
    run_module,
    run_script,
    take_run_options,
    version_line,
)


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
    parser.add_argument("--version", action="version", version=version_line())
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
        choices=_DEVICES,
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
    run.add_argument(
        "--progress",
        action="store_true",
        help="count the script's exe.run calls (steps) and their rate on stderr",
    )
    run.add_argument(
        "script",
        help="the script (or `-m MODULE`, e.g. -m paddle.distributed.launch); run options after it "
        "(--device cpu, --progress, --explain-placement) are the runner's unless the script names them",
    )
    run.add_argument("args", nargs=argparse.REMAINDER)
    ns = parser.parse_args(argv)
    if ns.command == "run":
        taken, ns.args = take_run_options(ns.script, ns.args)
        if taken:
            late = run.parse_args([*taken, ns.script])
            ns.device = late.device if late.device is not None else ns.device
            ns.explain_placement = ns.explain_placement or late.explain_placement
            ns.progress = ns.progress or late.progress
        if ns.explain_placement:
            os.environ["FLUIDCOMPAT_EXPLAIN_PLACEMENT"] = "1"
        return run_script(ns.script, ns.args, ns.device, ns.progress)
    return 2


if __name__ == "__main__":
    sys.exit(main())
