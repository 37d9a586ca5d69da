# Golden script: the LoDTensor / Scope Python API at its edges: a tensor that holds no value yet
# (shape, lod, numpy), set/lod/recursive_sequence_lengths round trips, create_lod_tensor from
# lists and arrays, str() of tensors of each dtype (C++ stream number formatting). Prints a JSON
# report; errors are reported by type only (fluid's are C++ enforce texts).
import json

import numpy as np
import paddle.fluid as fluid
from _golden import attempt

place = fluid.CPUPlace()
report = {}


def arr(a):
    a = np.array(a)
    return [str(a.dtype), list(a.shape), a.reshape(-1).tolist()]


t = fluid.LoDTensor()
report["empty"] = [t.shape(), t.lod(), t.recursive_sequence_lengths(), t._is_initialized(), arr(t)]
t.set_lod([[0, 2]])
report["empty_with_lod"] = [t.lod(), t.shape()]
t.set(np.arange(6, dtype="float32").reshape(3, 2), place)
report["set"] = [t.shape(), t._is_initialized(), arr(t), str(t._dtype())]
t.set_lod([[0, 1, 3]])
report["lod"] = [t.lod(), t.recursive_sequence_lengths(), t.has_valid_recursive_sequence_lengths()]
report["lod_covering_too_many_rows"] = attempt(lambda: t.set_lod([[0, 1, 5]]))
report["lod_after_refusal"] = t.lod()
t.set_recursive_sequence_lengths([[2, 1]])
report["rsl"] = [t.lod(), t.recursive_sequence_lengths()]
t.set(np.array([1, 2], dtype="int64"), place)
report["reset_keeps_lod"] = [arr(t), t.lod(), t.has_valid_recursive_sequence_lengths()]
t.set(np.ones((2, 2)), place)
report["float64"] = arr(t)
c = fluid.create_lod_tensor(np.ones((4, 1), "float32"), [[1, 3]], place)
report["create_array"] = [c.lod(), arr(c)]
c = fluid.create_lod_tensor([[1, 2], [3]], [[2, 1]], place)
report["create_list"] = [c.lod(), arr(c)]
report["create_bad"] = attempt(lambda: fluid.create_lod_tensor(np.ones((4, 1), "float32"), [[1, 2]], place))
r = fluid.create_random_int_lodtensor([[2, 1]], [3], place, 0, 0)
report["random_int"] = [r.lod(), arr(r)]
strs = {}
for dtype, values in [
    ("float32", [1.5, 2, 1e-7, 123456789.0, -0.25, 0.1]),
    ("float64", [np.inf, -np.inf, np.nan, -0.0, 1e20, 0.1 + 0.2]),
    ("float16", [1, 2.5]),
    ("int32", list(range(12))),
    ("int64", [-3, 2**40]),
    ("bool", [True, False]),
    ("uint8", [65, 66]),
]:
    s = fluid.LoDTensor()
    s.set(np.array(values, dtype=dtype), place)
    strs[dtype] = str(s)
s = fluid.LoDTensor()
s.set(np.arange(6, dtype="float32").reshape(2, 3) / 7, place)
s.set_recursive_sequence_lengths([[1, 1]])
strs["lod_2d"] = str(s)
report["str"] = strs
scope = fluid.Scope()
report["find_missing"] = scope.find_var("nope") is None
v = scope.var("v")
report["fresh_var"] = [v.get_tensor().shape(), arr(v.get_tensor())]
v.get_tensor().set(np.ones((2,), "float32"), place)
report["found"] = arr(scope.find_var("v").get_tensor())
report["kid_sees_parent"] = arr(scope.new_scope().find_var("v").get_tensor())
print(json.dumps(report, sort_keys=True))
