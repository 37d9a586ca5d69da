"""Values handed to scripts as numpy arrays: fluid.executor.as_numpy (the fluid 1.8 docs' example,
a list, an empty tensor, one with LoD), and one-element results printed with '%f' (an as_numpy array,
a dygraph loss.numpy(), fluid.metrics results), as fluid-era scripts print them."""

import json

import numpy
import numpy as np
import paddle.fluid as fluid
from _golden import errors_of

out = {}
new_scope = fluid.Scope()
with fluid.scope_guard(new_scope):
    fluid.global_scope().var("data").get_tensor().set(numpy.ones((2, 2)), fluid.CPUPlace())
tensor = new_scope.find_var("data").get_tensor()
a = fluid.executor.as_numpy(tensor)
out["docs_example"] = [str(a.dtype), a.tolist()]
out["list"] = [b.shape for b in fluid.executor.as_numpy([tensor, tensor])]
one = fluid.create_lod_tensor(np.array([[2.5]], "float32"), [], fluid.CPUPlace())
out["one_element"] = "%.2f" % fluid.executor.as_numpy(one)
out["empty"] = fluid.executor.as_numpy(fluid.LoDTensor())
lod = fluid.create_lod_tensor(np.ones((3, 1), "float32"), [[1, 2]], fluid.CPUPlace())
out["with_lod"] = errors_of([lambda: fluid.executor.as_numpy(lod)])
with fluid.dygraph.guard(fluid.CPUPlace()):
    x = fluid.dygraph.to_variable(np.arange(6, dtype="float32").reshape(2, 3))
    loss = fluid.layers.mean(x)
    v = loss.numpy()
    out["dygraph_loss"] = [list(v.shape), "%.3f" % v, float(v)]
acc = fluid.metrics.Accuracy()
acc.update(value=np.array([0.5], "float32"), weight=4)
acc.update(value=np.array([0.25], "float32"), weight=4)
out["accuracy"] = [list(np.shape(acc.eval())), "%.4f" % acc.eval()]
chunk = fluid.metrics.ChunkEvaluator()
chunk.update(np.array([4], "int64"), np.array([5], "int64"), np.array([3], "int64"))
out["chunk"] = "%.4f %.4f %.4f" % chunk.eval()
ed = fluid.metrics.EditDistance("ed")
ed.update(np.array([[1.0], [0.0], [2.0]], "float32"), np.array([3], "int64"))
out["edit_distance"] = "%.4f %.4f" % ed.eval()
print(json.dumps(out))
