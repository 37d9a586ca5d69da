# fluid.dygraph.NCE: parameter names and shapes (with and without bias, custom_dist), costs where
# the sampler can draw one class only (so both runs draw the same negatives), gradients, errors.
import json
import os
import sys

import numpy as np
import paddle.fluid as fluid
from paddle.fluid.dygraph import NCE, to_variable

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _golden import errors_of  # noqa: E402


def r(a):
    return np.round(np.asarray(a, "float64").reshape(-1), 5).tolist()


def set_params(layer):
    for k, p in enumerate(sorted(layer.parameters(), key=lambda p: p.name)):
        p.set_value(np.random.RandomState(k).uniform(-0.5, 0.5, p.shape).astype("float32"))


out = {}
x_np = np.random.RandomState(5).uniform(-1, 1, (3, 4)).astype("float32")
with fluid.dygraph.guard(fluid.CPUPlace()):
    cases = {
        # one class: every negative is class 0
        "uniform_one_class": dict(num_total_classes=1, dim=4, num_neg_samples=3),
        # all the probability on class 3: every negative is class 3
        "custom_dist": dict(
            num_total_classes=4,
            dim=4,
            num_neg_samples=2,
            sampler="custom_dist",
            custom_dist=[0.0, 0.0, 0.0, 1.0],
            bias_attr=fluid.ParamAttr(name="nce_bias"),
        ),
    }
    labels = {"uniform_one_class": [[0], [0], [0]], "custom_dist": [[3], [1], [3]]}
    for name, kw in cases.items():
        layer = NCE(**kw)
        set_params(layer)
        x = to_variable(x_np)
        x.stop_gradient = False
        label = to_variable(np.array(labels[name], "int64"))
        sw = to_variable(np.array([[1.0], [2.0], [0.5]], "float32"))
        cost = layer(x, label, sample_weight=sw if name == "custom_dist" else None)
        loss = fluid.layers.reduce_sum(cost)
        loss.backward()
        out[name] = {
            "params": [[p.name, p.shape, p.stop_gradient] for p in layer.parameters()],
            "state": sorted(layer.state_dict()),
            "cost": [list(cost.shape), str(cost.dtype), r(cost.numpy())],
            "grad_x": r(x.gradient()),
            "grad_w": r(layer.weight.gradient()),
        }
    out["names_after"] = NCE(5, 4).weight.name
    # the alias tables of a custom distribution (fluid kept them in _inputs, fluidcompat in _extra)
    dist = [0.05, 0.3, 0.1, 0.25, 0.2, 0.1]
    layer = NCE(6, 2, sampler="custom_dist", custom_dist=dist)
    tables = getattr(layer, "_extra", None) or layer._inputs
    out["alias_tables"] = [
        [n, r(v[0].numpy() if isinstance(v, list) else v.numpy())]
        for n, v in sorted(tables.items())
        if n.startswith("CustomDist")
    ]
    out["errors"] = errors_of(
        [
            lambda: NCE(4, 4, sampler="gaussian"),
            lambda: NCE(4, 4)(to_variable(x_np), to_variable(np.array([[1], [2], [3]], "int32"))),
        ]
    )
print(json.dumps(out, sort_keys=True))
