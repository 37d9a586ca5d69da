"""``fluid.transpiler.details``: the readable program printer against text recorded from fluid 1.8.5,
the op lookups, UnionFind, VarsDistributed; ``generate_layer_fn``; a clone equal to its program
attribute by attribute (fluid's test_desc_clone compares them so)."""

from __future__ import annotations

import io

import pytest

import fluidcompat as fluid
from fluidcompat.layers import ops
from fluidcompat.layers.io import ListenAndServ, Recv, Send
from fluidcompat.transpiler.details import (
    UnionFind,
    VarsDistributed,
    VarStruct,
    block_to_code,
    find_op_by_input_arg,
    find_op_by_output_arg,
    op_to_code,
    program_to_code,
    variable_to_code,
)

L = fluid.layers

# recorded from fluid 1.8.5 (program_to_code of the same programs)
SERVER = (
    "{ // block 0\n"
    "    var X : fluid.VarType.LOD_TENSOR.shape(32, 32).astype(VarType.FP32)\n"
    "    var scale_0.tmp_0 : fluid.VarType.LOD_TENSOR.shape(32, 32).astype(VarType.FP32)\n"
    "\n"
    "    listen_and_serv(inputs={X=['X']}, Fanin = 1, checkpint_block_id = -1, dc_asgd = False, distributed_mode = 0, "
    "endpoint = 127.0.0.1:0, grad_to_block_id = [''], lr_decay_block_id = -1, op_device = , op_namescope = /, "
    "op_role = 0, op_role_var = [], optimize_blocks = blocks[1], prefetch_var_name_to_block_id = [], pserver_id = -1, "
    "rpc_get_thread_num = 1, rpc_prefetch_thread_num = 1, rpc_send_thread_num = 1, sparse_grad_to_param = [])\n"
    "}\n"
    "{ // block 1\n"
    "    {Out=['scale_0.tmp_0']} = scale(inputs={ScaleTensor=[], X=['X']}, bias = 0.0, bias_after_scale = True, "
    "op_device = , op_namescope = /, op_role = 0, op_role_var = [], scale = 2.299999952316284)\n"
    "}\n"
)
CLIENT = (
    "{ // block 0\n"
    "    var X : fluid.VarType.LOD_TENSOR.shape(32, 32).astype(VarType.FP32)\n"
    "    var scale_0.tmp_0 : fluid.VarType.LOD_TENSOR.shape(32, 32).astype(VarType.FP32)\n"
    "\n"
    "    {Out=[]} = send(inputs={X=['X', 'X']}, epmap = ['127.0.0.1:9123', '127.0.0.1:9124'], merge_add = False, "
    "num = 0, op_device = , op_namescope = /, op_role = 4, op_role_var = [], sections = [], send_varnames = [], "
    "trainer_id = 0, use_send_handler = True)\n"
    "    {Out=[]} = send_barrier(inputs={X=[]}, endpoints = ['127.0.0.1:9123', '127.0.0.1:9124'], half_async = False, "
    "op_device = , op_namescope = /, op_role = 0, op_role_var = [], trainer_id = 0)\n"
    "    {Out=['scale_0.tmp_0']} = recv(inputs={X=[]}, do_not_run = 0, epmap = ['127.0.0.1:9123'], op_device = , "
    "op_namescope = /, op_role = 0, op_role_var = [], recv_varnames = [], trainer_id = 0, varnames = [], "
    "with_barrier = True)\n"
    "}\n"
)


def _text(program) -> str:
    out = io.StringIO()
    program_to_code(program, fout=out)
    return out.getvalue()


def _server_program():
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        serv = ListenAndServ("127.0.0.1:0", ["X"], optimizer_mode=False)
        with serv.do():
            out = main.global_block().create_var(name="scale_0.tmp_0", dtype="float32", shape=[32, 32])
            x = L.data(shape=[32, 32], dtype="float32", name="X", append_batch_size=False)
            ops._scale(x=x, scale=2.3, out=out)
    return main


