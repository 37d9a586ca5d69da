"""Issue 41 point 5: pickled checkpoints (``fluid.load``, ``load_program_state``, ``load_dygraph``,
``paddle.load``) are read by a restricted unpickler that admits what fluid 1.8.5 and fluidcompat write
in them (numpy arrays, dtypes and scalars, dicts, lists, tuples, strings, numbers); a file naming
anything else is refused, naming the file and the class, unless FLUIDCOMPAT_UNSAFE_PICKLE=1."""

from __future__ import annotations

import collections
import fractions
import os
import pickle

import numpy as np
import pytest

import fluidcompat as fluid
from fluidcompat import safe_pickle
from fluidcompat.compat import saving
from fluidcompat.safe_pickle import UnsafePickleError

HERE = os.path.dirname(os.path.abspath(__file__))
SAVED = os.path.join(HERE, "golden", "fluid18_saved")


class _Payload:
    """Pickles as a call of os.mkdir(marker): loading it with pickle.load makes the folder."""

    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __reduce__(self):
        return (os.mkdir, (self.marker,))


def _net():
    x = fluid.data("x", [None, 3], "float32")
    loss = fluid.layers.mean(fluid.layers.fc(x, 2))
    fluid.optimizer.Adam(0.1).minimize(loss)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(fluid.default_startup_program())
    return exe, fluid.default_main_program()


def _evil(path: str, marker: str, extra=None) -> None:
    data = {"fc_0.w_0": np.zeros((3, 2), "float32"), "fc_0.b_0": _Payload(marker)}
    data.update(extra or {})
    with open(path, "wb") as f:
        pickle.dump(data, f, protocol=2)


def test_every_pickled_load_refuses_a_file_that_would_run_code(tmp_path):
    exe, program = _net()
    marker = str(tmp_path / "ran")
    base = str(tmp_path / "m")
    _evil(base + ".pdparams", marker)
    w = np.array(fluid.global_scope().find_var("fc_0.w_0").get_tensor())
    loads = [
        lambda: fluid.load(program, base, exe),
        lambda: fluid.io.load_program_state(base),
        lambda: fluid.dygraph.load_dygraph(base),
        lambda: saving.load(base + ".pdparams"),
    ]
    for load in loads:
        with pytest.raises(UnsafePickleError, match=r"m\.pdparams: the file names '(posix|os)\.mkdir'") as e:
            load()
        assert "FLUIDCOMPAT_UNSAFE_PICKLE=1" in str(e.value)
        assert not os.path.exists(marker)
    np.testing.assert_array_equal(np.array(fluid.global_scope().find_var("fc_0.w_0").get_tensor()), w)


def test_fluid18_files_load(tmp_path):
    """What fluid 1.8.5 wrote (its fluid.save and save_dygraph: numpy's _reconstruct, ndarray, dtype
    and _codecs.encode under protocol 2) loads."""
    state = fluid.io.load_program_state(os.path.join(SAVED, "ckpt", "model"))
    assert state and all(type(v) is np.ndarray for v in state.values())
    params, opt = fluid.dygraph.load_dygraph(os.path.join(SAVED, "dygraph_groupnorm", "model"))
    assert params and opt and all(isinstance(v, np.ndarray) for v in params.values())
    with open(os.path.join(SAVED, "ckpt", "model.pdparams"), "rb") as f:
        want = pickle.load(f, encoding="latin1")
    for k, v in want.items():
        np.testing.assert_array_equal(state[k], v)


