"""`fluidcompat run`: the paddle alias, argv, __main__, tracebacks and exit codes as with python."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap

import pytest

from fluidcompat import places

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def launch(tmp_path, body: str, *args: str, device="cpu", module=True, env=None):
    script = tmp_path / "script.py"
    script.write_text(textwrap.dedent(body))
    dev = ["--device", device] if device else []
    if module:
        cmd = [sys.executable, "-m", "fluidcompat", "run", *dev, str(script), *args]
    else:
        cmd = [
            shutil.which("fluidcompat") or os.path.join(os.path.dirname(sys.executable), "fluidcompat"),
            "run",
            *dev,
            str(script),
            *args,
        ]
    full_env = dict(os.environ)
    full_env.pop(places.ENV_DEVICE, None)
    full_env.update(env or {})
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=full_env, cwd=tmp_path)


def test_modules_resolve_to_fluidcompat(tmp_path):
    proc = launch(
        tmp_path,
        """
        import paddle
        import paddle.fluid as fluid
        import paddle.fluid.layers as layers
        import paddle.fluid.compiler as compiler
        import paddle.fluid.core as core
        import paddle.fluid.framework as framework
        import paddle.fluid.executor as executor
        import paddle.fluid.initializer as initializer
        import paddle.fluid.param_attr as param_attr
        import paddle.fluid.unique_name as unique_name
        from paddle.fluid import core as core2
        import fluidcompat
        assert fluid is fluidcompat and paddle.fluid is fluidcompat
        assert layers is fluidcompat.layers and core is core2
        assert compiler.CompiledProgram is fluid.CompiledProgram
        assert executor.Executor is fluid.Executor and framework.Program is fluid.Program
        assert initializer.Xavier is fluid.initializer.Xavier and param_attr.ParamAttr is fluid.ParamAttr
        assert unique_name.generate("a") == "a_0"
        assert core.is_compiled_with_cuda() is False
        assert isinstance(core.Scope(), fluid.Scope) and core.LoDTensor is fluid.LoDTensor
        assert str(core.CPUPlace()) == "CPUPlace"
        print(paddle.__version__)
    """,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "1.8.5"


def test_argv_and_main(tmp_path):
    proc = launch(
        tmp_path,
        """
        import sys
        print(__name__, sys.argv[1:], sys.argv[0].endswith("script.py"))
    """,
        "--lr",
        "0.1",
        "pos",
        module=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "__main__ ['--lr', '0.1', 'pos'] True"


def test_exit_codes(tmp_path):
    assert launch(tmp_path, "import sys\nsys.exit(3)\n").returncode == 3
    proc = launch(
        tmp_path,
        """
        def inner():
            raise KeyError("boom")
        inner()
    """,
    )
    assert proc.returncode == 1
    assert proc.stderr.startswith("Traceback (most recent call last):")
    assert 'script.py", line 4, in <module>' in proc.stderr and "KeyError: 'boom'" in proc.stderr
    assert "runpy" not in proc.stderr and "__main__.py" not in proc.stderr


def test_a_module_exiting_with_a_message_prints_it(tmp_path):
    """`fluidcompat run -m MODULE` as `python -m MODULE`: sys.exit("message") prints the message to
    stderr and exits 1 (the launcher's own errors are such messages)."""
    (tmp_path / "leaves.py").write_text("import sys\nsys.exit('leaves: no GPU for worker 1')\n")
    (tmp_path / "quiet.py").write_text("import sys\nsys.exit(4)\n")
    for module, code, err in (("leaves", 1, "leaves: no GPU for worker 1\n"), ("quiet", 4, "")):
        proc = subprocess.run(
            [sys.executable, "-m", "fluidcompat", "run", "--device", "cpu", "-m", module],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            env=dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), ROOT])),
        )
        assert (proc.returncode, proc.stderr.replace("fluidcompat: device cpu requested: GPU places and "
                "device_guard('gpu') run on the CPU\n", "")) == (code, err)  # fmt: skip


def test_missing_script(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "fluidcompat", "run", str(tmp_path / "nope.py")], capture_output=True, text=True
    )
    assert proc.returncode == 2 and "can't open file" in proc.stderr


CUDA_SCRIPT = """
    import paddle.fluid as fluid
    x = fluid.layers.fill_constant([2], 'float32', 1.5)
    with fluid.device_guard('gpu'):
        y = fluid.layers.relu(x)
    exe = fluid.Executor(fluid.CUDAPlace(0))
    print(exe.run(fetch_list=[y])[0].tolist())
"""


@pytest.mark.skipif(places.cuda_available(), reason="checks the machine without CUDA")
def test_cuda_place_without_cuda_is_one_line(tmp_path):
    proc = launch(tmp_path, CUDA_SCRIPT, device=None)
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("fluidcompat: error: CUDAPlace(0) needs CUDA")


def test_device_cpu_maps_gpu_places(tmp_path):
    proc = launch(tmp_path, CUDA_SCRIPT, device="cpu")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[1.5, 1.5]"
    assert proc.stderr.count("device cpu requested") == 1


def test_env_variable_maps_gpu_places(tmp_path):
    proc = launch(tmp_path, CUDA_SCRIPT, device=None, env={places.ENV_DEVICE: "cpu"})
    assert proc.returncode == 0, proc.stderr


def test_no_top_level_paddle_package():
    proc = subprocess.run([sys.executable, "-c", "import paddle"], capture_output=True, text=True, cwd="/")
    assert proc.returncode != 0 and "No module named 'paddle'" in proc.stderr


def test_legacy_numpy_names_only_under_run(tmp_path):
    """`fluidcompat run` puts back the numpy names numpy 2 removed (np.float, np.NaN, ...) and leaves
    those numpy still has (np.bool is numpy's bool, np.long its C long); a plain `import fluidcompat`
    does not touch numpy (tests/golden/legacy_names checks the values against fluid 1.8.5)."""
    proc = launch(
        tmp_path,
        """
        import numpy as np
        print(np.float is float, np.int is int, np.NaN != np.NaN, np.bool is np.bool_, np.long is np.dtype("long").type)
        """,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["True"] * 5
    plain = subprocess.run(
        [sys.executable, "-c", "import fluidcompat, numpy as np; print('float' in np.__dict__)"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert plain.stdout.strip() == "False", plain.stderr


def test_flags_set_in_os_environ_before_import(tmp_path):
    """A script that sets FLAGS_check_nan_inf in os.environ before `import paddle.fluid` (as fluid read
    its FLAGS_ at import) gets the check, though `fluidcompat run` imported fluidcompat first."""
    proc = launch(
        tmp_path,
        """
        import os
        os.environ["FLAGS_check_nan_inf"] = "1"
        import numpy as np
        import paddle.fluid as fluid
        x = fluid.data("x", [None, 2], "float32")
        y = fluid.layers.log(x)
        exe = fluid.Executor(fluid.CPUPlace())
        try:
            exe.run(feed={"x": np.array([[1, -1]], "float32")}, fetch_list=[y])
        except Exception as e:
            print([ln for ln in str(e).splitlines() if "===ERROR" in ln][0])
        """,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-1] == (
        "PreconditionNotMetError: ===ERROR: in [op=log] [tensor=log_0.tmp_0] find nan or inf==="
    )
    assert "In cpu, there has 1,0,1 nan,inf,num" in proc.stdout