def test_server_program_prints_as_fluids():
    assert _text(_server_program()) == SERVER


def test_client_program_prints_as_fluids():
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        x = L.data(shape=[32, 32], dtype="float32", name="X", append_batch_size=False)
        got = main.global_block().create_var(name="scale_0.tmp_0", dtype="float32", persistable=False, shape=[32, 32])
        Send("127.0.0.1:9123,127.0.0.1:9124", [x, x])
        assert Recv("127.0.0.1:9123", [got], sync=False) == [got]
    assert _text(main) == CLIENT


def test_variables_op_and_empty_block_print_as_fluids():
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        w = L.create_parameter([3, 2], "float64", name="w")
        fw = L.create_parameter([4], "float32", attr=fluid.ParamAttr(name="fw", trainable=False))
        g = L.create_global_var([1], 0.5, "float32", persistable=True, name="g")
        arr = L.create_array("float32")
        y = L.elementwise_add(w, w, axis=1)
    assert [variable_to_code(v) for v in (w, fw, g, arr, y)] == [
        "persist trainable parameter w : fluid.VarType.LOD_TENSOR.shape(3, 2).astype(VarType.FP64)",
        "persist parameter fw : fluid.VarType.LOD_TENSOR.shape(4,).astype(VarType.FP32)",
        "persist var g : fluid.VarType.LOD_TENSOR.shape(1,).astype(VarType.FP32)",
        "var array_0.out : fluid.VarType.LOD_TENSOR_ARRAY)",
        "var elementwise_add_0.tmp_0 : fluid.VarType.LOD_TENSOR.shape(3, 2).astype(VarType.FP64)",
    ]
    assert op_to_code(main.global_block().ops[-1]) == (
        "{Out=['elementwise_add_0.tmp_0']} = elementwise_add(inputs={X=['w'], Y=['w']}, axis = 1, op_device = , "
        "op_namescope = /, op_role = 0, op_role_var = [], use_mkldnn = False, x_data_format = , y_data_format = )"
    )
    out = io.StringIO()
    block_to_code(main._create_block(), 1, fout=out)
    assert out.getvalue() == "{ // block 1\n}\n"


def test_block_attributes_given_as_blocks_print_their_ids():
    prog = fluid.Program()
    sub = prog._create_block()
    prog._rollback()
    prog.global_block().append_op(
        type="listen_and_serv", inputs={"X": []}, outputs={}, attrs={"optimize_blocks": [sub], "endpoint": "e:0"}
    )
    assert "optimize_blocks = blocks[1]" in op_to_code(prog.global_block().ops[0])


def test_op_lookups():
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        x = fluid.data("x", [2], "float32")
        a = L.scale(x, 2.0)
        b = L.scale(a, 3.0)
        L.assign(a, b)
    block = main.global_block()
    assert find_op_by_input_arg(block, a.name) == 1
    assert find_op_by_output_arg(block, b.name) == 1
    assert find_op_by_output_arg(block, b.name, reverse=True) == 2
    assert find_op_by_input_arg(block, "nothing") == -1


def test_union_find():
    uf = UnionFind(["a", "b", "c", "d"])
    uf.union("a", "b")
    uf.union("c", "b")
    assert uf.is_connected("a", "c") and not uf.is_connected("a", "d")
    assert uf.find("z") == -1
    with pytest.raises(ValueError, match="'z' is not one of the elements"):
        uf.union("a", "z")


