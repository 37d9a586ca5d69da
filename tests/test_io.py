"""Saving and loading: fluid 1.8's formats both ways, bit-for-bit reloads, and errors that name the variable."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import fluidcompat as fluid
from fluidcompat import io as fio
from fluidcompat.proto import FormatError

HERE = os.path.dirname(os.path.abspath(__file__))
SAVED = os.path.join(HERE, "golden", "fluid18_saved")
X = np.arange(8).reshape(2, 4).astype("float32")


def build_net():
    x = fluid.data("x", [None, 4])
    y = fluid.layers.fc(x, 3, act="relu")
    z = fluid.layers.fc(y, 2)
    loss = fluid.layers.mean(z)
    fluid.optimizer.Adam(0.01).minimize(loss)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(fluid.default_startup_program())
    return exe, z, loss, fluid.default_main_program().clone(for_test=True)


def fluid_outputs():
    with open(os.path.join(HERE, "golden", "save_model.json")) as f:
        return np.array(json.load(f)["outputs"], "float32")


@pytest.mark.parametrize("how", ["pers", "comb", "ckpt", "infer"])
def test_loads_files_written_by_fluid(how):
    exe, z, _, test = build_net()
    if how == "pers":
        fio.load_persistables(exe, os.path.join(SAVED, "pers"))
    elif how == "comb":
        fio.load_params(exe, os.path.join(SAVED, "comb"), filename="params")
    elif how == "ckpt":
        fluid.load(fluid.default_main_program(), os.path.join(SAVED, "ckpt", "model"), exe)
    else:
        prog, feeds, fetches = fio.load_inference_model(os.path.join(SAVED, "infer"), exe)
        assert feeds == ["x"] and [v.name for v in fetches] == ["save_infer_model/scale_0.tmp_0"]
        out = exe.run(prog, feed={"x": X}, fetch_list=fetches)[0]
        np.testing.assert_allclose(out, fluid_outputs(), rtol=1e-6)
        return
    out = exe.run(test, feed={"x": X}, fetch_list=[z])[0]
    np.testing.assert_allclose(out, fluid_outputs(), rtol=1e-6)


def test_load_program_state_of_fluid_files():
    state = fio.load_program_state(os.path.join(SAVED, "ckpt", "model"))
    assert "fc_0.w_0" in state and "learning_rate_0" in state and state["fc_0.w_0"].shape == (4, 3)
    per_var = fio.load_program_state(os.path.join(SAVED, "pers"))
    np.testing.assert_array_equal(per_var["fc_0.w_0"], state["fc_0.w_0"])
    exe, z, _, test = build_net()
    fio.set_program_state(fluid.default_main_program(), state)
    np.testing.assert_allclose(exe.run(test, feed={"x": X}, fetch_list=[z])[0], fluid_outputs(), rtol=1e-6)


FRESH = """
import sys, numpy as np
import paddle.fluid as fluid
x = fluid.data("x", [None, 4])
y = fluid.layers.fc(x, 3, act="relu")
z = fluid.layers.fc(y, 2)
loss = fluid.layers.mean(z)
fluid.optimizer.Adam(0.01).minimize(loss)
exe = fluid.Executor(fluid.CPUPlace())
exe.run(fluid.default_startup_program())
test = fluid.default_main_program().clone(for_test=True)
how, d = sys.argv[1], sys.argv[2]
if how == "pers":
    fluid.io.load_persistables(exe, d)
elif how == "comb":
    fluid.io.load_params(exe, d, filename="params")
elif how == "ckpt":
    fluid.load(fluid.default_main_program(), d + "/model", exe)
if how == "infer":
    prog, feeds, fetches = fluid.io.load_inference_model(d, exe)
    out = exe.run(prog, feed={"x": np.arange(8).reshape(2, 4).astype("float32")}, fetch_list=fetches)[0]
else:
    out = exe.run(test, feed={"x": np.arange(8).reshape(2, 4).astype("float32")}, fetch_list=[z])[0]
