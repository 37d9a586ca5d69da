"""``fluid.transpiler.geo_sgd_transpiler.GeoSgdTranspiler``: the programs of GEO-SGD training, as
fluid 1.8 built them. Each trainer keeps its whole program, optimizer included, and trains locally;
every ``geo_sgd_need_push_nums`` steps its communicator (fluid.communicator, GEO mode) sends each
parameter's change since the last exchange, divided by the number of trainers, to the servers and
takes their value back. A parameter is cut into row blocks spread over the servers (at least
``min_block_size`` elements a block); a server's program adds each block's ``<block>.delta`` to it
(one optimize block of a ``sum`` op per block it holds), in asynchronous mode.

The trainer program ends with a ``send`` op (fluid's: the ids of its sparse tables, their names in
``send_varnames``; it counts the steps) and, beyond fluid, a ``recv`` op per parameter marked
``do_not_run``, through which the communicator's exchanged values enter the program. The trainer
startup program receives every parameter from the servers (fluid's left sparse tables out: every
trainer starts from the servers' values here) and ends with fluid's ``param_init`` send, which gives
the communicator the values training starts from. The server's ``listen_and_serv`` lists the delta
variables it takes (fluid's listed none). Torch-free.
"""

from __future__ import annotations

import collections

from fluidcompat.dtypes import VarType
from fluidcompat.framework import (
    OpRole,
    Program,
    default_main_program,
    default_startup_program,
    generate_control_dev_var_name,
)
from fluidcompat.transpiler.distribute_transpiler import (
    _LOOKUPS,
    DistributedMode,
    DistributeTranspiler,
    _check_trainer_id,
    _endpoint_list,
    slice_variable,
    wait_server_ready,
)

__all__ = ["GeoSgdTranspiler"]


