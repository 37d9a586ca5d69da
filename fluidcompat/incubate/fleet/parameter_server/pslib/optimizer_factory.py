"""``pslib.optimizer_factory``: the distributed optimizers of the PSLib fleet (``DistributedAdam``)
and ``FLEET_GLOBAL_DICT``, the embeddings ``fleet_embedding`` declared (their tables, accessors and
sizes). Their ``minimize`` built the description PSLib's C++ servers and trainers ran from; PSLib is
not part of fluidcompat, so it raises PSLibUnavailableError (an ImportError) naming what to use."""

from __future__ import annotations

__all__ = ["DistributedAdam", "FLEET_GLOBAL_DICT", "PSLibUnavailableError"]

FLEET_GLOBAL_DICT = {
    # the embeddings declared so far
    "enable": False,
    "emb_to_table": {},
    "emb_to_accessor": {},
    "emb_to_size": {},
    # the fleet_embedding being entered
    "cur_sparse_id": 0,
    "cur_accessor": "",
    "click_name": "",
    "scale_sparse_grad": None,
}


class PSLibUnavailableError(ImportError):
    """A PSLib feature was used: Baidu's C++ parameter server, which fluid 1.8 had only when built
    WITH_PSLIB, is not part of fluidcompat."""


def unavailable(what: str) -> PSLibUnavailableError:
    return PSLibUnavailableError(
        f"{what} needs PSLib, Baidu's C++ parameter server (fluid 1.8 had it only when built WITH_PSLIB), "
        "which fluidcompat does not have: train with the parameter-server fleet of "
        "fluid.incubate.fleet.parameter_server.distribute_transpiler (DistributeTranspiler and the "
        "communicator) instead"
    )


class DistributedOptimizerImplBase:
    """What every PSLib optimizer keeps of the optimizer it stands for."""

    def __init__(self, optimizer) -> None:
        self._optimizer = optimizer
        self._learning_rate = optimizer._learning_rate
        self._regularization = optimizer.regularization

    def minimize(self, losses, startup_program=None, parameter_list=None, no_grad_set=None):
        raise NotImplementedError(f"{type(self).__name__}.minimize must be implemented by a derived class")


class DistributedAdam(DistributedOptimizerImplBase):
    """PSLib's Downpour Adam: its tables are PSLib's (sparse: ``lookup_table`` / ``pull_sparse``
    embeddings; dense: the other parameters and the data_norm statistics)."""

    def __init__(self, optimizer) -> None:
        super().__init__(optimizer)
        self.type = "downpour"
        self.data_norm_name = [".batch_size", ".batch_square_sum", ".batch_sum",
                               ".batch_size@GRAD", ".batch_square_sum@GRAD", ".batch_sum@GRAD"]  # fmt: skip
        self.supported_embedding_types = ["lookup_table", "pull_sparse", "pull_sparse_v2"]
        self.supported_embedding_grad_types = ["lookup_table_grad", "push_sparse", "push_sparse_v2"]

    def _minimize(self, losses, startup_program=None, parameter_list=None, no_grad_set=None, strategy=None):
        if strategy is not None and not isinstance(strategy, dict):
            raise TypeError(f"the PSLib strategy must be a dict. Received: {type(strategy).__name__}")
        raise unavailable("DistributedAdam.minimize (the PSLib fleet's optimizer)")
