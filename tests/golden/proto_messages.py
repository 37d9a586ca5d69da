# Golden script: paddle.fluid.proto.framework_pb2 / profiler_pb2 (the messages' descriptors, module
# names, enum values), paddle.fluid.op's get_all_op_protos and OpDescCreationMethod (OpDescs as bytes,
# the errors), str() of Operator, and a program's serialized ProgramDesc read with framework_pb2.
# Prints one JSON object.
import hashlib
import json
import os
import sys
import warnings

import numpy as np
import paddle.fluid as fluid
import paddle.fluid.op as op
import paddle.fluid.proto.framework_pb2 as pb
from google.protobuf import descriptor_pb2
from paddle.fluid.proto.profiler import profiler_pb2

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _golden import errors_of  # noqa: E402

warnings.simplefilter("ignore")
out = {}


def file_facts(module):
    fdp = descriptor_pb2.FileDescriptorProto()
    module.DESCRIPTOR.CopyToProto(fdp)
    fdp.ClearField("syntax")  # "" (proto2 by default) in fluid's, "proto2" spelled out in ours

    def fields(m):
        rows = [[f.name, f.number, f.label, f.type, f.type_name, f.default_value] for f in m.field]
        return {
            "fields": rows,
            "enums": {e.name: [[v.name, v.number] for v in e.value] for e in m.enum_type},
            "nested": {n.name: fields(n) for n in m.nested_type},
            "reserved": [[r.start, r.end] for r in m.reserved_range],
        }

    return {
        "name": fdp.name,
        "package": fdp.package,
        "sha256": hashlib.sha256(fdp.SerializeToString()).hexdigest(),
        "messages": {m.name: fields(m) for m in fdp.message_type},
        "enums": {e.name: [[v.name, v.number] for v in e.value] for e in fdp.enum_type},
    }


out["framework"] = file_facts(pb)
out["profiler"] = file_facts(profiler_pb2)
out["module_ints"] = {n: getattr(pb, n) for n in pb.AttrType.keys()}
out["var_types"] = {n: getattr(pb.VarType, n) for n in pb.VarType.Type.keys()}
out["event_types"] = [profiler_pb2.Event.CPU, profiler_pb2.Event.GPUKernel]
out["defaults"] = [pb.BlockDesc().forward_block_idx, pb.OpDesc().is_target, pb.Version().version]

# the op protos fluid registered: every one initialized; the slots and attributes of a few
protos = {p.type: p for p in op.get_all_op_protos()}
out["all_initialized"] = all(p.IsInitialized() for p in protos.values())
picked = ["scale", "sum", "concat", "fill_constant", "elementwise_add", "lstm", "while", "conditional_block"]
out["protos"] = {
    t: [
        [[v.name, v.duplicable, v.intermediate, v.dispensable] for v in protos[t].inputs],
        [[v.name, v.duplicable, v.intermediate, v.dispensable] for v in protos[t].outputs],
        [[a.name, a.type, a.generated] for a in protos[t].attrs],
    ]
    for t in picked
}


def desc_hex(t, **kwargs):
    return op.OpDescCreationMethod(protos[t])(**kwargs).SerializeToString().hex()


out["op_descs"] = [
    desc_hex("scale", X="x", Out="o", scale=np.float32(2.5), bias=1, bias_after_scale=True, op_role_var=["a"]),
    desc_hex("sum", X=["a", "b", "c"], Out="s", use_mkldnn=False),
    desc_hex("concat", X=("a", "b"), Out="o", axis=np.int64(-1)),
    desc_hex("fill_constant", Out="o", shape=np.array([2, 3]), value=1.5, dtype=5, str_value="1.5"),
    desc_hex("elementwise_add", X="x", Y="y", Out="o", axis=-1, unknown_kwarg=3),
    desc_hex("uniform_random", Out="o", shape=[2, 3], min=-1.0, max=1.0, seed=7),
    desc_hex("lookup_table", W="w", Ids="i", Out="o", padding_idx=np.int64(-1), is_sparse=True),
]
scale = op.OpDescCreationMethod(protos["scale"])
sum_op = op.OpDescCreationMethod(protos["sum"])
out["errors"] = errors_of(
    [
        lambda: scale(X=["a", "b"]),
        lambda: sum_op(X=["a"], Out=["z", "w"]),
        lambda: scale("x"),
        lambda: op.OpDescCreationMethod("scale"),
        lambda: scale(X="a", scale="bad"),
        lambda: op.Operator("nope_op", X="a"),
        lambda: op.Operator("scale", X=["a", "b"], Out="o"),
    ]
)
# each exception's type, and the first sentence of a ValueError's message (fluidcompat adds what it received)
out["errors"] = [[e[0], e[1].split(". ")[0].rstrip(".")] if e[0] == "ValueError" else [e[0]] for e in out["errors"]]

out["operator_str"] = [
    str(op.Operator("sum", X=["a", "b"], Out="z")),
    str(op.Operator("scale", X="x", Out="o", scale=2.0, bias=1.0)),
    str(op.Operator("concat", X=["a", "b"], Out="o", axis=1)),
    str(op.Operator("fill_constant", Out="o", shape=[2, 3], value=1.5, dtype=5)),
    str(op.Operator("elementwise_add", X="a", Y="b", Out="o", axis=-1)),
]

# a program's ProgramDesc bytes, read with framework_pb2
main, start = fluid.Program(), fluid.Program()
with fluid.program_guard(main, start):
    x = fluid.data("x", [-1, 4], "float32")
    y = fluid.layers.fc(x, 3, act="relu")
    loss = fluid.layers.mean(fluid.layers.scale(y, scale=2.0))
desc = pb.ProgramDesc.FromString(main.desc.serialize_to_string())
block = desc.blocks[0]
out["program"] = {
    "blocks": [[b.idx, b.parent_idx, b.forward_block_idx] for b in desc.blocks],
    # each op's input slots by name (fluid wrote them in name order, fluidcompat in the layer's order)
    "ops": [[o.type, sorted([v.parameter, len(v.arguments)] for v in o.inputs)] for o in block.ops],
    "vars": sorted(
        [v.name, v.type.type, list(v.type.lod_tensor.tensor.dims), v.type.lod_tensor.tensor.data_type, v.persistable]
        for v in block.vars
    ),
    "scale_attrs": sorted(
        [a.name, a.type] for o in block.ops if o.type == "scale" for a in o.attrs if not a.name.startswith("op_")
    ),
    "initialized": desc.IsInitialized(),
}
print(json.dumps(out, sort_keys=True))
