"""What fluid 1.8 installed with it, under `fluidcompat run`: a missing package of setup.cfg's extra
`legacy` is named in one line, Pillow's removed names (Image.ANTIALIAS, ...) are back, and numpy's
float() of a one-element array converts without a warning, as on numpy 1.19."""

from __future__ import annotations

import configparser
import os
import subprocess
import sys
import textwrap
import types

import pytest

from fluidcompat import places
from fluidcompat.__main__ import LEGACY_PACKAGES, legacy_package_missing
from fluidcompat.compat import legacy_pillow

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FLUIDCOMPAT = os.path.join(os.path.dirname(sys.executable), "fluidcompat")


def run(tmp_path, body: str, *cmd: str):
    """``fluidcompat run script.py`` (or ``fluidcompat run -m mod`` with ``cmd``) in tmp_path."""
    (tmp_path / "script.py").write_text(textwrap.dedent(body))
    env = dict(os.environ)
    env.pop(places.ENV_DEVICE, None)
    env.pop("PYTHONWARNINGS", None)
    return subprocess.run(
        [FLUIDCOMPAT, "run", *(cmd or ["script.py"])],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=tmp_path,
    )


# ---- the extra and the one-line error


def test_the_legacy_extra_holds_every_package_the_error_names():
    cfg = configparser.ConfigParser()
    cfg.read(os.path.join(ROOT, "setup.cfg"))
    extra = [ln.strip() for ln in cfg["options.extras_require"]["legacy"].splitlines() if ln.strip()]
    assert sorted(extra, key=str.lower) == sorted(LEGACY_PACKAGES.values(), key=str.lower)


@pytest.mark.parametrize(
    "name, pip_name",
    [("cv2", "opencv-python-headless"), ("PIL", "Pillow"), ("yaml", "PyYAML"), ("scipy", None)],
)
def test_missing_legacy_package_is_one_line(name, pip_name):
    named = f"'{name}' ({pip_name})" if pip_name else f"'{name}'"
    msg = legacy_package_missing(ModuleNotFoundError(f"No module named '{name}'", name=name))
    assert msg == (
        f"fluidcompat: error: the script imports {named}, which fluid 1.8 installed with it: "
        "pip install 'fluidcompat[legacy]'"
    )


@pytest.mark.parametrize(
    "exc",
    [
        ModuleNotFoundError("No module named 'foo'", name="foo"),
        ModuleNotFoundError("No module named 'PIL.Foo'", name="PIL.Foo"),  # PIL is there, a submodule not
        ModuleNotFoundError("No module named 'paddle'", name="paddle"),
        ImportError("cannot import name 'x' from 'cv2'", name="cv2"),
        ValueError("cv2"),
    ],
)
def test_other_errors_are_not_a_missing_legacy_package(exc):
    assert legacy_package_missing(exc) is None


# Each script below takes site-packages off sys.path before its import, so the package is truly not
# found by Python's import system there (its own ModuleNotFoundError), installed in the venv or not.
HIDE_SITE_PACKAGES = """
import sys
sys.path[:] = [p for p in sys.path if "site-packages" not in p and "dist-packages" not in p]
assert "{name}" not in sys.modules
"""


def test_script_importing_a_missing_legacy_package_stops_with_one_line(tmp_path):
    proc = run(tmp_path, HIDE_SITE_PACKAGES.format(name="cv2") + "import cv2\nprint('imported')\n")
    assert proc.returncode == 1
    assert proc.stdout == ""
    assert proc.stderr == (
        "fluidcompat: error: the script imports 'cv2' (opencv-python-headless), which fluid 1.8 installed "
        "with it: pip install 'fluidcompat[legacy]'\n"
    )


