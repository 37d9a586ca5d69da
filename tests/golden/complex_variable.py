# Golden script: a complex numpy array given to fluid.dygraph.to_variable becomes a ComplexVariable
# of two real values (the docs' examples): its name, dtype, shape, numpy() and printed form, and a
# rename. Prints a JSON report.
import json

import numpy as np
import paddle.fluid as fluid

report = {}
with fluid.dygraph.guard(fluid.CPUPlace()):
    z = fluid.dygraph.to_variable(np.array([2 + 1j, 2]))
    report["unnamed"] = [z.name, z.dtype, list(z.shape), str(z.numpy())]
    v = fluid.dygraph.to_variable(np.array([[1.0 + 2.0j, 0.2]], "complex64"), name="new_var")
    report["named"] = [v.name, v.dtype, list(v.shape), str(v.numpy()), str(v)]
    v.name = ("re", "im")
    report["renamed"] = v.name
print(json.dumps(report))
