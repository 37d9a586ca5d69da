# The parameter-server fleet's strategies, the communicator's programs, GEO-SGD's programs, the PSLib
# module's embedding checks and the fleet helpers, as plain facts (JSON on stdout). Run under fluid
# 1.8.5 for fleet_ps_modules.json; tests/test_fleet_ps_modules.py runs it under fluidcompat.
import json
import os

os.environ["CPU_NUM"] = "3"
for k in list(os.environ):
    if k.startswith("FLAGS_communicator") or k.startswith("FLAGS_rpc"):
        del os.environ[k]

import paddle.fluid as fluid  # noqa: E402
import paddle.fluid.incubate.fleet.base.role_maker as role_maker  # noqa: E402
from _golden import errors_of  # noqa: E402
from paddle.fluid.incubate.fleet.parameter_server.distribute_transpiler import fleet  # noqa: E402
from paddle.fluid.incubate.fleet.parameter_server.distribute_transpiler.distributed_strategy import (  # noqa: E402
    StrategyFactory,
    TrainerRuntimeConfig,
)
from paddle.fluid.transpiler.distribute_transpiler import DistributeTranspilerConfig, ServerRuntimeConfig  # noqa: E402

out = {}

CONFIG_KEYS = [
    "sync_mode",
    "runtime_split_send_recv",
    "half_async",
    "completely_not_async",
    "geo_sgd_mode",
    "geo_sgd_need_push_nums",
    "min_block_size",
]


def config_of(c):
    return {k: getattr(c, k) for k in CONFIG_KEYS}


strategies = {}
for name, make in (
    ("sync", StrategyFactory.create_sync_strategy),
    ("async", StrategyFactory.create_async_strategy),
    ("half_async", StrategyFactory.create_half_async_strategy),
    ("geo", lambda: StrategyFactory.create_geo_strategy(7)),
):
    s = make()
    strategies[name] = {
        "program": config_of(s.get_program_config()),
        "async_mode": s.get_build_strategy().async_mode,
        "num_threads": s.get_execute_strategy().num_threads,
        "use_thread_barrier": s.get_execute_strategy().use_thread_barrier,
        "reduce": int(s.get_build_strategy().reduce_strategy),
        "mode": s.get_trainer_runtime_config().mode,
        "flags": s.get_trainer_runtime_config().get_communicator_flags(),
        "errors": [
            e[0] if e else None
            for e in errors_of(
                [
                    lambda: s.set_program_config({"unknown": 1}),
                    lambda: s.set_program_config(None),
                    lambda: s.set_trainer_runtime_config({"unknown": 1}),
                    lambda: s.set_server_runtime_config({"x": 1}),
                    lambda: s.set_execute_strategy(None),
                    lambda: s.set_build_strategy({"unknown": 1}),
                ]
            )
        ],
    }
    s.set_debug_opt({"dump_param": ["w"], "dump_fields_path": "d/"})
    strategies[name]["debug"] = s.get_debug_opt()
out["strategies"] = strategies
out["runtime_defaults"] = TrainerRuntimeConfig().runtime_configs
out["server_runtime"] = vars(ServerRuntimeConfig())


def net(big=False):
    x = fluid.layers.data(name="x", shape=[64 if big else 4], dtype="float32")
    y = fluid.layers.data(name="y", shape=[1], dtype="float32")
    h = fluid.layers.fc(x, 256 if big else 3, act="tanh")
    pred = fluid.layers.fc(h, 1)
    return fluid.layers.mean(fluid.layers.square_error_cost(pred, y))


RPC_ATTRS = {
    "send": ("send_varnames", "sections", "epmap"),
    "recv": ("recv_varnames", "epmap"),
    "send_barrier": ("half_async", "endpoints"),
    "fetch_barrier": ("endpoints",),
    "listen_and_serv": ("distributed_mode", "Fanin", "grad_to_block_id", "optimize_blocks"),
}


def names(op, slots, get):
    # the control-dependency variables' numbers depend on what ran before: "<dep>"
    dep = ("_generated_var", "__control_var")
    return {s: ["<dep>" if n.startswith(dep) else n for n in get(s)] for s in slots if get(s)}