def test_module_importing_a_missing_legacy_package_stops_with_one_line(tmp_path):
    (tmp_path / "reader.py").write_text(HIDE_SITE_PACKAGES.format(name="yaml") + "import yaml\n")
    proc = run(tmp_path, "", "-m", "reader")
    assert proc.returncode == 1
    assert proc.stderr == (
        "fluidcompat: error: the script imports 'yaml' (PyYAML), which fluid 1.8 installed with it: "
        "pip install 'fluidcompat[legacy]'\n"
    )


def test_other_missing_module_keeps_pythons_traceback(tmp_path):
    proc = run(tmp_path, "import fluidcompat_no_such_module\n")
    assert proc.returncode == 1
    assert proc.stderr.startswith("Traceback (most recent call last):\n")
    assert proc.stderr.endswith("ModuleNotFoundError: No module named 'fluidcompat_no_such_module'\n")
    assert "fluid 1.8 installed" not in proc.stderr


# ---- Pillow


def test_patch_puts_back_the_removed_names_only():
    import enum

    class Resampling(enum.IntEnum):
        NEAREST = 0
        LANCZOS = 1
        BILINEAR = 2
        BICUBIC = 3

    image = types.ModuleType("PIL.Image")
    image.Resampling = Resampling
    image.NEAREST = "kept"
    added = legacy_pillow.patch(image)
    assert sorted(added) == ["ANTIALIAS", "BICUBIC", "BILINEAR", "CUBIC", "LANCZOS", "LINEAR"]
    assert image.NEAREST == "kept"
    assert image.ANTIALIAS is Resampling.LANCZOS
    assert image.LINEAR is Resampling.BILINEAR
    assert image.CUBIC is Resampling.BICUBIC
    assert legacy_pillow.patch(image) == []


def test_pillow_removed_names_work_in_a_script(tmp_path):
    pytest.importorskip("PIL.Image")
    proc = run(
        tmp_path,
        """
        import sys
        print("PIL.Image" in sys.modules)  # not imported by fluidcompat run
        import numpy as np
        from PIL import Image
        print(Image.ANTIALIAS == Image.LANCZOS, Image.LINEAR == Image.BILINEAR, Image.CUBIC == Image.BICUBIC)
        im = Image.fromarray(np.arange(64, dtype=np.uint8).reshape(8, 8))
        small = im.resize((4, 4), Image.ANTIALIAS)
        print(small.size, np.array_equal(np.asarray(small), np.asarray(im.resize((4, 4), Image.LANCZOS))))
        print(im.resize((4, 4), Image.CUBIC).size, im.resize((4, 4), Image.LINEAR).size)
        """,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["False", "True True True", "(4, 4) True", "(4, 4) (4, 4)"]
    assert proc.stderr == ""


def test_pillow_is_patched_when_already_imported():
    pytest.importorskip("PIL.Image")
    code = (
        "from PIL import Image; from fluidcompat.compat import legacy_pillow; "
        "print('ANTIALIAS' in Image.__dict__, 'ANTIALIAS' in legacy_pillow.restore(), Image.ANTIALIAS == Image.LANCZOS)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    # Pillow >= 10 has no ANTIALIAS, and restore() adds it at once; an older one has it already
    assert proc.stdout.split() in (["False", "True", "True"], ["True", "False", "True"])


# ---- numpy


def test_float_of_a_one_element_array_converts_without_a_warning(tmp_path):
    proc = run(
        tmp_path,
        """
        import warnings
        import numpy as np
        print(float(np.array([[1.5]])))
        print('%f' % np.array([2.0]))
        print(int(np.array([3])), float(np.array([0.25], "float32")))
        row = np.array([[4.0, 5.0]])[:, :1]
        print(float(row))
        warnings.warn("another deprecation", DeprecationWarning)  # other warnings show as before
        """,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["1.5", "2.000000", "3 0.25", "4.0"]
    assert "DeprecationWarning: another deprecation" in proc.stderr
    assert "Conversion of an array" not in proc.stderr
    assert len(proc.stderr.splitlines()) == 2, proc.stderr  # the warning and its source line
