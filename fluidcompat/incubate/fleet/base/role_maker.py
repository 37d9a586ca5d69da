"""Role makers: this process's place in a distributed job (worker or server, its index, the number
of workers, the endpoints), read from the environment ``fluidcompat launch`` (or a cluster) sets or
given by the script."""

from __future__ import annotations

import json
import os
import time
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


# -- the role makers that also give the job's processes collectives ---------------------------
# (barrier, all_gather, all_reduce), as fluid 1.8's did for its PSLib fleet: MPISymetricRoleMaker
# (over mpi4py: a server and a worker per node, the even MPI ranks servers) and GeneralRoleMaker (the
# roles from PaddleCloud's environment; fluid's Gloo collectives here over files in a directory every
# process of the job shares, ``path``).
_REDUCE = {"sum": sum, "min": min, "max": max}


class MockBarrier:
    """Collectives of a group of one: they return at once."""

    def barrier(self) -> None:
        pass

    def barrier_all(self) -> None:
        pass

    def all_reduce(self, obj, mode="sum"):
        return obj

    def all_gather(self, obj):
        return [obj]


class _FileComm:
    """Collectives of ``size`` processes through files under ``directory``: each round every rank
    writes its value (JSON) and reads everyone's once all are there."""

    def __init__(self, directory: str, rank: int, size: int, init_timeout: float, run_timeout: float) -> None:
        self._dir, self._rank, self._size = directory, rank, size
        self._timeout = run_timeout
        self._round = 0
        os.makedirs(directory, exist_ok=True)
        for name in os.listdir(directory):  # this rank's files of an earlier job in the same place
            if name.endswith(f".{rank}"):
                os.remove(os.path.join(directory, name))
        self._exchange(None, init_timeout)

    def _path(self, rnd: int, rank: int) -> str:
        return os.path.join(self._dir, f"{rnd}.{rank}")

    def _exchange(self, value, timeout=None) -> list:
        self._round += 1
        mine = self._path(self._round, self._rank)
        with open(mine + ".tmp", "w") as f:
            json.dump(value, f)
        os.replace(mine + ".tmp", mine)
        deadline = time.time() + (self._timeout if timeout is None else timeout)
        paths = [self._path(self._round, r) for r in range(self._size)]
        while not all(os.path.exists(p) for p in paths):
            if time.time() > deadline:
                missing = [r for r, p in enumerate(paths) if not os.path.exists(p)]
                raise TimeoutError(f"GeneralRoleMaker: ranks {missing} of {self._size} did not reach {self._dir}")
            time.sleep(0.01)
        values = []
        for p in paths:
            with open(p) as f:
                values.append(json.load(f))
        if self._round > 2:  # everyone has read that round: it wrote the last one after reading it
            try:
                os.remove(self._path(self._round - 2, self._rank))
            except OSError:
                pass
        return values

    def barrier(self) -> None:
        self._exchange(None)

    def all_gather(self, obj) -> list:
        return self._exchange(obj)

    def all_reduce(self, values, mode="sum") -> list:
        if mode not in _REDUCE:
            raise ValueError(f"unknown mode: {mode} (sum, min or max)")
        gathered = self._exchange([float(v) if not isinstance(v, int) else v for v in values])
        return [_REDUCE[mode](column) for column in zip(*gathered)]


class MPIRoleMaker(RoleMakerBase):
    """The roles of an MPI job (mpi4py's COMM_WORLD)."""

    def __init__(self) -> None:
        super().__init__()
        try:
            from mpi4py import MPI
        except ImportError as e:
            raise ModuleNotFoundError(
                f"{type(self).__name__} needs mpi4py (and a job started by mpirun): {e}. Without MPI use "
                "PaddleCloudRoleMaker, GeneralRoleMaker or UserDefinedRoleMaker",
                name="mpi4py",
            ) from None
        self.MPI = MPI
        self._comm = MPI.COMM_WORLD
        self._node_type_comm = None
        self._ips = None
        self._ip = None

    def _get_rank(self) -> int:
        self._rank = self._comm.Get_rank()
        return self._rank

    def _get_size(self) -> int:
        self._size = self._comm.Get_size()
        return self._size

    def _all_gather(self, obj):
        self._barrier_all()
        return self._comm.allgather(obj)

    def _worker_gather(self, obj):
        if self.is_worker():
            self._node_type_comm.barrier()
            return self._node_type_comm.allgather(obj)
        return None

    def _barrier_all(self) -> None:
        self._comm.barrier()

    def _finalize(self) -> None:
        self.MPI.Finalize()

    def _get_ips(self):
        if not self._ips:
            self._ips = self._comm.allgather(self.get_local_ip())
        return self._ips

    def get_local_ip(self) -> str:
        import socket

        self._ip = socket.gethostbyname(socket.gethostname())
        return self._ip

    def generate_role(self) -> None:
        raise NotImplementedError("Please implement this method in child class")


