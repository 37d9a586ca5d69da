"""``fluid.incubate.fleet.parameter_server.pslib``: fluid 1.8's fleet over PSLib, Baidu's C++
parameter server (``fleet``, a ``PSLib``; ``DownpourOptimizer``; ``fleet_embedding``, whose
embeddings are PSLib tables). PSLib is not part of fluidcompat (fluid 1.8 had it only when built
WITH_PSLIB): the module imports, ``fleet.init`` takes a role maker (by default an
MPISymetricRoleMaker, which needs mpi4py, as fluid's did), ``fleet_embedding`` builds its
``pull_sparse`` ops and ``_prepare_params`` checks an embedding as fluid did; what needs PSLib itself
(``minimize``, the servers, saving and loading tables, running a ``pull_sparse``) raises
PSLibUnavailableError (an ImportError) saying so and naming what to use instead: the
parameter-server fleet of ``fluid.incubate.fleet.parameter_server.distribute_transpiler``."""

from __future__ import annotations

import sys

import fluidcompat as fluid
from fluidcompat.incubate.fleet.base.fleet_base import DistributedOptimizer, Fleet, Mode
from fluidcompat.incubate.fleet.base.role_maker import MPISymetricRoleMaker
from fluidcompat.incubate.fleet.parameter_server.pslib import optimizer_factory
from fluidcompat.incubate.fleet.parameter_server.pslib.optimizer_factory import (
    FLEET_GLOBAL_DICT,
    DistributedAdam,
    PSLibUnavailableError,
    unavailable,
)

__all__ = [
    "PSLib", "fleet", "DownpourOptimizer", "fleet_embedding", "DistributedAdam", "FLEET_GLOBAL_DICT",
    "PSLibUnavailableError",
]  # fmt: skip


class PSLib(Fleet):
    """The PSLib fleet: ``init`` and the role queries work; the rest needs PSLib."""

    def __init__(self) -> None:
        super().__init__(Mode.PSLIB)
        self._opt_info = None
        self._local_ip = 0
        self._fleet_ptr = None
        self._main_programs = []
        self._scopes = []
        self._client2client_request_timeout_ms = 500000
        self._client2client_connect_timeout_ms = 10000
        self._client2client_max_retry = 3

    def init(self, role_maker=None) -> None:
        """``role_maker`` (default: an MPISymetricRoleMaker, which needs mpi4py) gives this process's role."""
        if role_maker is None:
            role_maker = MPISymetricRoleMaker()
        super().init(role_maker)
        self._fleet_ptr = fluid.core.Fleet()

    def _set_client_communication_config(self, request_timeout_ms, connect_timeout_ms, max_retry) -> None:
        self._client2client_request_timeout_ms = request_timeout_ms
        self._client2client_connect_timeout_ms = connect_timeout_ms
        self._client2client_max_retry = max_retry

    def _set_opt_info(self, opt_info) -> None:
        self._opt_info = opt_info

    def _minimized(self, what: str) -> None:
        """fluid's check that minimize ran (it never does here: minimize needs PSLib)."""
        if not self._main_programs or not self._opt_info:
            raise ValueError(f"You should run DistributedOptimizer.minimize() first (before fleet.{what})")

    def init_worker(self) -> None:
        self._minimized("init_worker()")
        raise unavailable("fleet.init_worker()")

    def run_server(self) -> None:
        self._minimized("run_server()")
        raise unavailable("fleet.run_server()")

    def init_server(self, model_dir=None, **kwargs) -> None:
        raise unavailable("fleet.init_server()")

    def stop_worker(self) -> None:
        raise unavailable("fleet.stop_worker()")

    def distributed_optimizer(self, optimizer, strategy={}) -> "DownpourOptimizer":  # noqa: B006  (fluid's default)
        self._optimizer = DownpourOptimizer(optimizer, strategy)
        return self._optimizer

    def set_pull_local_thread_num(self, thread_num) -> None:
        raise unavailable("fleet.set_pull_local_thread_num()")

    def save_inference_model(self, executor, dirname, feeded_var_names=None, target_vars=None, main_program=None,
                             export_for_deployment=True):  # fmt: skip
        raise unavailable("fleet.save_inference_model() (PSLib's tables)")

    def save_persistables(self, executor, dirname, main_program=None, **kwargs):
        raise unavailable("fleet.save_persistables() (PSLib's tables)")

    def save_model_with_whitelist(self, executor, dirname, whitelist_path, main_program=None, **kwargs):
        raise unavailable("fleet.save_model_with_whitelist()")

    def save_cache_model(self, executor, dirname, main_program=None, **kwargs):
        raise unavailable("fleet.save_cache_model()")

    def print_table_stat(self, table_id):
        raise unavailable("fleet.print_table_stat()")

    def shrink_sparse_table(self):
        raise unavailable("fleet.shrink_sparse_table()")

    def shrink_dense_table(self, decay, emb_dim=11, scope=None, table_id=None):
        raise unavailable("fleet.shrink_dense_table()")

    def clear_one_table(self, table_id):
        raise unavailable("fleet.clear_one_table()")

    def clear_model(self):
        raise unavailable("fleet.clear_model()")

    def load_pslib_whitelist(self, table_id, model_path, **kwargs):
        raise unavailable("fleet.load_pslib_whitelist()")

    def load_one_table(self, table_id, model_path, **kwargs):
        raise unavailable("fleet.load_one_table()")

    def confirm(self):
        raise unavailable("fleet.confirm()")

    def revert(self):
        raise unavailable("fleet.revert()")

    def load_model(self, model_dir=None, **kwargs):
        raise unavailable("fleet.load_model()")

    def save_model(self, model_dir=None, **kwargs):
        raise unavailable("fleet.save_model()")

    def save_one_table(self, table_id, model_dir, **kwargs):
        raise unavailable("fleet.save_one_table()")


