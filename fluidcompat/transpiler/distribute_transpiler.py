"""``fluid.DistributeTranspiler`` in parameter-server mode: a training program cut into the program
each trainer runs (forward, backward, then ``send`` of its gradients and ``recv`` of the updated
parameters) and the program each parameter server runs (``listen_and_serv`` over one optimize block
per parameter block it holds), as fluid 1.8.5 built them: the same ops, variable names, blocks and
attributes. Parameters of at least ``2 * min_block_size`` elements are cut into row blocks spread
over the servers. The programs run through fluidcompat's parameter server on gRPC
(fluidcompat/transpiler/rpc/).

Compat: gradient-clipping ops stay in the trainer program (fluid 1.8.5 moved those of an
optimizer's ``grad_clip`` to the servers, where they read a gradient no trainer sent); every
program can be built from one transpiler, in any order (fluid 1.8.5 freed the optimizer ops when it
built the trainer program). With ``runtime_split_send_recv`` (the
fleet's strategies) the trainer program is fluid's communicator program: each ``send`` takes a whole
gradient (``sections`` / ``send_varnames`` name its blocks) and each ``recv`` gives a whole parameter
(``recv_varnames``); fluid.communicator.Communicator cuts, merges, sends and receives them. Not
supported (an error says so): collective mode (use ``fluidcompat launch``), distributed lookup
tables, DC-ASGD, GEO-SGD here (GeoSgdTranspiler builds those programs), and learning-rate decay
with asynchronous servers. Torch-free.
"""

from __future__ import annotations

import collections
import math
import os
import socket
import sys
import time
import warnings
from functools import reduce
from typing import Dict, List, Optional, Tuple

from fluidcompat.dtypes import VarType
from fluidcompat.framework import (
    OpRole,
    Parameter,
    Program,
    default_main_program,
    default_startup_program,
    generate_control_dev_var_name,
)
from fluidcompat.transpiler.ps_dispatcher import PSDispatcher, RoundRobin

_LOOKUPS = ("lookup_table", "lookup_table_v2")


class DistributedMode:
    SYNC = 0
    ASYNC = 1
    HALF_ASYNC = 2
    GEO = 3


class DistributeTranspilerConfig:
    """How ``DistributeTranspiler`` cuts a program (fluid 1.8.5's attributes and defaults)."""

    slice_var_up = True
    split_method = None
    min_block_size = 8192
    enable_dc_asgd = False
    mode = "pserver"
    print_log = False
    wait_port = True
    half_async = False
    completely_not_async = False
    geo_sgd_mode = False
    geo_sgd_need_push_nums = 100
    nccl_comm_num = 1
    use_hierarchical_allreduce = False
    hierarchical_allreduce_inter_nranks = 0
    collective_mode = None

    def __init__(self) -> None:
        self._runtime_split_send_recv = False
        self._sync_mode = True

    @property
    def runtime_split_send_recv(self) -> bool:
        return self._runtime_split_send_recv

    @runtime_split_send_recv.setter
    def runtime_split_send_recv(self, value) -> None:
        if value is None:
            raise ValueError("runtime_split_send_recv can't be None")
        if value and self._sync_mode:
            raise ValueError(
                "if you want to set runtime_split_send_recv to be true, make ensure config.sync_mode is false at first"
            )
        self._runtime_split_send_recv = value

    @property
    def sync_mode(self) -> bool:
        return self._sync_mode

    @sync_mode.setter
    def sync_mode(self, value) -> None:
        if value is None:
            raise ValueError("sync_mode can't be None")
        if value and self._runtime_split_send_recv:
            raise ValueError(
                "if you want to set sync_mode to be true, make ensure config.runtime_split_send_recv is false at first"
            )
        self._sync_mode = value


class ServerRuntimeConfig:
    """The parameter servers' RPC thread counts (``FLAGS_rpc_*_thread_num``, 12 by default): carried
    by ``listen_and_serv`` as fluid's were (fluidcompat's server serves each trainer on a thread of
    its own)."""

    def __init__(self) -> None:
        self._rpc_send_thread_num = int(os.getenv("FLAGS_rpc_send_thread_num", "12"))
        self._rpc_get_thread_num = int(os.getenv("FLAGS_rpc_get_thread_num", "12"))
        self._rpc_prefetch_thread_num = int(os.getenv("FLAGS_rpc_prefetch_thread_num", "12"))


def slice_variable(var_list, slice_count: int, min_block_size: int) -> List[Tuple[str, int, int]]:
    """(name, block index, elements) of every block the variables are cut into: at most
    ``slice_count`` blocks of at least ``min_block_size`` elements, whole rows each."""
    blocks = []
    for var in var_list:
        numel = reduce(lambda a, b: a * b, var.shape, 1)
        count = min(slice_count, max(1, int(math.floor(numel / float(min_block_size)))))
        size = int(math.ceil(numel / float(count)))
        if len(var.shape) >= 2:
            row = reduce(lambda a, b: a * b, var.shape[1:], 1)
            if size % row:
                size += row - size % row
        count = int(math.ceil(numel / float(size)))
        blocks.extend((var.name, i, min(size, numel - i * size)) for i in range(count))
    return blocks


def _name_parts(name: str) -> Tuple[str, str, str]:
    """'w@GRAD.block1.trainer_0' -> ('w@GRAD', 'block1', 'trainer_0')."""
    t = name.find(".trainer_")
    trainer = name[t + 1 :] if t >= 0 else ""
    t = t if t >= 0 else len(name)
    b = name.find(".block")
    block = name[b + 1 : t] if b >= 0 else ""
    return name[: min(b if b >= 0 else len(name), t)], block, trainer


