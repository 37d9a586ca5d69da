"""Names of fluid's time that later numpy and Python removed, as fluid-era scripts use them (fluid
1.8.5 ran on numpy 1.19 and Python 3.7): numpy's builtin and scalar-type aliases as dtypes, constants,
functions (np.fromstring's binary mode), and in fluid calls; collections' ABC aliases and time.clock."""

import collections
import json
import time

import numpy as np
import paddle.fluid as fluid
from _golden import errors_of

out = {}
out["dtypes"] = [
    str(np.array([1, 2], dtype=t).dtype)
    for t in (np.float, np.int, np.object, np.str, np.complex, np.unicode, np.float_, np.complex_)
    + (np.string_, np.unicode_, np.bool8, np.int0, np.uint0, np.cfloat, np.singlecomplex, np.longfloat)
]
out["constants"] = [repr(v) for v in (np.NaN, np.NAN, np.Inf, np.Infinity, np.infty, np.PINF, np.NINF, np.NZERO)]
a = np.array([[3, 1], [2, 4]])
out["functions"] = [
    bool(np.alltrue(a > 0)),
    bool(np.sometrue(a > 3)),
    int(np.product(a.shape)),
    np.cumproduct([1, 2, 3]).tolist(),
    np.round_([1.26, 2.5], 1).tolist(),
    [str(np.asfarray([1, 2]).dtype), str(np.asfarray(np.ones(2, "float32")).dtype), str(np.asfarray([1], int).dtype)],
    np.msort(a).tolist(),
    list(np.mat(a).shape),
    np.in1d(a, [1, 4]).tolist(),
    float(np.trapz([1.0, 2.0, 3.0])),
    np.asscalar(np.array([2.5])),
    np.fromstring(b"\x01\x02\x03\x04", dtype=np.uint8).tolist(),
    np.fromstring(b"\x01\x02\x03\x04", dtype=np.int16, count=1).tolist(),
    np.fromstring(b"\x01\x02", dtype=np.uint8).flags.writeable,
    np.fromstring("1 2 3", dtype=int, sep=" ").tolist(),
]
out["python"] = [
    isinstance([1], collections.Iterable),
    isinstance({}, collections.Mapping),
    issubclass(list, collections.Sequence),
    isinstance(len, collections.Callable),
    type(time.clock()).__name__,
]
x = fluid.data("x", [None, 2], dtype="float64")
out["fluid_dtypes"] = errors_of(
    [
        lambda: fluid.layers.cast(x, np.int),
        lambda: fluid.layers.fill_constant([2], np.float, 1.5),
        lambda: fluid.data("f", [2], dtype=np.float),
        lambda: fluid.layers.cast(x, np.int0),
        lambda: fluid.layers.fill_constant([2], np.float_, 1.5),
    ]
)
y = fluid.layers.scale(x, 2.0)
exe = fluid.Executor(fluid.CPUPlace())
got = exe.run(feed={"x": np.array([[1.25, 2.5]], dtype=np.float)}, fetch_list=[y])
out["fluid"] = [[str(v.dtype), v.tolist()] for v in got]
print(json.dumps(out))
