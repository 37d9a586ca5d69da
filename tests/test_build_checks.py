"""Issue 41 point 6: bad layer arguments fail when the program is built, with fluid 1.8.5's error
types (golden build_checks.json, recorded with tools/fluid18); a damaged ``__model__`` file, a ragged
list feed and a truncated dygraph checkpoint give errors that name the file or the variable."""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

import fluidcompat as fluid
from fluidcompat.executor.errors import EnforceNotMet
from fluidcompat.proto import FormatError

HERE = os.path.dirname(os.path.abspath(__file__))
GOLDEN = os.path.join(HERE, "golden")


def _flat(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def test_build_checks_match_fluid():
    proc = subprocess.run(
        [sys.executable, "-m", "fluidcompat", "run", "--device", "cpu", os.path.join(GOLDEN, "build_checks.py")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout)
    with open(os.path.join(GOLDEN, "build_checks.json")) as f:
        want = json.load(f)
    assert sorted(got) == sorted(want)
    for name in want:
        assert got[name][0] == want[name][0], name  # the error type (or "ok")
    for name in ("fc_size_float", "fill_constant_minus1", "fill_constant_minus2", "ragged_feed"):
        assert got[name][2] == want[name][2], name  # the ops built before the error: none added by it
    for name in ("fc_size_bool", "fc_size_numpy_int", "fill_constant_zero"):
        assert got[name] == want[name], name
    for name in ("fill_constant_minus1", "fill_constant_minus2"):
        assert got[name][1] == want[name][1]
    assert _flat(got["ragged_feed"][1]).startswith(_flat(want["ragged_feed"][1]))
    assert "'x'" in got["ragged_feed"][1]  # fluid did not name the variable
    assert "size=3.5" in got["fc_size_float"][1]
    assert want["load_dygraph_truncated"] == ["UnpicklingError", True, False]
    assert got["load_dygraph_truncated"] == ["UnpicklingError", True, True]  # and the path, which fluid left out


def test_fc_float_size_builds_nothing():
    x = fluid.data("x", [None, 2], "float32")
    main = fluid.default_main_program()
    before = (len(main.global_block().ops), sorted(main.global_block().vars))
    with pytest.raises(TypeError, match=r"fc: size must be an int .* size=3\.5"):
        fluid.layers.fc(x, size=3.5)
    assert (len(main.global_block().ops), sorted(main.global_block().vars)) == before
    assert list(fluid.layers.fc(x, size=np.int32(4)).shape) == [-1, 4]


def test_fill_constant_negative_size_is_refused_at_build():
    main = fluid.default_main_program()
    with pytest.raises(EnforceNotMet, match=r"shape\[1\] = -3; shape = \[2, -3\]"):
        fluid.layers.fill_constant([2, -3], "int64", 7)
    with pytest.raises(EnforceNotMet, match="no less than 0"):
        fluid.layers.zeros([-1, 4], "float32")
    assert main.global_block().ops == []
    n = fluid.layers.fill_constant([1], "int32", 2)  # sizes given by a Variable are checked at run
    out = fluid.layers.fill_constant([n, 3], "float32", 1.5)
    exe = fluid.Executor(fluid.CPUPlace())
    (got,) = exe.run(fetch_list=[out])
    np.testing.assert_array_equal(got, np.full((2, 3), 1.5, "float32"))


def test_ragged_feed_names_the_variable():
    x = fluid.data("x", [None, 2], "float32")
    y = x * 2.0
    exe = fluid.Executor(fluid.CPUPlace())
    for _ in range(2):  # the first run and the cached one
        with pytest.raises(RuntimeError, match=r"Some of your feed data hold LoD information.*'x' is a list of rows"):
            exe.run(feed={"x": [[1, 2], [3]]}, fetch_list=[y])
    with pytest.raises(ValueError, match=r"The feed value of 'x' does not convert to float32"):
        exe.run(feed={"x": [["a", "b"]]}, fetch_list=[y])
    (got,) = exe.run(feed={"x": [[1, 2], [3, 4]]}, fetch_list=[y])
    np.testing.assert_array_equal(got, np.array([[2, 4], [6, 8]], "float32"))


def _fuzzed(data: bytes, rng: random.Random, k: int) -> bytes:
    d = bytearray(data)
    if k % 2:
        return bytes(d[: rng.randrange(len(d))])
    for _ in range(3):
        d[rng.randrange(len(d))] = rng.randrange(256)
    return bytes(d)


def test_fuzzed_model_files_name_the_file(tmp_path):
    """Truncated and byte-flipped ``__model__`` files (fluid: EnforceNotMet "Failed to parse
    program_desc from binary string"): every failure names the file (before: UnicodeDecodeError,
    struct.error, TypeError, KeyError without it)."""
    x = fluid.data("x", [None, 4], "float32")
    y = fluid.layers.fc(x, 3)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(fluid.default_startup_program())
    src, fz = str(tmp_path / "src"), str(tmp_path / "fz")
    fluid.io.save_inference_model(src, ["x"], [y], exe)
    os.makedirs(fz)
    for name in os.listdir(src):
        if name not in ("__model__", ".fluidcompat_manifest"):  # a changed file in a folder with its manifest
            shutil.copy(os.path.join(src, name), os.path.join(fz, name))  # is refused before it is parsed
    with open(os.path.join(src, "__model__"), "rb") as f:
        data = f.read()
    path = os.path.join(fz, "__model__")
    rng, kinds = random.Random(41), {}
    for k in range(200):
        with open(path, "wb") as f:
            f.write(_fuzzed(data, rng, k))
        try:
            fluid.io.load_inference_model(fz, exe)
            kinds["ok"] = kinds.get("ok", 0) + 1
        except Exception as e:  # noqa: BLE001
            assert fz in str(e), f"case {k}: {type(e).__name__}: {e}"
            assert isinstance(e, ValueError), f"case {k}: {type(e).__name__}: {e}"
            kinds[type(e).__name__] = kinds.get(type(e).__name__, 0) + 1
    assert kinds.get("ModelFormatError", 0) > 150, kinds
    with open(path, "wb") as f:
        f.write(data[:37])
    with pytest.raises(EnforceNotMet, match=r"Failed to parse program_desc from binary string: .*fz/__model__"):
        fluid.io.load_inference_model(fz, exe)
    with pytest.raises(FormatError, match="not a fluid program file"):
        fluid.io.load_inference_model(fz, exe)