fleet = PSLib()


def _pull_sparse(input, size, table_id, accessor_class, name="embedding", ctr_label_name="", padding_id=0,
                 dtype="float32", scale_sparse_grad=True, v2=False):  # fmt: skip
    """``fluid.layers.nn._pull_sparse`` (``_pull_sparse_v2`` with ``v2``): a ``pull_sparse`` op looking
    ``input``'s ids up in PSLib table ``table_id``; ``W`` is a placeholder named ``name`` of shape
    [size]. One output per input."""
    from fluidcompat.framework import default_main_program
    from fluidcompat.layer_helper import LayerHelper

    helper = LayerHelper(name)
    inputs = list(input) if isinstance(input, (list, tuple)) else [input]
    outs = [helper.create_variable_for_type_inference(dtype) for _ in inputs]
    gb = default_main_program().global_block()
    w = gb.var(name) if gb.has_var(name) else gb.create_var(name=name, shape=[size], dtype=dtype, persistable=True)
    attrs = {"EmbeddingDim": size, "TableId": table_id, "AccessorClass": accessor_class,
             "CtrLabelName": ctr_label_name, "PaddingId": padding_id, "ScaleSparseGrad": scale_sparse_grad,
             "InputNames": [i.name for i in inputs], "is_distributed": True}  # fmt: skip
    helper.append_op(
        type="pull_sparse_v2" if v2 else "pull_sparse",
        inputs={"Ids": inputs, "W": [w]},
        outputs={"Out": outs},
        attrs=attrs,
    )
    return outs[0] if len(outs) == 1 else outs


def _prepare_params(input, size, is_sparse=False, is_distributed=False, padding_idx=None, param_attr=None,
                    dtype="float32"):  # fmt: skip
    """Check an embedding declared in a fleet_embedding and record its table (a new id for a new
    name), accessor and size in FLEET_GLOBAL_DICT."""
    if param_attr is None:
        raise ValueError("param_attr must be set")
    name = param_attr.name
    if name is None:
        raise ValueError("embedding name must be set")
    if not isinstance(size, (list, tuple)):
        raise ValueError(f"embedding size must be list or tuple. Received: {size!r}")
    size = size[-1]
    d = FLEET_GLOBAL_DICT
    d["enable"] = True
    known = d["emb_to_size"].setdefault(name, size)
    if known != size:
        raise ValueError(f"embedding size error: {size} vs {known}")
    accessor = d["emb_to_accessor"].setdefault(name, d["cur_accessor"])
    if accessor != d["cur_accessor"]:
        raise ValueError(f"embedding accessor error: {accessor} vs {d['cur_accessor']}")
    if d["emb_to_table"].get(name) is None:
        d["emb_to_table"][name] = d["cur_sparse_id"]
        d["cur_sparse_id"] += 1
    if not is_sparse:
        raise ValueError("is_sparse must be True")
    if not is_distributed:
        raise ValueError("is_distributed must be True")
    if dtype != "float32":
        raise ValueError(f"dtype must be float32. Received: {dtype!r}")


