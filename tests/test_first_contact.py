"""What a new user meets first (issue 42): the supported Pythons, the paddle alias outside the runner,
progress, the runner's command line and tracebacks, the timeline tool, Paddle 2.x names, and README
outputs that reproduce."""

import configparser
import json
import os
import re
import signal
import subprocess
import sys
import textwrap

import pytest

from tests.terminal import as_from_a_terminal

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GOLDEN = os.path.join(ROOT, "tests", "golden")
RUN = [sys.executable, "-m", "fluidcompat", "run"]


def sh(cmd, cwd=ROOT, env=None, timeout=300, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, env=env, timeout=timeout, **kw)


def script(tmp_path, code, name="script.py"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(code))
    return str(path)


# ---- supported Pythons -------------------------------------------------------------------------


def test_python_requires_is_the_makefile_check():
    """setup.cfg's python_requires and the Makefile's check name the same oldest Python (3.10: torch
    2.13.0 has no wheel for 3.9)."""
    cfg = configparser.ConfigParser()
    cfg.read(os.path.join(ROOT, "setup.cfg"))
    assert cfg["options"]["python_requires"].strip() == ">=3.10"
    with open(os.path.join(ROOT, "Makefile")) as f:
        assert "(3, 10) <= v <= (3, 14)" in f.read()


def test_make_with_an_old_python_stops_with_one_line(tmp_path):
    """``make demo PY=<Python 3.9>`` says which Python to use and makes no venv (was pip's
    ResolutionImpossible after making one)."""
    fake = tmp_path / "python3.9"  # this interpreter, reporting 3.9 (the machine may have no 3.9)
    fake.write_text(
        f"#!/bin/sh\nexec {sys.executable} -c \"import sys; sys.version_info = (3, 9, 18, 'final', 0); "
        'exec(sys.argv[1])" "$2"\n'
    )
    fake.chmod(0o755)
    venv = tmp_path / "venv"
    proc = sh(["make", "-s", "demo", f"PY={fake}", f"VENV={venv}"])
    assert proc.returncode != 0 and not venv.exists()
    lines = proc.stderr.strip().splitlines()
    assert lines[0] == (
        f"make: {fake} is Python 3.9; fluidcompat needs Python 3.10 to 3.14 (the Pythons torch 2.13.0 has "
        "wheels for): run make with PY=python3.11 (or any 3.10-3.14)"
    )
    assert len(lines) == 2 and lines[1].startswith("make: ***")


# ---- the paddle alias outside fluidcompat run ----------------------------------------------------


def test_paddle_alias_module_gives_paddle_in_plain_python(tmp_path):
    code = (
        "import fluidcompat.paddle_alias\nimport paddle, paddle.fluid as fluid\n"
        "from paddle.fluid.core import AnalysisConfig\n"
        "import numpy as np\n"
        "print(fluid.__name__, paddle.__version__, AnalysisConfig.__module__, hasattr(np, 'float'))\n"
    )
    proc = sh([sys.executable, "-c", code], cwd=tmp_path)
    # the alias only: numpy's removed names stay removed outside fluidcompat run
    assert proc.stdout.split() == [
        "fluidcompat",
        "1.8.5",
        "fluidcompat.inference",
        str(hasattr(__import__("numpy"), "float")),
    ]
    plain = sh([sys.executable, "-c", "import paddle"], cwd=tmp_path)
    assert plain.returncode == 1 and "No module named 'paddle'" in plain.stderr


def test_paddle_alias_refuses_beside_a_real_paddle(tmp_path):
    (tmp_path / "paddle").mkdir()
    (tmp_path / "paddle" / "__init__.py").write_text("REAL = True\n")
    proc = sh([sys.executable, "-c", "import paddle\nimport fluidcompat.paddle_alias"], cwd=tmp_path,
              env=dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), ROOT])))  # fmt: skip
    assert proc.returncode == 1
    assert "ImportError: fluidcompat.paddle_alias: a real 'paddle' package is already imported" in proc.stderr


# ---- progress ----------------------------------------------------------------------------------


def test_elapsed_speaks_only_for_slow_work(capsys):
    import time

    from fluidcompat.progress import elapsed

    with elapsed("quick", quiet_s=5):
        pass
    assert capsys.readouterr().err == ""
    with elapsed("compiling", quiet_s=0.05):
        time.sleep(0.3)
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "fluidcompat: compiling ..."
    took = float(re.fullmatch(r"fluidcompat: compiling: done in ([\d.]+) s", err[1]).group(1))
    assert 0.25 <= took < 5


