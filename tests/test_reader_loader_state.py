"""DataLoader passes end with ``_reset``, ``keep_data_loader_order`` is fluid's switch, and places
answer fluid's ``_type`` / ``_equals``."""

from __future__ import annotations

import numpy as np
import pytest

import fluidcompat as fluid
from fluidcompat import reader
from fluidcompat.places import CPUPlace, GenericPlace


def _loader():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data(name="x", shape=[2], dtype="float32")
        loader = fluid.io.DataLoader.from_generator(feed_list=[x], capacity=4, iterable=True)
    loader.set_batch_generator(lambda: ((np.full([1, 2], i, "float32"),) for i in range(5)), places=[CPUPlace()])
    return loader


def test_reset_after_break_restarts_the_generator():
    loader = _loader()
    it = iter(loader())
    first = next(it)[0]["x"]
    second = next(it)[0]["x"]
    assert float(np.asarray(first)[0, 0]) == 0.0 and float(np.asarray(second)[0, 0]) == 1.0
    loader._reset()
    with pytest.raises(StopIteration):  # the broken-off pass is closed
        next(it)
    values = [float(np.asarray(d[0]["x"])[0, 0]) for d in loader()]
    assert values == [0.0, 1.0, 2.0, 3.0, 4.0]
    loader._reset()  # nothing in progress: harmless


def test_keep_data_loader_order_switch():
    assert reader.keep_data_loader_order() is True
    try:
        reader.keep_data_loader_order(False)
        assert reader.keep_data_loader_order() is False
        with pytest.raises(TypeError):
            reader.keep_data_loader_order(1)
    finally:
        reader.keep_data_loader_order(True)
    assert reader.keep_data_loader_order() is True


def test_place_type_and_equals():
    assert CPUPlace()._type() == 1
    generic = GenericPlace()
    generic.set_place(CPUPlace())
    assert generic._type() == 1
    assert CPUPlace()._equals(CPUPlace()) and generic._equals(CPUPlace()) and CPUPlace()._equals(generic)
