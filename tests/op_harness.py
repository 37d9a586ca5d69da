"""OpTest-style harness: numpy in, numpy out, and the inferred shape equals the run shape."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Dict, Optional, Sequence

import numpy as np

import fluidcompat as fluid


@dataclass
class Case:
    """One op case: ``build(**vars)`` returns the output Variable(s), ``ref(**arrays)`` the numpy result(s)."""

    name: str
    build: Callable
    inputs: Dict[str, np.ndarray]
    ref: Optional[Callable] = None
    rtol: float = 1e-5
    atol: float = 1e-6
    # declared shapes for fluid.data (None dims allowed); default: the arrays' shapes
    shapes: Dict[str, Sequence] = field(default_factory=dict)
    check: Optional[Callable] = None  # custom check of the outputs (random ops)
    # input name -> sequence lengths per level: fed as a LoDTensor (ref gets the plain array)
    lods: Dict[str, list] = field(default_factory=dict)

    def __str__(self) -> str:
        return self.name


# ops whose output fluid 1.8 declared with another dtype than its kernel wrote (golden declared_dtypes)
DECLARED_NOT_WRITTEN = frozenset({"sampling_id", "edit_distance"})


def shape_matches(declared, actual) -> bool:
    """A build-time shape matches a run shape when every known (>= 0) dim agrees."""
    declared, actual = tuple(declared), tuple(actual)
    return len(declared) == len(actual) and all(d < 0 or d == a for d, a in zip(declared, actual))


def case_feed(case: Case) -> dict:
    """The case's inputs, its sequence inputs as LoDTensors."""
    return {
        k: fluid.create_lod_tensor(v, case.lods[k], fluid.CPUPlace()) if k in case.lods else v
        for k, v in case.inputs.items()
    }


def run_case(case: Case, place=None):
    """Build the case in fresh programs, run it (on the CPU unless ``place``), compare with numpy and with
    the inferred shapes."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        vars_ = {
            k: fluid.data(k, list(case.shapes.get(k, v.shape)), str(v.dtype), lod_level=len(case.lods.get(k, ())))
            for k, v in case.inputs.items()
        }
        outs = case.build(**vars_)
    single = not isinstance(outs, (list, tuple))
    outs = [outs] if single else list(outs)
    exe = fluid.Executor(place or fluid.CPUPlace())
    scope = fluid.Scope()
    if startup.global_block().ops:
        exe.run(startup, scope=scope)
    feed = case_feed(case)
    results = [np.array(r) for r in exe.run(main, feed=feed, fetch_list=outs, scope=scope, return_numpy=False)]
    for var, got in zip(outs, results):
        assert shape_matches(var.shape, got.shape), (
            f"{case.name}: inferred shape {var.shape} of {var.name} != run shape {got.shape}"
        )
        if getattr(var.op, "type", None) not in DECLARED_NOT_WRITTEN:
            assert np.dtype(fluid.dtypes.np_name(var.dtype)) == got.dtype, (
                f"{case.name}: inferred dtype {var.dtype} of {var.name} != run dtype {got.dtype}"
            )
    if case.check is not None:
        case.check(*results)
    if case.ref is not None:
        expected = case.ref(*case.inputs.values())
        expected = [expected] if single else list(expected)
        for var, got, want in zip(outs, results, expected):
            want = np.asarray(want)
            assert got.shape == want.shape, f"{case.name}: {var.name} shape {got.shape}, numpy {want.shape}"
            assert got.dtype == want.dtype, f"{case.name}: {var.name} dtype {got.dtype}, numpy {want.dtype}"
            np.testing.assert_allclose(got, want, rtol=case.rtol, atol=case.atol, err_msg=case.name)
    return main, startup, results