sys.stdout.write(out.tobytes().hex())
"""


@pytest.mark.parametrize("how", ["pers", "comb", "ckpt", "infer"])
def test_reload_in_fresh_process_is_bit_for_bit(tmp_path, how):
    exe, z, loss, test = build_net()
    exe.run(feed={"x": np.ones((2, 4), "float32")}, fetch_list=[loss])
    d = str(tmp_path / how)
    if how == "pers":
        fio.save_persistables(exe, d)
    elif how == "comb":
        fio.save_params(exe, d, filename="params")
    elif how == "ckpt":
        fluid.save(fluid.default_main_program(), d + "/model")
    else:
        fio.save_inference_model(d, ["x"], [z], exe)
    want = exe.run(test, feed={"x": X}, fetch_list=[z])[0].tobytes().hex()
    script = tmp_path / "fresh.py"
    script.write_text(textwrap.dedent(FRESH))
    proc = subprocess.run(
        [sys.executable, "-m", "fluidcompat", "run", str(script), how, d], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == want


def scope_values(names):
    return {n: np.array(fluid.global_scope().find_var(n).get_tensor()) for n in names}


def test_truncated_file_names_the_variable_and_changes_nothing(tmp_path):
    exe, z, _, _ = build_net()
    d = str(tmp_path / "m")
    fio.save_params(exe, d)
    fio.save_params(exe, str(tmp_path / "c"), filename="params")
    path = os.path.join(d, "fc_1.w_0")
    data = open(path, "rb").read()
    open(path, "wb").write(data[:-5])
    names = ["fc_0.w_0", "fc_0.b_0", "fc_1.w_0", "fc_1.b_0"]
    exe.run(fluid.default_startup_program())  # new random values
    before = scope_values(names)
    with pytest.raises(FormatError, match=r"variable 'fc_1.w_0'.*ends early"):
        fio.load_params(exe, d)
    combined = str(tmp_path / "c" / "params")
    data = open(combined, "rb").read()
    open(combined, "wb").write(data[:-3])
    with pytest.raises(FormatError, match=r"variable 'fc_1.w_0' in .*params: the file ends early"):
        fio.load_params(exe, str(tmp_path / "c"), filename="params")
    after = scope_values(names)
    for n in names:
        np.testing.assert_array_equal(before[n], after[n])


def test_mismatched_shape_names_the_variable(tmp_path):
    exe, *_ = build_net()
    d = str(tmp_path / "m")
    fio.save_params(exe, d)
    shutil.copy(os.path.join(d, "fc_0.b_0"), os.path.join(d, "fc_1.b_0"))  # [3] where [2] is declared
    before = scope_values(["fc_0.w_0"])
    with pytest.raises(
        ValueError, match=r"Shape of variable 'fc_1.b_0' in .* is \[3\], but the program declares \[2\]"
    ):
        fio.load_params(exe, d)
    np.testing.assert_array_equal(scope_values(["fc_0.w_0"])["fc_0.w_0"], before["fc_0.w_0"])
    os.remove(os.path.join(d, "fc_1.b_0"))
    with pytest.raises(ValueError, match="Cannot load variable 'fc_1.b_0': there is no file"):
        fio.load_params(exe, d)


def test_mismatched_checkpoint(tmp_path):
    exe, *_ = build_net()
    fluid.save(fluid.default_main_program(), str(tmp_path / "model"))
    with open(tmp_path / "model.pdparams", "r+b") as f:
        f.truncate(40)
    with pytest.raises(FormatError, match="model.pdparams is not a complete fluid state file"):
        fluid.load(fluid.default_main_program(), str(tmp_path / "model"), exe)
    state = {"fc_0.w_0": np.zeros((5, 3), "float32")}
    with pytest.raises(ValueError, match=r"Shape of variable 'fc_0.w_0' in the state dict is \[5, 3\]"):
        fio.set_program_state(fluid.default_main_program(), state)


def test_interrupted_save_keeps_the_old_file(tmp_path, monkeypatch):
    exe, *_ = build_net()
    d = str(tmp_path / "m")
    fio.save_params(exe, d, filename="params")
    old = open(os.path.join(d, "params"), "rb").read()
    exe.run(fluid.default_startup_program())

    def boom(src, dst):
        raise KeyboardInterrupt("interrupted")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(KeyboardInterrupt):
        fio.save_params(exe, d, filename="params")
    monkeypatch.undo()
    assert open(os.path.join(d, "params"), "rb").read() == old
    assert sorted(os.listdir(d)) == ["params"]  # no temporary file left behind


def test_save_needs_values(tmp_path):
    fluid.layers.fc(fluid.data("x", [None, 4]), 2)
    exe = fluid.Executor(fluid.CPUPlace())
    with pytest.raises(ValueError, match="Cannot save variable 'fc_0.w_0': it holds no value"):
        fio.save_params(exe, str(tmp_path))
    assert os.listdir(tmp_path) == []


def test_save_and_load_vars_take_names(tmp_path):
    """save_vars / load_vars take variable names in ``vars`` (fluid 1.8.5 failed: "'str' object has
    no attribute 'type'"); a name not in the program, or a non-variable, is refused before any file is
    written; a main_program that is not a Program gets fluid's message."""
    exe, *_ = build_net()
    scope = fluid.global_scope()
    w = np.array(scope.find_var("fc_0.w_0").get_tensor())
    fio.save_vars(exe, str(tmp_path / "a"), vars=["fc_0.w_0", "fc_0.b_0"])
    assert sorted(os.listdir(tmp_path / "a")) == [".fluidcompat_manifest", "fc_0.b_0", "fc_0.w_0"]
    scope.find_var("fc_0.w_0").get_tensor().set(np.zeros_like(w), fluid.CPUPlace())
    fio.load_vars(exe, str(tmp_path / "a"), vars=["fc_0.w_0"])
    np.testing.assert_array_equal(np.array(scope.find_var("fc_0.w_0").get_tensor()), w)
    with pytest.raises(ValueError, match="vars names 'fc_9.w_0', which is not a variable of the program"):
        fio.save_vars(exe, str(tmp_path / "b"), vars=["fc_0.w_0", "fc_9.w_0"])
    with pytest.raises(TypeError, match="vars should hold Variables or their names. Received: int"):
        fio.save_vars(exe, str(tmp_path / "b"), vars=[3])
    assert not os.path.exists(tmp_path / "b")
    with pytest.raises(TypeError, match="expected type is fluid.Program, but received <class 'int'>"):
        fio.save_vars(exe, str(tmp_path / "b"), main_program=3)


def test_save_inference_model_leaves_the_program(tmp_path):
    exe, z, _, _ = build_net()
    before = str(fluid.default_main_program())
    fio.save_inference_model(str(tmp_path), ["x"], [z], exe)
    assert str(fluid.default_main_program()) == before


def test_saved_files_take_the_umask_mode(tmp_path):
    """Model files are made as open() makes them (0644 under umask 022, as fluid 1.8.5's), not
    mkstemp's 0600: a model folder shared with another account stays readable."""
    exe, z, _, _ = build_net()
    old = os.umask(0o022)
    try:
        fio.save_inference_model(str(tmp_path / "m"), ["x"], [z], exe)
        os.umask(0o027)
        fio.save_persistables(exe, str(tmp_path / "p"))
    finally:
        os.umask(old)
    modes = {p.name: p.stat().st_mode & 0o777 for p in (tmp_path / "m").iterdir()}
    assert "__model__" in modes and set(modes.values()) == {0o644}
    assert {p.stat().st_mode & 0o777 for p in (tmp_path / "p").iterdir()} == {0o640}


def test_a_lod_tensor_file_keeps_its_lod_both_ways(tmp_path):
    """A parameter file fluid 1.8.5 wrote from a LoDTensor (lengths [2, 3]): load_vars keeps its LoD in
    the scope, save_vars writes the same bytes back, and layers.load gives a value with that LoD
    (fluid 1.8.5's own layers.load failed: "Operator load does not have an output called Out")."""
    fluid_file = os.path.join(os.path.dirname(os.path.abspath(__file__)), "golden", "fluid18_saved", "lod_w")
    w = fluid.layers.create_parameter([5, 2], "float32", name="lod_w")
    exe = fluid.Executor(fluid.CPUPlace())
    fluid.io.load_vars(exe, os.path.dirname(fluid_file), vars=[w])
    tensor = fluid.global_scope().find_var("lod_w").get_tensor()
    assert tensor.lod() == [[0, 2, 5]]
    np.testing.assert_array_equal(np.array(tensor), np.arange(10, dtype="float32").reshape(5, 2))
    fluid.io.save_vars(exe, str(tmp_path), vars=[w])
    with open(fluid_file, "rb") as a, open(tmp_path / "lod_w", "rb") as b:
        assert a.read() == b.read()
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        v = main.global_block().create_var(name="loaded", shape=[5, 2], dtype="float32")
        fluid.layers.load(v, str(tmp_path / "lod_w"))
    assert exe.run(main, fetch_list=[v], return_numpy=False)[0].lod() == [[0, 2, 5]]


@pytest.mark.parametrize("name", ["static_rnn", "dynamic_rnn"])
def test_loads_rnn_models_saved_by_fluid(name):
    """Inference models fluid 1.8.5 saved (tests/golden/save_rnn_models.py): a StaticRNN (fluid's
    recurrent op with rnn_memory_helper ops: two memories, one made by fill_constant_batch_size_like,
    two step outputs) and a DynamicRNN (while over a LoD rank table) run after loading and give
    fluid 1.8.5's values."""
    with open(os.path.join(HERE, "golden", "rnn_saved.json")) as f:
        want = json.load(f)
    exe = fluid.Executor(fluid.CPUPlace())
    prog, feeds, fetches = fio.load_inference_model(os.path.join(SAVED, name), exe)
    place = fluid.CPUPlace()
    if name == "static_rnn":
        assert "recurrent" in [op.type for op in prog.global_block().ops]
        feed = {
            "x": np.random.RandomState(0).uniform(-1, 1, (4, 3, 5)).astype("float32"),
            "boot": np.random.RandomState(1).uniform(-1, 1, (3, 6)).astype("float32"),
        }
        got = exe.run(prog, feed=feed, fetch_list=fetches)
        for g, w in zip(got, want["static_rnn"]):
            np.testing.assert_allclose(g, np.array(w, "float32"), rtol=1e-4, atol=2e-5)
        return
    words = np.array([1, 2, 3, 4, 5, 6], "int64").reshape(-1, 1)
    feed = {
        "words": fluid.create_lod_tensor(words, [[2, 3, 1]], place),
        "start": np.random.RandomState(2).uniform(-1, 1, (3, 3)).astype("float32"),
    }
    seq, last = exe.run(prog, feed=feed, fetch_list=fetches, return_numpy=False)
    lod, w_seq, w_last = want["dynamic_rnn"]
    assert seq.lod() == lod
    np.testing.assert_allclose(np.array(seq), np.array(w_seq, "float32"), rtol=1e-4, atol=2e-5)
    np.testing.assert_allclose(np.array(last), np.array(w_last, "float32"), rtol=1e-4, atol=2e-5)


@pytest.mark.cuda
@pytest.mark.parametrize("name", ["static_rnn", "dynamic_rnn"])
def test_rnn_models_saved_by_fluid_run_on_cuda(name):
    """The saved StaticRNN (recurrent op) and DynamicRNN models on cuda:0 give the CPU's values."""
    results = []
    for place in (fluid.CPUPlace(), fluid.CUDAPlace(0)):
        exe = fluid.Executor(place)
        prog, feeds, fetches = fio.load_inference_model(os.path.join(SAVED, name), exe)
        if name == "static_rnn":
            feed = {
                "x": np.random.RandomState(0).uniform(-1, 1, (4, 3, 5)).astype("float32"),
                "boot": np.random.RandomState(1).uniform(-1, 1, (3, 6)).astype("float32"),
            }
        else:
            words = np.array([1, 2, 3, 4, 5, 6], "int64").reshape(-1, 1)
            feed = {
                "words": fluid.create_lod_tensor(words, [[2, 3, 1]], place),
                "start": np.random.RandomState(2).uniform(-1, 1, (3, 3)).astype("float32"),
            }
        # DynamicRNN's first output keeps the words' LoD: fetched as LoDTensors, as fluid requires
        results.append(exe.run(prog, feed=feed, fetch_list=fetches, return_numpy=False))
    for cpu, gpu in zip(*results):
        assert gpu.lod() == cpu.lod()
        np.testing.assert_allclose(np.array(gpu), np.array(cpu), rtol=1e-5, atol=1e-6)


def test_get_parameter_value_reads_the_global_scope():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [None, 3], "float32")
        fluid.layers.fc(x, 2, param_attr=fluid.ParamAttr(name="gpv.w", initializer=fluid.initializer.Constant(0.5)))
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    with fluid.scope_guard(scope):
        with pytest.raises(ValueError, match="parameter 'gpv.w' has no value in the global scope yet"):
            fluid.io.get_parameter_value_by_name("gpv.w", exe, main)
        exe.run(startup)
        value = fluid.io.get_parameter_value_by_name("gpv.w", exe, main)
        assert type(value) is np.ndarray and value.tolist() == [[0.5, 0.5]] * 3
        with pytest.raises(TypeError, match="not a parameter"):
            fluid.io.get_parameter_value(x, exe)


