# Golden script: in dygraph mode a parameter name given twice in one guard is refused (fluid 1.8.5's
# text), and a new guard starts afresh; the names the layers got. Prints a JSON report.
import json

import paddle.fluid as fluid

out = []
for k in range(2):
    with fluid.dygraph.guard(fluid.CPUPlace()):
        a = fluid.dygraph.Linear(2, 2, param_attr=fluid.ParamAttr(name="shared_w"))
        try:
            b = fluid.dygraph.Linear(2, 2, param_attr=fluid.ParamAttr(name="shared_w"))
            out.append([k, "ok"])
        except ValueError as e:
            out.append([k, "ValueError", str(e)])
        c = fluid.dygraph.Linear(2, 2, param_attr=fluid.ParamAttr(name="w2"))
        out.append([k, [p.name for p in a.parameters() + c.parameters()]])
print(json.dumps(out))
