"""paddle.fluid.proto.framework_pb2 / profiler_pb2 and paddle.fluid.op's OpProto / OpDesc messages.

tests/golden/proto_messages.json was recorded under real fluid 1.8.5 (its own generated _pb2 modules):
``../shared/tools/fluid18 tests/golden/proto_messages.py > tests/golden/proto_messages.json``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import types

import numpy as np
import pytest

import fluidcompat as fluid
from fluidcompat import op, proto
from fluidcompat.proto import _build, framework_pb2
from fluidcompat.proto.profiler import profiler_pb2

HERE = os.path.dirname(os.path.abspath(__file__))
GOLDEN = os.path.join(HERE, "golden")


def fluid_golden() -> dict:
    with open(os.path.join(GOLDEN, "proto_messages.json")) as f:
        return json.load(f)


def run_script(path: str) -> str:
    proc = subprocess.run(
        [sys.executable, "-m", "fluidcompat", "run", "--device", "cpu", path],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_golden_script_matches_fluid():
    """Descriptors (a hash of each file's FileDescriptorProto and every field), enum values, op protos,
    OpDescs' bytes, errors, str(Operator) and a program's ProgramDesc read back: as under fluid 1.8.5."""
    want = fluid_golden()
    got = json.loads(run_script(os.path.join(GOLDEN, "proto_messages.py")))
    assert sorted(got) == sorted(want)
    for key in want:
        assert got[key] == want[key], key


def test_golden_holds_what_the_checks_need():
    want = fluid_golden()
    assert len(want["framework"]["messages"]) == 9 and list(want["framework"]["enums"]) == ["AttrType"]
    assert want["framework"]["messages"]["ProgramDesc"]["reserved"] == [[2, 3]]
    assert sorted(want["profiler"]["messages"]) == ["Event", "MemCopy", "MemEvent", "Profile"]
    assert len(want["op_descs"]) == 7 and all(len(h) > 40 for h in want["op_descs"])
    assert want["module_ints"]["LONGS"] == 11 and want["var_types"]["INT8"] == 21


def test_descriptor_hashes_match_fluid_in_process():
    """The same hashes as the golden, computed here (the table against fluid's framework.proto)."""
    import hashlib

    from google.protobuf import descriptor_pb2

    want = fluid_golden()
    for module, key in ((framework_pb2, "framework"), (profiler_pb2, "profiler")):
        fdp = descriptor_pb2.FileDescriptorProto()
        module.DESCRIPTOR.CopyToProto(fdp)
        fdp.ClearField("syntax")
        assert hashlib.sha256(fdp.SerializeToString()).hexdigest() == want[key]["sha256"], key


def test_fluid_written_op_descs_parse_and_write_back_byte_for_byte():
    want = fluid_golden()
    for h in want["op_descs"]:
        data = bytes.fromhex(h)
        desc = framework_pb2.OpDesc.FromString(data)
        assert desc.IsInitialized()
        assert desc.SerializeToString() == data
    scale = framework_pb2.OpDesc.FromString(bytes.fromhex(want["op_descs"][0]))
    assert scale.type == "scale"
    assert [(v.parameter, list(v.arguments)) for v in scale.inputs] == [("X", ["x"]), ("ScaleTensor", [])]
    attrs = {a.name: a for a in scale.attrs}
    assert attrs["scale"].type == framework_pb2.FLOAT and attrs["scale"].f == 2.5
    assert attrs["bias"].f == 1.0 and attrs["bias_after_scale"].b is True
    assert list(attrs["op_role_var"].strings) == ["a"]
    lookup = framework_pb2.OpDesc.FromString(bytes.fromhex(want["op_descs"][6]))
    padding = [a for a in lookup.attrs if a.name == "padding_idx"][0]
    assert padding.type == framework_pb2.LONG and padding.l == -1


def test_module_names_and_defaults():
    assert (framework_pb2.INT, framework_pb2.FLOAT, framework_pb2.BOOLEAN, framework_pb2.LONGS) == (0, 1, 6, 11)
    assert framework_pb2.AttrType.Name(8) == "BLOCK" and framework_pb2.AttrType.Value("STRINGS") == 5
    assert framework_pb2.VarType.LOD_TENSOR == 7 and framework_pb2.VarType.Type.Name(20) == "UINT8"
    assert framework_pb2.CompatibleInfo.PRECISION_CHANGE == 4
    assert framework_pb2.OpDesc.Attr.__qualname__ == "OpDesc.Attr"
    assert framework_pb2.VarType.LoDTensorDesc().lod_level == 0
    assert framework_pb2.BlockDesc().forward_block_idx == -1
    assert profiler_pb2.MemEvent.CUDAPinnedPlace == 2
    assert "ProgramDesc" in framework_pb2.__all__ and "FLOAT" in framework_pb2.__all__


def test_required_fields_decide_is_initialized():
    p = framework_pb2.OpProto()
    assert not p.IsInitialized()
    p.type, p.comment = "cos", ""
    var = p.inputs.add()
    var.name = "X"
    assert not p.IsInitialized()  # the slot's comment is required
    var.comment = ""
    assert p.IsInitialized()


def test_program_bytes_read_with_framework_pb2():
    """fluidcompat's own writer (fluidcompat.proto, no protobuf) read by the protobuf classes: a while
    loop's sub-block, its BLOCK attribute, a LONG attribute and the version."""
    main, start = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, start):
        i = fluid.layers.fill_constant([1], "int64", 0)
        n = fluid.layers.fill_constant([1], "int64", 3)
        cond = fluid.layers.less_than(i, n)
        loop = fluid.layers.While(cond)
        with loop.block():
            fluid.layers.increment(i, in_place=True)
            fluid.layers.less_than(i, n, cond=cond)
    desc = framework_pb2.ProgramDesc.FromString(proto.program_to_bytes(main))
    assert desc.IsInitialized()
    assert [(b.idx, b.parent_idx) for b in desc.blocks] == [(0, -1), (1, 0)]
    assert desc.HasField("version") and desc.version.version == 0
    while_op = [o for o in desc.blocks[0].ops if o.type == "while"][0]
    sub = [a for a in while_op.attrs if a.name == "sub_block"][0]
    assert (sub.type, sub.block_idx) == (framework_pb2.BLOCK, 1)
    assert [o.type for o in desc.blocks[1].ops] == ["increment", "less_than"]
    fill = desc.blocks[0].ops[0]
    assert fill.type == "fill_constant"
    assert {a.name: a.type for a in fill.attrs}["dtype"] == framework_pb2.INT
    names = {v.name: v for v in desc.blocks[0].vars}
    assert names[i.name].type.lod_tensor.tensor.data_type == framework_pb2.VarType.INT64
    # and the protobuf's bytes read back by fluidcompat give the same ops and variables
    again = framework_pb2.ProgramDesc.FromString(
        proto.program_to_bytes(fluid.Program.parse_from_string(desc.SerializeToString()))
    )
    for b, b2 in zip(desc.blocks, again.blocks):
        assert list(b.ops) == list(b2.ops)
        assert sorted(v.SerializeToString() for v in b.vars) == sorted(v.SerializeToString() for v in b2.vars)


def test_profile_bytes_read_with_profiler_pb2():
    event = types.SimpleNamespace(name="thread0/mul", start_ns=100, end_ns=250)
    thread = types.SimpleNamespace(events=[event], tid=7)
    data = proto.profile_to_bytes([thread], wall_offset_ns=1000, start_ns=50, end_ns=300)
    profile = profiler_pb2.Profile.FromString(data)
    assert (profile.start_ns, profile.end_ns) == (1050, 1300)
    (e,) = profile.events
    assert (e.name, e.start_ns, e.end_ns, e.device_id, e.sub_device_id) == ("thread0/mul", 1100, 1250, 3, 7)
    assert e.type == profiler_pb2.Event.CPU


def test_import_paddle_fluid_does_not_import_protobuf(tmp_path):
    script = tmp_path / "probe.py"
    script.write_text(
        "import sys\nimport paddle.fluid\nimport paddle.fluid.op\nimport paddle.fluid.proto\n"
        "print('google.protobuf' in sys.modules)\n"
        "import paddle.fluid.proto.framework_pb2\nprint('google.protobuf' in sys.modules)\n"
    )
    assert run_script(str(script)).split() == ["False", "True"]


def make_proto(inputs=(), outputs=(), attrs=()):
    p = framework_pb2.OpProto(type="t", comment="")
    for name, dup in inputs:
        p.inputs.add(name=name, comment="", duplicable=dup)
    for name, dup in outputs:
        p.outputs.add(name=name, comment="", duplicable=dup)
    for name, t, generated in attrs:
        p.attrs.add(name=name, type=t, comment="", generated=generated)
    return p


def test_op_desc_creation_every_slot_in_proto_order_and_attrs_by_type():
    pb = framework_pb2
    attrs = [("l", pb.LONG, False), ("bs", pb.BOOLEANS, False), ("ls", pb.LONGS, False), ("g", pb.INT, True)]
    method = op.OpDescCreationMethod(make_proto([("B", False), ("A", True)], [("Out", False)], attrs))
    desc = method(A=np.array(["a1", "a2"]).tolist(), l=np.int64(2**40), bs=np.array([True, False]), ls=[1, 2**33], g=3)
    assert [(v.parameter, list(v.arguments)) for v in desc.inputs] == [("B", []), ("A", ["a1", "a2"])]
    assert [(v.parameter, list(v.arguments)) for v in desc.outputs] == [("Out", [])]
    got = {a.name: a for a in desc.attrs}
    assert sorted(got) == ["bs", "l", "ls"]  # the generated attribute is left out
    assert got["l"].l == 2**40 and list(got["bs"].bools) == [True, False] and list(got["ls"].longs) == [1, 2**33]
    assert desc.type == "t" and desc.IsInitialized()


def test_op_desc_creation_errors_name_what_was_wrong():
    method = op.OpDescCreationMethod(make_proto([("X", False)], [], [("blk", framework_pb2.BLOCK, False)]))
    with pytest.raises(NotImplementedError, match="BLOCK.*blk"):
        method(X="x", blk=1)
    with pytest.raises(TypeError, match=r"Input X of op t takes variable names.*Received: 3"):
        method(X=3)
    with pytest.raises(ValueError, match=r"Input X expects only one input, but 2 are given\. Received: \['a', 'b'\]"):
        method(X=["a", "b"])
    with pytest.raises(ValueError, match="Only keyword arguments are supported"):
        method("x")
    with pytest.raises(TypeError, match="should be OpProto.*Received: dict"):
        op.OpDescCreationMethod({"type": "t"})
    scale = [p for p in op.get_all_op_protos() if p.type == "scale"][0]
    with pytest.raises(TypeError, match="Attribute scale of op scale is FLOAT. Received: 'big'"):
        op.OpDescCreationMethod(scale)(X="x", scale="big")


def test_all_op_protos_are_messages_of_every_type():
    all_protos = op.get_all_op_protos()
    types_ = [p.type for p in all_protos]
    assert types_ == op.Operator.types()
    assert all(isinstance(p, framework_pb2.OpProto) and p.IsInitialized() for p in all_protos)
    assert set(fluid_golden()["protos"]) <= set(types_)


def test_operator_str_and_unknown_type():
    assert str(op.Operator("sum", X=["a", "b"], Out="z")) == "Op(sum), inputs:{X[a, b]}, outputs:{Out[z]}."
    s = str(op.Operator("scale", X="x", Out="o", scale=3.0))
    assert s == "Op(scale), inputs:{ScaleTensor[], X[x]}, outputs:{Out[o]}."
    with pytest.raises(ValueError, match="The operator: no_such_op is not registered"):
        op.Operator("no_such_op", X="a")
    with pytest.raises(ValueError, match="Output Out expects only one output, but 2 are given"):
        op.Operator("scale", X="x", Out=["o", "p"])


def test_builder_rejects_a_bad_table():
    with pytest.raises(ValueError, match="label one of.*Received: \\('x', 1, 'maybe', 'int32'\\)"):
        _build.message("M", [("x", 1, "maybe", "int32")])
    table = [_build.message("M", [("x", 1, "optional", "Missing")])]
    with pytest.raises(ValueError, match="'Missing' \\(in pkg.M\\) is neither a scalar type"):
        _build.file_descriptor_proto("m.proto", "pkg", table)
    twice = [_build.message("M", []), _build.enum("M", [("A", 0)])]
    with pytest.raises(ValueError, match="pkg.M is declared twice"):
        _build.file_descriptor_proto("m.proto", "pkg", twice)


def test_builder_resolves_the_innermost_name_first():
    table = [
        _build.enum("Kind", [("OUTER", 0)]),
        _build.message(
            "M",
            [("a", 1, "optional", "Kind"), ("b", 2, "optional", "N")],
            nested=[_build.message("N", [("c", 1, "optional", "Kind")])],
            enums=[_build.enum("Kind", [("INNER", 0)])],
        ),
        _build.message("P", [("k", 1, "optional", "Kind")]),
    ]
    fdp = _build.file_descriptor_proto("m.proto", "pkg", table)
    m, p = fdp.message_type
    assert [f.type_name for f in m.field] == [".pkg.M.Kind", ".pkg.M.N"]
    assert m.nested_type[0].field[0].type_name == ".pkg.M.Kind"
    assert p.field[0].type_name == ".pkg.Kind"