def _embedding(v2, input, size, is_sparse, is_distributed, padding_idx, param_attr, dtype):
    _prepare_params(input, size, is_sparse, is_distributed, padding_idx, param_attr, dtype)
    name = param_attr.name
    d = FLEET_GLOBAL_DICT
    return _pull_sparse(
        input, size[-1], d["emb_to_table"][name], d["emb_to_accessor"][name], name=name,
        ctr_label_name=d["click_name"], padding_id=0 if padding_idx is None else padding_idx, dtype=dtype,
        scale_sparse_grad=d["scale_sparse_grad"], v2=v2,
    )  # fmt: skip


def _fleet_embedding(input, size, is_sparse=False, is_distributed=False, padding_idx=None, param_attr=None,
                     dtype="float32"):  # fmt: skip
    """``fluid.layers.embedding`` inside a fleet_embedding: a PSLib table's ``pull_sparse``."""
    return _embedding(False, input, size, is_sparse, is_distributed, padding_idx, param_attr, dtype)


def _fleet_embedding_v2(input, size, is_sparse=False, is_distributed=False, padding_idx=None, param_attr=None,
                        dtype="float32"):  # fmt: skip
    """``fluid.embedding`` inside a fleet_embedding: a PSLib table's ``pull_sparse_v2``."""
    return _embedding(True, input, size, is_sparse, is_distributed, padding_idx, param_attr, dtype)


class fleet_embedding:  # noqa: N801  (fluid's name)
    """``with fleet_embedding(click_name=label.name): fluid.layers.embedding(...)``: inside, the
    embeddings (``fluid.layers.embedding`` and ``fluid.embedding``) are PSLib tables."""

    def __init__(self, click_name, scale_sparse_grad=True) -> None:
        self.origin_emb = fluid.layers.embedding
        self.origin_emb_v2 = fluid.embedding
        self.click_name = "" if click_name is None else click_name
        self.scale_sparse_grad = scale_sparse_grad
        self.accessor = "DownpourCtrAccessor"

    def __enter__(self):
        fluid.layers.embedding = _fleet_embedding
        fluid.embedding = _fleet_embedding_v2
        FLEET_GLOBAL_DICT.update(cur_accessor=self.accessor, click_name=self.click_name,
                                 scale_sparse_grad=self.scale_sparse_grad)  # fmt: skip

    def __exit__(self, exc_type, exc_val, exc_tb):
        fluid.layers.embedding = self.origin_emb
        fluid.embedding = self.origin_emb_v2
        FLEET_GLOBAL_DICT.update(cur_accessor="", click_name="", scale_sparse_grad=None)


class DownpourOptimizer(DistributedOptimizer):
    """The PSLib fleet's optimizer: Downpour Adam whatever the optimizer given (fluid's warning);
    ``minimize`` needs PSLib."""

    def __init__(self, optimizer, strategy=None) -> None:
        super().__init__(optimizer, strategy)
        self._optimizer_name = f"Distributed{optimizer.type.capitalize()}"
        if optimizer.type != "adam":
            print(
                "Currently, distributed optimizer only support Adam. Will config built-in adam for you. We will "
                "support more functions in DistributedOptimizer",
                file=sys.stderr,
            )
            self._optimizer_name = "DistributedAdam"
        self._distributed_optimizer = getattr(optimizer_factory, self._optimizer_name)(optimizer)

    def backward(self, loss, startup_program=None, parameter_list=None, no_grad_set=None, callbacks=None):
        raise NotImplementedError("DownpourOptimizer.backward can not be called: use minimize")

    def apply_gradients(self, params_grads):
        raise NotImplementedError("DownpourOptimizer.apply_gradients can not be called: use minimize")

    def minimize(self, losses, scopes=None, startup_programs=None, parameter_list=None, no_grad_set=None):
        """``losses`` (one or a list) and their ``scopes``: PSLib's programs (raises: no PSLib here)."""
        losses = losses if isinstance(losses, list) else [losses]
        return self._distributed_optimizer._minimize(
            losses, startup_programs, parameter_list, no_grad_set, self._strategy
        )