def test_run_progress_counts_exe_run_steps(tmp_path):
    path = script(
        tmp_path,
        """
        import paddle.fluid as fluid
        x = fluid.layers.fill_constant([2], "float32", 1.5)
        exe = fluid.Executor(fluid.CPUPlace())
        for _ in range(7):
            out = exe.run(fetch_list=[x])
        print(out[0].tolist())
        """,
    )
    proc = sh(RUN + ["--progress", path])
    assert proc.returncode == 0 and proc.stdout == "[1.5, 1.5]\n"
    assert re.fullmatch(r"fluidcompat: exe\.run: 7 steps in [\d.]+ s \([\d.]+ steps/s\)\n", proc.stderr), proc.stderr


# ---- the runner's command line and tracebacks ----------------------------------------------------

GPU_SCRIPT = """
    import sys
    import paddle.fluid as fluid
    x = fluid.layers.fill_constant([2], "float32", 1.5)
    print(sys.argv[1:], fluid.Executor(fluid.CUDAPlace(0)).run(fetch_list=[x])[0].tolist())
"""


def test_run_options_after_the_script_are_the_runners(tmp_path):
    """``fluidcompat run x.py --device cpu --progress`` as ``fluidcompat run --device cpu --progress
    x.py``; the script's own arguments stay, ``--`` ends the runner's."""
    path = script(tmp_path, GPU_SCRIPT)
    proc = sh(RUN + [path, "--lr", "0.1", "--device", "cpu", "--progress", "--", "--device", "cpu"])
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "['--lr', '0.1', '--', '--device', 'cpu'] [1.5, 1.5]\n"
    assert "fluidcompat: device cpu requested" in proc.stderr and "fluidcompat: exe.run: 1 steps" in proc.stderr


def test_a_script_naming_the_option_keeps_it(tmp_path):
    path = script(tmp_path, "import sys\n# --device is this script's own\nprint(sys.argv[1:])\n")
    proc = sh(RUN + [path, "--device", "cpu"])
    assert proc.stdout == "['--device', 'cpu']\n" and "device cpu requested" not in proc.stderr


def test_cuda_error_says_where_the_device_option_goes(tmp_path):
    from fluidcompat import places

    if places.cuda_available():
        pytest.skip("the script's CUDAPlace runs on this machine")
    path = script(tmp_path, "# takes its own --device\n" + textwrap.dedent(GPU_SCRIPT))
    proc = sh(RUN + [path, "--device", "cpu"], env={k: v for k, v in os.environ.items() if k != "FLUIDCOMPAT_DEVICE"})
    assert proc.returncode == 1
    assert proc.stderr.rstrip().endswith(
        "(the --device after the script's name went to the script, which names a --device of its own: "
        "put fluidcompat's before the script, `fluidcompat run --device cpu script.py`)"
    )


def test_ctrl_c_leaves_as_python_does(tmp_path):
    path = script(tmp_path, "import os, signal\nos.kill(os.getpid(), signal.SIGINT)\nimport time\ntime.sleep(30)\n")
    python = sh(as_from_a_terminal([sys.executable, path]))
    ours = sh(as_from_a_terminal(RUN + [path]))
    assert python.returncode == ours.returncode == -signal.SIGINT
    assert ours.stderr.startswith("Traceback (most recent call last):\n") and ours.stderr.endswith(
        "KeyboardInterrupt\n"
    )
    assert "runpy" not in ours.stderr and "__main__.py" not in ours.stderr


def test_version():
    import torch

    import fluidcompat

    proc = sh([sys.executable, "-m", "fluidcompat", "--version"])
    assert proc.returncode == 0
    assert proc.stdout.startswith(
        f"fluidcompat {fluidcompat.__version__} (the fluid 1.8.5 API; torch {torch.__version__}"
    )


def test_syntax_error_prints_as_python_does(tmp_path):
    path = script(tmp_path, "x = (\n")
    python, ours = sh([sys.executable, path]), sh(RUN + [path])
    assert ours.returncode == python.returncode == 1
    assert ours.stderr == python.stderr  # no runner frames


