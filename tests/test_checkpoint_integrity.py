"""Issue 41 point 2: a checkpoint loads as one save or is refused (NOTE: [Checkpoint manifest] in
fluidcompat/checkpoint_files.py): SIGKILL at random moments of each save API (bench/kill_saves.py
with fewer trials), saves interrupted at each rename, the temporary files a killed save leaves,
file modes and the fsync of the folder; fluid 1.8.5's checkpoints (no manifest) still load."""

from __future__ import annotations

import importlib.util
import io
import json
import os
import shutil
import stat

import numpy as np
import pytest

import fluidcompat as fluid
from fluidcompat import checkpoint_files, proto
from fluidcompat.checkpoint_files import MANIFEST, CheckpointError

HERE = os.path.dirname(os.path.abspath(__file__))
SAVED = os.path.join(HERE, "golden", "fluid18_saved")


def _kill_saves():
    spec = importlib.util.spec_from_file_location("kill_saves", os.path.join(HERE, "..", "bench", "kill_saves.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("api", ["save_persistables", "save_params", "save_vars", "save_vars_filename", "fluid_save"])
def test_sigkill_during_a_save_leaves_one_step_or_a_refusal(api, tmp_path):
    ks = _kill_saves()
    counts = ks.run(api, 4, str(tmp_path), seed=41, program=ks.build(width=32, layers=4))
    assert counts["mixed"] == 0 and counts["other"] == 0, counts
    assert counts["whole"] + counts["refused"] == 4, counts
    assert counts["tmp_files_after_next_save"] == 0, counts


def _net():
    x = fluid.data("x", [None, 3], "float32")
    loss = fluid.layers.mean(fluid.layers.fc(fluid.layers.fc(x, 4), 2))
    fluid.optimizer.Adam(0.1).minimize(loss)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(fluid.default_startup_program())
    return exe, fluid.default_main_program()


def _persistables(program):
    return [v.name for v in program.list_vars() if fluid.io.is_persistable(v)]


def _fill(names, value):
    scope = fluid.global_scope()
    for n in names:
        t = scope.find_var(n).get_tensor()
        t.set(np.full(np.array(t).shape, value, "float32"), fluid.CPUPlace())


def _values(names):
    scope = fluid.global_scope()
    return {n: np.array(scope.find_var(n).get_tensor()) for n in names}


class _Interrupt(BaseException):
    pass


def _interrupt_after(monkeypatch, renames: int):
    """``os.replace`` that raises (as a SIGKILL would stop the save) once ``renames`` are done."""
    real, done = os.replace, []

    def replace(src, dst):
        if len(done) == renames:
            raise _Interrupt(dst)
        done.append(dst)
        real(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    return done


SAVES = {
    "save_persistables": (
        lambda exe, d, p: fluid.io.save_persistables(exe, d, p),
        lambda exe, d, p: fluid.io.load_persistables(exe, d, p),
    ),
    "fluid_save": (
        lambda exe, d, p: fluid.save(p, os.path.join(d, "m")),
        lambda exe, d, p: fluid.load(p, os.path.join(d, "m"), exe),
    ),
    "inference_model": (
        lambda exe, d, p: fluid.io.save_inference_model(d, ["x"], [p.global_block().var("fc_1.tmp_1")], exe, p),
        lambda exe, d, p: fluid.io.load_inference_model(d, exe),
    ),
}


@pytest.mark.parametrize("api", sorted(SAVES))
def test_a_save_stopped_at_any_rename_loads_whole_or_is_refused(api, tmp_path, monkeypatch):
    exe, program = _net()
    names = _persistables(program)
    save, load = SAVES[api]
    d = str(tmp_path / "ck")
    _fill(names, 1.0)
    save(exe, d, program)
    files = len([n for n in os.listdir(d) if not n.startswith(".")])
    seen = set()
    for k in range(files + 2):  # stopped before the manifest's rename, after it and after each file
        _fill(names, 2.0)
        done = _interrupt_after(monkeypatch, k)
        try:
            save(exe, d, program)
            finished = True
        except _Interrupt:
            finished = False
        monkeypatch.undo()
        assert not [n for n in os.listdir(d) if n.startswith(".tmp-")]  # removed on the way out
        _fill(names, -1.0)
        try:
            load(exe, d, program)
        except CheckpointError as e:
            assert d in str(e) and "two different saves" in str(e)
            assert all((v == -1.0).all() for v in _values(names).values())  # nothing loaded
            seen.add("refused")
        else:
            loaded = _values(names)
            if api == "inference_model":  # it saves and loads the parameters only
                loaded = {n: v for n, v in loaded.items() if fluid.io.is_parameter(program.global_block().var(n))}
            got = {float(x) for v in loaded.values() for x in np.unique(v)}
            assert len(got) == 1, (k, done, got)  # one save's values
            step = got.pop()
            if k == 0:  # stopped before the manifest's rename: the earlier save, whole
                assert step == 1.0
            if finished:
                assert step == 2.0
            seen.add(step)
        _fill(names, 1.0)
        save(exe, d, program)  # back to step 1 for the next case
    assert seen == {1.0, 2.0, "refused"}


def test_leftover_temporary_files_go_with_the_next_save(tmp_path):
    exe, program = _net()
    d = str(tmp_path / "ck")
    fluid.io.save_persistables(exe, d, program)
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)  # a process that no longer runs
    dead = os.path.join(d, f".tmp-{pid}-fc_0.w_0-0a1b2c3d")
    mine = os.path.join(d, f".tmp-{os.getpid()}-fc_0.b_0-0a1b2c3d")
    alive = os.path.join(d, f".tmp-{os.getppid()}-fc_0.b_0-0a1b2c3d")  # another saver, still running
    for path in (dead, mine, alive):
        with open(path, "wb") as f:
            f.write(b"partial")
    fluid.io.save_persistables(exe, d, program)
    assert not os.path.exists(dead) and not os.path.exists(mine)
    assert os.path.exists(alive)


@pytest.mark.parametrize("mask, mode", [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_saved_files_take_the_umask(tmp_path, mask, mode):
    exe, program = _net()
    old = os.umask(mask)
    try:
        fluid.io.save_persistables(exe, str(tmp_path / "p"), program)
        fluid.save(program, str(tmp_path / "s" / "m"))
    finally:
        os.umask(old)
    for folder in ("p", "s"):
        for name in os.listdir(tmp_path / folder):
            assert stat.S_IMODE(os.stat(tmp_path / folder / name).st_mode) == mode, (folder, name)


def test_the_folder_is_synced_after_the_renames(tmp_path, monkeypatch):
    exe, program = _net()
    events = []
    real_replace, real_fsync = os.replace, os.fsync

    def replace(src, dst):
        events.append(("replace", os.path.basename(dst)))
        real_replace(src, dst)

    def fsync(fd):
        if stat.S_ISDIR(os.fstat(fd).st_mode):
            events.append(("fsync folder", None))
        real_fsync(fd)

    monkeypatch.setattr(os, "replace", replace)
    monkeypatch.setattr(os, "fsync", fsync)
    fluid.io.save_persistables(exe, str(tmp_path / "p"), program)
    monkeypatch.undo()
    assert events[0] == ("replace", MANIFEST) and events[1] == ("fsync folder", None)
    assert events[-1] == ("fsync folder", None)
    renamed = sorted(name for kind, name in events[2:-1] if kind == "replace")
    assert renamed == sorted(_persistables(program))


def test_a_changed_file_or_a_stale_one_is_refused(tmp_path):
    exe, program = _net()
    d = str(tmp_path / "p")
    fluid.io.save_persistables(exe, d, program)
    with open(os.path.join(d, "fc_0.b_0"), "rb") as f:
        data = bytearray(f.read())
    data[-1] ^= 1
    with open(os.path.join(d, "fc_0.b_0"), "wb") as f:
        f.write(bytes(data))
    with pytest.raises(CheckpointError, match=r"fc_0.b_0 does not match the checkpoint's manifest"):
        fluid.io.load_persistables(exe, d, program)
    with pytest.raises(CheckpointError, match="fc_0.b_0 does not match"):
        fluid.io.load_program_state(d)
    os.remove(os.path.join(d, MANIFEST))  # without the manifest: loaded as it is, as fluid did
    fluid.io.load_persistables(exe, d, program)
    # fluid.save of a program without optimizer state: the earlier .pdopt is no longer the checkpoint's
    s = str(tmp_path / "s" / "m")
    fluid.save(program, s)
    infer_params = fluid.Program()  # the same parameters, no optimizer
    with fluid.program_guard(infer_params, fluid.Program()), fluid.unique_name.guard():
        x = fluid.data("x", [None, 3], "float32")
        fluid.layers.fc(fluid.layers.fc(x, 4), 2)
    fluid.save(infer_params, s)
    assert os.path.exists(s + ".pdopt")
    state = fluid.io.load_program_state(s)
    assert sorted(state) == sorted(v.name for v in infer_params.list_vars() if fluid.io.is_parameter(v))
    with pytest.raises(ValueError, match=r"m.pdopt\] is not part of the checkpoint"):
        fluid.load(program, s, exe)


def test_an_interrupted_first_save_is_refused_by_load_program_state(tmp_path, monkeypatch):
    exe, program = _net()
    d = str(tmp_path / "p")
    _interrupt_after(monkeypatch, 3)  # the manifest and two files
    with pytest.raises(_Interrupt):
        fluid.io.save_persistables(exe, d, program)
    monkeypatch.undo()
    with pytest.raises(CheckpointError, match="is incomplete .* lists .*, which is not there"):
        fluid.io.load_program_state(d)
    with pytest.raises(ValueError, match="there is no file"):
        fluid.io.load_persistables(exe, d, program)


def test_the_manifest_is_a_fluid_tensor_file(tmp_path):
    """fluid 1.8.5's load_program_state of a folder reads every file in it as a variable: the manifest
    is one (uint8, its JSON text), so that still works."""
    exe, program = _net()
    d = str(tmp_path / "p")
    fluid.io.save_persistables(exe, d, program)
    with open(os.path.join(d, MANIFEST), "rb") as f:
        array, lod = proto.read_tensor(io.BytesIO(f.read()), MANIFEST)
    doc = json.loads(array.tobytes())
    assert array.dtype == np.uint8 and lod == []
    assert sorted(doc["files"]) == sorted(_persistables(program))
    assert sorted(fluid.io.load_program_state(d)) == sorted(_persistables(program))


def test_fluid18_checkpoints_without_a_manifest_still_load(tmp_path):
    for name in ("pers", "ckpt", "infer"):
        assert not os.path.exists(os.path.join(SAVED, name, MANIFEST))
    state = fluid.io.load_program_state(os.path.join(SAVED, "pers"))
    assert "fc_0.w_0_moment1_0" in state
    state = fluid.io.load_program_state(os.path.join(SAVED, "ckpt", "model"))
    assert state and all(isinstance(v, np.ndarray) for v in state.values())
    # a fluidcompat save into a copy of fluid's folder lists what it wrote; fluid's other files stay unchecked
    d = str(tmp_path / "pers")
    shutil.copytree(os.path.join(SAVED, "pers"), d)
    checkpoint_files.commit(
        d,
        {
            "extra_a": proto.tensor_to_bytes(np.ones(2, "float32")),
            "extra_b": proto.tensor_to_bytes(np.zeros(1, "float32")),
        },
    )
    assert set(fluid.io.load_program_state(d)) == set(state_names(os.path.join(SAVED, "pers"))) | {"extra_a", "extra_b"}


def state_names(folder):
    return [n for n in os.listdir(folder) if not n.startswith(".")]