def op_facts(program):
    facts = []
    for op in program.global_block().ops:
        if op.type in RPC_ATTRS:
            attrs = {k: op.attr(k) for k in RPC_ATTRS[op.type]}
            if "optimize_blocks" in attrs:  # Blocks under fluid: their indices
                attrs["optimize_blocks"] = [b if isinstance(b, int) else b.id for b in attrs["optimize_blocks"]]
            facts.append([op.type, names(op, op.input_names, op.input), names(op, op.output_names, op.output), attrs])
        else:
            facts.append([op.type])
    return facts


def build(role, config, big=True, workers=2):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        loss = net(big)
        fleet.init(
            role_maker.UserDefinedRoleMaker(
                current_id=0, role=role, worker_num=workers, server_endpoints=["127.0.0.1:6001", "127.0.0.1:6002"]
            )
        )
        fleet.distributed_optimizer(fluid.optimizer.SGD(0.1), config).minimize(loss)
    return type(fleet._transpile_config).__name__, fleet.main_program, fleet.startup_program


programs = {}
for name, make in (
    ("sync", StrategyFactory.create_sync_strategy),
    ("async", StrategyFactory.create_async_strategy),
    ("half_async", StrategyFactory.create_half_async_strategy),
):
    for role, tag in ((role_maker.Role.WORKER, "trainer"), (role_maker.Role.SERVER, "pserver")):
        s = make()
        s._program_config.wait_port = False
        kind, main, startup = build(role, s)
        programs[f"{name}_{tag}"] = op_facts(main)
        programs[f"{name}_{tag}_startup"] = [op.type for op in startup.global_block().ops]
out["programs"] = programs

mapping = {}
for label, settings in (
    ("sync", {}),
    ("plain_async", {"sync_mode": False}),
    ("runtime_split", {"sync_mode": False, "runtime_split_send_recv": True}),
    ("half_async", {"sync_mode": False, "runtime_split_send_recv": True, "half_async": True}),
    ("geo", {"sync_mode": False, "runtime_split_send_recv": True, "geo_sgd_mode": True, "geo_sgd_need_push_nums": 4}),
):
    c = DistributeTranspilerConfig()
    for k, v in settings.items():
        setattr(c, k, v)
    c.wait_port = False
    kind, main, startup = build(role_maker.Role.SERVER, c, big=False)
    mapping[label] = [kind, config_of(c)]
out["config_strategy"] = mapping

geo = StrategyFactory.create_geo_strategy(3)
kind, main, startup = build(role_maker.Role.SERVER, geo)
out["geo_pserver"] = [
    [
        b.idx,
        b.parent_idx,
        [
            [op.type, {s: op.input(s) for s in op.input_names}, {s: op.output(s) for s in op.output_names}]
            for op in b.ops
        ],
    ]
    for b in main.blocks[1:]
]
lns = main.global_block().ops[-1]
out["geo_listen"] = {k: lns.attr(k) for k in ("distributed_mode", "Fanin", "grad_to_block_id", "sparse_grad_to_param")}
out["geo_pserver_vars"] = sorted([v.name, list(v.shape), v.persistable] for v in main.global_block().vars.values())
geo = StrategyFactory.create_geo_strategy(3)
geo._program_config.wait_port = False
kind, main, startup = build(role_maker.Role.WORKER, geo)
out["geo_vars_info"] = fleet.vars_info
out["geo_trainer"] = [op.type for op in main.global_block().ops]
out["geo_trainer_startup"] = [op.type for op in startup.global_block().ops]

from paddle.fluid.incubate.fleet.parameter_server.pslib import (  # noqa: E402
    FLEET_GLOBAL_DICT,
    _prepare_params,
    fleet_embedding,
)