def _orig_name(name: str) -> str:
    return _name_parts(name)[0]


def _same_or_split(block_name: str, name: str) -> bool:
    return block_name == name or block_name.startswith(name + ".block")


def _endpoint_list(pservers) -> List[str]:
    if not isinstance(pservers, str) or not pservers.strip():
        raise ValueError(f"pservers must be a comma-separated 'ip:port' list. Received: {pservers!r}")
    eps = [e.strip() for e in pservers.split(",")]
    for e in eps:
        host, _, port = e.rpartition(":")
        if not host or not port.isdigit():
            raise ValueError(f"pservers: '{e}' is not an 'ip:port' endpoint. Received: {pservers!r}")
    if len(set(eps)) != len(eps):
        raise ValueError(f"pservers names an endpoint twice. Received: {pservers!r}")
    return eps


# per update op type, its state inputs shaped as the parameter (cut with it over the servers)
_PER_ELEMENT_STATE = {
    "adam": ("Moment1", "Moment2"),
    "adagrad": ("Moment",),
    "adamax": ("Moment", "InfNorm"),
    "momentum": ("Velocity",),
    "lars_momentum": ("Velocity",),
    "rmsprop": ("Moment", "MeanSquare"),
    "decayed_adagrad": ("Moment",),
    "ftrl": ("SquaredAccumulator", "LinearAccumulator"),
    "sgd": (),
}
# an update op's inputs that are not its state
_NOT_STATE = ("Param", "Grad", "LearningRate", "Beta1Tensor", "Beta2Tensor")


def _per_element_state(op_type: str, slot: str) -> bool:
    """Whether an update op's state input is shaped as its parameter (else it is the whole state)."""
    if op_type not in _PER_ELEMENT_STATE:
        raise ValueError(f"Not supported optimizer for distributed training: {op_type}")
    return slot in _PER_ELEMENT_STATE[op_type]


def _check_trainer_id(trainer_id, trainers: int) -> None:
    if isinstance(trainer_id, bool) or not isinstance(trainer_id, int) or not 0 <= trainer_id < trainers:
        raise ValueError(f"trainer_id must be an int in [0, {trainers}). Received: {trainer_id!r}")


def _is_optimizer_op(op) -> bool:
    return "Param" in op.inputs and "LearningRate" in op.inputs


def _role_var(op) -> list:
    return list(op.attrs.get("op_role_var") or [])


def wait_server_ready(endpoints) -> None:
    """Wait until every endpoint accepts connections (fluid's notice every 3 seconds)."""
    while True:
        not_ready = []
        for ep in endpoints:
            host, _, port = ep.rpartition(":")
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
                sock.settimeout(2)
                if sock.connect_ex((host, int(port))) != 0:
                    not_ready.append(ep)
        if not not_ready:
            return
        sys.stderr.write("server not ready, wait 3 sec to retry...\n")
        sys.stderr.write("not ready endpoints:" + str(not_ready) + "\n")
        sys.stderr.flush()
        time.sleep(3)