@pytest.mark.parametrize("protocol", [2, 3, 4])
def test_what_fluidcompat_writes_round_trips(tmp_path, protocol):
    obj = {
        "w": np.arange(6, dtype="float32").reshape(2, 3),
        "ids": np.array([1, 2], "int64"),
        "nested": [np.ones(2, "float64"), (1, 2.5, "s", None, True)],
        "step": np.int64(7),
        "lr": np.float32(0.5),
        "od": collections.OrderedDict(a=1, b=[b"raw", "text"]),
        "rec": np.zeros(2, dtype=[("x", "<f4"), ("y", "<i8")]),
    }
    path = str(tmp_path / "a.pdparams")
    saving.save(obj, path, protocol=protocol)
    got = saving.load(path, return_numpy=True)
    np.testing.assert_array_equal(got["w"], obj["w"])
    np.testing.assert_array_equal(got["rec"], obj["rec"])
    assert got["nested"][1] == obj["nested"][1] and got["step"] == 7 and got["lr"] == np.float32(0.5)
    assert got["od"] == obj["od"]


def test_dygraph_and_fluid_save_round_trip(tmp_path):
    exe, program = _net()
    scope = fluid.global_scope()
    names = [v.name for v in program.list_vars() if fluid.io.is_persistable(v)]
    before = {n: np.array(scope.find_var(n).get_tensor()) for n in names}
    fluid.save(program, str(tmp_path / "s" / "m"))
    for n in names:
        scope.find_var(n).get_tensor().set(np.zeros_like(before[n]), fluid.CPUPlace())
    fluid.load(program, str(tmp_path / "s" / "m"), exe)
    for n in names:
        np.testing.assert_array_equal(np.array(scope.find_var(n).get_tensor()), before[n])
    with fluid.dygraph.guard():
        layer = fluid.dygraph.Linear(3, 2)
        opt = fluid.optimizer.Adam(0.1, parameter_list=layer.parameters())
        loss = fluid.layers.mean(layer(fluid.dygraph.to_variable(np.ones((2, 3), "float32"))))
        loss.backward()
        opt.minimize(loss)
        fluid.save_dygraph(layer.state_dict(), str(tmp_path / "d" / "m"))
        fluid.save_dygraph(opt.state_dict(), str(tmp_path / "d" / "m"))
        params, state = fluid.dygraph.load_dygraph(str(tmp_path / "d" / "m"))
        assert type(params["weight"]) is np.ndarray  # a plain array, as fluid pickled (not a fetched array)
        np.testing.assert_array_equal(params["weight"], layer.weight.numpy())
        assert sorted(set(state) - {"StructuredToParameterName@@"}) == sorted(opt.state_dict())  # as in fluid


def test_the_opt_in_loads_other_classes(tmp_path, monkeypatch):
    path = str(tmp_path / "f.pdparams")
    with open(path, "wb") as f:
        pickle.dump({"ratio": fractions.Fraction(1, 3)}, f, protocol=2)
    with pytest.raises(UnsafePickleError, match=r"f\.pdparams: the file names 'fractions\.Fraction'"):
        saving.load(path)
    monkeypatch.setenv("FLUIDCOMPAT_UNSAFE_PICKLE", "1")
    assert saving.load(path) == {"ratio": fractions.Fraction(1, 3)}


def test_truncated_files_name_the_file(tmp_path):
    path = str(tmp_path / "t.pdparams")
    data = pickle.dumps({"w": np.ones(100, "float32")}, protocol=2)
    for cut, kind in ((len(data) // 2, pickle.UnpicklingError), (0, EOFError)):
        with open(path, "wb") as f:
            f.write(data[:cut])
        with pytest.raises(kind, match=r"t\.pdparams: not a complete checkpoint file"):
            fluid.dygraph.load_dygraph(str(tmp_path / "t"))
    with pytest.raises(ValueError, match=r"t\.pdparams. is not a file paddle.save wrote"):
        saving.load(path)


def test_arrays_pickled_by_their_class_by_earlier_versions_load():
    """fluidcompat before this change pickled fetched values as FetchedArray: they load as arrays."""
    from fluidcompat.executor.executor import fetched

    data = pickle.dumps({"w": fetched(np.arange(3, dtype="float32"))}, protocol=2)
    got = safe_pickle.loads(data, "old.pdparams")
    assert type(got["w"]) is np.ndarray
    np.testing.assert_array_equal(got["w"], np.arange(3, dtype="float32"))
