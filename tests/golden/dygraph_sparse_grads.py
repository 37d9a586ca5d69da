# Golden script: an is_sparse embedding's gradient in dygraph mode: one lookup (rows as given,
# repeated), two and three lookups in one backward (added up: each row once, ascending), a lookup
# plus a dense use of the table (a dense gradient), after clear_gradients (None), and the SGD step's
# table. Prints a JSON report.
import json

import numpy as np
import paddle.fluid as fluid
from paddle.fluid.dygraph import Embedding, to_variable


def grad_of(p):
    g = p.gradient()
    if g is None:
        return None
    if isinstance(g, tuple):
        return {"values": g[0].tolist(), "rows": g[1].tolist(), "rows_repr": repr(g[1])}
    return {"dense": g.tolist()}


out = {}
with fluid.dygraph.guard(fluid.CPUPlace()):
    emb = Embedding([6, 2], is_sparse=True)
    emb.weight.set_value(np.arange(12, dtype="float32").reshape(6, 2) / 10)
    ids = to_variable(np.array([[3], [1], [3]], "int64"))
    ids2 = to_variable(np.array([[5], [0]], "int64"))
    w = to_variable(np.arange(6, dtype="float32").reshape(3, 1, 2))
    S = fluid.layers.reduce_sum
    cases = {
        "one": lambda: S(emb(ids) * w),
        "two": lambda: S(emb(ids) * w) + S(emb(ids)),
        "three": lambda: S(emb(ids) * w) + S(emb(ids2)) + S(emb(ids) * 3.0),
        "with_dense": lambda: S(emb(ids) * w) + S(emb.weight * 2.0),
    }
    for name, make in cases.items():
        emb.clear_gradients()
        make().backward()
        out[name] = grad_of(emb.weight)
    emb.clear_gradients()
    out["cleared_dense"] = grad_of(emb.weight)
    cases["one"]().backward()
    emb.clear_gradients()
    out["cleared_sparse"] = grad_of(emb.weight)
    opt = fluid.optimizer.SGD(0.1, parameter_list=emb.parameters())
    for _ in range(2):
        loss = cases["three"]()
        loss.backward()
        opt.minimize(loss)
        emb.clear_gradients()
    out["table_after_sgd"] = np.round(emb.weight.numpy(), 5).tolist()
print(json.dumps(out))
