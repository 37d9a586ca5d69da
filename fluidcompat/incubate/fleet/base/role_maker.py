"""Role makers: this process's place in a distributed job (worker or server, its index, the number
of workers, the endpoints), read from the environment ``fluidcompat launch`` (or a cluster) sets or
given by the script."""

from __future__ import annotations

import os
from typing import List, Optional

__all__ = [
    "Role",
    "RoleMakerBase",
    "PaddleCloudRoleMaker",
    "UserDefinedRoleMaker",
    "UserDefinedCollectiveRoleMaker",
    "MockBarrier",
    "MPIRoleMaker",
    "MPISymetricRoleMaker",
    "GeneralRoleMaker",
]


class Role:
    WORKER = 1
    SERVER = 2


class RoleMakerBase:
    """A job role: ``generate_role()`` works it out once; the queries ask it."""

    def __init__(self) -> None:
        self._worker_endpoints: List[str] = []
        self._server_endpoints: List[str] = []
        self._role_is_generated = False
        self._role: Optional[int] = None
        self._current_id = -1
        self._trainers_num = 0

    def generate_role(self) -> None:
        self._role_is_generated = True

    def _generated(self) -> "RoleMakerBase":
        if not self._role_is_generated:
            self.generate_role()
        return self

    def is_worker(self) -> bool:
        return self._generated()._role == Role.WORKER

    def is_server(self) -> bool:
        return self._generated()._role == Role.SERVER

    def is_first_worker(self) -> bool:
        return self.is_worker() and self._current_id == 0

    def worker_num(self) -> int:
        return self._generated()._trainers_num

    def worker_index(self) -> int:
        return self._generated()._current_id

    def server_index(self) -> int:
        return self._generated()._current_id

    def get_trainer_endpoints(self) -> List[str]:
        return self._generated()._worker_endpoints

    def get_pserver_endpoints(self) -> List[str]:
        return self._generated()._server_endpoints

    def to_string(self) -> str:
        return (
            f"role: {self._role}, current_id: {self._current_id}, worker_endpoints: {self._worker_endpoints}, "
            f"server_endpoints: {self._server_endpoints}"
        )

    def all_gather(self, input):
        """A role maker without collectives of its own gathers nothing (fluid's warning)."""
        print("warning: RoleMakerBase does not have all gather.")
        return None

    def all_reduce_worker(self, input, output, mode="sum") -> None:
        print("warning: RoleMakerBase does not have all reduce worker.")

    def barrier_all(self) -> None:
        print("warning: RoleMakerBase does not have barrier all.")

    def barrier_worker(self) -> None:
        """The launched workers' barrier (torch.distributed), when there are several."""
        from fluidcompat.compat import distributed

        if distributed.get_world_size() > 1:
            distributed.init_parallel_env()
            distributed.barrier()


class PaddleCloudRoleMaker(RoleMakerBase):
    """The role the environment gives. Collective: ``PADDLE_TRAINER_ID`` and
    ``PADDLE_TRAINER_ENDPOINTS`` (as ``fluidcompat launch`` sets them; a process started without
    them is the one worker of its job, where fluid 1.8 asserted). Parameter server:
    ``TRAINING_ROLE`` (TRAINER or PSERVER), ``PADDLE_PSERVERS_IP_PORT_LIST``, ``PADDLE_TRAINERS_NUM``,
    and ``PADDLE_TRAINER_ID`` or ``POD_IP`` / ``PADDLE_PORT``."""

    def __init__(self, is_collective: bool = False, **kwargs) -> None:
        super().__init__()
        self._is_collective = is_collective

    def generate_role(self) -> None:
        if self._role_is_generated:
            return
        env = os.environ
        if self._is_collective:
            role = env.get("PADDLE_TRAINING_ROLE", "TRAINER")
            if role != "TRAINER":
                raise ValueError(f"A collective job's PADDLE_TRAINING_ROLE must be TRAINER. Received: {role!r}")
            self._role = Role.WORKER
            self._current_id = int(env.get("PADDLE_TRAINER_ID", "0"))
            self._worker_endpoints = [e for e in env.get("PADDLE_TRAINER_ENDPOINTS", "").split(",") if e] or [
                env.get("PADDLE_CURRENT_ENDPOINT", "127.0.0.1:6170")
            ]
            self._current_endpoint = env.get("PADDLE_CURRENT_ENDPOINT", self._worker_endpoints[self._current_id])
            self._trainers_num = len(self._worker_endpoints)
        else:
            needed = ("PADDLE_PSERVERS_IP_PORT_LIST", "PADDLE_TRAINERS_NUM", "TRAINING_ROLE")
            missing = [n for n in needed if n not in env]
            if missing:
                raise ValueError(
                    f"something wrong with PaddleCloud, please check environment: {', '.join(missing)} not set "
                    "(a parameter-server job: start it with `fluidcompat launch_ps`, or pass is_collective=True "
                    "for a collective one)"
                )
            self._server_endpoints = env["PADDLE_PSERVERS_IP_PORT_LIST"].split(",")
            self._trainers_num = int(env["PADDLE_TRAINERS_NUM"])
            role = env["TRAINING_ROLE"]
            if role == "TRAINER":
                self._role, self._current_id = Role.WORKER, int(env["PADDLE_TRAINER_ID"])
            elif role == "PSERVER":
                endpoint = f"{env['POD_IP']}:{env['PADDLE_PORT']}"
                if endpoint not in self._server_endpoints:
                    raise ValueError(
                        f"This server's endpoint {endpoint} (POD_IP:PADDLE_PORT) is not in "
                        f"PADDLE_PSERVERS_IP_PORT_LIST {self._server_endpoints}"
                    )
                self._role, self._current_id = Role.SERVER, self._server_endpoints.index(endpoint)
            else:
                raise ValueError(f"TRAINING_ROLE must be PSERVER or TRAINER. Received: {role!r}")
        self._role_is_generated = True