class DistributeTranspiler:
    """Cuts a training program into trainer and parameter-server programs (pserver mode)."""

    def __init__(self, config=None) -> None:
        self.config = config if config is not None else DistributeTranspilerConfig()
        self._set_server_config()
        if self.config.split_method is None:
            self.config.split_method = RoundRobin
        if self.config.min_block_size < 8192:
            raise ValueError(f"config.min_block_size must be at least 8192. Received: {self.config.min_block_size}")
        if not (isinstance(self.config.split_method, type) and issubclass(self.config.split_method, PSDispatcher)):
            raise TypeError(
                "config.split_method must be a PSDispatcher class (fluid.transpiler.RoundRobin or HashName). "
                f"Received: {self.config.split_method!r}"
            )
        if self.config.sync_mode or self.config.completely_not_async:
            self.distributed_mode = DistributedMode.SYNC
        elif self.config.runtime_split_send_recv:
            self.distributed_mode = DistributedMode.ASYNC
        else:
            self.distributed_mode = DistributedMode.HALF_ASYNC
        self._transpiled = False

    def _set_server_config(self, server_config=None) -> None:
        if server_config is None:
            server_config = ServerRuntimeConfig()
        if not isinstance(server_config, ServerRuntimeConfig):
            raise TypeError(
                "In DistributeTranspiler, server_config must be an instance of ServerRuntimeConfig. "
                f"Received: {type(server_config).__name__}"
            )
        self.server_config = server_config

    # -- transpile ----------------------------------------------------------------------------------
    def transpile(
        self, trainer_id, program=None, pservers="127.0.0.1:6174", trainers=1, sync_mode=True,
        startup_program=None, current_endpoint="127.0.0.1:6174",
    ):  # fmt: skip
        """Rewrite ``program`` (and ``startup_program``) in place into trainer ``trainer_id``'s
        program, and plan the programs of the parameter servers ``pservers``."""
        if self.config.mode == "nccl2":
            self._transpile_nccl2(trainer_id, program, trainers, current_endpoint, startup_program)
            return
        if self.config.mode == "collective":
            raise NotImplementedError(
                "DistributeTranspiler mode 'collective' is not supported by fluidcompat: start the workers "
                "with `fluidcompat launch` and compile the program with "
                "CompiledProgram(program).with_data_parallel(loss_name=...) (collective all-reduce), or use "
                "mode 'nccl2'"
            )
        if self.config.mode != "pserver":
            raise ValueError(f"config.mode must be 'pserver', 'nccl2' or 'collective'. Received: {self.config.mode!r}")
        if self.config.enable_dc_asgd:
            raise NotImplementedError("DistributeTranspiler: config.enable_dc_asgd is not supported by fluidcompat")
        if self.config.geo_sgd_mode:
            raise NotImplementedError(
                "DistributeTranspiler: config.geo_sgd_mode is built by "
                "fluid.transpiler.geo_sgd_transpiler.GeoSgdTranspiler (the fleet's GeoStrategy uses it)"
            )
        if isinstance(trainers, bool) or not isinstance(trainers, int) or trainers < 1:
            raise ValueError(
                f"trainers must be the number of trainers (an int >= 1) in pserver mode. Received: {trainers!r}"
            )
        _check_trainer_id(trainer_id, trainers)
        eps = _endpoint_list(pservers)
        program = default_main_program() if program is None else program
        startup = default_startup_program() if startup_program is None else startup_program
        if not isinstance(program, Program) or not isinstance(startup, Program):
            raise TypeError("transpile: program and startup_program must be fluid Programs")
        if getattr(program, "_is_distributed", False):
            raise ValueError("transpile: this program was transpiled already; transpile the original program once")
        opt_ops, params_grads = self._optimize_pass(program)
        if not params_grads:
            raise ValueError(
                "transpile: the program has no optimizer ops: call optimizer.minimize(loss) on it before transpiling"
            )
        for op in program.global_block().ops:
            if op.type in _LOOKUPS and op.attrs.get("is_distributed"):
                raise NotImplementedError(
                    f"DistributeTranspiler: '{op.input('W')[0]}' is a distributed lookup table (is_distributed=True), "
                    "which fluidcompat does not support; build the embedding with is_distributed=False"
                )
        remote = [op for op in program.global_block().ops if op.type in _LOOKUPS and op.attrs.get("remote_prefetch")]
        for p, g in params_grads:
            if g.type == VarType.SELECTED_ROWS and not any(p.name in op.input("W") for op in remote):
                raise NotImplementedError(
                    f"DistributeTranspiler: the gradient of '{p.name}' is sparse but not that of an is_sparse "
                    "embedding (fluid.layers.embedding / fluid.embedding); fluidcompat's parameter servers take "
                    "those and dense gradients: build the layer with is_sparse=False"
                )
        self.sparse_update_ops = remote
        self.sparse_param_to_height_sections: Dict[str, list] = {}
        self.origin_program, self.startup_program = program, startup
        self.trainer_num, self.trainer_id, self.sync_mode = trainers, trainer_id, bool(sync_mode)
        self.pserver_endpoints = eps
        self.optimize_ops, self.params_grads = opt_ops, params_grads
        self._split_at_runtime = bool(self.config.runtime_split_send_recv)
        if not self.sync_mode and self.distributed_mode == DistributedMode.SYNC and not self._split_at_runtime:
            # NOTE: without the communicator no trainer sends barriers: the servers must not wait for them
            self.distributed_mode = DistributedMode.HALF_ASYNC
        self.param_name_to_grad_name = {p.name: g.name for p, g in params_grads}
        self.grad_name_to_param_name = {g.name: p.name for p, g in params_grads}
        if self.distributed_mode != DistributedMode.SYNC and any(op.type == "increment" for op in self._lr_ops()):
            raise NotImplementedError(
                "DistributeTranspiler: learning-rate decay with asynchronous servers (sync_mode=False) is not "
                "supported by fluidcompat; use a constant learning rate or synchronous training"
            )  # (the servers run the other learning-rate ops, a parameter's own rate, before each update)
        program._is_distributed = True
        program._endpoints = eps
        program._ps_endpoint = current_endpoint
        program._is_chief = trainer_id == 0
        program._distributed_lookup_table = None
        self._init_split_vars()
        self._insert_trainer_rpc(program)
        # the variables the server programs copy, kept from the trainer program's clean-up
        self._origin_vars = dict(program.global_block().vars)
        self._startup_ops = list(startup.global_block().ops)
        program._parameters_on_pservers = self._distributed_vars()
        self._transpiled = True

    def _distributed_vars(self) -> List[dict]:
        """Where each variable the servers hold lives: per parameter, sparse table or optimizer state,
        its name, shape, kind and slices (endpoint, name there, shape, first row), for saving and
        loading a job's persistables as fluid's io did."""
        entries = {}
        for pname, splits in self.param_var_mapping.items():
            var, rows, slices = self._origin_vars[pname], 0, []
            for v in splits:
                slices.append((self._recv_ep[v.name], v.name, list(v.shape), rows))
                rows += v.shape[0]
            kind = "RemotePrefetch" if pname in self.sparse_param_to_height_sections else "Param"
            entries[pname] = {"name": pname, "shape": list(var.shape), "dtype": var.dtype, "vtype": kind,
                              "is_slice": len(splits) > 1, "slices": slices}  # fmt: skip
        for op in self.optimize_ops:
            if not _is_optimizer_op(op) or op.input("Param")[0] not in entries:
                continue
            param = entries[op.input("Param")[0]]
            for slot, names in op.inputs.items():
                if not names or slot in _NOT_STATE:
                    continue
                v = self._origin_vars[names[0]]
                per_row = _per_element_state(op.type, slot)
                if per_row:
                    slices = [(ep, v.name, shape, row) for ep, _, shape, row in param["slices"]]
                else:
                    slices = [(ep, v.name, list(v.shape), 0) for ep in dict.fromkeys(s[0] for s in param["slices"])]
                entries[v.name] = {"name": v.name, "shape": list(v.shape), "dtype": v.dtype, "vtype": "Optimizer",
                                   "is_slice": per_row and param["is_slice"], "slices": slices}  # fmt: skip
        return list(entries.values())

    def _transpile_nccl2(self, trainer_id, program, trainers, current_endpoint, startup_program) -> None:
        """nccl2 mode: the startup program gets fluid's ``gen_nccl_id`` op, which here joins the
        torch.distributed group of the workers `fluidcompat launch` started; the program then trains
        data-parallel through ParallelExecutor(num_trainers=..., trainer_id=...) or
        CompiledProgram.with_data_parallel."""
        if not isinstance(trainers, str) or not trainers.strip():
            raise ValueError(f"in nccl2 mode trainers is the trainers' 'ip:port' list. Received: {trainers!r}")
        eps = _endpoint_list(trainers)
        _check_trainer_id(trainer_id, len(eps))
        if current_endpoint not in eps:
            raise ValueError(f"current_endpoint '{current_endpoint}' is not one of the trainers {eps}")
        program = default_main_program() if program is None else program
        startup = default_startup_program() if startup_program is None else startup_program
        program._trainers_endpoints = eps
        program._nccl_comm_num = self.config.nccl_comm_num
        program._use_hierarchical_allreduce = self.config.use_hierarchical_allreduce
        sb = startup.global_block()
        nccl_id = sb.create_var(name="NCCLID", persistable=True, type=VarType.RAW)
        for i in range(1, self.config.nccl_comm_num):
            sb.create_var(name=f"NCCLID_{i}", persistable=True, type=VarType.RAW)
        sb.append_op(
            "gen_nccl_id", {}, {"NCCLID": [nccl_id.name]},
            {"trainers": eps, "trainer_id": trainer_id, "nccl_comm_num": self.config.nccl_comm_num,
             "use_hierarchical_allreduce": self.config.use_hierarchical_allreduce,
             "hierarchical_allreduce_inter_nranks": self.config.hierarchical_allreduce_inter_nranks},
        )  # fmt: skip

    def _optimize_pass(self, program):
        """The optimize-role ops, and the (param, grad) pairs they update (each param once).
        Gradient-clipping ops become backward ops: they stay with the trainer."""
        opt_ops, params_grads, seen = [], [], set()
        gvars = program.global_block().vars
        for op in program.global_block().ops:
            if op.attrs.get("op_role", 0) != OpRole.Optimize:
                continue
            if "gradient_clip" in (op.attrs.get("op_namescope") or ""):
                op._set_attr("op_role", OpRole.Backward)
                continue
            opt_ops.append(op)
            rv = _role_var(op)
            if len(rv) >= 2 and rv[0] not in seen and rv[0] in gvars and rv[1] in gvars:
                seen.add(rv[0])
                params_grads.append((gvars[rv[0]], gvars[rv[1]]))
        return opt_ops, params_grads

    def _init_split_vars(self) -> None:
        program = self.origin_program
        params, grads, names = [], [], set()
        for p, g in self.params_grads:
            if isinstance(p, Parameter) and not p.trainable:
                continue
            for v, into in ((p, params), (g, grads)):
                if v.name not in names:
                    names.add(v.name)
                    into.append(v)
        count = len(self.pserver_endpoints) if self.config.slice_var_up else 1
        grad_blocks = slice_variable(grads, count, self.config.min_block_size)
        param_blocks = slice_variable(params, count, self.config.min_block_size)
        self.param_var_mapping = self._split_vars(program, param_blocks, False)
        self.grad_var_mapping = self._split_vars(program, grad_blocks, self.trainer_num > 1)
        self.grad_param_mapping = collections.OrderedDict()
        for (g, gi, _), (p, pi, _) in zip(grad_blocks, param_blocks):
            self.grad_param_mapping[self.grad_var_mapping[g][gi].name] = self.param_var_mapping[p][pi]
        self.param_grad_ep_mapping = collections.OrderedDict(
            (ep, {"params": [], "grads": []}) for ep in self.pserver_endpoints
        )

    def _split_vars(self, program, blocks, trainer_suffix: bool):
        """name -> the variables of its blocks (the variable itself, renamed per trainer for a
        gradient in sync training, when it is one block)."""
        gb = program.global_block()
        by_name: Dict[str, list] = collections.OrderedDict()
        for name, _, size in blocks:
            by_name.setdefault(name, []).append(size)
        mapping = collections.OrderedDict()
        suffix = trainer_suffix and self.sync_mode
        for name, sizes in by_name.items():
            var = gb.var(name)
            if len(sizes) == 1:
                new = f"{name}.trainer_{self.trainer_id}" if suffix else name
                mapping[name] = [gb._rename_var(name, new) if new != name else var]
                continue
            row = reduce(lambda a, b: a * b, var.shape[1:], 1) if len(var.shape) >= 2 else 1
            mapping[name] = [
                gb.create_var(
                    name=f"{name}.block{i}" + (f".trainer_{self.trainer_id}" if suffix else ""),
                    persistable=False,
                    dtype=var.dtype,
                    type=var.type,
                    shape=[size // row] + list(var.shape[1:]),
                )
                for i, size in enumerate(sizes)
            ]
        return mapping

    def _insert_trainer_rpc(self, program) -> None:
        """After each gradient's last writer: its send (cut first when in blocks; whole, its blocks
        named, when the communicator cuts it); then the barrier, the parameters' recv, the fetch
        barrier and the concat of cut parameters; and the startup program's recv of the servers'
        initial values."""
        block = program.global_block()
        tid, eps = self.trainer_id, self.pserver_endpoints
        dispatcher = self.config.split_method(eps)
        items = list(self.grad_var_mapping.items())
        if not self.config.slice_var_up:
            import numpy as np

            np.random.RandomState(program.random_seed).shuffle(items)
        send_vars, sent_by = [], collections.OrderedDict()
        for grad_name, splits in items:
            eplist = dispatcher.dispatch(splits)
            sent = splits[0].name if len(splits) == 1 else grad_name
            index = next((i for i in range(len(block.ops) - 1, -1, -1) if sent in block.ops[i].output_arg_names), -1)
            sections = [v.shape[0] for v in splits]
            param = self.grad_name_to_param_name[grad_name]
            sparse = splits[0].type == VarType.SELECTED_ROWS
            if sparse:
                self.sparse_param_to_height_sections[param] = sections
            if len(splits) > 1 and not self._split_at_runtime:
                block._insert_op(
                    index + 1, "split_selected_rows" if sparse else "split_byref", {"X": [grad_name]},
                    {"Out": [v.name for v in splits]},
                    {"height_sections" if sparse else "sections": sections, "op_role": OpRole.Dist},
                )  # fmt: skip
                index += 1
            dummy = block.create_var(name=generate_control_dev_var_name())
            sent_by[grad_name] = dummy
            ins, names = [v.name for v in splits], []
            if self._split_at_runtime:
                ins, names = [sent], [v.name for v in splits]
                if self.config.completely_not_async and self.trainer_num > 1:
                    names = [f"{n}.trainer_{tid}" for n in names]
            block._insert_op(
                index + 1, "send", {"X": ins}, {"Out": [dummy.name]},
                {"epmap": eplist, "sections": sections if names else [], "send_varnames": names,
                 "op_role": OpRole.RPC, "op_role_var": [self.grad_name_to_param_name[grad_name], sent]},
            )  # fmt: skip
            send_vars.extend(splits)
        barrier_out = block.create_var(name=generate_control_dev_var_name())
        if self.sync_mode:
            block.append_op(
                "send_barrier", {"X": [v.name for v in sent_by.values()]}, {"Out": [barrier_out.name]},
                {"endpoints": eps, "trainer_id": tid, "half_async": False, "op_role": OpRole.RPC},
            )  # fmt: skip
        elif self._split_at_runtime and self.config.half_async:  # the communicator's barrier
            block.append_op(
                "send_barrier", {"X": [v.name for v in sent_by.values()]}, {"Out": [barrier_out.name]},
                {"endpoints": eps, "trainer_id": tid, "half_async": True, "op_role": OpRole.RPC},
            )  # fmt: skip
        recv_vars = [self.grad_param_mapping[v.name] for v in send_vars]
        dispatcher.reset()
        eplist = dispatcher.dispatch(recv_vars)
        for ep, p, g in zip(eplist, recv_vars, send_vars):
            self.param_grad_ep_mapping[ep]["params"].append(p)
            self.param_grad_ep_mapping[ep]["grads"].append(g)
        self._recv_ep = {p.name: ep for p, ep in zip(recv_vars, eplist)}
        received, remote_tables = [], {}
        for pname, splits in self.param_var_mapping.items():
            if pname in self.sparse_param_to_height_sections:  # looked up on the servers, never received
                remote_tables[pname] = ([self._recv_ep[v.name] for v in splits], [v.name for v in splits])
                continue
            gname = self.param_name_to_grad_name[pname]
            dep = barrier_out if self.sync_mode else sent_by[gname]
            gsplits = self.grad_var_mapping[gname]
            received.extend(splits)
            outs, names = [v.name for v in splits], []
            if self._split_at_runtime:
                outs, names = [pname], [v.name for v in splits]
            block.append_op(
                "recv", {"X": [dep.name]}, {"Out": outs},
                {"epmap": [self._recv_ep[v.name] for v in splits], "recv_varnames": names, "trainer_id": tid,
                 "op_role": OpRole.RPC, "op_role_var": [pname, gname if len(gsplits) > 1 else gsplits[0].name]},
            )  # fmt: skip
        if self.sync_mode:
            block.append_op(
                "fetch_barrier", {"X": [barrier_out.name]}, {"Out": [v.name for v in received]},
                {"endpoints": eps, "trainer_id": tid, "op_role": OpRole.RPC},
            )  # fmt: skip
        for pname, splits in self.param_var_mapping.items():
            if len(splits) > 1 and pname not in remote_tables and not self._split_at_runtime:
                block.append_op(
                    "concat", {"X": [v.name for v in splits]}, {"Out": [pname]}, {"axis": 0, "op_role": OpRole.Dist}
                )
        self._remote_lookups(block, remote_tables)
        self._trainer_startup()

    def _remote_lookups(self, block, remote_tables) -> None:
        """Each sparse table's lookup ops become one ``distributed_lookup_table`` op, placed after the
        last writer of their ids: the rows come from the servers holding the table's blocks."""
        for pname, (eps, table_names) in remote_tables.items():
            ops = [op for op in self.sparse_update_ops if pname in op.input("W")]
            kinds = {op.type for op in ops}
            if len(kinds) != 1:
                raise NotImplementedError(
                    f"DistributeTranspiler: the sparse table '{pname}' is looked up by both lookup_table and "
                    "lookup_table_v2 ops; build its embeddings with one API"
                )
            ids = [op.input("Ids")[0] for op in ops]
            outs = [op.output("Out")[0] for op in ops]
            padding_idx = ops[0].attrs.get("padding_idx", -1)
            for op in ops:
                block._remove_op(next(i for i, o in enumerate(block.ops) if o is op))
            last_in = max((i for i, op in enumerate(block.ops) if set(ids) & set(op.output_arg_names)), default=-1)
            first_out = min((i for i, op in enumerate(block.ops) if set(outs) & set(op.input_arg_names)),
                            default=len(block.ops))  # fmt: skip
            if first_out <= last_in:
                raise ValueError(
                    f"DistributeTranspiler: an op reads the lookup of '{pname}' before its ids are computed"
                )
            block._insert_op(
                last_in + 1, "distributed_lookup_table", {"Ids": ids, "W": [pname]}, {"Outputs": outs},
                {"table_names": table_names, "height_sections": self.sparse_param_to_height_sections[pname],
                 "endpoints": eps, "padding_idx": padding_idx, "trainer_id": self.trainer_id,
                 "lookup_table_version": ops[0].type},
            )  # fmt: skip

    def _trainer_startup(self) -> None:
        sb = self.startup_program.global_block()
        tid = self.trainer_id
        for pname, splits in self.param_var_mapping.items():
            if pname in self.sparse_param_to_height_sections:
                continue
            for v in splits:
                if not sb.has_var(v.name):
                    sb.create_var(name=v.name, persistable=False, type=v.type, dtype=v.dtype, shape=v.shape,
                                  lod_level=v.lod_level)  # fmt: skip
            sb.append_op(
                "recv", {"X": []}, {"Out": [v.name for v in splits]},
                {"epmap": [self._recv_ep[v.name] for v in splits], "trainer_id": tid, "op_role": OpRole.RPC},
            )  # fmt: skip
        out = sb.create_var(name=generate_control_dev_var_name())
        sb.append_op(
            "fetch_barrier", {"X": []}, {"Out": [out.name]},
            {"endpoints": self.pserver_endpoints, "trainer_id": self.trainer_id, "op_role": OpRole.RPC},
        )  # fmt: skip
        for pname, splits in self.param_var_mapping.items():
            if len(splits) > 1 and pname not in self.sparse_param_to_height_sections:
                if not sb.has_var(pname):
                    v = self.origin_program.global_block().var(pname)
                    sb.create_var(name=pname, persistable=v.persistable, type=v.type, dtype=v.dtype, shape=v.shape)
                sb.append_op("concat", {"X": [v.name for v in splits]}, {"Out": [pname]}, {"axis": 0})

    def _check_transpiled(self, what: str) -> None:
        if not self._transpiled:
            raise RuntimeError(f"{what}: call transpile(...) first")

    def _lr_ops(self) -> list:
        """The learning-rate scheduling ops of the original program."""
        lr = {OpRole.LRSched, OpRole.LRSched | OpRole.Optimize}
        return [op for op in self.origin_program.global_block().ops if op.attrs.get("op_role", 0) in lr]

    # -- trainer ------------------------------------------------------------------------------------
    def get_trainer_program(self, wait_port=True):
        """The trainer's program: the original one without its optimizer and learning-rate ops (the
        servers run them), with the send / recv ops; waits for the servers when ``wait_port``."""
        self._check_transpiled("get_trainer_program")
        block = self.origin_program.global_block()
        dead = self._optimizer_only_vars()
        sb = self.startup_program.global_block()
        for i in reversed(range(len(sb.ops))):
            if dead.intersection(sb.ops[i].output_arg_names):
                sb._remove_op(i)
        for n in dead:
            if sb.has_var(n):
                sb._remove_var(n)
        self._fake_init_sparse_tables(sb)
        gone = set(map(id, self._lr_ops())) | set(map(id, self.optimize_ops))
        for i in reversed(range(len(block.ops))):
            if id(block.ops[i]) in gone:
                block._remove_op(i)
        for n in dead:
            if block.has_var(n):
                block._remove_var(n)
        if wait_port:
            wait_server_ready(self.pserver_endpoints)
        return self.origin_program

    def _fake_init_sparse_tables(self, sb) -> None:
        """A sparse table lives on the servers: the trainer's startup only gives it its shape
        (``fake_init``) in place of its initializer."""
        for name in self.sparse_param_to_height_sections:
            inits = [i for i, op in enumerate(sb.ops) if name in op.output_arg_names and op.type != "fake_init"]
            if not inits:
                continue
            if len(inits) != 1:
                raise ValueError(f"table init op num should be 1, now is {len(inits)} (table '{name}')")
            shape = list(sb.ops[inits[0]].attrs.get("shape") or sb.var(name).shape)
            sb._remove_op(inits[0])
            sb.append_op("fake_init", {}, {"Out": [name]}, {"shape": shape})

    def _optimizer_only_vars(self) -> set:
        """Inputs of the optimizer ops that are not the parameters or gradients they update."""
        ins = {n for op in self.optimize_ops for n in op.input_arg_names}
        return ins - {n for op in self.optimize_ops for n in _role_var(op)}

    # -- parameter server ---------------------------------------------------------------------------
    def _check_endpoint(self, endpoint) -> None:
        self._check_transpiled("get_pserver_program")
        if endpoint not in self.param_grad_ep_mapping:
            raise ValueError(f"endpoint '{endpoint}' is not one of the pservers {self.pserver_endpoints}")

    def get_pserver_program(self, endpoint):
        """The program of the server at ``endpoint``: its parameter and gradient blocks, one
        optimize block per parameter block (gradients of the trainers averaged, then the update
        ops), the learning-rate block, and the ``listen_and_serv`` op that serves them."""
        self._check_endpoint(endpoint)
        prog = Program()
        prog.random_seed = self.origin_program.random_seed
        prog._is_distributed = True
        prog._ps_endpoint = endpoint
        prog._parameters_on_pservers = self.origin_program._parameters_on_pservers
        gb = prog.global_block()
        mapping = self.param_grad_ep_mapping[endpoint]
        recv_inputs = []
        for v in mapping["params"]:
            gb.create_var(
                name=v.name, shape=v.shape, dtype=v.dtype, type=v.type, lod_level=v.lod_level, persistable=True
            )
        for v in mapping["grads"]:
            name = v.name[: v.name.find(".trainer_")] if ".trainer_" in v.name else v.name
            single = gb.create_var(name=name, persistable=True, type=v.type, dtype=v.dtype, shape=v.shape)
            if self._merges():
                recv_inputs.extend(
                    gb.create_var(
                        name=f"{name}.trainer_{t}", persistable=False, type=v.type, dtype=v.dtype, shape=v.shape
                    )
                    for t in range(self.trainer_num)
                )
            else:
                recv_inputs.append(single)
        lr_ops = self._lr_ops()
        optimize_blocks, lr_decay_block_id = [], -1
        if lr_ops:
            lr_block = prog._create_block(prog.num_blocks - 1)
            optimize_blocks.append(lr_block)
            for op in lr_ops:
                self._clone_lr_op(lr_block, op)
            lr_decay_block_id = lr_block.idx
        grad_to_block_id: List[str] = []
        sparse_grad_to_param: List[str] = []
        parent = prog.num_blocks - 1
        for opt_op in [op for op in self.optimize_ops if _is_optimizer_op(op) and self._on_server(endpoint, op)]:
            blk = prog._create_block(parent)
            optimize_blocks.append(blk)
            target = _role_var(opt_op)[0]
            related = [op for op in self.optimize_ops if _role_var(op)[:1] == [target]]
            merged = None
            for op in related:
                merged = self._append_grad_merge(blk, _role_var(op)[1], endpoint, grad_to_block_id)
                if merged is not None:
                    break
            if merged is None:
                continue
            for op in related:
                if _is_optimizer_op(op):
                    entry = self._append_update_op(blk, op, endpoint, merged)
                    if entry:
                        sparse_grad_to_param.append(entry)
                elif all(op is not o for o in lr_ops):
                    self._append_other_op(blk, op)
        if not optimize_blocks:
            warnings.warn(f"pserver [{endpoint}] has no optimize block!!", stacklevel=2)
            optimize_blocks.append(prog._create_block(prog.num_blocks - 1))
        prog.current_block_idx = 0
        gb.append_op(
            "listen_and_serv", {"X": [v.name for v in recv_inputs]}, {},
            {"optimize_blocks": [b.idx for b in optimize_blocks], "endpoint": endpoint,
             "pserver_id": self.pserver_endpoints.index(endpoint), "Fanin": self.trainer_num,
             "distributed_mode": self.distributed_mode, "grad_to_block_id": list(dict.fromkeys(grad_to_block_id)),
             "sparse_grad_to_param": sparse_grad_to_param, "lr_decay_block_id": lr_decay_block_id,
             "rpc_get_thread_num": self.server_config._rpc_get_thread_num,
             "rpc_send_thread_num": self.server_config._rpc_send_thread_num,
             "rpc_prefetch_thread_num": self.server_config._rpc_prefetch_thread_num},
        )  # fmt: skip
        return prog

    def _merges(self) -> bool:
        """Whether a server sums the trainers' gradients (one variable per trainer)."""
        return self.sync_mode or (self.config.completely_not_async and self.trainer_num > 1)

    def _on_server(self, endpoint, op) -> bool:
        param = op.input("Param")[0]
        return any(_same_or_split(p.name, param) for p in self.param_grad_ep_mapping[endpoint]["params"])

    def _append_grad_merge(self, blk, grad_name, endpoint, grad_to_block_id):
        gb = blk.program.global_block()
        grad = next(
            (g for g in self.param_grad_ep_mapping[endpoint]["grads"] if _orig_name(g.name) == _orig_name(grad_name)),
            None,
        )
        if grad is None:
            return None
        orig, part, _ = _name_parts(grad.name)
        merged = gb.var(f"{orig}.{part}" if part else orig)
        grad_to_block_id.append(f"{merged.name}:{blk.idx}")
        if self._merges():
            blk.append_op(
                "sum", {"X": [f"{merged.name}.trainer_{i}" for i in range(self.trainer_num)]}, {"Out": [merged.name]}
            )
            blk.append_op(
                "scale", {"X": [merged.name]}, {"Out": [merged.name]}, {"scale": 1.0 / float(self.trainer_num)}
            )
        return merged

    def _append_update_op(self, blk, op, endpoint, merged) -> Optional[str]:
        """The update op of ``endpoint``'s block of its parameter; for a sparse gradient, its
        ``sparse_grad_to_param`` entry."""
        gb, origin = blk.program.global_block(), self._origin_vars
        param = next(
            (p for p in self.param_grad_ep_mapping[endpoint]["params"] if _same_or_split(p.name, op.input("Param")[0])),
            None,
        )
        if param is None:
            return None
        ins = {}
        for slot, names in op.inputs.items():
            if not names:
                continue
            if slot == "Grad":
                ins[slot] = [merged.name]
            elif slot == "Param":
                gb.create_var(name=param.name, persistable=True, dtype=param.dtype, shape=param.shape)
                ins[slot] = [param.name]
            elif slot == "LearningRate":
                if not gb.has_var(names[0]):
                    v = origin[names[0]]
                    gb.create_var(name=v.name, persistable=v.persistable, dtype=v.dtype, shape=v.shape)
                ins[slot] = [names[0]]
        for slot, names in op.inputs.items():
            if not names or slot in _NOT_STATE:
                continue
            v = origin[names[0]]
            shape = param.shape if _per_element_state(op.type, slot) else v.shape
            gb.create_var(name=v.name, persistable=v.persistable, dtype=v.dtype, shape=shape)
            ins[slot] = [v.name]
        outs = {slot: list(names) for slot, names in op.outputs.items()}
        outs["ParamOut"] = [param.name]
        blk.append_op(op.type, ins, outs, op.all_attrs())
        return f"{merged.name}:{param.name}" if merged.type == VarType.SELECTED_ROWS else None

    def _server_var(self, gb, name: str):
        """The server's block of a parameter or gradient named ``name`` (its own name when not cut),
        or None for other variables."""
        for v in gb.vars.values():
            if ".trainer_" in v.name or _orig_name(v.name) != _orig_name(name):
                continue
            if _orig_name(v.name) in self.grad_name_to_param_name or _orig_name(v.name) in self.param_name_to_grad_name:
                return v
        return None

    def _append_other_op(self, blk, op) -> None:
        """An optimize-role op that is not an update (regularization): on the server's blocks."""
        gb = blk.program.global_block()

        def names(slots):
            result = {}
            for slot, vs in slots.items():
                result[slot] = []
                for n in vs:
                    found = self._server_var(gb, n)
                    if found is None and not gb.has_var(n):
                        found = gb._clone_variable(self._origin_vars[n])
                    result[slot].append(found.name if found is not None else n)
            return result

        blk.append_op(op.type, names(op.inputs), names(op.outputs), op.all_attrs())

    def _clone_lr_op(self, blk, op) -> None:
        """A learning-rate op into the server's ``blk`` (its variables into the server's global block)."""
        if "sub_block" in op.attrs:
            raise NotImplementedError(
                f"DistributeTranspiler: the learning-rate op '{op.type}' runs a sub-block (Switch / cond), "
                "which fluidcompat does not move to the parameter servers; fluid.layers' schedules "
                "(piecewise_decay included) have none"
            )
        gb = blk.program.global_block()
        for n in op.input_arg_names + op.output_arg_names:
            v = self._origin_vars.get(n)
            if v is not None and not gb.has_var(n):
                gb._clone_variable(v)
        attrs = op.all_attrs()
        blk.append_op(
            op.type, {k: list(v) for k, v in op.inputs.items()}, {k: list(v) for k, v in op.outputs.items()}, attrs
        )

    def get_pserver_programs(self, endpoint):
        """(main, startup) programs of the server at ``endpoint``."""
        prog = self.get_pserver_program(endpoint)
        return prog, self.get_startup_program(endpoint, pserver_program=prog)

    def get_startup_program(self, endpoint, pserver_program=None, startup_program=None):
        """The startup program of the server at ``endpoint``: the original initializer ops of the
        variables it holds, shaped to its blocks."""
        self._check_endpoint(endpoint)
        if pserver_program is None:
            pserver_program = self.get_pserver_program(endpoint)
        orig = self.startup_program if startup_program is None else startup_program
        orig_ops = self._startup_ops if startup_program is None else orig.global_block().ops
        s = Program()
        s.random_seed = orig.random_seed
        sb = s.global_block()
        params = self.param_grad_ep_mapping[endpoint]["params"]
        pvars = pserver_program.global_block().vars
        for v in pvars.values():
            sb._clone_variable(v)
        for op in orig_ops:
            if op.type in ("recv", "fetch_barrier", "concat"):
                continue
            outs = {}
            for slot, names in op.outputs.items():
                if not names:
                    continue
                split = next((p.name for p in params if _same_or_split(p.name, names[0]) and p.name != names[0]), "")
                if split:
                    outs[slot] = [split]
                elif names[0] in pvars:
                    outs[slot] = [names[0]]
            if not outs:
                continue
            attrs = op.all_attrs()
            if op.type in ("gaussian_random", "fill_constant", "uniform_random", "truncated_gaussian_random"):
                attrs["shape"] = list(sb.var(outs["Out"][0]).shape)
            sb.append_op(op.type, {k: list(v) for k, v in op.inputs.items()}, outs, attrs)
        return s