def test_fluidcompat_frames_under_the_users_last_line_are_one_line(tmp_path):
    path = script(
        tmp_path, "import paddle.fluid as fluid\nx = fluid.data('x', [None, 3])\nfluid.layers.reshape(x, [-1, -1])\n"
    )
    short, full = sh(RUN + [path]), sh(RUN + [path], env=dict(os.environ, FLUIDCOMPAT_TRACEBACK="full"))
    hidden = re.search(
        r"\n  \.\.\. (\d+) frames inside fluidcompat \(FLUIDCOMPAT_TRACEBACK=full shows them\)\n", short.stderr
    )
    assert hidden and 'script.py", line 3, in <module>' in short.stderr
    assert full.stderr.count('  File "') == 1 + int(hidden.group(1))
    assert short.stderr.splitlines()[-1] == full.stderr.splitlines()[-1]
    assert short.stderr.splitlines()[-1].startswith("ValueError: Op 'reshape2' cannot be built")


def test_error_notice_where_fluid_printed_it():
    """fluid's "The following exception is not an EOF exception." before an error raised in
    Executor.run, not before one raised building a layer or by the script after a run (fluid 1.8.5)."""
    proc = sh([sys.executable, os.path.join(GOLDEN, "error_notice_cases.py")] + RUN + ["--device", "cpu"])
    with open(os.path.join(GOLDEN, "error_notice_cases.json")) as f:
        assert json.loads(proc.stdout) == json.load(f)


def test_coverage_module_runs_without_runpy_warning():
    proc = sh([sys.executable, "-W", "error::RuntimeWarning", "-m", "fluidcompat.coverage"])
    assert proc.returncode == 0 and proc.stderr == "" and proc.stdout.startswith("# Compatibility")
    imported = sh([sys.executable, "-c", "import sys, fluidcompat\nprint('fluidcompat.coverage' in sys.modules)"])
    assert imported.stdout == "False\n"


# ---- timeline ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def profile_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("prof") / "profile"
    code = f"""
        import paddle.fluid as fluid
        import paddle.fluid.profiler as profiler
        x = fluid.data("x", [None, 3])
        y = fluid.layers.fc(x, 2)
        exe = fluid.Executor(fluid.CPUPlace())
        exe.run(fluid.default_startup_program())
        import numpy as np
        with profiler.profiler("CPU", None, {str(path)!r}):
            exe.run(feed={{"x": np.ones((2, 3), "float32")}}, fetch_list=[y])
    """
    proc = sh(RUN + [script(path.parent, code, "make_profile.py")])
    assert proc.returncode == 0, proc.stderr
    return path


def timeline(*args):
    return sh([sys.executable, "-m", "fluidcompat.timeline", *args])


@pytest.mark.parametrize("flags", [("--input", "--output"), ("--profile_path", "--timeline_path"), ("-i", "-o")])
def test_timeline_writes_and_says_how_to_open_it(profile_file, tmp_path, flags):
    out = tmp_path / "trace.json"
    proc = timeline(flags[0], str(profile_file), flags[1], str(out))
    assert proc.returncode == 0 and proc.stderr == ""
    trace = json.loads(out.read_text())
    spans = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    tracks = {e["args"]["name"] for e in trace["traceEvents"] if e["name"] == "process_name"}
    assert proc.stdout == (
        f"wrote {out}: {len(spans)} events on {len(tracks)} tracks from {profile_file}. Open it in Perfetto "
        "(https://ui.perfetto.dev, 'Open trace file') or in Chrome at chrome://tracing ('Load').\n"
    )
    assert {"trainer: CPU ops", "trainer: CPU op phases"} <= tracks
    assert {e["name"] for e in spans} >= {"mul", "mul/compute"}


def test_timeline_errors_are_one_line_and_write_nothing(tmp_path):
    bad = tmp_path / "bad"
    bad.write_bytes(b"not a profile\xff\xff")
    out = tmp_path / "trace.json"
    for args, want in (
        (["-i", str(tmp_path / "none"), "-o", str(out)], f"no profile file at {tmp_path / 'none'}: write one with"),
        (["-i", str(bad), "-o", str(out)], f"{bad} is not a profile file written by fluid's profiler ("),
        (["-i", str(bad), "-o", str(tmp_path / "no" / "t.json")], f"{bad} is not a profile file"),
    ):
        proc = timeline(*args)
        assert proc.returncode == 1 and proc.stdout == "" and len(proc.stderr.splitlines()) == 1, proc.stderr
        assert proc.stderr.startswith(f"python -m fluidcompat.timeline: error: {want}"), proc.stderr
        assert not out.exists()


