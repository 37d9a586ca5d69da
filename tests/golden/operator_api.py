# Golden script: the Operator and Block Python API scripts use to inspect and edit a program: slot and
# argument names, attributes and their AttrTypes (attr_type), op.desc (fluid's OpDesc interface),
# _set_attr / _rename_input, _insert_op / _remove_op / _remove_var, and the block's variable queries.
# Prints a JSON report.
import json

import paddle.fluid as fluid
from _golden import attempt

report = {}


main, start = fluid.Program(), fluid.Program()
with fluid.program_guard(main, start):
    x = fluid.data("x", [None, 3], "float32")
    ids = fluid.data("ids", [None, 1], "int64")
    h = fluid.layers.fc(x, 4, act="relu")
    s = fluid.layers.scale(h, scale=2.0, bias=1.0)
    c = fluid.layers.cast(s, "float64")
    e = fluid.layers.embedding(ids, size=[10, 4], padding_idx=2)
    f = fluid.layers.fill_constant([2, 3], "float32", 1.5)
    r = fluid.layers.reshape(f, [3, 2])
    t = fluid.layers.transpose(r, [1, 0])
    a = fluid.layers.argmax(t, axis=1)
    u = fluid.layers.uniform_random([2, 2], min=-1.0, max=1.0, seed=3)
    loss = fluid.layers.mean(s)
blk = main.global_block()
report["types"] = [o.type for o in blk.ops]
attr_types = {}
for op in blk.ops:
    attr_types[op.type] = {n: str(op.attr_type(n)) for n in sorted(op.attr_names) if n != "op_callstack"}
report["attr_types"] = attr_types
report["attr_type_missing"] = attempt(lambda: blk.ops[0].attr_type("nope"))[:1]
sc = [o for o in blk.ops if o.type == "scale"][0]
report["slots"] = [
    sc.input_names,
    sc.output_names,
    sc.input_arg_names,
    sc.output_arg_names,
    sc.input("X"),
    sc.output("Out"),
]
d = sc.desc
report["desc"] = [
    d.type(),
    d.input("X"),
    d.output("Out"),
    sorted(d.input_names()),
    d.output_arg_names(),
    d.attr("scale"),
]
d._set_attr("scale", 3.0)
report["desc_set_attr"] = [sc.attr("scale"), d.attr("scale"), sc.has_attr("scale"), sc.has_attr("nope")]
report["attr_missing"] = attempt(lambda: sc.attr("nope"))[:1]
sc._rename_input(sc.input("X")[0], "zz")
report["renamed"] = sc.input("X")
report["block"] = [blk.idx, blk.parent_idx, blk.has_var("x"), blk.has_var("nope"), attempt(lambda: blk.var("nope"))[:1]]
report["params"] = sorted(p.name for p in blk.all_parameters())
report["iter_params"] = sorted(p.name for p in blk.iter_parameters())
report["list_vars"] = sorted(v.name for v in main.list_vars())
blk._remove_op(2)
report["removed"] = [o.type for o in blk.ops]
blk._insert_op(0, type="scale", inputs={"X": [x]}, outputs={"Out": [x]}, attrs={"scale": 1.0})
report["inserted"] = [o.type for o in blk.ops][:3]
c_name = c.name
blk._remove_var(c_name)
report["removed_var"] = blk.has_var(c_name)
print(json.dumps(report, sort_keys=True))