def test_a_saved_models_missing_feed_is_named(tmp_path):
    x = fluid.data(name="x", shape=[None, 3], dtype="float32")
    y = fluid.layers.fc(x, 2)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(fluid.default_startup_program())
    fluid.io.save_inference_model(str(tmp_path), ["x"], [y], exe)
    prog, feeds, fetches = fluid.io.load_inference_model(str(tmp_path), exe)
    with pytest.raises(RuntimeError, match=r"'x' read by op 1 \(mul\).* Feed it: exe.run\(feed=\{'x': ...\}\)"):
        exe.run(prog, feed={}, fetch_list=fetches)
    assert len(exe.run(prog, feed={"x": np.ones((1, 3), "float32")}, fetch_list=fetches + [y.name])) == 2


def test_a_compiled_program_saves_and_loads_as_its_program(tmp_path):
    """fluid 1.8's save_vars / save_params / load_vars / save_inference_model took a CompiledProgram as
    its program, warning "The input is a CompiledProgram, this is not recommended."; its
    save_persistables / load_persistables failed on one (no attribute '_is_distributed'). All of them
    take it here, with the warning."""
    x = fluid.data("x", [None, 2], "float32")
    loss = fluid.layers.mean(fluid.layers.fc(x, 1))
    fluid.optimizer.SGD(0.1).minimize(loss)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(fluid.default_startup_program())
    compiled = fluid.CompiledProgram(fluid.default_main_program()).with_data_parallel(loss_name=loss.name)
    exe.run(compiled, feed={"x": np.ones((2, 2), "float32")}, fetch_list=[loss])
    w = fluid.global_scope().find_var("fc_0.w_0").get_tensor()
    saved = np.array(w)
    with pytest.warns(UserWarning, match="The input is a CompiledProgram, this is not recommended."):
        fluid.io.save_persistables(exe, str(tmp_path / "p"), compiled)
    with pytest.warns(UserWarning, match="CompiledProgram"):
        fluid.io.save_params(exe, str(tmp_path / "q"), compiled)
    assert sorted(os.listdir(tmp_path / "p")) == [".fluidcompat_manifest", "fc_0.b_0", "fc_0.w_0", "learning_rate_0"]
    w.set(np.zeros_like(saved), fluid.CPUPlace())
    with pytest.warns(UserWarning, match="CompiledProgram"):
        fluid.io.load_persistables(exe, str(tmp_path / "p"), compiled)
    np.testing.assert_array_equal(np.array(w), saved)
    with pytest.warns(UserWarning, match="CompiledProgram"):
        fluid.io.save_inference_model(str(tmp_path / "m"), ["x"], [loss], exe, compiled)
    assert os.path.isfile(tmp_path / "m" / "__model__")
    with pytest.raises(TypeError, match="expected type is fluid.Program"):
        fluid.io.save_params(exe, str(tmp_path / "r"), "not a program")