class MPISymetricRoleMaker(MPIRoleMaker):
    """A server and a worker on each node: even ranks serve, odd ranks train."""

    def __init__(self) -> None:
        super().__init__()
        self._node_type = None
        self._proc_per_node = 2
        self._pserver_rand_port = 0

    def _check_role_generation(self) -> bool:
        if not self._role_is_generated:
            raise NameError("generate_role() should be called first")
        return True

    def generate_role(self) -> None:
        if self._role_is_generated:
            raise Exception("You should check role generation first")
        ips = self._get_ips()
        self._worker_endpoints, self._server_endpoints = ips[1::2], ips[::2]
        self._node_type = 0 if self._get_rank() % self._proc_per_node % 2 == 0 else 1
        self._role = Role.SERVER if self._node_type == 0 else Role.WORKER
        self._current_id = self._rank // self._proc_per_node
        self._trainers_num = self._get_size() // self._proc_per_node
        self._node_type_comm = self._comm.Split(self._node_type)
        self._role_is_generated = True

    def all_gather(self, input):
        if not self._role_is_generated:
            self.generate_role()
        return self._all_gather(input)

    def all_reduce_worker(self, input, output, mode="sum") -> None:
        if not self._role_is_generated:
            self.generate_role()
        if not self.is_worker():
            print("warning: current role is not worker in all_reduce_worker")
            return
        self._all_reduce(input, output, mode)

    def barrier_worker(self) -> None:
        if not self._role_is_generated:
            self.generate_role()
        if self.is_worker():
            self._node_type_comm.barrier()
        else:
            print("warning: current role is not worker in barrier_worker")

    def barrier_all(self) -> None:
        if not self._role_is_generated:
            self.generate_role()
        self._comm.barrier()

    def is_first_worker(self) -> bool:
        return self._check_role_generation() and self.is_worker() and self.worker_index() == 0

    def get_pserver_endpoints(self):
        """The servers' ip with one port every node computes alike (60001 to 64000, seeded by the
        number of servers)."""
        if self._pserver_rand_port <= 0:
            import random

            self._pserver_rand_port = random.Random(self._server_num()).randint(60001, 64000)
        return [f"{ip}:{self._pserver_rand_port}" for ip in self._server_endpoints]

    def is_worker(self) -> bool:
        return self._check_role_generation() and self._node_type == 1

    def is_server(self) -> bool:
        return self._check_role_generation() and self._node_type == 0

    def worker_num(self) -> int:
        return self._worker_num()

    def _worker_num(self) -> int:
        self._check_role_generation()
        return self._get_size() // self._proc_per_node

    def _server_num(self) -> int:
        if not self._role_is_generated:
            self.generate_role()
        return self._get_size() // self._proc_per_node

    def worker_index(self) -> int:
        self._check_role_generation()
        return self._rank // self._proc_per_node

    def server_index(self) -> int:
        self._check_role_generation()
        return self._rank // self._proc_per_node

    def _all_reduce(self, input, output, mode="sum") -> None:
        if not self._role_is_generated:
            self.generate_role()
        ops = {"sum": self.MPI.SUM, "max": self.MPI.MAX, "min": self.MPI.MIN}
        if mode not in ops:
            raise ValueError(f"unknown mode: {mode}")
        self._node_type_comm.Allreduce(input, output, op=ops[mode])

    def _barrier_worker(self) -> None:
        if self._check_role_generation() and self.is_worker():
            self._node_type_comm.barrier()

    def _barrier_server(self) -> None:
        if self._check_role_generation() and self.is_server():
            self._node_type_comm.barrier()


