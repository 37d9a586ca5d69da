# Golden script: one program of about 90 layers (the cases of layers_math.py and layers_spatial.py,
# random ops, lookup tables, fill and assign ops) serialized to the file named by OUT. attr_types.json
# holds the type of each (op, attribute) in fluid 1.8.5's serialization of it (read with
# fluidcompat.proto); fluidcompat's serialization must give the same types.
import os
import sys
import warnings

import numpy as np
import paddle.fluid as fluid

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from _layer_runner import weights  # noqa: E402

warnings.simplefilter("ignore")
L = fluid.layers


def cases_of(script, names):
    """The ``cases`` dict of another golden script, its lambdas bound to ``names``."""
    with open(os.path.join(HERE, script)) as f:
        src = f.read()
    start = src.index("cases = {")
    end = src.index("\n}\n", start) + 3
    exec(src[start:end], names)
    return names["cases"]


def attempt(fn, *args):
    try:
        fn(*args)
    except Exception:  # noqa: BLE001  (a case either layer refuses is left out of the program)
        pass


main, start = fluid.Program(), fluid.Program()
with fluid.program_guard(main, start):
    a = fluid.data("a", [3, 4, 5], "float32")
    b = fluid.data("b", [4, 5], "float32")
    img = fluid.data("img", [2, 4, 7, 7], "float32")
    xh = fluid.data("xh", [2, 7, 7, 4], "float32")
    ids = fluid.data("ids", [3, 1], "int64")
    names = {"L": L, "np": np, "fluid": fluid, "I": np.array([[2], [0], [1]], "int64")}
    for fn in cases_of("layers_math.py", names).values():
        attempt(fn, a, b)
    for fn in cases_of("layers_spatial.py", {"L": L, "np": np, "fluid": fluid, "weights": weights}).values():
        attempt(fn, img, xh)
    for fn in (
        lambda: L.uniform_random([2, 3], min=-1, max=1),
        lambda: L.gaussian_random([2, 3]),
        lambda: L.fill_constant_batch_size_like(a, [-1, 3], "float32", 1.0),
        lambda: L.randint(0, 5, [2, 2]),
        lambda: L.randperm(5),
        lambda: L.embedding(ids, [10, 3], padding_idx=2),
        lambda: L.uniform_random_batch_size_like(a, [-1, 2]),
        lambda: L.gaussian_random_batch_size_like(a, [-1, 2]),
        lambda: L.reshape(a, [12, 5]),
        lambda: L.expand(b, [2, 1]),
        lambda: L.crop_tensor(b, shape=[2, 2], offsets=[1, 1]),
        lambda: L.one_hot(ids, 5),
        lambda: L.argmax(a, 1),
        lambda: L.zeros_like(a),
        lambda: L.ones([2], "int64"),
        lambda: L.range(0, 5, 1, "int64"),
        lambda: L.linspace(0, 1, 5, "float32"),
        lambda: L.sampling_id(L.softmax(b)),
        lambda: L.topk(a, 2),
        lambda: L.cumsum(a, axis=1),
        lambda: L.slice(a, [0, 2], [0, 1], [2, 3]),
        lambda: L.strided_slice(a, [0], [0], [2], [1]),
        lambda: L.pad(b, [0, 1, 1, 0]),
        lambda: L.squeeze(L.unsqueeze(a, [0]), [0]),
        lambda: L.transpose(a, [1, 0, 2]),
        lambda: L.dropout(a, 0.3),
        lambda: L.batch_norm(img),
        lambda: L.layer_norm(a),
        lambda: L.fill_constant([2, 2], "int64", 3),
    ):
        attempt(fn)
with open(os.environ["OUT"], "wb") as f:
    f.write(main.desc.serialize_to_string())