def test_timeline_refuses_an_output_in_a_missing_directory(profile_file, tmp_path):
    proc = timeline("-i", str(profile_file), "-o", str(tmp_path / "no" / "t.json"))
    assert proc.returncode == 1
    target = tmp_path / "no" / "t.json"
    want = f"cannot write {target}: the directory {target.parent} does not exist"
    assert proc.stderr == f"python -m fluidcompat.timeline: error: {want}\n"


# ---- Paddle 2.x names ----------------------------------------------------------------------------


def test_unsupported_paddle2_names_say_what_to_use():
    # the alias's modules, without putting the alias into this process
    from fluidcompat.compat import names, nn, paddle

    with pytest.raises(
        names.UnsupportedAPIError,
        match=r"^paddle\.vision \(Paddle 2\.x\) is not supported by fluidcompat\. Instead: build",
    ):
        _ = paddle.vision
    with pytest.raises(names.UnsupportedAPIError, match=r"^paddle\.Model .* Instead: write the training loop"):
        _ = paddle.Model
    assert not hasattr(paddle, "Model") and not hasattr(nn, "Transformer")
    with pytest.raises(
        AttributeError, match=r"^module 'paddle' \(fluidcompat\) has no attribute 'visoin' \(python -m fluidcompat"
    ):
        _ = paddle.visoin
    with pytest.raises(ImportError):
        from fluidcompat.compat.nn import Transformer  # noqa: F401


def test_unsupported_names_are_missing_and_their_alternatives_are_there():
    import importlib

    import fluidcompat as fluid
    from fluidcompat.compat import names, paddle, real_name

    for qualified, alternative in names.UNSUPPORTED.items():
        module, _, name = qualified.rpartition(".")
        assert not hasattr(importlib.import_module(real_name(module)), name), qualified
        for ref in re.findall(r"\b((?:fluid|paddle)(?:\.\w+)+)", alternative):
            obj = {"fluid": fluid, "paddle": paddle}[ref.split(".")[0]]
            for part in ref.split(".")[1:]:
                obj = getattr(obj, part)  # AttributeError: the alternative named is not there


def test_paddle2_names_doc_is_current():
    from fluidcompat.compat import names

    with open(names.DOC) as f:
        assert f.read() == names.render(), "docs/paddle2_names.md is stale: python -m fluidcompat.compat.names --write"


def test_every_listed_paddle2_name_resolves():
    import importlib

    from fluidcompat.compat import names, real_name

    for module, listed in names.available().items():
        mod = importlib.import_module(real_name(module))
        assert [n for n in listed if not hasattr(mod, n)] == [], module


def test_fluid_unsupported_error_points_at_an_installed_list():
    import fluidcompat as fluid
    from fluidcompat.coverage import UnsupportedAPIError

    with pytest.raises(UnsupportedAPIError) as e:
        _ = fluid.optimizer.DGCMomentumOptimizer
    assert "The nearest supported: fluid.optimizer.MomentumOptimizer" in str(e.value)
    assert str(e.value).endswith("`python -m fluidcompat.coverage` lists what is.") and "docs/" not in str(e.value)


# ---- README outputs ------------------------------------------------------------------------------


def readme_block(after: str) -> str:
    with open(os.path.join(ROOT, "README.md")) as f:
        text = f.read()
    start = text.index(after) + len(after)
    return text[start : text.index("```", start)]


def test_fit_a_line_prints_the_readme_numbers(generated_data_home):
    want = readme_block("$ .venv/bin/fluidcompat run --device cpu samples/fit_a_line.py\n")
    proc = sh(RUN + ["--device", "cpu", os.path.join(ROOT, "samples", "fit_a_line.py")], env=generated_data_home)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == want


def test_demo_crop_prints_the_readme_output():
    want = readme_block("$ .venv/bin/fluidcompat run --device cpu samples/demo_crop.py\n")
    proc = sh(RUN + ["--device", "cpu", os.path.join(ROOT, "samples", "demo_crop.py")])
    assert proc.returncode == 0 and proc.stderr + proc.stdout == want  # (the README shows stderr's line first)