def _endpoint_strings(endpoints, what: str) -> list:
    if not isinstance(endpoints, list):
        raise TypeError(f"{what} must be as string list. Received: {endpoints!r}")
    if not endpoints:
        raise ValueError(f"{what} must be as string list with at least one element. Received: []")
    if len(set(map(str, endpoints))) != len(endpoints):
        raise ValueError(f"{what} can't have duplicate elements. Received: {endpoints}")
    for e in endpoints:
        if not isinstance(e, str):
            raise TypeError(f"every element of {what} must be a string. Received: {e!r}")
    return list(endpoints)


def _index(value, what: str, limit=None, limit_what: str = "") -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{what} must be as int. Received: {value!r}")
    if value < 0:
        raise ValueError(f"{what} must be greater than or equal to 0. Received: {value}")
    if limit is not None and value >= limit:
        raise ValueError(f"{what} must be less than {limit_what} ({limit}). Received: {value}")
    return value


class UserDefinedRoleMaker(RoleMakerBase):
    """A parameter-server role the script states (a server's ``current_id`` indexes
    ``server_endpoints``)."""

    def __init__(self, current_id=0, role=Role.WORKER, worker_num=0, server_endpoints=None) -> None:
        super().__init__()
        self._server_endpoints = _endpoint_strings(server_endpoints, "server_endpoints")
        if role not in (Role.WORKER, Role.SERVER):
            raise TypeError(f"role must be as Role (Role.WORKER or Role.SERVER). Received: {role!r}")
        limit = len(self._server_endpoints) if role == Role.SERVER else None
        self._current_id = _index(current_id, "current_id", limit, "len(server_endpoints) for a server")
        if isinstance(worker_num, bool) or not isinstance(worker_num, int):
            raise TypeError(f"worker_num must be as int. Received: {worker_num!r}")
        if worker_num <= 0:
            raise ValueError(f"worker_num must be greater than 0. Received: {worker_num}")
        self._role, self._trainers_num = role, worker_num
        self._role_is_generated = True


class UserDefinedCollectiveRoleMaker(RoleMakerBase):
    """A collective role the script states: its index among ``worker_endpoints``."""

    def __init__(self, current_id=0, worker_endpoints=None) -> None:
        super().__init__()
        self._worker_endpoints = _endpoint_strings(worker_endpoints, "worker_endpoints")
        self._current_id = _index(current_id, "current_id", len(self._worker_endpoints), "len(worker_endpoints)")
        self._role = Role.WORKER
        self._trainers_num = len(self._worker_endpoints)
        self._role_is_generated = True


# the role makers with collectives of their own (they build on RoleMakerBase above)
from fluidcompat.incubate.fleet.base.role_maker_comm import (  # noqa: E402
    GeneralRoleMaker,
    MockBarrier,
    MPIRoleMaker,
    MPISymetricRoleMaker,
)
