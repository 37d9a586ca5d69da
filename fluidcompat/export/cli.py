"""``fluidcompat export MODEL_DIR|script.py --format onnx|pt2|state_dict -o FILE``.

MODEL_DIR is an inference model written by ``save_inference_model`` (by fluid 1.8 or by fluidcompat):
``__model__`` plus one file per parameter, or all parameters in one file (``--params-filename``;
``__params__`` is found by itself). A script is run as ``fluidcompat run`` runs it, and the last
inference model it saves is exported (``fluidcompat export train.py -o model.onnx -- --epochs 1``).
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import List, Optional, Tuple

from fluidcompat.export.formats import FORMATS
from fluidcompat.export.graph import ExportError

_BY_EXTENSION = {".onnx": "onnx", ".pt2": "pt2", ".pt": "state_dict", ".pth": "state_dict"}


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="fluidcompat export",
        description="Export a fluid inference model (or the one a script saves) to ONNX, torch.export "
        "(.pt2) or a PyTorch state_dict.",
    )
    p.add_argument("source", help="an inference model directory (save_inference_model), or a script that saves one")
    p.add_argument("--format", choices=FORMATS, help="what to write (default: from the extension of -o)")
    p.add_argument("-o", "--output", required=True, help="the file to write")
    p.add_argument("--model-filename", default=None, help="the program's file in MODEL_DIR (default __model__)")
    p.add_argument(
        "--params-filename",
        default=None,
        help="the file holding every parameter, when they were saved in one (default: __params__ if "
        "present, else one file per parameter)",
    )
    p.add_argument("--device", choices=["cpu"], default=None, help="run the script's GPU places on the CPU")
    return p


def load_model(dirname: str, model_filename=None, params_filename=None):
    """(program, feed names, fetch names, scope) of an inference model directory."""
    import fluidcompat as fluid
    from fluidcompat.executor.scope import Scope, scope_guard

    if not os.path.isdir(dirname):
        raise ExportError(f"{dirname!r} is not a directory holding an inference model")
    if params_filename is None and os.path.isfile(os.path.join(dirname, "__params__")):
        params_filename = "__params__"
    scope = Scope()
    with scope_guard(scope):
        program, feeds, fetches = fluid.io.load_inference_model(
            dirname, fluid.Executor(fluid.CPUPlace()), model_filename, params_filename
        )
    return program, list(feeds), [v.name for v in fetches], scope


def run_script_for_model(script: str, args: List[str], device: Optional[str]):
    """Run ``script`` and return (program, feed names, fetch names, scope) of the last inference model
    it saved, loaded back as it was written; None when the script failed or saved none."""
    import fluidcompat.io as fio
    from fluidcompat.executor.scope import Scope, scope_guard
    from fluidcompat.runner import run_script

    saved: List[Tuple] = []
    original = fio.save_inference_model

    def recording(dirname, feeded_var_names, target_vars, executor, *a, **kw):
        names = original(dirname, feeded_var_names, target_vars, executor, *a, **kw)
        model_filename = kw.get("model_filename", a[1] if len(a) > 1 else None)
        params_filename = kw.get("params_filename", a[2] if len(a) > 2 else None)
        if not kw.get("program_only", a[4] if len(a) > 4 else False):
            scope = Scope()
            with scope_guard(scope):
                program, feeds, fetches = original_load(dirname, executor, model_filename, params_filename)
            saved.append((dirname, program, list(feeds), [v.name for v in fetches], scope))
        return names

    original_load = fio.load_inference_model
    fio.save_inference_model = recording
    try:
        rc = run_script(script, args, device)
    finally:
        fio.save_inference_model = original
    if rc:
        sys.stderr.write(f"fluidcompat export: error: {script} failed (exit status {rc}); nothing written\n")
        return None
    if not saved:
        sys.stderr.write(f"fluidcompat export: error: {script} saved no inference model (save_inference_model)\n")
        return None
    if len(saved) > 1:
        print(f"fluidcompat export: {script} saved {len(saved)} inference models; exporting the last, {saved[-1][0]}")
    return saved[-1][1:]


def _shape(spec) -> str:
    from fluidcompat.export.formats import dim_name

    return "[" + ", ".join(dim_name(spec, i) if d < 0 else str(d) for i, d in enumerate(spec.shape)) + "]"


def _describe(spec) -> str:
    named = spec.fluid_name if spec.name == spec.fluid_name else f"{spec.fluid_name} (as {spec.name})"
    return f"{named} {str(spec.dtype).replace('torch.', '')} {_shape(spec)}"


def main(argv: Optional[List[str]] = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    script_args: List[str] = []
    if "--" in argv:
        at = argv.index("--")
        argv, script_args = argv[:at], argv[at + 1 :]
    ns = _parser().parse_args(argv)
    fmt = ns.format or _BY_EXTENSION.get(os.path.splitext(ns.output)[1].lower())
    if fmt is None:
        sys.stderr.write(f"fluidcompat export: error: give --format ({'|'.join(FORMATS)}) for {ns.output!r}\n")
        return 2
    from fluidcompat.export.formats import save
    from fluidcompat.export.graph import build_module

    try:
        if os.path.isfile(ns.source) and ns.source.endswith(".py"):
            found = run_script_for_model(ns.source, script_args, ns.device)
            if found is None:
                return 1
            program, feeds, fetches, scope = found
        else:
            program, feeds, fetches, scope = load_model(ns.source, ns.model_filename, ns.params_filename)
        module = build_module(program, feeds, fetches, scope)
        written = save(module, ns.output, fmt)
    except ExportError as e:
        sys.stderr.write(f"fluidcompat export: error: {e}; nothing written\n")
        return 1
    size = os.path.getsize(written.path)
    values = sum(t.numel() for t in module.state_dict().values())
    print(f"fluidcompat export: wrote {written.path} ({fmt}, {size:,} bytes)")
    for label, specs in (("input", written.inputs), ("output", written.outputs)):
        for spec in specs:
            print(f"  {label:<7} {_describe(spec)}")
    ops = sum(1 for n in module.graph.nodes if n.op == "call_module")
    print(f"  {ops} ops; {len(written.params)} parameters and buffers ({values:,} values)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