main, startup = fluid.Program(), fluid.Program()
with fluid.program_guard(main, startup):
    ids = fluid.layers.data(name="ids", shape=[1], dtype="int64", lod_level=1)
    attr = fluid.ParamAttr(name="emb")
    with fleet_embedding(click_name="click"):
        a = fluid.layers.embedding(input=ids, size=[-1, 8], is_sparse=True, is_distributed=True, param_attr=attr)
        b = fluid.embedding(input=ids, size=[-1, 8], is_sparse=True, is_distributed=True, param_attr=attr)
    out["pull_sparse"] = [
        [
            op.type,
            {
                k: op.attr(k)
                for k in ("EmbeddingDim", "TableId", "AccessorClass", "CtrLabelName", "PaddingId", "ScaleSparseGrad")
            },
        ]
        for op in main.global_block().ops
    ]
    out["pull_sparse_shapes"] = [list(a.shape), list(b.shape)]
    out["fleet_global"] = {k: v for k, v in FLEET_GLOBAL_DICT.items()}
    FLEET_GLOBAL_DICT["cur_accessor"] = "DownpourCtrAccessor"
    out["prepare_errors"] = errors_of(
        [
            lambda: _prepare_params(input=ids, size=[1, 8]),
            lambda: _prepare_params(input=ids, size=[1, 8], param_attr=fluid.ParamAttr()),
            lambda: _prepare_params(input=ids, size=8, param_attr=attr),
            lambda: _prepare_params(input=ids, size=[-1, 12], param_attr=attr),
            lambda: _prepare_params(input=ids, size=[-1, 8], param_attr=attr, is_sparse=False),
            lambda: _prepare_params(input=ids, size=[-1, 8], param_attr=attr, is_sparse=True, is_distributed=False),
            lambda: _prepare_params(
                input=ids, size=[-1, 8], param_attr=attr, is_sparse=True, is_distributed=True, dtype="abc"
            ),
        ]
    )

from paddle.fluid.incubate.fleet.collective import TrainStatus  # noqa: E402
from paddle.fluid.incubate.fleet.utils.fleet_util import FleetUtil  # noqa: E402

out["train_status"] = [
    TrainStatus().next(),
    TrainStatus(4).next(),
    TrainStatus(2) == TrainStatus(2),
    TrainStatus(2) != TrainStatus(3),
]
out["fleet_util_errors"] = [
    e[0] if e else None
    for e in errors_of([lambda: FleetUtil(), lambda: FleetUtil(mode="transpiler"), lambda: FleetUtil("other")])
]
out["role_errors"] = [
    e[0] if e else None
    for e in errors_of(
        [
            lambda: role_maker.UserDefinedRoleMaker(0, role_maker.Role.WORKER, 1, None),
            lambda: role_maker.UserDefinedRoleMaker(0, role_maker.Role.WORKER, 1, []),
            lambda: role_maker.UserDefinedRoleMaker(0, role_maker.Role.WORKER, 1, [3, []]),
            lambda: role_maker.UserDefinedRoleMaker(0, role_maker.Role.WORKER, 1, ["a:1", "a:1"]),
            lambda: role_maker.UserDefinedRoleMaker("0", role_maker.Role.WORKER, 1, ["a:1"]),
            lambda: role_maker.UserDefinedRoleMaker(-1, role_maker.Role.WORKER, 1, ["a:1"]),
            lambda: role_maker.UserDefinedRoleMaker(1, role_maker.Role.SERVER, 1, ["a:1"]),
            lambda: role_maker.UserDefinedRoleMaker(5, role_maker.Role.WORKER, 1, ["a:1"]),
            lambda: role_maker.UserDefinedRoleMaker(0, role_maker.Role.WORKER, "1", ["a:1"]),
            lambda: role_maker.UserDefinedRoleMaker(0, role_maker.Role.WORKER, 0, ["a:1"]),
            lambda: role_maker.UserDefinedRoleMaker(0, 3, 1, ["a:1"]),
            lambda: role_maker.UserDefinedCollectiveRoleMaker(1, ["a:1"]),
            lambda: role_maker.UserDefinedCollectiveRoleMaker(0, ["a:1", "a:1"]),
        ]
    )
]
print(json.dumps(out, sort_keys=True))