class GeoSgdTranspiler(DistributeTranspiler):
    """Trainer and server programs of GEO-SGD (``config.geo_sgd_need_push_nums``: the steps between
    exchanges, read by the fleet's communicator)."""

    def __init__(self, config=None) -> None:
        super().__init__(config)
        self.distributed_mode = DistributedMode.GEO

    def transpile(
        self, trainer_id, program=None, pservers="127.0.0.1:6174", trainers=1, sync_mode=False,
        startup_program=None, current_endpoint="127.0.0.1:6174",
    ):  # fmt: skip
        """Plan the parameters' blocks on the servers ``pservers``; ``program`` gets the step's
        ``send`` and the exchange's ``recv`` ops, ``startup_program`` the servers' initial values."""
        if isinstance(trainers, bool) or not isinstance(trainers, int) or trainers < 1:
            raise ValueError(f"trainers must be the number of trainers (an int >= 1). Received: {trainers!r}")
        _check_trainer_id(trainer_id, trainers)
        eps = _endpoint_list(pservers)
        program = default_main_program() if program is None else program
        startup = default_startup_program() if startup_program is None else startup_program
        if not isinstance(program, Program) or not isinstance(startup, Program):
            raise TypeError("transpile: program and startup_program must be fluid Programs")
        if getattr(program, "_is_distributed", False):
            raise ValueError("transpile: this program was transpiled already; transpile the original program once")
        self.origin_program, self.startup_program = program, startup
        self.trainer_num, self.trainer_id, self.sync_mode = trainers, trainer_id, False
        self.pserver_endpoints = eps
        _, self.params_grads = self._optimize_pass(program)
        if not self.params_grads:
            raise ValueError(
                "transpile: the program has no optimizer ops: call optimizer.minimize(loss) on it before transpiling"
            )
        gb = program.global_block()
        for op in gb.ops:
            if op.type in _LOOKUPS and op.attrs.get("is_distributed"):
                raise NotImplementedError(
                    f"GeoSgdTranspiler: '{op.input('W')[0]}' is a distributed lookup table (is_distributed=True), "
                    "which fluidcompat does not support; build the embedding with is_distributed=False"
                )
        self.optimize_ops = []  # the trainers keep their optimizers: the servers hold parameters only
        self.sparse_param_to_height_sections = {}
        self.param_name_to_grad_name = {p.name: g.name for p, g in self.params_grads}
        self.grad_name_to_param_name = {g.name: p.name for p, g in self.params_grads}
        sparse = [p.name for p, g in self.params_grads if g.type == VarType.SELECTED_ROWS]
        program._is_distributed = True
        program._endpoints = eps
        program._ps_endpoint = current_endpoint
        program._is_chief = trainer_id == 0
        program._distributed_lookup_table = None
        self._plan_blocks(sparse)
        self._append_exchange(program, sparse)
        self._origin_vars = dict(gb.vars)
        self._startup_ops = list(startup.global_block().ops)
        self._trainer_startup()
        self._append_param_init()
        self.trainer_startup_program = startup
        program._parameters_on_pservers = self._distributed_vars()
        self._transpiled = True

    def _plan_blocks(self, sparse) -> None:
        """Each trainable parameter cut into blocks over the servers, their endpoints, and the vars
        info the communicator reads (``var_names``, ``sections``, ``epmap``, ``is_sparse``)."""
        params, seen = [], set()
        for p, _ in self.params_grads:
            if getattr(p, "trainable", True) and p.name not in seen:
                seen.add(p.name)
                params.append(p)
        blocks = slice_variable(params, len(self.pserver_endpoints), self.config.min_block_size)
        self.param_var_mapping = self._split_vars(self.origin_program, blocks, False)
        gb = self.origin_program.global_block()
        order = [v for splits in self.param_var_mapping.values() for v in splits]
        eplist = self.config.split_method(self.pserver_endpoints).dispatch(order)
        self._recv_ep = {v.name: ep for v, ep in zip(order, eplist)}
        self.param_grad_ep_mapping = collections.OrderedDict(
            (ep, {"params": [], "grads": []}) for ep in self.pserver_endpoints
        )
        for v, ep in zip(order, eplist):
            self.param_grad_ep_mapping[ep]["params"].append(v)
        self.vars_info = collections.OrderedDict()
        for name, splits in self.param_var_mapping.items():
            origin = gb.var(name)
            self.vars_info[name] = collections.OrderedDict(
                var_names=[v.name for v in splits],
                sections=[str(v.shape[0]) for v in splits],
                epmap=[self._recv_ep[v.name] for v in splits],
                is_sparse=["True" if name in sparse else "False"],
            )
            deltas = [(name, origin)] + ([(v.name, v) for v in splits] if len(splits) > 1 else [])
            for base, v in deltas:
                gb.create_var(name=f"{base}.delta", persistable=False, dtype=v.dtype, type=v.type, shape=v.shape)

    def _append_exchange(self, program, sparse) -> None:
        """The step's ``send`` (the sparse tables' ids), then one do_not_run ``recv`` per parameter."""
        gb = program.global_block()
        ids, tables, seen = [], [], set()
        for op in gb.ops:
            if op.type not in _LOOKUPS or "is_sparse" not in op.attrs:
                continue
            if op.type == "lookup_table":
                op._set_attr("remote_prefetch", False)  # the trainer holds the whole table
            for i, w in zip(op.input("Ids"), op.input("W")):
                if w in sparse and (i, w) not in seen:
                    seen.add((i, w))
                    ids.append(i)
                    tables.append(w)
        step = gb.create_var(name=generate_control_dev_var_name())
        gb.append_op("send", {"X": ids}, {"Out": [step.name]},
                     {"send_varnames": tables, "epmap": [], "sections": [], "op_role": OpRole.RPC})  # fmt: skip
        for name, info in self.vars_info.items():
            gb.append_op(
                "recv", {"X": [step.name]}, {"Out": [name]},
                {"epmap": list(info["epmap"]), "recv_varnames": list(info["var_names"]), "trainer_id": self.trainer_id,
                 "do_not_run": True, "op_role": OpRole.RPC},
            )  # fmt: skip

    def _append_param_init(self) -> None:
        """fluid's ``param_init`` send, at the end of the trainer startup program: the parameters'
        values (just received) are where the communicator's first exchange starts from."""
        sb = self.startup_program.global_block()
        out = sb.create_var(name=generate_control_dev_var_name())
        names = [n for n in self.vars_info if sb.has_var(n)]
        sb.append_op("send", {"X": names}, {"Out": [out.name]},
                     {"send_varnames": ["param_init"], "epmap": [], "sections": [], "op_role": OpRole.RPC})  # fmt: skip

    def _get_vars_info(self):
        return self.vars_info

    def get_trainer_program(self, wait_port=True):
        """The trainer's program: the original one, optimizer included, with the exchange's ops;
        waits for the servers when ``wait_port``."""
        self._check_transpiled("get_trainer_program")
        if wait_port:
            wait_server_ready(self.pserver_endpoints)
        return self.origin_program

    def get_pserver_program(self, endpoint):
        """The program of the server at ``endpoint``: the parameter blocks it holds and, per block,
        an optimize block adding the trainers' ``<block>.delta`` to it."""
        self._check_endpoint(endpoint)
        prog = Program()
        prog.random_seed = self.origin_program.random_seed
        prog._is_distributed = True
        prog._ps_endpoint = endpoint
        prog._parameters_on_pservers = self.origin_program._parameters_on_pservers
        gb = prog.global_block()
        sparse = {
            v for name, info in self.vars_info.items() if info["is_sparse"] == ["True"] for v in info["var_names"]
        }
        blocks, grad_to_block_id, sparse_grad_to_param, deltas = [], [], [], []
        for v in self.param_grad_ep_mapping[endpoint]["params"]:
            param = gb.create_var(name=v.name, shape=v.shape, dtype=v.dtype, type=v.type, persistable=True)
            delta = gb.create_var(name=f"{v.name}.delta", shape=v.shape, dtype=v.dtype, type=v.type, persistable=False)
            blk = prog._create_block(0)
            blk.append_op("sum", {"X": [param.name, delta.name]}, {"Out": [param.name]})
            blocks.append(blk.idx)
            deltas.append(delta.name)
            grad_to_block_id.append(f"{delta.name}:{blk.idx}")
            if v.name in sparse:
                sparse_grad_to_param.append(f"{delta.name}:{param.name}")
        prog.current_block_idx = 0
        gb.append_op(
            "listen_and_serv", {"X": deltas}, {},
            {"optimize_blocks": blocks, "endpoint": endpoint, "pserver_id": self.pserver_endpoints.index(endpoint),
             "Fanin": self.trainer_num, "distributed_mode": DistributedMode.GEO, "grad_to_block_id": grad_to_block_id,
             "sparse_grad_to_param": sparse_grad_to_param, "lr_decay_block_id": -1,
             "rpc_get_thread_num": self.server_config._rpc_get_thread_num,
             "rpc_send_thread_num": self.server_config._rpc_send_thread_num,
             "rpc_prefetch_thread_num": self.server_config._rpc_prefetch_thread_num},
        )  # fmt: skip
        return prog