def test_vars_distributed_records_and_lookups():
    lod = fluid.core.VarDesc.VarType.LOD_TENSOR
    origin = VarStruct("t", [10, 8], "float32", lod, 0, True)
    rec = VarsDistributed()
    rec.add_distributed_var(origin, VarStruct("t.block0", [5, 8], "float32", lod, 0, True), block_id=0,
                            offset=0, vtype="RemotePrefetch", endpoint="a:1")  # fmt: skip
    rec.add_distributed_var(origin, origin, vtype="Param", endpoint="b:2")
    first, second = rec.distributed_vars
    assert first.is_slice and not second.is_slice  # by default: whether the piece differs from the original
    assert rec.get_distributed_var_by_slice("t.block0") is first
    assert rec.get_distributed_var_by_origin_and_ep("t", "b:2") is second
    assert rec.get_distributed_vars_by_vtypes(["RemotePrefetch"], groupby=True) == {"t": [first]}
    assert rec.get_distributed_vars_by_ep("a:1", "Param") == []
    assert rec.overview().splitlines()[0] == (
        "var owned: RemotePrefetch, origin var: ( t : fluid.VarType.LOD_TENSOR.shape[10, 8].astype(float32) ), "
        "slice var: ( t.block0 : fluid.VarType.LOD_TENSOR.shape[5, 8].astype(float32).slice(True).block(0)"
        ".offset(0) ), endpoint: a:1 "
    )


def test_generate_layer_fn():
    from fluidcompat.layers.layer_function_generator import generate_layer_fn

    x = fluid.data("x", [2, 3], "float32")
    out = fluid.default_main_program().global_block().create_var(name="o", dtype="float32", shape=[2, 3])
    assert ops._scale(x=x, scale=3.0, bias=1.0, out=out, name="ignored") is out
    op = fluid.default_main_program().global_block().ops[-1]
    assert op.type == "scale" and op.attr("scale") == 3.0 and op.attr("bias") == 1.0 and not op.has_attr("name")
    y = ops._elementwise_div(x, x)
    assert y.dtype == x.dtype and y.op.type == "elementwise_div"
    with pytest.raises(ValueError, match="input of scale must be variable"):
        ops._scale(x=1.0)
    with pytest.raises(ValueError, match="non-intermediate outputs"):
        generate_layer_fn("batch_norm")
    import numpy as np

    got = fluid.Executor(fluid.CPUPlace()).run(feed={"x": np.ones((2, 3), "float32")}, fetch_list=[out, y])
    np.testing.assert_allclose(got[0], 4.0)
    np.testing.assert_allclose(got[1], 1.0)


def _same(a, b, skip=()):
    """``a``'s attributes equal ``b``'s (programs, blocks and descs aside), as test_desc_clone compares."""
    for k, v in vars(a).items():
        if k in skip or isinstance(v, (fluid.Program, fluid.framework.Block)):
            continue
        assert k in vars(b), k
        if k == "vars":
            assert {n: str(x) for n, x in v.items()} == {n: str(x) for n, x in vars(b)[k].items()}
        else:
            assert v == vars(b)[k], k


def test_a_clone_equals_its_program_attribute_by_attribute():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [-1, 4], "float32")
        loss = L.mean(L.fc(L.fc(x, 3, act="relu"), 2))
        fluid.optimizer.Adam(0.01).minimize(loss)
    for prog in (main, startup):
        copy = prog.clone()
        assert type(copy.global_block().vars).__name__ == "OrderedDict"  # fluid's type
        _same(copy, prog, skip=("blocks",))
        for cb, pb in zip(copy.blocks, prog.blocks):
            _same(cb, pb, skip=("ops",))
            for co, po in zip(cb.ops, pb.ops):
                assert op_to_code(co) == op_to_code(po)
                _same(co, po)


def test_copy_data_info_from():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = L.data("x", [3])
        h = L.fc(x, 2)
        h.stop_gradient = True
    copy = main.clone()
    for v in copy.global_block().vars.values():
        v.is_data = v.stop_gradient = False
    copy._copy_data_info_from(main)
    assert copy.global_block().var("x").is_data and copy.global_block().var(h.name).stop_gradient
    with pytest.raises(ValueError):
        main._copy_data_info_from(startup)  # main's variables are not startup's
    with pytest.raises(TypeError, match="only used to copy Program"):
        main._copy_data_info_from(startup.global_block())