class GeneralRoleMaker(RoleMakerBase):
    """The role from the environment (``TRAINING_ROLE``, ``PADDLE_TRAINER_ENDPOINTS``,
    ``PADDLE_PSERVERS_IP_PORT_LIST``, ``PADDLE_TRAINER_ID``, ``PADDLE_PSERVER_ID`` or ``POD_IP`` /
    ``PADDLE_PORT``), with collectives among the workers, the servers and all processes through files
    under ``path`` (default: the working directory), in ``SYS_JOB_ID``'s sub-directory.

    Compat: fluid's Gloo met over HDFS (``hdfs_name`` / ``hdfs_ugi``) or an HTTP store
    (``http_ip_port``); fluidcompat refuses those (an error says so) and needs no network interface
    (fluid read the default one with netifaces)."""

    def __init__(self, **kwargs) -> None:
        super().__init__()
        self._hdfs_name = kwargs.get("hdfs_name", "")
        self._hdfs_ugi = kwargs.get("hdfs_ugi", "")
        self._path = kwargs.get("path", "").rstrip("/") or os.getcwd()
        self._init_timeout_seconds = kwargs.get("init_timeout_seconds", 3600)
        self._run_timeout_seconds = kwargs.get("run_timeout_seconds", 9999999)
        self._http_ip_port = kwargs.get("http_ip_port", "")
        self._prefix = os.getenv("SYS_JOB_ID", "")
        self._node_type_comm = None
        self._all_comm = None

    def _comm(self, group: str, rank: int, size: int) -> _FileComm:
        where = os.path.join(self._path, self._prefix, group) if self._prefix else os.path.join(self._path, group)
        return _FileComm(where, rank, size, self._init_timeout_seconds, self._run_timeout_seconds)

    def generate_role(self) -> None:
        if self._role_is_generated:
            return
        env = os.environ
        missing = [
            n for n in ("PADDLE_PSERVERS_IP_PORT_LIST", "TRAINING_ROLE", "PADDLE_TRAINER_ENDPOINTS") if n not in env
        ]
        if missing:
            raise ValueError(f"GeneralRoleMaker: the environment lacks {', '.join(missing)}")
        servers = env["PADDLE_PSERVERS_IP_PORT_LIST"].split(",")
        workers = env["PADDLE_TRAINER_ENDPOINTS"].split(",")
        role = env["TRAINING_ROLE"]
        if role not in ("TRAINER", "PSERVER"):
            raise ValueError(f"TRAINING_ROLE must be PSERVER or TRAINER. Received: {role!r}")
        if self._hdfs_name or self._hdfs_ugi or self._http_ip_port:
            raise NotImplementedError(
                "GeneralRoleMaker: fluidcompat's collectives meet in a shared directory (path=...), not over "
                "HDFS (hdfs_name / hdfs_ugi) or an HTTP store (http_ip_port)"
            )
        if role == "TRAINER":
            self._role, self._node_type = Role.WORKER, 1
            self._current_id = int(env["PADDLE_TRAINER_ID"])
            self._cur_endpoint = workers[self._current_id]
            if int(env.get("PADDLE_IS_BARRIER_ALL_ROLE", "1")):
                self._node_type_comm = self._comm("trainer", self._current_id, len(workers))
            else:
                self._node_type_comm = MockBarrier()
        else:
            self._role, self._node_type = Role.SERVER, 0
            if env.get("PADDLE_PSERVER_ID") is not None:
                self._current_id = int(env["PADDLE_PSERVER_ID"])
                self._cur_endpoint = servers[self._current_id]
            else:
                self._cur_endpoint = f"{env['POD_IP']}:{env['PADDLE_PORT']}"
                if self._cur_endpoint not in servers:
                    raise ValueError(
                        f"This server's endpoint {self._cur_endpoint} is not in PADDLE_PSERVERS_IP_PORT_LIST {servers}"
                    )
                self._current_id = servers.index(self._cur_endpoint)
            self._node_type_comm = self._comm("pserver", self._current_id, len(servers))
        everyone = workers + servers
        self._rank, self._size = everyone.index(self._cur_endpoint), len(everyone)
        self._all_comm = self._comm("all", self._rank, self._size)
        self._trainers_num = len(workers)
        self._worker_endpoints, self._server_endpoints = workers, servers
        self._role_is_generated = True

    def all_gather(self, input):
        return self._all_gather(input)

    def all_reduce_worker(self, input, output, mode="sum") -> None:
        if self.is_worker():
            self._all_reduce(input, output, mode)

    def barrier_worker(self) -> None:
        self._barrier_worker()

    def barrier_all(self) -> None:
        self._barrier_all()

    def get_local_endpoint(self) -> str:
        self._generated()
        return self._cur_endpoint

    def server_num(self) -> int:
        return len(self.get_pserver_endpoints())

    def _barrier_worker(self) -> None:
        if self.is_worker():
            self._node_type_comm.barrier()

    def _barrier_all(self) -> None:
        self._generated()
        self._all_comm.barrier()

    def _barrier_server(self) -> None:
        if self.is_server():
            self._node_type_comm.barrier()

    def _worker_num(self) -> int:
        return self.worker_num()

    def _server_num(self) -> int:
        return self.server_num()

    def _finalize(self) -> None:
        pass

    def _all_reduce(self, input, output, mode="sum") -> None:
        self._generated()
        for i, v in enumerate(self._node_type_comm.all_reduce(list(input), mode)):
            output[i] = v

    def _all_gather(self, obj):
        self._barrier_all()
        return self._all_comm.all_gather(obj)

    def _worker_gather(self, obj):
        if not self.is_worker():
            return None
        self._barrier_worker()
        return self._node_type_comm.all_gather(obj)

    def _get_rank(self) -> int:
        self._generated()
        return self._rank

    def _get_size(self) -> int:
        self._generated()
        return self._size
